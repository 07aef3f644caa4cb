"""The ideal Dirac-canary audit: a slow oracle, the Gaussian sandwich, and the level of
guesses fixed in advance by it."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from privaudit.canaries import ideal_canary_audit
from privaudit.canaries.ideal import planning_candidates
from privaudit.errors import InvalidInputError
from privaudit.stats.fdp import mu_to_epsilon
from privaudit.stats.one_run import one_run_audit


def _slow_llr(x: np.ndarray, q: float, sigma: float) -> np.ndarray:
    """The subsampled-Gaussian log-likelihood ratio, canary by canary, step by step."""
    out = np.zeros(x.shape[1])
    for j in range(x.shape[1]):
        for t in range(x.shape[0]):
            out[j] += math.log(1 - q + q * math.exp((x[t, j] - 0.5) / sigma**2))
    return out


def test_the_ideal_audit_matches_a_slow_recomputation() -> None:
    m, q, steps, sigma, runs, seed = 300, 0.3, 6, 1.0, 3, 5
    plan = ideal_canary_audit(
        m, sample_rate=q, steps=steps, noise_multiplier=sigma, delta=1e-5, runs=runs, seed=seed
    )
    rng = np.random.default_rng([seed, 0x1DEA])
    fixed, union = [], []
    for _ in range(runs):
        inc = rng.random(m) < 0.5
        b = (rng.random((steps, m)) < q) & inc
        x = b + sigma * rng.standard_normal((steps, m))
        s = _slow_llr(x, q, sigma)
        fixed.append(
            one_run_audit(
                s, inc, k_pos=plan.k_pos, k_neg=plan.k_neg, delta=1e-5
            ).epsilon_lower_bound
        )
        union.append(one_run_audit(s, inc, delta=1e-5).epsilon_lower_bound)
    assert plan.epsilon_lower_bound == pytest.approx(np.mean(fixed), abs=1e-9)
    assert plan.epsilon_lower_bound_union == pytest.approx(np.mean(union), abs=1e-9)
    assert plan.by_candidate[f"{plan.k_pos},{plan.k_neg}"] == max(plan.by_candidate.values())


def test_the_ideal_bound_grows_with_mu_and_stays_below_the_gaussian_eps() -> None:
    """Full batch (q = 1): T Gaussian steps of noise sigma are one sqrt(T)/sigma-GDP
    mechanism; the (optimistic) ideal bound stays below its eps at delta and grows with mu."""
    steps, found = 4, []
    for sigma in (4.0, 2.0, 1.0):
        mu = math.sqrt(steps) / sigma
        plan = ideal_canary_audit(
            600,
            sample_rate=1.0,
            steps=steps,
            noise_multiplier=sigma,
            delta=1e-5,
            candidates=[(20, 20), (40, 40), (80, 80)],
            runs=2,
        )
        assert plan.epsilon_lower_bound <= mu_to_epsilon(mu, 1e-5)
        assert plan.mu_lower_bound <= mu
        assert plan.epsilon_lower_bound_union <= plan.epsilon_lower_bound + 1e-12
        found.append(plan.epsilon_lower_bound)
    assert found[0] < found[1] < found[2] and found[0] > 0


def test_guesses_fixed_by_the_plan_keep_the_level_when_canaries_are_never_inserted() -> None:
    """The plan sees no coins, so its guesses are fixed in advance: with scores that do not
    depend on the coins a bound > 0 appears with probability <= 0.05; more than 22 of
    200 runs has probability < 0.2% (Binomial(200, 0.05))."""
    m, q, steps, sigma = 400, 0.2, 20, 1.0
    plan = ideal_canary_audit(m, sample_rate=q, steps=steps, noise_multiplier=sigma, runs=2)
    rng = np.random.default_rng(7)
    positive = 0
    for _ in range(200):
        inc = rng.random(m) < 0.5
        x = sigma * rng.standard_normal((steps, m))
        s = np.logaddexp(math.log1p(-q), math.log(q) + (x - 0.5) / sigma**2).sum(axis=0)
        r = one_run_audit(s, inc, k_pos=plan.k_pos, k_neg=plan.k_neg)
        positive += r.epsilon_lower_bound > 0
    assert positive <= 22


def test_without_signal_the_ideal_audit_finds_nothing() -> None:
    plan = ideal_canary_audit(600, sample_rate=1.0, steps=2, noise_multiplier=1e4, runs=2)
    assert plan.epsilon_lower_bound_union == 0.0


def test_final_and_iterates_agree_for_a_few_full_batch_steps() -> None:
    """With q = 1 and fewer than 16 steps both scores are the total displacement (up to
    an increasing map), so the ideal audits coincide."""
    common = {"sample_rate": 1.0, "steps": 4, "noise_multiplier": 2.0, "runs": 2, "seed": 3}
    a = ideal_canary_audit(600, access="final", **common)
    b = ideal_canary_audit(600, access="iterates", **common)
    assert a.by_candidate == b.by_candidate and (a.k_pos, a.k_neg) == (b.k_pos, b.k_neg)


def test_planning_candidates_and_bad_input() -> None:
    c = planning_candidates(1000)
    assert (500, 500) in c and (500, 0) in c and all(k >= 5 for k, _ in c)
    assert all(kp + kn <= 1000 for kp, kn in c)
    with pytest.raises(InvalidInputError, match="sample_rate"):
        ideal_canary_audit(100, sample_rate=0.0, steps=2, noise_multiplier=1.0)
    with pytest.raises(InvalidInputError, match="noise_multiplier"):
        ideal_canary_audit(100, sample_rate=0.5, steps=2, noise_multiplier=0.0)
    with pytest.raises(InvalidInputError, match="access"):
        ideal_canary_audit(100, sample_rate=0.5, steps=2, noise_multiplier=1.0, access="x")
    good: dict[str, Any] = {
        "sample_rate": 0.5,
        "noise_multiplier": 1.0,
        "confidence": 0.95,
        "delta": 0.0,
    }
    for name, bad in [
        ("sample_rate", "x"),
        ("noise_multiplier", None),
        ("confidence", "0.9"),
        ("delta", [0.0]),
        ("sample_rate", True),
    ]:
        with pytest.raises(InvalidInputError, match=f"{name}: expected a number"):
            ideal_canary_audit(100, steps=2, **{**good, name: bad})
