"""Calibration and overlap diagnostics of estimated propensity scores.

The Zero-Run paper ("Privacy Auditing with Zero (0) Training Run", 2026, App. F.2
"Calibration and overlap diagnostics") evaluates every propensity estimator by held-out
ROC AUC, log loss, Brier score, expected calibration error, calibration intercept and
slope, and by overlap diagnostics: the score distribution, the fraction of extreme
scores, the empirical common support and the effective sample size left by the
correction. AUC measures separability; calibration and overlap decide whether the
probabilities are a reliable basis for the correction ("high AUC alone does not imply
adequate overlap"). Sec. 8 and App. K.1 (Enron emails vs TREC spam: AUC ~0.98, Kish
effective sample size 297 of 15,223, 36.8 % of scores outside [0.01, 0.99]) show the
failure mode that :func:`propensity_diagnostics` warns about: the corrected bound
collapses to 0 (Prop. A.3, no overlap -> no valid audit).

The scores passed in must be held-out (cross-fitted) ones, e.g. from
:func:`privaudit.zero_run.propensity.cross_fit_propensity`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import brentq
from scipy.special import expit
from scipy.stats import rankdata

from privaudit._validation import (
    as_bool_array,
    as_float_array,
    check_both_classes,
    check_positive_int,
    check_probability,
    check_same_length,
    fail,
)

__all__ = [
    "QUANTILE_LEVELS",
    "calibration_intercept",
    "calibration_slope",
    "expected_calibration_error",
    "kish_ess",
    "overlap_is_poor",
    "propensity_diagnostics",
    "roc_auc",
]

QUANTILE_LEVELS: tuple[float, ...] = (0.0, 0.01, 0.05, 0.25, 0.5, 0.75, 0.95, 0.99, 1.0)
"""Levels of the per-class score quantiles reported by :func:`propensity_diagnostics`."""

LOGIT_CLIP = 30.0
"""``|logit(pi)|`` is capped at this value inside the calibration fits only."""

LOG_LOSS_EPS = 1e-15
"""Scores are clipped to ``[eps, 1 - eps]`` inside the log-loss computation only."""


def _check_scores(
    pi: ArrayLike, member: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    p = as_float_array(pi, "pi", ndim=1)
    s = as_bool_array(member, "member", ndim=1)
    check_same_length(pi=p, member=s)
    outside = int(((p < 0.0) | (p > 1.0)).sum())
    if outside:
        raise fail("pi", "propensity scores in [0, 1]", f"{outside} value(s) outside [0, 1]")
    check_both_classes(s, "member")
    return p, s


def _clipped_logit(p: NDArray[np.float64]) -> NDArray[np.float64]:
    """``logit(p)`` capped to ``[-LOGIT_CLIP, LOGIT_CLIP]`` (so p in {0, 1} is finite)."""
    with np.errstate(divide="ignore"):
        z = np.log(p) - np.log1p(-p)
    return np.clip(z, -LOGIT_CLIP, LOGIT_CLIP)


def roc_auc(pi: ArrayLike, member: ArrayLike) -> float:
    r"""Held-out ROC AUC of the scores for membership (Mann-Whitney form).

    ``AUC = (sum_{i: S_i=1} rank_i - n_1 (n_1 + 1) / 2) / (n_1 n_0)`` with average
    ranks for ties, i.e. ``P(pi_member > pi_nonmember) + P(tie) / 2``. 0.5: the
    populations are indistinguishable from the features; 1: fully separable.
    """
    p, s = _check_scores(pi, member)
    return _auc(p, s)


def _auc(p: NDArray[np.float64], s: NDArray[np.bool_]) -> float:
    ranks = rankdata(p, method="average")
    n1 = int(s.sum())
    n0 = s.size - n1
    return float((ranks[s].sum() - n1 * (n1 + 1) / 2.0) / (n1 * n0))


def expected_calibration_error(
    pi: ArrayLike, member: ArrayLike, *, n_bins: int = 10
) -> tuple[float, list[dict[str, Any]]]:
    r"""Expected calibration error with equal-width bins, weighted by bin size.

    ``ECE = sum_b (n_b / n) |mean_{i in b} S_i - mean_{i in b} pi_i|`` over the bins
    ``[k/B, (k+1)/B)`` (the last bin is closed at 1).

    Returns
    -------
    ece : float
    reliability : list of dict
        One entry per bin: ``low``, ``high``, ``count``, ``mean_pi`` and
        ``member_rate`` (``None`` for an empty bin).
    """
    p, s = _check_scores(pi, member)
    n_bins = check_positive_int(n_bins, "n_bins", minimum=1)
    return _ece(p, s, n_bins)


def _ece(
    p: NDArray[np.float64], s: NDArray[np.bool_], n_bins: int
) -> tuple[float, list[dict[str, Any]]]:
    idx = np.minimum((p * n_bins).astype(np.int64), n_bins - 1)
    counts = np.bincount(idx, minlength=n_bins)
    sum_p = np.bincount(idx, weights=p, minlength=n_bins)
    sum_s = np.bincount(idx, weights=s.astype(np.float64), minlength=n_bins)
    ece = 0.0
    table: list[dict[str, Any]] = []
    for k in range(n_bins):
        c = int(counts[k])
        row: dict[str, Any] = {"low": k / n_bins, "high": (k + 1) / n_bins, "count": c}
        if c:
            mp, ms = float(sum_p[k] / c), float(sum_s[k] / c)
            ece += c / p.size * abs(ms - mp)
            row.update(mean_pi=mp, member_rate=ms)
        else:
            row.update(mean_pi=None, member_rate=None)
        table.append(row)
    return float(ece), table


def calibration_intercept(pi: ArrayLike, member: ArrayLike) -> float:
    r"""Calibration-in-the-large: ``a`` in ``logit P(S=1) = a + logit(pi)``.

    The maximum-likelihood ``a`` of a logistic model of ``S`` with offset
    ``logit(pi_i)`` and slope fixed at 1 solves ``sum_i expit(a + logit pi_i) = n_1``
    (monotone in ``a``; found by Brent's method). ``a = 0`` for calibrated-in-the-large
    scores, ``a > 0`` when the scores under-predict membership. ``logit(pi)`` is capped
    at ``+-30`` inside this fit only, so that scores of exactly 0 or 1 stay usable.
    """
    p, s = _check_scores(pi, member)
    return _intercept(_clipped_logit(p), s)


def _intercept(z: NDArray[np.float64], s: NDArray[np.bool_]) -> float:
    target = float(s.sum())

    def score(a: float) -> float:
        return float(expit(a + z).sum()) - target

    # both classes present: score(-2 LOGIT_CLIP - 40) < 0 < score(2 LOGIT_CLIP + 40)
    bound = 2.0 * LOGIT_CLIP + 40.0
    return float(brentq(score, -bound, bound, xtol=1e-12, rtol=1e-12, maxiter=500))


def calibration_slope(pi: ArrayLike, member: ArrayLike) -> tuple[float | None, float | None]:
    r"""Logistic recalibration ``logit P(S=1) = a + b logit(pi)``: returns ``(b, a)``.

    Maximum likelihood by Newton's method (IRLS) with step halving. ``b = 1`` and
    ``a = 0`` for calibrated scores; ``b < 1`` means over-confident scores (too
    extreme), ``b > 1`` under-confident ones. ``logit(pi)`` is capped at ``+-30``
    inside this fit only. ``(None, None)`` when the maximum-likelihood estimate does not
    exist: constant scores (``b`` not identifiable) or scores that separate the two
    classes completely (``b -> +-inf``).
    """
    p, s = _check_scores(pi, member)
    return _slope(_clipped_logit(p), s)


def _slope(z: NDArray[np.float64], s: NDArray[np.bool_]) -> tuple[float | None, float | None]:
    zm, z0 = z[s], z[~s]
    if z.max() == z.min():
        return None, None
    if zm.min() >= z0.max() or z0.min() >= zm.max():
        return None, None  # (quasi-)complete separation: no finite MLE
    y = s.astype(np.float64)
    x = np.column_stack([np.ones_like(z), z])

    def loglik(beta: NDArray[np.float64]) -> float:
        eta = x @ beta
        return float(np.sum(y * eta - np.logaddexp(0.0, eta)))

    beta = np.zeros(2)
    ll = loglik(beta)
    for _ in range(200):
        mu = expit(x @ beta)
        grad = x.T @ (y - mu)
        w = mu * (1.0 - mu)
        hess = x.T @ (x * w[:, None])
        try:
            step = np.linalg.solve(hess, grad)
        except np.linalg.LinAlgError:
            return None, None
        t = 1.0
        while True:
            cand = beta + t * step
            ll_new = loglik(cand)
            if ll_new >= ll - 1e-12 or t < 1e-10:
                break
            t /= 2.0
        beta, ll = cand, ll_new
        if np.max(np.abs(t * step)) < 1e-10 * (1.0 + np.max(np.abs(beta))):
            return float(beta[1]), float(beta[0])
    return None, None


def kish_ess(weights: ArrayLike) -> float:
    r"""Kish effective sample size ``(sum w)^2 / sum w^2`` of non-negative weights.

    Infinite weights (from propensities of exactly 0 or 1) are handled by the limit in
    which they grow at the same rate: the ESS is then their number. All-zero weights
    give 0 (no record carries weight).
    """
    w = as_float_array(weights, "weights", ndim=1, allow_inf=True, allow_empty=True)
    if (w < 0).any():
        raise fail("weights", "non-negative weights", f"{int((w < 0).sum())} negative")
    n_inf = int(np.isinf(w).sum())
    if n_inf:
        return float(n_inf)
    top = float(w.max()) if w.size else 0.0
    if top == 0.0:
        return 0.0
    v = w / top
    return float(v.sum() ** 2 / np.dot(v, v))


def _odds_weights(p: NDArray[np.float64], s: NDArray[np.bool_]) -> NDArray[np.float64]:
    """Members: ``(1 - pi)/pi``; non-members: ``pi/(1 - pi)`` (``inf`` at 0 / 1)."""
    num = np.where(s, 1.0 - p, p)
    den = np.where(s, p, 1.0 - p)
    with np.errstate(divide="ignore", invalid="ignore"):
        w = num / den
    return np.where(den == 0.0, np.inf, w)


def propensity_diagnostics(
    pi: ArrayLike,
    member: ArrayLike,
    *,
    extreme: float = 0.01,
    n_bins: int = 10,
    n_hist_bins: int = 20,
    auc_warn: float = 0.95,
    ess_fraction_warn: float = 0.05,
    extreme_fraction_warn: float = 0.2,
    retention_warn: float = 0.1,
    ece_warn: float = 0.1,
) -> dict[str, Any]:
    r"""Calibration and overlap diagnostics of held-out propensity scores.

    Implements the diagnostics listed in the Zero-Run paper, App. F.2 ("Calibration and
    overlap diagnostics"), with the overlap warning of Sec. 8 / App. K.1.

    Parameters
    ----------
    pi
        Held-out (cross-fitted) propensity scores ``pi_hat_i = P(member | x_i)`` in
        ``[0, 1]``, unclipped.
    member
        Membership (``True`` = known member).
    extreme
        A score is extreme when ``pi < extreme`` or ``pi > 1 - extreme`` (paper: 0.01).
    n_bins
        Equal-width bins of the expected calibration error.
    n_hist_bins
        Equal-width bins on ``[0, 1]`` of the per-class score histograms.
    auc_warn, ess_fraction_warn, extreme_fraction_warn, retention_warn
        Overlap is flagged as too poor for a meaningful audit when ``auc > auc_warn``
        (default 0.95; Enron vs TREC: 0.98), some class's ESS fraction
        ``< ess_fraction_warn`` (default 0.05; Enron: 0.02), ``fraction_extreme >
        extreme_fraction_warn`` (default 0.2; Enron: 0.368) or ``retention_mean <
        retention_warn`` (default 0.1; CIFAR-10/WikiText: 0.55-0.70).
    ece_warn
        A (non-overlap) warning is added when ``ece > ece_warn`` (default 0.1).

    Returns
    -------
    dict
        A JSON-compatible plain dict (floats, ints, strings, lists, dicts, ``None``):

        ``n``, ``n_member``, ``n_non_member``
            Counts.
        ``auc``
            Held-out ROC AUC (:func:`roc_auc`).
        ``log_loss``
            ``-mean(S log pi + (1-S) log(1-pi))`` with ``pi`` clipped to
            ``[1e-15, 1 - 1e-15]`` inside this computation only (a score of exactly 0
            for a member would otherwise make it infinite; each term is capped at
            ``-log(1e-15) ~ 34.5``).
        ``brier``
            ``mean((pi - S)^2)``.
        ``ece``, ``reliability``
            :func:`expected_calibration_error` with ``n_bins`` bins.
        ``calibration_intercept``
            :func:`calibration_intercept` (slope fixed at 1; 0 if calibrated).
        ``calibration_slope``, ``calibration_slope_intercept``
            :func:`calibration_slope` (``b``, ``a``; 1 and 0 if calibrated; ``None``
            when undefined).
        ``quantiles``
            ``{"levels": QUANTILE_LEVELS, "member": [...], "non_member": [...]}``.
        ``histogram``
            ``{"edges": [...], "member": [counts], "non_member": [counts]}``.
        ``extreme_threshold``, ``fraction_extreme``, ``fraction_extreme_member``,
        ``fraction_extreme_non_member``
            Share of scores with ``pi < extreme`` or ``pi > 1 - extreme``.
        ``common_support``
            ``{"low", "high", "fraction_inside", "fraction_inside_member",
            "fraction_inside_non_member"}``: the interval ``[max_c min_i pi_i,
            min_c max_i pi_i]`` over the two classes ``c`` and the share of records in
            it (``low > high``: empty, share 0).
        ``retention_mean``, ``retention_sum``
            Mean and sum of the f-DP tampering retention ``b_i = exp(-eps_DS(x_i)) =
            min(pi_i, 1-pi_i) / max(pi_i, 1-pi_i)`` (Theorem 5.1.2); the sum is the
            paper's "effective sample size sum_i b_i" after the pointwise correction
            (Sec. 5), the mean is the "mean retention" of App. I.3 / J.3.
        ``ess``
            ``{"member": {"ess", "n", "fraction"}, "non_member": {...}}``: Kish ESS
            (:func:`kish_ess`) of the inverse-propensity odds weights that reweight
            each class to the other one -- members ``w = (1-pi)/pi``, non-members
            ``w = pi/(1-pi)`` -- and ESS / class size (App. K.1: "297 of 15,223").
        ``n_pi_zero``, ``n_pi_one``
            Counts of scores exactly 0 and exactly 1 (infinite ``eps_DS``).
        ``thresholds``
            The warning thresholds used.
        ``overlap_poor``
            ``True`` when any overlap criterion above is met.
        ``warnings``
            Human-readable messages (overlap, calibration and degenerate scores).

    Raises
    ------
    InvalidInputError
        ``pi`` not 1-D, NaN or outside ``[0, 1]``; ``member`` not booleans, one class
        only, or a length mismatch; bad thresholds or bin counts.
    """
    p, s = _check_scores(pi, member)
    extreme, n_bins, n_hist_bins = _check_settings(extreme, n_bins, n_hist_bins)
    thresholds = _check_thresholds(
        auc_warn=auc_warn,
        ess_fraction_warn=ess_fraction_warn,
        extreme_fraction_warn=extreme_fraction_warn,
        retention_warn=retention_warn,
        ece_warn=ece_warn,
    )
    diag = {
        **_counts(s),
        **_calibration(p, s, n_bins),
        **_score_distribution(p, s, n_hist_bins),
        **_overlap(p, s, extreme),
    }
    return {**diag, **_warnings(diag, thresholds)}


def _check_settings(extreme: float, n_bins: int, n_hist_bins: int) -> tuple[float, int, int]:
    """The checked ``extreme`` (in ``(0, 0.5)``), ``n_bins`` and ``n_hist_bins`` (>= 1)."""
    extreme = check_probability(extreme, "extreme")
    if extreme >= 0.5:
        raise fail("extreme", "a value in (0, 0.5)", extreme)
    n_bins = check_positive_int(n_bins, "n_bins", minimum=1)
    n_hist_bins = check_positive_int(n_hist_bins, "n_hist_bins", minimum=1)
    return extreme, n_bins, n_hist_bins


def _check_thresholds(**thresholds: float) -> dict[str, float]:
    """The warning thresholds by name, in the order given, each checked to lie in ``[0, 1]``."""
    return {
        name: check_probability(value, name, open_interval=False)
        for name, value in thresholds.items()
    }


def _counts(s: NDArray[np.bool_]) -> dict[str, Any]:
    """The keys ``n``, ``n_member`` and ``n_non_member`` of :func:`propensity_diagnostics`."""
    n1 = int(s.sum())
    return {"n": s.size, "n_member": n1, "n_non_member": s.size - n1}


def _calibration(p: NDArray[np.float64], s: NDArray[np.bool_], n_bins: int) -> dict[str, Any]:
    """How well the scores rank and are calibrated: AUC, log loss, Brier, ECE, intercept, slope.

    The keys ``auc`` to ``calibration_slope_intercept`` of :func:`propensity_diagnostics`.
    """
    y = s.astype(np.float64)
    pc = np.clip(p, LOG_LOSS_EPS, 1.0 - LOG_LOSS_EPS)
    ece, reliability = _ece(p, s, n_bins)
    z = _clipped_logit(p)
    slope, slope_intercept = _slope(z, s)
    return {
        "auc": _auc(p, s),
        "log_loss": float(-np.mean(y * np.log(pc) + (1.0 - y) * np.log1p(-pc))),
        "brier": float(np.mean((p - y) ** 2)),
        "ece": ece,
        "reliability": reliability,
        "calibration_intercept": _intercept(z, s),
        "calibration_slope": slope,
        "calibration_slope_intercept": slope_intercept,
    }


def _score_distribution(
    p: NDArray[np.float64], s: NDArray[np.bool_], n_hist_bins: int
) -> dict[str, Any]:
    """Per-class quantiles (:data:`QUANTILE_LEVELS`) and histograms on ``[0, 1]`` of the scores."""
    pm, p0 = p[s], p[~s]
    levels = np.asarray(QUANTILE_LEVELS)
    edges = np.linspace(0.0, 1.0, n_hist_bins + 1)
    return {
        "quantiles": {
            "levels": [float(q) for q in QUANTILE_LEVELS],
            "member": [float(v) for v in np.quantile(pm, levels)],
            "non_member": [float(v) for v in np.quantile(p0, levels)],
        },
        "histogram": {
            "edges": [float(e) for e in edges],
            "member": [int(c) for c in np.histogram(pm, bins=edges)[0]],
            "non_member": [int(c) for c in np.histogram(p0, bins=edges)[0]],
        },
    }


def _overlap(p: NDArray[np.float64], s: NDArray[np.bool_], extreme: float) -> dict[str, Any]:
    """How much the classes overlap: extreme scores, common support, retention, class ESS.

    The keys ``extreme_threshold`` to ``n_pi_one`` of :func:`propensity_diagnostics`
    (App. F.2; the retention of Theorem 5.1.2; Kish ESS of the odds weights, App. K.1).
    """
    pm, p0 = p[s], p[~s]
    is_extreme = (p < extreme) | (p > 1.0 - extreme)
    low = max(float(pm.min()), float(p0.min()))
    high = min(float(pm.max()), float(p0.max()))
    inside = (p >= low) & (p <= high) if low <= high else np.zeros(p.size, dtype=bool)
    retention = np.minimum(p, 1.0 - p) / np.maximum(p, 1.0 - p)
    w = _odds_weights(p, s)
    ess: dict[str, dict[str, Any]] = {}
    for label, mask in (("member", s), ("non_member", ~s)):
        e = kish_ess(w[mask])
        size = int(mask.sum())
        ess[label] = {"ess": e, "n": size, "fraction": e / size}
    return {
        "extreme_threshold": extreme,
        "fraction_extreme": float(is_extreme.mean()),
        "fraction_extreme_member": float(is_extreme[s].mean()),
        "fraction_extreme_non_member": float(is_extreme[~s].mean()),
        "common_support": {
            "low": low,
            "high": high,
            "fraction_inside": float(inside.mean()),
            "fraction_inside_member": float(inside[s].mean()),
            "fraction_inside_non_member": float(inside[~s].mean()),
        },
        "retention_mean": float(retention.mean()),
        "retention_sum": float(retention.sum()),
        "ess": ess,
        "n_pi_zero": int((p == 0.0).sum()),
        "n_pi_one": int((p == 1.0).sum()),
    }


_OVERLAP_REMEDY = (
    "the corrected bound will collapse towards 0; narrow the population or find "
    "better-matched non-members (cf. the Enron-vs-TREC-spam case of the Zero-Run "
    "paper, Sec. 8 / App. K.1)"
)


def _overlap_warnings(diag: dict[str, Any], th: dict[str, float]) -> list[str]:
    """The overlap criteria that fired (AUC, class ESS, extreme scores, mean retention).

    Any of them sets ``overlap_poor``: the corrected bound is expected to collapse.
    """
    auc, remedy = diag["auc"], _OVERLAP_REMEDY
    msgs: list[str] = []
    if auc > th["auc_warn"]:
        msgs.append(
            f"held-out ROC AUC {auc:.3f} > {th['auc_warn']:g}: members and non-members are "
            f"almost separable from their features alone; {remedy}"
        )
    for label in ("member", "non_member"):
        ess = diag["ess"][label]
        frac = ess["fraction"]
        if frac < th["ess_fraction_warn"]:
            other = "non-member" if label == "member" else "member"
            msgs.append(
                f"effective sample size of the {label.replace('_', '-')}s reweighted to the "
                f"{other} distribution is {ess['ess']:.1f} of {ess['n']} "
                f"({100 * frac:.1f}% < {100 * th['ess_fraction_warn']:g}%): the correction "
                f"rests on a handful of records; {remedy}"
            )
    fraction_extreme, extreme = diag["fraction_extreme"], diag["extreme_threshold"]
    if fraction_extreme > th["extreme_fraction_warn"]:
        msgs.append(
            f"{100 * fraction_extreme:.1f}% of the propensity scores are below {extreme:g} "
            f"or above {1 - extreme:g} (> {100 * th['extreme_fraction_warn']:g}%): these "
            f"records carry almost no evidence after the correction; {remedy}"
        )
    if diag["retention_mean"] < th["retention_warn"]:
        msgs.append(
            f"mean tampering retention exp(-eps_DS) is {diag['retention_mean']:.3f} "
            f"(< {th['retention_warn']:g}; sum {diag['retention_sum']:.1f} of {diag['n']} "
            f"records): {remedy}"
        )
    return msgs


def _warnings(diag: dict[str, Any], thresholds: dict[str, float]) -> dict[str, Any]:
    """The keys ``thresholds``, ``overlap_poor`` and ``warnings`` of :func:`propensity_diagnostics`.

    Overlap is poor when any overlap criterion fired (:func:`_overlap_warnings`); its
    messages come first, then the others (:func:`_other_warnings`).
    """
    overlap_msgs = _overlap_warnings(diag, thresholds)
    return {
        "thresholds": thresholds,
        "overlap_poor": bool(overlap_msgs),
        "warnings": overlap_msgs + _other_warnings(diag, thresholds),
    }


def _other_warnings(diag: dict[str, Any], th: dict[str, float]) -> list[str]:
    """Warnings that do not concern overlap: anti-predictive, uncalibrated or degenerate scores."""
    msgs: list[str] = []
    if diag["auc"] < 1.0 - th["auc_warn"]:
        msgs.append(
            f"held-out ROC AUC {diag['auc']:.3f} < {1 - th['auc_warn']:g}: the scores rank "
            "members below non-members; the propensity model is anti-predictive (wrong class "
            "orientation or label error?)"
        )
    if diag["ece"] > th["ece_warn"]:
        msgs.append(
            f"expected calibration error {diag['ece']:.3f} > {th['ece_warn']:g}: the scores are "
            "poorly calibrated; the correction uses the probabilities themselves, not only "
            "their ranking -- prefer a better-calibrated propensity model"
        )
    n_zero, n_one = diag["n_pi_zero"], diag["n_pi_one"]
    if n_zero or n_one:
        msgs.append(
            f"{n_zero} score(s) are exactly 0 and {n_one} exactly 1 (infinite eps_DS): "
            "these records are dropped by the pointwise correction (retention 0)"
        )
    if diag["calibration_slope"] is None:
        msgs.append(
            "calibration slope undefined: the scores are constant or separate the two "
            "classes completely"
        )
    return msgs


def overlap_is_poor(diag: dict[str, Any]) -> bool:
    """Whether :func:`propensity_diagnostics` flagged overlap as too poor for an audit.

    ``True`` when any overlap criterion fired (AUC, class ESS fraction, fraction of
    extreme scores or mean retention); the corrected bound is then expected to
    collapse towards 0 (Zero-Run paper, Sec. 8, Prop. A.3).
    """
    if not isinstance(diag, dict) or not isinstance(diag.get("overlap_poor"), bool):
        raise fail("diag", "the dict returned by propensity_diagnostics", type(diag).__name__)
    return bool(diag["overlap_poor"])
