"""f-DP / mu-GDP one-run audit (Mahloujifar, Melis, Chaudhuri 2024; audit-math.md section 3)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from privaudit.errors import InvalidInputError
from privaudit.stats import (
    eps_delta_fbar_inverse,
    eps_lb_one_run,
    fdp_eps_lb_one_run,
    fdp_one_run_audit,
    fdp_p_value,
    fdp_rejects,
    gdp_fbar_inverse,
    gdp_mu_lb_one_run,
    make_guesses,
    mu_to_epsilon,
)


@pytest.mark.parametrize(
    ("m", "r", "v", "want"),
    [
        (1000, 100, 100, 1.2255335),
        (1000, 500, 400, 0.5187534),
        (10000, 1000, 900, 0.6771926),
        (1000, 1000, 600, 0.1638498),
    ],
)
def test_example_values_from_the_notes(m: int, r: int, v: int, want: float) -> None:
    got = gdp_mu_lb_one_run(m, r, v, 0.05)
    assert got == pytest.approx(want, abs=2e-7)
    # rounded down: the returned mu is rejected, slightly more is not
    assert fdp_rejects(m, r, v, gdp_fbar_inverse(got), 0.05)
    assert not fdp_rejects(m, r, v, gdp_fbar_inverse(got + 1e-6), 0.05)


def slow_total_mass(m: int, r: int, v: int, mu: float, tau: float) -> float:
    """The recursion without any early exit, with scipy's normal (oracle for the shortcuts)."""
    rr, hh = tau * v / m, tau * (r - v) / m
    for i in range(v - 1, -1, -1):
        h_new = max(hh, float(stats.norm.cdf(stats.norm.ppf(rr) - mu)))
        rr += i / (r - i) * (h_new - hh)
        hh = h_new
    return rr + hh


@pytest.mark.parametrize(("m", "r", "v"), [(1000, 100, 100), (1000, 300, 220), (200, 200, 150)])
def test_early_exits_do_not_change_decisions(m: int, r: int, v: int) -> None:
    for mu in np.linspace(0.0, 3.0, 31):
        want = slow_total_mass(m, r, v, float(mu), 0.05) > r / m
        assert fdp_rejects(m, r, v, gdp_fbar_inverse(float(mu)), 0.05) == want


def test_pure_eps_curve_never_below_binomial() -> None:
    # Randomized response attains the binomial tail, so plugging f_{eps,0} into the f-DP
    # recursion cannot give a larger eps bound than Steinke's binomial test; equal when v = r.
    for m, r, v in [(1000, 100, 100), (1000, 100, 80), (1000, 400, 300), (5000, 50, 45)]:
        f = fdp_eps_lb_one_run(m, r, v, 0.0, 0.05)
        b = eps_lb_one_run(m, r, v, 0.0, 0.05)
        assert f <= b + 1e-8
        if v == r:
            assert f == pytest.approx(b, abs=1e-6)


def test_p_value_is_consistent_with_mu_lb() -> None:
    m, r, v = 1000, 200, 170
    mu_lb = gdp_mu_lb_one_run(m, r, v, 0.05)
    assert fdp_p_value(m, r, v, gdp_fbar_inverse(mu_lb)) == pytest.approx(0.05, rel=1e-6)
    assert fdp_p_value(m, r, v, gdp_fbar_inverse(0.0)) < fdp_p_value(
        m, r, v, gdp_fbar_inverse(mu_lb + 0.5)
    )
    assert fdp_p_value(m, r, 0, gdp_fbar_inverse(0.0)) == 1.0


def test_eps_delta_curve_inverse() -> None:
    finv = eps_delta_fbar_inverse(1.0, 0.01)
    for y in np.linspace(0.0, 1.0, 11):
        x = finv(float(y))
        # fbar(x) = 1 - f(x) must be >= y at the inverse (and x the smallest such)
        f = max(0.0, 1 - 0.01 - math.e * x, math.exp(-1) * (1 - 0.01 - x))
        assert 1 - f >= y - 1e-12


@given(
    r=st.integers(1, 200),
    frac=st.floats(0.0, 1.0),
    b1=st.floats(1e-4, 0.5),
    b2=st.floats(1e-4, 0.5),
)
@settings(max_examples=40, deadline=None)
def test_mu_lb_monotone_in_confidence_and_correct_guesses(
    r: int, frac: float, b1: float, b2: float
) -> None:
    m = 1000
    v = round(frac * r)
    lo_b, hi_b = sorted((b1, b2))
    assert gdp_mu_lb_one_run(m, r, v, lo_b) <= gdp_mu_lb_one_run(m, r, v, hi_b) + 1e-8
    if v < r:
        assert gdp_mu_lb_one_run(m, r, v, b1) <= gdp_mu_lb_one_run(m, r, v + 1, b1) + 1e-8


