"""Every membership attack on the CIFAR-10 CNN, over seeds, with the papers' orderings (not a test).

Run: ``.venv/bin/python benchmarks/bench_cifar10.py [--seeds 3] [--n-reference 16]
[--epochs 50] [--n-pool 5000] [--n-population 1102] [--json PATH]`` (``--quick``: pool
500, population 300, 6 epochs, 8 reference and 2 shadow models).

The target and every attacker model are the CNN of ``examples/cifar10_cnn.yaml``
(:func:`privaudit.models.torch_nets.cifar10_cnn`, hidden layer 384, random crops with
padding 4 and horizontal flips, Adam under the one-cycle schedule, 50 epochs: :data:`EXAMPLE`,
checked against the example by a test) on the bundled CIFAR-10 subset
(:func:`privaudit.data.load_cifar10`), audited by the engine of ``privaudit run``
(:func:`privaudit.membership.experiment.run_experiment`). Per seed, three experiments
share one artifact store:

1. the attacks of the papers' CIFAR-10 experiments (:data:`ATTACKS`: the loss attack,
   Ye et al. 2022's P, S, R, D, L, LiRA online / offline with augmented queries, RMIA
   online / offline) with ``n_reference`` reference models;
2. LiRA online / offline again on the same models, with a single query per record
   (the models are loaded from the store);
3. LiRA offline and RMIA offline with 4 reference models (the few-reference regime of
   Zarifzadeh et al. 2024, Sec. 5).

**Design: one attacker, a new target per seed.** Every seed uses the same split of the
images into the audited pool and the population and the same attacker (``split_seed`` and
``attacker_seed`` fixed at :data:`SHARED_SEED`); the seed draws the target's members (a
random half of the pool) and its training randomness. So does the evaluation of Carlini et
al. 2022, which trains many models on random halves of the data and attacks each of them in
turn with the others as reference models: the reference models' keep matrix is independent of every
target's membership (``privaudit.membership.experiment``, "Membership"), so sharing them
across targets is the same game. The reference and shadow models (and their signals) are
therefore trained once, on the first seed, and read from the store afterwards; each further
seed trains only its target and the target-dependent models (distilled and leave-one-out).
The spread over seeds is thus the spread over targets and their member sets for one
attacker, not over attackers.

Each attack's AUC and TPR at 1% and 0.1% FPR are printed per seed and as mean +- standard
deviation over seeds, then the papers' orderings, each as "holds" / "does not hold" /
"within noise" (never asserted): with ``d_s`` the per-seed difference of the two sides
and ``se`` its standard error over seeds, a strict ordering ``A > B`` (or ``A >= B``)
holds when ``mean(d) > 2 se``, does not hold when ``mean(d) < -2 se``, and is within
noise otherwise; an approximate equality ``A ~ B`` holds when ``|mean(d)| <= 2 se`` or
``|mean(d)| <= 0.02``, else does not hold. The orderings:

* Ye et al. 2022 (Sec. 5, CIFAR-10): P ~ S < R on AUC;
* Carlini et al. 2022 (Sec. V-VI, Fig. 4 and Table 1): LiRA online > LiRA offline > loss
  at TPR@0.1% FPR; LiRA with augmented queries >= without (Sec. VI-A, Fig. 10);
* Zarifzadeh et al. 2024 (Sec. 5, Table 2 / Fig. 3): RMIA offline >= LiRA offline with
  few (here 4) reference models, on AUC.

``--json PATH`` writes ``{"rows": [...], "orderings": {...}}``: one row per attack, seed
and number of reference models with keys ``attack``, ``seed``, ``n_references``, ``auc``,
``tpr_at_1pct``, ``tpr_at_0_1pct`` (null where the FPR cannot be reached with the
non-members at hand), and ``orderings`` mapping each ordering's name to its verdict.
The single-query LiRA rows are named ``lira-online-single-query`` and
``lira-offline-single-query``.

Scale: the papers train wide ResNets on 25,000 CIFAR-10 images per model with 64-256
reference models; here a 421k-parameter CNN on 1,500 images with 16. The bundled subset
holds 6,102 images, and the population must be larger than the target's training set for
Ye et al.'s shadow models (App. B.2), hence 3,000 audited records and 3,102 population
records. Absolute figures therefore differ from the papers' (e.g. LiRA online's TPR at
0.1% FPR: 8.4% in Carlini et al. Table 1, 2.5% at 16 shadow models in their Fig. 9; their
targets generalise better, test accuracy ~0.9 against ~0.54 here) and the spread over 3
seeds is wide at 0.1% FPR (1,500 non-members: 1.5 non-members above the threshold). No GPU
was lent to this task, so no CUDA speed-up is recorded here.

Time: the CNNs train one per worker process (``--n-jobs 2``; a CNN trainer on a CPU does
not batch, :attr:`privaudit.models.torch_models.TorchTrainer.batched`: two Python
threads splitting the models in one process were measured bound by the interpreter lock,
0.62 of the 2 cores). Seed 0 trains the attacker's models (16 + 4 reference, 4 shadow)
beside its target, 2 distilled and the leave-one-out models, and queries the target and
reference models on 18 views of all 6,102 images; seeds 1 and 2 train only their target,
distilled and leave-one-out models (the attacker's are read from the store): 51 CNNs in all. Run ``OMP_NUM_THREADS=1`` so that the
target, trained in the driver, does not split one small CNN over two threads.

Measured (``OMP_NUM_THREADS=1 python benchmarks/bench_cifar10.py --store DIR --json
PATH``, the defaults; 2 cores shared with other jobs at nice 19, load 2-6): **3,222 s in
all** (seed 0: 1,823 s; seeds 1 and 2: 670 s and 729 s); target train accuracy 0.985 /
0.994 / 0.987, test 0.542 / 0.551 / 0.541. Mean +- sd over the 3 seeds (16 references
unless said):

=========================  ===============  ===============  ===============
attack                     AUC              TPR@1%           TPR@0.1%
=========================  ===============  ===============  ===============
loss                       0.799 +- 0.011   0.020 +- 0.010   0.002 +- 0.001
population (P)             0.799 +- 0.011   0.020 +- 0.010   0.002 +- 0.001
shadow (S)                 0.813 +- 0.009   0.049 +- 0.012   0.006 +- 0.006
reference (R)              0.770 +- 0.008   0.057 +- 0.007   0.006 +- 0.008
distillation (D)           0.790 +- 0.011   0.028 +- 0.009   0.003 +- 0.002
leave-one-out (L)          0.779 +- 0.127   0.000            0.000
LiRA online                0.920 +- 0.008   0.330 +- 0.042   0.116 +- 0.067
LiRA offline               0.875 +- 0.006   0.302 +- 0.023   0.113 +- 0.062
LiRA online, 1 query       0.894 +- 0.006   0.268 +- 0.034   0.083 +- 0.046
LiRA offline, 1 query      0.857 +- 0.007   0.262 +- 0.021   0.078 +- 0.043
RMIA online                0.881 +- 0.007   0.272 +- 0.016   0.107 +- 0.030
RMIA offline               0.878 +- 0.004   0.272 +- 0.026   0.092 +- 0.020
LiRA offline, 4 refs       0.840 +- 0.006   0.220 +- 0.055   0.069 +- 0.029
RMIA offline, 4 refs       0.864 +- 0.007   0.210 +- 0.025   0.051 +- 0.050
=========================  ===============  ===============  ===============

(L scores all non-members and only the 2 sampled members, so its TPR is 0 or 1/2 and its
AUC rests on 2 members.) The orderings: P ~ S **holds**; R > S and R > P **do not hold**
(R is 0.04 and 0.03 below in AUC on every seed, although above both at TPR@1%: R's
per-record thresholds come from 4 shadow models, Ye et al. use many more); LiRA online >
offline at TPR@0.1% is **within noise** (+0.001, -0.007, +0.017; online is above in AUC and
TPR@1%); LiRA offline > loss, augmented >= single query (online and offline) and RMIA offline
>= LiRA offline at 4 references (AUC) **hold**.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from privaudit.data import CIFAR10_SHAPE, load_cifar10
from privaudit.membership.experiment import ExperimentConfig, run_experiment
from privaudit.metrics.roc import auc, roc_curve, tpr_at_fpr
from privaudit.models.torch_models import TorchRecipe, TorchTrainer

#: (name, kind, metric, left side, right side, n_references of both sides or None = main)
ORDERINGS: tuple[tuple[str, str, str, str, str, str], ...] = (
    ("ye: population ~ shadow (AUC)", "~", "auc", "population", "shadow", "main"),
    ("ye: reference > shadow (AUC)", ">", "auc", "reference", "shadow", "main"),
    ("ye: reference > population (AUC)", ">", "auc", "reference", "population", "main"),
    (
        "lira: online > offline (TPR@0.1%)",
        ">",
        "tpr_at_0_1pct",
        "lira-online",
        "lira-offline",
        "main",
    ),
    ("lira: offline > loss (TPR@0.1%)", ">", "tpr_at_0_1pct", "lira-offline", "loss", "main"),
    (
        "lira: online augmented >= single query (TPR@0.1%)",
        ">=",
        "tpr_at_0_1pct",
        "lira-online",
        "lira-online-single-query",
        "main",
    ),
    (
        "lira: offline augmented >= single query (TPR@0.1%)",
        ">=",
        "tpr_at_0_1pct",
        "lira-offline",
        "lira-offline-single-query",
        "main",
    ),
    (
        "rmia: offline >= lira offline at 4 references (AUC)",
        ">=",
        "auc",
        "rmia-offline",
        "lira-offline",
        "few",
    ),
)
FEW = 4
#: The recipe of examples/cifar10_cnn.yaml (a test checks that the two agree).
EXAMPLE: dict[str, Any] = {
    "epochs": 50,
    "channels": 16,
    "hidden": 384,
    "lr": 0.002,
    "batch_size": 32,
    "lr_schedule": "one-cycle",
}
#: The split and attacker seed shared by every target (module docstring, "Design").
SHARED_SEED = 20240
#: The attacks of the source papers' CIFAR-10 experiments (those of examples/cifar10_cnn.yaml).
ATTACKS = (
    "loss",
    "population",
    "shadow",
    "reference",
    "distillation",
    "leave-one-out",
    "lira-online",
    "lira-offline",
    "rmia-online",
    "rmia-offline",
)


def verdict(kind: str, diffs: list[float]) -> str:
    """ "holds" / "does not hold" / "within noise" of per-seed differences (see the
    module docstring)."""
    d = np.asarray(diffs, dtype=np.float64)
    if d.size == 0:
        return "within noise"
    mean = float(d.mean())
    se = float(d.std(ddof=1) / np.sqrt(d.size)) if d.size > 1 else float("inf")
    if kind == "~":
        return "holds" if abs(mean) <= 2 * se or abs(mean) <= 0.02 else "does not hold"
    if mean > 2 * se:
        return "holds"
    if mean < -2 * se:
        return "does not hold"
    return "within noise"


def _figures(scores: Any, membership: Any) -> dict[str, float | None]:
    roc = roc_curve(scores, membership)
    return {
        "auc": float(auc(scores, membership)),
        "tpr_at_1pct": tpr_at_fpr(roc, 0.01),
        "tpr_at_0_1pct": tpr_at_fpr(roc, 0.001),
    }


def _fmt(v: float | None) -> str:
    return "  n/a " if v is None else f"{v:.4f}"


def summarise(rows: list[dict[str, Any]], n_reference: int) -> dict[str, str]:
    """Print the mean +- sd of every attack over seeds and the orderings' verdicts."""
    seeds = sorted({int(r["seed"]) for r in rows})
    print("\nmean +- sd over seeds")
    keys = sorted({(r["attack"], r["n_references"]) for r in rows}, key=str)
    for attack, n_ref in keys:
        sel = [r for r in rows if r["attack"] == attack and r["n_references"] == n_ref]
        parts = []
        for m in ("auc", "tpr_at_1pct", "tpr_at_0_1pct"):
            v = np.array([r[m] for r in sel if r[m] is not None], dtype=np.float64)
            parts.append(
                f"{m} {v.mean():.4f} +- {v.std(ddof=1) if v.size > 1 else 0:.4f}"
                if v.size
                else f"{m} n/a"
            )
        print(f"  {attack:>26s} ({n_ref:>2d} refs): " + ", ".join(parts))

    orderings: dict[str, str] = {}
    print("\norderings (per-seed differences, 2 standard errors)")
    for name, kind, metric, left, right, which in ORDERINGS:
        n_ref = FEW if which == "few" else n_reference
        diffs = []
        for seed in seeds:
            a = [
                r[metric]
                for r in rows
                if (r["attack"], r["seed"], r["n_references"]) == (left, seed, n_ref)
            ]
            b = [
                r[metric]
                for r in rows
                if (r["attack"], r["seed"], r["n_references"]) == (right, seed, n_ref)
            ]
            if a and b and a[0] is not None and b[0] is not None:
                diffs.append(float(a[0]) - float(b[0]))
        orderings[name] = verdict(kind, diffs)
        shown = ", ".join(f"{d:+.4f}" for d in diffs)
        print(f"  {name}: {orderings[name]}  (differences {shown})")
    return orderings


