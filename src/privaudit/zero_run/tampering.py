"""Pointwise (conditional) Zero-Run correction by tampering ("Privacy Auditing with Zero (0)
Training Run", 2026, Section 5, Theorem 5.1; audit-math.md section 5.2).

Setting: ``m`` audit pairs ``(X_i, S_i)``, i.i.d. (paper Assumption 3.2), with known
membership ``S_i`` and the propensity ``pi(x) = P(S = +1 | X = x)`` (Definition 3.1; it
includes the class prior). The distribution-shift privacy loss of example ``i`` is

.. math:: \\varepsilon_{DS}(X_i) = |\\log(\\pi_i / (1 - \\pi_i))|.

A membership guess ``T_i`` is *tampered*: kept with probability ``b_i`` (a coin
``B_i = 1{U_i < b_i}`` with ``U_i`` uniform, independent of everything else), and a guess
removed by tampering counts as a failure. The posterior odds of ``S_i`` given ``X_i`` and the
output of an eps-DP mechanism are at most ``e^{eps + eps_DS(X_i)}``, so a guess is correct
with probability at most ``q(eps + eps_DS)``; choosing ``b_i q(eps + eps_DS,i) = q(eps)``
makes every tampered guess correct with probability at most ``q(eps)``, the one-run
benchmark without shift (Steinke, Nasr, Jagielski 2023). That gives

* **eps-DP** (Theorem 5.1.1 with delta = 0):
  ``b_i(eps) = (1 + e^{-eps - eps_DS,i}) / (1 + e^{-eps})`` and
  ``W' <= Binomial(r, q(eps))`` stochastically, ``r`` the number of *original* guesses.
  The paper's delta > 0 error term is not recoverable from the text, so (eps, delta > 0)
  tampering is not offered (the global correction covers (eps, delta)).
* **f-DP / mu-GDP** (Theorem 5.1.2; its equation (2) is missing from the text and the
  statement is RECONSTRUCTED in audit-math.md section 5.2, proof sketch there):
  ``b_i = e^{-eps_DS,i} = min(pi_i, 1 - pi_i) / max(pi_i, 1 - pi_i)`` and the tampered count
  obeys the one-run f-DP constraints of Mahloujifar, Melis, Chaudhuri (2024) with ``r``
  original guesses and all ``m`` examples.

The uniforms ``U_i`` are drawn once per audit (one per example) and shared by every
hypothesis and every candidate guess count, so the eps search is a first-crossing search on
a fixed coupling (audit-math.md: "fixed U per audit is the simplest valid choice").

Validity with estimated propensities (Corollary 6.1): exact when
``min(pi_hat, 1 - pi_hat) <= min(pi, 1 - pi)`` for every example; cross-fitted estimates are
only asymptotically valid (paper Section 6).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privaudit._validation import (
    as_bool_array,
    as_float_array,
    check_positive_int,
    check_probability,
    check_same_length,
    fail,
)
from privaudit.stats._tails import binom_log_sf, log_q
from privaudit.stats.fdp import gdp_mu_lb_one_run
from privaudit.stats.one_run import eps_lb_one_run

__all__ = [
    "ConditionalBound",
    "check_propensity",
    "conditional_eps_audit",
    "conditional_gdp_audit",
    "conservative_propensity",
    "draw_uniforms",
    "eps_ds",
    "eps_retention",
    "gdp_retention",
    "propensity_aware_guesses",
    "propensity_model_test",
    "retention_thresholds",
]


def check_propensity(pi: ArrayLike, name: str = "propensity") -> NDArray[np.float64]:
    """Validate propensity scores: a finite 1-D array in ``[0, 1]`` (0 and 1 allowed)."""
    p = as_float_array(pi, name, ndim=1)
    bad = (p < 0.0) | (p > 1.0)
    if bad.any():
        raise fail(
            name,
            "probabilities in [0, 1]",
            f"{int(bad.sum())} value(s) outside, e.g. {p[bad][0]!r}",
        )
    return p


def eps_ds(pi: ArrayLike) -> NDArray[np.float64]:
    """Distribution-shift privacy loss ``eps_DS = |log(pi / (1 - pi))|`` (paper Section 5).

    ``+inf`` where ``pi`` is 0 or 1 (membership is then known from the features alone).

    Examples
    --------
    >>> eps_ds([0.5, 0.75]).round(6).tolist()
    [0.0, 1.098612]
    """
    p = check_propensity(pi)
    with np.errstate(divide="ignore"):
        return np.asarray(np.abs(np.log(p) - np.log1p(-p)), dtype=np.float64)


def conservative_propensity(pi: ArrayLike, logit_se: ArrayLike, z: float) -> NDArray[np.float64]:
    r"""Propensities pushed away from 1/2 by ``z`` standard errors on the logit scale.

    ``pi_cons = expit(sign(l) (|l| + z se))`` with ``l = logit(pi)`` (sign ``+`` at
    ``l = 0``), so ``eps_DS(pi_cons) = eps_DS(pi) + z se``: an upper confidence bound of
    ``eps_DS`` under a Gaussian working model of the logit error. This is what
    Corollary 6.1 of the Zero-Run paper asks of estimated propensities (``min(pi_hat,
    1 - pi_hat) <= min(pi, 1 - pi)``), made to hold for all but a ``Phi(-z)`` share of the
    records when the error is Gaussian with standard deviation ``se`` and no bias. ``se``
    of ``+inf`` gives ``pi_cons`` in {0, 1} (the record is never retained); ``z = 0``
    returns ``pi`` unchanged. See :func:`privaudit.zero_run.bounds.zero_run_bounds`
    for what is exact and what is asymptotic.
    """
    p = check_propensity(pi)
    se = as_float_array(logit_se, "logit_se", ndim=1, allow_inf=True)
    if se.size != p.size:
        raise fail("logit_se", f"one standard error per record ({p.size})", se.size)
    if (se < 0.0).any():
        raise fail("logit_se", "values >= 0", "negative values")
    if not (math.isfinite(z) and z >= 0.0):
        raise fail("z", "a finite number >= 0", z)
    if z == 0.0:
        return p.copy()
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        lg = np.log(p) - np.log1p(-p)
        mag = np.abs(lg) + z * se
        sign = np.where(lg < 0.0, -1.0, 1.0)
        out = 1.0 / (1.0 + np.exp(-sign * mag))
    return np.asarray(out, dtype=np.float64)


def gdp_retention(pi: ArrayLike) -> NDArray[np.float64]:
    """f-DP tampering probability ``b = e^{-eps_DS} = min(pi, 1-pi) / max(pi, 1-pi)``.

    Theorem 5.1.2 of the Zero-Run paper (the limit of the eps-DP rule as eps -> inf).
    Computed as the ratio, exactly; 0 when ``pi`` is 0 or 1, 1 when ``pi = 1/2``.
    """
    p = check_propensity(pi)
    lo = np.minimum(p, 1.0 - p)
    hi = np.maximum(p, 1.0 - p)
    return np.asarray(lo / hi, dtype=np.float64)


def eps_retention(pi: ArrayLike, eps: float) -> NDArray[np.float64]:
    """eps-DP tampering probability ``b(eps) = (1 + e^{-eps - eps_DS}) / (1 + e^{-eps})``.

    Theorem 5.1.1 of the Zero-Run paper; it solves ``b q(eps + eps_DS) = q(eps)``. Written
    as ``(1 + x g) / (1 + x)`` with ``x = e^-eps`` and ``g = e^-eps_DS``; it increases from
    ``(1 + g) / 2`` at ``eps = 0`` to 1 as ``eps -> inf``.
    """
    if not eps >= 0.0:
        raise fail("eps", "a number >= 0", eps)
    g = gdp_retention(pi)
    x = math.exp(-eps)
    return np.asarray((1.0 + x * g) / (1.0 + x), dtype=np.float64)


def retention_thresholds(pi: ArrayLike, uniforms: ArrayLike) -> NDArray[np.float64]:
    r"""For the eps-DP rule: example ``i`` is kept iff ``eps > a_i`` (strict).

    ``U < (1 + x g)/(1 + x)`` with ``x = e^{-eps}`` is ``x (U - g) < 1 - U``: always true
    when ``U <= g``, else ``eps > a = log((U - g) / (1 - U))``. Values ``a < 0`` mean "kept
    for every eps >= 0" and are returned as ``-inf`` (audit-math.md section 5.2).
    """
    g = gdp_retention(pi)
    u = _check_uniforms(uniforms, g.size)
    out = np.full(g.size, -np.inf)
    hit = u > g
    with np.errstate(divide="ignore"):
        a = np.log(u[hit] - g[hit]) - np.log1p(-u[hit])
    out[hit] = np.where(a < 0.0, -np.inf, a)
    return out


def _check_uniforms(uniforms: ArrayLike, m: int) -> NDArray[np.float64]:
    u = as_float_array(uniforms, "uniforms", ndim=1)
    if u.size != m:
        raise fail("uniforms", f"one uniform per audit example ({m})", u.size)
    if ((u < 0.0) | (u >= 1.0)).any():
        raise fail("uniforms", "values in [0, 1)", "values outside")
    return u


def draw_uniforms(m: int, rng: np.random.Generator | int | None) -> NDArray[np.float64]:
    """The tampering coins' uniforms ``U_i ~ U[0, 1)``, one per audit example."""
    m = check_positive_int(m, "m")
    return np.asarray(np.random.default_rng(rng).random(m), dtype=np.float64)


