r"""Per-record calibrated TPR at a chosen FPR, beside the pooled figure (Jälkö et al. 2026).

Jälkö, Pradhan, Räisä and Honkela ("On Reliability of Efficient Membership Inference
Vulnerability Evaluation", arXiv 2605.25819) study the *efficient* evaluation pipeline:
many models are trained on random halves of the data, each record is scored by several
target models that trained on it (IN) and several that did not (OUT), and the scores of
all records are concatenated before one threshold is chosen. They show two weaknesses:

1. **Pooled TPR at FPR is not calibrated per record.** One threshold at pooled FPR
   :math:`\alpha` gives each record its own FPR, some far above :math:`\alpha` and some
   far below; the pooled TPR is then not the TPR any record has at FPR :math:`\alpha`,
   which is what a DP audit reads. Their fix is a post-processing that calibrates the
   threshold per record before averaging ("mild Gaussian assumptions", abstract).
2. **Finite-population bias of the efficient LiRA implementation** (Carlini et al.
   2022): per-record Gaussians fitted on a finite number of models, used as if exact,
   overstate per-record vulnerability (a positive bias).

Implemented here, with ``scores[j, i]`` the attack's score of record i by evaluation
model j and ``member[j, i]`` whether model j trained on record i:

``pooled``
    the threshold :math:`t` with pooled FPR :math:`\le \alpha` over all OUT pairs, the
    TPR over all IN pairs, and each record's empirical FPR at :math:`t` (its spread is
    the miscalibration).
``calibrated``
    per record, a threshold from its OUT scores under a Gaussian model,
    :math:`t_i = \bar s_{out,i} + c_i\,\hat\sigma_{out,i}`, and its TPR as the fraction
    of its IN scores strictly above :math:`t_i` (a record whose OUT scores are all equal
    gets :math:`t_i` = that value, so ties are not detections); the figure is the mean over records of that TPR.
    With ``finite_population_correction=True`` (default) :math:`c_i =
    t^{-1}_{n_i - 1}(1-\alpha)\sqrt{1 + 1/n_i}` with the unbiased :math:`\hat\sigma`
    (``ddof=1``): the quantile of the posterior-predictive / prediction-interval
    distribution of a *new* OUT score, so a new OUT score of a Gaussian record exceeds
    :math:`t_i` with probability exactly :math:`\alpha` whatever :math:`n_i` (Student
    1908; the prediction interval of a Gaussian sample). Without it :math:`c_i =
    \Phi^{-1}(1-\alpha)` with ``ddof=0`` (``np.std``, as the reference LiRA code fits its
    Gaussians): the plug-in that treats the fitted Gaussian as exact, whose FPR exceeds
    :math:`\alpha` for small :math:`n_i` (e.g. 0.085 instead of 0.01 with 4 OUT
    scores), which inflates the calibrated TPR: the finite-population bias.

What the available text (the abstract and summaries) does not settle: the paper's
exact calibration estimator and the exact form of its LiRA correction. The correction
here is the exact one for Gaussian OUT scores, named as such; a simulation with known
per-record FPRs (``tests/metrics/test_calibrated.py``) checks that it holds
:math:`\alpha` per record and that the pooled threshold does not.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from privaudit._validation import check_probability, fail

__all__ = ["CalibratedTpr", "calibrated_tpr_at_fpr"]


@dataclasses.dataclass(frozen=True)
class CalibratedTpr:
    """Pooled and per-record calibrated TPR at one FPR (labelled figures).

    Attributes
    ----------
    fpr : float
        The requested false-positive rate :math:`\\alpha`.
    pooled_tpr : float
        TPR over all IN pairs at the pooled threshold (pooled FPR <= alpha).
    pooled_threshold : float
        That threshold.
    pooled_record_fpr_max, pooled_record_fpr_share_above_2x : float
        The largest empirical per-record FPR at the pooled threshold, and the share of
        records whose empirical FPR there exceeds ``2 * fpr``.
    calibrated_tpr : float
        Mean over records of the TPR at the record's own threshold (FPR alpha each).
    finite_population_correction : bool
        Whether the per-record thresholds use the Student-t prediction quantile.
    n_records, n_in_min, n_out_min : int
        Records evaluated; the fewest IN / OUT scores of a record.
    """

    fpr: float
    pooled_tpr: float
    pooled_threshold: float
    pooled_record_fpr_max: float
    pooled_record_fpr_share_above_2x: float
    calibrated_tpr: float
    finite_population_correction: bool
    n_records: int
    n_in_min: int
    n_out_min: int

    def to_dict(self) -> dict[str, Any]:
        """The figures with their labels (``results.json`` style)."""
        return {
            "fpr": self.fpr,
            "pooled": {
                "label": "pooled over records (one threshold; not calibrated per record)",
                "tpr": self.pooled_tpr,
                "threshold": self.pooled_threshold,
                "record_fpr_max": self.pooled_record_fpr_max,
                "record_fpr_share_above_2x": self.pooled_record_fpr_share_above_2x,
            },
            "calibrated": {
                "label": "per-record calibrated (Jalko et al. 2026): mean per-record TPR at "
                "per-record FPR alpha"
                + (
                    ", finite-population corrected"
                    if self.finite_population_correction
                    else ", plug-in Gaussian (no finite-population correction)"
                ),
                "tpr": self.calibrated_tpr,
                "finite_population_correction": self.finite_population_correction,
            },
            "n_records": self.n_records,
            "n_in_min": self.n_in_min,
            "n_out_min": self.n_out_min,
        }


def record_thresholds(
    scores: NDArray[np.float64],
    out_mask: NDArray[np.bool_],
    fpr: float,
    *,
    finite_population_correction: bool = True,
) -> NDArray[np.float64]:
    """Per-record thresholds at FPR ``fpr`` from each record's OUT scores (module docstring)."""
    n = out_mask.sum(axis=0).astype(np.float64)
    mean = np.where(out_mask, scores, 0.0).sum(axis=0) / n
    ss = (np.where(out_mask, scores - mean[None, :], 0.0) ** 2).sum(axis=0)
    if finite_population_correction:
        sd = np.sqrt(ss / (n - 1.0))
        # Student t's upper fpr-quantile: scipy.stats.t.isf's floats, without importing
        # scipy.stats (0.4 s of every command's start-up)
        c = -special.stdtrit(n - 1.0, fpr) * np.sqrt(1.0 + 1.0 / n)
    else:
        sd = np.sqrt(ss / n)
        c = np.full(n.shape, -special.ndtri(fpr))
    out: NDArray[np.float64] = mean + c * sd
    return out