def cifar10_recipe(args: argparse.Namespace, **extra: Any) -> TorchRecipe:
    """The example's CNN recipe with the command line's ``channels``, ``hidden``, ``lr``,
    ``lr_schedule``, ``epochs`` and ``batch_size`` (and any other recipe field)."""
    return TorchRecipe(
        factory="privaudit.models.torch_nets:cifar10_cnn",
        factory_kwargs={
            "n_classes": 10,
            "channels": args.channels,
            "hidden": args.hidden,
            "image_shape": list(CIFAR10_SHAPE),
        },
        optimizer="adam",
        lr=args.lr,
        lr_schedule=args.lr_schedule,
        epochs=args.epochs,
        batch_size=args.batch_size,
        augmentation="flip-shift",
        max_shift=4,
        input_shape=CIFAR10_SHAPE,
        **extra,
    )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--n-reference", type=int, default=16)
    ap.add_argument("--epochs", type=int, default=EXAMPLE["epochs"])
    ap.add_argument("--channels", type=int, default=EXAMPLE["channels"])
    ap.add_argument("--hidden", type=int, default=EXAMPLE["hidden"])
    ap.add_argument("--lr", type=float, default=EXAMPLE["lr"])
    ap.add_argument("--batch-size", type=int, default=EXAMPLE["batch_size"])
    ap.add_argument("--lr-schedule", default=EXAMPLE["lr_schedule"])
    ap.add_argument("--n-pool", type=int, default=3000)
    ap.add_argument("--n-population", type=int, default=3102)
    ap.add_argument(
        "--n-jobs", type=int, default=2, help="worker processes, one CNN at a time each"
    )
    ap.add_argument(
        "--quick",
        action="store_true",
        help="pool 500, population 300, 6 epochs, 8 references, 2 shadows",
    )
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument(
        "--merge",
        type=Path,
        nargs="+",
        default=None,
        help="JSON files of runs over other seeds: summarise their rows together",
    )
    ap.add_argument(
        "--store",
        type=Path,
        default=None,
        help="artifact store (default: a temporary folder); a rerun resumes from it",
    )
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    if args.merge:
        rows_in = [r for f in args.merge for r in json.loads(f.read_text())["rows"]]
        n_ref = max(int(r["n_references"]) for r in rows_in)
        merged = summarise(rows_in, n_ref)
        if args.json is not None:
            args.json.write_text(json.dumps({"rows": rows_in, "orderings": merged}, indent=2))
        return
    models = {"n_shadow": 4, "n_distilled": 2, "n_leave_one_out": 2, "leave_one_out_sample": 4}
    if args.quick:
        args.n_pool, args.n_population, args.epochs = 500, 300, 6
        args.n_reference = min(args.n_reference, 8)
        models.update(n_shadow=2, leave_one_out_sample=2)

    data = load_cifar10()
    recipe = cifar10_recipe(args)
    # on a CPU the CNN trainer trains one model per worker process (module docstring,
    # "Time"); on CUDA it stacks the models
    trainer = TorchTrainer(recipe, n_classes=10)
    sizes = {"n_target_pool": args.n_pool, "n_population": args.n_population}
    aug = {"variance": "fixed", "augmented_queries": True}
    single = {"variance": "fixed", "augmented_queries": False}
    rows: list[dict[str, Any]] = []
    t_start = time.perf_counter()
    print(
        f"CIFAR-10 CNN (channels {args.channels}, hidden {args.hidden}, {args.epochs} epochs, "
        f"Adam lr {args.lr} {args.lr_schedule}, batch {args.batch_size}): "
        f"{args.n_pool} audited records (~{args.n_pool // 2} members), {args.n_population} "
        f"population, {args.n_reference} reference models, {args.seeds} seeds",
        flush=True,
    )
    with tempfile.TemporaryDirectory() as tmp:
        store = str(args.store) if args.store is not None else tmp
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            runs = (
                (
                    "main",
                    ATTACKS,
                    args.n_reference,
                    {"lira-online": aug, "lira-offline": aug},
                ),
                (
                    "single",
                    ("lira-online", "lira-offline"),
                    args.n_reference,
                    {"lira-online": single, "lira-offline": single},
                ),
                ("few", ("lira-offline", "rmia-offline"), FEW, {"lira-offline": aug}),
            )
            for label, attacks, n_ref, params in runs:
                cfg = ExperimentConfig(
                    attacks=tuple(attacks),
                    n_reference=n_ref,
                    seed=seed,
                    # one pool and one attacker for every seed: the reference and shadow
                    # models train once and are read from the store after the first seed
                    split_seed=SHARED_SEED,
                    attacker_seed=SHARED_SEED,
                    attack_params=params,
                    n_jobs=args.n_jobs,
                    **sizes,
                    **models,
                )
                t0 = time.perf_counter()
                res = run_experiment(data, trainer, cfg, store=store, progress="auto")
                print(
                    f"seed {seed}, {label}: {n_ref} reference models, "
                    f"{time.perf_counter() - t0:.0f} s (total {time.perf_counter() - t_start:.0f} s); "
                    f"target train accuracy {res.train_accuracy:.3f}, test {res.test_accuracy:.3f}",
                    flush=True,
                )
                for name in attacks:
                    s = res.scores[name]
                    figs = _figures(s.scores, res.member_of(name))
                    attack = f"{name}-single-query" if label == "single" else name
                    rows.append({"attack": attack, "seed": seed, "n_references": n_ref, **figs})
                    print(
                        f"  {attack:>26s}: AUC {figs['auc']:.4f}  TPR@1% {_fmt(figs['tpr_at_1pct'])}"
                        f"  TPR@0.1% {_fmt(figs['tpr_at_0_1pct'])}",
                        flush=True,
                    )

    orderings = summarise(rows, args.n_reference)
    print(
        f"\nnote: {time.perf_counter() - t_start:.0f} s in all. The papers' CIFAR-10 tables use "
        "25,000 training images per model, wide ResNets and 64-256 reference models; this run "
        f"used about {args.n_pool // 2} members (a fair coin per pool image), a {args.channels}-channel CNN and {args.n_reference} "
        "reference models, so its figures are lower and noisier (see the module docstring)."
    )
    if args.json is not None:
        args.json.write_text(json.dumps({"rows": rows, "orderings": orderings}, indent=2))


if __name__ == "__main__":
    sys.exit(main())
