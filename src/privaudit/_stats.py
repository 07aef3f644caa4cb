"""Exact binomial confidence bounds shared by the metrics and the audit layers.

One-sided Clopper-Pearson bounds (Clopper and Pearson 1934; shared/notes/audit-math.md
section 0). They live below every layer so that the metrics (an attack's achieved FPR
interval) and the audit procedures (lower bounds on epsilon) use one implementation.
Results are nudged outward by a relative 1e-12, so a bound errs on the safe side.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from privaudit._validation import fail

__all__ = [
    "REL_SLACK",
    "check_counts",
    "clopper_pearson_lower",
    "clopper_pearson_upper",
    "scalar_or_array",
]

# Relative slack applied to special-function results that end up in a bound: a few
# hundred ulps, far below any statistical error, so the bound rounds the safe way.
REL_SLACK = 1e-12


def clopper_pearson_lower(k: ArrayLike, n: ArrayLike, a: float) -> NDArray[np.float64] | float:
    r"""One-sided Clopper-Pearson lower confidence bound at level ``a``.

    .. math:: \mathrm{lower}(k, n, a) = \mathrm{BetaInv}(a;\ k,\ n-k+1), \quad 0 \text{ if } k = 0

    so that ``P[Bin(n, p) >= k] <= a`` whenever ``p <= lower`` (Clopper and Pearson 1934;
    audit-math.md section 0). Closed form: ``lower(n, n, a) = a^(1/n)``. The result is
    nudged down by a relative 1e-12, so it errs on the safe side of the exact bound.

    Parameters
    ----------
    k, n : array_like of int
        Successes and trials, ``0 <= k <= n``, ``n >= 1``.
    a : float
        Failure probability of the one-sided bound, in (0, 1).

    Returns
    -------
    float or ndarray
        A float for scalar input, else an array of the broadcast shape.
    """
    ka, na = check_counts(k, n)
    with np.errstate(all="ignore"):
        b = special.betaincinv(np.maximum(ka, 1), na - ka + 1, a)
    out = np.where(ka == 0, 0.0, b * (1.0 - REL_SLACK))
    return scalar_or_array(out, k, n)


def clopper_pearson_upper(k: ArrayLike, n: ArrayLike, a: float) -> NDArray[np.float64] | float:
    r"""One-sided Clopper-Pearson upper confidence bound at level ``a``.

    .. math:: \mathrm{upper}(k, n, a) = \mathrm{BetaInv}(1-a;\ k+1,\ n-k), \quad 1 \text{ if } k = n

    so that ``P[Bin(n, p) <= k] <= a`` whenever ``p >= upper`` (audit-math.md section 0).
    Closed form: ``upper(0, n, a) = 1 - a^(1/n)``. Computed with the complementary inverse
    ``betainccinv(k+1, n-k, a)`` (accurate near 0) and nudged up by a relative 1e-12.
    """
    ka, na = check_counts(k, n)
    with np.errstate(all="ignore"):
        # P[Bin(n, u) <= k] = I_{1-u}(n-k, k+1) = 1 - I_u(k+1, n-k) = a.
        up = special.betainccinv(ka + 1, np.maximum(na - ka, 1), a)
    up = np.minimum(1.0, up * (1.0 + REL_SLACK) + 1e-300)
    out = np.where(ka == na, 1.0, up)
    return scalar_or_array(out, k, n)


def check_counts(k: ArrayLike, n: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Counts ``k`` of ``n`` trials as float arrays, after checking ``0 <= k <= n``, ``n >= 1``."""
    ka = np.asarray(k, dtype=np.float64)
    na = np.asarray(n, dtype=np.float64)
    if np.any(na < 1) or np.any(ka < 0) or np.any(ka > na) or np.any(ka != np.round(ka)):
        raise fail("k, n", "integer counts with 0 <= k <= n and n >= 1", f"k={k!r}, n={n!r}")
    return ka, na


def scalar_or_array(out: NDArray[np.float64], *inputs: ArrayLike) -> NDArray[np.float64] | float:
    """A float when every input was a scalar, else an array."""
    if all(np.ndim(x) == 0 for x in inputs):
        return float(out)
    return np.asarray(out, dtype=np.float64)


def mann_whitney_auc(scores: ArrayLike, member: ArrayLike) -> float:
    """AUC by the Mann-Whitney statistic (ties count one half); NaN without both classes
    or with a NaN score. Unchecked: finite or infinite scores, boolean membership of the
    same length (``privaudit.metrics.roc.auc`` is the checked public version).

    ``U = sum over members p of #{non-members < p} + #{non-members == p} / 2``, counted
    by binary search of the sorted members in the sorted non-members (two sorts of half
    the scores each, cheaper than ranking them all); the same float as the mid-rank
    formula ``(sum of the members' mid-ranks - n_pos (n_pos + 1) / 2) / (n_pos n_neg)``
    (both numerators are exact half-integers; a test checks equality against scipy's
    ``rankdata``)."""
    s = np.asarray(scores, dtype=np.float64)
    m = np.asarray(member, dtype=bool)
    n_pos = int(m.sum())
    n_neg = int(m.size - n_pos)
    if n_pos == 0 or n_neg == 0 or np.isnan(s).any():
        return float("nan")
    pos = np.sort(s[m])
    neg = np.sort(s[~m])
    below = np.searchsorted(neg, pos, side="left")
    u2 = 2 * int(below.sum())  # twice U: integers, exact
    inside = below < n_neg
    if (neg[below[inside]] == pos[inside]).any():  # ties between the classes
        u2 += int((np.searchsorted(neg, pos, side="right") - below).sum())
    return float((0.5 * u2) / (float(n_pos) * float(n_neg)))


