"""Exact beta (issue 9, item 2): every audit takes the failure probability itself.

``1 - (1 - beta)`` is not ``beta`` in floating point; at ``beta = 7.06e-13`` the rebuilt
value is off by a relative ~1e-4, enough to move a multi-run bound in the 6th digit.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from privaudit.errors import InvalidInputError
from privaudit.stats import fdp_one_run_audit, multi_run_audit, one_run_audit, panoramia_audit
from privaudit.stats._level import resolve_beta
from privaudit.stats.multi_run import multi_run_eps_lb, multi_run_mu_lb

BETA = 7.06e-13


def _cp_lower(k: int, n: int, a: mpmath.mpf) -> mpmath.mpf:
    """Slow oracle: bisection on the regularised incomplete beta in 40-digit arithmetic."""
    if k == 0:
        return mpmath.mpf(0)
    lo, hi = mpmath.mpf(0), mpmath.mpf(1)
    for _ in range(140):
        mid = (lo + hi) / 2
        if mpmath.betainc(k, n - k + 1, 0, mid, regularized=True) < a:
            lo = mid
        else:
            hi = mid
    return lo


def _oracle_eps(tp: int, fn: int, fp: int, tn: int, beta: str) -> float:
    with mpmath.workdps(40):
        a = mpmath.mpf(beta) / 2
        t = _cp_lower(tp, tp + fn, a)
        u = 1 - _cp_lower(tn, fp + tn, a)  # CP_upper(fp) = 1 - CP_lower(tn)
        return float(max(mpmath.log(t / u), mpmath.log((1 - u) / (1 - t))))


@pytest.mark.parametrize("counts", [(990, 10, 10, 990), (1000, 0, 30, 970), (300, 0, 0, 300)])
def test_multi_run_exact_beta_matches_oracle_and_never_exceeds_it(
    counts: tuple[int, int, int, int],
) -> None:
    exact = _oracle_eps(*counts, "7.06e-13")
    got = multi_run_eps_lb(*counts, beta=BETA)
    assert got <= exact  # rounded down, never up
    assert got == pytest.approx(exact, rel=0, abs=1e-9)
    # the convenience spelling rebuilds beta and is visibly off in the 6th-7th digit
    rebuilt = multi_run_eps_lb(*counts, confidence=1.0 - BETA)
    assert abs(rebuilt - exact) > 1e-8


def test_resolve_beta_rules() -> None:
    assert resolve_beta(None, None) == 0.05
    assert resolve_beta(BETA, None) == BETA
    assert resolve_beta(None, 0.9) == pytest.approx(0.1, abs=1e-15)
    assert resolve_beta(0.1, 0.9) == 0.1  # agreeing: beta wins, exactly
    with pytest.raises(InvalidInputError, match="confidence"):
        resolve_beta(0.1, 0.8)
    with pytest.raises(InvalidInputError, match="beta"):
        resolve_beta(0.0, None)


def test_every_audit_takes_beta_exactly() -> None:
    rng = np.random.default_rng(0)
    m = 400
    member = rng.random(m) < 0.5
    scores = rng.standard_normal(m) + 1.5 * member
    base = rng.standard_normal(m)
    for fn, kw in (
        (multi_run_audit, {}),
        (one_run_audit, {}),
        (fdp_one_run_audit, {}),
    ):
        res = fn(scores, member, beta=1e-3, **kw)
        assert res.extra["beta"] == 1e-3
        assert res.confidence == 1.0 - 1e-3
        same = fn(scores, member, confidence=1.0 - 1e-3, **kw)
        assert same.epsilon_lower_bound == pytest.approx(res.epsilon_lower_bound, abs=1e-9)
    p = panoramia_audit(1 / (1 + np.exp(-scores)), 1 / (1 + np.exp(-base)), member, beta=1e-3)
    assert p.extra["beta"] == 1e-3
    # default: beta = 0.05 exactly, not 1 - 0.95
    assert one_run_audit(scores, member).extra["beta"] == 0.05
    assert math.isclose(
        multi_run_mu_lb(90, 10, 10, 90, beta=0.05),
        multi_run_mu_lb(90, 10, 10, 90),
        rel_tol=0,
        abs_tol=0,
    )
