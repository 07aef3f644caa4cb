"""Scores of input and gradient canaries, and the audit's validity on a known mechanism."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privaudit.canaries import (
    audit_canaries,
    draw_coins,
    gradient_canary_scores,
    input_canary_scores,
    make_gradient_canaries,
    make_input_canaries,
)
from privaudit.errors import InvalidInputError
from privaudit.stats.one_run import one_run_audit


def test_input_scores_are_the_negative_loss_of_the_canary_label() -> None:
    rng = np.random.default_rng(0)
    cs = make_input_canaries(rng.normal(size=(50, 3)), rng.integers(0, 3, 50), 20, seed=1)
    logits = rng.normal(size=(20, 3))
    p = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    want = np.log(p[np.arange(20), cs.y])
    assert np.allclose(input_canary_scores(cs, logits=logits), want)
    assert np.allclose(input_canary_scores(cs, probs=p), want)
    assert np.allclose(input_canary_scores(cs, loss=-want), want)
    with pytest.raises(InvalidInputError, match="exactly one"):
        input_canary_scores(cs, loss=-want, probs=p)
    with pytest.raises(InvalidInputError, match="shape"):
        input_canary_scores(cs, logits=logits[:, :2])


def test_final_access_reads_the_total_displacement() -> None:
    trace = np.array([[1.0, 2.0], [0.5, 2.0], [0.0, 2.5]])
    s = gradient_canary_scores(
        trace, lr=0.5, expected_batch_size=2.0, max_grad_norm=1.0, access="final"
    )
    # (theta_0 - theta_T) * B / (lr C)
    assert np.allclose(s, [4.0, -2.0])


def _dirac_mechanism(
    m: int, steps: int, q: float, sigma: float, *, inserted: bool, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """The DP-SGD step along each canary coordinate, exactly (no real data): included
    canaries are sampled with rate q and add 1 (their clipped gradient C = 1), plus N(0,
    sigma^2) noise; the trace is theta_t with lr = B = 1."""
    rng = np.random.default_rng(seed)
    cs = make_gradient_canaries(m, m, seed=seed)
    coins = draw_coins(cs, seed=seed)
    hits = rng.random((steps, m)) < q
    if inserted:
        hits &= coins.included[None, :]
    else:
        hits[:] = False
    x = hits + sigma * rng.normal(size=(steps, m))
    trace = np.vstack([np.zeros(m), -np.cumsum(x, axis=0)])
    return trace, coins.included


def _scores(trace: np.ndarray, q: float, sigma: float, access: str) -> np.ndarray:
    return gradient_canary_scores(
        trace,
        lr=1.0,
        expected_batch_size=1.0,
        max_grad_norm=1.0,
        access=access,
        noise_multiplier=sigma,
        sample_rate=q,
    )


def test_the_likelihood_ratio_of_every_iterate_beats_the_final_model() -> None:
    trace, inc = _dirac_mechanism(2000, 50, 0.1, 0.5, inserted=True, seed=1)
    aucs = {}
    for access in ("final", "iterates"):
        s = _scores(trace, 0.1, 0.5, access)
        aucs[access] = (s[inc][:, None] > s[~inc][None, :]).mean()
    assert aucs["iterates"] > aucs["final"] > 0.55


def test_never_inserted_canaries_give_no_bound_in_95_percent_of_runs() -> None:
    """Validity: the scores do not depend on the coins, so a bound > 0 appears with
    probability at most beta = 0.05; over 100 runs more than 12 would have probability
    < 0.3% (Binomial(100, 0.05))."""
    positive = 0
    for seed in range(100):
        trace, inc = _dirac_mechanism(400, 20, 0.2, 1.0, inserted=False, seed=seed)
        r = one_run_audit(_scores(trace, 0.2, 1.0, "iterates"), inc, k_pos=40, k_neg=40)
        positive += r.epsilon_lower_bound > 0
    assert positive <= 12


def test_the_bound_stays_below_the_mechanism_eps() -> None:
    """Sandwich: the Gaussian mechanism (q = 1) with mu = sqrt(T)/sigma is mu-GDP; its eps
    at delta bounds what the audit may find (95% confidence, 10 seeds, fixed guesses)."""
    from privaudit.stats.fdp import mu_to_epsilon

    steps, sigma = 4, 1.0
    mu = math.sqrt(steps) / sigma
    true_eps = mu_to_epsilon(mu, 1e-5)
    found = []
    for seed in range(10):
        trace, inc = _dirac_mechanism(1000, steps, 1.0, sigma, inserted=True, seed=seed)
        cs = make_gradient_canaries(1000, 1000, seed=seed)
        coins = draw_coins(cs, seed=seed)
        assert (coins.included == inc).all()  # the coins the mechanism used
        r = audit_canaries(
            cs,
            coins,
            _scores(trace, 1.0, sigma, "iterates"),
            access="iterates",
            k_pos=100,
            delta=1e-5,
        )
        found.append(r.epsilon_lower_bound)
        assert r.mu_lower_bound <= mu
    assert max(found) <= true_eps
    assert min(found) > 0.5  # not vacuous: the canaries are found


def test_audit_refuses_scores_of_the_wrong_length_and_access() -> None:
    cs = make_gradient_canaries(100, 50, seed=0)
    coins = draw_coins(cs, seed=0)
    with pytest.raises(InvalidInputError, match="50 scores"):
        audit_canaries(cs, coins, np.zeros(49), access="final")
    with pytest.raises(InvalidInputError, match="access"):
        audit_canaries(cs, coins, np.zeros(50), access="black-box")
