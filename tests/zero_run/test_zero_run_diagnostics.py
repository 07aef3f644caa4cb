"""Propensity calibration and overlap diagnostics (Zero-Run paper App. F.2, Sec. 8, K.1)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import expit, logit
from sklearn.metrics import brier_score_loss, log_loss, roc_auc_score

from privaudit.errors import InvalidInputError
from privaudit.zero_run.diagnostics import (
    QUANTILE_LEVELS,
    calibration_intercept,
    calibration_slope,
    expected_calibration_error,
    kish_ess,
    overlap_is_poor,
    propensity_diagnostics,
    roc_auc,
)
from privaudit.zero_run.propensity import cross_fit_propensity


def calibrated(n: int, seed: int, scale: float = 1.5) -> tuple[np.ndarray, np.ndarray]:
    """Scores and labels drawn from the scores themselves: perfectly calibrated."""
    rng = np.random.default_rng(seed)
    pi = expit(scale * rng.standard_normal(n))
    return pi, rng.random(n) < pi


def separated(n: int, seed: int, d: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Two unit Gaussians at +-d/2: true propensity expit(d x), AUC = Phi(d / sqrt 2)."""
    rng = np.random.default_rng(seed)
    s = rng.random(n) < 0.5
    x = rng.standard_normal(n) + np.where(s, d / 2, -d / 2)
    return x, s, expit(d * x)


# ---------------------------------------------------------------- oracles


def test_auc_matches_sklearn_with_ties() -> None:
    rng = np.random.default_rng(0)
    for _ in range(5):
        p = np.round(rng.random(300), 1)  # many ties
        s = rng.random(300) < p
        assert roc_auc(p, s) == pytest.approx(roc_auc_score(s, p), abs=1e-12)


def test_ece_against_a_python_loop() -> None:
    rng = np.random.default_rng(1)
    p = rng.random(500) ** 2
    p[:3] = [0.0, 1.0, 0.5]  # edges: 1.0 belongs to the last bin
    s = rng.random(500) < np.sqrt(p)
    for n_bins in (1, 7, 10):
        ece, table = expected_calibration_error(p, s, n_bins=n_bins)
        expected = 0.0
        for k in range(n_bins):
            lo, hi = k / n_bins, (k + 1) / n_bins
            idx = [i for i in range(p.size) if lo <= p[i] < hi or (k == n_bins - 1 and p[i] == 1)]
            if idx:
                gap = abs(sum(s[i] for i in idx) / len(idx) - sum(p[i] for i in idx) / len(idx))
                expected += len(idx) / p.size * gap
            assert table[k]["count"] == len(idx)
        assert ece == pytest.approx(expected, abs=1e-12)
        assert sum(row["count"] for row in table) == p.size


def test_kish_ess_by_hand() -> None:
    assert kish_ess([1.0, 1.0, 1.0, 1.0]) == pytest.approx(4.0)
    assert kish_ess([1.0, 0.0, 0.0]) == pytest.approx(1.0)
    assert kish_ess([3.0, 1.0]) == pytest.approx(16.0 / 10.0)
    assert kish_ess([2.0, 2.0, 1e-300]) == pytest.approx(2.0)
    assert kish_ess([np.inf, 5.0, np.inf]) == 2.0  # equal-rate limit of the infinite weights
    assert kish_ess([0.0, 0.0]) == 0.0
    assert kish_ess([1e200, 1e200]) == pytest.approx(2.0)  # no overflow
    with pytest.raises(InvalidInputError, match="non-negative"):
        kish_ess([1.0, -1.0])


def test_ess_of_odds_weights_by_hand() -> None:
    pi = np.array([0.5, 0.2, 0.9, 0.6, 0.3, 0.1])
    s = np.array([True, True, True, False, False, False])
    d = propensity_diagnostics(pi, s)
    wm = np.array([1.0, 4.0, 1.0 / 9.0])  # (1 - pi) / pi
    w0 = np.array([1.5, 3.0 / 7.0, 1.0 / 9.0])  # pi / (1 - pi)
    for key, w in (("member", wm), ("non_member", w0)):
        ess = w.sum() ** 2 / (w**2).sum()
        assert d["ess"][key]["ess"] == pytest.approx(ess)
        assert d["ess"][key]["n"] == 3
        assert d["ess"][key]["fraction"] == pytest.approx(ess / 3)
    b = np.minimum(pi, 1 - pi) / np.maximum(pi, 1 - pi)
    assert d["retention_mean"] == pytest.approx(b.mean())
    assert d["retention_sum"] == pytest.approx(b.sum())
    assert d["retention_sum"] == pytest.approx(np.exp(-np.abs(logit(pi))).sum())


