"""LiRA online with and without augmented queries, on the same MNIST CNNs (not a test).

Run: ``.venv/bin/python benchmarks/bench_lira_augmented.py [--n-pool 1000]
[--n-reference 16] [--epochs 15] [--max-shift 1] [--json PATH]``.

Carlini et al. 2022 (Sec. VI-A): querying the target and the reference models on
augmented versions of each record (in eval mode), fitting one Gaussian per view and
averaging the per-view log likelihood ratios makes LiRA stronger at low FPR. Here: a
small CNN (``privaudit.models.torch_nets:small_cnn``) trained with random shifts on the
bundled MNIST subset; a target on a random half of ``n_pool`` audited records and
``n_reference`` reference CNNs on LiRA's balanced keep layout over the same pool, all
trained as one batched computation (:func:`privaudit.models.torch_batched.fit_many`).
LiRA online (fixed variance, the registered attack) is run on the identity view alone
and on every shift in ``[-max_shift, max_shift]^2`` (:func:`augmented_views`), averaged.
Prints AUC and TPR at 1% and 0.1% FPR of both; ``--json PATH`` writes them.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from privaudit.attacks import AttackData, run_attack
from privaudit.data import MNIST_SHAPE, balanced_keep_matrix, load_mnist
from privaudit.games.metrics import auc, roc_curve, tpr_at_fpr
from privaudit.models.torch_batched import fit_many
from privaudit.models.torch_models import TorchRecipe, TorchTrainer, augmented_views
from privaudit.records import SignalTable
from privaudit.signals import compute_signal


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-pool", type=int, default=1000)
    ap.add_argument("--n-reference", type=int, default=16)
    ap.add_argument("--epochs", type=int, default=15)
    ap.add_argument("--channels", type=int, default=8)
    ap.add_argument("--max-shift", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)

    data = load_mnist()
    rng = np.random.default_rng(args.seed)
    pool = np.sort(rng.permutation(data.n_records)[: args.n_pool])
    member = np.zeros(pool.size, dtype=bool)
    member[rng.permutation(pool.size)[: pool.size // 2]] = True
    ids = data.record_ids[pool]
    keep = balanced_keep_matrix(ids, args.n_reference, rng)
    recipe = TorchRecipe(
        factory="privaudit.models.torch_nets:small_cnn",
        factory_kwargs={
            "n_classes": 10,
            "channels": args.channels,
            "image_shape": list(MNIST_SHAPE),
        },
        optimizer="adam",
        lr=0.002,
        epochs=args.epochs,
        batch_size=64,
        augmentation="shift",
        max_shift=2,
        input_shape=MNIST_SHAPE,
    )
    trainer = TorchTrainer(recipe, n_classes=10)
    subsets = [pool[member]] + [pool[keep.keep[j]] for j in range(args.n_reference)]
    seeds = [int(s) for s in rng.integers(0, 2**31, size=len(subsets))]
    t0 = time.perf_counter()
    models = fit_many(trainer, data.X, data.y, subsets, seeds, n_classes=10)
    print(f"trained {len(models)} CNNs in {time.perf_counter() - t0:.1f} s", flush=True)
    Xp, yp = data.X[pool], data.y[pool]
    views = augmented_views(Xp, MNIST_SHAPE, max_shift=args.max_shift)
    per_view = []
    for _, Xv in views:
        sig = np.stack([compute_signal("logit_confidence", m.logits(Xv), yp) for m in models])
        d = AttackData(
            record_ids=ids,
            labels=yp,
            target={"logit_confidence": SignalTable("logit_confidence", ids, ("target",), sig[:1])},
            reference={
                "logit_confidence": SignalTable("logit_confidence", ids, keep.model_ids, sig[1:])
            },
            reference_membership=keep,
        )
        per_view.append(run_attack("lira-online", d, seed=0, variance="fixed").scores)
    out = {"n_views": len(views), "n_reference": args.n_reference, "n_pool": int(pool.size)}
    train_acc = float(np.mean(models[0].logits(Xp[member]).argmax(1) == yp[member]))
    test_acc = float(np.mean(models[0].logits(Xp[~member]).argmax(1) == yp[~member]))
    print(f"target: train accuracy {train_acc:.3f}, test accuracy {test_acc:.3f}")
    for name, s in (
        ("single query", per_view[0]),
        (f"{len(views)} augmented queries", np.mean(per_view, axis=0)),
    ):
        roc = roc_curve(s, member)
        a, t1, t01 = auc(s, member), tpr_at_fpr(roc, 0.01), tpr_at_fpr(roc, 0.001)
        key = "single" if name == "single query" else "augmented"
        out[key] = {"auc": a, "tpr_at_1pct_fpr": t1, "tpr_at_0.1pct_fpr": t01}
        t01s = "n/a" if t01 is None else f"{t01:.4f}"
        print(f"LiRA online, {name:>22s}: AUC {a:.4f}  TPR@1%FPR {t1:.4f}  TPR@0.1%FPR {t01s}")
    if args.json is not None:
        args.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    sys.exit(main())