def _betabinom_pmf(n: int, a: float, b: float) -> NDArray[np.float64]:
    """The beta-binomial ``(n, a, b)`` probabilities of ``0..n``:
    ``C(n, x) B(x + a, n - x + b) / B(a, b)``, computed in log space."""
    x = np.arange(n + 1, dtype=np.float64)
    log_pmf = (
        special.gammaln(n + 1.0)
        - special.gammaln(x + 1.0)
        - special.gammaln(n - x + 1.0)
        + special.betaln(x + a, n - x + b)
        - special.betaln(a, b)
    )
    out: NDArray[np.float64] = np.exp(log_pmf)
    return out


def betabinom_ppf(n: int, a: float, b: float, probs: ArrayLike) -> list[int]:
    """Quantiles of the beta-binomial ``(n, a, b)``: for each q the smallest count ``x``
    with ``P(X <= x) >= q``, ``scipy.stats.betabinom(n, a, b).ppf``'s integers (tested
    against it) without importing scipy.stats (0.4 s of every command's start-up).

    The probabilities ``C(n, x) B(x + a, n - x + b) / B(a, b)`` in log space, summed in
    order; O(n) time and memory."""
    cdf = np.cumsum(_betabinom_pmf(n, a, b))
    return [int(min(np.searchsorted(cdf, q, side="left"), n)) for q in np.atleast_1d(probs)]


#: Probability mass left off each tail of a term of :func:`betabinom_sum_ppf` before
#: convolving (far below any quantile it is asked for).
_SUM_TAIL = 1e-15


def betabinom_sum_ppf(
    ns: Sequence[int], a_s: Sequence[float], b_s: Sequence[float], probs: ArrayLike
) -> list[int]:
    """Quantiles of ``X = X_1 + ... + X_T``, independent ``X_t ~ BetaBinomial(n_t, a_t, b_t)``:
    for each q the smallest count ``x`` with ``P(X <= x) >= q``.

    The distribution of the sum is the convolution of the terms' probabilities
    (:func:`_betabinom_pmf`), each first cut to the counts outside its two tails of mass
    below 1e-15 (so the cost is about ``T`` times the product of the terms' widths, not
    of their ranges). With one term it is :func:`betabinom_ppf`, integer for integer."""
    if not (len(ns) == len(a_s) == len(b_s)) or len(ns) == 0:
        raise fail("ns", "one or more terms, as many n, a and b", (len(ns), len(a_s), len(b_s)))
    if len(ns) == 1:
        return betabinom_ppf(int(ns[0]), a_s[0], b_s[0], probs)
    pmf = np.ones(1)
    offset = 0
    for n, a, b in zip(ns, a_s, b_s, strict=True):
        p = _betabinom_pmf(int(n), a, b)
        lo = int(np.searchsorted(np.cumsum(p), _SUM_TAIL, side="left"))
        hi = p.size - int(np.searchsorted(np.cumsum(p[::-1]), _SUM_TAIL, side="left"))
        pmf = np.convolve(pmf, p[lo:hi])
        offset += lo
    cdf = np.cumsum(pmf)
    top = pmf.size - 1
    return [
        offset + int(min(np.searchsorted(cdf, q, side="left"), top)) for q in np.atleast_1d(probs)
    ]


def mid_ranks(s: NDArray[np.float64]) -> NDArray[np.float64]:
    """Ranks 1..n with ties at their mid-rank: ``scipy.stats.rankdata(s, "average")``'s
    floats (a tie group at sorted positions ``i..j`` gets ``0.5 * (i + 1 + j + 1)``, exact),
    by one unstable sort (the order within a tie group does not matter); all NaN when ``s``
    holds a NaN, as ``rankdata`` (``nan_policy="propagate"``)."""
    n = s.size
    if np.isnan(s).any():
        return np.full(n, np.nan)
    order = np.argsort(s)
    ss = s[order]
    new = np.empty(n, dtype=bool)
    new[:1] = True
    np.not_equal(ss[1:], ss[:-1], out=new[1:])
    starts = np.flatnonzero(new)
    ends = np.append(starts[1:], n)  # one past each group's last position
    mid = 0.5 * (starts + 1 + ends)
    ranks = np.empty(n, dtype=np.float64)
    ranks[order] = mid[np.cumsum(new) - 1]
    return ranks


def pure_groups(
    groups: ArrayLike, member: ArrayLike, *, noun: str = "group"
) -> tuple[NDArray[np.intp], NDArray[np.int64], NDArray[np.bool_]]:
    """Index of each record's group (groups numbered in order of first appearance), the
    groups' sizes and their membership, checking that no group mixes members and
    non-members (a group is one unit of randomisation, e.g. the chunks of one document).
    ``noun`` names a group in the error message."""
    m = np.asarray(member, dtype=bool)
    g = np.asarray(groups).astype(str)
    if g.shape != m.shape or m.ndim != 1:
        raise fail("groups", f"one group per record ({m.size})", g.shape)
    _, first, inverse = np.unique(g, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    idx = rank[inverse]
    sizes = np.bincount(idx, minlength=order.size)
    n_members = np.bincount(idx, weights=m.astype(np.float64), minlength=order.size)
    mixed = (n_members > 0) & (n_members < sizes)
    if mixed.any():
        bad = g[first[order]][mixed][:3].tolist()
        raise fail(
            "groups",
            f"{noun}s whose records are all members or all non-members",
            f"{int(mixed.sum())} mixed {noun}(s), e.g. {bad}",
        )
    return idx, sizes, n_members == sizes
