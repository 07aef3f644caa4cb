r"""A confidence interval for an attack's AUC that holds its level with unbalanced classes.

**Variance.** DeLong, DeLong and Clarke-Pearson (Biometrics 44, 1988) estimate the
variance of the empirical AUC (the Mann-Whitney statistic) from its *placements*: for a
member (positive) ``i`` with score ``x_i`` and a non-member (negative) ``j`` with score
``y_j``,

.. math::

    V_{10}(i) = \frac{1}{n}\sum_j \psi(x_i, y_j), \quad
    V_{01}(j) = \frac{1}{m}\sum_i \psi(x_i, y_j), \quad
    \psi(x, y) = [x > y] + \tfrac12 [x = y],

    \hat A = \overline{V_{10}} = \overline{V_{01}}, \qquad
    \hat\sigma^2 = \widehat{\mathrm{Var}}(\hat A) = u + v, \quad
    u = \frac{S_{10}}{m}, \quad v = \frac{S_{01}}{n},

with ``S_10``, ``S_01`` the sample variances (``ddof = 1``) of the placements. The
placements come from mid-ranks in ``O((m + n) log(m + n))`` (Sun and Xu, IEEE SPL 21,
2014). ``auc_se`` is ``hat sigma``.

**Why not DeLong's normal interval alone.** The normal interval on the logit scale
(Pepe, *The Statistical Evaluation of Medical Tests*, 2003, Sec. 5.2.3), this module's
interval before, undercovers when one class is small and the AUC high: the small class's
placements are then very skewed (most near 1, a rare few far below), and a sample that
lacks those few has both a high ``hat A`` and a small ``hat sigma``, so the true AUC falls
below the lower end far more often than 2.5%. In the simulation below its coverage was
90.4% at 50 members / 1,000 non-members and AUC 0.98 (7.7% of true AUCs below the lower
end), 86.6% at AUC 0.995, 86-89% with 20 members / 500 non-members at AUC 0.95-0.98, and
down to 69% for exponential scores. Resampling does not help, as the resamples lack the
same tail: a stratified bootstrap (members and non-members resampled separately, 500
samples of 500 resamples) covered 86.8% (percentile), 89.0% (BCa) and 90.4-92.8%
(studentised) at 50 / 1,000 and AUC 0.98. Nor does Student's ``t`` alone (90.8%).

**The interval** is the smallest interval that contains both

1. DeLong's interval on the logit scale,
   ``logit^-1(logit hat A -+ q hat sigma / (hat A (1 - hat A)))``, and
2. the *score-type* set ``{t : |hat A - t| <= q sigma(t)}`` (a Wilson-like inversion of a
   variance that is a function of the AUC, as in Newcombe, Stat. Med. 25, 2006,
   "Confidence intervals for an effect size measure based on the Mann-Whitney
   statistic. Part 2"), with

   .. math::

       \sigma^2(t) = \max\Big(\hat\sigma^2,\;
       \frac{\min(\phi_{10}\, g_{10}(t),\ t (1 - t))}{m}
       + \frac{\min(\phi_{01}\, g_{01}(t),\ t (1 - t))}{n}\Big),

       g_{10}(t) = \frac{t^2 (1 - t)}{1 + t}, \quad
       g_{01}(t) = \frac{t (1 - t)^2}{2 - t}.

``g_10`` and ``g_01`` are the variances of the members' and the non-members' placements
under Hanley and McNeil's exponential model (Radiology 143, 1982: ``Q2 - A^2`` and
``Q1 - A^2`` with ``Q2 = 2 A^2 / (1 + A)``, ``Q1 = A / (2 - A)``); they say how the
variance grows as the AUC moves away from 1, which is what a sample lacking the tail
cannot show. Their scale comes from the data: ``phi_10 = m u / g_10(hat A)``, the
dispersion relative to the model, is estimated from only about
``e_10 = m min(hat A, 1 - hat A)`` informative placements, so it is shrunk toward the
model's 1 by one pseudo-placement, ``phi_10 <- max(phi_10, (e_10 phi_10 + 1) / (e_10 +
1))`` (raised when the data look less variable than the model, never lowered); likewise
``phi_01`` with ``v``, ``n``. Each class's term is capped at ``t (1 - t)`` (over its
size), the most that a mean of placements in [0, 1] with mean ``t`` can vary: a
dispersion measured near ``hat A = 1`` from one or two misordered pairs is not
extrapolated beyond it (with 1 of 900 pairs misordered at 30 / 30 the lower end is 0.84,
beside 0.83, the exact bound of 30 disjoint pairs with one failure). The ``max`` with
``hat sigma^2`` puts the plain normal interval ``hat A -+ q hat sigma`` inside the set,
which keeps the end toward 1 from being too tight when one far outlier pulls ``hat A``
down. The model is oriented so that the
members carry its heavy tail: for an inverted attack (``hat A < 1/2``) the set is the
mirror image of the one for the negated scores, so negating the scores maps the interval
to ``[1 - upper, 1 - lower]`` (the score set can move by up to about 0.01 as ``hat A``
crosses 1/2 in small unbalanced samples). Newcombe's own choices did not hold across
designs: his Hanley-McNeil variance with ``m* = n* = (m + n) / 2 - 1`` (his method 5)
covered 86-93% at 50 / 1,000 with members' scores twice as spread as non-members', and
with Hanley and McNeil's own multipliers (his method 3) 88-93% there at AUC 0.6-0.8,
since a variance that is a function of the AUC alone cannot follow the scores' shape.

``q`` is Student's ``t`` quantile with Satterthwaite's (1946) degrees of freedom
``(u + v)^2 / (u^2 / (m - 1) + v^2 / (n - 1))``. The score set's ends are bracketed on a
grid of 2,049 points in [0, 1] and refined by bisection to 1e-12, outward; its outermost
ends are taken (the set was an interval in each of 24,876 simulated samples scanned).
When ``hat A`` is 0 or 1, or ``hat sigma`` is 0, the interval falls back to an exact
bound from disjoint pairs (see :func:`auc_confidence_interval`).

**Coverage** (simulation, 4,000 samples a cell, script outside the package; members and
non-members in (30, 30), (50, 1,000), (100, 2,000), (200, 200), (20, 500), (500, 50),
(1,000, 1,000); AUC 0.6, 0.8, 0.95, 0.98, 0.995; binormal scores, binormal with the
members twice as spread, a mixture whose members are either far out or like
non-members, exponential scores, and binormal scores rounded to a 0.5 grid (many ties)):
at least 94.8% in each of the 175 cells, each tail's miss rate at most 3.0% (2.5%
nominal; Monte Carlo standard error 0.25%), where DeLong's logit interval fell to 69%
with up to 29% in one tail. The price is width where the smaller class is very small and
the AUC near 1, where the interval is conservative: at 50 / 1,000 and AUC 0.98
(binormal) the coverage is 100% with a mean width of 0.054 (DeLong-logit: 0.031), at
30 / 30 and AUC 0.98 0.165 (0.072); over the grid the median width is 1.15 times
DeLong-logit's (quartiles 1.07 and 1.35), and within 3% of it at 1,000 / 1,000 and AUC
0.6-0.8.

**Clustered records** (``groups``: e.g. the chunks of one document, which share one
membership and are alike) are not independent, and DeLong's variance is then too small.
With clusters that are each all members or all non-members, Obuchowski's clustered
variance (Biometrics 53, 1997, Sec. 2) sums the placements' deviations within each
cluster, ``T_i = sum_{k in i} (V10(k) - hat A)`` over the ``I`` member clusters (sizes
``m_i``, ``M`` members) and ``U_j`` likewise over the ``J`` non-member clusters (``N``
non-members):

.. math::

    u = \frac{I}{(I-1) M^2} \sum_i T_i^2, \qquad
    v = \frac{J}{(J-1) N^2} \sum_j U_j^2,

which are DeLong's when every cluster holds one record. The interval is then the same
construction with these ``u`` and ``v``, with clusters in place of records in the degrees
of freedom (``I - 1``, ``J - 1``) and in the informative counts
(``e_10 = I min(hat A, 1 - hat A)``), with the dispersions shrunk toward Kish's design
effect ``1 + (m_w - 1) rho`` instead of 1 (Kish, *Survey Sampling*, 1965), and with the
caps ``m_w t (1 - t)`` (a cluster's chunks moving as one). ``m_w = sum m_i^2 / M`` is the
size-weighted mean cluster size and ``rho`` the placements' intra-cluster correlation,
``sum_i sum_{k != l in i} d_k d_l / sum_i (m_i - 1) sum_{k in i} d_k^2`` (``d = V10 - hat
A``) clipped to [0, 1], itself shrunk toward 1 by one pseudo-cluster
(``rho <- (e_10 rho + 1) / (e_10 + 1)``): a sample without the rare tail documents shows
neither their spread nor how alike their chunks are. Likewise for the non-members.
Method ``obuchowski-hm-score``. Simulated (1,000 samples a cell; documents of 5, 3 or
1-10 chunks sharing a normal document effect, intra-class correlation 0.1, 0.5 or 0.9;
10-200 member against 20-400 non-member documents; chunk AUC 0.8, 0.95, 0.98; binormal
scores, or a share of the member documents far out and the rest like non-members): at
least 95.6% in each of 72 cells, each tail at most 2.7%, where Obuchowski's variance on
the logit scale fell to 77.9% (18.4% in one tail). It is conservative with few member
documents at high AUC (10 against 200 documents of 5 chunks, AUC 0.98: width 0.19, the
logit interval's 0.05).
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

AUC_CI_METHOD = "delong-hm-score"
AUC_CI_METHOD_CLUSTERED = "obuchowski-hm-score"

_GRID = np.linspace(0.0, 1.0, 2049)  # where the score set's ends are first bracketed
_PSEUDO = 1.0  # pseudo-placements at the exponential model's dispersion (module docstring)


def _cluster_variance(
    placements: NDArray[np.float64], groups: NDArray[Any], a: float
) -> tuple[float, int, float, float]:
    """One class's term of Obuchowski's variance (0 with one cluster), its number of
    clusters, Kish's design effect ``1 + (m_w - 1) rho`` of its placements and ``m_w``
    (module docstring)."""
    _, idx = np.unique(groups, return_inverse=True)
    d = placements - a
    t = np.bincount(idx, weights=d)  # T_i - m_i hat A
    sizes = np.bincount(idx)
    n_clusters = t.size
    total = float(placements.size)
    d2 = np.bincount(idx, weights=d * d)
    within = float(np.sum((sizes - 1) * d2))
    rho = float(np.sum(t * t - d2)) / within if within > 0.0 else 0.0
    rho = min(max(rho, 0.0), 1.0)
    e = n_clusters * min(a, 1.0 - a)  # rho is measured on about e informative clusters
    rho = (e * rho + _PSEUDO) / (e + _PSEUDO)  # shrunk toward 1: a document's chunks as one
    m_w = float(np.sum(sizes.astype(np.float64) ** 2)) / total
    deff = 1.0 + (m_w - 1.0) * rho
    if n_clusters < 2:
        return 0.0, n_clusters, deff, m_w
    var = n_clusters / (n_clusters - 1) * float(np.sum(t * t)) / total**2
    return var, n_clusters, deff, m_w


def _g10(t: Any) -> Any:
    """Members' placement variance at AUC ``t`` under Hanley and McNeil's exponential model."""
    return t * t * (1.0 - t) / (1.0 + t)


def _g01(t: Any) -> Any:
    """Non-members' placement variance at AUC ``t`` under the exponential model."""
    return t * (1.0 - t) ** 2 / (2.0 - t)