def test_scalar_metrics_match_sklearn() -> None:
    pi, s = calibrated(2000, 2)
    d = propensity_diagnostics(pi, s)
    assert d["log_loss"] == pytest.approx(log_loss(s, pi), rel=1e-10)
    assert d["brier"] == pytest.approx(brier_score_loss(s, pi), rel=1e-10)
    assert d["auc"] == pytest.approx(roc_auc_score(s, pi), abs=1e-12)
    # a member scored exactly 0 costs -log(1e-15) in the log loss, not infinity
    pi2, s2 = pi.copy(), s.copy()
    s2[0], pi2[0] = True, 0.0
    d2 = propensity_diagnostics(pi2, s2)
    terms = -np.where(s2, np.log(np.clip(pi2, 1e-15, 1)), np.log1p(-pi2))
    assert d2["log_loss"] == pytest.approx(terms.mean(), rel=1e-10)
    assert np.isfinite(d2["log_loss"])


def neg_loglik(beta: np.ndarray, z: np.ndarray, y: np.ndarray, offset: bool) -> float:
    eta = beta[0] + z if offset else beta[0] + beta[1] * z
    return float(np.sum(np.logaddexp(0, eta) - y * eta))


def test_calibration_fits_agree_with_generic_optimiser() -> None:
    rng = np.random.default_rng(3)
    pi = expit(rng.normal(0.3, 2.0, 800))
    s = rng.random(800) < expit(0.4 + 0.7 * logit(pi))
    z, y = logit(pi), s.astype(float)
    a = calibration_intercept(pi, s)
    a_ref = minimize(neg_loglik, [0.0], args=(z, y, True), method="BFGS", tol=1e-10).x[0]
    assert a == pytest.approx(a_ref, abs=1e-5)
    b, a2 = calibration_slope(pi, s)
    ref = minimize(neg_loglik, [0.0, 1.0], args=(z, y, False), method="BFGS", tol=1e-10).x
    assert b == pytest.approx(ref[1], abs=1e-5)
    assert a2 == pytest.approx(ref[0], abs=1e-5)


def test_calibrated_scores_have_slope_one_intercept_zero() -> None:
    pi, s = calibrated(20_000, 4)
    b, a = calibration_slope(pi, s)
    assert b == pytest.approx(1.0, abs=0.08)
    assert a == pytest.approx(0.0, abs=0.06)
    assert calibration_intercept(pi, s) == pytest.approx(0.0, abs=0.06)
    ece, _ = expected_calibration_error(pi, s)
    assert ece < 0.03


def test_miscalibrated_scores_are_detected() -> None:
    rng = np.random.default_rng(5)
    z = 1.2 * rng.standard_normal(20_000)
    s = rng.random(z.size) < expit(z)
    over, _ = calibration_slope(expit(2.0 * z), s)  # over-confident: too extreme
    under, _ = calibration_slope(expit(0.5 * z), s)
    assert over == pytest.approx(0.5, abs=0.05)
    assert under == pytest.approx(2.0, abs=0.2)
    # scores that under-predict membership by 0.7 on the logit scale
    assert calibration_intercept(expit(z - 0.7), s) == pytest.approx(0.7, abs=0.07)
    d = propensity_diagnostics(expit(3.0 * z), s)
    assert d["calibration_slope"] < 0.4
    assert any("poorly calibrated" in w for w in d["warnings"]) is (d["ece"] > 0.1)


def test_slope_undefined_on_separation_and_constant_scores() -> None:
    s = np.array([False] * 5 + [True] * 5)
    pi = np.linspace(0.1, 0.9, 10)  # members all above non-members
    assert calibration_slope(pi, s) == (None, None)
    assert calibration_slope(np.full(10, 0.5), s) == (None, None)
    # the intercept-only fit always exists with both classes present
    assert calibration_intercept(np.full(10, 0.5), s) == pytest.approx(0.0, abs=1e-9)
    d = propensity_diagnostics(pi, s)
    assert d["calibration_slope"] is None
    assert any("slope undefined" in w for w in d["warnings"])


