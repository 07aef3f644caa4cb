"""Audit a model you trained and released, without retraining it (PANORAMIA, Kazmi et al. 2024).

Usage::

    python examples/panoramia_audit.py              # Adult MLP, ~4,000 training records
    python examples/panoramia_audit.py --quick --json figures.json

1. Trains "your own" target outside privaudit: a scikit-learn MLP on part of UCI Adult,
   saved as ``target.skops`` (a plain estimator file).
2. Writes what a data owner brings to the audit: ``members.txt`` (the ids of a KNOWN subset
   of the training records: the auditor needs no more), ``non_members.txt`` (real records the
   target never saw: optional, only for the RM;RN and O(1) comparisons) and
   ``panoramia.yaml`` (the config: target, the recipe it was trained with, data, generator).
3. Runs ``privaudit panoramia panoramia.yaml``: a generator trained on half of the known
   members makes the non-members, a helper model trained with the recipe on generated records
   gives the baseline, and the MIA (record + target loss) is compared with the baseline
   (record + helper loss): c_lb, {c+eps}_lb, eps_tilde, RM;RN and O(1), with the report in
   ``<out>/report``.

``--json PATH`` writes the headline figures (``c_lb``, ``c_plus_eps_lb``, ``eps_tilde``,
``m``, ``eps_rmrn``, ``m_rmrn``, ``eps_o1``, ``m_o1``, ``confidence``, ``modality``).
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from privaudit import load_adult
from privaudit import main as privaudit

HERE = Path(__file__).resolve().parent


def _write_ids(path: Path, ids: Any) -> None:
    path.write_text("\n".join(map(str, ids)) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=HERE / "panoramia_out")
    ap.add_argument("--quick", action="store_true", help="a smaller target and audit")
    ap.add_argument("--json", type=Path, default=None, help="write the figures as JSON here")
    ap.add_argument("--max-iter", type=int, default=None, help="MLP iterations (overfitting)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    n_train, n_non, max_iter = (1200, 400, 150) if args.quick else (4000, 1000, 300)
    if args.max_iter is not None:
        max_iter = args.max_iter
    data = load_adult()
    rng = np.random.default_rng(args.seed)
    perm = rng.permutation(data.n_records)
    train_ids = data.record_ids[perm[:n_train]]
    non_member_ids = data.record_ids[perm[n_train : n_train + n_non]]
    # the auditor knows three quarters of the training records (a data owner's share)
    known = train_ids[: (3 * n_train) // 4]

    # 1. "your" model, trained and saved outside privaudit
    import skops.io as sio
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPClassifier

    recipe = {
        "hidden_layer_sizes": [64],
        "alpha": 0.0,
        "max_iter": max_iter,
        "tol": 0.0,
        "n_iter_no_change": 10**6,
    }
    clf = MLPClassifier(**{**recipe, "hidden_layer_sizes": (64,)}, random_state=args.seed)
    train = data.subset(train_ids)
    with warnings.catch_warnings():  # no convergence by design: the target overfits
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(train.X, train.y)
    test = data.subset(non_member_ids)
    args.out.mkdir(parents=True, exist_ok=True)
    sio.dump(clf, args.out / "target.skops")
    print(
        f"target: MLP (64 hidden units, {max_iter} iterations) on {n_train} Adult records; "
        f"train accuracy {clf.score(train.X, train.y):.3f}, test accuracy "
        f"{clf.score(test.X, test.y):.3f}"
    )

    # 2. what the auditor brings
    _write_ids(args.out / "members.txt", known)
    _write_ids(args.out / "non_members.txt", non_member_ids)
    config = {
        "modality": "tabular",
        "target": {"kind": "sklearn", "path": "target.skops"},
        "model": {"kind": "mlp", "params": recipe},
        "data": {"dataset": "adult", "members": "members.txt", "non_members": "non_members.txt"},
        "generator": {"kind": "cart"},
        "seed": args.seed,
        "confidence": 0.95,
        "output_dir": "report",
    }
    cfg_path = args.out / "panoramia.yaml"
    cfg_path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    print(f"config: {cfg_path} ({len(known)} known members, {n_non} real non-members)")

    # 3. the audit, as on the command line
    cmd = ["panoramia", str(cfg_path), "--overwrite", "--no-progress"]
    if args.json is not None:
        cmd += ["--json", str(args.json)]
    print("$ privaudit " + " ".join(cmd))
    return privaudit(cmd)


if __name__ == "__main__":
    raise SystemExit(main())
