"""Numerical building blocks against slow exact oracles (audit-math.md section 0)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import integrate, stats

from privaudit.errors import InvalidInputError
from privaudit.stats import (
    binom_log_sf,
    clopper_pearson_lower,
    clopper_pearson_upper,
    eps_to_gdp_mu,
    gdp_delta,
    gdp_epsilon,
    log_q,
)


def exact_sf(v: int, r: int, q: Fraction) -> Fraction:
    return sum(
        (Fraction(math.comb(r, k)) * q**k * (1 - q) ** (r - k) for k in range(v, r + 1)),
        Fraction(0),
    )


@pytest.mark.parametrize(
    ("v", "r", "q"),
    [
        (1, 1, Fraction(1, 2)),
        (7, 10, Fraction(3, 4)),
        (30, 60, Fraction(1, 3)),
        (55, 60, Fraction(2, 3)),
        (60, 60, Fraction(9, 10)),
        (0, 5, Fraction(1, 7)),
        (120, 150, Fraction(1, 2)),
    ],
)
def test_binom_log_sf_matches_exact_rational(v: int, r: int, q: Fraction) -> None:
    got = binom_log_sf(v, r, math.log(q), math.log(1 - q))
    want = exact_sf(v, r, q)
    assert got == pytest.approx(math.log(want) if want > 0 else -math.inf, abs=1e-12, rel=1e-12)


def test_binom_log_sf_far_tail_does_not_underflow() -> None:
    # P[Bin(2000, 1/2) >= 2000] = 2^-2000 underflows in linear space.
    lq, l1q = log_q(0.0)
    assert binom_log_sf(2000, 2000, lq, l1q) == pytest.approx(-2000 * math.log(2), rel=1e-13)
    assert stats.binom.sf(1999, 2000, 0.5) == 0.0  # what the linear-space tail would give
    assert binom_log_sf(2001, 2000, lq, l1q) == -math.inf


def test_log_q_is_accurate_beyond_float_saturation() -> None:
    lq, l1q = log_q(50.0)
    assert lq == pytest.approx(-math.exp(-50.0), rel=1e-12)
    assert l1q == pytest.approx(-50.0, rel=1e-12)


def test_clopper_pearson_textbook_values() -> None:
    # Two-sided 95% exact interval for 5/20 (e.g. Agresti & Coull 1998; R binom.test):
    # (0.0865715, 0.4910459).
    assert clopper_pearson_lower(5, 20, 0.025) == pytest.approx(0.08657147, abs=1e-7)
    assert clopper_pearson_upper(5, 20, 0.025) == pytest.approx(0.49104587, abs=1e-7)
    # Rule of three: upper(0, n, 0.05) = 1 - 0.05^(1/n) ~ 3/n.
    for n in (1, 10, 100, 10_000):
        assert clopper_pearson_upper(0, n, 0.05) == pytest.approx(1 - 0.05 ** (1 / n), rel=1e-10)
        assert clopper_pearson_lower(n, n, 0.05) == pytest.approx(0.05 ** (1 / n), rel=1e-10)
    assert clopper_pearson_lower(0, 10, 0.05) == 0.0
    assert clopper_pearson_upper(10, 10, 0.05) == 1.0


@pytest.mark.parametrize(("k", "n"), [(1, 3), (3, 20), (17, 40), (99, 100), (500, 1000)])
def test_clopper_pearson_defining_property_and_direction(k: int, n: int) -> None:
    a = 0.01
    lo = clopper_pearson_lower(k, n, a)
    up = clopper_pearson_upper(k, n, a)
    # tail at the bound equals a; the nudge makes the bounds conservative.
    assert stats.binom.sf(k - 1, n, lo) == pytest.approx(a, rel=1e-8)
    assert stats.binom.cdf(k, n, up) == pytest.approx(a, rel=1e-8)
    assert lo <= stats.beta.ppf(a, k, n - k + 1)
    assert up >= stats.beta.ppf(1 - a, k + 1, n - k)


def test_clopper_pearson_vectorised_and_validated() -> None:
    ks = np.array([0, 3, 10])
    out = clopper_pearson_lower(ks, 10, 0.05)
    assert isinstance(out, np.ndarray) and out.shape == (3,)
    with pytest.raises(InvalidInputError, match="k, n"):
        clopper_pearson_lower(11, 10, 0.05)


def hockey_stick_delta(eps: float, mu: float) -> float:
    """delta(eps) of N(mu, 1) vs N(0, 1) by numerical integration (slow oracle)."""

    def integrand(x: float) -> float:
        return max(0.0, stats.norm.pdf(x, mu) - math.exp(eps) * stats.norm.pdf(x))

    val, _ = integrate.quad(integrand, -20, 20 + mu, points=[eps / mu + mu / 2], limit=200)
    return val


@pytest.mark.parametrize(
    ("eps", "mu"), [(0.0, 1.0), (0.5, 1.0), (2.0, 1.5), (5.0, 2.0), (1.0, 0.3)]
)
def test_gdp_delta_matches_hockey_stick_integral(eps: float, mu: float) -> None:
    assert gdp_delta(eps, mu) == pytest.approx(hockey_stick_delta(eps, mu), abs=1e-9, rel=1e-6)


def test_gdp_epsilon_inverts_delta_and_rounds_down() -> None:
    for mu, delta in [(1.0, 1e-5), (0.5, 1e-3), (3.0, 1e-8)]:
        e = gdp_epsilon(mu, delta)
        assert gdp_delta(e, mu) > delta  # strictly before the root: rounded down
        assert gdp_delta(e + 1e-9, mu) == pytest.approx(delta, rel=1e-6)
    assert gdp_epsilon(0.1, 0.5) == 0.0  # delta(0) = 2 Phi(mu/2) - 1 < delta
    assert gdp_epsilon(1.0, 0.0) == math.inf


@pytest.mark.parametrize("eps", [0.1, 1.0, 3.0, 8.0])
def test_eps_to_gdp_mu_is_smallest_dominating_gaussian(eps: float) -> None:
    mu = eps_to_gdp_mu(eps)
    alpha = np.linspace(1e-6, 1 - 1e-6, 20001)
    f_eps = np.maximum.reduce(
        [np.zeros_like(alpha), 1 - math.exp(eps) * alpha, math.exp(-eps) * (1 - alpha)]
    )
    g_mu = stats.norm.cdf(stats.norm.ppf(1 - alpha) - mu)
    assert np.all(g_mu <= f_eps + 1e-12)  # eps-DP implies mu-GDP
    a_star = 1 / (1 + math.exp(eps))
    g_star = stats.norm.cdf(stats.norm.ppf(1 - a_star) - mu)
    assert g_star == pytest.approx(math.exp(-eps) * (1 - a_star), rel=1e-8)  # touches the kink