def propensity_aware_guesses(
    scores: ArrayLike,
    retention: ArrayLike,
    r: int,
    *,
    threshold: float | None = None,
) -> NDArray[np.int8]:
    """Guesses ranked by ``confidence x retention`` (Zero-Run paper, Remark 5.2).

    The attack's direction is ``sign(score - t)`` (+1 "member" above the threshold ``t``,
    default the median score; paper Algorithm 3) and its confidence ``c_i = |score_i - t|``;
    the ``r`` examples with the largest ``c_i b_i`` are guessed, the rest abstain. With
    ``b = 1`` (no shift) this is the usual "most confident guesses" rule. Examples with
    ``c_i b_i = 0`` are never guessed, and a block of examples tied at the ``r``-th value
    abstains as a whole, so fewer than ``r`` guesses may be made (dropping guesses depends on
    the attacker's information only, which keeps validity).

    Parameters
    ----------
    scores : array_like
        Attack scores, higher = more likely member. They must not depend on the audit labels.
    retention : array_like
        Tampering probabilities ``b_i`` in [0, 1] (:func:`gdp_retention`, :func:`eps_retention`,
        or all ones for the uncorrected audit).
    r : int
        Number of guesses requested.
    threshold : float, optional
        The attack's decision threshold ``t``; default the median score.
    """
    s = as_float_array(scores, "scores", ndim=1)
    b = as_float_array(retention, "retention", ndim=1)
    check_same_length(scores=s, retention=b)
    if ((b < 0.0) | (b > 1.0)).any():
        raise fail("retention", "probabilities in [0, 1]", "values outside")
    r = check_positive_int(r, "r")
    if r > s.size:
        raise fail("r", f"at most the number of audit examples ({s.size})", r)
    t = float(np.median(s)) if threshold is None else float(threshold)
    if not math.isfinite(t):
        raise fail("threshold", "a finite number", threshold)
    direction = np.sign(s - t).astype(np.int8)
    conf = np.abs(s - t) * b
    out = np.zeros(s.size, dtype=np.int8)
    order = np.sort(conf)[::-1]
    cut = order[r - 1]
    if cut <= 0.0:
        keep = conf > 0.0
    elif r < s.size and order[r] == cut:
        keep = conf > cut
    else:
        keep = conf >= cut
    out[keep] = direction[keep]
    return out