def test_edge_cases() -> None:
    assert gdp_mu_lb_one_run(100, 10, 0, 0.05) == 0.0
    assert gdp_mu_lb_one_run(100, 0, 0, 0.05) == 0.0
    assert gdp_mu_lb_one_run(1000, 100, 50, 0.05) == 0.0
    # m counts all canaries: more unguessed canaries weaken the bound
    assert gdp_mu_lb_one_run(10_000, 100, 100, 0.05) < gdp_mu_lb_one_run(1000, 100, 100, 0.05)


def gaussian_canaries(m: int, mu: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    member = rng.random(m) < 0.5
    return rng.standard_normal(m) + mu * member, member


def test_fdp_one_run_audit_result_and_gaussian_flag() -> None:
    rng = np.random.default_rng(0)
    s, mem = gaussian_canaries(1000, 3.0, rng)
    res = fdp_one_run_audit(s, mem, k_pos=50, k_neg=50, delta=1e-5)
    c = res.counts
    assert res.mu_lower_bound == gdp_mu_lb_one_run(1000, c["r"], c["v"], 0.05)
    assert res.epsilon_lower_bound == res.extra["epsilon_fdp"]
    assert res.extra["epsilon_if_gaussian"] == mu_to_epsilon(res.mu_lower_bound, 1e-5)
    assert any("Gaussian" in n for n in res.notes)
    g = fdp_one_run_audit(s, mem, k_pos=50, k_neg=50, delta=1e-5, epsilon="gaussian")
    assert g.epsilon_lower_bound == res.extra["epsilon_if_gaussian"]
    assert any("Gaussian-shape assumption" in n for n in g.notes)
    with pytest.raises(InvalidInputError, match="delta"):
        fdp_one_run_audit(s, mem, epsilon="gaussian", delta=0.0)
    sel = fdp_one_run_audit(s, mem)
    assert sel.extra["beta_per_test"] == pytest.approx(0.05 / len(sel.extra["candidates"]))


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"delta": -0.1}, r"delta: expected a value in \[0, 1\)"),
        ({"delta": 1.0}, r"delta: expected a value in \[0, 1\)"),
        ({"epsilon": "dp"}, r"epsilon: expected one of 'fdp', 'gaussian'"),
        ({"epsilon": "dp", "delta": 2.0}, r"delta: expected a value in \[0, 1\)"),
    ],
)
def test_fdp_one_run_audit_refuses_bad_delta_and_epsilon(kw: dict, match: str) -> None:  # type: ignore[type-arg]
    s, mem = gaussian_canaries(200, 2.0, np.random.default_rng(1))
    with pytest.raises(InvalidInputError, match=match):
        fdp_one_run_audit(s, mem, k_pos=20, k_neg=20, **kw)


def test_fdp_one_run_audit_without_delta_has_no_gaussian_value() -> None:
    """delta = 0: the headline is the assumption-free eps and no Gaussian-shape value exists."""
    s, mem = gaussian_canaries(1000, 3.0, np.random.default_rng(0))
    res = fdp_one_run_audit(s, mem, k_pos=50, k_neg=50)
    assert res.epsilon_lower_bound == res.extra["epsilon_fdp"] > 0
    assert "epsilon_if_gaussian" not in res.extra
    assert res.notes[-1].startswith("epsilon_lower_bound audits f_{eps,delta} directly")


def test_fdp_is_at_least_as_tight_as_eps_dp_for_gaussian_mechanism() -> None:
    """Done-when item: on the same guesses, eps(mu_lb, delta) >= Steinke's eps bound.

    Measured (delta = 1e-5, beta = 0.05): see the report; e.g. (1000, 100, 100):
    5.549 vs 3.465.
    """
    rows = []
    for m, r, v in [(1000, 100, 100), (1000, 200, 190), (1000, 500, 400), (10000, 1000, 900)]:
        gauss = mu_to_epsilon(gdp_mu_lb_one_run(m, r, v, 0.05), 1e-5)
        steinke = eps_lb_one_run(m, r, v, 1e-5, 0.05)
        rows.append((m, r, v, gauss, steinke))
        assert gauss >= steinke
    rng = np.random.default_rng(3)
    for mu in (1.0, 2.0, 4.0):
        s, mem = gaussian_canaries(1000, mu, rng)
        g = make_guesses(s, 100, 100)
        r = int((g != 0).sum())
        v = int(((g == 1) & mem).sum() + ((g == -1) & ~mem).sum())
        gauss = mu_to_epsilon(gdp_mu_lb_one_run(1000, r, v, 0.05), 1e-5)
        assert gauss >= eps_lb_one_run(1000, r, v, 1e-5, 0.05)
