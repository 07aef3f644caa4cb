r"""Assumption-based (parametric) one-run estimates.

**These numbers are not assumption-free lower bounds.** They are valid only if the audited
mechanism belongs to the assumed parametric family *and* the canaries' scores are
independent given membership; they are reported beside the assumption-free bounds of
:mod:`.one_run` and :mod:`.fdp`, never instead of them.

Idea (after Xiang, Wang, Xiao, Tian, Wang 2025, "Tight privacy audit in one run": model
the order statistics of the *released* guesses under a parametric null; the derivation
below is privaudit's own). The assumption-free one-run tests must hold for every
eps-DP (or mu-GDP) mechanism, so they bound the success rate of a guess by the worst case
``q(eps)`` whatever the guess was. But a guess released because its score is among the
``k`` most extreme of ``m`` is more accurate than an average one. Under a family with
member scores ``P_theta`` and non-member scores ``Q_theta`` (membership Bernoulli(1/2),
i.i.d. canaries), the top ``k_+`` scores are, for large ``m``, those above ``t_+`` with
``(Pbar(t_+) + Qbar(t_+)) / 2 = k_+ / m``, and each is a member with probability

.. math:: p_+(\theta) = \bar P_\theta(t_+) / (\bar P_\theta(t_+) + \bar Q_\theta(t_+));

the bottom ``k_-`` likewise are non-members with probability
``p_-(theta) = Q(t_-) / (P(t_-) + Q(t_-))``. Given a fixed threshold the selected records
are i.i.d. draws of the conditional mixture, so the number of correct guesses is
``V = Bin(k_+, p_+) + Bin(k_-, p_-)`` (independent); with the data-chosen top-k
threshold this holds asymptotically in ``m``. Then

* the **parametric estimate** solves ``E_theta[V] = v`` (method of moments);
* the **parametric lower bound** is ``inf{theta : P_theta[V >= v] > beta}``
  (``p_+, p_-`` increase with ``theta``, so the p-value is monotone).

Families (``theta``): ``"gaussian"`` (``mu``; ``N(mu, 1)`` vs ``N(0, 1)``, the mu-GDP
Gaussian mechanism), ``"laplace"`` (``eps``; ``Lap(1, 1/eps)`` vs ``Lap(0, 1/eps)``, the
eps-DP Laplace mechanism of sensitivity 1), ``"randomized-response"`` (``eps``; one bit,
``P[1] = q(eps)`` vs ``1 - q(eps)``; ties broken at random, so ``p_+ = q(eps)`` for
``k_+ <= m/2``).

Where it holds and where it breaks (tests and ``benchmarks/bench_tightness.py``):

* Gaussian family: any mu-GDP mechanism with *independent* canaries has a ROC below
  ``G_mu``'s, so its top-k precision is at most the Gaussian one at the same ``mu`` and
  the Gaussian lower bound stays valid asymptotically (extremality of ``G_mu``).
* Randomized-response family: ``p_+ = q(eps)`` (for ``k_+, k_- <= m/2``), the worst case
  of every eps-DP mechanism, so its lower bound *is* the assumption-free one: Steinke et
  al.'s eps-DP (``delta = 0``) bound on the same counts at the same level (Steinke, Nasr,
  Jagielski 2023, Theorem 3.1; when no guess abstained for a tie at the boundary, else
  the parametric one is the lower). In an audit whose guess counts were selected with the union
  bound that level is ``beta / K`` for both (below), so it equals the reported
  ``epsilon_lower_bound`` of :func:`~privaudit.stats.one_run.one_run_audit` at
  ``delta = 0``; only its point estimate ``logit(v / r)`` is tighter.
* Laplace family: it breaks when mis-specified -- on a randomized-response mechanism with
  the same eps and every canary guessed (``k = m/2`` per side) the Laplace model expects
  precision 0.697 where 0.731 is delivered (eps = 1) and puts eps near 1.24: with
  ``m = 10^4`` its lower bound exceeds the truth in most audits.
* Canaries that share randomness within the run (not independent given membership) make
  the count over-dispersed and the binomial null too narrow.
* The point estimate is not a bound in any family (above the truth about half the time).

Selected guess counts (audit-math.md section 6, item 1). When an audit chooses
``(k_+, k_-)`` among ``K`` candidates on the audit labels (``selection="union-bound"`` of
:mod:`.selection`), the parametric test of the chosen counts is one of ``K`` tests, and
only their union has probability ``beta``: the lower bound is computed at ``beta / K``, the
level of the assumption-free bound (at ``beta`` it exceeded the true ``mu`` in 14% of
Gaussian ``mu = 0.5`` audits with ``m = 1000``, ``K = 7``). With ``"held-out"`` selection
the counts come from the other part of the examples and the bound is at ``beta``. The point
estimate pays nothing for a selection on the labels, and is biased upward by it.

The same model plans an audit before it runs: :func:`privaudit.stats.audit_plan.plan_one_run_audit`
fixes the guess counts from the expected leakage.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import special

from privaudit._validation import check_choice, check_positive_int, check_probability, fail
from privaudit.stats.selection import GuessSelection

__all__ = [
    "PARAMETRIC_FAMILIES",
    "ParametricEstimate",
    "attach_parametric",
    "guess_success_probabilities",
    "parametric_extra",
    "parametric_one_run",
]

PARAMETRIC_FAMILIES = ("gaussian", "laplace", "randomized-response")

# How an audit's guess counts were chosen (:func:`parametric_extra`).
_SELECTION_MODES = ("fixed", "union-bound", "held-out")

_CAP = 50.0


def _laplace_sf(t: float, loc: float, b: float) -> float:
    from scipy import stats  # here: scipy.stats costs ~0.4 s to import, every command's

    return float(stats.laplace.sf(t, loc=loc, scale=b))


def _tails(family: str, theta: float) -> tuple[Callable[[float], float], Callable[[float], float]]:
    """Survival functions (member, non-member) of the family's score at ``theta``."""
    if family == "gaussian":
        return (lambda t: float(special.ndtr(theta - t))), (lambda t: float(special.ndtr(-t)))
    b = 1.0 / max(theta, 1e-12)
    return (lambda t: _laplace_sf(t, 1.0, b)), (lambda t: _laplace_sf(t, 0.0, b))