@dataclasses.dataclass(frozen=True)
class ConditionalBound:
    """A pointwise-corrected (tampered) one-run bound and the counts behind it.

    ``m`` audit examples, ``r`` original guesses of which ``v`` were correct;
    ``v_retained`` correct guesses survived tampering (for the eps-DP rule: at the returned
    eps); ``retention_sum`` is ``sum_i b_i`` over all ``m`` examples (the paper's effective
    sample size after pointwise correction, f-DP rule).
    """

    value: float
    m: int
    r: int
    v: int
    v_retained: int
    retention_sum: float
    level: float

    def counts(self) -> dict[str, Any]:
        """The counts as a JSON-compatible dict."""
        return {
            "m": self.m,
            "r": self.r,
            "v": self.v,
            "v_retained": self.v_retained,
            "retention_sum": float(self.retention_sum),
        }


def _guess_inputs(
    guesses: ArrayLike, member: ArrayLike, pi: ArrayLike, uniforms: ArrayLike, beta: float
) -> tuple[NDArray[np.int8], NDArray[np.bool_], NDArray[np.float64], NDArray[np.float64], float]:
    t = np.asarray(guesses)
    if t.ndim != 1 or not np.isin(t, (-1, 0, 1)).all():
        raise fail("guesses", "a 1-D array of -1, 0, +1", f"shape {t.shape}")
    mem = as_bool_array(member, "member", ndim=1)
    p = check_propensity(pi)
    check_same_length(guesses=t, member=mem, propensity=p)
    u = _check_uniforms(uniforms, t.size)
    return t.astype(np.int8), mem, p, u, check_probability(beta, "beta")


