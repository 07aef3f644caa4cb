"""Metrics of membership-inference attacks: ROC, AUC, TPR at low FPR, achieved FPR, agreement.

Every function takes attack scores oriented "higher = more likely member" and the true
membership of the same records, and is exact: the ROC uses every distinct score as a
threshold, ties between a member and a non-member count one half in the AUC, and
no interpolation is ever applied between ROC points (an interpolated point is not an
attack anyone can run).

Conventions (``notes/attacks.md`` section 5, Carlini et al. 2022 section V):

* the decision at threshold ``t`` is "member" iff ``score >= t``;
* ``TPR@FPR=f`` is the largest TPR among the ROC points whose FPR is ``<= f``
  (LiRA's reference code uses a strict ``<``; with ``<=`` an attack that makes exactly
  ``f * n_negatives`` false positives is allowed, which is what "at FPR f" says);
* a TPR at FPR ``f`` is only reported (not None) when there are at least ``1/f``
  negatives, since with fewer the only achievable FPR at or below ``f`` is 0; with
  ``groups`` (units of randomisation, e.g. the chunks of one document, which share its
  membership and are alike) the negatives are counted in groups, not records;
* ``TPR@0%FPR`` is the largest TPR with no false positive at all.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from privaudit._stats import (
    betabinom_ppf,
    betabinom_sum_ppf,
    clopper_pearson_lower,
    clopper_pearson_upper,
    mann_whitney_auc,
    pure_groups,
)
from privaudit._validation import (
    as_bool_array,
    as_float_array,
    check_both_classes,
    check_probability,
    check_same_length,
    fail,
)
from privaudit.records import AttackScores, MembershipMatrix, RocCurve

__all__ = [
    "DEFAULT_FPRS",
    "DEFAULT_TPRS",
    "TPR_CI_METHOD",
    "AchievedRates",
    "AgreementMatrix",
    "AttackMetrics",
    "achieved_fpr",
    "achieved_rates",
    "agreement_matrix",
    "alpha_acceptance_region",
    "attack_metrics",
    "auc",
    "clopper_pearson",
    "fpr_at_tpr",
    "membership_for",
    "pooled_alpha_acceptance_region",
    "roc_curve",
    "tpr_at_fpr",
    "tpr_at_fpr_bootstrap_ci",
    "tpr_at_zero_fpr",
]

#: FPRs at which every attack's TPR is reported (0.1% and 1%).
DEFAULT_FPRS: tuple[float, ...] = (0.001, 0.01)
#: TPRs at which every attack's FPR is reported (50% and 90%).
DEFAULT_TPRS: tuple[float, ...] = (0.5, 0.9)


def _scores_and_member(
    scores: ArrayLike, member: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.bool_], int, int]:
    s = as_float_array(scores, "scores", ndim=1)
    m = as_bool_array(member, "member", ndim=1)
    check_same_length(scores=s, member=m)
    n_pos, n_neg = check_both_classes(m, "member")
    return s, m, n_pos, n_neg


def _key(x: float) -> str:
    """The JSON key of a rate: ``0.001 -> "0.001"``, ``0.5 -> "0.5"``."""
    return repr(float(x))


def auc(scores: ArrayLike, member: ArrayLike) -> float:
    """Area under the ROC curve, by the Mann-Whitney statistic.

    .. math::

        \\mathrm{AUC} = \\frac{1}{n_+ n_-} \\sum_{i: m_i=1} \\sum_{j: m_j=0}
        \\left( [s_i > s_j] + \\tfrac12 [s_i = s_j] \\right)

    computed in ``O(n log n)`` from mid-ranks:
    ``AUC = (R_+ - n_+(n_+ + 1)/2) / (n_+ n_-)`` with ``R_+`` the sum of the average
    ranks of the members (Mann and Whitney 1947; Hanley and McNeil 1982). This equals
    the trapezoidal area under the exact ROC of :func:`roc_curve`.

    Parameters
    ----------
    scores : array (n,)
        Finite scores, higher = more likely member.
    member : array of bool (n,)
        True membership; at least one member and one non-member.

    Returns
    -------
    float
        The AUC in [0, 1].

    Examples
    --------
    >>> auc([0.9, 0.5, 0.5, 0.1], [True, True, False, False])
    0.875
    """
    s, m, _, _ = _scores_and_member(scores, member)
    return mann_whitney_auc(s, m)  # the inputs are checked: both classes, finite scores


def roc_curve(scores: ArrayLike, member: ArrayLike) -> RocCurve:
    """The exact ROC curve of the decisions ``score >= t`` over every distinct score ``t``.

    For thresholds ``t_0 = +inf > t_1 > ... > t_K`` (the distinct scores, descending)

    .. math::

        \\mathrm{TPR}(t) = \\frac{\\#\\{i: m_i = 1, s_i \\ge t\\}}{n_+}, \\qquad
        \\mathrm{FPR}(t) = \\frac{\\#\\{i: m_i = 0, s_i \\ge t\\}}{n_-}.

    The curve starts at ``(0, 0)`` (threshold ``+inf``) and ends at ``(1, 1)``. Records
    with tied scores enter together, so a tie between a member and a non-member gives a
    diagonal segment (whose area is the Mann-Whitney one half). Its ``auc`` is
    :func:`auc` of the same inputs. (Ye et al. 2022, section 5.2; Carlini et al. 2022,
    section V.)

    Parameters
    ----------
    scores : array (n,)
        Finite scores, higher = more likely member.
    member : array of bool (n,)
        True membership; at least one member and one non-member.

    Returns
    -------
    RocCurve
        ``fpr``, ``tpr``, ``thresholds`` of length ``K + 1``, ``auc``, ``n_positives``,
        ``n_negatives``.
    """
    s, m, n_pos, n_neg = _scores_and_member(scores, member)
    order = np.argsort(-s, kind="stable")
    s_sorted = s[order]
    m_sorted = m[order]
    tp = np.cumsum(m_sorted)
    fp = np.cumsum(~m_sorted)
    # last index of each block of equal scores: where the next score differs
    last = np.flatnonzero(np.r_[s_sorted[1:] != s_sorted[:-1], True])
    tpr = np.r_[0.0, tp[last] / n_pos]
    fpr = np.r_[0.0, fp[last] / n_neg]
    thresholds = np.r_[np.inf, s_sorted[last]]
    return RocCurve(
        fpr=fpr,
        tpr=tpr,
        thresholds=thresholds,
        auc=mann_whitney_auc(s, m),
        n_positives=n_pos,
        n_negatives=n_neg,
    )


def _enough_negatives(n_negatives: int, fpr: float) -> bool:
    # n_negatives >= 1 / fpr, robust to the rounding of 1 / fpr
    return n_negatives * fpr >= 1.0 - 1e-9


def tpr_at_fpr(roc: RocCurve, fpr: float, *, require_support: bool = True) -> float | None:
    """The largest TPR the attack reaches with a false-positive rate ``<= fpr``.

    .. math:: \\mathrm{TPR@FPR}(f) = \\max\\{\\mathrm{TPR}(t) : \\mathrm{FPR}(t) \\le f\\}

    over the exact ROC points (no interpolation). Note the ``<=``: LiRA's reference code
    (Carlini et al. 2022, ``plot.py``) uses ``fpr < f``; the two differ only when the
    attack makes exactly ``f * n_negatives`` false positives.

    Parameters
    ----------
    roc : RocCurve
        From :func:`roc_curve`.
    fpr : float
        Target false-positive rate in (0, 1).
    require_support : bool
        When True (default) return None if there are fewer than ``1 / fpr`` negatives:
        then no false positive at all is allowed and the number says nothing about the
        rate ``fpr`` (``notes/attacks.md`` section 5).

    Returns
    -------
    float or None
    """
    f = check_probability(fpr, "fpr")
    if require_support and not _enough_negatives(roc.n_negatives, f):
        return None
    ok = roc.fpr <= f + 1e-12
    return float(roc.tpr[ok].max())


def tpr_at_zero_fpr(roc: RocCurve) -> float:
    """The largest TPR with no false positive: ``max{TPR(t) : FPR(t) = 0}``."""
    return float(roc.tpr[roc.fpr == 0.0].max())


#: What :func:`tpr_at_fpr_bootstrap_ci` computes, for ``results.json``.
TPR_CI_METHOD = (
    "cluster-bootstrap (percentile upper end, two-step lower end; its threshold certified "
    "distribution-free: by order statistics where every group is one record, by a Chernoff "
    "test over the groups otherwise)"
)


def _tpr_at_fpr_weighted(
    neg_sorted: NDArray[np.float64],
    neg_w: NDArray[np.int64],
    pos_sorted: NDArray[np.float64],
    pos_w: NDArray[np.int64],
    fpr: float,
) -> NDArray[np.float64]:
    """TPR at FPR ``fpr`` (the rule of :func:`tpr_at_fpr`) of ``B`` weighted samples at once.

    ``neg_sorted`` are the non-member scores in descending order and ``neg_w`` (B, n_-)
    their multiplicities in each sample; ``pos_sorted`` the member scores ascending,
    ``pos_w`` (B, n_+) theirs. With ``k = floor(f n_-)`` false positives allowed, the
    best threshold lies just above the ``(k + 1)``-th highest non-member score ``v``, so
    the TPR is the weighted share of members scoring above ``v`` (1 when ``k >= n_-``).
    """
    cum_neg = np.cumsum(neg_w, axis=1)
    n_neg = cum_neg[:, -1]
    k = np.floor((fpr + 1e-12) * n_neg).astype(np.int64)
    over = cum_neg >= (k + 1)[:, None]
    has = over.any(axis=1)
    v = np.where(has, neg_sorted[np.argmax(over, axis=1)], -np.inf)
    cum_pos = np.concatenate([np.zeros((pos_w.shape[0], 1), np.int64), np.cumsum(pos_w, 1)], 1)
    below = np.searchsorted(pos_sorted, v, side="right")  # members scoring <= v
    n_pos = cum_pos[:, -1]
    rows = np.arange(pos_w.shape[0])
    return np.asarray((n_pos - cum_pos[rows, below]) / n_pos, dtype=np.float64)


def tpr_at_fpr_bootstrap_ci(
    scores: ArrayLike,
    member: ArrayLike,
    fprs: Sequence[float] = DEFAULT_FPRS,
    *,
    groups: ArrayLike | None = None,
    confidence: float = 0.95,
    n_resamples: int = 400,
    seed: int = 0,
) -> dict[str, tuple[float, float] | None]:
    r"""A bootstrap interval for the TPR at each FPR of ``fprs``, resampling whole groups.

    Records of one group (the chunks of one document) share its membership and are
    alike, so they are resampled together: each of ``n_resamples`` samples draws the
    member groups with replacement (as many as there are) and, independently, the
    non-member groups (Davison and Hinkley 1997, sec. 3.8). Without ``groups`` every
    record is its own group (a bootstrap stratified by class). Seeded: the same inputs
    and ``seed`` give the same interval. With ``t = (1 - confidence) / 2``:

    * the **upper end** is the percentile one (Efron and Tibshirani 1993, ch. 13): the
      ``1 - t`` quantile of the samples' ``TPR@FPR=f``, each recomputed with the rule of
      :func:`tpr_at_fpr` (the largest TPR with an FPR ``<= f``: the threshold moves with
      the resampled non-members);
    * the **lower end** takes two steps, each at ``t / 2``. First a threshold whose
      population FPR is at most ``f`` with probability at least ``1 - t / 2``. Where every
      group is one record (independent scores) it is exact:
      :func:`_order_statistic_threshold`, the ``k``-th highest non-member score with
      ``k`` from the binomial law of the number of non-members above the true
      ``f``-threshold, and no threshold at all (a lower end of 0) when the non-members
      are too few to certify FPR ``f`` at that level, that is when ``(1 - f)^n > t / 2``
      (about ``4.4 / f`` non-members at 95%: 437 at 1%, 4,380 at 0.1%). With groups of
      several records (chunks of one document, not independent) it is certified by a
      Chernoff test over the groups (:func:`_group_chernoff_threshold`), also
      distribution-free, and 0 likewise with too few non-member groups (437 at 1%, 4,380
      at 0.1% for groups of one size; more where their sizes vary). Then the ``t / 2``
      quantile of the samples' TPR at that fixed threshold. When the threshold's FPR is
      at most ``f``, its TPR is at most the TPR at ``f``, so by the union bound the lower
      end misses only when one of the two steps does (about ``t``). It is capped at the
      upper end.

    The percentile lower end alone was optimistic: the empirical TPR at FPR ``f`` is
    biased upward (its threshold, the ``(k + 1)``-th highest non-member score, has a
    population FPR a little above ``f``) and resampling does not remove that bias (the
    basic and the bias-corrected percentile intervals did worse). Measured by
    ``benchmarks/bench_tpr_interval.py`` (simulated documents of 1, 2 or 5 chunks with a
    known ROC, 300 runs a cell; the table is in docs/llm.md). With the bootstrap's
    threshold for every group size, the truth fell below the lower end in up to 5.3% of
    runs at ``f`` = 1% with 150 to 1,000 groups a side (2.5% asked; the percentile lower
    end: up to 11.7%) and in up to 18% at ``f`` = 0.1% with 1,200 groups, the worst cells
    those of one record a group: no bootstrap sees beyond the highest non-member, whose
    own FPR is above ``f`` in 30% of such audits. The exact threshold removes those. For
    documents of several chunks the bootstrap's threshold had the truth below the lower end
    in up to 6.3% of runs at 0.1% with 1,200 documents of 2 or 5 chunks; the Chernoff
    threshold certifies nothing there (too few documents: the lower end is 0), and where it
    does (1,000 documents at 1%, 5,000 at 0.1%) the truth fell below the lower end in no
    run.

    It is None where :func:`attack_metrics` reports no TPR: fewer than ``1 / f``
    non-member groups.

    Parameters
    ----------
    scores, member : arrays (n,)
        As in :func:`roc_curve`.
    fprs : sequence of float
        Where to read the ROC.
    groups : array (n,), optional
        Each record's group (all members or all non-members).
    confidence : float
        Two-sided level (default 0.95).
    n_resamples : int
        Bootstrap samples (default 400).
    seed : int
        Seed of the resampling.

    Returns
    -------
    dict
        ``{"0.001": (lo, hi) or None, ...}`` keyed like ``AttackMetrics.tpr_at_fpr``.
    """
    c = check_probability(confidence, "confidence")
    tail = (1.0 - c) / 2.0
    r = _GroupResamples.draw(scores, member, groups=groups, n_resamples=n_resamples, seed=seed)
    out: dict[str, tuple[float, float] | None] = {}
    for f in fprs:
        f = check_probability(f, "fpr")
        if not _enough_negatives(r.n_negative_groups, f):
            out[_key(f)] = None
            continue
        hi = float(np.quantile(r.tprs(f), 1.0 - tail))
        if r.neg_sorted.size == r.n_negative_groups:  # one record a group: exact
            v = _order_statistic_threshold(r.neg_sorted, f, tail / 2.0)
        else:
            v = _group_chernoff_threshold(r.neg_sorted, r.neg_group_sizes, f, tail / 2.0)
        lo = float(np.quantile(r.tprs_at_fixed(v), tail / 2.0))
        out[_key(f)] = (min(lo, hi), hi)
    return out


def _order_statistic_threshold(neg_desc: ArrayLike, fpr: float, tail: float) -> float:
    r"""A threshold whose population FPR is at most ``fpr`` with probability at least
    ``1 - tail``, from independent non-member scores: the ``k``-th highest score ``v`` (a
    record is flagged when it scores strictly above ``v``) with ``k`` the largest such that
    :math:`P(\mathrm{Binom}(n, f) \ge k) \ge 1 - tail`; ``+inf`` (nothing flagged) when
    even ``k = 1`` falls short, that is when :math:`(1 - f)^n > tail`.

    Distribution-free and exact for any score distribution, ties included: with ``q`` the
    lowest score whose survival :math:`P(S > q)` is at most ``f``, :math:`P(S \ge q) \ge
    f`, so at least ``k`` of the ``n`` scores are ``>= q`` with probability at least
    :math:`P(\mathrm{Binom}(n, f) \ge k)`, and then ``v >= q`` and ``P(S > v) <= f``
    (the order-statistic argument of distribution-free tolerance limits: Wilks 1941;
    David and Nagaraja 2003, sec. 7.2). ``neg_desc``: the non-member scores in descending
    order."""
    neg = np.asarray(neg_desc, dtype=np.float64)
    n = int(neg.size)
    f = check_probability(fpr, "fpr")
    if n == 0:
        return float("inf")
    k = np.arange(1, n + 1)
    ok = special.bdtrc(k - 1, n, f) >= 1.0 - tail  # P(Binom(n, f) >= k)
    if not ok[0]:
        return float("inf")
    return float(neg[int(np.flatnonzero(ok).max())])


def _group_chernoff_threshold(
    neg_desc: ArrayLike, group_sizes: ArrayLike, fpr: float, tail: float
) -> float:
    r"""A threshold whose population FPR (the share of non-member *records* scoring above
    it) is at most ``fpr`` with probability at least ``1 - tail``, from non-member records
    that come in independent groups (the chunks of a document, alike within it): the
    lowest non-member score ``v`` (flagging strictly above ``v``) that a Chernoff test
    certifies; ``+inf`` (nothing flagged) when even the highest is not certified.

    Per non-member group ``i`` of ``C_i`` records, ``N_i(v)`` of them above ``v``, and
    ``c`` the largest group, :math:`Z_i = (N_i - f C_i)/c + f` lies in [0, 1] (as
    :math:`0 \le N_i \le C_i \le c`) and its mean exceeds ``f`` exactly when the
    records' FPR :math:`E[N]/E[C]` exceeds ``f``. Hoeffding's bound for independent
    variables in [0, 1] (Hoeffding 1963, Theorem 1, applied to :math:`1 - Z_i`):
    :math:`P(\bar Z \le q) \le \exp(-n\,\mathrm{KL}(q \| f))` for :math:`q < f` when
    the mean is at least ``f``. ``v`` is certified when :math:`\bar Z(v) < f` and
    :math:`n\,\mathrm{KL}(\bar Z(v) \| f) \ge \log(1/tail)`. :math:`\bar Z(v)` falls
    as ``v`` rises, so the certified scores are the highest ones, and choosing the lowest of
    them errs only when the test passes at :math:`v^* = \inf\{v: \mathrm{FPR}(v) \le
    f\}`, flagging the records at or above it (a share at least ``f``, a fixed event):
    probability at most ``tail``. Distribution-free, ties included, for any dependence
    within a group (chunks identical within each document is the worst case); assumes
    independent groups of at most ``c`` records, the largest group of the audit.

    With groups of one size, :math:`Z_i = N_i/c`, and it needs as many groups as the
    one-record rule needs records: :math:`n \ge \log(1/tail)/-\log(1 - f)` (437 at ``f``
    = 1%, 4,380 at 0.1%, ``tail`` = 1.25%); fewer certify nothing. Groups smaller than
    ``c`` cost power (at the highest score :math:`\bar Z = f(1 - \bar C/c)`): groups of
    1 to 5 records need about 1,900 at 1%, and one long document among short ones can
    leave nothing certified. A bound per group (each ``N_i`` in its own range
    :math:`[0, C_i]`, the rates spread over the groups by water-filling) would be tighter,
    but it is conditional on the audit's group sizes: it bounds the FPR of documents of
    those sizes, which is the population's only where the chunks' FPR does not depend on a
    document's length, an assumption the scores cannot check; the bound above needs none.
    ``neg_desc``: the non-member scores in descending order; ``group_sizes``: the
    non-member groups' sizes."""
    neg = np.asarray(neg_desc, dtype=np.float64)
    sizes = np.asarray(group_sizes, dtype=np.float64)
    f = check_probability(fpr, "fpr")
    n = int(sizes.size)
    if n == 0 or neg.size == 0 or f == 0.0:
        return float("inf")
    c, total = float(sizes.max()), float(sizes.sum())
    above = np.searchsorted(-neg, -neg, side="left")  # records strictly above each score
    z = np.clip((above - f * total) / (n * c) + f, 0.0, 1.0)
    kl = special.xlogy(z, z / f) + special.xlogy(1.0 - z, (1.0 - z) / (1.0 - f))
    ok = (z < f) & (n * kl >= -np.log(tail))
    if not ok.any():
        return float("inf")
    return float(neg[int(np.flatnonzero(ok).max())])


@dataclasses.dataclass(frozen=True)
class _GroupResamples:
    """The group bootstrap of :func:`tpr_at_fpr_bootstrap_ci`: the scores of each class
    sorted (non-members descending, members ascending), each record's multiplicity in
    every sample (``(B, n)``: its group's number of draws) and the non-member groups'
    sizes."""

    neg_sorted: NDArray[np.float64]
    neg_w: NDArray[np.int64]
    pos_sorted: NDArray[np.float64]
    pos_w: NDArray[np.int64]
    n_negative_groups: int
    neg_group_sizes: NDArray[np.int64]

    @classmethod
    def draw(
        cls,
        scores: ArrayLike,
        member: ArrayLike,
        *,
        groups: ArrayLike | None,
        n_resamples: int,
        seed: int,
    ) -> _GroupResamples:
        s, m, _, _ = _scores_and_member(scores, member)
        if isinstance(n_resamples, bool) or not isinstance(n_resamples, int) or n_resamples < 1:
            raise fail("n_resamples", "a positive integer", repr(n_resamples))
        g = np.arange(s.size) if groups is None else groups
        idx, _, group_member = pure_groups(g, m, noun="group")
        pos_groups = np.flatnonzero(group_member)
        neg_groups = np.flatnonzero(~group_member)
        # each record's group, numbered within its class
        within = np.empty(group_member.size, dtype=np.int64)
        within[pos_groups] = np.arange(pos_groups.size)
        within[neg_groups] = np.arange(neg_groups.size)
        neg_order = np.argsort(-s[~m], kind="stable")
        pos_order = np.argsort(s[m], kind="stable")
        neg_sorted, neg_g = s[~m][neg_order], within[idx[~m][neg_order]]
        pos_sorted, pos_g = s[m][pos_order], within[idx[m][pos_order]]
        rng = np.random.default_rng(np.random.SeedSequence([int(seed), 0x7F9C]))
        draws_pos = rng.integers(0, pos_groups.size, size=(n_resamples, pos_groups.size))
        draws_neg = rng.integers(0, neg_groups.size, size=(n_resamples, neg_groups.size))
        rows = np.arange(n_resamples)[:, None]
        count_pos = np.zeros((n_resamples, pos_groups.size), np.int64)
        np.add.at(count_pos, (rows, draws_pos), 1)
        count_neg = np.zeros((n_resamples, neg_groups.size), np.int64)
        np.add.at(count_neg, (rows, draws_neg), 1)
        return cls(
            neg_sorted,
            count_neg[:, neg_g],
            pos_sorted,
            count_pos[:, pos_g],
            int(neg_groups.size),
            np.bincount(neg_g, minlength=neg_groups.size).astype(np.int64),
        )

    def tprs(self, f: float) -> NDArray[np.float64]:
        """Each sample's TPR at FPR ``f`` (the rule of :func:`tpr_at_fpr`)."""
        return _tpr_at_fpr_weighted(self.neg_sorted, self.neg_w, self.pos_sorted, self.pos_w, f)

    def tprs_at_fixed(self, v: float) -> NDArray[np.float64]:
        """Each sample's share of members scoring above ``v``."""
        below = int(np.searchsorted(self.pos_sorted, v, side="right"))  # members <= v
        n_pos = self.pos_w.sum(axis=1)
        return np.asarray(self.pos_w[:, below:].sum(axis=1) / n_pos, dtype=np.float64)


def fpr_at_tpr(roc: RocCurve, tpr: float) -> float:
    """The smallest false-positive rate at which the attack reaches a TPR ``>= tpr``.

    .. math:: \\mathrm{FPR@TPR}(r) = \\min\\{\\mathrm{FPR}(t) : \\mathrm{TPR}(t) \\ge r\\}

    (Ye et al. 2022, Figure 2(c) reads the ROC this way: a lower FPR at a high TPR is a
    stronger attack.) Always defined, since the last ROC point is ``(1, 1)``.
    """
    r = check_probability(tpr, "tpr", open_interval=False)
    ok = roc.tpr >= r - 1e-12
    return float(roc.fpr[ok].min())


def clopper_pearson(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Two-sided Clopper-Pearson (exact binomial) interval for a rate ``k / n``.

    .. math::

        \\underline p = B^{-1}(\\tfrac{1-c}{2};\\ k, n-k+1), \\qquad
        \\overline p = B^{-1}(\\tfrac{1+c}{2};\\ k+1, n-k)

    with ``B^{-1}`` the Beta quantile, ``underline p = 0`` when ``k = 0`` and
    ``overline p = 1`` when ``k = n`` (Clopper and Pearson 1934).
    """
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 0:
        raise fail("k", "a non-negative integer", repr(k))
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1 or k > n:
        raise fail("n", f"an integer >= max(1, k={k})", repr(n))
    a = (1.0 - check_probability(confidence, "confidence")) / 2.0
    return float(clopper_pearson_lower(k, n, a)), float(clopper_pearson_upper(k, n, a))


@dataclasses.dataclass(frozen=True)
class AchievedRates:
    """What an attack that decides ``score >= threshold`` actually achieved.

    ``fpr_ci`` is the two-sided Clopper-Pearson interval (at ``confidence``) for the
    attack's true FPR given ``n_false_positives`` out of ``n_negatives``; a requested
    alpha outside it means the threshold does not control the FPR as claimed.
    """

    threshold: float
    fpr: float
    tpr: float
    n_false_positives: int
    n_true_positives: int
    n_negatives: int
    n_positives: int
    fpr_ci: tuple[float, float]
    confidence: float

    def alpha_within_error(self, alpha: float, *, n_calibration: int | None = None) -> bool:
        r"""Whether the achieved FPR is within sampling error of the requested ``alpha``.

        Without ``n_calibration``: ``alpha`` lies inside the Clopper-Pearson interval of
        the achieved FPR (only the audited non-members are random).

        With ``n_calibration`` (the threshold was itself estimated as a quantile of
        ``n_calibration`` exchangeable non-member scores, as the population calibration
        and attack P do): both samples are random. For a threshold at the order
        statistic :math:`s_{(k)}`, :math:`k = \lceil (n+1)(1-\alpha) \rceil`, of n
        calibration scores, the FPR it achieves on the population is
        :math:`\mathrm{Beta}(n + 1 - k, k)` (the coverage of a split-conformal
        threshold; Vovk et al. 2005, Angelopoulos & Bates 2021, Sec. 3.2), so the count
        of false positives among the :math:`n_-` audited non-members is
        beta-binomial :math:`(n_-, n + 1 - k, k)`. The check passes when the observed
        count lies in the central ``confidence`` region of that distribution.
        """
        a = check_probability(alpha, "alpha")
        if n_calibration is None:
            return self.fpr_ci[0] <= a <= self.fpr_ci[1]
        lo, hi = alpha_acceptance_region(a, n_calibration, self.n_negatives, self.confidence)
        return lo <= self.n_false_positives <= hi


def alpha_acceptance_region(
    alpha: float, n_calibration: int, n_negatives: int, confidence: float = 0.95
) -> tuple[int, int]:
    """Central ``confidence`` region of the false-positive count of a calibrated threshold.

    The count is beta-binomial ``(n_negatives, n + 1 - k, k)`` with
    ``k = ceil((n + 1)(1 - alpha))`` (see :meth:`AchievedRates.alpha_within_error`);
    returns the ``(1 - confidence)/2`` and ``(1 + confidence)/2`` quantiles.
    """
    if isinstance(n_calibration, bool) or not isinstance(n_calibration, int | np.integer):
        raise fail("n_calibration", "a positive integer", repr(n_calibration))
    if n_calibration < 1:
        raise fail("n_calibration", "a positive integer", n_calibration)
    n = int(n_calibration)
    k = _conformal_rank(alpha, n)
    tail = (1.0 - check_probability(confidence, "confidence")) / 2.0
    lo, hi = betabinom_ppf(int(n_negatives), n + 1 - k, k, [tail, 1.0 - tail])
    return lo, hi


def _conformal_rank(alpha: float, n: int) -> int:
    """The order statistic ``k = ceil((n + 1)(1 - alpha))`` of a conformal threshold on
    ``n`` calibration scores, kept within ``1..n``."""
    return min(max(math.ceil((n + 1) * (1.0 - alpha) - 1e-9), 1), n)


def pooled_alpha_acceptance_region(
    alpha: float,
    n_calibrations: Sequence[int],
    n_negatives: Sequence[int],
    confidence: float = 0.95,
) -> tuple[int, int]:
    r"""Central ``confidence`` region of the false-positive count pooled over several
    calibrated thresholds (the trials of a game, each target with its own threshold).

    Trial t decides its ``n_negatives[t]`` audited non-members at a threshold calibrated
    on ``n_calibrations[t]`` non-member scores, so its count is beta-binomial
    ``(n_t, M_t + 1 - k_t, k_t)`` (:func:`alpha_acceptance_region`); taking the trials'
    thresholds as independent, the pooled count is the sum of these, whose
    distribution is their convolution. Returns its ``(1 - confidence)/2`` and
    ``(1 + confidence)/2`` quantiles; with one trial, :func:`alpha_acceptance_region`'s.
    A single beta-binomial over all the draws would treat them as sharing one threshold:
    its region is far wider than the sum's (8 trials: the check flagged no run at 5%).
    """
    if len(n_calibrations) != len(n_negatives) or not n_calibrations:
        raise fail(
            "n_calibrations",
            f"one calibration size per trial ({len(n_negatives)})",
            len(n_calibrations),
        )
    if len(n_calibrations) == 1:
        return alpha_acceptance_region(alpha, n_calibrations[0], n_negatives[0], confidence)
    a = check_probability(alpha, "alpha")
    ks, ns = [], []
    for m, n_neg in zip(n_calibrations, n_negatives, strict=True):
        if isinstance(m, bool) or not isinstance(m, int | np.integer) or m < 1:
            raise fail("n_calibrations", "positive integers", repr(m))
        if isinstance(n_neg, bool) or not isinstance(n_neg, int | np.integer) or n_neg < 0:
            raise fail("n_negatives", "non-negative integers", repr(n_neg))
        ks.append(_conformal_rank(a, int(m)))
        ns.append(int(n_neg))
    tail = (1.0 - check_probability(confidence, "confidence")) / 2.0
    lo, hi = betabinom_sum_ppf(
        ns,
        [int(m) + 1 - k for m, k in zip(n_calibrations, ks, strict=True)],
        ks,
        [tail, 1.0 - tail],
    )
    return lo, hi


def achieved_rates(
    scores: ArrayLike, member: ArrayLike, threshold: float, *, confidence: float = 0.95
) -> AchievedRates:
    """Achieved FPR and TPR of the decision ``score >= threshold``, with an interval on the FPR.

    An alpha-threshold attack (Ye et al. 2022, section 3: the threshold ``c_alpha`` is
    the alpha-quantile of the out-world signal distribution) promises an FPR of about
    alpha on non-members it has never seen. On the audited non-members the number of
    false positives ``k`` is Binomial(``n_-``, FPR); the Clopper-Pearson interval of
    ``k / n_-`` (:func:`clopper_pearson`) lets a reader see whether the requested alpha
    is within binomial error of what was achieved.

    Parameters
    ----------
    scores, member : arrays (n,)
        As in :func:`roc_curve`.
    threshold : float
        The attack's decision threshold (``AttackScores.threshold``); ``+-inf`` allowed.
    confidence : float
        Confidence level of the interval (default 0.95).
    """
    s, m, n_pos, n_neg = _scores_and_member(scores, member)
    try:
        t = float(threshold)
    except (TypeError, ValueError):
        raise fail("threshold", "a number", repr(threshold)) from None
    if math.isnan(t):
        raise fail("threshold", "a number, not NaN", t)
    decided = s >= t
    fp = int(np.count_nonzero(decided & ~m))
    tp = int(np.count_nonzero(decided & m))
    return AchievedRates(
        threshold=t,
        fpr=fp / n_neg,
        tpr=tp / n_pos,
        n_false_positives=fp,
        n_true_positives=tp,
        n_negatives=n_neg,
        n_positives=n_pos,
        fpr_ci=clopper_pearson(fp, n_neg, confidence),
        confidence=float(confidence),
    )


def achieved_fpr(scores: ArrayLike, member: ArrayLike, threshold: float) -> float:
    """The fraction of non-members with ``score >= threshold`` (see :func:`achieved_rates`)."""
    return achieved_rates(scores, member, threshold).fpr


def membership_for(
    record_ids: ArrayLike, member: ArrayLike | MembershipMatrix
) -> NDArray[np.bool_]:
    """Membership of ``record_ids``, from an aligned bool array or a one-model membership matrix.

    A :class:`MembershipMatrix` is aligned by record id (never by position); it must hold
    exactly one model (the target) and every requested id.
    """
    ids = np.asarray(record_ids)
    if isinstance(member, MembershipMatrix):
        if member.n_models != 1:
            raise fail(
                "member",
                "a membership matrix of the target model only",
                f"{member.n_models} models",
            )
        index = {k: i for i, k in enumerate(member.record_ids.tolist())}
        missing = [r for r in ids.tolist() if r not in index]
        if missing:
            raise fail(
                "member", "a membership for every scored record", f"missing ids {missing[:5]}"
            )
        return np.asarray(member.keep[0][[index[r] for r in ids.tolist()]], dtype=bool)
    m = as_bool_array(member, "member", ndim=1)
    check_same_length(member=m, record_ids=ids)
    return m


@dataclasses.dataclass(frozen=True)
class AttackMetrics:
    """Every metric of one attack on one target (one entry of ``results.json["attacks"]``).

    ``tpr_at_fpr`` maps ``"0.001"``/``"0.01"`` to the TPR, or None where there are
    fewer than ``1 / fpr`` negatives. ``alpha``/``threshold``/``achieved_*`` are None
    for attacks that do not take a decision at a requested alpha.
    """

    name: str
    auc: float
    tpr_at_fpr: dict[str, float | None]
    tpr_at_zero_fpr: float
    fpr_at_tpr: dict[str, float]
    n_positives: int
    n_negatives: int
    alpha: float | None
    threshold: float | None
    achieved_fpr: float | None
    achieved_fpr_ci: tuple[float, float] | None
    achieved_tpr: float | None
    n_false_positives: int | None
    alpha_within_error: bool | None
    params: dict[str, Any]
    roc: RocCurve = dataclasses.field(repr=False, compare=False)
    alpha_guarantee: str | None = None
    alpha_check: str | None = None
    warnings: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-compatible dict (without the ROC arrays; they are recomputed from the scores)."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            if f.name == "roc":
                continue
            v = getattr(self, f.name)
            out[f.name] = list(v) if isinstance(v, tuple) else v
        return out


#: What the alpha decision of an attack promises (``params["alpha_guarantee"]``).
ALPHA_GUARANTEES: dict[str, str] = {
    "per-target": "FPR alpha for this target model (Def. 3.2): the threshold is a quantile "
    "of non-member scores of this target",
    "average-over-targets": "FPR alpha on average over target models (Def. 3.1), not for "
    "this one: the threshold comes from shadow models",
    "approximate": "FPR alpha only if the smoothed out-world distribution is exact "
    "(Ye et al. App. B.3); not calibrated",
}


#: Below this many members (or non-members) an attack's figures are a warning, not a
#: result: e.g. an AUC on 5 members has a 95% interval tens of points wide.
MIN_RECORDS_FOR_A_RESULT = 100


@dataclasses.dataclass(frozen=True)
class _Units:
    """The independent units of each class: records, or the groups of ``attack_metrics``."""

    n_positive: int
    n_negative: int
    noun: str  # plural, e.g. "documents"

    def same_as(self, roc: RocCurve) -> bool:
        return self.n_positive == roc.n_positives and self.n_negative == roc.n_negatives


def _units(
    roc: RocCurve, m: NDArray[np.bool_], groups: ArrayLike | None, unit: str
) -> _Units | None:
    """The groups' counts per class (None without groups); a group must be all members or
    all non-members (it is one unit of randomisation)."""
    if groups is None:
        return None
    _, _, group_member = pure_groups(groups, m, noun=unit)
    n_pos = int(np.count_nonzero(group_member))
    return _Units(n_pos, int(group_member.size - n_pos), f"{unit}s")


def _warnings(
    scores: AttackScores,
    rates: AchievedRates | None,
    alpha: float | None,
    roc: RocCurve,
    units: _Units | None = None,
    fprs: Sequence[float] = (),
) -> tuple[str, ...]:
    out = [str(w) for w in scores.params.get("warnings", [])]
    if units is None or units.same_as(roc):
        if min(roc.n_positives, roc.n_negatives) < MIN_RECORDS_FOR_A_RESULT:
            out.append(
                f"its figures rest on {roc.n_positives} members and {roc.n_negatives} "
                f"non-members (fewer than {MIN_RECORDS_FOR_A_RESULT} of one kind): read them "
                "as a warning, not a result"
            )
    else:
        if min(units.n_positive, units.n_negative) < MIN_RECORDS_FOR_A_RESULT:
            out.append(
                f"its figures rest on {roc.n_positives} members and {roc.n_negatives} "
                f"non-members from {units.n_positive} and {units.n_negative} "
                f"{units.noun} (fewer than {MIN_RECORDS_FOR_A_RESULT} {units.noun} of one "
                f"kind; the records of one of the {units.noun} share its membership and "
                "are not independent): read them as a warning, not a result"
            )
        for f in fprs:
            if _enough_negatives(roc.n_negatives, f) and not _enough_negatives(units.n_negative, f):
                out.append(
                    f"TPR at {100 * f:g}% FPR is n/a: {units.n_negative} non-member "
                    f"{units.noun}, fewer than 1/FPR = {round(1 / f)} (the "
                    f"{roc.n_negatives} non-member records are not independent)"
                )
    if rates is not None and alpha is not None:
        if rates.n_false_positives == 0 and rates.n_true_positives == 0:
            top = float(np.max(scores.scores))
            out.append(
                f"the attack does not fire at alpha={alpha:g}: no audited record reaches its "
                f"threshold ({rates.threshold:.6g}; highest score {top:.6g}), so its achieved "
                "FPR and TPR of 0 say nothing about the model"
            )
    return tuple(out)


#: Level of the test that withdraws a calibrated threshold's per-target guarantee when
#: the audited members and non-members have different numbers of OUT reference models.
OUT_COUNT_TEST_LEVEL = 0.001


def _out_count_dependence(params: Mapping[str, Any], m: NDArray[np.bool_]) -> str | None:
    """Why a population-calibrated threshold does not hold alpha for this target, or None.

    The calibration draws each calibration record's number of OUT reference models from
    the audited records' counts (``params["n_out_per_record"]``, recorded when they are
    not all equal), so its scores are those of a non-member only if the non-members'
    counts are distributed like everyone's, i.e. reference-model membership is
    independent of the target's. With the target's membership known, a chi-square test
    of homogeneity of the members' and non-members' counts checks that; below
    :data:`OUT_COUNT_TEST_LEVEL` the guarantee is withdrawn (e.g. the target is one row
    of a balanced keep matrix: every member has one OUT model more than every non-member).
    """
    raw = params.get("n_out_per_record")
    if raw is None:
        return None
    counts = np.asarray(raw, dtype=np.int64)
    if counts.shape != m.shape:
        raise fail(
            "params['n_out_per_record']", f"one OUT count per record ({m.size})", counts.shape
        )
    values, idx = np.unique(counts, return_inverse=True)
    if values.size < 2:
        return None
    table = np.stack(
        [np.bincount(idx[m], minlength=values.size), np.bincount(idx[~m], minlength=values.size)]
    ).astype(np.float64)
    expected = table.sum(axis=1, keepdims=True) * table.sum(axis=0, keepdims=True) / table.sum()
    stat = float(np.sum((table - expected) ** 2 / expected))
    p = float(special.chdtrc(values.size - 1, stat))
    if p >= OUT_COUNT_TEST_LEVEL:
        return None
    return (
        "the calibration draws its OUT-subset sizes from all audited records, which matches "
        "the non-members only if reference-model membership is independent of the "
        "target's, and here it is not: members have "
        f"{float(counts[m].mean()):.3g} OUT reference models on average, non-members "
        f"{float(counts[~m].mean()):.3g} (chi-square test of homogeneity, "
        + (f"p = {p:.2g})" if p >= 1e-16 else "p < 1e-16)")
    )


def _trial_sizes(params: Mapping[str, Any], n_negatives: int) -> tuple[list[int], list[int]] | None:
    """The per-trial calibration sizes and non-member counts of a pooled game
    (``params["trial_threshold_sample_sizes"]``, ``params["trial_n_negatives"]``, recorded
    by :func:`~privaudit.membership.games.pool_game`), or None."""
    sizes, negs = params.get("trial_threshold_sample_sizes"), params.get("trial_n_negatives")
    if sizes is None or negs is None:
        return None
    sizes, negs = [int(v) for v in sizes], [int(v) for v in negs]
    if len(sizes) != len(negs) or sum(negs) != n_negatives:
        raise fail(
            "params['trial_n_negatives']",
            f"one count per trial threshold ({len(sizes)}), summing to the {n_negatives} "
            "non-members scored",
            negs,
        )
    return sizes, negs


def _alpha_check(
    scores: AttackScores,
    rates: AchievedRates | None,
    alpha: float | None,
    m: NDArray[np.bool_],
    confidence: float,
) -> tuple[bool | None, str | None, str | None]:
    """``alpha_within_error``, ``alpha_check`` and, when the threshold's guarantee does
    not hold for this target, why (:func:`_out_count_dependence`)."""
    if rates is None or alpha is None:
        return None, None, None
    withdrawn = _out_count_dependence(scores.params, m)
    if withdrawn is not None:
        return None, f"no check: {withdrawn}", withdrawn
    trials = _trial_sizes(scores.params, rates.n_negatives)
    if trials is not None:
        sizes, negs = trials
        lo, hi = pooled_alpha_acceptance_region(alpha, sizes, negs, confidence)
        used = [s for s, n in zip(sizes, negs, strict=True) if n > 0]
        each = str(used[0]) if len(set(used)) == 1 else f"{min(used)}-{max(used)}"
        plural = "s" if len(used) != 1 else ""
        check = (
            f"beta-binomial convolution over {len(used)} trial threshold{plural} ({each} "
            f"calibration non-members each): {rates.n_negatives} audited non-members, "
            f"{100 * confidence:g}% central region; approximate: the trials are taken as "
            "independent, and trials that share calibration or audited records whose scores "
            "are alike across targets are not (the region is then too narrow)"
        )
        return lo <= rates.n_false_positives <= hi, check, None
    n_cal = scores.params.get("threshold_sample_size")
    n_cal = int(n_cal) if isinstance(n_cal, int | np.integer) and n_cal > 0 else None
    within = rates.alpha_within_error(alpha, n_calibration=n_cal)
    check = (
        f"beta-binomial: {rates.n_negatives} audited non-members and the threshold's "
        f"{n_cal} calibration non-members, {100 * confidence:g}% central region"
        if n_cal is not None
        else f"Clopper-Pearson {100 * confidence:g}% interval of the achieved FPR"
    )
    return within, check, None


def attack_metrics(
    scores: AttackScores,
    member: ArrayLike | MembershipMatrix,
    *,
    fprs: Sequence[float] = DEFAULT_FPRS,
    tprs: Sequence[float] = DEFAULT_TPRS,
    confidence: float = 0.95,
    groups: ArrayLike | None = None,
    unit: str | None = None,
) -> AttackMetrics:
    """All metrics of one attack: AUC, TPR@FPR, FPR@TPR, and the achieved FPR at its alpha.

    Parameters
    ----------
    scores : AttackScores
        The attack's per-record scores (higher = member), with ``alpha`` and
        ``threshold`` when the attack decides at a requested FPR.
    member : bool array aligned with ``scores.record_ids``, or MembershipMatrix
        The target's true membership of the scored records.
    fprs, tprs : sequences of float
        Where to read the ROC (defaults 0.1%, 1% and 50%, 90%).
    confidence : float
        Confidence of the Clopper-Pearson interval on the achieved FPR.
    groups : array (n,), optional
        The unit of randomisation of each record (e.g. its document: all chunks of a
        document share its membership and are alike), aligned with ``scores``; a group
        holds members only or non-members only. The records are then not independent,
        and the support rule counts groups: ``TPR@FPR=f`` is reported only with at least
        ``1 / f`` non-member groups (else None, with a warning saying why), and the
        figures are a warning when one class has fewer than
        :data:`MIN_RECORDS_FOR_A_RESULT` groups. The figures themselves are over records.
        When every group holds one record the result is the same as without ``groups``.
    unit : str, optional
        What a group is, in the warnings (e.g. ``"document"``); default the attack's
        ``params["group_unit"]`` (kept in ``results.json``, so a recomputation from the
        saved scores and groups words them alike), else ``"group"``.
    """
    if not isinstance(scores, AttackScores):
        raise fail("scores", "an AttackScores record", type(scores).__name__)
    m = membership_for(scores.record_ids, member)
    roc = roc_curve(scores.scores, m)
    noun = str(scores.params.get("group_unit", "group")) if unit is None else unit
    units = _units(roc, m, groups, noun)
    n_neg_units = roc.n_negatives if units is None else units.n_negative
    alpha: float | None = None
    rates: AchievedRates | None = None
    if scores.threshold is not None:
        rates = achieved_rates(scores.scores, m, scores.threshold, confidence=confidence)
        if scores.alpha is not None:
            alpha = check_probability(scores.alpha, "alpha")
    within, check, withdrawn = _alpha_check(scores, rates, alpha, m, confidence)
    guarantee = scores.params.get("alpha_guarantee") if alpha is not None else None
    if withdrawn is not None:
        guarantee = None
    warnings = _warnings(scores, rates, alpha, roc, units, fprs)
    if withdrawn is not None:
        warnings = (*warnings, f"alpha={alpha:g} is not guaranteed: {withdrawn}")
    return AttackMetrics(
        name=scores.attack,
        auc=roc.auc,
        tpr_at_fpr={
            _key(f): tpr_at_fpr(roc, f) if _enough_negatives(n_neg_units, f) else None for f in fprs
        },
        tpr_at_zero_fpr=tpr_at_zero_fpr(roc),
        fpr_at_tpr={_key(t): fpr_at_tpr(roc, t) for t in tprs},
        n_positives=roc.n_positives,
        n_negatives=roc.n_negatives,
        alpha=alpha,
        threshold=None if rates is None else rates.threshold,
        achieved_fpr=None if rates is None else rates.fpr,
        achieved_fpr_ci=None if rates is None else rates.fpr_ci,
        achieved_tpr=None if rates is None else rates.tpr,
        n_false_positives=None if rates is None else rates.n_false_positives,
        alpha_within_error=within,
        params=dict(scores.params),
        roc=roc,
        alpha_guarantee=None if guarantee is None else str(guarantee),
        alpha_check=check,
        warnings=warnings,
    )


@dataclasses.dataclass(frozen=True)
class AgreementMatrix:
    """Pairwise agreement of attacks' membership decisions (Ye et al. 2022, Table 2).

    ``train[i, j]`` is the fraction of training (member) points on which decisions
    ``names[i]`` and ``names[j]`` agree (both say member or both say non-member);
    ``test[i, j]`` the same on test (non-member) points. When the ground truth is
    included it is the last name, ``"GT"``; its agreement with an attack is the
    attack's TPR on train points and 1 - FPR on test points.
    """

    names: tuple[str, ...]
    train: NDArray[np.float64]
    test: NDArray[np.float64]
    n_train: int
    n_test: int
    n_train_pairs: NDArray[np.int64] | None = None
    n_test_pairs: NDArray[np.int64] | None = None

    def table(self) -> NDArray[np.float64]:
        """The paper's layout: upper triangle = train points, lower = test, NaN diagonal."""
        k = len(self.names)
        out = np.full((k, k), np.nan)
        iu = np.triu_indices(k, 1)
        il = np.tril_indices(k, -1)
        out[iu] = self.train[iu]
        out[il] = self.test[il]
        return out

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "names": list(self.names),
            "train": self.train.tolist(),
            "test": self.test.tolist(),
            "n_train": self.n_train,
            "n_test": self.n_test,
        }
        if self.n_train_pairs is not None and self.n_test_pairs is not None:
            out["n_train_pairs"] = self.n_train_pairs.tolist()
            out["n_test_pairs"] = self.n_test_pairs.tolist()
        return out


def agreement_matrix(
    decisions: Mapping[str, ArrayLike],
    member: ArrayLike,
    *,
    include_ground_truth: bool = True,
    scored: Mapping[str, ArrayLike] | None = None,
) -> AgreementMatrix:
    """Agreement rates between attacks' member decisions, on train and on test points.

    For decisions ``d_a, d_b`` (True = "member") over the same records,

    .. math::

        \\mathrm{agree}_{\\mathrm{train}}(a, b) = \\frac{1}{n_+}\\sum_{i: m_i=1} [d_a(i) = d_b(i)],
        \\qquad
        \\mathrm{agree}_{\\mathrm{test}}(a, b) = \\frac{1}{n_-}\\sum_{i: m_i=0} [d_a(i) = d_b(i)].

    This is Ye et al. 2022, section 5.3, Table 2 ("agreement rate ... for 500 train and
    500 test data points; upper triangle train, lower triangle test"), with the ground
    truth as an extra column (there: agreement with GT is TPR on train and 1 - FPR on
    test, which matches the table's numbers). The decisions are those of each attack at
    its requested alpha (``AttackScores.decisions()``).

    Parameters
    ----------
    decisions : mapping name -> bool array (n,)
        At least one attack; all arrays aligned with ``member``.
    member : bool array (n,)
        True membership; at least one member and one non-member.
    include_ground_truth : bool
        Add ``"GT"`` (the membership itself) as the last row/column.
    scored : mapping name -> bool array (n,), optional
        For attacks that scored only some records (Attack L scores every non-member
        but only the sampled members): which records each one scored (default: all).
        Each pair is then compared on the records *both* scored, and the matrix
        carries the per-pair counts (``n_train_pairs``, ``n_test_pairs``).
    """
    m = as_bool_array(member, "member", ndim=1)
    check_both_classes(m, "member")
    if not decisions:
        raise fail("decisions", "at least one attack's decisions", "none")
    names = [str(k) for k in decisions]
    rows = []
    for name, d in decisions.items():
        a = as_bool_array(d, f"decisions[{name!r}]", ndim=1)
        if a.size != m.size:
            raise fail(f"decisions[{name!r}]", f"one decision per record ({m.size})", a.size)
        rows.append(a)
    if include_ground_truth:
        if "GT" in names:
            raise fail("decisions", "no attack named 'GT' (reserved for the ground truth)", "GT")
        names.append("GT")
        rows.append(m)
    d_all = np.stack(rows)  # (k, n)
    masks = []
    for name in names:
        if scored is not None and name in scored:
            sm = as_bool_array(scored[name], f"scored[{name!r}]", ndim=1)
            if sm.size != m.size:
                raise fail(f"scored[{name!r}]", f"one flag per record ({m.size})", sm.size)
            masks.append(sm)
        else:
            masks.append(np.ones(m.size, dtype=bool))
    s_all = np.stack(masks).astype(np.float64)  # (k, n): 1 where scored

    def agree(cols: NDArray[np.bool_]) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
        x = d_all[:, cols].astype(np.float64)
        w = s_all[:, cols]
        both_member = (x * w) @ (x * w).T
        both_non = ((1.0 - x) * w) @ ((1.0 - x) * w).T
        count = w @ w.T
        with np.errstate(invalid="ignore", divide="ignore"):
            rate = np.where(count > 0, (both_member + both_non) / count, np.nan)
        return np.asarray(rate, dtype=np.float64), np.rint(count).astype(np.int64)

    train, n_train_pairs = agree(m)
    test, n_test_pairs = agree(~m)
    partial = scored is not None and not bool(s_all.all())
    return AgreementMatrix(
        names=tuple(names),
        train=train,
        test=test,
        n_train=int(m.sum()),
        n_test=int((~m).sum()),
        n_train_pairs=n_train_pairs if partial else None,
        n_test_pairs=n_test_pairs if partial else None,
    )