# ---------------------------------------------------------------- distribution, support


def test_quantiles_histogram_extremes_and_support_by_hand() -> None:
    rng = np.random.default_rng(6)
    pm = rng.beta(5, 2, 300)
    p0 = rng.beta(2, 5, 500)
    pm[0], p0[0] = 0.995, 0.004
    pi = np.concatenate([pm, p0])
    s = np.r_[np.ones(300, bool), np.zeros(500, bool)]
    d = propensity_diagnostics(pi, s, extreme=0.01, n_hist_bins=8)
    assert d["quantiles"]["levels"] == list(QUANTILE_LEVELS)
    np.testing.assert_allclose(d["quantiles"]["member"], np.quantile(pm, QUANTILE_LEVELS))
    np.testing.assert_allclose(d["quantiles"]["non_member"], np.quantile(p0, QUANTILE_LEVELS))
    assert len(d["histogram"]["edges"]) == 9
    assert sum(d["histogram"]["member"]) == 300 and sum(d["histogram"]["non_member"]) == 500
    for label, v in (("member", pm), ("non_member", p0)):
        counts = [int(((v >= k / 8) & (v < (k + 1) / 8)).sum()) for k in range(8)]
        counts[-1] += int((v == 1.0).sum())
        assert d["histogram"][label] == counts
    extreme = (pi < 0.01) | (pi > 0.99)
    assert d["fraction_extreme"] == pytest.approx(extreme.mean())
    assert d["fraction_extreme_member"] == pytest.approx(extreme[:300].mean())
    lo, hi = max(pm.min(), p0.min()), min(pm.max(), p0.max())
    cs = d["common_support"]
    assert (cs["low"], cs["high"]) == (lo, hi)
    inside = (pi >= lo) & (pi <= hi)
    assert cs["fraction_inside"] == pytest.approx(inside.mean())
    assert cs["fraction_inside_non_member"] == pytest.approx(inside[300:].mean())


def test_disjoint_support_and_scores_at_zero_and_one() -> None:
    pi = np.array([0.0, 0.05, 0.1, 0.8, 0.9, 1.0])
    s = np.array([False, False, False, True, True, True])
    d = propensity_diagnostics(pi, s)  # must not emit RuntimeWarnings (they are errors here)
    assert d["common_support"]["fraction_inside"] == 0.0
    assert d["common_support"]["low"] > d["common_support"]["high"]
    assert (d["n_pi_zero"], d["n_pi_one"]) == (1, 1)
    assert d["ess"]["member"]["ess"] == pytest.approx(
        kish_ess([0.25, 1 / 9, 0.0])
    )  # pi = 1 member: weight 0
    assert d["retention_sum"] == pytest.approx(sum(min(p, 1 - p) / max(p, 1 - p) for p in pi))
    assert any("exactly 0" in w for w in d["warnings"])
    assert d["auc"] == 1.0 and d["overlap_poor"]
    # a member scored 0 has infinite odds weight: ESS is the count of such records
    d2 = propensity_diagnostics(np.array([0.0, 0.3, 0.4, 0.6]), np.array([1, 1, 0, 0]))
    assert d2["ess"]["member"]["ess"] == 1.0


# ---------------------------------------------------------------- warnings


def test_poor_overlap_warns_like_the_enron_case() -> None:
    x, s, pi = separated(4000, 7, d=2.9)  # AUC = Phi(2.9 / sqrt 2) ~ 0.98
    d = propensity_diagnostics(pi, s)
    assert d["auc"] == pytest.approx(0.98, abs=0.01)
    assert d["overlap_poor"] and overlap_is_poor(d)
    assert any("ROC AUC" in w and "collapse towards 0" in w for w in d["warnings"])
    assert all(
        "narrow the population or find better-matched non-members" in w
        for w in d["warnings"]
        if "collapse" in w
    )
    # the same holds for cross-fitted estimates (logistic model is correctly specified)
    pi_hat = cross_fit_propensity(x[:, None], s, seed=0)
    d_hat = propensity_diagnostics(pi_hat, s)
    assert d_hat["auc"] > 0.95 and overlap_is_poor(d_hat)


