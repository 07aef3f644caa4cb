"""Numerical building blocks of the audit procedures.

Log-space binomial tails, one-sided Clopper-Pearson bounds (from :mod:`privaudit._stats`,
shared with the metrics), the logistic success
probability ``q(eps) = e^eps / (1 + e^eps)`` and Gaussian-DP (GDP) conversions.

Every function here follows ``shared/notes/audit-math.md`` section 0. The rule for
rounding is the toolkit's: a numerical approximation may make a lower bound smaller,
never larger. Functions that return bounds say in which direction they round.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from privaudit._stats import (
    check_counts,
    clopper_pearson_lower,
    clopper_pearson_upper,
    scalar_or_array,
)
from privaudit._validation import fail

__all__ = [
    "binom_log_sf",
    "clopper_pearson_lower",
    "clopper_pearson_upper",
    "eps_to_gdp_mu",
    "gdp_delta",
    "gdp_epsilon",
    "log_q",
    "logit_cp_lower",
]


def log_q(eps: float) -> tuple[float, float]:
    """Return ``(log q, log(1 - q))`` for ``q = e^eps / (1 + e^eps)``.

    Computed as ``-log1p(e^-eps)`` and ``-log1p(e^eps)`` (never ``1 - q``), so that the
    pair stays accurate for ``eps`` beyond 37 where ``q == 1.0`` in floating point
    (audit-math.md section 0).
    """
    return float(special.log_expit(eps)), float(special.log_expit(-eps))


def _log_comb(r: int, k: NDArray[np.int64]) -> NDArray[np.float64]:
    return np.asarray(
        special.gammaln(r + 1.0) - special.gammaln(k + 1.0) - special.gammaln(r - k + 1.0),
        dtype=np.float64,
    )


def binom_log_sf(v: int, r: int, lq: float, l1q: float) -> float:
    r"""Log of the upper binomial tail ``log P[Bin(r, q) >= v]``, in log space.

    .. math:: \log \sum_{k=v}^{r} \binom{r}{k} q^k (1-q)^{r-k}

    evaluated as a log-sum-exp of ``lnC(r, k) + k log q + (r - k) log(1 - q)`` with
    ``lnC`` from ``gammaln`` (audit-math.md section 0). Never underflows (all-correct
    tails such as ``2^-2000`` are fine), unlike ``scipy.stats.binom.sf``.

    Parameters
    ----------
    v, r : int
        Threshold and number of trials, ``0 <= r``.
    lq, l1q : float
        ``log q`` and ``log(1 - q)`` (see :func:`log_q`).

    Returns
    -------
    float
        ``0.0`` when ``v <= 0``, ``-inf`` when ``v > r``.
    """
    if v <= 0:
        return 0.0
    if v > r:
        return -math.inf
    k = np.arange(v, r + 1, dtype=np.int64)
    terms = _log_comb(r, k) + k * lq + (r - k) * l1q
    return float(special.logsumexp(terms))


def binom_pmf_below(v: int, r: int, lq: float, l1q: float) -> NDArray[np.float64]:
    """The binomial pmf ``P[Bin(r, q) = k]`` for ``k = 0 .. v-1`` (linear space)."""
    k = np.arange(0, v, dtype=np.int64)
    if k.size == 0:
        return np.zeros(0)
    with np.errstate(under="ignore"):
        return np.exp(_log_comb(r, k) + k * lq + (r - k) * l1q)


def logit_cp_lower(k: ArrayLike, n: ArrayLike, a: float) -> NDArray[np.float64] | float:
    r"""``logit`` of the Clopper-Pearson lower bound, computed without cancellation.

    .. math:: \log x - \log(1 - x), \quad x = \mathrm{BetaInv}(a; k, n-k+1)

    with ``1 - x = 1 - I^{-1}_a(k, n-k+1)`` obtained from the complementary inverse
    ``betainccinv(n-k+1, k, a)``, so it stays accurate when ``x`` is within ulps of 1
    (e.g. all of 2000 guesses correct). ``-inf`` for ``k = 0``. This equals the pure
    eps-DP one-run bound (see :func:`privaudit.stats.one_run.eps_lb_one_run`): the
    rejected set ``{eps : P[Bin(n, q(eps)) >= k] <= a}`` is ``q(eps) <= x``.
    Not nudged: the callers certify the result against the exact log-space tail.
    """
    ka, na = check_counts(k, n)
    with np.errstate(all="ignore"):
        kk = np.maximum(ka, 1)
        x = special.betaincinv(kk, na - kk + 1, a)
        one_minus_x = special.betainccinv(na - kk + 1, kk, a)
        out = np.log(x) - np.log(one_minus_x)
    out = np.where(ka == 0, -np.inf, out)
    return scalar_or_array(out, k, n)


# ---------------------------------------------------------------------------------
# Gaussian differential privacy (Dong, Roth, Su 2022)


def gdp_delta(eps: float, mu: float) -> float:
    r"""The delta(eps) curve of mu-GDP (Dong, Roth, Su 2022, Corollary 2.13).

    .. math:: \delta(\varepsilon) = \Phi(-\varepsilon/\mu + \mu/2) - e^{\varepsilon}\Phi(-\varepsilon/\mu - \mu/2)

    evaluated as ``exp(a + log1p(-exp(b - a)))`` with ``a = log Phi(-eps/mu + mu/2)`` and
    ``b = eps + log Phi(-eps/mu - mu/2)`` (audit-math.md section 0). ``mu = 0`` gives 0.
    """
    if mu < 0 or eps < 0:
        raise fail("eps, mu", "non-negative values", f"eps={eps}, mu={mu}")
    if mu == 0:
        return 0.0
    if math.isinf(mu):
        return 1.0
    a = float(special.log_ndtr(-eps / mu + mu / 2))
    b = eps + float(special.log_ndtr(-eps / mu - mu / 2))
    if b >= a:
        return 0.0
    return math.exp(a + math.log1p(-math.exp(b - a)))


def gdp_epsilon(mu: float, delta: float) -> float:
    r"""The smallest eps such that mu-GDP implies (eps, delta)-DP.

    The root of ``gdp_delta(eps, mu) = delta`` (Dong, Roth, Su 2022, Corollary 2.13;
    audit-math.md section 0); 0 when ``delta(0) = 2 Phi(mu/2) - 1 <= delta``; ``inf``
    when ``delta = 0`` and ``mu > 0``. ``delta(eps)`` is decreasing, so the root is
    unique; it is returned rounded down (to 1e-12).
    """
    if mu < 0 or not 0 <= delta < 1:
        raise fail("mu, delta", "mu >= 0 and delta in [0, 1)", f"mu={mu}, delta={delta}")
    if mu == 0 or gdp_delta(0.0, mu) <= delta:
        return 0.0
    if delta == 0 or math.isinf(mu):
        return math.inf
    hi = 1.0
    while gdp_delta(hi, mu) > delta:
        hi *= 2.0
        if hi > 1e6:
            return math.inf

    def g(e: float) -> float:
        return math.log(max(gdp_delta(e, mu), 1e-320)) - math.log(delta)

    from scipy.optimize import brentq  # here: scipy.optimize costs ~0.2 s to import

    root = float(brentq(g, 0.0, hi, xtol=1e-13, rtol=1e-13))
    # Round down: step below the root until delta(eps) is strictly above delta.
    step = 1e-12
    while root > 0 and gdp_delta(root, mu) <= delta:
        root = max(0.0, root - step)
        step *= 2
    return root


def eps_to_gdp_mu(eps: float) -> float:
    r"""The smallest mu such that eps-DP implies mu-GDP: ``mu = 2 Phi^-1(q(eps))``.

    G_mu touches the kink of the eps-DP trade-off curve at ``alpha = 1/(1 + e^eps)``
    (audit-math.md section 0).
    """
    if eps < 0:
        raise fail("eps", "a non-negative value", eps)
    if math.isinf(eps):
        return math.inf
    # Phi^-1(q) = -Phi^-1(1 - q) computed from the small side.
    return float(-2.0 * special.ndtri(special.expit(-eps)))


def first_rejection_boundary(
    rejects: Callable[[float], bool],
    lo: float,
    hi: float,
    *,
    tol: float = 1e-10,
) -> float:
    """Bisection for the boundary of a monotone rejection region.

    Requires ``rejects(lo)`` True and ``rejects(hi)`` False, with rejection monotone
    (``{x : rejects(x)}`` an interval starting at ``lo``). Returns a rejected point
    within ``tol`` (absolute, or relative for large values) of the boundary: the lower
    end of the final bracket, i.e. the bound is rounded down.
    """
    while hi - lo > max(tol, tol * abs(lo)):
        mid = 0.5 * (lo + hi)
        if rejects(mid):
            lo = mid
        else:
            hi = mid
    return lo