def guess_success_probabilities(
    family: str, theta: float, m: int, k_pos: int, k_neg: int
) -> tuple[float, float]:
    """``(p_+, p_-)``: success probability of a released "member" / "non-member" guess.

    See the module docstring; ``theta`` is ``mu`` (gaussian) or ``eps`` (laplace,
    randomized-response). At ``theta = 0`` both are 1/2.
    """
    check_choice(family, "family", PARAMETRIC_FAMILIES)
    if not theta >= 0.0:
        raise fail("theta", "a number >= 0", theta)
    if theta == 0.0:
        return 0.5, 0.5
    if family == "randomized-response":
        q = float(special.expit(theta))

        def rr(k: int) -> float:
            if k == 0:
                return 0.5
            half = m / 2.0
            return (min(k, half) * q + max(0.0, k - half) * (1.0 - q)) / k

        return rr(k_pos), rr(k_neg)
    sf_p, sf_q = _tails(family, theta)
    from scipy import optimize  # here: scipy.optimize costs ~0.2 s to import, every command's

    def top(k: int, sf_mem: Callable[[float], float], sf_non: Callable[[float], float]) -> float:
        if k == 0:
            return 0.5
        frac = k / m
        if frac >= 1.0:
            return 0.5
        g = lambda t: 0.5 * (sf_mem(t) + sf_non(t)) - frac  # noqa: E731
        lo, hi = -60.0, 60.0 + (theta if family == "gaussian" else 0.0)
        t = optimize.brentq(g, lo, hi, xtol=1e-12)
        a, b = sf_mem(t), sf_non(t)
        return a / (a + b) if a + b > 0 else 0.5

    p_plus = top(k_pos, sf_p, sf_q)
    # bottom k_-: by symmetry of both families (member/non-member mirror around theta/2
    # for gaussian, 1/2 for laplace), the non-member rate of the lowest k equals p_+(k)
    p_minus = p_plus if k_neg == k_pos else top(k_neg, sf_p, sf_q)
    return p_plus, p_minus


