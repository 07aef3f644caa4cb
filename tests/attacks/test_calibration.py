"""Population calibration (conformal thresholds), Attack L's serving mask, RMIA ids, loss."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from privaudit.attacks import AttackData, run_attack
from privaudit.attacks.calibration import conformal_threshold, random_out_subsets
from privaudit.attacks.rmia import _self_index
from privaudit.errors import InsufficientDataError
from privaudit.metrics.roc import auc
from privaudit.records import MembershipMatrix, SignalTable
from privaudit.signals import compute_signal

from .conftest import make_world


def test_conformal_threshold_matches_slow_rank_rule() -> None:
    rng = np.random.default_rng(0)
    for _ in range(200):
        n = int(rng.integers(19, 60))
        alpha = float(rng.choice([0.05, 0.1, 0.2]))
        cal = rng.integers(0, 6, size=n).astype(float)  # many ties
        t = conformal_threshold(cal, alpha)
        k = math.ceil((n + 1) * (1 - alpha) - 1e-9)
        kth = sorted(cal.tolist())[k - 1]
        for s in np.arange(-1.0, 7.0, 0.5):
            assert (s >= t) == (s > kth)


def test_conformal_threshold_holds_alpha_by_simulation() -> None:
    """P(new >= t) <= alpha for exchangeable scores, ties included, and is close to it."""
    rng = np.random.default_rng(1)
    alpha, n, reps = 0.1, 49, 20000
    cal = rng.integers(0, 20, size=(reps, n)).astype(float)
    new = rng.integers(0, 20, size=reps).astype(float)
    hits = np.array([new[r] >= conformal_threshold(cal[r], alpha) for r in range(reps)])
    se = math.sqrt(alpha * (1 - alpha) / reps)
    assert hits.mean() <= alpha + 3 * se
    cont = rng.normal(size=(reps, n))
    new_c = rng.normal(size=reps)
    hits_c = np.array([new_c[r] >= conformal_threshold(cont[r], alpha) for r in range(reps)])
    # continuous scores: exactly (n + 1 - k) / (n + 1) = 5 / 50
    assert abs(hits_c.mean() - 0.1) < 3 * se


def test_conformal_threshold_needs_enough_records() -> None:
    with pytest.raises(InsufficientDataError, match="calibration"):
        conformal_threshold(np.arange(18.0), 0.05)
    conformal_threshold(np.arange(19.0), 0.05)


def test_random_out_subsets_sizes_and_support() -> None:
    rng = np.random.default_rng(2)
    out = rng.uniform(size=(8, 500)) < 0.7
    sizes = rng.integers(1, 5, size=500)
    mask, usable = random_out_subsets(out, sizes, rng)
    assert not np.any(mask & ~out)
    np.testing.assert_array_equal(usable, out.sum(axis=0) >= sizes)
    np.testing.assert_array_equal(mask.sum(axis=0)[usable], sizes[usable])
    assert not mask[:, ~usable].any()


@pytest.mark.parametrize(
    "name", ["reference", "distillation", "distillation-logits", "leave-one-out", "lira-offline"]
)
def test_population_calibration_holds_alpha_on_fresh_non_members(name: str) -> None:
    """No-leak world (delta = 0): the calibrated FPR on audited records is ~ alpha,
    although the smoothed per-record rule need not be. The error counts both samples:
    the audited records and the calibration records the threshold came from (with 117
    calibration records, as attack D has here, the threshold's own FPR has sd ~ 2%)."""
    from privaudit.metrics.roc import alpha_acceptance_region

    w = make_world(7, n=3000, n_pop=3000, k=8, n_loo=4, delta=0.0)
    res = run_attack(name, w.data, alpha=0.05, seed=0)
    assert res.params["threshold_calibration"] == "population"
    assert res.params["n_calibration"] > 50
    assert res.params["threshold_sample_size"] == res.params["n_calibration"]
    dec = res.decisions()
    lo, hi = alpha_acceptance_region(0.05, res.params["n_calibration"], dec.size, 0.999)
    assert lo <= int(dec.sum()) <= hi, (dec.mean(), lo, hi)


def test_calibration_reads_population_inputs_only_with_alpha(world) -> None:  # type: ignore[no-untyped-def]
    d = world.data
    bare = AttackData(
        record_ids=d.record_ids,
        labels=d.labels,
        target=d.target,
        reference=d.reference,
        reference_membership=d.reference_membership,
        outside_reference=d.outside_reference,
    )
    for name in ("reference", "lira-offline"):
        run_attack(name, bare)  # no alpha: no calibration needed
        with pytest.raises(Exception, match="population"):
            run_attack(name, bare, alpha=0.05)
        res = run_attack(name, bare, alpha=0.05, threshold_calibration="smoothed")
        # R's score is -p, offline LiRA's -log p: each threshold is p <= alpha
        assert res.threshold == pytest.approx(-0.05 if name == "reference" else -np.log(0.05))


def _loo_world(seed: int, serves_all: bool) -> tuple[AttackData, np.ndarray, np.ndarray]:
    """The engine's LOO layout under a null: models on D and on D \\ {p} for k members."""
    rng = np.random.default_rng(seed)
    n, n_loo, k = 400, 4, 10
    ids = np.arange(n)
    member = np.zeros(n, bool)
    member[rng.choice(n, n // 2, replace=False)] = True
    a = rng.normal(size=n)
    seedfx = rng.normal(size=(n_loo, n))
    pm = np.sort(rng.choice(np.flatnonzero(member), k, replace=False))
    pn = np.sort(rng.choice(np.flatnonzero(~member), k, replace=False))
    rows, vals, mids, serves = [], [], [], []
    for r in range(n_loo):
        rows.append(member.copy())
        vals.append(a + seedfx[r] + 0.02 * rng.normal(size=n))
        mids.append(f"all{r}")
        serves.append(~member)
    for p in pm:
        row = member.copy()
        row[p] = False
        sv = np.zeros(n, bool)
        sv[p] = True
        for r in range(n_loo):
            rows.append(row)
            vals.append(a + seedfx[r] + 0.02 * rng.normal(size=n))
            mids.append(f"{p}-{r}")
            serves.append(sv)
    keep = np.array(rows)
    tgt = a + rng.normal(size=n)

    def t(v: np.ndarray, m: tuple[str, ...]) -> dict[str, SignalTable]:
        return {"logit_confidence": SignalTable("logit_confidence", ids, m, np.atleast_2d(v))}

    data = AttackData(
        record_ids=ids,
        labels=np.zeros(n, int),
        target=t(tgt, ("t",)),
        leave_one_out=t(np.array(vals), tuple(mids)),
        leave_one_out_membership=MembershipMatrix(ids, tuple(mids), keep),
        leave_one_out_serves=~keep if serves_all else np.array(serves),
    )
    return data, member, np.concatenate([pm, pn])


def test_leave_one_out_non_members_are_served_by_the_models_on_d_only() -> None:
    """Null LOO world: with the explicit serving mask FPR ~ alpha and AUC ~ 0.5; the old
    inference (every model excluding the record) gave FPR ~ 0.13 at alpha = 0.05."""
    fpr, fpr_wrong, aucs = [], [], []
    for rep in range(30):
        data, member, sample = _loo_world(rep, serves_all=False)
        s = run_attack("leave-one-out", data)
        sel = np.isin(s.record_ids, sample)
        m = member[s.record_ids[sel]]
        aucs.append(auc(s.scores[sel], m))
        fpr.append(np.mean(s.scores[~member[s.record_ids]] >= -0.05))
        wrong = run_attack("leave-one-out", _loo_world(rep, serves_all=True)[0])
        fpr_wrong.append(np.mean(wrong.scores[~member[wrong.record_ids]] >= -0.05))
    assert abs(np.mean(fpr) - 0.05) < 0.015
    assert abs(np.mean(aucs) - 0.5) < 0.06
    assert np.mean(fpr_wrong) > 0.09  # the defect this guards against


def test_rmia_self_index_matches_ids_across_integer_dtypes() -> None:
    x = np.array([3, 5, 7], dtype=np.int64)
    z = np.array([7, 1, 3], dtype=np.uint64)
    np.testing.assert_array_equal(_self_index(x, z), [2, -1, 0])
    np.testing.assert_array_equal(_self_index(z, x), [2, -1, 0])
    assert _self_index(np.array(["a", "b"]), np.array(["b", "c"])).tolist() == [-1, 0]
    assert _self_index(x, np.array(["3", "5"])) is None  # int and str never match


def test_cross_entropy_loss_stays_positive_at_large_margins() -> None:
    margins = np.array([1.0, 20.0, 40.0, 100.0, 700.0])
    z = np.stack([np.zeros_like(margins), margins], axis=1)
    y = np.ones(margins.size, dtype=np.int64)
    loss = compute_signal("loss", z, y)
    exact = np.log1p(np.exp(-margins))  # two classes: log(1 + e^{-m})
    np.testing.assert_allclose(loss, exact, rtol=1e-12)
    assert np.all(loss > 0) and np.all(np.diff(loss) < 0)  # no ties at 0


def _keep_matrix_world(layout: str, seed: int, n: int = 1200, z: int = 2400, k: int = 3) -> Any:
    """Null world (no membership signal) with ``k`` reference models and a keep matrix:
    ``"balanced"`` (the target is one row of a balanced (k + 1)-model matrix: each member
    is OUT for one more reference model than each non-member), ``"constant"`` (every
    record OUT for the same number, independently of the target) or ``"independent"``."""
    rng = np.random.default_rng(seed)
    ids = np.array([f"r{i}" for i in range(n)])
    pids = np.array([f"p{i}" for i in range(z)])
    refs = tuple(f"ref{j}" for j in range(k))
    if layout == "balanced":
        keep_all = np.argsort(rng.random((k + 1, n)), axis=0) < (k + 1) // 2
        member, keep = keep_all[0], keep_all[1:]
    elif layout == "constant":
        member = rng.random(n) < 0.5
        keep = np.argsort(rng.random((k, n)), axis=0) < 1
    else:
        member = rng.random(n) < 0.5
        keep = rng.random((k, n)) < 0.5
        keep[:, keep.all(axis=0)] = False
    d, dz = rng.standard_normal(n), rng.standard_normal(z)
    data = AttackData(
        record_ids=ids,
        labels=np.zeros(n, np.int64),
        target={"loss": SignalTable("loss", ids, ("target",), (d + rng.standard_normal(n))[None])},
        population_target={
            "loss": SignalTable("loss", pids, ("target",), (dz + rng.standard_normal(z))[None])
        },
        reference={"loss": SignalTable("loss", ids, refs, d + rng.standard_normal((k, n)))},
        reference_membership=MembershipMatrix(ids, refs, keep),
        reference_population={
            "loss": SignalTable("loss", pids, refs, dz + rng.standard_normal((k, z)))
        },
    )
    return data, member


@pytest.mark.parametrize("name", ["calibrated-loss", "lira-offline"])
def test_guarantee_withdrawn_when_members_have_more_out_models(name: str) -> None:
    """The target as one row of a balanced keep matrix: members are OUT for 2 reference
    models, non-members for 1, and the calibration (blind to membership) draws sizes
    from both, so its threshold does not hold alpha on the non-members. The attack records
    the condition; the metrics, which know the membership, withdraw the guarantee."""
    from privaudit.metrics.roc import attack_metrics

    data, member = _keep_matrix_world("balanced", 0)
    res = run_attack(name, data, alpha=0.05, seed=0, signal="loss")
    assert "independent of the target's" in res.params["alpha_guarantee_requires"]
    assert len(res.params["n_out_per_record"]) == member.size
    met = attack_metrics(res, member)
    assert met.alpha_within_error is None
    assert met.alpha_guarantee is None
    assert met.alpha_check is not None and met.alpha_check.startswith("no check:")
    assert "members have 2 OUT reference models on average, non-members 1" in met.alpha_check
    assert any("is not guaranteed" in w for w in met.warnings)


@pytest.mark.parametrize("name", ["calibrated-loss", "lira-offline"])
def test_guarantee_kept_when_out_counts_do_not_depend_on_membership(name: str) -> None:
    from privaudit.metrics.roc import attack_metrics

    data, member = _keep_matrix_world("constant", 1)
    res = run_attack(name, data, alpha=0.05, seed=0, signal="loss")
    assert "n_out_per_record" not in res.params
    assert "alpha_guarantee_requires" not in res.params
    met = attack_metrics(res, member)
    assert met.alpha_guarantee == "per-target"
    assert met.alpha_within_error is not None
    assert met.alpha_check is not None and met.alpha_check.startswith("beta-binomial:")
    # counts that vary independently of membership: the condition is recorded, and holds
    data, member = _keep_matrix_world("independent", 2)
    res = run_attack(name, data, alpha=0.05, seed=0, signal="loss")
    assert "alpha_guarantee_requires" in res.params
    met = attack_metrics(res, member)
    assert met.alpha_guarantee == "per-target"
    assert met.alpha_within_error is not None
