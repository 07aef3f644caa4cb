"""Assumption-based one-run estimates and the audit-design helper (issue 9, item 5)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privaudit.errors import InvalidInputError
from privaudit.stats.audit_plan import plan_one_run_audit
from privaudit.stats.fdp import gdp_mu_lb_one_run
from privaudit.stats.one_run import eps_lb_one_run
from privaudit.stats.parametric import (
    guess_success_probabilities,
    parametric_one_run,
)


def _top_accuracy(mu: float, m: int, k: int, n: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    member = rng.random((n, m)) < 0.5
    x = mu * member + rng.standard_normal((n, m))
    top = np.argsort(-x, axis=1)[:, :k]
    return float(np.take_along_axis(member, top, axis=1).mean())


def test_gaussian_success_probability_matches_monte_carlo() -> None:
    p_plus, p_minus = guess_success_probabilities("gaussian", 1.0, 1000, 100, 100)
    assert p_plus == p_minus  # symmetric family
    assert _top_accuracy(1.0, 1000, 100, 400, 0) == pytest.approx(p_plus, abs=0.006)
    assert guess_success_probabilities("gaussian", 0.0, 1000, 10, 10) == (0.5, 0.5)
    # Laplace tails: beyond the member location the likelihood ratio is e^eps
    assert guess_success_probabilities("laplace", 1.0, 1000, 50, 0)[0] == pytest.approx(
        1 / (1 + math.exp(-1.0)), abs=1e-9
    )


def test_randomized_response_bound_is_steinkes_and_estimate_is_logit() -> None:
    m, kp, kn, v = 1000, 200, 200, 290
    p = parametric_one_run(m, kp, kn, v, family="randomized-response", beta=0.05)
    # with k_+ , k_- <= m/2 every released guess succeeds with q(eps): the binomial test
    assert p.lower_bound == pytest.approx(eps_lb_one_run(m, kp + kn, v, 0.0, 0.05), abs=1e-6)
    assert p.estimate == pytest.approx(math.log(v / (kp + kn - v)), abs=1e-6)
    assert "ASSUMPTION-BASED" in p.assumption and p.parameter == "epsilon"


def test_gaussian_parametric_is_tighter_than_assumption_free_and_monotone() -> None:
    lbs = [
        parametric_one_run(1000, 100, 100, v, family="gaussian").lower_bound
        for v in (140, 160, 180)
    ]
    assert lbs == sorted(lbs) and lbs[0] > 0
    assert lbs[1] > gdp_mu_lb_one_run(1000, 200, 160, 0.05)
    est = parametric_one_run(1000, 100, 100, 160, family="gaussian")
    assert est.lower_bound < est.estimate
    assert parametric_one_run(1000, 100, 100, 100, family="gaussian").lower_bound == 0.0
    with pytest.raises(InvalidInputError, match="v"):
        parametric_one_run(1000, 10, 10, 21, family="gaussian")
    with pytest.raises(InvalidInputError, match="family"):
        parametric_one_run(1000, 10, 10, 5, family="cauchy")


def test_plan_picks_the_best_candidate_of_its_table() -> None:
    plan = plan_one_run_audit(1000, family="gaussian", theta=1.0)
    assert plan.bound == "mu"
    assert plan.expected_bound == max(row[2] for row in plan.table)
    assert (plan.k_pos, plan.k_neg, plan.expected_bound) in plan.table
    # more leakage, a larger expected bound
    assert (
        plan_one_run_audit(1000, family="gaussian", theta=2.0).expected_bound > plan.expected_bound
    )
    with pytest.raises(InvalidInputError, match="theta"):
        plan_one_run_audit(1000, family="gaussian", theta=0.0)


@pytest.mark.slow
def test_gaussian_parametric_bound_violation_rate() -> None:
    """300 Gaussian mu = 1 audits (m = 1000, 100 + 100 guesses): violations <= beta + 2 SE."""
    rng = np.random.default_rng(7)
    n, m, k, mu = 300, 1000, 100, 1.0
    hits = est_hits = 0
    for _ in range(n):
        member = rng.random(m) < 0.5
        x = mu * member + rng.standard_normal(m)
        order = np.argsort(-x)
        v = int(member[order[:k]].sum() + (~member[order[-k:]]).sum())
        p = parametric_one_run(m, k, k, v, family="gaussian")
        hits += p.lower_bound > mu
        est_hits += p.estimate > mu
    assert hits / n <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / n)
    assert 0.25 < est_hits / n < 0.75  # a point estimate, not a bound


def test_misspecified_family_breaks() -> None:
    """Laplace family assumed on randomized response (eps = 1), every canary guessed."""
    rng = np.random.default_rng(1)
    m = 10_000
    member = rng.random(m) < 0.5
    q = 1 / (1 + math.exp(-1.0))
    bit = np.where(member, rng.random(m) < q, rng.random(m) >= q) + 1e-6 * rng.random(m)
    order = np.argsort(-bit)
    v = int(member[order[: m // 2]].sum() + (~member[order[m // 2 :]]).sum())
    wrong = parametric_one_run(m, m // 2, m // 2, v, family="laplace")
    right = parametric_one_run(m, m // 2, m // 2, v, family="randomized-response")
    assert wrong.lower_bound > 1.0 >= right.lower_bound  # overshoots the true eps = 1


def test_audits_carry_the_labelled_parametric_estimate_beside_the_bound() -> None:
    from privaudit.stats import fdp_one_run_audit, one_run_audit

    rng = np.random.default_rng(3)
    m = 1000
    member = rng.random(m) < 0.5
    x = member + rng.standard_normal(m)
    res = fdp_one_run_audit(x, member, k_pos=100, k_neg=100, parametric="gaussian")
    par = res.extra["parametric"]
    assert par["parameter"] == "mu" and "ASSUMPTION-BASED" in par["assumption"]
    assert par["lower_bound"] >= res.mu_lower_bound  # tighter, under its assumption
    assert any("ASSUMPTION-BASED" in n for n in res.notes)
    plain = fdp_one_run_audit(x, member, k_pos=100, k_neg=100)
    assert plain.mu_lower_bound == res.mu_lower_bound and "parametric" not in plain.extra
    sel = one_run_audit(x, member, parametric="randomized-response")
    assert "chosen on these labels" in sel.extra["parametric"]["assumption"]


def test_parametric_bound_of_selected_guess_counts_pays_for_the_selection() -> None:
    """Gaussian mu = 0.5 audits (m = 1000) with the guess counts chosen among the default
    candidates on the audit labels: the parametric bound, tested at beta / K like the
    assumption-free one, exceeds the true mu in at most about beta of them (tested at the
    full beta on the chosen counts it did in about 14%)."""
    from privaudit.stats import fdp_one_run_audit, one_run_audit

    rng = np.random.default_rng(7)
    n, m, mu, beta = 200, 1000, 0.5, 0.05
    hits = 0
    for i in range(n):
        member = rng.random(m) < 0.5
        x = mu * member + rng.standard_normal(m)
        res = one_run_audit(x, member, beta=beta, parametric="gaussian")
        par = res.extra["parametric"]
        assert par["beta"] == res.extra["beta_per_test"] == beta / len(res.extra["candidates"])
        hits += par["lower_bound"] > mu
        if i == 0:  # the f-DP audit computes it at its own selection's level too
            f = fdp_one_run_audit(x, member, beta=beta, parametric="gaussian")
            assert f.extra["parametric"]["beta"] == f.extra["beta_per_test"] < beta
    assert hits / n <= beta + 2 * math.sqrt(beta * (1 - beta) / n)


def test_randomized_response_bound_in_a_selected_audit_is_the_assumption_free_one() -> None:
    """The randomized-response family's bound is Steinke et al.'s on the same counts at the
    same level, also when the counts were selected with the union bound (beta / K)."""
    from privaudit.stats import one_run_audit

    rng = np.random.default_rng(4)
    m = 1000
    member = rng.random(m) < 0.5
    x = member + rng.standard_normal(m)
    res = one_run_audit(x, member, parametric="randomized-response")
    assert res.threshold_selection.startswith("union-bound") and res.epsilon_lower_bound > 0
    par = res.extra["parametric"]
    assert par["lower_bound"] == pytest.approx(res.epsilon_lower_bound, abs=1e-6)
    assert "lower bound pays for it" in par["assumption"]


def test_held_out_parametric_bound_is_at_beta_on_the_audited_part() -> None:
    from privaudit.stats import fdp_one_run_audit

    rng = np.random.default_rng(5)
    m = 1000
    member = rng.random(m) < 0.5
    x = member + rng.standard_normal(m)
    res = fdp_one_run_audit(x, member, parametric="gaussian", selection="held-out", rng=0)
    par = res.extra["parametric"]
    assert par["beta"] == res.extra["beta_per_test"] == 0.05
    c = res.counts
    want = parametric_one_run(c["m"], c["k_pos"], c["k_neg"], c["v"], family="gaussian")
    assert par["lower_bound"] == want.lower_bound and c["m"] == m // 2
    assert "chosen on these labels" not in par["assumption"]
    assert "held-out examples" in par["assumption"]
    fixed = fdp_one_run_audit(x, member, k_pos=100, k_neg=100, parametric="gaussian")
    assert fixed.extra["parametric"]["beta"] == 0.05
    assert "chosen" not in fixed.extra["parametric"]["assumption"]
