r"""A confidence interval for an attack's AUC: DeLong's variance, on the logit scale.

DeLong, DeLong and Clarke-Pearson (Biometrics 44, 1988) estimate the variance of the
empirical AUC (the Mann-Whitney statistic) from its *placements*: for a member (positive)
``i`` with score ``x_i`` and a non-member (negative) ``j`` with score ``y_j``,

.. math::

    V_{10}(i) = \frac{1}{n}\sum_j \psi(x_i, y_j), \quad
    V_{01}(j) = \frac{1}{m}\sum_i \psi(x_i, y_j), \quad
    \psi(x, y) = [x > y] + \tfrac12 [x = y],

    \hat A = \overline{V_{10}} = \overline{V_{01}}, \qquad
    \widehat{\mathrm{Var}}(\hat A) = \frac{S_{10}}{m} + \frac{S_{01}}{n},

with ``S_10``, ``S_01`` the sample variances (``ddof = 1``) of the placements. The
placements come from mid-ranks in ``O((m + n) log(m + n))`` (Sun and Xu, IEEE SPL 21,
2014). The interval is the normal one on the logit scale, mapped back,

.. math::

    \operatorname{logit}^{-1}\!\Big(\operatorname{logit}\hat A \pm z_{1-\beta/2}
    \frac{\hat\sigma}{\hat A (1 - \hat A)}\Big),

which stays inside (0, 1) and covers better than the plain normal interval near AUC 1
(Pepe, *The Statistical Evaluation of Medical Tests*, 2003, Sec. 5.2.3). When
``hat A`` is 0 or 1, or the variance is 0, the logit interval is undefined and the
interval falls back to an exact bound from disjoint pairs (see
:func:`auc_confidence_interval`).

Clustered records (``groups``: e.g. the chunks of one document, which share one
membership and are alike) are not independent, and DeLong's variance is then too small.
With clusters that are each all members or all non-members, Obuchowski's clustered
variance (Biometrics 53, 1997, Sec. 2) sums the placements within each cluster,
``T_i = sum_{k in i} V10(k)`` over the ``I`` member clusters (sizes ``m_i``, ``M`` members)
and ``U_j`` likewise over the ``J`` non-member clusters (``N`` non-members):

.. math::

    \widehat{\mathrm{Var}}(\hat A) = \frac{I}{(I-1) M^2} \sum_i (T_i - m_i \hat A)^2
    + \frac{J}{(J-1) N^2} \sum_j (U_j - n_j \hat A)^2,

which is DeLong's when every cluster holds one record. The interval is then method
``obuchowski-clustered-logit``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from privaudit._stats import mid_ranks, pure_groups
from privaudit._validation import (
    as_bool_array,
    as_float_array,
    check_both_classes,
    check_probability,
)

__all__ = [
    "AUC_CI_METHOD",
    "AUC_CI_METHOD_CLUSTERED",
    "auc_ci_fields",
    "auc_confidence_interval",
    "delong_placements",
]

AUC_CI_METHOD = "delong-logit"
AUC_CI_METHOD_CLUSTERED = "obuchowski-clustered-logit"


def _cluster_variance(placements: NDArray[np.float64], groups: NDArray[Any], a: float) -> float:
    """One class's term of Obuchowski's variance (module docstring); 0 with one cluster."""
    _, idx = np.unique(groups, return_inverse=True)
    t = np.bincount(idx, weights=placements)
    sizes = np.bincount(idx)
    n_clusters = t.size
    if n_clusters < 2:
        return 0.0
    total = float(placements.size)
    return float(n_clusters / (n_clusters - 1) * np.sum((t - sizes * a) ** 2) / total**2)


def _groups_array(groups: ArrayLike, member: NDArray[np.bool_]) -> NDArray[Any]:
    """The clusters as strings, each checked to be all members or all non-members."""
    pure_groups(groups, member, noun="cluster")
    return np.asarray(groups).astype(str)


def delong_placements(
    scores: ArrayLike, member: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """DeLong's placements ``(V10 over members, V01 over non-members)`` from mid-ranks."""
    s = as_float_array(scores, "scores", ndim=1)
    m = as_bool_array(member, "member", ndim=1)
    check_both_classes(m, "member")
    pos, neg = s[m], s[~m]
    n_pos, n_neg = pos.size, neg.size
    # mid-ranks (ties count 1/2): scipy.stats.rankdata's floats, without importing
    # scipy.stats (0.4 s of every command's start-up)
    r_all = mid_ranks(s)
    r_pos = mid_ranks(pos)
    r_neg = mid_ranks(neg)
    v10 = (r_all[m] - r_pos) / n_neg
    v01 = 1.0 - (r_all[~m] - r_neg) / n_pos
    return v10, v01


