"""LiRA online with and without augmented queries, on the same MNIST CNNs (not a test).

Run: ``.venv/bin/python benchmarks/bench_lira_augmented.py [--n-pool 1000]
[--n-reference 16] [--epochs 15] [--max-shift 1] [--json PATH]``.

Carlini et al. 2022 (Sec. VI-A): querying the target and the reference models on
augmented versions of each record (in eval mode), fitting one Gaussian per view and
averaging the per-view log likelihood ratios makes LiRA stronger at low FPR. Here: a
small CNN (``privaudit.models.torch_nets:small_cnn``) trained with random shifts of up to
``max_shift`` pixels on the bundled MNIST subset, audited by the experiment engine of
``privaudit run`` (:func:`privaudit.membership.experiment.run_experiment`): a target on a
random half of ``n_pool`` audited records and ``n_reference`` reference CNNs on LiRA's
balanced keep layout, trained as one batched computation. The registered
``lira-online`` attack (fixed variance) runs twice on the same models (the second run
loads them from the artifact store): with ``augmented_queries: true`` (the views of
:class:`privaudit.signals.views.QueryViews`: shifts in ``{-s, 0, s}^2``) and without.
Prints AUC and TPR at 1% and 0.1% FPR of both; ``--json PATH`` writes them.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from privaudit.data import MNIST_SHAPE, load_mnist
from privaudit.membership.experiment import ExperimentConfig, run_experiment
from privaudit.metrics.roc import auc, roc_curve, tpr_at_fpr
from privaudit.models.torch_models import TorchRecipe, TorchTrainer


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
        max_shift=args.max_shift,
        input_shape=MNIST_SHAPE,
    )
    trainer = TorchTrainer(recipe, n_classes=10)
    out: dict[str, object] = {"n_reference": args.n_reference, "n_pool": args.n_pool}
    with tempfile.TemporaryDirectory() as store:
        for key, augmented in (("augmented", True), ("single", False)):
            cfg = ExperimentConfig(
                attacks=("lira-online",),
                n_target_pool=args.n_pool,
                n_population=100,
                n_reference=args.n_reference,
                seed=args.seed,
                attack_params={
                    "lira-online": {"variance": "fixed", "augmented_queries": augmented}
                },
            )
            t0 = time.perf_counter()
            res = run_experiment(data, trainer, cfg, store=store, progress=False)
            print(
                f"{'trained' if augmented else 'loaded'} {args.n_reference + 1} CNNs and ran "
                f"LiRA in {time.perf_counter() - t0:.1f} s",
                flush=True,
            )
            s = res.scores["lira-online"]
            roc = roc_curve(s.scores, res.membership)
            a = auc(s.scores, res.membership)
            t1, t01 = tpr_at_fpr(roc, 0.01), tpr_at_fpr(roc, 0.001)
            n_views = int(s.params["n_views"])
            out[key] = {"auc": a, "tpr_at_1pct_fpr": t1, "tpr_at_0.1pct_fpr": t01}
            if augmented:
                out["n_views"] = n_views
                print(
                    f"target: train accuracy {res.train_accuracy:.3f}, "
                    f"test accuracy {res.test_accuracy:.3f}"
                )
            name = f"{n_views} augmented queries" if augmented else "single query"
            t1s, t01s = ("n/a" if t is None else f"{t:.4f}" for t in (t1, t01))
            print(f"LiRA online, {name:>22s}: AUC {a:.4f}  TPR@1%FPR {t1s}  TPR@0.1%FPR {t01s}")
    if args.json is not None:
        args.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    sys.exit(main())