def test_each_overlap_criterion_and_its_threshold() -> None:
    _, s, pi = separated(4000, 8, d=2.9)
    d = propensity_diagnostics(pi, s)
    # ESS fractions fall far below 5 % at this separation, as for Enron (2.0 %)
    assert d["ess"]["member"]["fraction"] < 0.05
    assert any("effective sample size" in w for w in d["warnings"])
    relaxed = propensity_diagnostics(
        pi,
        s,
        auc_warn=1.0,
        ess_fraction_warn=0.0,
        extreme_fraction_warn=1.0,
        retention_warn=0.0,
    )
    assert not relaxed["overlap_poor"] and not overlap_is_poor(relaxed)
    assert relaxed["thresholds"]["auc_warn"] == 1.0
    strict = propensity_diagnostics(pi, s, extreme_fraction_warn=0.0, retention_warn=1.0)
    msgs = " ".join(strict["warnings"])
    assert "below 0.01 or above 0.99" in msgs and "mean tampering retention" in msgs


def test_no_shift_gives_no_warning() -> None:
    rng = np.random.default_rng(9)
    n = 3000
    s = rng.random(n) < 0.5
    x = rng.standard_normal((n, 3))  # independent of membership
    pi_hat = cross_fit_propensity(x, s, seed=0)
    d = propensity_diagnostics(pi_hat, s)
    assert abs(d["auc"] - 0.5) < 0.05
    assert d["warnings"] == [] and not d["overlap_poor"]
    assert d["retention_mean"] > 0.9
    assert d["ess"]["member"]["fraction"] > 0.95
    assert d["common_support"]["fraction_inside"] > 0.95


def test_anti_predictive_scores_are_flagged() -> None:
    _, s, pi = separated(2000, 10, d=2.9)
    d = propensity_diagnostics(1 - pi, s)
    assert any("anti-predictive" in w for w in d["warnings"])


# ---------------------------------------------------------------- output, errors


def test_output_is_plain_json() -> None:
    pi, s = calibrated(500, 11)
    d = propensity_diagnostics(pi, s)
    back = json.loads(json.dumps(d, allow_nan=False))
    assert back == d
    assert d["n"] == 500 and d["n_member"] + d["n_non_member"] == 500


@pytest.mark.parametrize(
    "name",
    ["auc_warn", "ess_fraction_warn", "extreme_fraction_warn", "retention_warn", "ece_warn"],
)
def test_each_threshold_is_checked_and_recorded_under_its_name(name: str) -> None:
    pi, s = calibrated(100, 12)
    d = propensity_diagnostics(pi, s, **{name: 0.375})
    assert d["thresholds"][name] == 0.375
    assert [k for k, v in d["thresholds"].items() if v == 0.375] == [name]
    with pytest.raises(InvalidInputError, match=f"^{name}: "):
        propensity_diagnostics(pi, s, **{name: 1.5})


def test_invalid_inputs() -> None:
    pi, s = calibrated(100, 12)
    with pytest.raises(InvalidInputError, match="outside"):
        propensity_diagnostics(np.r_[pi[:-1], 1.2], s)
    with pytest.raises(InvalidInputError, match="NaN"):
        propensity_diagnostics(np.r_[pi[:-1], np.nan], s)
    with pytest.raises(InvalidInputError, match="member"):
        propensity_diagnostics(pi, np.ones(100, bool))
    with pytest.raises(InvalidInputError, match="same length"):
        propensity_diagnostics(pi[:-1], s)
    with pytest.raises(InvalidInputError, match="extreme"):
        propensity_diagnostics(pi, s, extreme=0.6)
    with pytest.raises(InvalidInputError, match="n_bins"):
        propensity_diagnostics(pi, s, n_bins=0)
    with pytest.raises(InvalidInputError, match="n_hist_bins"):
        propensity_diagnostics(pi, s, n_hist_bins=0)
    with pytest.raises(InvalidInputError, match="auc_warn"):
        propensity_diagnostics(pi, s, auc_warn=1.5)
    with pytest.raises(InvalidInputError, match="diag"):
        overlap_is_poor({"auc": 0.5})
