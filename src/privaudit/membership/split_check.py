"""Is a provided target's split, declared random, refuted by its records alone?

The one-run epsilon bounds of a target trained outside privaudit rest on the auditor's
declaration that the members were drawn at random, independently of the records
(``randomised_split``; :mod:`privaudit.stats.attack_bounds`). privaudit cannot check how
the draw was made, but it can look for evidence against it: under a random draw, nothing
about a record predicts whether it is a member, so a classifier that sees only the
records -- their features and labels, never the model -- separates members from
non-members no better than chance. A permutation test of such a classifier
(:mod:`privaudit.metrics.shift_test`: cross-fitted ridge, p-value exact under the random
draw) with ``p < SPLIT_CHECK_LEVEL`` refutes the declaration, and the bounds are refused
as for an undeclared split. A large p does not prove the draw random: the classifier sees
what a linear model of the features below can see.

Features (label-free in the sense of the test: they do not use membership): the
dataset's encoded features standardised (constant columns dropped), the one-hot class
label, and ``N_RANDOM_FEATURES`` random ReLU features of both (a fixed seeded projection,
standardised) so that shifts in interactions are seen too. Every record is its own unit
of randomisation; above ``MAX_RECORDS`` audited records a seeded random subset, drawn
independently of membership, is tested (the p-value stays exact).

Measured on the digits data (1,200 audited records, 100 permutations): members chosen as
the 600 records a model trained elsewhere fits best: AUC 0.85, p = 0.01; the first 600
rows: AUC 0.77, p = 0.01; a random half: AUC 0.51, p = 0.30.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from privaudit.data.dataset import Dataset
from privaudit.metrics.shift_test import RidgeCrossFit, ShiftTest
from privaudit.models.provided import ProvidedTarget

__all__ = [
    "MAX_RECORDS",
    "N_RANDOM_FEATURES",
    "SPLIT_CHECK_LEVEL",
    "check_declared_split",
    "record_features",
    "split_check_refusal",
]

#: Level of the test: a declared random split is refuted below this p-value.
SPLIT_CHECK_LEVEL = 0.05
#: Random ReLU features added to the standardised features and the one-hot label.
N_RANDOM_FEATURES = 256
#: Most audited records tested (a seeded random subset beyond).
MAX_RECORDS = 20_000
_N_PERMUTATIONS = 100
_N_FOLDS = 5
_RIDGE = 10.0


def record_features(
    X: NDArray[Any], labels: NDArray[np.int64], n_classes: int, *, seed: int
) -> NDArray[np.float64]:
    """The classifier's features of each record (module docstring): standardised
    features, one-hot label, ``N_RANDOM_FEATURES`` random ReLU features of both."""
    x = np.asarray(X, dtype=np.float64).reshape(len(labels), -1)
    base = np.hstack([_standardised(x), np.eye(n_classes)[labels]])
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 0x5917]))
    w = rng.standard_normal((base.shape[1], N_RANDOM_FEATURES)) / np.sqrt(base.shape[1])
    r = np.maximum(base @ w + rng.uniform(-1.0, 1.0, N_RANDOM_FEATURES), 0.0)
    return np.hstack([base, _standardised(r)])


def _standardised(a: NDArray[np.float64]) -> NDArray[np.float64]:
    """The columns of ``a`` centred and scaled to unit SD, constant columns dropped."""
    sd = a.std(axis=0)
    keep = sd > 0
    return np.asarray((a[:, keep] - a[:, keep].mean(axis=0)) / sd[keep])


def check_declared_split(
    dataset: Dataset,
    provided: ProvidedTarget,
    *,
    seed: int,
    n_permutations: int = _N_PERMUTATIONS,
) -> dict[str, Any]:
    """The permutation test of the module docstring on the provided target's audited
    records: ``results.json["target"]["split_check"]``, the :class:`ShiftTest` fields plus
    ``level``, ``refuted``, ``n_records`` tested and what the classifier saw."""
    audited = dataset.subset(provided.audited_ids)
    member = np.zeros(audited.n_records, dtype=bool)
    member[: provided.member_ids.size] = True
    rows = np.arange(audited.n_records)
    if rows.size > MAX_RECORDS:  # a subset drawn independently of membership
        rng = np.random.default_rng(np.random.SeedSequence([int(seed), 0x5918]))
        rows = np.sort(rng.choice(rows, size=MAX_RECORDS, replace=False))
    z = record_features(audited.X[rows], np.asarray(audited.y)[rows], audited.n_classes, seed=seed)
    fit = RidgeCrossFit.prepare(
        z, member[rows], rows, n_folds=_N_FOLDS, ridge=_RIDGE, seed=seed, unit="record"
    )
    test: ShiftTest = fit.shift_test(fit.cross_fit(fit.y), n_permutations, seed, unit="record")
    return {
        **test.to_dict(),
        "level": SPLIT_CHECK_LEVEL,
        "refuted": bool(test.p_value < SPLIT_CHECK_LEVEL),
        "n_records": int(rows.size),
        "classifier": (
            f"cross-fitted ridge ({_N_FOLDS} folds, lambda {_RIDGE:g}) on the standardised "
            f"features, the one-hot label and {N_RANDOM_FEATURES} random ReLU features; "
            "never the model"
        ),
    }


def split_check_refusal(check: dict[str, Any] | None) -> str | None:
    """The reason the bounds are refused when the check refutes the declared split."""
    if check is None or not check["refuted"]:
        return None
    return (
        "refused: the split was declared random, but the records alone separate members "
        f"from non-members (a classifier that never sees the model: AUC {check['auc']:.3f}, "
        f"permutation p = {check['p_value']:.3f} < {check['level']:g}), which a random draw "
        "rarely gives; audit with 'privaudit zero-run', made for splits that were not "
        "randomised"
    )