def calibrated_tpr_at_fpr(
    scores: ArrayLike,
    member: ArrayLike,
    fpr: float,
    *,
    finite_population_correction: bool = True,
) -> CalibratedTpr:
    """Pooled and per-record calibrated TPR at FPR ``fpr`` (Jälkö et al. 2026).

    Parameters
    ----------
    scores : (m, n) array
        ``scores[j, i]``: the attack's score (higher = member) of record i by evaluation
        model j (e.g. every reference model in turn as the target).
    member : (m, n) bool array
        Whether model j trained on record i.
    fpr : float
        The false-positive rate alpha, in (0, 1).
    finite_population_correction : bool
        Student-t prediction quantile per record (default) or the plug-in Gaussian.

    Returns
    -------
    CalibratedTpr

    Raises
    ------
    InvalidInputError
        Shapes differ, scores not finite, or a record with fewer than 2 OUT or 1 IN
        scores.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> member = np.arange(40)[:, None] % 2 == np.zeros((1, 300), int)
    >>> s = rng.normal(size=(40, 300)) + 3.0 * member
    >>> r = calibrated_tpr_at_fpr(s, member, 0.01)
    >>> bool(0.3 < r.calibrated_tpr < 0.9 and 0.3 < r.pooled_tpr < 0.9)
    True
    """
    s = np.asarray(scores, dtype=np.float64)
    m = np.asarray(member)
    if s.ndim != 2 or m.shape != s.shape:
        raise fail("member", f"a boolean array of the scores' shape {s.shape}", m.shape)
    if m.dtype != bool:
        raise fail("member", "a boolean array", m.dtype)
    if not np.all(np.isfinite(s)):
        raise fail("scores", "finite numbers", "NaN or inf")
    alpha = check_probability(fpr, "fpr")
    n_in, n_out = m.sum(axis=0), (~m).sum(axis=0)
    if n_out.min() < 2 or n_in.min() < 1:
        raise fail(
            "member",
            "at least 2 OUT and 1 IN evaluation models per record",
            f"a record with {int(n_out.min())} OUT / {int(n_in.min())} IN",
        )
    out_scores = s[~m]
    # pooled: the smallest threshold whose pooled FPR (share of OUT scores >= t) <= alpha
    srt = np.sort(out_scores)[::-1]
    k = int(np.floor(alpha * srt.size + 1e-9))  # at most k OUT scores may reach t
    t_pool = np.nextafter(srt[k], np.inf) if k < srt.size else -np.inf
    pooled_tpr = float(np.mean(s[m] >= t_pool))
    rec_fpr = (np.where(~m, s >= t_pool, False)).sum(axis=0) / n_out
    thr = record_thresholds(s, ~m, alpha, finite_population_correction=finite_population_correction)
    # strictly above: a record whose OUT scores are all equal (a saturated signal) has
    # threshold = that value, and an IN score tying with it is no evidence of membership
    tpr_i = np.where(m, s > thr[None, :], False).sum(axis=0) / n_in
    return CalibratedTpr(
        fpr=alpha,
        pooled_tpr=pooled_tpr,
        pooled_threshold=float(t_pool),
        pooled_record_fpr_max=float(rec_fpr.max()),
        pooled_record_fpr_share_above_2x=float(np.mean(rec_fpr > 2 * alpha)),
        calibrated_tpr=float(tpr_i.mean()),
        finite_population_correction=bool(finite_population_correction),
        n_records=int(s.shape[1]),
        n_in_min=int(n_in.min()),
        n_out_min=int(n_out.min()),
    )