def auc_confidence_interval(
    scores: ArrayLike,
    member: ArrayLike,
    *,
    confidence: float = 0.95,
    groups: ArrayLike | None = None,
) -> tuple[float, float, float, float]:
    """``(auc, lower, upper, standard_error)``: DeLong's variance, logit-scale interval.

    Parameters
    ----------
    scores : array_like
        Higher = more likely member.
    member : array_like of bool
        True membership; at least one member and one non-member.
    confidence : float
        Two-sided coverage ``1 - beta``.
    groups : array_like, optional
        Cluster of each record (each cluster all members or all non-members): Obuchowski's
        clustered variance (module docstring). None: every record its own cluster.

    Notes
    -----
    With a perfect (AUC 1) or inverted (AUC 0) separation, or zero estimated variance,
    the logit is undefined; the interval is then the exact one-sided Clopper-Pearson
    bound of ``min(m, n)`` independent pairs at the observed extreme (e.g. AUC 1: lower
    ``(beta / 2) ** (1 / min(m, n))``, upper 1), a conservative choice stated here because
    DeLong's estimate is 0 there.
    """
    beta = 1.0 - check_probability(confidence, "confidence")
    v10, v01 = delong_placements(scores, member)
    a = float(v10.mean())
    var = 0.0
    if groups is None:
        if v10.size > 1:
            var += float(v10.var(ddof=1)) / v10.size
        if v01.size > 1:
            var += float(v01.var(ddof=1)) / v01.size
        k = min(v10.size, v01.size)
    else:
        m = as_bool_array(member, "member", ndim=1)
        g = _groups_array(groups, m)
        var = _cluster_variance(v10, g[m], a) + _cluster_variance(v01, g[~m], a)
        k = min(np.unique(g[m]).size, np.unique(g[~m]).size)
    se = math.sqrt(max(var, 0.0))
    z = float(special.ndtri(1.0 - beta / 2.0))  # the normal quantile: scipy.stats.norm.ppf
    if 0.0 < a < 1.0 and se > 0.0:
        centre = math.log(a / (1.0 - a))
        half = z * se / (a * (1.0 - a))
        lo = 1.0 / (1.0 + math.exp(-(centre - half)))
        hi = 1.0 / (1.0 + math.exp(-(centre + half)))
        return a, lo, hi, se
    edge = (beta / 2.0) ** (1.0 / k)
    if a >= 1.0:
        return a, edge, 1.0, se
    if a <= 0.0:
        return a, 0.0, 1.0 - edge, se
    return a, 0.0, 1.0, se  # 0 < a < 1 with zero variance (e.g. all scores tied): no information


def auc_ci_fields(
    scores: ArrayLike,
    member: ArrayLike,
    *,
    confidence: float = 0.95,
    groups: ArrayLike | None = None,
) -> dict[str, Any]:
    """The ``results.json`` fields of an attack's AUC interval: ``auc_ci``, its confidence,
    method, se. With ``groups`` of more than one record, the clustered interval."""
    clustered = groups is not None and np.unique(np.asarray(groups).astype(str)).size < np.size(
        groups
    )
    _, lo, hi, se = auc_confidence_interval(
        scores, member, confidence=confidence, groups=groups if clustered else None
    )
    return {
        "auc_ci": [lo, hi],
        "auc_ci_confidence": float(confidence),
        "auc_ci_method": AUC_CI_METHOD_CLUSTERED if clustered else AUC_CI_METHOD,
        "auc_se": se,
    }