def _sum_binom_sf(v: int, k1: int, p1: float, k2: int, p2: float) -> float:
    """``P[Bin(k1, p1) + Bin(k2, p2) >= v]`` by convolution."""
    from scipy import stats  # here, as in _laplace_sf

    a = stats.binom.pmf(np.arange(k1 + 1), k1, p1)
    b = stats.binom.pmf(np.arange(k2 + 1), k2, p2)
    pmf = np.convolve(a, b)
    return float(min(1.0, pmf[v:].sum())) if v <= k1 + k2 else 0.0


@dataclass(frozen=True)
class ParametricEstimate:
    """An assumption-based one-run estimate and lower bound (:func:`parametric_one_run`).

    ``parameter`` is ``"mu"`` (gaussian) or ``"epsilon"``; ``estimate`` solves
    ``E[V] = v``; ``lower_bound`` is the parametric test's first non-rejected value at
    ``beta``. ``assumption`` says what must hold for either to mean anything.
    """

    family: str
    parameter: str
    estimate: float
    lower_bound: float
    beta: float
    m: int
    k_pos: int
    k_neg: int
    v: int
    assumption: str

    def to_dict(self) -> dict[str, object]:
        """JSON-compatible dict."""
        return dict(self.__dict__)


def _solve_increasing(f: Callable[[float], float], target: float) -> float:
    """Smallest theta >= 0 with f(theta) >= target (f increasing); cap -> inf."""
    if f(0.0) >= target:
        return 0.0
    hi = 1.0
    while f(hi) < target:
        hi *= 2.0
        if hi > _CAP:
            return math.inf
    lo = 0.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if f(mid) >= target:
            hi = mid
        else:
            lo = mid
    return lo


def parametric_one_run(
    m: int,
    k_pos: int,
    k_neg: int,
    v: int,
    *,
    family: str,
    beta: float = 0.05,
) -> ParametricEstimate:
    """Assumption-based estimate and lower bound from one-run counts (module docstring).

    ``m`` canaries (membership Bernoulli(1/2)), ``k_pos`` "member" guesses on the highest
    scores, ``k_neg`` "non-member" guesses on the lowest, ``v`` correct. Valid only if the
    mechanism is in ``family`` and the canaries are independent given membership; the
    result's ``assumption`` field says so, and reports must print it.
    """
    check_choice(family, "family", PARAMETRIC_FAMILIES)
    m = check_positive_int(m, "m")
    k_pos = check_positive_int(k_pos, "k_pos", minimum=0)
    k_neg = check_positive_int(k_neg, "k_neg", minimum=0)
    if k_pos + k_neg > m or k_pos + k_neg == 0:
        raise fail("k_pos + k_neg", f"between 1 and m = {m}", k_pos + k_neg)
    v = check_positive_int(v, "v", minimum=0)
    if v > k_pos + k_neg:
        raise fail("v", f"at most k_pos + k_neg = {k_pos + k_neg}", v)
    beta = check_probability(beta, "beta")

    def mean(theta: float) -> float:
        pp, pm = guess_success_probabilities(family, theta, m, k_pos, k_neg)
        return k_pos * pp + k_neg * pm

    def pval(theta: float) -> float:
        pp, pm = guess_success_probabilities(family, theta, m, k_pos, k_neg)
        return _sum_binom_sf(v, k_pos, pp, k_neg, pm)

    estimate = _solve_increasing(mean, float(v))
    # rejected while pval <= beta; first non-rejected = smallest theta with pval > beta
    lower = _first_non_rejected(pval, beta)
    parameter = "mu" if family == "gaussian" else "epsilon"
    return ParametricEstimate(
        family=family,
        parameter=parameter,
        estimate=estimate,
        lower_bound=lower,
        beta=beta,
        m=m,
        k_pos=k_pos,
        k_neg=k_neg,
        v=v,
        assumption=(
            f"ASSUMPTION-BASED: valid only if the mechanism is a {family} mechanism (its "
            "per-canary scores follow the family) and the canaries are independent given "
            "membership; not a worst-case lower bound. The estimate is a point estimate "
            "(exceeds the truth about half the time)."
        ),
    )


