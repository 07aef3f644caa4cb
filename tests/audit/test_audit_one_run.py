"""One-run (eps, delta) audit (Steinke, Nasr, Jagielski 2023; audit-math.md section 2)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from scipy.special import expit, logit

from privaudit.errors import InvalidInputError
from privaudit.stats import eps_lb_one_run, make_guesses, one_run_audit, one_run_log_p_value


def slow_p_value(eps: float | np.ndarray, m: int, r: int, v: int, delta: float) -> np.ndarray:
    """The code listing of Steinke et al. with scipy's binomial (independent oracle)."""
    q = np.atleast_1d(expit(eps))[:, None]
    tail = stats.binom.sf(v - 1, r, q[:, 0])
    if delta == 0:
        return tail
    i = np.arange(1, v + 1)
    g = stats.binom.cdf(v - 1, r, q) - stats.binom.cdf(v - i - 1, r, q)
    return np.minimum(1.0, tail + 2 * m * delta * np.max(g / i, axis=1))


def first_non_rejected_on_grid(
    m: int, r: int, v: int, delta: float, beta: float, step: float
) -> float:
    grid = np.arange(0.0, 30.0, step)
    p = slow_p_value(grid, m, r, v, delta)
    return float(grid[np.argmax(p > beta)])


def test_example_values_from_the_notes() -> None:
    assert eps_lb_one_run(1000, 100, 100, 0.0, 0.05) == pytest.approx(3.492965431, abs=1e-8)
    assert eps_lb_one_run(1000, 100, 100, 1e-5, 0.05) == pytest.approx(3.4654, abs=1e-4)
    assert eps_lb_one_run(1000, 600, 600, 1e-5, 0.05) == pytest.approx(5.2704, abs=1e-4)


@pytest.mark.parametrize(("r", "beta"), [(5, 0.05), (10, 0.05), (100, 0.01), (2000, 1e-10)])
def test_all_correct_closed_form(r: int, beta: float) -> None:
    want = float(logit(beta ** (1 / r)))
    got = eps_lb_one_run(10_000, r, r, 0.0, beta)
    assert got == pytest.approx(want, abs=1e-9)
    assert got <= want + 1e-15 or one_run_log_p_value(got, 10_000, r, r) <= math.log(beta)


def test_nothing_rejected_edge_cases() -> None:
    assert eps_lb_one_run(100, 4, 4, 0.0, 0.05) == 0.0  # 2^-4 > 0.05
    assert eps_lb_one_run(100, 50, 0, 0.0, 0.05) == 0.0
    assert eps_lb_one_run(100, 0, 0, 0.0, 0.05) == 0.0
    assert eps_lb_one_run(100, 50, 25, 0.0, 0.05) == 0.0  # v <= r/2


@pytest.mark.parametrize(
    ("m", "r", "v", "delta", "beta"),
    [
        (1000, 100, 80, 0.0, 0.05),
        (1000, 100, 97, 0.0, 0.01),
        (500, 300, 200, 0.0, 0.05),
        (1000, 100, 90, 1e-4, 0.05),  # 2 m delta = 0.2: bisection
        (1000, 200, 190, 1e-3, 0.05),  # 2 m delta = 2: scan + refine
        (100, 60, 55, 0.0, 0.1),
    ],
)
def test_against_slow_grid_oracle(m: int, r: int, v: int, delta: float, beta: float) -> None:
    got = eps_lb_one_run(m, r, v, delta, beta)
    step = 1e-3
    grid = first_non_rejected_on_grid(m, r, v, delta, beta, step)
    assert grid - step - 1e-6 <= got <= grid + 1e-9
    # the returned value is itself rejected (rounded down)
    assert slow_p_value(got, m, r, v, delta)[0] <= beta * (1 + 1e-9)
    assert slow_p_value(got + 1e-6, m, r, v, delta)[0] > beta * (1 - 1e-6)


def test_delta_term_uses_all_m() -> None:
    a = eps_lb_one_run(1000, 100, 95, 1e-4, 0.05)
    b = eps_lb_one_run(100_000, 100, 95, 1e-4, 0.05)
    assert b < a  # more canaries, larger delta term
    assert eps_lb_one_run(1000, 100, 95, 0.0, 0.05) >= a


@given(
    r=st.integers(1, 300),
    frac=st.floats(0.0, 1.0),
    b1=st.floats(1e-6, 0.5),
    b2=st.floats(1e-6, 0.5),
    delta=st.sampled_from([0.0, 1e-6, 1e-4]),
)
@settings(max_examples=60, deadline=None)
def test_monotone_in_confidence_and_correct_guesses(
    r: int, frac: float, b1: float, b2: float, delta: float
) -> None:
    m = 1000
    v = round(frac * r)
    lo_b, hi_b = sorted((b1, b2))
    assert eps_lb_one_run(m, r, v, delta, lo_b) <= eps_lb_one_run(m, r, v, delta, hi_b) + 1e-8
    if v < r:
        assert eps_lb_one_run(m, r, v, delta, b1) <= eps_lb_one_run(m, r, v + 1, delta, b1) + 1e-8


