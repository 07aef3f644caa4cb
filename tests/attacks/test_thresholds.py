"""Smoothing of out-world distributions (Ye et al. App. B.3) and the predictive t."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from privaudit.attacks.thresholds import (
    PAPER_SMOOTHING_METHODS,
    SMOOTHING_METHODS,
    fit_out_world,
    inverse_logit_rescale,
    logit_rescale,
    smoothed_cdf,
    smoothed_threshold,
)
from privaudit.errors import InsufficientDataError, InvalidInputError


def _gauss_losses(rng: np.random.Generator, mu: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Losses whose logit rescaling is N(mu, 1): l = phi^{-1}(mu + e)."""
    return inverse_logit_rescale(mu + rng.normal(size=shape))


def test_logit_rescale_is_log_odds_of_exp_minus_loss() -> None:
    p = np.array([1e-12, 0.1, 0.5, 0.9, 1 - 1e-12])
    loss = -np.log(p)
    np.testing.assert_allclose(logit_rescale(loss), np.log(p / (1 - p)), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(inverse_logit_rescale(logit_rescale(loss)), loss, rtol=1e-9)
    assert np.isfinite(logit_rescale(np.array([0.0, 1e-320, 800.0]))).all()


def test_linear_threshold_is_paper_formula_and_numpy_linear_quantile() -> None:
    rng = np.random.default_rng(0)
    out = rng.exponential(size=37)
    srt = np.sort(out)
    big_n = out.size - 1
    for alpha in (0.001, 0.01, 0.1, 0.37, 0.5, 0.99):
        j = int(np.floor(alpha * big_n))
        paper = srt[j] * (j + 1 - alpha * big_n) + (alpha * big_n - j) * srt[j + 1]
        got = smoothed_threshold(out, alpha, method="linear")[0]
        assert got == pytest.approx(paper, rel=1e-12)
        assert got == pytest.approx(np.quantile(out, alpha, method="linear"), rel=1e-12)


def test_linear_cdf_inverts_linear_threshold_and_handles_ties() -> None:
    out = np.array([1.0, 2.0, 2.0, 2.0, 3.0, 5.0])  # ties at 2
    w = fit_out_world(out)
    alphas = np.linspace(0.01, 0.99, 99)
    for a in alphas:
        c = w.threshold(a, "linear")[0]
        # decision equivalence: x <= c  <=>  F(x) <= a, for x on a fine grid
        xs = np.linspace(0.0, 6.0, 601)
        f = w.cdf(xs, "linear")
        agree = (xs <= c) == (f <= a)
        assert np.all(agree | (np.abs(f - a) < 1e-12)), a  # only round-off at the boundary
    assert w.cdf(np.array([0.5]), "linear")[0] == 0.0
    assert w.cdf(np.array([5.5]), "linear")[0] == 1.0
    # at the tie value F is the smallest beta with p(beta) >= 2: (1 + 0) / 5
    assert w.cdf(np.array([2.0]), "linear")[0] == pytest.approx(0.2)


def test_gaussian_fit_exact_on_gaussian_data() -> None:
    # A sample whose rescaled values have mean exactly mu and sd exactly sigma.
    z = np.random.default_rng(1).normal(size=50)
    z = (z - z.mean()) / z.std(ddof=1)
    mu, sigma = 1.5, 0.7
    losses = inverse_logit_rescale(mu + sigma * z)
    for alpha in (1e-6, 0.01, 0.2):
        c = smoothed_threshold(losses, alpha, method="logit-gaussian")[0]
        assert logit_rescale(c) == pytest.approx(mu + sigma * stats.norm.ppf(1 - alpha), rel=1e-9)
    x = np.array([0.05, 0.3, 1.0])
    np.testing.assert_allclose(
        smoothed_cdf(losses, x, method="logit-gaussian"),
        stats.norm.sf(logit_rescale(x), loc=mu, scale=sigma),
        rtol=1e-9,
    )
    # without rescaling: plain Gaussian lower tail
    vals = 3.0 + 2.0 * z
    assert smoothed_threshold(vals, 0.05, method="logit-gaussian", rescale="none")[
        0
    ] == pytest.approx(3.0 + 2.0 * stats.norm.ppf(0.05))
    # predictive t: scale sigma * sqrt(1 + 1/m), m - 1 degrees of freedom
    m = z.size
    c = smoothed_threshold(vals, 0.05, method="student-t", rescale="none")[0]
    assert c == pytest.approx(3.0 + 2.0 * np.sqrt(1 + 1 / m) * stats.t.ppf(0.05, m - 1))


def test_min_and_average_are_defined_from_the_two_smoothings() -> None:
    rng = np.random.default_rng(2)
    out = _gauss_losses(rng, np.zeros(1), (25,)).ravel()
    w = fit_out_world(out)
    xs = np.sort(rng.uniform(0.0, 3.0, size=200))
    f_lin, f_g = w.cdf(xs, "linear"), w.cdf(xs, "logit-gaussian")
    np.testing.assert_allclose(w.cdf(xs, "min"), np.maximum(f_lin, f_g))
    np.testing.assert_allclose(w.cdf(xs, "average"), 0.5 * (f_lin + f_g))
    for a in (0.001, 0.05, 0.3, 0.8):
        c_min = w.threshold(a, "min")[0]
        assert c_min == min(w.threshold(a, "linear")[0], w.threshold(a, "logit-gaussian")[0])
        c_avg = w.threshold(a, "average")[0]
        f_at = w.cdf(np.array([c_avg]), "average")[0]
        f_after = w.cdf(np.array([c_avg * (1 + 1e-9) + 1e-12]), "average")[0]
        assert f_at <= a + 1e-12 and f_after > a - 1e-9
        assert abs(f_at - a) < 1e-7  # F is continuous away from ties


@pytest.mark.parametrize("method", SMOOTHING_METHODS)
def test_monotone_in_x_and_alpha(method: str) -> None:
    rng = np.random.default_rng(3)
    k, n = 9, 40
    out = _gauss_losses(rng, rng.normal(0, 2, size=n), (k, n))
    w = fit_out_world(out)
    xs = np.linspace(1e-6, 8.0, 300)
    for i in range(0, n, 7):
        # query column i at every x: build per-record queries with column i only
        w1 = fit_out_world(out[:, i])
        f = w1.cdf(xs, method)
        assert np.all(np.diff(f) >= -1e-15) and f.min() >= 0 and f.max() <= 1
    alphas = [0.001, 0.01, 0.05, 0.2, 0.5]
    thr = np.array([w.threshold(a, method) for a in alphas])
    assert np.all(np.diff(thr, axis=0) >= -1e-12)


@pytest.mark.parametrize("method", SMOOTHING_METHODS)
def test_decision_equivalence_threshold_vs_cdf(method: str) -> None:
    rng = np.random.default_rng(4)
    k, n = 12, 500
    mu = rng.normal(0, 2, size=n)
    w = fit_out_world(_gauss_losses(rng, mu, (k, n)))
    x = _gauss_losses(rng, mu, (n,))
    for a in (0.01, 0.1):
        c = w.threshold(a, method)
        f = w.cdf(x, method)
        agree = (x <= c) == (f <= a)
        near = np.abs(f - a) < 1e-9
        assert np.all(agree | near)


def test_masked_per_record_equals_separate_fits() -> None:
    rng = np.random.default_rng(5)
    k, n = 10, 30
    out = rng.exponential(size=(k, n))
    mask = rng.uniform(size=(k, n)) < 0.6
    mask[:2] = True  # at least 2 valid per column
    x = rng.exponential(size=n)
    w = fit_out_world(out, mask=mask)
    for method in SMOOTHING_METHODS:
        got = w.cdf(x, method)
        thr = w.threshold(0.07, method)
        for i in range(n):
            wi = fit_out_world(out[mask[:, i], i])
            assert got[i] == pytest.approx(wi.cdf(x[i : i + 1], method)[0], abs=1e-12)
            assert thr[i] == pytest.approx(wi.threshold(0.07, method)[0], rel=1e-9, abs=1e-12)


def test_shared_sample_equals_repeated_columns() -> None:
    rng = np.random.default_rng(6)
    out = rng.exponential(size=15)
    x = rng.exponential(size=8)
    rep = np.repeat(out[:, None], 8, axis=1)
    for method in SMOOTHING_METHODS:
        np.testing.assert_allclose(
            smoothed_cdf(out, x, method=method), smoothed_cdf(rep, x, method=method)
        )


@pytest.mark.parametrize("method", PAPER_SMOOTHING_METHODS)
def test_achieved_fpr_near_alpha_with_large_out_world(method: str) -> None:
    """Shared out world of 2000 values; fresh non-members flagged at rate ~ alpha."""
    rng = np.random.default_rng(7)
    out = _gauss_losses(rng, np.zeros(1), (2000,)).ravel()
    fresh = _gauss_losses(rng, np.zeros(1), (40000,)).ravel()
    w = fit_out_world(out)
    for alpha in (0.01, 0.05, 0.2):
        fpr = float(np.mean(w.cdf(fresh, method) <= alpha))
        # binomial error of 40000 draws + the out-sample's own quantile error
        tol = 4 * np.sqrt(alpha * (1 - alpha) / 40000) + 3 * np.sqrt(alpha * (1 - alpha) / 2000)
        assert abs(fpr - alpha) < tol, (method, alpha, fpr)


def test_student_t_is_calibrated_with_few_models_and_paper_plugin_is_not() -> None:
    """Per-record out worlds of 4 OUT models: predictive t at alpha; plug-in Gaussian above."""
    rng = np.random.default_rng(8)
    n, m = 40000, 4
    mu = rng.normal(0, 2, size=n)
    w = fit_out_world(_gauss_losses(rng, mu, (m, n)))
    fresh = _gauss_losses(rng, mu, (n,))
    for alpha in (0.01, 0.1):
        tol = 4 * np.sqrt(alpha * (1 - alpha) / n)
        assert abs(np.mean(w.cdf(fresh, "student-t") <= alpha) - alpha) < tol
    # documented anti-conservativeness of the plug-in Gaussian at m = 4 (about 6.5%)
    assert np.mean(w.cdf(fresh, "logit-gaussian") <= 0.01) > 0.04


@settings(max_examples=40, deadline=None)
@given(
    # losses above the logit floor (losses of exactly 0 are clipped to the smallest double)
    st.lists(st.floats(1e-3, 50.0, allow_nan=False), min_size=2, max_size=30),
    st.floats(1e-4, 0.999),
)
def test_property_threshold_inside_cdf_sublevel_set(values: list[float], alpha: float) -> None:
    out = np.array(values)
    w = fit_out_world(out)
    for method in SMOOTHING_METHODS:
        c = w.threshold(alpha, method)
        assert np.isfinite(c).all()
        # round-off of the l -> phi -> l round trip is amplified by 1/sigma (sigma floor
        # 1e-8); a threshold below the smallest double (phi > 708, e.g. a t with 1 degree
        # of freedom) only misjudges losses that are themselves below 1e-300.
        assert w.cdf(c, method)[0] <= alpha + 1e-6 or c[0] < 1e-300


def test_bad_out_world_inputs() -> None:
    with pytest.raises(InvalidInputError, match="NaN"):
        fit_out_world(np.array([1.0, np.nan, 2.0]))
    with pytest.raises(InvalidInputError, match="finite"):
        fit_out_world(np.array([1.0, np.inf]))
    with pytest.raises(InsufficientDataError, match="at least 2"):
        fit_out_world(np.array([1.0]))
    with pytest.raises(InsufficientDataError, match="at least 2"):
        fit_out_world(np.ones((3, 2)), mask=np.array([[1, 1], [0, 1], [0, 0]], bool))
    with pytest.raises(InvalidInputError, match="non-negative"):
        fit_out_world(np.array([-1.0, 2.0]))
    with pytest.raises(InvalidInputError, match="non-empty"):
        fit_out_world(np.array([]))
    with pytest.raises(InvalidInputError, match="shape"):
        fit_out_world(np.ones((3, 2)), mask=np.ones((2, 2), bool))
    with pytest.raises(InvalidInputError, match="smoothing"):
        smoothed_cdf(np.ones(3), np.ones(1), method="kde")
    with pytest.raises(InvalidInputError, match="alpha"):
        smoothed_threshold(np.arange(3.0), 0.0)
    w = fit_out_world(np.ones((3, 4)))
    assert w.n_sigma_floored == 4
    with pytest.raises(InvalidInputError, match="one value per"):
        w.cdf(np.ones(3), "linear")


def test_linear_score_breaks_the_ties_at_the_extremes() -> None:
    """Issue 10 item 2: with few OUT values many records fall beyond the whole sample; the
    linear CDF gives them all 0 (or 1), the score keeps their order."""
    from privaudit.attacks.thresholds import fit_out_world

    rng = np.random.default_rng(0)
    out = rng.normal(size=(4, 300))  # 4 OUT values per record
    x = rng.normal(0.0, 3.0, size=300)  # often beyond all four
    world = fit_out_world(out, rescale="none")
    f = world.cdf(x, "linear")
    s = world.score(x, "linear")
    inside = (f > 0) & (f < 1)
    np.testing.assert_array_equal(s[inside], -f[inside])
    assert (f == 0).sum() > 50 and (f == 1).sum() > 50
    assert np.unique(s).size == s.size  # no ties at all
    lo, hi = out.min(axis=0), out.max(axis=0)
    assert np.all(s[x < lo] > 0) and np.all(s[x > hi] < -1)
    # within a record, the score is decreasing in x everywhere
    grid = np.linspace(-8, 8, 401)
    col = fit_out_world(out[:, :1], rescale="none")
    sc = np.array([col.score(np.array([g]), "linear")[0] for g in grid])
    assert np.all(np.diff(sc) <= 0) and sc[0] > 0 and sc[-1] < -1
    # the alpha decision is the one of the CDF
    for alpha in (0.01, 0.1, 0.5):
        np.testing.assert_array_equal(s >= -alpha, f <= alpha)
