"""Empirical DP lower bounds of DP-SGD (Opacus) MLPs on Adult beside the accountant's
epsilon (not a test).

Run: ``.venv/bin/python benchmarks/bench_dp_audit.py [--epsilons 1 8] [--m 1000]
[--trials 24] [--epochs 10] [--json PATH]``. Needs the ``dp`` extra (Opacus).

For each target epsilon (DP-SGD with ``target_epsilon`` at ``delta = 1e-5``, Opacus'
RDP accountant) and for a non-private model of the same recipe:

* **one-run audit** (Steinke, Nasr & Jagielski 2023, Algorithm 1): ``m`` canary records
  of Adult, each included in the training set independently with probability 1/2
  beside ``n_base`` other records; one model; score of a canary = minus its loss;
  :func:`privaudit.stats.one_run_audit` (union bound over the guess counts, 95%);
* **multi-run audit** (Jagielski et al. 2020; Nasr et al. 2021): ``trials`` models, each
  on the same ``n_base`` records plus, with probability 1/2, one canary (an Adult
  record with its label flipped, the hardest case for a black-box audit); score = minus
  the canary's loss; :func:`privaudit.stats.multi_run_audit` (union bound over
  thresholds, 95%).

Each bound is printed beside the accountant's epsilon of the models it came from; a
bound above it is a violation of the claimed guarantee (exit code 1).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np

from privaudit.data import load_adult
from privaudit.models.torch_models import TorchRecipe, TorchTrainer
from privaudit.stats import multi_run_audit, one_run_audit

FACTORY = """
from torch import nn


def mlp(n_features, hidden, n_classes):
    return nn.Sequential(nn.Linear(n_features, hidden), nn.ReLU(), nn.Linear(hidden, n_classes))
"""


def _loss(model, X, y):  # type: ignore[no-untyped-def]
    z = model.logits(X)
    z = z - z.max(axis=1, keepdims=True)
    return np.log(np.exp(z).sum(axis=1)) - z[np.arange(len(y)), y]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epsilons", type=float, nargs="+", default=[1.0, 8.0])
    ap.add_argument("--delta", type=float, default=1e-5)
    ap.add_argument("--m", type=int, default=1000, help="one-run canaries")
    ap.add_argument("--n-base", type=int, default=1000)
    ap.add_argument("--trials", type=int, default=24, help="multi-run models")
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore", module="opacus")

    data = load_adult()
    rng = np.random.default_rng(args.seed)
    perm = rng.permutation(data.n_records)
    canaries, base = perm[: args.m], perm[args.m : args.m + args.n_base]
    mr_canary = perm[args.m + args.n_base]
    X, y = data.X, data.y
    flipped = 1 - y[mr_canary]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / "dp_factories.py"
        f.write_text(FACTORY)
        kw = {"n_features": int(X.shape[1]), "hidden": 128, "n_classes": 2}
        settings: list[tuple[str, dict | None]] = [  # type: ignore[type-arg]
            (f"DP-SGD eps={e:g}", {"target_epsilon": e, "delta": args.delta, "max_grad_norm": 1.0})
            for e in args.epsilons
        ]
        settings.append(("non-private", None))
        for name, dp in settings:
            recipe = TorchRecipe(
                factory=f"{f}:mlp",
                factory_kwargs=kw,
                optimizer="sgd" if dp else "adam",
                lr=0.5 if dp else 1e-3,
                epochs=args.epochs if dp else 4 * args.epochs,
                batch_size=128,
                device="cpu",
                dp=dp,
            )
            tr = TorchTrainer(recipe, n_classes=2)
            # one run
            inc = rng.random(args.m) < 0.5
            train = np.concatenate([base, canaries[inc]])
            model = tr.fit(X[train], y[train], seed=int(rng.integers(2**31)))
            eps_acc = model.fit_info.get("accountant_epsilon")
            s1 = -_loss(model, X[canaries], y[canaries])
            one = one_run_audit(s1, inc, delta=args.delta, confidence=0.95)
            # multi run
            scores, included = [], []
            for _ in range(args.trials):
                b = bool(rng.random() < 0.5)
                Xt = np.vstack([X[base], X[[mr_canary]]]) if b else X[base]
                yt = np.concatenate([y[base], [flipped]]) if b else y[base]
                mdl = tr.fit(Xt, yt, seed=int(rng.integers(2**31)))
                scores.append(-_loss(mdl, X[[mr_canary]], np.array([flipped]))[0])
                included.append(b)
            multi = multi_run_audit(
                np.array(scores), np.array(included), delta=args.delta, confidence=0.95
            )
            row = {
                "setting": name,
                "accountant_epsilon": eps_acc,
                "delta": args.delta,
                "one_run_eps_lb": one.epsilon_lower_bound,
                "multi_run_eps_lb": multi.epsilon_lower_bound,
                "test_accuracy": float(
                    np.mean(model.logits(X[perm[-5000:]]).argmax(1) == y[perm[-5000:]])
                ),
            }
            bad = (
                eps_acc is not None
                and max(row["one_run_eps_lb"], row["multi_run_eps_lb"]) > eps_acc
            )
            row["violation"] = bool(bad)
            rows.append(row)
            acc_s = "    -   " if eps_acc is None else f"{eps_acc:8.3f}"
            print(
                f"{name:<18s} accountant eps {acc_s}  one-run eps_lb {row['one_run_eps_lb']:.3f}  "
                f"multi-run eps_lb {row['multi_run_eps_lb']:.3f}  test acc {row['test_accuracy']:.3f}"
                + ("  VIOLATION" if bad else ""),
                flush=True,
            )
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=2))
    return 1 if any(r["violation"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