def parametric_extra(
    m: int,
    k_pos: int,
    k_neg: int,
    v: int,
    *,
    family: str,
    beta: float,
    selection: str = "fixed",
) -> dict[str, object]:
    """The assumption-based figures an audit result carries beside its bound (``extra``).

    ``beta`` is the level of the test of these counts: the audit's ``beta`` for counts
    fixed in advance or chosen on held-out examples, ``beta / K`` when they were chosen
    among ``K`` candidates on the audit labels (module docstring, "Selected guess
    counts"). ``selection`` (``"fixed"``, ``"union-bound"`` or ``"held-out"``) says how
    they were chosen; the note says what that costs.
    """
    check_choice(selection, "selection", _SELECTION_MODES)
    p = parametric_one_run(m, k_pos, k_neg, v, family=family, beta=beta)
    note = p.assumption
    if selection == "union-bound":
        note += (
            " The guess counts were chosen on these labels among several candidates: the "
            f"lower bound pays for it (tested at beta / K = {p.beta:.3g}, the level of the "
            "assumption-free bound), the estimate does not and is biased upward; fix them "
            "in advance (plan_one_run_audit)."
        )
    elif selection == "held-out":
        note += (
            " The guess counts were chosen on the held-out examples, independent of the "
            f"audited ones: the estimate and the lower bound (at beta = {p.beta:.3g}) use "
            "the audited examples only."
        )
    return {
        "family": family,
        "parameter": p.parameter,
        "estimate": p.estimate,
        "lower_bound": p.lower_bound,
        "beta": p.beta,
        "assumption": note,
    }


def attach_parametric(
    extra: dict[str, object],
    notes: list[str],
    sel: GuessSelection,
    *,
    family: str,
    selection: str,
    bound_name: str,
) -> None:
    """Add :func:`parametric_extra` of a guess selection and its warning note.

    The parametric lower bound is computed at ``sel.level``, the level at which the
    assumption-free bound of the same counts was computed (``beta / K`` under the union
    bound over ``K`` candidates, else ``beta``): testing the selected counts at the full
    ``beta`` would ignore the selection. ``selection`` is ``"fixed"`` when the counts were
    given, else the audit's selection mode.
    """
    counts = sel.counts
    extra["parametric"] = parametric_extra(
        counts.m,
        counts.k_pos,
        counts.k_neg,
        counts.v,
        family=family,
        beta=sel.level,
        selection=selection,
    )
    notes.append(
        "extra.parametric is ASSUMPTION-BASED (valid only if the mechanism is in the "
        f"{family} family); {bound_name} is not."
    )


def _first_non_rejected(pval: Callable[[float], float], beta: float) -> float:
    """``inf{theta >= 0 : pval(theta) > beta}`` for increasing ``pval``, rounded down."""
    if pval(0.0) > beta:
        return 0.0
    lo, hi = 0.0, 1.0
    while pval(hi) <= beta:
        lo, hi = hi, 2.0 * hi
        if hi > _CAP:
            return math.inf
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if pval(mid) <= beta:
            lo = mid
        else:
            hi = mid
    return lo
