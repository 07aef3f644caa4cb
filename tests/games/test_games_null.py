"""Regression tests: under a null (model outputs unrelated to training data) the engine
must leak nothing through its layout, and every alpha threshold must hold alpha.

A design in which the target was one row of a balanced keep matrix shared with the
reference models leaked the target bit through ``reference_membership`` (a member was
IN for one reference model fewer than a non-member): LiRA online got AUC 0.35-0.48 and
RMIA online 0.56 under this null. Attack L's non-members were served by every
leave-one-out model, giving FPR 0.13 at alpha 0.05.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray

from privaudit.attacks import ATTACKS
from privaudit.data.dataset import Dataset
from privaudit.membership.experiment import DEFAULT_ATTACKS, ExperimentConfig, run_experiment
from privaudit.metrics.roc import auc

#: Attacks outside the defaults that the null world checks as well (issue 34).
_NEW_ATTACKS = ("bavaria-online", "bavaria-offline", "informia-online", "informia-offline")


class _NullModel:
    """Logits are a pseudo-random function of (record features, seed): no memorisation."""

    def __init__(self, seed: int, n_features: int, n_classes: int = 2) -> None:
        rng = np.random.default_rng(seed)
        self._w = rng.normal(size=(n_features, n_classes))
        self._n_classes = n_classes

    @property
    def n_classes(self) -> int:
        return self._n_classes

    def logits(self, X: NDArray[np.float64]) -> NDArray[np.float64]:
        # record difficulty (seed-free) + per-model noise, both unrelated to training
        base = np.sin(X[:, :1] * 7919.0) * 2.0
        noise = np.sin(X @ self._w * 104729.0)
        out = np.zeros((X.shape[0], self._n_classes))
        out[:, 0] = base[:, 0] + noise[:, 0]
        return out


class _NullTrainer:
    name = "null"

    def accepts_sample_weight(self) -> bool:  # so that the engine can "distil" it
        return True

    def fit(
        self,
        X: NDArray[np.float64],
        y: NDArray[np.int64],
        *,
        seed: int,
        n_classes: int | None = None,
        sample_weight: NDArray[np.float64] | None = None,
    ) -> _NullModel:
        # the training data are deliberately ignored: membership has no effect
        h = int(hashlib.sha256(str(seed).encode()).hexdigest()[:8], 16)
        return _NullModel(h, X.shape[1])

    def settings(self) -> dict[str, Any]:
        return {"kind": "null"}


def _dataset(n: int, seed: int = 0) -> Dataset:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = rng.integers(0, 2, size=n)
    return Dataset("null", np.arange(n), X, y, ("a", "b", "c"), ("0", "1"))


@pytest.fixture(scope="module")
def null_run():  # type: ignore[no-untyped-def]
    cfg = ExperimentConfig(
        attacks=(*DEFAULT_ATTACKS, *_NEW_ATTACKS),
        n_target_pool=3000,
        n_population=3000,
        n_reference=8,
        n_shadow=2,
        n_distilled=4,
        n_leave_one_out=2,
        leave_one_out_sample=400,
        alpha=0.05,
        seed=5,
    )
    return run_experiment(_dataset(6000), _NullTrainer(), cfg, progress=False)


def test_reference_layout_is_independent_of_the_target_bit(null_run) -> None:  # type: ignore[no-untyped-def]
    mm = null_run.membership_matrix
    n_in = mm.keep[1:].sum(axis=0)
    assert np.all(n_in == 4)  # n_reference / 2 for members and non-members alike
    # the target's bit: one fair coin per record, uncorrelated with the reference layout
    member = null_run.membership
    assert abs(member.sum() - 1500) < 5 * np.sqrt(3000 / 4)
    for row in mm.keep[1:]:
        assert abs(np.corrcoef(row, member)[0, 1]) < 5 / np.sqrt(3000)


@pytest.mark.parametrize(
    "name",
    [
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
        "calibrated-loss",
        "learned",
        "label-only",
        "bavaria-online",
        "bavaria-offline",
        "informia-online",
        "informia-offline",
    ],
)
def test_null_world_auc_is_chance_and_alpha_holds(null_run, name: str) -> None:  # type: ignore[no-untyped-def]
    s = null_run.scores[name]
    m = null_run.member_of(name)
    n_pos, n_neg = int(m.sum()), int((~m).sum())
    sd = np.sqrt((n_pos + n_neg + 1) / (12.0 * n_pos * n_neg))  # AUC sd under H0
    assert abs(auc(s.scores, m) - 0.5) < 4 * sd, name
    if ATTACKS[name].alpha_threshold:
        assert s.threshold is not None
        dec = s.scores >= s.threshold
        for world, k in (("non-members", n_neg), ("members", n_pos)):
            rate = dec[~m].mean() if world == "non-members" else dec[m].mean()
            # under the null members are non-members too: both rates are ~ alpha
            assert abs(rate - 0.05) < 4 * np.sqrt(0.05 * 0.95 / k), (name, world, rate)


def test_the_null_bound_detects_the_old_shared_layout() -> None:
    """Power check of the bound above: with the old layout (target = row 0 of one
    balanced keep matrix shared with the reference models) LiRA online leaks the bit
    through reference_membership even though every signal is pure noise."""
    from privaudit.attacks import AttackData, run_attack
    from privaudit.data.sampling import balanced_keep_matrix
    from privaudit.records import MembershipMatrix, SignalTable

    rng = np.random.default_rng(0)
    n, n_ref = 3000, 7
    ids = np.arange(n)
    keep = balanced_keep_matrix(ids, 1 + n_ref, rng).keep
    member, ref_keep = keep[0], keep[1:]
    mids = tuple(f"r{j}" for j in range(n_ref))

    def t(v: NDArray[np.float64], m: tuple[str, ...]) -> dict[str, SignalTable]:
        return {"logit_confidence": SignalTable("logit_confidence", ids, m, np.atleast_2d(v))}

    data = AttackData(
        record_ids=ids,
        labels=np.zeros(n, int),
        target=t(rng.normal(size=n), ("t",)),
        reference=t(rng.normal(size=(n_ref, n)), mids),
        reference_membership=MembershipMatrix(ids, mids, ref_keep),
    )
    s = run_attack("lira-online", data)
    n_pos, n_neg = int(member.sum()), int((~member).sum())
    sd = np.sqrt((n_pos + n_neg + 1) / (12.0 * n_pos * n_neg))
    assert abs(auc(s.scores, member) - 0.5) > 4 * sd
