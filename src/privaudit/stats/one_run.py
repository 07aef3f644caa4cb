"""One-run auditing of eps-DP and (eps, delta)-DP (Steinke, Nasr, Jagielski, NeurIPS 2023).

Setting (Steinke et al. 2023, Section 3; audit-math.md section 2): ``m`` audit examples
(canaries), each included in the one training run independently with probability 1/2.
The auditor guesses "member" (+1) for the ``k_pos`` highest scores and "non-member" (-1)
for the ``k_neg`` lowest, abstaining on the rest; ``r = k_pos + k_neg`` guesses, ``v`` of
them correct. If the mechanism is eps-DP, the number of correct guesses is
stochastically dominated by ``Binomial(r, q(eps))`` with ``q(eps) = e^eps / (1 + e^eps)``
(Steinke et al. Theorem 3.1); with delta > 0 their p-value adds a delta term in which
``m`` counts all audit examples, not only the guessed ones.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from privaudit._validation import check_positive_int, check_probability, fail
from privaudit.records import AuditResult
from privaudit.stats._level import resolve_beta
from privaudit.stats._tails import (
    binom_log_sf,
    binom_pmf_below,
    first_rejection_boundary,
    log_q,
    logit_cp_lower,
)
from privaudit.stats.parametric import attach_parametric
from privaudit.stats.selection import (
    GuessCounts,
    GuessSelection,
    prepare_scores,
    run_guess_selection,
)

__all__ = ["eps_lb_one_run", "one_run_audit", "one_run_log_p_value"]

# Scan step for (eps, delta) bounds whose p-value is not proven monotone (2 m delta > 1),
# as in the reference implementation (audit-math.md section 2).
_SCAN_STEP = 0.01
_TOL = 1e-10


def check_counts(m: int, r: int, v: int) -> tuple[int, int, int]:
    """Check ``0 <= v <= r <= m`` and ``m >= 1``; return the three as ints."""
    m = check_positive_int(m, "m")
    r = check_positive_int(r, "r", minimum=0)
    v = check_positive_int(v, "v", minimum=0)
    if not v <= r <= m:
        raise fail("v, r, m", "0 <= v <= r <= m", f"v={v}, r={r}, m={m}")
    return m, r, v


def one_run_log_p_value(eps: float, m: int, r: int, v: int, delta: float = 0.0) -> float:
    r"""Log p-value of "the mechanism is (eps, delta)-DP" after ``v`` of ``r`` guesses are correct.

    Steinke, Nasr, Jagielski (NeurIPS 2023), Theorem 3.1 (delta = 0) and their code
    listing ``p_value_DP_audit`` (delta > 0); audit-math.md section 2:

    .. math::

        p(\varepsilon, \delta) = \min\Big(1,\ P[B \ge v] + 2 m \delta \max_{1 \le i \le v}
        \frac{P[v - i \le B < v]}{i}\Big), \qquad B \sim \mathrm{Bin}(r, q(\varepsilon)).

    ``m`` is the number of all audit examples. The tail is computed in log space; the
    delta term needs the pmf only below ``v`` (linear space is enough there).

    Returns
    -------
    float
        ``log p`` (``<= 0``); ``0`` when ``v == 0``.
    """
    m, r, v = check_counts(m, r, v)
    if v == 0:
        return 0.0
    lq, l1q = log_q(eps)
    log_tail = binom_log_sf(v, r, lq, l1q)
    if delta <= 0:
        return min(0.0, log_tail)
    pmf = binom_pmf_below(v, r, lq, l1q)
    # g_i = P[v - i <= B < v] = sum of pmf[v-i .. v-1], i = 1..v.
    g = np.cumsum(pmf[::-1])
    i = np.arange(1, v + 1)
    alpha_star = float(np.max(g / i))
    p = math.exp(log_tail) + 2.0 * m * delta * alpha_star
    if p >= 1.0:
        return 0.0
    if p <= 0.0:
        return -math.inf
    return math.log(p)


def eps_lb_one_run(m: int, r: int, v: int, delta: float = 0.0, beta: float = 0.05) -> float:
    r"""Largest eps rejected by the one-run audit at level ``beta``.

    .. math:: \varepsilon_{lb} = \inf\{\varepsilon \ge 0 : p(\varepsilon, \delta) > \beta\}

    with ``p`` from :func:`one_run_log_p_value` (Steinke, Nasr, Jagielski 2023,
    Theorem 3.1 and the code listing; audit-math.md section 2).

    * ``delta = 0``: the rejected set is ``q(eps) <= CP_lower(v, r, beta)``, so the bound
      is ``logit`` of the one-sided Clopper-Pearson lower bound (with the closed form
      ``logit(beta^(1/r))`` when every guess is correct). The value is certified against
      the exact log-space tail and stepped down until it is rejected.
    * ``delta > 0`` and ``2 m delta <= 1``: ``p`` is increasing in eps (audit-math.md
      section 2, proof there), so bisection on ``[0, eps_lb(delta=0)]``.
    * ``delta > 0`` and ``2 m delta > 1``: ``p`` is not proven monotone; the first
      non-rejected eps is found by a scan on a 0.01 grid, then bisection inside the
      first non-rejected cell (the reference implementation's approach).

    Every branch returns a rejected value (the bound is rounded down), ``>= 0``.

    Parameters
    ----------
    m : int
        Number of audit examples (all of them, including those not guessed).
    r : int
        Number of guesses.
    v : int
        Number of correct guesses.
    delta : float
        The delta of the (eps, delta)-DP hypothesis, in [0, 1).
    beta : float
        Failure probability (1 - confidence), in (0, 1).

    Examples
    --------
    >>> round(eps_lb_one_run(1000, 100, 100, 0.0, 0.05), 6)
    3.492965
    """
    m, r, v = check_counts(m, r, v)
    beta = check_probability(beta, "beta")
    if not 0.0 <= delta < 1.0:
        raise fail("delta", "a value in [0, 1)", delta)
    log_beta = math.log(beta)

    def rejects(e: float) -> bool:
        return one_run_log_p_value(e, m, r, v, delta) <= log_beta

    if v == 0 or not rejects(0.0):
        return 0.0
    eps0 = _eps_lb_pure(r, v, beta)
    if delta == 0.0:
        return eps0
    if math.isinf(eps0):  # pragma: no cover - needs beta below 2^-r, rejected by the tails
        eps0 = 1e3
    # p(., delta) >= p(., 0), so the first non-rejected eps is at most just above eps0.
    hi = eps0 + _SCAN_STEP
    while rejects(hi):  # pragma: no cover - defensive; cannot happen by the inequality
        hi *= 2
    if 2.0 * m * delta <= 1.0:
        return first_rejection_boundary(rejects, 0.0, hi, tol=_TOL)
    lo = 0.0
    x = _SCAN_STEP
    while x < hi and rejects(x):
        lo = x
        x += _SCAN_STEP
    return first_rejection_boundary(rejects, lo, min(x, hi), tol=_TOL)


def _eps_lb_pure(r: int, v: int, beta: float) -> float:
    """eps-DP bound: logit(CP_lower(v, r, beta)), certified and rounded down."""
    lb = float(logit_cp_lower(v, r, beta))
    if not lb > 0:
        return 0.0
    return certify_pure(lb, r, v, math.log(beta))


def certify_pure(lb: float, r: int, v: int, log_beta: float) -> float:
    """Step ``lb`` down until ``P[Bin(r, q(lb)) >= v] <= beta`` holds in log space.

    The closed form comes from special-function inverses; the exact log-space tail is
    the arbiter, so the returned bound is never above the true boundary.
    """
    step = max(1e-13, 1e-13 * lb)
    for _ in range(200):
        lq, l1q = log_q(lb)
        if binom_log_sf(v, r, lq, l1q) <= log_beta:
            return lb
        lb -= step
        step *= 2
        if lb <= 0:
            return 0.0

    # Fall back to bisection from scratch (never reached in tests).
    def rej(e: float) -> bool:  # pragma: no cover
        a, b = log_q(e)
        return binom_log_sf(v, r, a, b) <= log_beta

    return first_rejection_boundary(rej, 0.0, lb, tol=_TOL)  # pragma: no cover


def one_run_audit(
    scores: ArrayLike,
    member: ArrayLike,
    *,
    k_pos: int | None = None,
    k_neg: int | None = None,
    confidence: float | None = None,
    beta: float | None = None,
    delta: float = 0.0,
    parametric: str | None = None,
    selection: str = "union-bound",
    candidates: list[tuple[int, int]] | None = None,
    holdout_fraction: float = 0.5,
    rng: np.random.Generator | int | None = None,
) -> AuditResult:
    r"""One-run (eps, delta)-DP audit of per-example scores (Steinke et al. 2023).

    Each row is one audit example: ``scores`` (higher = more likely member) and
    ``member`` (was it included in the training run). The ``k_pos`` highest scores are
    guessed "member", the ``k_neg`` lowest "non-member" (:func:`~privaudit.stats.selection.make_guesses`);
    ``epsilon_lower_bound = eps_lb_one_run(m, r, v, delta, beta)``, ``beta`` the failure probability.

    Parameters
    ----------
    scores, member : array_like
        One score and one membership bit per audit example.
    k_pos, k_neg : int, optional
        Fixed guess counts. If either is given, the other defaults to 0 and no
        selection is made (``threshold_selection = "fixed"``). If both are None, the
        counts are selected (see ``selection``).
    beta : float, optional
        Failure probability (default 0.05), used exactly.
    confidence : float, optional
        Convenience spelling of ``1 - beta`` (``beta`` wins when both are given).
    delta : float
        delta of the audited (eps, delta)-DP hypothesis.
    parametric : str, optional
        A family of :mod:`privaudit.stats.parametric` (e.g. ``"randomized-response"``):
        adds ``extra["parametric"]``, an **assumption-based** estimate and bound valid only
        inside that family, beside the assumption-free bound. Its bound is computed at the
        level of the assumption-free one (``extra["beta_per_test"]``: ``beta / K`` when the
        guess counts were selected with the union bound), so the selection is paid for.
    selection : {"union-bound", "held-out"}
        How ``(k_pos, k_neg)`` is chosen when not given: ``"union-bound"`` tries every
        candidate on all the data at level ``beta / K`` (Bonferroni over the ``K``
        candidates) and keeps the largest bound; ``"held-out"`` chooses the candidate on a
        random ``holdout_fraction`` of the examples and audits the rest with it at level
        ``beta`` (``m`` = the audited part only).
    candidates : list of (k_pos, k_neg), optional
        Candidate guess counts (for ``m`` examples); default
        :func:`~privaudit.stats.selection.default_candidates`.
    holdout_fraction : float
        Fraction of examples used to choose k in ``"held-out"`` mode.
    rng : Generator or int, optional
        Randomness of the held-out split.

    Returns
    -------
    AuditResult
        ``procedure="one-run"``; ``counts`` holds ``m, r, v, k_pos, k_neg``.
    """
    beta = resolve_beta(beta, confidence)
    if not 0.0 <= delta < 1.0:
        raise fail("delta", "a value in [0, 1)", delta)
    s, mem = prepare_scores(scores, member)

    def bound(c: GuessCounts, level: float) -> float:
        return eps_lb_one_run(c.m, c.r, c.v, delta, level)

    sel: GuessSelection = run_guess_selection(
        s,
        mem,
        bound,
        beta,
        k_pos=k_pos,
        k_neg=k_neg,
        selection=selection,
        candidates=candidates,
        holdout_fraction=holdout_fraction,
        rng=rng,
    )
    notes = [
        "Valid only if each audit example was included independently with probability 1/2 "
        "(Steinke, Nasr, Jagielski 2023, Section 3).",
        *sel.notes,
    ]
    extra: dict[str, object] = {"beta": beta, "beta_per_test": sel.level, **sel.extra}
    if parametric is not None:
        attach_parametric(
            extra,
            notes,
            sel,
            family=parametric,
            selection="fixed" if sel.description == "fixed" else selection,
            bound_name="epsilon_lower_bound",
        )
    return AuditResult(
        procedure="one-run",
        confidence=1.0 - beta,
        delta=float(delta),
        epsilon_lower_bound=sel.value,
        mu_lower_bound=None,
        counts=sel.counts.as_dict(),
        threshold_selection=sel.description,
        extra=extra,
        notes=tuple(notes),
    )
