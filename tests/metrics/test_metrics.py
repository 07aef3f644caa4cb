"""Metrics checked against slow, obviously correct oracles."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from privaudit.errors import InvalidInputError
from privaudit.metrics.roc import (
    achieved_fpr,
    achieved_rates,
    agreement_matrix,
    attack_metrics,
    auc,
    clopper_pearson,
    fpr_at_tpr,
    membership_for,
    roc_curve,
    tpr_at_fpr,
    tpr_at_zero_fpr,
)
from privaudit.records import AttackScores, MembershipMatrix

# ---------------------------------------------------------------- oracles


def auc_pairs(s: np.ndarray, m: np.ndarray) -> float:
    pos, neg = s[m], s[~m]
    total = 0.0
    for p in pos:
        for n in neg:
            total += 1.0 if p > n else 0.5 if p == n else 0.0
    return total / (pos.size * neg.size)


def sweep(s: np.ndarray, m: np.ndarray) -> list[tuple[float, float]]:
    """(fpr, tpr) of `score >= t` for every t in the scores plus +inf."""
    pts = [(0.0, 0.0)]
    for t in np.unique(s):
        d = s >= t
        pts.append((float((d & ~m).sum() / (~m).sum()), float((d & m).sum() / m.sum())))
    return pts


def tpr_at_fpr_brute(s: np.ndarray, m: np.ndarray, f: float) -> float:
    return max(tpr for fpr, tpr in sweep(s, m) if fpr <= f + 1e-12)


def fpr_at_tpr_brute(s: np.ndarray, m: np.ndarray, r: float) -> float:
    return min(fpr for fpr, tpr in sweep(s, m) if tpr >= r - 1e-12)


scores_and_member = st.integers(2, 60).flatmap(
    lambda n: st.tuples(
        # few distinct values -> many ties
        st.lists(st.integers(-5, 5), min_size=n, max_size=n),
        st.lists(st.booleans(), min_size=n, max_size=n).filter(lambda m: 0 < sum(m) < len(m)),
    )
)

# ---------------------------------------------------------------- AUC / ROC


@settings(max_examples=150, deadline=None)
@given(scores_and_member)
def test_auc_matches_pair_counting(data: tuple[list[int], list[bool]]) -> None:
    s = np.asarray(data[0], dtype=float) / 3.0
    m = np.asarray(data[1])
    assert auc(s, m) == pytest.approx(auc_pairs(s, m), abs=1e-12)


@settings(max_examples=150, deadline=None)
@given(scores_and_member)
def test_roc_matches_brute_force_sweep(data: tuple[list[int], list[bool]]) -> None:
    s = np.asarray(data[0], dtype=float)
    m = np.asarray(data[1])
    roc = roc_curve(s, m)
    brute = np.array(sorted(sweep(s, m)))
    np.testing.assert_allclose(np.c_[roc.fpr, roc.tpr], brute, atol=1e-12)
    # trapezoidal area of the exact ROC = Mann-Whitney AUC
    assert np.trapezoid(roc.tpr, roc.fpr) == pytest.approx(roc.auc, abs=1e-12)
    assert roc.n_positives == m.sum() and roc.n_negatives == (~m).sum()
    assert roc.thresholds[0] == np.inf
    assert np.all(np.diff(roc.thresholds) < 0)


@settings(max_examples=150, deadline=None)
@given(scores_and_member, st.sampled_from([0.0001, 0.01, 0.05, 0.1, 0.25, 0.5, 0.9]))
def test_tpr_at_fpr_matches_sweep(data: tuple[list[int], list[bool]], f: float) -> None:
    s = np.asarray(data[0], dtype=float)
    m = np.asarray(data[1])
    roc = roc_curve(s, m)
    assert tpr_at_fpr(roc, f, require_support=False) == pytest.approx(tpr_at_fpr_brute(s, m, f))
    assert tpr_at_zero_fpr(roc) == pytest.approx(tpr_at_fpr_brute(s, m, 0.0))


@settings(max_examples=150, deadline=None)
@given(scores_and_member, st.sampled_from([0.0, 0.1, 0.5, 0.9, 1.0]))
def test_fpr_at_tpr_matches_sweep(data: tuple[list[int], list[bool]], r: float) -> None:
    s = np.asarray(data[0], dtype=float)
    m = np.asarray(data[1])
    assert fpr_at_tpr(roc_curve(s, m), r) == pytest.approx(fpr_at_tpr_brute(s, m, r))


def test_auc_matches_scipy_mannwhitney_on_continuous_data() -> None:
    rng = np.random.default_rng(0)
    m = rng.random(3000) < 0.4
    s = rng.normal(size=m.size) + 0.7 * m
    u = stats.mannwhitneyu(s[m], s[~m]).statistic
    assert auc(s, m) == pytest.approx(u / (m.sum() * (~m).sum()), rel=1e-12)
    # Gaussian shift 0.7: AUC = Phi(0.7 / sqrt(2)) ~ 0.689
    assert auc(s, m) == pytest.approx(stats.norm.cdf(0.7 / np.sqrt(2)), abs=0.03)


def test_ties_all_equal_scores_give_half_and_diagonal() -> None:
    roc = roc_curve(np.zeros(10), np.arange(10) < 3)
    assert roc.auc == 0.5
    assert roc.fpr.tolist() == [0.0, 1.0] and roc.tpr.tolist() == [0.0, 1.0]
    assert tpr_at_zero_fpr(roc) == 0.0


def test_perfect_and_inverted_attack() -> None:
    m = np.arange(20) < 10
    assert auc(m.astype(float), m) == 1.0
    assert auc(-m.astype(float), m) == 0.0
    roc = roc_curve(m.astype(float), m)
    assert tpr_at_zero_fpr(roc) == 1.0
    assert fpr_at_tpr(roc, 0.9) == 0.0


def test_tpr_at_fpr_uses_less_or_equal_convention() -> None:
    # 100 negatives, the top-scored negative is the only FP at the threshold that gets all members
    m = np.r_[np.ones(10, bool), np.zeros(100, bool)]
    s = np.r_[np.full(10, 5.0), 6.0, np.zeros(99)]
    roc = roc_curve(s, m)
    # FPR = 1/100 exactly is allowed at 1% (LiRA's strict `<` would give 0)
    assert tpr_at_fpr(roc, 0.01) == 1.0
    assert tpr_at_fpr(roc, 0.0099, require_support=False) == 0.0


def test_tpr_at_fpr_none_without_enough_negatives() -> None:
    rng = np.random.default_rng(1)
    m = np.r_[np.ones(50, bool), np.zeros(999, bool)]
    roc = roc_curve(rng.normal(size=m.size), m)
    assert tpr_at_fpr(roc, 0.001) is None  # 999 < 1000
    assert tpr_at_fpr(roc, 0.01) is not None
    roc2 = roc_curve(rng.normal(size=1050), np.r_[np.ones(50, bool), np.zeros(1000, bool)])
    assert tpr_at_fpr(roc2, 0.001) is not None  # exactly 1/fpr negatives


def test_metrics_invariant_to_permutation_and_monotone_transform() -> None:
    rng = np.random.default_rng(2)
    m = rng.random(500) < 0.5
    s = rng.normal(size=500) + m
    perm = rng.permutation(500)
    r1, r2 = roc_curve(s, m), roc_curve(np.exp(s[perm]), m[perm])
    assert r1.auc == pytest.approx(r2.auc)
    np.testing.assert_allclose(r1.fpr, r2.fpr)
    np.testing.assert_allclose(r1.tpr, r2.tpr)


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("scores", "member", "match"),
    [
        ([0.1, 0.2, 0.3], [True, True, True], "at least one member and one non-member"),
        ([0.1, 0.2, 0.3], [False, False, False], "at least one member and one non-member"),
        ([0.1, np.nan, 0.3], [True, False, True], "NaN"),
        ([0.1, np.inf, 0.3], [True, False, True], "finite"),
        ([0.1, 0.2], [True, False, True], "same length"),
        ([], [], "non-empty"),
        ([0.1, 0.2], [0, 2], "booleans or 0/1"),
        ([[0.1, 0.2]], [[True, False]], "1-dimensional"),
    ],
)
def test_bad_inputs_give_clear_errors(scores: list, member: list, match: str) -> None:
    for fn in (auc, roc_curve):
        with pytest.raises(InvalidInputError, match=match):
            fn(scores, member)
    with pytest.raises(InvalidInputError, match=match):
        achieved_rates(scores, member, 0.0)


def test_bad_rates_rejected() -> None:
    roc = roc_curve([0.0, 1.0], [False, True])
    for bad in (0.0, 1.0, -0.1, float("nan")):
        with pytest.raises(InvalidInputError, match="fpr"):
            tpr_at_fpr(roc, bad)
    with pytest.raises(InvalidInputError, match="tpr"):
        fpr_at_tpr(roc, 1.5)
    with pytest.raises(InvalidInputError, match="threshold"):
        achieved_rates([0.0, 1.0], [False, True], float("nan"))


def test_inputs_not_mutated() -> None:
    s = np.array([0.3, 0.1, 0.2, 0.2])
    m = np.array([True, False, True, False])
    s0, m0 = s.copy(), m.copy()
    roc_curve(s, m)
    auc(s, m)
    achieved_rates(s, m, 0.2)
    np.testing.assert_array_equal(s, s0)
    np.testing.assert_array_equal(m, m0)


# ---------------------------------------------------------------- achieved FPR / Clopper-Pearson


def test_clopper_pearson_matches_binomial_tails() -> None:
    for k, n in [(0, 10), (3, 10), (10, 10), (7, 1000), (500, 1000)]:
        lo, hi = clopper_pearson(k, n, 0.95)
        # definition: P(X >= k | lo) = 0.025 and P(X <= k | hi) = 0.025
        if k > 0:
            assert stats.binom.sf(k - 1, n, lo) == pytest.approx(0.025, rel=1e-6)
        else:
            assert lo == 0.0
        if k < n:
            assert stats.binom.cdf(k, n, hi) == pytest.approx(0.025, rel=1e-6)
        else:
            assert hi == 1.0
    with pytest.raises(InvalidInputError):
        clopper_pearson(5, 3)


def test_clopper_pearson_coverage_by_simulation() -> None:
    rng = np.random.default_rng(3)
    n, p = 400, 0.05
    ks = rng.binomial(n, p, size=2000)
    covered = np.mean([lo <= p <= hi for lo, hi in (clopper_pearson(int(k), n) for k in ks)])
    assert covered >= 0.94  # exact interval: coverage >= 95% up to simulation noise


def test_achieved_rates_counts() -> None:
    s = np.array([5.0, 4.0, 3.0, 2.0, 1.0, 0.0])
    m = np.array([True, False, True, False, True, False])
    r = achieved_rates(s, m, 3.0)
    assert (r.n_true_positives, r.n_false_positives) == (2, 1)
    assert r.tpr == pytest.approx(2 / 3) and r.fpr == pytest.approx(1 / 3)
    assert r.fpr_ci == clopper_pearson(1, 3)
    assert achieved_fpr(s, m, np.inf) == 0.0
    assert achieved_fpr(s, m, -np.inf) == 1.0


def test_alpha_threshold_on_null_scores_is_within_error() -> None:
    # threshold = (1-alpha) quantile of fresh out-world draws: achieved FPR ~ alpha
    rng = np.random.default_rng(4)
    alpha = 0.05
    out_world = rng.normal(size=100_000)
    thr = float(np.quantile(out_world, 1 - alpha))
    m = rng.random(4000) < 0.5
    s = rng.normal(size=m.size) + 2.0 * m
    r = achieved_rates(s, m, thr)
    assert r.alpha_within_error(alpha)
    assert not achieved_rates(s, m, thr - 1.0).alpha_within_error(alpha)


# ---------------------------------------------------------------- attack_metrics


def _scores(
    n: int = 2000, seed: int = 5, alpha: float | None = 0.05
) -> tuple[AttackScores, np.ndarray]:
    rng = np.random.default_rng(seed)
    m = rng.random(n) < 0.5
    s = np.empty(n)
    s[m] = rng.normal(size=int(m.sum())) + 1.5
    # non-members at evenly spaced N(0, 1) quantiles: the achieved FPR is alpha up to rounding
    n_neg = int((~m).sum())
    s[~m] = rng.permutation(stats.norm.ppf((np.arange(n_neg) + 0.5) / n_neg))
    thr = float(stats.norm.isf(alpha)) if alpha is not None else None
    sc = AttackScores("reference", np.arange(n), s, {"n_reference_models": 8}, alpha, thr)
    return sc, m


def test_attack_metrics_fields() -> None:
    sc, m = _scores()
    am = attack_metrics(sc, m)
    roc = roc_curve(sc.scores, m)
    assert am.name == "reference" and am.auc == pytest.approx(roc.auc)
    assert am.tpr_at_fpr == {"0.001": tpr_at_fpr(roc, 0.001), "0.01": tpr_at_fpr(roc, 0.01)}
    assert am.fpr_at_tpr == {"0.5": fpr_at_tpr(roc, 0.5), "0.9": fpr_at_tpr(roc, 0.9)}
    assert am.n_positives + am.n_negatives == 2000
    assert am.alpha == 0.05 and am.achieved_fpr is not None
    assert (
        am.achieved_fpr_ci is not None
        and am.achieved_fpr_ci[0] <= am.achieved_fpr <= am.achieved_fpr_ci[1]
    )
    assert am.alpha_within_error is True
    assert am.params == {"n_reference_models": 8}
    d = am.to_dict()
    assert "roc" not in d and d["achieved_fpr_ci"] == list(am.achieved_fpr_ci)


def test_attack_metrics_without_threshold() -> None:
    sc, m = _scores(alpha=None)
    am = attack_metrics(sc, m)
    assert am.alpha is None and am.achieved_fpr is None and am.alpha_within_error is None


def test_figures_on_too_few_records_are_flagged() -> None:
    # Attack L scores a handful of sampled members: its figures must carry a warning.
    sc, m = _scores()
    assert not any("rest on" in w for w in attack_metrics(sc, m).warnings)
    keep = np.flatnonzero(~m)
    keep = np.concatenate([np.flatnonzero(m)[:5], keep])
    few = AttackScores("leave-one-out", sc.record_ids[keep], sc.scores[keep], {}, None, None)
    w = attack_metrics(few, m[keep]).warnings
    assert any("rest on 5 members" in x and "not a result" in x for x in w)


def test_attack_metrics_aligns_membership_matrix_by_id() -> None:
    sc, m = _scores(n=300)
    perm = np.random.default_rng(0).permutation(300)
    mm = MembershipMatrix(np.arange(300)[perm], ("target",), m[perm][None, :])
    assert attack_metrics(sc, mm).auc == attack_metrics(sc, m).auc
    np.testing.assert_array_equal(membership_for(sc.record_ids, mm), m)
    with pytest.raises(InvalidInputError, match="missing ids"):
        membership_for(np.arange(301), mm)
    with pytest.raises(InvalidInputError, match="same length"):
        attack_metrics(sc, m[:-1])


# ---------------------------------------------------------------- agreement (Ye et al. Table 2)


def test_agreement_matches_direct_count() -> None:
    rng = np.random.default_rng(6)
    m = rng.random(300) < 0.5
    dec = {k: rng.random(300) < p for k, p in [("S", 0.2), ("P", 0.3), ("R", 0.5)]}
    am = agreement_matrix(dec, m)
    names = [*dec, "GT"]
    assert am.names == tuple(names)
    full = {**dec, "GT": m}
    for i, a in enumerate(names):
        for j, b in enumerate(names):
            assert am.train[i, j] == pytest.approx(np.mean(full[a][m] == full[b][m]))
            assert am.test[i, j] == pytest.approx(np.mean(full[a][~m] == full[b][~m]))
    # GT row: TPR on train, 1 - FPR on test (as in the paper's table)
    assert am.train[0, -1] == pytest.approx(dec["S"][m].mean())
    assert am.test[0, -1] == pytest.approx(1 - dec["S"][~m].mean())
    t = am.table()
    assert np.isnan(np.diag(t)).all()
    assert t[0, 1] == am.train[0, 1] and t[1, 0] == am.test[1, 0]
    assert (am.n_train, am.n_test) == (int(m.sum()), int((~m).sum()))


def test_agreement_errors() -> None:
    m = np.array([True, False, True])
    with pytest.raises(InvalidInputError, match="decisions"):
        agreement_matrix({}, m)
    with pytest.raises(InvalidInputError, match="one decision per record"):
        agreement_matrix({"a": [True, False]}, m)
    with pytest.raises(InvalidInputError, match="non-member"):
        agreement_matrix({"a": [True, False, True]}, [True, True, True])
    with pytest.raises(InvalidInputError, match="GT"):
        agreement_matrix({"GT": [True, False, True]}, m)