def _correct(t: NDArray[np.int8], mem: NDArray[np.bool_]) -> NDArray[np.bool_]:
    s = np.where(mem, 1, -1)
    return np.asarray((t != 0) & (t == s), dtype=np.bool_)


def conditional_gdp_audit(
    guesses: ArrayLike,
    member: ArrayLike,
    pi: ArrayLike,
    *,
    beta: float,
    uniforms: ArrayLike,
) -> ConditionalBound:
    r"""Pointwise-corrected mu-GDP lower bound (Zero-Run paper, Algorithm 1, Theorem 5.1.2).

    .. math::

        B_i = 1\{U_i < e^{-\varepsilon_{DS,i}}\}, \quad
        v' = \#\{i : B_i T_i = S_i \ne 0\}, \quad
        \mu_{lb} = \text{gdp\_mu\_lb\_one\_run}(m, r, v', \beta)

    with ``r`` the number of original guesses and ``m`` all audit examples. RECONSTRUCTED
    (equation (2) is missing from the text; audit-math.md section 5.2). With ``pi = 1/2``
    everywhere it is the plain one-run f-DP audit.
    """
    t, mem, p, u, beta = _guess_inputs(guesses, member, pi, uniforms, beta)
    b = gdp_retention(p)
    correct = _correct(t, mem)
    kept = correct & (u < b)
    m, r, v, vr = t.size, int((t != 0).sum()), int(correct.sum()), int(kept.sum())
    value = gdp_mu_lb_one_run(m, r, vr, beta) if r > 0 else 0.0
    return ConditionalBound(value, m, r, v, vr, float(b.sum()), beta)


def conditional_eps_audit(
    guesses: ArrayLike,
    member: ArrayLike,
    pi: ArrayLike,
    *,
    beta: float,
    uniforms: ArrayLike,
) -> ConditionalBound:
    r"""Pointwise-corrected pure eps-DP lower bound (Zero-Run paper, Thm 5.1.1, Alg. 7, delta = 0).

    For a hypothesised eps the guesses are tampered with ``b_i(eps)``
    (:func:`eps_retention`) using the fixed uniforms, and

    .. math:: p(\varepsilon) = P[\mathrm{Bin}(r, q(\varepsilon)) \ge v'(\varepsilon)],
              \qquad \varepsilon_{lb} = \inf\{\varepsilon \ge 0 : p(\varepsilon) > \beta\}.

    ``b_i(eps)`` increases with eps, so ``v'(eps)`` is a step function and ``p`` is not
    monotone; the bound is the **first non-rejected** eps, which is valid without
    monotonicity (audit-math.md sections 0 and 5.2). Computed exactly: on each segment
    where ``v'`` is constant ``p`` increases, so the crossing is the pure one-run bound for
    that ``v'`` (:func:`privaudit.stats.eps_lb_one_run`, rounded down) or the segment's
    start. ``v_retained`` in the result is ``v'`` at the returned eps.
    """
    t, mem, p, u, beta = _guess_inputs(guesses, member, pi, uniforms, beta)
    correct = _correct(t, mem)
    m, r, v = t.size, int((t != 0).sum()), int(correct.sum())
    b0 = float(eps_retention(p, 0.0).sum())
    if r == 0 or v == 0:
        return ConditionalBound(0.0, m, r, v, 0, b0, beta)
    a = retention_thresholds(p[correct], u[correct])
    cur = int(np.sum(a < 0.0))  # kept at eps = 0 (a = -inf)
    breaks = np.sort(a[np.isfinite(a) & (a >= 0.0)])
    lo = 0.0
    j = 0
    while True:
        hi = float(breaks[j]) if j < breaks.size else math.inf
        crossing = eps_lb_one_run(r, r, cur, 0.0, beta) if cur > 0 else 0.0
        if crossing < hi:
            return ConditionalBound(max(crossing, lo), m, r, v, cur, b0, beta)
        # p <= beta on the whole segment: move to the next one (v' jumps up just after hi).
        lo = hi
        while j < breaks.size and breaks[j] == hi:
            cur += 1
            j += 1