_G10 = _g10(_GRID)
_G01 = _g01(_GRID)
_BERN = _GRID * (1.0 - _GRID)


def _dispersion(term: float, size: int, units: int, target: float, g_hat: float, a: float) -> float:
    """``phi`` of one class (module docstring): the variance term relative to the model's
    ``g(hat A) / size``, shrunk toward ``target`` (1, or the clusters' design effect) by
    ``_PSEUDO`` pseudo-placements, never lowered."""
    phi = size * term / g_hat
    e = units * min(a, 1.0 - a)
    return max(phi, (e * phi + _PSEUDO * target) / (e + _PSEUDO))


def _t_quantile(u: float, df_u: int, v: float, df_v: int, p: float) -> float:
    """Student's ``t`` quantile at ``p`` with Satterthwaite's degrees of freedom for the sum
    of two variance terms ``u``, ``v`` with ``df_u``, ``df_v`` degrees of freedom (a term
    with none contributes nothing)."""
    den = (u * u / df_u if df_u > 0 else 0.0) + (v * v / df_v if df_v > 0 else 0.0)
    if den <= 0.0:
        return float(special.ndtri(p))
    df = (u + v) ** 2 / den
    return float(special.stdtrit(df, p))


def _score_ends(
    a: float, q: float, var: float, c: tuple[float, float], cap: tuple[float, float]
) -> tuple[float, float]:
    """Outermost ends in [0, 1] of ``{t : (t - a)^2 <= q^2 sigma^2(t)}`` with
    ``sigma^2(t) = max(var, min(c10 g10(t), cap10 t (1 - t)) + min(c01 g01(t), cap01 t (1 -
    t)))`` (``a`` is inside): bracketed on ``_GRID``, then bisected to 1e-12; each end is
    returned on the outside of the set."""
    (c10, c01), (k10, k01) = c, cap

    def h(t: float) -> float:
        bern = t * (1.0 - t)
        model = min(c10 * _g10(t), k10 * bern) + min(c01 * _g01(t), k01 * bern)
        return q * q * max(var, model) - (t - a) ** 2

    model = np.minimum(c10 * _G10, k10 * _BERN) + np.minimum(c01 * _G01, k01 * _BERN)
    hv = q * q * np.maximum(var, model) - (_GRID - a) ** 2
    inside = hv >= 0.0
    ends = []
    for side in (-1, 1):
        on_side = (_GRID < a) if side < 0 else (_GRID > a)
        pts = np.flatnonzero(on_side & inside)
        if pts.size == 0:
            out, ins = (float(_GRID[on_side][-1]) if side < 0 else float(_GRID[on_side][0])), a
        else:
            k = int(pts[0]) if side < 0 else int(pts[-1])
            if k in (0, _GRID.size - 1):  # the set reaches 0 (or 1)
                ends.append(float(_GRID[k]))
                continue
            out, ins = float(_GRID[k + side]), float(_GRID[k])
        while abs(ins - out) > 1e-12:  # h(out) < 0 <= h(ins)
            mid = 0.5 * (out + ins)
            if h(mid) >= 0.0:
                ins = mid
            else:
                out = mid
        ends.append(out)
    return ends[0], ends[1]


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
    """``(auc, lower, upper, standard_error)``: the interval of the module docstring.

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
        clustered variance and the clusters' counts (module docstring). None: every record
        its own cluster.

    Notes
    -----
    With a perfect (AUC 1) or inverted (AUC 0) separation, or zero estimated variance,
    the logit and the dispersions are undefined; the interval is then the exact one-sided
    Clopper-Pearson bound of ``min(m, n)`` independent pairs (clusters, with ``groups``) at
    the observed extreme (e.g. AUC 1: lower ``(beta / 2) ** (1 / min(m, n))``, upper 1), a
    conservative choice stated here because DeLong's estimate is 0 there.
    """
    beta = 1.0 - check_probability(confidence, "confidence")
    v10, v01 = delong_placements(scores, member)
    a = float(v10.mean())
    m_size, n_size = v10.size, v01.size
    if groups is None:
        u = float(v10.var(ddof=1)) / m_size if m_size > 1 else 0.0
        v = float(v01.var(ddof=1)) / n_size if n_size > 1 else 0.0
        units_m, units_n, deff_m, deff_n, mw_m, mw_n = m_size, n_size, 1.0, 1.0, 1.0, 1.0
    else:
        m = as_bool_array(member, "member", ndim=1)
        g = _groups_array(groups, m)
        u, units_m, deff_m, mw_m = _cluster_variance(v10, g[m], a)
        v, units_n, deff_n, mw_n = _cluster_variance(v01, g[~m], a)
    var = u + v
    se = math.sqrt(max(var, 0.0))
    k = min(units_m, units_n)
    if 0.0 < a < 1.0 and se > 0.0:
        q = _t_quantile(u, units_m - 1, v, units_n - 1, 1.0 - beta / 2.0)
        centre = math.log(a / (1.0 - a))
        half = q * se / (a * (1.0 - a))
        lo = 1.0 / (1.0 + math.exp(-(centre - half)))
        hi = 1.0 / (1.0 + math.exp(-(centre + half)))
        # the model is oriented so that the members' placements carry its heavy tail: an
        # inverted attack (hat A < 1/2) gets the mirror image of its negated scores' set
        b = max(a, 1.0 - a)
        c10 = _dispersion(u, m_size, units_m, deff_m, _g10(b), b) / m_size
        c01 = _dispersion(v, n_size, units_n, deff_n, _g01(b), b) / n_size
        s_lo, s_hi = _score_ends(b, q, var, (c10, c01), (mw_m / m_size, mw_n / n_size))
        if b != a:
            s_lo, s_hi = 1.0 - s_hi, 1.0 - s_lo
        return a, min(lo, s_lo), max(hi, s_hi), se
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
