"""Batched vs one-at-a-time training of many small reference MLPs (not a test).

Run: ``.venv/bin/python benchmarks/bench_batched_training.py [--n-models 32] [--epochs 50]
[--n-train 5000] [--threads 2] [--json PATH]``.

The reference models of a reference-based attack on UCI Adult: ``n_models`` MLPs
``d - 128 - 2`` (d = 105 one-hot / standardised features of privaudit's Adult), Adam
(lr 1e-3), ``epochs`` epochs, batch size 128, each on its own random ``n_train`` records
with its own seed and mini-batch order. Trained once with
:func:`privaudit.models.torch_batched.fit_many` (one batched computation; ``--kernel``:
``auto`` = the hand-written batched MLP forward/backward, ``vmap`` = ``vmap`` of
``functional_call`` with autograd) and once with :meth:`TorchTrainer.fit` per model (the
ordinary one-at-a-time torch loop: ``torch.optim.Adam``, autograd), both on ``threads``
torch threads (``torch.set_num_threads``; the batched MLP kernel splits the models between
that many Python threads, one torch thread each, the sequential loop splits each operation). Prints both wall
times, the speed-up and the mean test accuracy of each set on 5,000 held-out records (the
two sets are the same models up to floating-point rounding, so the accuracies agree);
``--json PATH`` writes ``n_models``, ``speedup``, ``acc_batched``, ``acc_sequential``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from privaudit.data import load_adult
from privaudit.models.torch_batched import fit_many
from privaudit.models.torch_models import TorchRecipe, TorchTrainer

FACTORY_SOURCE = """
from torch import nn


def mlp(n_features, hidden, n_classes):
    return nn.Sequential(nn.Linear(n_features, hidden), nn.ReLU(), nn.Linear(hidden, n_classes))
"""


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-models", type=int, default=32)
    ap.add_argument("--epochs", type=int, default=50)
    ap.add_argument("--n-train", type=int, default=5000)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--kernel", choices=("auto", "mlp", "vmap"), default="auto")
    ap.add_argument("--skip-sequential", action="store_true")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)

    import torch

    torch.set_num_threads(args.threads)
    data = load_adult()
    rng = np.random.default_rng(0)
    perm = rng.permutation(data.n_records)
    test = perm[:5000]
    pool = perm[5000:]
    subsets = [
        np.sort(rng.choice(pool, size=args.n_train, replace=False)) for _ in range(args.n_models)
    ]
    seeds = [int(s) for s in rng.integers(0, 2**31, size=args.n_models)]
    with tempfile.TemporaryDirectory() as tmp:
        fpath = Path(tmp) / "bench_factories.py"
        fpath.write_text(FACTORY_SOURCE)
        recipe = TorchRecipe(
            factory=f"{fpath}:mlp",
            factory_kwargs={"n_features": int(data.X.shape[1]), "hidden": 128, "n_classes": 2},
            optimizer="adam",
            lr=1e-3,
            epochs=args.epochs,
            batch_size=args.batch_size,
            device="cpu",
        )
        trainer = TorchTrainer(recipe, n_classes=2)
        Xt, yt = data.X[test], data.y[test]

        def acc(models: list) -> float:  # type: ignore[type-arg]
            return float(np.mean([np.mean(m.logits(Xt).argmax(1) == yt) for m in models]))

        t0 = time.perf_counter()
        batched = fit_many(trainer, data.X, data.y, subsets, seeds, n_classes=2, kernel=args.kernel)
        t_b = time.perf_counter() - t0
        acc_b = acc(batched)
        print(
            f"batched ({args.kernel}): {args.n_models} models in {t_b:8.1f} s, "
            f"mean test accuracy {acc_b:.4f}",
            flush=True,
        )
        if args.skip_sequential:
            return
        t0 = time.perf_counter()
        seq = [
            trainer.fit(data.X[s], data.y[s], seed=sd, n_classes=2)
            for s, sd in zip(subsets, seeds, strict=True)
        ]
        t_s = time.perf_counter() - t0
        acc_s = acc(seq)
        print(
            f"sequential: {args.n_models} models in {t_s:8.1f} s, mean test accuracy {acc_s:.4f}",
            flush=True,
        )
        gap = max(
            float(np.abs(a.logits(Xt) - b.logits(Xt)).max())
            for a, b in zip(batched, seq, strict=True)
        )
    speedup = t_s / t_b
    print(
        f"speed-up {speedup:.2f}x on {args.threads} thread(s) "
        f"(MLP {data.X.shape[1]}-128-2, {args.epochs} epochs, {args.n_train} records, batch {args.batch_size}); "
        f"largest logit difference batched vs sequential {gap:.2e}",
        flush=True,
    )
    if args.json is not None:
        args.json.write_text(
            json.dumps(
                {
                    "n_models": args.n_models,
                    "speedup": speedup,
                    "acc_batched": acc_b,
                    "acc_sequential": acc_s,
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    sys.exit(main())
