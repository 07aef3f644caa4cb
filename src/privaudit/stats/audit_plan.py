"""Planning a one-run audit: the guess counts that maximise the expected bound.

A power analysis under the parametric model of :mod:`privaudit.stats.parametric` (after
Xiang et al. 2025): with an expected leakage ``theta``, the number of correct guesses is
``V = Bin(k_+, p_+) + Bin(k_-, p_-)``, and the expected assumption-free bound of
:mod:`.one_run` (Steinke et al. 2023) or :mod:`.fdp` (Mahloujifar et al. 2024) follows
for every candidate ``(k_+, k_-)``. Fixing the counts this way, before looking at the
data, avoids the Bonferroni cost of choosing them on the audit labels.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from privaudit._validation import check_choice, check_positive_int, check_probability, fail
from privaudit.stats.fdp import gdp_mu_lb_one_run
from privaudit.stats.one_run import eps_lb_one_run
from privaudit.stats.parametric import _CAP, PARAMETRIC_FAMILIES, guess_success_probabilities

__all__ = ["AuditPlan", "plan_one_run_audit"]


@dataclass(frozen=True)
class AuditPlan:
    """The guess count that maximises the expected assumption-free bound (a power analysis).

    ``k_pos``/``k_neg`` is the plan; ``table`` lists ``(k_pos, k_neg, expected bound)`` for
    every candidate considered.
    """

    family: str
    theta: float
    m: int
    k_pos: int
    k_neg: int
    expected_bound: float
    bound: str
    table: tuple[tuple[int, int, float], ...]


def plan_one_run_audit(
    m: int,
    *,
    family: str,
    theta: float,
    beta: float = 0.05,
    bound: str | None = None,
    candidates: Sequence[tuple[int, int]] | None = None,
    n_quantiles: int = 9,
) -> AuditPlan:
    """Choose ``(k_pos, k_neg)`` *before* the audit from a planned ``m`` and expected leakage.

    Under the parametric model of :mod:`.parametric` with the expected ``theta``, the
    number of correct guesses is ``V = Bin(k_+, p_+) + Bin(k_-, p_-)``; the expected
    assumption-free bound ``E[bound(m, k_+ + k_-, V, beta)]`` is approximated by the mean
    of the bound at ``n_quantiles`` equally spaced quantiles of ``V``. ``bound`` is
    ``"eps"`` (Steinke et al. one-run, delta = 0) or ``"mu"`` (one-run f-DP); default
    ``"mu"`` for the gaussian family and ``"eps"`` otherwise. Candidates default to
    symmetric ``k_+ = k_-`` on a grid from ``m/200`` to ``m/2`` and to member-only guesses.
    Fixing ``k`` this way, before looking at the data, avoids the Bonferroni cost of
    choosing it on the audit labels.
    """
    check_choice(family, "family", PARAMETRIC_FAMILIES)
    m = check_positive_int(m, "m", minimum=2)
    beta = check_probability(beta, "beta")
    if not theta > 0.0:
        raise fail("theta", "an expected leakage > 0", theta)
    kind = bound if bound is not None else ("mu" if family == "gaussian" else "eps")
    check_choice(kind, "bound", ("eps", "mu"))
    n_quantiles = check_positive_int(n_quantiles, "n_quantiles")
    if candidates is None:
        fracs = (0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5)
        cands: list[tuple[int, int]] = []
        for f in fracs:
            k = max(1, round(f * m / 2))
            cands.append((k, k))
            cands.append((max(1, round(f * m)), 0))
        cands = list(dict.fromkeys(c for c in cands if 0 < c[0] + c[1] <= m))
    else:
        cands = [(int(a), int(b)) for a, b in candidates]
    qs = (np.arange(n_quantiles) + 0.5) / n_quantiles
    table: list[tuple[int, int, float]] = []
    for kp, kn in cands:
        pp, pm = guess_success_probabilities(family, theta, m, kp, kn)
        a = stats.binom.pmf(np.arange(kp + 1), kp, pp)
        b = stats.binom.pmf(np.arange(kn + 1), kn, pm)
        cdf = np.cumsum(np.convolve(a, b))
        vs = np.searchsorted(cdf, qs).clip(0, kp + kn)
        r = kp + kn
        vals = [
            (
                gdp_mu_lb_one_run(m, r, int(v), beta)
                if kind == "mu"
                else eps_lb_one_run(m, r, int(v), 0.0, beta)
            )
            for v in vs
        ]
        finite = [x if math.isfinite(x) else _CAP for x in vals]
        table.append((kp, kn, float(np.mean(finite))))
    best = max(table, key=lambda row: row[2])
    return AuditPlan(
        family=family,
        theta=float(theta),
        m=m,
        k_pos=best[0],
        k_neg=best[1],
        expected_bound=best[2],
        bound=kind,
        table=tuple(table),
    )
