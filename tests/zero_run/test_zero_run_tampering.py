"""Pointwise (tampering) and global Zero-Run corrections: identities, oracles, simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special, stats

from privaudit.errors import InvalidInputError
from privaudit.stats import eps_lb_one_run, gdp_mu_lb_one_run, make_guesses
from privaudit.zero_run import (
    conditional_eps_audit,
    conditional_gdp_audit,
    draw_uniforms,
    eps_bar_ds,
    eps_ds,
    eps_retention,
    gdp_retention,
    global_eps_lb,
    global_gdp_mu_lb,
    mu_bar_ds,
    overlap_eta,
    propensity_aware_guesses,
    propensity_model_test,
)
from privaudit.zero_run.tampering import retention_thresholds


def test_retention_identities() -> None:
    pi = np.array([0.0, 0.1, 0.3, 0.5, 0.8, 1.0])
    d = eps_ds(pi)
    assert d[3] == 0.0 and math.isinf(d[0]) and math.isinf(d[-1])
    assert d[1] == pytest.approx(math.log(9.0))
    g = gdp_retention(pi)
    np.testing.assert_allclose(g[1:-1], np.exp(-d[1:-1]))
    assert g[0] == 0.0 and g[-1] == 0.0
    for eps in (0.0, 0.3, 2.0, 10.0):
        b = eps_retention(pi, eps)
        # b * q(eps + eps_DS) = q(eps): the tampered guess succeeds w.p. at most q(eps).
        q_tot = special.expit(eps + d)
        np.testing.assert_allclose(b * q_tot, special.expit(eps), rtol=1e-12)
        assert np.all(b >= g - 1e-15)
    np.testing.assert_allclose(eps_retention(pi, 0.0), (1.0 + g) / 2.0)


def test_retention_thresholds_match_direct_coins() -> None:
    rng = np.random.default_rng(3)
    pi = rng.random(300)
    pi[:5] = [0.0, 1.0, 0.5, 0.5, 0.999999]
    u = rng.random(300)
    a = retention_thresholds(pi, u)
    for eps in np.linspace(0.0, 12.0, 241):
        kept = u < eps_retention(pi, float(eps))
        np.testing.assert_array_equal(kept, eps > a)


def test_propensity_aware_guesses_rank_by_confidence_times_retention() -> None:
    s = np.array([3.0, -2.0, 0.5, 2.5, -0.1, 1.0])
    b = np.array([0.1, 1.0, 1.0, 1.0, 1.0, 0.0])
    t = propensity_aware_guesses(s, b, 2, threshold=0.0)
    # c*b: 0.3, 2.0, 0.5, 2.5, 0.1, 0.0 -> top two are rows 3 (+1) and 1 (-1).
    assert t.tolist() == [0, -1, 0, 1, 0, 0]
    # b = 0 is never guessed even when r asks for everything.
    assert propensity_aware_guesses(s, b, 6, threshold=0.0)[5] == 0
    # A tie at the boundary abstains as a block.
    tied = propensity_aware_guesses(np.array([1.0, -1.0, 0.0]), np.ones(3), 1, threshold=0.0)
    assert tied.tolist() == [0, 0, 0]


def test_no_shift_recovers_plain_one_run() -> None:
    rng = np.random.default_rng(0)
    m = 400
    member = rng.random(m) < 0.5
    scores = 0.8 * member + rng.standard_normal(m)
    half = np.full(m, 0.5)
    u = draw_uniforms(m, 1)
    for k in (20, 50, 200):
        t = propensity_aware_guesses(scores, np.ones(m), 2 * k)
        assert int((t != 0).sum()) == 2 * k
        s = np.where(member, 1, -1)
        r, v = int((t != 0).sum()), int(((t != 0) & (t == s)).sum())
        g = conditional_gdp_audit(t, member, half, beta=0.05, uniforms=u)
        assert (g.r, g.v, g.v_retained) == (r, v, v)
        assert g.value == gdp_mu_lb_one_run(m, r, v, 0.05)
        e = conditional_eps_audit(t, member, half, beta=0.05, uniforms=u)
        assert e.value == eps_lb_one_run(m, r, v, 0.0, 0.05)
        assert g.retention_sum == m


def _grid_eps(t, member, pi, u, beta, step):  # type: ignore[no-untyped-def]
    """Slow oracle: first non-rejected eps on a grid, with tampering redone per eps."""
    s = np.where(member, 1, -1)
    r = int((t != 0).sum())
    correct = (t != 0) & (t == s)
    for eps in np.arange(0.0, 20.0, step):
        kept = u < eps_retention(pi, float(eps))
        v = int((correct & kept).sum())
        p = stats.binom.sf(v - 1, r, special.expit(eps)) if v > 0 else 1.0
        if p > beta:
            return float(eps)
    return math.inf


@pytest.mark.parametrize("seed", range(6))
def test_conditional_eps_matches_grid_oracle(seed: int) -> None:
    rng = np.random.default_rng(seed)
    m = 150
    member = rng.random(m) < 0.5
    a = np.where(member, 0.6, -0.6) + rng.standard_normal(m)
    pi = special.expit(1.2 * a)
    scores = 1.5 * member + rng.standard_normal(m) + a
    u = draw_uniforms(m, seed)
    t = propensity_aware_guesses(scores, gdp_retention(pi), 60)
    step = 0.002
    got = conditional_eps_audit(t, member, pi, beta=0.05, uniforms=u).value
    grid = _grid_eps(t, member, pi, u, 0.05, step)
    # The exact first crossing lies in (grid - step, grid].
    assert grid - step - 1e-9 <= got <= grid + 1e-9


def test_tampering_inputs_are_checked() -> None:
    with pytest.raises(InvalidInputError, match="propensity"):
        eps_ds([0.2, 1.2])
    with pytest.raises(InvalidInputError, match="propensity"):
        gdp_retention([0.2, float("nan")])
    with pytest.raises(InvalidInputError, match="uniforms"):
        conditional_gdp_audit([1, -1], [True, False], [0.5, 0.5], beta=0.05, uniforms=[0.1])
    with pytest.raises(InvalidInputError, match="guesses"):
        conditional_gdp_audit([2, -1], [True, False], [0.5, 0.5], beta=0.05, uniforms=[0.1, 0.2])
    with pytest.raises(InvalidInputError, match="r"):
        propensity_aware_guesses([1.0, 2.0], [1.0, 1.0], 3)


def _shifted_gaussian(rng: np.random.Generator, m: int, mu: float, gamma: float):  # type: ignore[no-untyped-def]
    """Per-example Gaussian mechanism (mu-GDP in each membership bit) plus a shifted feature."""
    member = rng.random(m) < 0.5
    y = mu * member + rng.standard_normal(m)
    a = gamma * np.where(member, 1.0, -1.0) + rng.standard_normal(m)
    pi = special.expit(2.0 * gamma * a)  # oracle propensity, prior 1/2
    return member, y, a, pi


def test_corrected_audits_stay_valid_where_the_naive_one_is_not() -> None:
    """A constant mechanism (0-DP) under strong shift: the naive audit rejects 0-DP almost
    always, the pointwise-corrected ones at most about beta of the time."""
    rng = np.random.default_rng(11)
    n_sims, m, beta = 60, 600, 0.05
    naive_pos = corr_mu_pos = corr_eps_pos = 0
    for i in range(n_sims):
        member, _, a, pi = _shifted_gaussian(rng, m, 0.0, 0.8)
        scores = a  # features-only attack: everything it knows comes from the shift
        u = draw_uniforms(m, i)
        t0 = propensity_aware_guesses(scores, np.ones(m), m // 4)
        naive_pos += (
            conditional_gdp_audit(t0, member, np.full(m, 0.5), beta=beta, uniforms=u).value > 0
        )
        t = propensity_aware_guesses(scores, gdp_retention(pi), m // 4)
        corr_mu_pos += conditional_gdp_audit(t, member, pi, beta=beta, uniforms=u).value > 0
        corr_eps_pos += conditional_eps_audit(t, member, pi, beta=beta, uniforms=u).value > 0
    assert naive_pos >= 0.9 * n_sims
    # Binomial(60, 0.05) exceeds 8 with probability < 0.5 %.
    assert corr_mu_pos <= 8 and corr_eps_pos <= 8


def test_pointwise_gdp_bound_never_far_above_the_true_mu() -> None:
    rng = np.random.default_rng(5)
    mu, gamma, n_sims, m, beta = 1.0, 0.15, 40, 1000, 0.05
    above = 0
    values = []
    for i in range(n_sims):
        member, y, a, pi = _shifted_gaussian(rng, m, mu, gamma)
        scores = mu * y + 2.0 * gamma * a  # the posterior log-odds: the strongest attack
        t = propensity_aware_guesses(scores, gdp_retention(pi), m // 8)
        res = conditional_gdp_audit(t, member, pi, beta=beta, uniforms=draw_uniforms(m, i))
        values.append(res.value)
        above += res.value > mu
    assert above <= 6  # Binomial(40, 0.05) > 6 has probability < 1 %
    assert np.mean(values) > 0.15  # and the corrected audit is not vacuous


def test_global_correction_reduces_to_plain_audit_without_shift() -> None:
    assert eps_bar_ds(0.5) == 0.0 and mu_bar_ds(0.5) == 0.0
    assert math.isinf(eps_bar_ds(0.0)) and math.isinf(mu_bar_ds(0.0))
    # mu_bar = Phi^-1(q(eps_bar)) - Phi^-1(1 - q(eps_bar)), the paper's form.
    for eta in (0.05, 0.2, 0.4):
        q = special.expit(eps_bar_ds(eta))
        assert mu_bar_ds(eta) == pytest.approx(stats.norm.ppf(q) - stats.norm.ppf(1 - q), rel=1e-10)
    m, r, v = 1000, 200, 150
    assert global_gdp_mu_lb(m, r, v, eta=0.5, delta_ds=0.0, beta=0.05) == gdp_mu_lb_one_run(
        m, r, v, 0.05
    )
    assert global_eps_lb(m, r, v, eta=0.5, delta_ds=0.0, beta=0.05) == eps_lb_one_run(
        m, r, v, 0.0, 0.05
    )
    # Subtracting the shift's share: eps and mu composition.
    mu_tot = gdp_mu_lb_one_run(m, r, v, 0.05)
    got = global_gdp_mu_lb(m, r, v, eta=0.3, delta_ds=0.0, beta=0.05)
    assert got == pytest.approx(math.sqrt(max(0.0, mu_tot**2 - mu_bar_ds(0.3) ** 2)))
    got_e = global_eps_lb(m, r, v, eta=0.3, delta_ds=0.0, beta=0.05)
    assert got_e == pytest.approx(max(0.0, eps_lb_one_run(m, r, v, 0.0, 0.05) - eps_bar_ds(0.3)))
    # delta_DS only weakens the bound; absorb tests at beta - m * delta_DS.
    t1 = global_gdp_mu_lb(m, r, v, eta=0.45, delta_ds=1e-3, beta=0.05)
    t0 = global_gdp_mu_lb(m, r, v, eta=0.45, delta_ds=0.0, beta=0.05)
    ab = global_gdp_mu_lb(m, r, v, eta=0.45, delta_ds=1e-5, beta=0.05, method="absorb")
    assert 0 < t1 <= t0 and 0 < ab <= t0
    mu_ab = math.sqrt(gdp_mu_lb_one_run(m, r, v, 0.05 - m * 1e-5) ** 2 - mu_bar_ds(0.45) ** 2)
    assert ab == pytest.approx(mu_ab)
    with pytest.raises(InvalidInputError, match="m \\* delta_ds"):
        global_gdp_mu_lb(m, r, v, eta=0.45, delta_ds=1e-3, beta=0.05, method="absorb")


def test_overlap_eta_is_the_per_class_quantile() -> None:
    pi = np.array([0.1, 0.2, 0.4, 0.6, 0.7, 0.95, 0.5, 0.45])
    mem = np.array([True, True, True, True, False, False, False, False])
    # members: min(pi,1-pi) = .1,.2,.4,.4; non-members: .3,.05,.5,.45
    assert overlap_eta(pi, mem, 0.0) == pytest.approx(0.05)
    assert overlap_eta(pi, mem, 0.25) == pytest.approx(0.2)  # floor(.25*4)=1 -> 2nd smallest


def test_global_correction_is_valid_under_bounded_shift() -> None:
    """Feature with bounded support: pi in [eta, 1-eta] always (delta_DS = 0)."""
    rng = np.random.default_rng(8)
    n_sims, m, beta, mu, c = 60, 1000, 0.05, 0.5, 1.0
    eta = float(special.expit(-c))  # |logit pi| <= c
    above = 0
    for _ in range(n_sims):
        member = rng.random(m) < 0.5
        # Feature z in [-1, 1] with density ratio e^{c z}: sample by rejection.
        z = np.empty(m)
        for i in range(m):
            while True:
                x = rng.uniform(-1, 1)
                sign = 1.0 if member[i] else -1.0
                if rng.random() < math.exp(c * sign * x - c):
                    z[i] = x
                    break
        y = mu * member + rng.standard_normal(m)
        scores = mu * y + c * z
        t = make_guesses(scores, m // 8, m // 8)
        s = np.where(member, 1, -1)
        r, v = int((t != 0).sum()), int(((t != 0) & (t == s)).sum())
        above += global_gdp_mu_lb(m, r, v, eta=eta, delta_ds=0.0, beta=beta) > mu
    assert above <= 8


def test_falsification_test_rejects_a_propensity_model_that_ignores_the_shift() -> None:
    rng = np.random.default_rng(2)
    n_sims, m = 30, 800
    rej_true = rej_flat = 0
    for i in range(n_sims):
        member, _, _a, pi = _shifted_gaussian(rng, m, 0.0, 0.6)
        u = draw_uniforms(m, 100 + i)
        challenger = pi  # a features-only attack as strong as the truth
        rej_true += propensity_model_test(challenger, member, pi, beta=0.05, uniforms=u)["rejected"]
        rej_flat += propensity_model_test(
            challenger, member, np.full(m, 0.5), beta=0.05, uniforms=u
        )["rejected"]
    assert rej_true <= 5
    assert rej_flat >= 0.9 * n_sims