def _p_binom_half(r: int, v: int) -> float:
    lq, l1q = log_q(0.0)
    return math.exp(binom_log_sf(v, r, lq, l1q)) if v > 0 else 1.0


def propensity_model_test(
    challenger: ArrayLike,
    member: ArrayLike,
    pi: ArrayLike,
    *,
    beta: float,
    uniforms: ArrayLike,
    candidates: Sequence[int] | None = None,
) -> dict[str, Any]:
    r"""Falsification test of a propensity model (Zero-Run paper, Remark C.1, Theorem C.2).

    ``H``: the tested propensities ``pi`` are conservative, ``max(pi*, 1-pi*) <=
    max(pi, 1-pi)`` for the true ``pi*``. A *features-only* challenger (a function of the
    features alone, e.g. another propensity model's scores) leaks nothing through the model,
    so eps = 0 holds; tampering its guesses with ``b_i = (1 + e^{-eps_DS,i}) / 2`` (the
    eps-DP rule at eps = 0, with ``eps_DS`` from the *tested* ``pi``) gives
    ``W' <= Bin(r, 1/2)`` under ``H``. The challenger guesses ``sign(challenger - 1/2)``
    ranked by ``|challenger - 1/2| b_i`` (Remark 5.2) for each candidate number of guesses;
    the p-value is Bonferroni-adjusted over the candidates and ``H`` is rejected when it is
    at most ``beta``. RECONSTRUCTED from the text (audit-math.md section 5.2). One-sided:
    passing does not certify the model.

    Returns a JSON-compatible dict: ``p_value``, ``rejected``, ``beta``, ``r``, ``v_retained``
    (at the best candidate), ``candidates``.
    """
    c = check_propensity(challenger, "challenger")
    mem = as_bool_array(member, "member", ndim=1)
    p = check_propensity(pi)
    check_same_length(challenger=c, member=mem, propensity=p)
    u = _check_uniforms(uniforms, c.size)
    beta = check_probability(beta, "beta")
    m = c.size
    if candidates is None:
        cands: list[int] = []
        k = m
        while k >= 10 and len(cands) < 8:
            cands.append(k)
            k //= 2
        cands = cands or [m]
    else:
        cands = [check_positive_int(int(x), "candidates") for x in candidates]
    b = eps_retention(p, 0.0)
    kept = u < b
    best: tuple[float, int, int] = (1.0, 0, 0)
    for r_req in cands:
        t = propensity_aware_guesses(c, b, min(r_req, m), threshold=0.5)
        r = int((t != 0).sum())
        vr = int((_correct(t, mem) & kept).sum())
        pv = _p_binom_half(r, vr) if r > 0 else 1.0
        if pv < best[0] or best[1] == 0:
            best = (pv, r, vr)
    p_adj = min(1.0, best[0] * len(cands))
    return {
        "p_value": p_adj,
        "rejected": bool(p_adj <= beta),
        "beta": beta,
        "r": best[1],
        "v_retained": best[2],
        "candidates": list(cands),
    }
