"""Multi-run audit (Jagielski et al. 2020; Nasr et al. 2021, 2023; audit-math.md section 1)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from scipy.special import expit

from privaudit.errors import InvalidInputError
from privaudit.stats import multi_run as mr
from privaudit.stats import multi_run_audit, multi_run_eps_lb, multi_run_mu_lb


def slow_eps(tp: int, fn: int, fp: int, tn: int, alpha: float, delta: float) -> float:
    tpr_lb = stats.beta.ppf(alpha / 2, tp, fn + 1) if tp > 0 else 0.0
    fpr_ub = stats.beta.ppf(1 - alpha / 2, fp + 1, tn) if tn > 0 else 1.0
    terms = [0.0]
    if tpr_lb > delta:
        terms.append(math.log((tpr_lb - delta) / fpr_ub))
    if 1 - fpr_ub > delta and tpr_lb < 1:
        terms.append(math.log((1 - fpr_ub - delta) / (1 - tpr_lb)))
    return max(terms)


@pytest.mark.parametrize(
    ("tp", "fn", "fp", "tn", "delta"),
    [
        (95, 5, 5, 95, 0.0),
        (50, 50, 50, 50, 0.0),
        (990, 10, 3, 997, 1e-5),
        (10, 0, 0, 10, 0.0),
        (0, 100, 0, 100, 0.0),
        (30, 70, 1, 99, 0.1),
    ],
)
def test_formula_against_scipy_oracle(tp: int, fn: int, fp: int, tn: int, delta: float) -> None:
    got = multi_run_eps_lb(tp, fn, fp, tn, confidence=0.95, delta=delta)
    assert got == pytest.approx(slow_eps(tp, fn, fp, tn, 0.05, delta), abs=1e-9)
    fpr_ub = stats.beta.ppf(0.975, fp + 1, tn) if tn > 0 else 1.0
    fnr_ub = 1 - (stats.beta.ppf(0.025, tp, fn + 1) if tp > 0 else 0.0)
    mu = max(0.0, stats.norm.ppf(1 - fpr_ub) - stats.norm.ppf(fnr_ub))
    assert multi_run_mu_lb(tp, fn, fp, tn) == pytest.approx(mu, abs=1e-8)


def test_multi_run_brief_formula_is_anticonservative() -> None:
    """The optimistic end of each interval (the brief's wording) exceeds the true eps often."""
    rng = np.random.default_rng(0)
    eps, n, reps = 1.0, 200, 400
    q = expit(eps)
    tp = rng.binomial(n, q, reps)
    fp = rng.binomial(n, 1 - q, reps)
    bad = good = 0
    for a, b in zip(tp, fp, strict=True):
        fpr_lb = stats.beta.ppf(0.025, b, n - b + 1)
        tpr_ub = stats.beta.ppf(0.975, a + 1, n - a)
        bad += math.log((1 - fpr_lb) / (1 - tpr_ub)) > eps
        good += multi_run_eps_lb(int(a), n - int(a), int(b), n - int(b)) > eps
    assert bad / reps > 0.5
    assert good / reps <= 0.05


def test_audit_fixed_threshold_equals_count_function() -> None:
    rng = np.random.default_rng(1)
    mem = rng.random(400) < 0.5
    s = rng.standard_normal(400) + 2 * mem
    res = multi_run_audit(s, mem, threshold=1.0, delta=1e-3)
    c = res.counts
    assert c["tp"] == int((s[mem] >= 1.0).sum()) and c["fp"] == int((s[~mem] >= 1.0).sum())
    assert res.epsilon_lower_bound == pytest.approx(
        multi_run_eps_lb(c["tp"], c["fn"], c["fp"], c["tn"], delta=1e-3)
    )
    assert res.mu_lower_bound == pytest.approx(multi_run_mu_lb(c["tp"], c["fn"], c["fp"], c["tn"]))
    assert res.threshold_selection == "fixed"
    grid = multi_run_audit(s, mem, thresholds=[0.0, 1.0, 2.0])
    assert grid.threshold_selection == "union-bound over 3 fixed thresholds"
    assert grid.extra["level_per_rate"]["tpr"] == pytest.approx(0.05 / 6)
    pure = multi_run_audit(s, mem, threshold=1.0)
    half = multi_run_audit(s, mem, group_size=2, threshold=1.0)
    assert half.epsilon_lower_bound == pytest.approx(pure.epsilon_lower_bound / 2)
    # with delta > 0 the group's delta grows too: below the group bound / 2
    half_d = multi_run_audit(s, mem, group_size=2, threshold=1.0, delta=1e-3)
    assert 0 < half_d.epsilon_lower_bound < res.epsilon_lower_bound / 2


def test_union_bound_over_all_thresholds_is_brute_force_max() -> None:
    rng = np.random.default_rng(2)
    mem = rng.random(300) < 0.5
    s = np.round(rng.standard_normal(300) + 1.5 * mem, 1)  # ties
    res = multi_run_audit(s, mem)
    n_pos, n_neg = int(mem.sum()), int((~mem).sum())
    best = 0.0
    for t in np.unique(s):
        tp, fp = int((s[mem] >= t).sum()), int((s[~mem] >= t).sum())
        tpr_lb = stats.beta.ppf(0.025 / n_pos, tp, n_pos - tp + 1) if tp else 0.0
        fpr_ub = stats.beta.ppf(1 - 0.025 / n_neg, fp + 1, n_neg - fp) if fp < n_neg else 1.0
        cands = [0.0]
        if tpr_lb > 0:
            cands.append(math.log(tpr_lb / fpr_ub))
        if tpr_lb < 1 and fpr_ub < 1:
            cands.append(math.log((1 - fpr_ub) / (1 - tpr_lb)))
        best = max(best, *cands)
    assert res.epsilon_lower_bound == pytest.approx(best, abs=1e-8)


def test_screening_never_raises_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(3)
    mem = rng.random(5000) < 0.5
    s = rng.standard_normal(5000) + 1.0 * mem
    full = multi_run_audit(s, mem)
    monkeypatch.setattr(mr, "_EXHAUSTIVE_MAX", 100)
    monkeypatch.setattr(mr, "_SCREEN_KEEP", 50)
    screened = multi_run_audit(s, mem)
    assert screened.epsilon_lower_bound <= full.epsilon_lower_bound + 1e-12
    assert screened.epsilon_lower_bound >= 0.95 * full.epsilon_lower_bound
    assert screened.mu_lower_bound is not None and full.mu_lower_bound is not None
    assert screened.mu_lower_bound <= full.mu_lower_bound + 1e-12


def test_held_out_and_errors() -> None:
    rng = np.random.default_rng(4)
    mem = rng.random(1000) < 0.5
    s = rng.standard_normal(1000) + 3 * mem
    res = multi_run_audit(s, mem, selection="held-out", rng=7)
    assert res.threshold_selection.startswith("held-out") and res.epsilon_lower_bound > 1
    assert res.extra["n_audit_trials"] == 500
    with pytest.raises(InvalidInputError):
        multi_run_audit(s, mem, threshold=0.0, thresholds=[0.0])
    with pytest.raises(InvalidInputError, match="tp \\+ fn"):
        multi_run_eps_lb(0, 0, 1, 1)
    with pytest.raises(InvalidInputError, match="NaN"):
        multi_run_audit([0.1, np.nan], [1, 0])


@given(
    tp=st.integers(0, 200),
    fp=st.integers(0, 200),
    c1=st.floats(0.5, 0.999),
    c2=st.floats(0.5, 0.999),
)
@settings(max_examples=60, deadline=None)
def test_monotone_in_confidence_and_counts(tp: int, fp: int, c1: float, c2: float) -> None:
    n = 200
    lo, hi = sorted((c1, c2))
    e = multi_run_eps_lb(tp, n - tp, fp, n - fp, confidence=hi)
    assert e <= multi_run_eps_lb(tp, n - tp, fp, n - fp, confidence=lo) + 1e-9
    if tp < n and tp > fp:
        assert e <= multi_run_eps_lb(tp + 1, n - tp - 1, fp, n - fp, confidence=hi) + 1e-9
    if fp > 0 and tp > fp:
        assert e <= multi_run_eps_lb(tp, n - tp, fp - 1, n - fp + 1, confidence=hi) + 1e-9


@given(seed=st.integers(0, 2**32 - 1))
@settings(max_examples=25, deadline=None)
def test_invariant_to_permutation_and_transforms(seed: int) -> None:
    rng = np.random.default_rng(seed)
    mem = rng.random(200) < 0.5
    mem[:2] = [True, False]
    s = rng.permutation(200).astype(float) / 20 + 2 * mem
    perm = rng.permutation(200)
    base = multi_run_audit(s, mem)
    for t, mm in ((s[perm], mem[perm]), (5 * s + 1, mem), (np.exp(s / 4), mem)):
        other = multi_run_audit(t, mm)
        assert other.epsilon_lower_bound == base.epsilon_lower_bound
        assert other.mu_lower_bound == base.mu_lower_bound


def _slow_group_eps(p: float, q: float, delta: float, k: int) -> tuple[float, float]:
    """Bracket of the record-level eps from a group test by a scan: the largest eps on a
    fine grid whose guarantee (k eps, delta sum_(i<k) e^(i eps)) the rates p > ... reject,
    and the next grid point (not rejected)."""
    step = 1e-4
    eps = 0.0
    if not q + k * delta < p:
        return 0.0, 0.0
    while (
        math.exp(k * (eps + step)) * q + delta * sum(math.exp(i * (eps + step)) for i in range(k))
        < p
    ):
        eps += step
    return eps, eps + step


@pytest.mark.parametrize(
    ("p", "q", "delta", "k"),
    [
        (0.123, 0.01, 5e-3, 4),
        (0.9, 0.05, 1e-5, 2),
        (0.5, 0.2, 1e-2, 3),
        (0.3, 0.0, 1e-3, 5),  # no false positives: only delta's growth bounds eps
        (0.02, 0.01, 5e-3, 3),  # rejected at no eps
        (0.999, 1e-4, 1e-6, 10),
    ],
)
def test_group_eps_matches_a_scan_of_the_guarantee(
    p: float, q: float, delta: float, k: int
) -> None:
    got = float(mr._group_eps(np.array([p]), np.array([q]), delta, k)[0])
    lo, hi = _slow_group_eps(p, q, delta, k)
    assert lo - 1e-12 <= got <= hi
    # and never above the pure-DP bound divided by k (delta only ever lowers it)
    if q > 0 and p > delta:
        assert got <= math.log((p - delta) / q) / k + 1e-12


def test_group_size_with_delta_holds_on_a_mechanism_tight_for_groups() -> None:
    """A binary mechanism that is (eps, delta)-DP per record and as leaky as group
    privacy allows for k records: flag with probability f(c) = e^(c eps) f0 +
    delta sum_(i<c) e^(i eps) when c of the k copies are in (each step f(c+1) =
    e^eps f(c) + delta, and f <= (1 - delta)/(1 + e^eps) keeps the other three
    inequalities). Dividing the group bound by k claims eps_lb > eps in almost every
    run; the group rule stays at or below eps in all but about beta of them."""
    eps, delta, k, f0, n = 0.5, 5e-3, 4, 0.01, 40_000
    f_k = math.exp(k * eps) * f0 + delta * sum(math.exp(i * eps) for i in range(k))
    assert f_k <= (1 - delta) / (1 + math.exp(eps))
    rng = np.random.default_rng(11)
    mem = np.r_[np.ones(n, bool), np.zeros(n, bool)]
    above, divided_above, runs = 0, 0, 40
    for _ in range(runs):
        s = np.r_[rng.random(n) < f_k, rng.random(n) < f0].astype(np.float64)
        res = multi_run_audit(s, mem, threshold=1.0, delta=delta, group_size=k)
        group = multi_run_audit(s, mem, threshold=1.0, delta=delta)
        above += res.epsilon_lower_bound > eps
        divided_above += group.epsilon_lower_bound / k > eps
        assert res.epsilon_lower_bound <= group.epsilon_lower_bound / k
        assert res.mu_lower_bound == pytest.approx(group.mu_lower_bound / k)  # type: ignore[operator]
    assert divided_above >= runs * 0.9  # the old rule: not a valid bound here
    assert stats.binom.sf(above - 1, runs, 0.05) > 0.01  # at most beta, up to chance
    assert res.extra["group_size"] == k and "delta grows" in res.notes[-2]
