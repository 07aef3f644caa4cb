"""One-run auditing of f-DP and mu-GDP (Mahloujifar, Melis, Chaudhuri 2024).

"Auditing f-Differential Privacy in One Run" (arXiv 2410.22235; ICML 2025). The paper
body was not available to us; the recursion below is the one both published
implementations of the paper's ``audit_rh_with_cap`` compute (Meta PrivacyGuard and
Google jax_privacy), with the constraint system it solves re-derived in
audit-math.md section 3 (labelled there RECONSTRUCTED proof / CONFIRMED-BY-CODE
algorithm). Same game as the one-run audit of Steinke et al. (2023): ``m`` canaries
with independent inclusion bits, ``r`` guesses, ``v`` correct.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from statistics import NormalDist

import numpy as np
from numpy.typing import ArrayLike

from privaudit._validation import check_choice, check_probability, fail
from privaudit.records import AuditResult
from privaudit.stats._level import resolve_beta
from privaudit.stats._tails import first_rejection_boundary, gdp_epsilon
from privaudit.stats.one_run import check_counts
from privaudit.stats.parametric import attach_parametric
from privaudit.stats.selection import (
    GuessCounts,
    GuessSelection,
    prepare_scores,
    run_guess_selection,
)

__all__ = [
    "eps_delta_fbar_inverse",
    "fdp_eps_lb_one_run",
    "fdp_one_run_audit",
    "fdp_p_value",
    "fdp_rejects",
    "gdp_fbar_inverse",
    "gdp_mu_lb_one_run",
    "largest_rejected",
    "mu_to_epsilon",
]

_PHI_INV = NormalDist().inv_cdf
_SQRT1_2 = 1.0 / math.sqrt(2.0)
_TOL = 1e-9
_CAP = 1e3  # parameters above this are reported as +inf (every guess correct, tiny beta)

FbarInverse = Callable[[float], float]


def _phi(x: float) -> float:
    return 0.5 * math.erfc(-x * _SQRT1_2)


def gdp_fbar_inverse(mu: float) -> FbarInverse:
    r"""``y -> fbar^{-1}(y) = Phi(Phi^{-1}(y) - mu)`` for the Gaussian trade-off ``G_mu``.

    With ``fbar = 1 - f`` and ``G_mu(alpha) = Phi(Phi^{-1}(1 - alpha) - mu)``
    (Dong, Roth, Su 2022; audit-math.md section 0).
    """

    def finv(y: float) -> float:
        if y <= 0.0:
            return 0.0
        if y >= 1.0:
            return 1.0
        return _phi(_PHI_INV(y) - mu)

    return finv


def eps_delta_fbar_inverse(eps: float, delta: float) -> FbarInverse:
    r"""``fbar^{-1}`` of the (eps, delta)-DP trade-off curve.

    ``f_{eps,delta}(alpha) = max(0, 1 - delta - e^eps alpha, e^-eps (1 - delta - alpha))``
    gives ``fbar^{-1}(y) = max(0, e^-eps (y - delta), 1 - delta - e^eps (1 - y))``
    (Dong, Roth, Su 2022; audit-math.md section 0).
    """
    e_neg = math.exp(-eps)
    e_pos = math.exp(eps) if eps < 700 else math.inf

    def finv(y: float) -> float:
        a = e_neg * (y - delta)
        b = 1.0 - delta - e_pos * (1.0 - y) if y < 1.0 else 1.0 - delta
        return max(0.0, a, b)

    return finv


def _total_mass(m: int, r: int, v: int, finv: FbarInverse, tau: float) -> float:
    """The recursion ``audit_rh_with_cap`` (audit-math.md section 3).

    Starting from all tail mass ``tau`` at ``W = v``, it adds, level by level, the least
    mass a distribution of the number of correct guesses consistent with
    ``R_{i+1} <= fbar(H_i)`` needs. Stops early once the result exceeds ``r/m`` (then
    the hypothesis is rejected) or once it is stationary.
    """
    cap = r / m
    rr = tau * v / m
    hh = tau * (r - v) / m
    for i in range(v - 1, -1, -1):
        h_new = max(hh, finv(rr))
        if h_new == hh:
            break
        rr += i / (r - i) * (h_new - hh)
        hh = h_new
        if rr + hh > cap:
            break
    return rr + hh


def fdp_rejects(m: int, r: int, v: int, finv: FbarInverse, tau: float) -> bool:
    r"""Does observing ``v`` correct of ``r`` guesses reject "f-DP" at level ``tau``?

    Mahloujifar, Melis, Chaudhuri (2024), ``audit_rh_with_cap``; audit-math.md section 3.
    With ``R_i = E[(W/m) 1{W >= i}]`` and ``H_i = E[((r - W)/m) 1{W >= i}]``, f-DP
    implies ``R_{i+1} <= fbar(H_i)`` for ``i = 0..r-1`` and ``R_0 + H_0 = r/m``. If
    ``P[W >= v] >= tau``, the least total mass consistent with these constraints is
    computed by the backward recursion

    .. math::

        H \leftarrow \max(H, \bar f^{-1}(R)), \qquad
        R \leftarrow R + \frac{i}{r - i} \Delta H, \qquad i = v-1, \dots, 0

    from ``R = tau v / m``, ``H = tau (r - v) / m``; rejection iff it exceeds ``r/m``.
    """
    if v < 1:
        return False
    return _total_mass(m, r, v, finv, tau) > r / m


def fdp_p_value(m: int, r: int, v: int, finv: FbarInverse) -> float:
    r"""p-value ``inf{tau : rejects(tau)}`` of an f-DP hypothesis (bisection on log tau).

    Equals ``sup_H P[W >= v]`` over distributions of the number of correct guesses
    allowed by the constraints (audit-math.md section 3). Rounded **up** (returns a
    ``tau`` that rejects, or 1), so it is conservative.
    """
    m, r, v = check_counts(m, r, v)
    if v == 0 or not fdp_rejects(m, r, v, finv, 1.0):
        return 1.0
    lo, hi = -1.0, 0.0  # log10 tau; hi rejects
    while fdp_rejects(m, r, v, finv, 10.0**lo):
        hi = lo
        lo *= 2
        if lo < -300:
            return 10.0**hi
    while hi - lo > 1e-10:
        mid = 0.5 * (lo + hi)
        if fdp_rejects(m, r, v, finv, 10.0**mid):
            hi = mid
        else:
            lo = mid
    return 10.0**hi


def largest_rejected(rejects: Callable[[float], bool]) -> float:
    """``sup{x >= 0 : rejects(x)}`` for a rejection region ``[0, x*)``; rounded down."""
    if not rejects(0.0):
        return 0.0
    lo, hi = 0.0, 1.0
    while rejects(hi):
        lo, hi = hi, 2.0 * hi
        if hi > _CAP:
            return math.inf
    return first_rejection_boundary(rejects, lo, hi, tol=_TOL)


def gdp_mu_lb_one_run(m: int, r: int, v: int, beta: float = 0.05) -> float:
    r"""mu-GDP lower bound of the one-run f-DP audit (Mahloujifar, Melis, Chaudhuri 2024).

    .. math:: \mu_{lb} = \sup\{\mu \ge 0 : \text{rejects}(m, r, v, G_\mu, \beta)\}

    with :func:`fdp_rejects` and ``fbar^{-1}(y) = Phi(Phi^{-1}(y) - mu)``. Rejection is
    monotone in mu (audit-math.md section 3, summation-by-parts argument), so bisection
    is valid; the result is the rejected end of the final bracket (rounded down, to
    1e-9). ``m`` counts all canaries.

    Examples
    --------
    >>> round(gdp_mu_lb_one_run(1000, 100, 100, 0.05), 5)
    1.22553
    """
    m, r, v = check_counts(m, r, v)
    beta = check_probability(beta, "beta")
    if v == 0:
        return 0.0
    return largest_rejected(lambda mu: fdp_rejects(m, r, v, gdp_fbar_inverse(mu), beta))


def fdp_eps_lb_one_run(m: int, r: int, v: int, delta: float = 0.0, beta: float = 0.05) -> float:
    r"""(eps, delta)-DP lower bound from the f-DP recursion with the curve ``f_{eps,delta}``.

    .. math:: \varepsilon_{lb} = \sup\{\varepsilon \ge 0 : \text{rejects}(m, r, v, f_{\varepsilon,\delta}, \beta)\}

    A valid (eps, delta) bound without any Gaussian assumption (audit-math.md section 3,
    "To audit (eps, delta)-DP itself with this method"); ``fbar^{-1}`` of
    ``f_{eps,delta}`` decreases in eps, so rejection is monotone and bisection is valid.
    For pure DP it is never tighter than Steinke et al.'s binomial test.
    """
    m, r, v = check_counts(m, r, v)
    beta = check_probability(beta, "beta")
    if not 0.0 <= delta < 1.0:
        raise fail("delta", "a value in [0, 1)", delta)
    if v == 0:
        return 0.0
    return largest_rejected(lambda e: fdp_rejects(m, r, v, eps_delta_fbar_inverse(e, delta), beta))


def mu_to_epsilon(mu: float, delta: float) -> float:
    r"""The eps of a mu-GDP mechanism at ``delta`` (Dong, Roth, Su 2022, Cor. 2.13).

    **Gaussian-shape assumption**: reporting ``eps(mu_lb, delta)`` as an (eps, delta)
    lower bound is valid only if the audited mechanism's trade-off curve is Gaussian
    (audit-math.md section 3); it is a convention of the published implementations, not
    a general (eps, delta) lower bound. Rounded down.
    """
    return gdp_epsilon(mu, delta)


def fdp_one_run_audit(
    scores: ArrayLike,
    member: ArrayLike,
    *,
    k_pos: int | None = None,
    k_neg: int | None = None,
    confidence: float | None = None,
    beta: float | None = None,
    delta: float = 0.0,
    epsilon: str = "fdp",
    parametric: str | None = None,
    selection: str = "union-bound",
    candidates: list[tuple[int, int]] | None = None,
    holdout_fraction: float = 0.5,
    rng: np.random.Generator | int | None = None,
) -> AuditResult:
    r"""One-run f-DP audit: a mu-GDP lower bound, and an (eps, delta) bound.

    Guesses as in :func:`privaudit.stats.one_run.one_run_audit`; the guess counts are
    selected on ``mu`` (union bound over the candidates, or held-out), then

    * ``mu_lower_bound = gdp_mu_lb_one_run(m, r, v, beta_sel)``;
    * ``epsilon="fdp"`` (default): ``epsilon_lower_bound = fdp_eps_lb_one_run(m, r, v,
      delta, beta_sel)``, valid for every mechanism;
    * ``epsilon="gaussian"``: ``epsilon_lower_bound = eps(mu_lb, delta)`` of the Gaussian
      mechanism (Dong, Roth, Su 2022, Cor. 2.13). Valid **only** under a Gaussian
      trade-off curve; a note says so. With ``delta = 0`` it is infinite whenever
      ``mu_lb > 0``, so it requires ``delta > 0``.

    ``extra["epsilon_if_gaussian"]`` always holds the Gaussian-shape value (delta > 0)
    and ``extra["epsilon_fdp"]`` the assumption-free one.

    ``beta`` (default 0.05) is the failure probability, used exactly; ``confidence =
    1 - beta`` is accepted as a convenience (``beta`` wins).

    ``parametric="gaussian"`` (or another family of :mod:`.parametric`) adds
    ``extra["parametric"]``: an **assumption-based** estimate and bound of mu (or eps),
    valid only inside that family (:func:`privaudit.stats.parametric.parametric_one_run`),
    its bound computed at ``beta_sel`` like the others (the selection is paid for); the
    assumption-free ``mu_lower_bound`` is unchanged.
    """
    beta = resolve_beta(beta, confidence)
    _check_epsilon_and_delta(epsilon, delta)
    s, mem = prepare_scores(scores, member)
    sel = run_guess_selection(
        s,
        mem,
        _mu_bound,
        beta,
        k_pos=k_pos,
        k_neg=k_neg,
        selection=selection,
        candidates=candidates,
        holdout_fraction=holdout_fraction,
        rng=rng,
    )
    c = sel.counts
    eps_fdp = fdp_eps_lb_one_run(c.m, c.r, c.v, delta, sel.level)
    extra, notes = _fdp_extra_and_notes(beta, sel, eps_fdp)
    if parametric is not None:
        _attach_parametric_estimate(extra, notes, sel, family=parametric, selection=selection)
    eps_gauss = mu_to_epsilon(sel.value, delta) if delta > 0 else None
    if eps_gauss is not None:
        extra["epsilon_if_gaussian"] = eps_gauss
    headline, headline_note = _headline_epsilon(epsilon, eps_fdp, eps_gauss)
    notes.append(headline_note)
    return AuditResult(
        procedure="fdp-one-run",
        confidence=1.0 - beta,
        delta=float(delta),
        epsilon_lower_bound=headline,
        mu_lower_bound=sel.value,
        counts=c.as_dict(),
        threshold_selection=sel.description,
        extra=extra,
        notes=tuple(notes),
    )


def _check_epsilon_and_delta(epsilon: str, delta: float) -> None:
    """``delta`` in [0, 1), ``epsilon`` one of ``"fdp"`` / ``"gaussian"``, and ``delta > 0``
    for a Gaussian-shape epsilon (infinite at ``delta = 0`` whenever ``mu_lb > 0``)."""
    if not 0.0 <= delta < 1.0:
        raise fail("delta", "a value in [0, 1)", delta)
    check_choice(epsilon, "epsilon", ("fdp", "gaussian"))
    if epsilon == "gaussian" and delta == 0.0:
        raise fail("delta", "delta > 0 for a Gaussian-shape epsilon", delta)


def _mu_bound(c: GuessCounts, level: float) -> float:
    """What the guess counts are selected on: the mu-GDP lower bound at ``level``."""
    return gdp_mu_lb_one_run(c.m, c.r, c.v, level)


def _fdp_extra_and_notes(
    beta: float, sel: GuessSelection, eps_fdp: float
) -> tuple[dict[str, object], list[str]]:
    """``extra`` (beta, the level of the reported test, the assumption-free eps, the
    selection's figures) and the notes of every f-DP one-run audit (validity, source)."""
    extra: dict[str, object] = {
        "beta": beta,
        "beta_per_test": sel.level,
        "epsilon_fdp": eps_fdp,
        **sel.extra,
    }
    notes = [
        "Valid only if each audit example was included independently with probability 1/2.",
        "Recursion of Mahloujifar, Melis, Chaudhuri (2024) as implemented by its published "
        "code; the paper text was not available (constraints re-derived).",
        *sel.notes,
    ]
    return extra, notes


def _attach_parametric_estimate(
    extra: dict[str, object],
    notes: list[str],
    sel: GuessSelection,
    *,
    family: str,
    selection: str,
) -> None:
    """``extra["parametric"]``: the assumption-based estimate and bound of ``family`` on the
    selected counts, and the note that it holds only inside that family. The bound is at the
    selection's level ``sel.level`` (``beta / K`` under the union bound over ``K``
    candidates), as ``mu_lower_bound`` is."""
    attach_parametric(
        extra,
        notes,
        sel,
        family=family,
        selection="fixed" if sel.description == "fixed" else selection,
        bound_name="the lower bounds",
    )


#: The note of ``epsilon="gaussian"``: the headline assumes a Gaussian trade-off curve.
_GAUSSIAN_HEADLINE_NOTE = (
    "epsilon_lower_bound = eps(mu_lb, delta) assumes a Gaussian trade-off curve "
    "(Gaussian-shape assumption); it is not a general (eps, delta) lower bound."
)

#: The note of ``epsilon="fdp"``: the headline is assumption-free, the Gaussian value is not.
_FDP_HEADLINE_NOTE = (
    "epsilon_lower_bound audits f_{eps,delta} directly (no Gaussian assumption); "
    "extra.epsilon_if_gaussian = eps(mu_lb, delta) holds only under a Gaussian "
    "trade-off curve."
)


def _headline_epsilon(epsilon: str, eps_fdp: float, eps_gauss: float | None) -> tuple[float, str]:
    """The reported ``epsilon_lower_bound`` of the ``epsilon`` choice and the note saying what
    it assumes (the Gaussian-shape value is infinite without ``delta > 0``)."""
    if epsilon == "gaussian":
        return (eps_gauss if eps_gauss is not None else math.inf), _GAUSSIAN_HEADLINE_NOTE
    return eps_fdp, _FDP_HEADLINE_NOTE