def test_count_validation() -> None:
    with pytest.raises(InvalidInputError, match="v <= r <= m"):
        eps_lb_one_run(10, 5, 6)
    with pytest.raises(InvalidInputError, match="beta"):
        eps_lb_one_run(10, 5, 5, 0.0, 1.5)
    with pytest.raises(InvalidInputError, match="delta"):
        eps_lb_one_run(10, 5, 5, -1.0)


# ----------------------------------------------------------------------------- API on scores


def leaky_scores(m: int, eps: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    member = rng.random(m) < 0.5
    flip = rng.random(m) >= expit(eps)
    out = np.where(member ^ flip, 1.0, -1.0) + 0.01 * rng.standard_normal(m)
    return out, member


def test_make_guesses_and_ties() -> None:
    assert make_guesses([0.1, 0.9, 0.5, 0.3], 1, 1).tolist() == [-1, 1, 0, 0]
    # the tied block at the boundary abstains
    assert make_guesses([1, 1, 0, 2], 2, 0).tolist() == [0, 0, 0, 1]
    assert make_guesses([1, 1, 0, 2], 3, 1).tolist() == [1, 1, -1, 1]


def test_one_run_audit_fixed_k_matches_counts() -> None:
    rng = np.random.default_rng(1)
    s, mem = leaky_scores(1000, 2.0, rng)
    res = one_run_audit(s, mem, k_pos=100, k_neg=100, confidence=0.95)
    g = make_guesses(s, 100, 100)
    r = int((g != 0).sum())
    v = int(((g == 1) & mem).sum() + ((g == -1) & ~mem).sum())
    assert res.counts["r"] == r and res.counts["v"] == v and res.counts["m"] == 1000
    assert res.epsilon_lower_bound == eps_lb_one_run(1000, r, v, 0.0, 0.05)
    assert res.threshold_selection == "fixed" and res.procedure == "one-run"
    only_pos = one_run_audit(s, mem, k_pos=50)
    assert only_pos.counts["k_neg"] == 0 and only_pos.counts["r"] == 50


def test_one_run_audit_union_bound_pays_for_selection() -> None:
    rng = np.random.default_rng(2)
    s, mem = leaky_scores(2000, 2.0, rng)
    res = one_run_audit(s, mem, confidence=0.95)
    cands = res.extra["candidates"]
    assert res.extra["beta_per_test"] == pytest.approx(0.05 / len(cands))
    assert "union-bound" in res.threshold_selection
    c = res.counts
    assert res.epsilon_lower_bound == pytest.approx(
        eps_lb_one_run(c["m"], c["r"], c["v"], 0.0, 0.05 / len(cands))
    )
    assert res.epsilon_lower_bound == max(res.extra["candidate_bounds"])
    held = one_run_audit(s, mem, selection="held-out", rng=0)
    assert held.counts["m"] == 1000 and held.threshold_selection.startswith("held-out")
    assert held.epsilon_lower_bound > 0.5


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"scores": [0.1, float("nan"), 0.3, 0.2], "member": [1, 0, 1, 0]}, "NaN"),
        ({"scores": [0.1, 0.2, 0.3, 0.4], "member": [1, 1, 1, 1]}, "one non-member"),
        ({"scores": [0.1, 0.2, 0.3], "member": [1, 0, 1, 0]}, "same length"),
        (
            {"scores": [0.1, 0.2, 0.3, 0.4], "member": [1, 0, 1, 0], "k_pos": 3, "k_neg": 2},
            "at most",
        ),
        ({"scores": [0.1, 0.2, 0.3, 0.4], "member": [1, 0, 2, 0]}, "0/1"),
        (
            {"scores": [0.1, 0.2, 0.3, 0.4], "member": [1, 0, 1, 0], "selection": "best"},
            "selection",
        ),
    ],
)
def test_one_run_audit_input_errors(kwargs: dict, match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        one_run_audit(**kwargs)


@given(
    seed=st.integers(0, 2**32 - 1),
    k=st.integers(1, 40),
    transform=st.sampled_from(["affine", "cube", "exp"]),
)
@settings(max_examples=40, deadline=None)
def test_invariant_to_permutation_and_increasing_transforms(
    seed: int, k: int, transform: str
) -> None:
    rng = np.random.default_rng(seed)
    m = 100
    # distinct scores on a coarse grid, so that transforms cannot merge them
    s = rng.permutation(m).astype(float) / 10
    mem = rng.random(m) < 0.5
    mem[:2] = [True, False]
    perm = rng.permutation(m)
    t = {"affine": 3 * s - 7, "cube": s**3 + s, "exp": np.exp(s / 3)}[transform]
    for kw in ({"k_pos": k, "k_neg": k}, {}):
        base = one_run_audit(s, mem, **kw)
        assert (
            one_run_audit(s[perm], mem[perm], **kw).epsilon_lower_bound == base.epsilon_lower_bound
        )
        assert one_run_audit(t, mem, **kw).epsilon_lower_bound == base.epsilon_lower_bound
