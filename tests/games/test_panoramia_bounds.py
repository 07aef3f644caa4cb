"""PANORAMIA's per-threshold curve and the exact fixture's bounds (Kazmi et al. 2024, Sec. 4)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from privaudit.panoramia.fixture import (
    FixtureModality,
    FixtureTarget,
    fixture_population,
    fixture_slots,
    fixture_truth,
)
from privaudit.panoramia.game import run_panoramia
from privaudit.stats.panoramia import panoramia_audit, panoramia_curve, panoramia_lb


@pytest.mark.parametrize("thresholds", ["quantiles", "all"])
@pytest.mark.parametrize("seed", range(6))
def test_curve_max_equals_the_bound(seed: int, thresholds: str) -> None:
    rng = np.random.default_rng(seed)
    m = int(rng.integers(30, 600))
    member = rng.random(m) < 0.5
    scores = member * rng.uniform(0, 2) + rng.normal(0, 1, m)
    if seed % 2:
        scores = np.round(scores, 1)  # ties
    lb, info = panoramia_lb(scores, member, beta_per_test=0.025, thresholds=thresholds)
    cv = panoramia_curve(scores, member, beta_per_test=0.025, thresholds=thresholds)
    assert max(cv["lb"], default=0.0) == lb
    n1 = int(member.sum())
    for rec, prec, b in zip(cv["recall"], cv["precision"], cv["lb"], strict=True):
        assert 0 <= rec <= 1 and 0 <= prec <= 1 and b >= 0
        # the precision a bound implies, e^B / (1 + e^B), is a lower confidence bound on
        # the precision: never above the observed one
        if b > 0 and prec < 1:
            assert b <= math.log(prec) - math.log1p(-prec)
    if lb > 0:
        k = cv["lb"].index(lb)
        assert cv["precision"][k] == info["v"] / info["r"]
        assert cv["recall"][k] == info["v"] / n1


def test_curve_recall_is_monotone_for_quantiles() -> None:
    rng = np.random.default_rng(0)
    member = rng.random(300) < 0.5
    cv = panoramia_curve(member + rng.normal(0, 1, 300), member, beta_per_test=0.025)
    assert np.all(np.diff(cv["recall"]) >= 0)
    assert cv["recall"][-1] == 1.0


# --------------------------------------------------------------------------------------
# the exact fixture (games/panoramia_fixture.py's docstring derives the truth)
# --------------------------------------------------------------------------------------

LAM, EPS = 0.3, 1.0


def test_fixture_truth_and_bayes_precision() -> None:
    c, c_eps = fixture_truth(LAM, EPS)
    assert c == pytest.approx(-math.log(1 - LAM)) and c_eps == pytest.approx(c + EPS)
    # empirical precision of the Bayes guesses on a large sample matches the derivation
    mia, base, member = fixture_slots(400_000, LAM, EPS, np.random.default_rng(0))
    near = base > -1.0  # x < 1, the region "far from Q"
    assert member[near].mean() == pytest.approx(math.exp(c) / (1 + math.exp(c)), abs=3e-3)
    top = mia > c  # x < 1 and the randomised-response bit says "member"
    assert member[top].mean() == pytest.approx(math.exp(c_eps) / (1 + math.exp(c_eps)), abs=3e-3)
    assert member[top].sum() / member.sum() == pytest.approx(
        math.exp(EPS) / (1 + math.exp(EPS)), abs=3e-3
    )


def test_fixture_bounds_hold_at_the_stated_confidence() -> None:
    """Over 1000 replicates each bound exceeds the truth in at most beta/2 of them (plus
    binomial slack), while the uncorrected plug-in estimate exceeds it often: the count
    has the power to see an invalid bound."""
    c, c_eps = fixture_truth(LAM, EPS)
    rng = np.random.default_rng(2024)
    n_rep, m, beta = 1000, 300, 0.05
    over = np.zeros(2, dtype=int)
    naive_over = 0
    for _ in range(n_rep):
        mia, base, member = fixture_slots(m, LAM, EPS, rng)
        res = panoramia_audit(mia, base, member, beta=beta)
        over += [res.extra["c_lower_bound"] > c, res.extra["c_plus_epsilon_lower_bound"] > c_eps]
        top = mia > c  # the Bayes guess set, precision plugged in with no interval
        p = member[top].mean()
        naive_over += p >= 1 or math.log(p) - math.log1p(-p) > c_eps
    slack = int(stats.binom.ppf(0.999, n_rep, beta / 2))
    assert over[0] <= slack and over[1] <= slack, (over, slack)
    assert naive_over > slack, naive_over


def test_fixture_bounds_approach_the_truth_as_m_grows() -> None:
    c, c_eps = fixture_truth(LAM, EPS)
    rng = np.random.default_rng(7)
    gaps = []
    for m in (1_000, 10_000, 100_000):
        lbs = np.array(
            [
                [
                    panoramia_audit(*fixture_slots(m, LAM, EPS, rng), beta=0.05).extra[k]
                    for k in ("c_lower_bound", "c_plus_epsilon_lower_bound")
                ]
                for _ in range(3)
            ]
        )
        assert np.all(lbs <= [c, c_eps])
        gaps.append([c, c_eps] - lbs.mean(axis=0))
    g = np.array(gaps)
    assert np.all(np.diff(g, axis=0) < 0), g  # both gaps shrink at every step
    assert np.all(g[-1] < 0.06), g  # m = 1e5: within 0.06 of c and of c + eps


def test_fixture_through_the_game() -> None:
    """The same fixture through run_panoramia's splits, generator and scorers."""
    c, c_eps = fixture_truth(LAM, 2.0)
    gaps = []
    for n in (2_000, 20_000):
        pop = fixture_population(n, seed=n)
        target = FixtureTarget(frozenset(pop.ids), eps=2.0, seed=1)
        res = run_panoramia(FixtureModality(LAM), target, pop, seed=3)
        assert res.c_lb <= c and res.c_plus_eps_lb <= c_eps
        assert res.classifiers["mia"]["weight"] > 0 and res.eps_tilde > 0
        gaps.append((c - res.c_lb, c_eps - res.c_plus_eps_lb))
    assert gaps[1][0] < gaps[0][0] and gaps[1][1] < gaps[0][1], gaps
    # violations over replicated games stay within the binomial slack of beta/2
    over = 0
    for r in range(20):
        pop = fixture_population(1_000, seed=100 + r)
        target = FixtureTarget(frozenset(pop.ids), eps=2.0, seed=r)
        res = run_panoramia(FixtureModality(LAM), target, pop, seed=r)
        over += (res.c_lb > c) + (res.c_plus_eps_lb > c_eps)
    assert over <= int(stats.binom.ppf(0.999, 40, 0.025))
