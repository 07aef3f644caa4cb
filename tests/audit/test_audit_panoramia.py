"""PANORAMIA bounds (Kazmi et al. 2024, Section 4; audit-math.md section 4)."""

from __future__ import annotations

import numpy as np
import pytest

from privaudit.errors import InvalidInputError
from privaudit.stats import eps_lb_one_run, panoramia_audit, panoramia_hoeffding_lb, panoramia_lb
from privaudit.stats.panoramia import panoramia_cap


def brute(scores: np.ndarray, member: np.ndarray, beta_test: float, policy: str) -> float:
    m = scores.size
    if policy == "code":
        thr, L, strict = np.linspace(0, 1, 100), 100, True
    elif policy == "quantiles":
        # the top k_j = ceil(j m / 100) scores, a tie block at the boundary left out
        ks = sorted({int(np.ceil(j * m / 100)) for j in range(1, 101)})
        desc = np.sort(scores)[::-1]
        thr = [desc[k] if k < m else -np.inf for k in ks]
        L, strict = len(ks), True
    else:
        thr, L, strict = np.unique(scores), m, False
    best = 0.0
    for t in thr:
        g = scores > t if strict else scores >= t
        r, v = int(g.sum()), int((g & member).sum())
        best = max(best, eps_lb_one_run(m, r, v, 0.0, beta_test / L))
    return best


def make(m: int, sep: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    member = rng.random(m) < 0.5
    logits = rng.standard_normal(m) + sep * member
    return 1 / (1 + np.exp(-logits)), member


@pytest.mark.parametrize("policy", ["code", "all", "quantiles"])
def test_matches_brute_force_threshold_loop(policy: str) -> None:
    rng = np.random.default_rng(0)
    mia, mem = make(600, 2.5, rng)
    base = np.clip(0.5 + 0.1 * rng.standard_normal(600) + 0.05 * mem, 0, 1)
    res = panoramia_audit(mia, base, mem, confidence=0.95, thresholds=policy)
    cpe = brute(mia, mem, 0.025, policy)
    c = brute(base, mem, 0.025, policy)
    assert res.extra["c_plus_epsilon_lower_bound"] == pytest.approx(cpe, abs=1e-9)
    assert res.extra["c_lower_bound"] == pytest.approx(c, abs=1e-9)
    # the sign is the paper's, not the released plotting code's
    assert res.extra["epsilon_tilde"] == pytest.approx(max(0.0, cpe - c), abs=1e-9)
    # eps_tilde is reported under its own name, never as the eps lower bound (issue 28)
    assert res.extra["epsilon_tilde"] > 0
    assert res.epsilon_lower_bound == 0.0 and res.extra["gated"] is False


def test_member_guesses_only() -> None:
    # a perfect "non-member" detector with no member signal: member-only guesses see nothing
    rng = np.random.default_rng(1)
    m = 400
    mem = rng.random(m) < 0.5
    s = np.where(mem, rng.uniform(0.0, 1.0, m), 0.0)  # non-members all at 0, members uniform
    lb, _ = panoramia_lb(s, mem, beta_per_test=0.025, thresholds="all")
    assert lb > 0  # high scores are all members: member guesses are correct
    s2 = np.where(mem, 0.5, rng.uniform(0.0, 1.0, m))  # only *low* scores are informative
    lb2, _ = panoramia_lb(s2, mem, beta_per_test=0.025, thresholds="all")
    lb_flip, _ = panoramia_lb(1 - s2, mem, beta_per_test=0.025, thresholds="all")
    assert lb2 <= lb_flip


def test_hoeffding_is_looser_and_code_grid_is_cheaper_union() -> None:
    rng = np.random.default_rng(2)
    mia, mem = make(2000, 3.0, rng)
    exact, _ = panoramia_lb(mia, mem, beta_per_test=0.025, thresholds="code")
    hoeff = panoramia_hoeffding_lb(mia, mem, beta_per_test=0.025, thresholds="code")
    assert 0 <= hoeff < exact
    all_, info = panoramia_lb(mia, mem, beta_per_test=0.025, thresholds="all")
    assert info["beta_per_threshold"] == pytest.approx(0.025 / 2000)
    assert all_ > 0


def test_quantile_grid_takes_any_real_scores_and_is_label_free() -> None:
    rng = np.random.default_rng(5)
    mia, mem = make(1000, 2.0, rng)
    logits = np.log(mia) - np.log1p(-mia)  # real-valued scores
    lb_q, info = panoramia_lb(logits, mem, beta_per_test=0.025)
    # a monotone transform of the scores gives the same guess sets, hence the same bound
    lb_p, _ = panoramia_lb(mia, mem, beta_per_test=0.025, thresholds="quantiles")
    assert lb_q == lb_p > 0 and info["n_thresholds"] == 100
    # ties at a boundary are left out whole: members listed first cannot gain from order
    tied = np.zeros(200)
    member = np.arange(200) < 100
    lb_t, info_t = panoramia_lb(tied, member, beta_per_test=0.025)
    assert lb_t == 0.0 and info_t["r"] in (0, 200)


def test_quantile_grid_null_violation_rate() -> None:
    """No signal: the quantile-grid bound exceeds 0 in at most beta + 2 SE of 300 runs."""
    rng = np.random.default_rng(11)
    hits = 0
    n = 300
    for _ in range(n):
        mem = rng.random(200) < 0.5
        hits += panoramia_lb(rng.standard_normal(200), mem, beta_per_test=0.05)[0] > 0
    assert hits / n <= 0.05 + 2 * np.sqrt(0.05 * 0.95 / n)


def test_input_errors() -> None:
    with pytest.raises(InvalidInputError, match='"quantiles" or "all"'):
        panoramia_audit([0.1, 2.0], [0.1, 0.2], [1, 0], thresholds="code")
    with pytest.raises(InvalidInputError, match="same length"):
        panoramia_audit([0.1, 0.2], [0.1], [1, 0])
    with pytest.raises(InvalidInputError, match="NaN"):
        panoramia_audit([0.1, 0.2], [np.nan, 0.1], [1, 0])


def test_cap_is_the_bound_of_perfect_scores_and_no_scores_pass_it() -> None:
    rng = np.random.default_rng(3)
    member = rng.random(300) < 0.5
    cap = panoramia_cap(member, beta_per_test=0.025)
    assert cap == pytest.approx(brute(member.astype(float), member, 0.025, "quantiles"))
    for sep in (0.0, 1.0, 3.0, 30.0):
        scores = rng.standard_normal(300) + sep * member
        assert panoramia_lb(scores, member, beta_per_test=0.025)[0] <= cap + 1e-12
    # more slots, a higher cap (the power of the test grows with m)
    assert panoramia_cap(rng.random(3000) < 0.5, beta_per_test=0.025) > cap + 0.5
