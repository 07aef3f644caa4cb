"""Validity of the global Zero-Run correction under 0-DP nulls (statistics review, round 2).

1. ``global_method="absorb"`` pays the overlap failure of any of the ``m`` examples
   (``m delta_DS``), not ``delta_DS`` once.
2. With estimated propensities, ``eta`` comes from the margin-corrected propensities, and an
   estimator that is refused, falsified or fails the placebo check prints no global bound.
"""

from __future__ import annotations

import numpy as np
import pytest

from privaudit.errors import InvalidInputError
from privaudit.zero_run import zero_run_audit, zero_run_bounds
from privaudit.zero_run.global_correction import overlap_eta
from privaudit.zero_run.tampering import conservative_propensity


def _tagged_null(rng: np.random.Generator, m: int, dds: float):
    """Assumption 4.3 with eta = 1/2 and delta_DS: with probability delta_DS an example's
    features reveal its class (pi in {0, 1}), otherwise pi = 1/2; the score is that tag
    (features only), so the mechanism is 0-DP and every mu_lb > 0 is false."""
    mem = rng.random(m) < 0.5
    tag = rng.random(m) < dds
    pi = np.where(tag, mem.astype(float), 0.5)
    score = np.where(tag, np.where(mem, 1.0, -1.0), 0.0) + 1e-3 * rng.standard_normal(m)
    return score, mem, pi, rng.random(m)


def _global(score, mem, pi, u, dds, method):
    return zero_run_bounds(
        score, mem, pi, uniforms=u, beta=0.05, delta_ds=dds, eta=0.5,
        global_method=method, corrections=("global",),
    )["global"]  # fmt: skip


def test_absorb_charges_the_union_bound_over_examples_on_a_null() -> None:
    """m = 1000, delta_DS = 0.02: the paper's level (delta_DS paid once) gave mu_lb > 0 in
    20/20 runs; now m * delta_DS >= beta, so absorb refuses, and tensor stays at 0."""
    rng = np.random.default_rng(1)
    n_rep, m, dds = 20, 1000, 0.02
    refused = tensor_pos = 0
    for _ in range(n_rep):
        score, mem, pi, u = _tagged_null(rng, m, dds)
        try:
            refused += _global(score, mem, pi, u, dds, "absorb").mu_lower_bound <= 0.0
        except InvalidInputError as err:
            assert "m * delta_ds" in str(err)
            refused += 1
        tensor_pos += _global(score, mem, pi, u, dds, "tensor").mu_lower_bound > 0.0
    assert refused == n_rep
    assert tensor_pos <= 2


def test_absorb_stays_valid_where_it_gives_a_bound() -> None:
    """m * delta_DS = 0.04 < beta: absorb gives bounds, and at most ~beta of them positive."""
    rng = np.random.default_rng(2)
    n_rep, m, dds = 40, 1000, 4e-5
    pos = 0
    for _ in range(n_rep):
        score, mem, pi, u = _tagged_null(rng, m, dds)
        pos += _global(score, mem, pi, u, dds, "absorb").mu_lower_bound > 0.0
    assert pos <= 5  # binomial(40, 0.05): P(X > 5) < 0.02


def test_global_eta_uses_the_margin_corrected_propensities() -> None:
    rng = np.random.default_rng(3)
    m = 400
    mem = rng.random(m) < 0.5
    pi = np.clip(0.5 + 0.3 * (mem - 0.5) + 0.05 * rng.standard_normal(m), 0.05, 0.95)
    se = np.full(m, 0.3)
    res = zero_run_bounds(
        rng.standard_normal(m), mem, pi, uniforms=rng.random(m), beta=0.05,
        propensity_se=se, margin_z=2.0, corrections=("global",),
    )["global"]  # fmt: skip
    want = overlap_eta(conservative_propensity(pi, se, 2.0), mem, 0.0)
    assert res.extra["eta"] == pytest.approx(want)
    assert res.extra["eta"] < overlap_eta(pi, mem, 0.0)
    assert any("plug-in" in n for n in res.notes)
    given = zero_run_bounds(
        rng.standard_normal(m), mem, pi, uniforms=rng.random(m), beta=0.05, eta=0.4,
        corrections=("global",),
    )["global"]  # fmt: skip
    assert not any("plug-in" in n for n in given.notes)


def test_falsified_estimator_prints_no_global_bound_on_the_spread_null() -> None:
    """The docs' spread-shift null (0-DP, score |x1|): the misspecified 'logistic' printed a
    positive global bound in 3/3 runs before; now it is falsified and its global entry
    refused (0, with the reason), in the summary too."""
    n, pos = 1000, 0
    for rep in range(3):
        rng = np.random.default_rng(1000 + rep)
        mem = np.r_[np.ones(n, bool), np.zeros(n, bool)]
        x = rng.standard_normal((2 * n, 2))
        x[:n, 0] *= 1.6
        res = zero_run_audit(
            np.abs(x[:, 0]), mem, features=x, seed=rep, estimators=("logistic",),
            challengers=("logistic-quadratic",), placebo=False,
        )  # fmt: skip
        (e,) = res.estimators
        g = e["global"]
        pos += g["mu_lower_bound"] > 0 or g["epsilon_lower_bound"] > 0
        assert any(f["rejected"] for f in e["falsification"])
        assert "falsification" in e["global_refused"]
        assert g["extra"]["refused"] == e["global_refused"]
        assert g["notes"][0].startswith("REFUSED")
        assert any("global bound refused" in w for w in res.warnings)
        text = res.summary(width=250)
        assert "logistic (failed checks)" in text and "refused" in text
    assert pos == 0


def test_pointwise_refused_family_prints_no_global_bound() -> None:
    rng = np.random.default_rng(100)
    n = 300
    mem = np.r_[np.ones(n, bool), np.zeros(n, bool)]
    x = rng.standard_normal((2 * n, 3))
    x[:n, 0] += 2.0
    res = zero_run_audit(
        2.0 * x[:, 0] - 2.0, mem, features=x, estimators=("random-forest", "logistic"),
        challengers=(), placebo=False, seed=0,
    )  # fmt: skip
    by = {e["name"]: e for e in res.estimators}
    rf = by["random-forest"]
    assert (
        rf["pointwise_refused"]
        and "pointwise bound of this estimator is refused" in (rf["global_refused"])
    )
    assert rf["global"]["mu_lower_bound"] == 0.0 and rf["global"]["epsilon_lower_bound"] == 0.0
    assert "unrefused_mu_lower_bound" in rf["global"]["extra"]
    assert res.bound("random-forest", "global").mu_lower_bound == 0.0
    assert "random-forest (refused)" in res.summary(width=250)
