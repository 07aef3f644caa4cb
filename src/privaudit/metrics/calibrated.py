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

With ``scores[j, i]`` the attack's score of record i by evaluation model j and
``member[j, i]`` whether model j trained on record i, record i has :math:`n_i` OUT
scores with mean :math:`\bar s_i` and unbiased standard deviation :math:`\hat\sigma_i`.
The estimand of the calibrated figure is

.. math:: \mathrm{TPR}_\alpha = \frac1n \sum_i P\bigl(S^{in}_i > \mu_i + z_\alpha \sigma_i\bigr),

the mean over records of the record's TPR at its own threshold of FPR :math:`\alpha`,
where record i's OUT scores are :math:`N(\mu_i, \sigma_i^2)` and :math:`z_\alpha =
\Phi^{-1}(1-\alpha)`. Only the OUT scores are taken to be Gaussian; the IN scores may
have any distribution. The figures:

``pooled``
    the threshold :math:`t` with pooled FPR :math:`\le \alpha` over all OUT pairs and the
    TPR over all IN pairs there (the usual figure), with the between-record standard
    deviation of the per-record FPRs at :math:`t`: the FPR of record i there is
    :math:`p_i`, and with :math:`c_i` of its :math:`n_i` OUT scores at or above :math:`t`,
    :math:`c_i(c_i-1)/(n_i(n_i-1))` estimates :math:`p_i^2` without bias, so the variance
    of :math:`p_i` over records is estimated without the binomial noise of a few OUT
    scores per record (no distributional assumption; 0 when the pooled threshold is
    calibrated per record), with a 95% interval: the variance is
    :math:`\overline{p^2} - \bar p^2`, and each of the two means is bounded on both sides
    from its sum of independent [0, 1] terms (:math:`c_i(c_i-1)/(n_i(n_i-1))` and
    :math:`c_i/n_i`) by the multiplicative Chernoff bounds, each side at 1.25%
    (:func:`_chernoff_mean_interval`): valid whatever the per-record FPRs, few events
    included, for independent records, and so conservative: with 4 OUT scores per record
    and 5,000 alike records its upper end is about 3 alpha at 1% (30 alpha at 0.1%), falling
    with more records or more OUT scores per record (about alpha at 1% with 200,000
    records). The normal interval it replaced missed the true spread in 13 of 30 simulated
    audits at 0.1% FPR (3,000 records of 4 OUT scores, true spreads 0.45% to 1.55%): with no
    record having 2 OUT scores above the threshold, its estimate and standard error were
    both 0. The records are taken as independent: an evaluation model's effect shared by all
    the records it scores is not in the interval: with a shift per model of half the
    scores' variance it missed the true spread at 1% FPR in 10 of 20 simulated audits of
    100,000 records and 8 models, and in 4 of 20 of 20,000 records and 16 models. The
    largest empirical per-record FPR, or the share of records above :math:`2\alpha`, would
    be that noise: with 4 OUT scores a record's empirical FPR is 0, 0.25, 0.5, ...
    whatever its true FPR. When the spread is 0 every record has FPR :math:`\alpha` at
    :math:`t`, and the pooled TPR is then itself :math:`\mathrm{TPR}_\alpha` below (each
    record weighted by its number of IN scores), with no distributional assumption.
``calibrated`` (the figure the calibration is about)
    :math:`\mathrm{TPR}_\alpha` estimated by deconvolution. The standardised IN score
    :math:`u = (S^{in}_i - \mu_i)/\sigma_i` is only observed through the fitted OUT
    Gaussian, :math:`\hat u = (S^{in}_i - \bar s_i)/\hat\sigma_i = (u - Z/\sqrt{n_i})
    \big/\sqrt{V/(n_i-1)}` with :math:`Z \sim N(0,1)` and :math:`V \sim \chi^2_{n_i-1}`
    independent of :math:`u`: a noise whose law depends on :math:`n_i` alone. The law
    :math:`H` of :math:`u` over records is fitted to the :math:`\hat u` by maximum
    likelihood (Kiefer and Wolfowitz 1956; Efron 2016, "Empirical Bayes deconvolution
    estimates"), as a mixture of Gaussians of width :data:`DECONVOLUTION_WIDTH` on a
    grid, each IN score weighted by one over its record's number of IN scores (the
    scores binned at their quantiles per number of OUT scores; a component's bin
    probabilities are exact, a noncentral t CDF; EM accelerated by SQUAREM for a fixed
    number of steps, so the figure is deterministic); then
    :math:`\mathrm{TPR}_\alpha = P_H(u > z_\alpha)`. Records with fewer than
    :data:`MIN_OUT_DECONVOLVED` OUT scores are left out of it (None when none is
    left): with 2 or 3 the noise is too heavy-tailed to undo at 0.1% FPR.
``fitted_threshold``
    the TPR of a threshold fitted from each record's :math:`n_i` OUT scores,
    :math:`t_i = \bar s_i + t^{-1}_{n_i - 1}(1-\alpha)\sqrt{1 + 1/n_i}\,\hat\sigma_i`, the
    quantile of the prediction distribution of a *new* OUT score, so that a new OUT
    score of a Gaussian record exceeds :math:`t_i` with probability exactly
    :math:`\alpha` whatever :math:`n_i` (:func:`record_thresholds`; Student 1908). Its TPR,
    the fraction of the record's IN scores strictly above :math:`t_i` averaged over
    records, is that of a feasible attack with :math:`n_i` OUT models per record at
    per-record FPR :math:`\alpha`, *not* the record's TPR at FPR :math:`\alpha`: the
    threshold's noise costs power (with 4 OUT scores :math:`t_i = \bar s_i +
    5.1\hat\sigma_i` at 1% and :math:`\bar s_i + 11.4\hat\sigma_i` at 0.1%), so the
    figure falls far below :math:`\mathrm{TPR}_\alpha` with few models (0.24 against 0.75
    at 1% for :math:`\mu_{in} - \mu_{out} = 3\sigma` and 4 OUT scores).
``calibrated_plug_in``
    the same with the fitted Gaussian used as exact, as the efficient LiRA evaluation
    does: :math:`\Phi^{-1}(1-\alpha)` and the ``ddof=0`` standard deviation. Its true
    per-record FPR is :math:`P(T_{n_i-1} > z_\alpha\sqrt{(n_i-1)/(n_i+1)})` (0.085
    instead of 0.01 with 4 OUT scores), returned beside it: the finite-population bias.
``fpr_check``
    the assumption behind the three per-record figures, checked on the scores: each OUT
    score against the threshold fitted, as ``fitted_threshold``, from its record's *other*
    OUT scores. For Gaussian OUT scores the share above is :math:`\alpha` exactly
    (records with 3 OUT scores or more); an attack whose OUT scores are skewed per record
    lands far from it (e.g. a likelihood ratio of two Gaussians of unequal variance, a
    quadratic of the signal). ``consistent`` is False when the share is off
    :math:`\alpha` by more than 3 binomial standard deviations (of as many independent
    scores); the calibrated figure then carries a note. The calibrated figure reacts to
    the shape of the OUT tail more than the check does: in 6 simulated worlds without
    leakage (every record's truth 5% at 5% FPR), online LiRA with its shrunk variances (a
    quadratic score) read calibrated TPRs from 1.7% to 8.1%, and the check flagged 4 of the
    6 (a tolerance of a factor 1.5, used before, flagged none); a passing check does not
    make the calibrated figure of a non-Gaussian score right.

Why deconvolution rather than per-record Gaussian fits of both IN and OUT scores
(:math:`\Phi((\hat\mu^{in}_i - \bar s_i - z_\alpha\hat\sigma_i)/\hat\sigma^{in}_i)`, the
natural estimand of LiRA-type fits) or more models: a per-record plug-in is a nonlinear
function of a handful of scores, biased upwards at 0.1% (0.55 against 0.46 with 4 OUT and
4 IN scores, 0.49 with 16), and no per-record correction exists when the fitted
threshold's noise exceeds the IN scores' spread (with 4 OUT scores at 0.1% its variance is
about twice the OUT variance); it also needs the IN scores Gaussian. More models shrink
the noise but cannot remove it (an audit has 8 to 32 reference models, so 4 to 16 OUT
scores per record). The deconvolution pools the records to undo a noise of known law and
assumes nothing of the IN scores. In the simulations of ``tests/metrics/test_calibrated.py``
and ``benchmarks/bench_calibrated.py`` (2,400 records; records alike or not, IN scores
Gaussian or skewed, no leakage; 5 seeds) its mean error is within 0.006 at 1% and 0.1% FPR
but where every record's IN scores are much less spread than its OUT ones (IN SD 0.4 of
OUT SD: -0.02 at 1%, +0.01 to +0.025 at 0.1%: the smoothing blurs a narrow law). Its
assumption, Gaussian OUT scores per record, is the one the per-record threshold rests on
too, and ``fpr_check`` tests it on the scores.

The calibrated figure's 95% interval (``calibrated_tpr_ci``, when asked for with
``n_boot``) is normal on the angular scale, :math:`\arcsin\sqrt{\hat\theta} \pm 1.96
\sqrt{V_{rec} + V_{mod}}/(2\sqrt{\hat\theta(1-\hat\theta)})` (clipped to
:math:`[0, \pi/2]`), from two variances of refits of the
deconvolution (each EM started from the fit's weights for :data:`_N_EM_CI` evaluations;
seeded, so the interval is a function of the scores and the seed):

* :math:`V_{rec}`, a bootstrap over records (``n_boot`` replicates): the records
  resampled with all their IN and OUT scores (the fit's bins reweighted). It carries the
  sampling of the records and the noise of each record's few OUT scores, with the
  evaluation models held fixed.
* :math:`V_{mod}`, a delete-a-group jackknife over the evaluation models (leave-one-model-
  out up to :data:`CALIBRATED_CI_MODEL_GROUPS` models, else that many random groups),
  :math:`\frac{G-1}{G}\sum_g(\hat\theta_{(g)} - \bar\theta)^2`: each refit leaves out a
  group's scores, so the records' numbers of IN and OUT scores shrink and the
  deconvolution's noise law follows them (a record left with fewer than
  ``MIN_OUT_DECONVOLVED - 1`` OUT scores or no IN score keeps all its scores in that
  refit, so that every refit is over the same records). With the records held fixed the
  models are the sampling units: it carries an effect shared by all the scores of one
  model (the reference models each play the target, and a model's overall loss level
  shifts every record's score), which the bootstrap over records cannot see, and the
  records' OUT-score noise again.

The sum is conservative: the OUT-score noise is counted twice, the records' sampling is in
it though the figure is the mean over the audited records, the jackknife is biased upward
(Efron and Stein 1981), more so with 4 OUT scores a record (its refits have 3). The
deconvolution's smoothing bias (up to 0.025 above, a narrow law of IN scores) is in
neither. The angular scale, the variance-stabilising one of a proportion, keeps the
interval in [0, 1] and skewed away from a bound, as the logit scale does, but its
derivative grows as :math:`\hat\theta^{-1/2}` near 0 where the logit's grows as
:math:`\hat\theta^{-1}`: a figure of 0.15% with a standard error of 0.7% (a non-Gaussian
attack whose refits scatter between 0.02% and 0.6%) had the interval [0, 96%] on the logit
scale, [0, 5%] on the angular one. Where the OUT scores fail ``fpr_check`` the figure itself
may be biased (the deconvolution's noise law is the Gaussian one), which the interval does
not carry. Its coverage in simulation is in ``docs/membership.md``.

What the available text (the abstract and summaries) does not settle: the paper's
exact calibration estimator and the exact form of its LiRA correction; the estimators
here are named by what they compute.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from privaudit._validation import check_probability, fail

__all__ = [
    "CALIBRATED_CI_METHOD",
    "CALIBRATED_CI_MODEL_GROUPS",
    "CALIBRATED_CI_REPLICATES",
    "DECONVOLUTION_WIDTH",
    "MIN_OUT_DECONVOLVED",
    "CalibratedTpr",
    "calibrated_tpr_at_fpr",
    "calibrated_tprs_at_fprs",
    "record_thresholds",
]

#: The fewest OUT scores of a record for the deconvolved figure (module docstring).
MIN_OUT_DECONVOLVED = 4

#: Width of the Gaussian components of the standardised IN-score law :math:`H`: the
#: deconvolution's smoothing. Narrower components follow a narrow :math:`H` better
#: (every record alike, IN scores much less spread than OUT ones) at the cost of noise.
DECONVOLUTION_WIDTH = 0.45

_N_BINS = 300  # quantile bins of the standardised IN scores, per number of OUT scores
_N_EM = 3000  # EM evaluations of the maximum-likelihood fit (fixed: deterministic)
_N_EM_CI = 300  # EM evaluations of each replicate and refit of the interval, from the fit

#: Bootstrap replicates over records of the calibrated figure's interval.
CALIBRATED_CI_REPLICATES = 50

#: Groups of evaluation models of its jackknife (leave-one-model-out with as many models or
#: fewer).
CALIBRATED_CI_MODEL_GROUPS = 16

#: How the calibrated figure's interval is computed (module docstring).
CALIBRATED_CI_METHOD = (
    "normal on the angular scale arcsin(sqrt(TPR)), of variance the sum of a bootstrap over records (each "
    "resampled with all its IN and OUT scores) and a delete-a-group jackknife over the "
    "evaluation models (each group's scores left out), the deconvolution refitted on each "
    "(seeded); conservative, each record's OUT-score noise being in both"
)


def _interval(est: float, var: float) -> tuple[float, float]:
    """The 95% interval of the calibrated figure ``est`` of variance ``var``: normal on the
    angular scale, arcsin(sqrt(theta)) (plain normal, clipped, at 0 or 1)."""
    half = 1.959963984540054 * np.sqrt(max(var, 0.0))
    if 0.0 < est < 1.0:
        a, sl = np.arcsin(np.sqrt(est)), half / (2.0 * np.sqrt(est * (1.0 - est)))
        lo, hi = max(a - sl, 0.0), min(a + sl, np.pi / 2.0)
        return float(np.sin(lo) ** 2), float(np.sin(hi) ** 2)
    return float(np.clip(est - half, 0.0, 1.0)), float(np.clip(est + half, 0.0, 1.0))


@dataclasses.dataclass(frozen=True)
class CalibratedTpr:
    """Pooled and per-record calibrated TPR at one FPR (labelled figures; module docstring).

    Attributes
    ----------
    fpr : float
        The requested false-positive rate :math:`\\alpha`.
    pooled_tpr : float
        TPR over all IN pairs at the pooled threshold (pooled FPR <= alpha).
    pooled_threshold : float
        That threshold.
    pooled_record_fpr_sd : float
        The between-record standard deviation of the per-record FPRs at the pooled
        threshold, the binomial noise of each record's few OUT scores removed.
    pooled_record_fpr_sd_ci : tuple of float
        Its 95% confidence interval (the square roots of the variance's Chernoff bounds,
        clipped at 0; module docstring): conservative, wide with a few OUT scores per
        record.
    calibrated_tpr : float or None
        Mean over records of the TPR at the record's own threshold of FPR alpha, by
        deconvolution (OUT scores Gaussian per record); None when no record has
        :data:`MIN_OUT_DECONVOLVED` OUT scores.
    calibrated_tpr_ci : tuple of float or None
        Its 95% interval (:data:`CALIBRATED_CI_METHOD`; module docstring); None with the
        figure, or when none was asked for.
    calibrated_ci_replicates : int
        The bootstrap replicates over records behind it (0: no interval).
    n_records_calibrated : int
        The records it rests on.
    fitted_threshold_tpr : float
        Mean over records of the TPR at a threshold fitted from the record's OUT scores
        with FPR exactly alpha (:func:`record_thresholds`).
    plug_in_tpr, plug_in_fpr : float
        The same at the plug-in threshold (fitted Gaussian used as exact), and that
        threshold's true per-record FPR for Gaussian OUT scores, averaged over records.
    n_records, n_in_min, n_out_min : int
        Records evaluated; the fewest IN / OUT scores of a record.
    n_out_median : float
        The median number of OUT scores of a record.
    fpr_check : float or None
        The share of OUT scores above the threshold fitted from their record's other OUT
        scores (alpha for Gaussian OUT scores); None when no record has 3 OUT scores.
    n_fpr_check : int
        The OUT scores it rests on.
    """

    fpr: float
    pooled_tpr: float
    pooled_threshold: float
    pooled_record_fpr_sd: float
    pooled_record_fpr_sd_ci: tuple[float, float]
    calibrated_tpr: float | None
    n_records_calibrated: int
    fitted_threshold_tpr: float
    plug_in_tpr: float
    plug_in_fpr: float
    n_records: int
    n_in_min: int
    n_out_min: int
    n_out_median: float
    fpr_check: float | None = None
    n_fpr_check: int = 0
    calibrated_tpr_ci: tuple[float, float] | None = None
    calibrated_ci_replicates: int = 0

    @property
    def fpr_check_consistent(self) -> bool:
        """Whether :attr:`fpr_check` is alpha within 3 binomial SDs."""
        if self.fpr_check is None:
            return True
        a, f = self.fpr, self.fpr_check
        noise = 3.0 * float(np.sqrt(a * (1.0 - a) / max(self.n_fpr_check, 1)))
        return abs(f - a) <= noise

    def to_dict(self) -> dict[str, Any]:
        """The figures with their labels (``results.json`` style)."""
        n_out = f"{self.n_out_median:g}"
        calibrated: dict[str, Any] = {
            "label": "per-record calibrated (Jalko et al. 2026): mean over records of the TPR "
            "at the record's own FPR-alpha threshold; OUT scores Gaussian per record (IN "
            "scores any law), the noise of the fitted OUT Gaussians deconvolved",
            "tpr": self.calibrated_tpr,
            "ci": None if self.calibrated_tpr_ci is None else list(self.calibrated_tpr_ci),
            "ci_method": CALIBRATED_CI_METHOD,
            "ci_replicates": self.calibrated_ci_replicates,
            "finite_population_correction": True,
            "n_records": self.n_records_calibrated,
        }
        if self.calibrated_tpr is None:
            calibrated["note"] = (
                f"n/a: needs records with >= {MIN_OUT_DECONVOLVED} OUT scores (models that "
                f"did not train on the record), found none (median {n_out})"
            )
        elif not self.fpr_check_consistent:
            calibrated["note"] = (
                f"approximate: the OUT scores are not Gaussian per record (their per-record "
                f"FPR check is {self.fpr_check:.3g}, not {self.fpr:g})"
            )
        return {
            "fpr": self.fpr,
            "pooled": {
                "label": "pooled over records (one threshold; not calibrated per record)",
                "tpr": self.pooled_tpr,
                "threshold": self.pooled_threshold,
                "record_fpr_sd": self.pooled_record_fpr_sd,
                "record_fpr_sd_ci": list(self.pooled_record_fpr_sd_ci),
            },
            "calibrated": calibrated,
            "fitted_threshold": {
                "label": f"TPR of a per-record threshold fitted from the record's OUT scores "
                f"(median {n_out}): per-record FPR alpha exactly for Gaussian OUT scores; a "
                "feasible attack with that many OUT models, below the calibrated TPR by its "
                "threshold's noise",
                "tpr": self.fitted_threshold_tpr,
                "fpr": self.fpr,
            },
            "fpr_check": {
                "label": "share of OUT scores above the threshold fitted from their record's "
                "other OUT scores at FPR alpha: alpha when the OUT scores are Gaussian per "
                "record, as the per-record figures assume",
                "fpr": self.fpr_check,
                "n_scores": self.n_fpr_check,
                "consistent": self.fpr_check_consistent,
            },
            "calibrated_plug_in": {
                "label": "plug-in (no finite-population correction): each record's fitted OUT "
                "Gaussian used as exact, as the efficient LiRA evaluation does; its per-record "
                f"FPR is {self.plug_in_fpr:.3g}, not alpha",
                "tpr": self.plug_in_tpr,
                "fpr": self.plug_in_fpr,
                "finite_population_correction": False,
            },
            "n_records": self.n_records,
            "n_in_min": self.n_in_min,
            "n_out_min": self.n_out_min,
            "n_out_median": self.n_out_median,
        }


def _out_fit(
    scores: NDArray[np.float64], out_mask: NDArray[np.bool_]
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Per record: the number of OUT scores, their mean and their sum of squared deviations."""
    n = out_mask.sum(axis=0).astype(np.float64)
    mean = np.where(out_mask, scores, 0.0).sum(axis=0) / n
    ss = (np.where(out_mask, scores - mean[None, :], 0.0) ** 2).sum(axis=0)
    return n, mean, ss


def record_thresholds(
    scores: NDArray[np.float64],
    out_mask: NDArray[np.bool_],
    fpr: float,
    *,
    finite_population_correction: bool = True,
) -> NDArray[np.float64]:
    """Per-record thresholds at FPR ``fpr`` from each record's OUT scores (module docstring):
    the Student-t prediction quantile (per-record FPR exactly ``fpr`` for Gaussian OUT
    scores), or with ``finite_population_correction=False`` the plug-in normal quantile of
    the ``ddof=0`` fit."""
    n, mean, ss = _out_fit(scores, out_mask)
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


def _fpr_check(
    s: NDArray[np.float64], out_mask: NDArray[np.bool_], alpha: float
) -> tuple[float | None, int]:
    """Each OUT score against the Student-t threshold of its record's other OUT scores: the
    share above it, and the number of OUT scores (records with >= 3 of them)."""
    n, mean, ss = _out_fit(s, out_mask)
    ok = n >= 3.0
    if not ok.any():
        return None, 0
    x, om, n, mean, ss = s[:, ok], out_mask[:, ok], n[ok], mean[ok], ss[ok]
    n1 = n - 1.0  # the others
    mean_others = (n * mean - x) / n1
    ss_others = np.maximum(ss - (x - mean) ** 2 * n / n1, 0.0)
    c = -special.stdtrit(n1 - 1.0, alpha) * np.sqrt(1.0 + 1.0 / n1)
    above = om & (x > mean_others + c * np.sqrt(ss_others / (n1 - 1.0)))
    total = int(om.sum())
    return float(above.sum() / total), total


def _pooled(
    s: NDArray[np.float64], m: NDArray[np.bool_], alpha: float
) -> tuple[float, float, float, tuple[float, float]]:
    """The pooled TPR, its threshold, the between-record SD of the per-record FPRs and its
    95% interval."""
    # the smallest threshold whose pooled FPR (share of OUT scores >= t) <= alpha
    srt = np.sort(s[~m])[::-1]
    k = int(np.floor(alpha * srt.size + 1e-9))  # at most k OUT scores may reach t
    t = float(np.nextafter(srt[k], np.inf)) if k < srt.size else -np.inf
    tpr = float(np.mean(s[m] >= t))
    n = (~m).sum(axis=0).astype(np.float64)
    c = np.where(~m, s >= t, False).sum(axis=0).astype(np.float64)
    p = c / n
    # E[c(c-1)/(n(n-1))] = p_i^2 and E[p(1-p)/(n-1)] = Var(p_hat_i): the variance of the
    # true p_i over records, without the binomial noise of the p_hat_i
    n_rec = p.size
    sq = c * (c - 1.0) / (n * (n - 1.0))
    var = float(np.mean(sq) - np.mean(p) ** 2 + np.sum(p * (1.0 - p) / (n - 1.0)) / n_rec**2)
    # Var(p) = mean p_i^2 - (mean p_i)^2: each mean bounded on both sides from its sum of
    # independent [0, 1] terms (sq, p), each bound at tail 1.25%: 95% for the pair
    tail = 0.0125
    sq_lo, sq_hi = _chernoff_mean_interval(float(sq.sum()), n_rec, tail)
    p_lo, p_hi = _chernoff_mean_interval(float(p.sum()), n_rec, tail)
    lo, hi = (float(np.sqrt(max(v, 0.0))) for v in (sq_lo - p_hi**2, sq_hi - p_lo**2))
    return tpr, t, float(np.sqrt(max(var, 0.0))), (lo, hi)


def _chernoff_mean_interval(total: float, n: int, tail: float) -> tuple[float, float]:
    r"""Bounds on the mean :math:`\mu/n` of ``n`` independent variables in [0, 1] from their
    sum ``total``, each side failing with probability at most ``tail``: the multiplicative
    Chernoff bounds :math:`P(X \le x), P(X \ge x) \le \exp(-\mu\,h(x/\mu))`, on the side of
    :math:`\mu` each concerns, with :math:`h(u) = u \log u - u + 1` (Hoeffding 1963,
    Theorem 1, in its Poisson form; valid for any laws in [0, 1], the few-events regime
    included: no events at all still give an upper end of :math:`\log(1/tail)/n`)."""
    from scipy.optimize import brentq

    x, level = max(float(total), 0.0), -np.log(tail)

    def gap(mu: float) -> float:  # mu h(x / mu) - log(1 / tail)
        return float(special.xlogy(x, x / mu) - x + mu - level)

    lo = 0.0 if x == 0.0 or gap(1e-300) < 0.0 else brentq(gap, 1e-300, x, xtol=1e-15)
    top = max(2.0 * x, 1.0) + 2.0 * level
    while gap(top) < 0.0:
        top *= 2.0
    hi = brentq(gap, max(x, 1e-300), top, xtol=1e-15)  # gap(x) = -level < 0
    return min(lo / n, 1.0), min(hi / n, 1.0)


def _kernel_cdf(edges: NDArray[np.float64], grid: NDArray[np.float64], n: int) -> NDArray[Any]:
    """``P(u_hat <= e | u ~ N(g, w^2))`` for every edge e and grid point g, with ``n`` OUT
    scores: ``u_hat = (u - Z / sqrt(n)) / sqrt(V / (n - 1))``, ``V ~ chi2(n - 1)``.

    ``u - Z / sqrt(n)`` is ``N(g, s^2)`` with ``s^2 = w^2 + 1 / n``, so ``u_hat / s`` is a
    noncentral t with ``n - 1`` degrees of freedom and noncentrality ``g / s``: the
    probability is its CDF at ``e / s`` (:func:`_noncentral_t_cdf`, exact for an integer
    number of degrees of freedom; within 1e-12 of a 30-digit integral over e in [-30, 40],
    g in [-8, 60], 3 to 65 OUT scores, tests/metrics/test_calibrated.py). A quadrature over
    V is not accurate enough here: with 40 Gauss-Laguerre nodes the CDF was off by up to
    0.08 (4 OUT scores; 0.025 at e = 15, g = 11.3), the integrand being a step in V where
    ``e sqrt(V / (n - 1)) = g``."""
    s = np.sqrt(DECONVOLUTION_WIDTH**2 + 1.0 / n)
    e, g = np.broadcast_arrays(edges[:, None] / s, grid[None, :] / s)
    return np.clip(_noncentral_t_cdf(n - 1, e, g), 0.0, 1.0)


def _noncentral_t_cdf(
    nu: int, t: NDArray[np.float64], delta: NDArray[np.float64]
) -> NDArray[np.float64]:
    r"""``P(T <= t)`` for ``T`` noncentral t with an integer number ``nu >= 1`` of degrees
    of freedom and noncentrality ``delta`` (elementwise): Owen's finite series (D. B.
    Owen, "A special case of a bivariate non-central t-distribution", Biometrika 52,
    1965; the recursion of B. E. Cooper's Algorithm AS 5, Applied Statistics 17, 1968).

    With :math:`a = t/\sqrt\nu`, :math:`b = \nu/(\nu + t^2)` and :math:`h = \delta
    \sqrt b`: :math:`M_0 = a \sqrt b\, \varphi(h)\, \Phi(a h)`, :math:`M_1 = b (\delta
    a M_0 + a \varphi(\delta) / \sqrt{2\pi})`, :math:`M_k = \frac{k-1}{k} b (A_k
    \delta a M_{k-1} + M_{k-2})` with :math:`A_2 = 1`, :math:`A_k = 1 / ((k-2) A_{k-1})`;
    then for odd :math:`\nu`: :math:`\Phi(-h) + 2 T(h, a) + 2 (M_1 + M_3 + \dots +
    M_{\nu-2})` (``T``: Owen's T function), for even :math:`\nu`: :math:`\Phi(-\delta) +
    \sqrt{2\pi} (M_0 + M_2 + \dots + M_{\nu-2})`. Elementwise vector arithmetic, about
    ten times faster than scipy's ``nctdtr`` (Boost's series, one point at a time), and
    finite for every t and delta, infinite ones included (clipped to +-1e150; ``nctdtr``
    returns NaN far in the tails); within 3e-13 of ``nctdtr`` wherever that is finite,
    over t in [-40, 80], delta in [-20, 180] and nu up to 1,000 (measured; the tests check
    it up to nu = 256). The accuracy is absolute, about 1e-16: a probability far below
    that (1e-19 at e = -6 standard deviations with 65 OUT scores) comes out as rounding
    noise of that size, possibly negative (the kernel clips it to 0)."""
    # beyond 1e150 the CDF no longer moves, and t * t must not overflow
    t, delta = np.broadcast_arrays(
        np.clip(np.asarray(t, np.float64), -1e150, 1e150),
        np.clip(np.asarray(delta, np.float64), -1e150, 1e150),
    )
    a = t / np.sqrt(nu)
    b = nu / (nu + t * t)
    h = delta * np.sqrt(b)
    odd = nu % 2 == 1
    base = special.ndtr(-h) + 2.0 * special.owens_t(h, a) if odd else special.ndtr(-delta)
    if nu == 1:
        return np.asarray(base, dtype=np.float64)
    root_2pi = np.sqrt(2.0 * np.pi)
    m_prev = a * np.sqrt(b) * np.exp(-0.5 * h * h) / root_2pi * special.ndtr(a * h)  # M_0
    total = np.zeros(t.shape) if odd else m_prev.copy()
    if nu > 2:
        m = b * (delta * a * m_prev + a * np.exp(-0.5 * delta * delta) / (2.0 * np.pi))  # M_1
        if odd:
            total += m
        dab = delta * a * b
        a_k = 1.0
        for k in range(2, nu - 1):
            if k >= 3:
                a_k = 1.0 / ((k - 2) * a_k)
            m, m_prev = (k - 1.0) / k * (a_k * dab * m + b * m_prev), m
            if k % 2 == nu % 2:
                total += m
    out: NDArray[np.float64] = base + (2.0 * total if odd else root_2pi * total)
    return out


def _npmle(c: NDArray[np.float64], p: NDArray[np.float64]) -> NDArray[np.float64]:
    """Mixture weights w maximising ``sum(c * log(p @ w))`` (``c`` sums to 1): EM,
    accelerated by SQUAREM (Varadhan and Roland 2008), for a fixed number of EM steps.
    ``p @ w`` of the kept iterate is carried into the next cycle (it was computed for its
    log-likelihood), not computed again: the same floats, one product fewer a cycle."""
    w = np.full(p.shape[1], 1.0 / p.shape[1])
    pw = p @ w

    def em(v: NDArray[np.float64], pv: NDArray[np.float64]) -> NDArray[np.float64]:
        out: NDArray[np.float64] = v * (p.T @ (c / np.maximum(pv, 1e-300)))
        return out

    def loglik(pv: NDArray[np.float64]) -> float:
        return float(c @ np.log(np.maximum(pv, 1e-300)))

    steps = 0
    while steps < _N_EM:
        w1 = em(w, pw)
        w2 = em(w1, p @ w1)
        r, v = w1 - w, w2 - 2.0 * w1 + w
        vv = float(v @ v)
        a = min(-np.sqrt(float(r @ r) / vv), -1.0) if vv > 0.0 else -1.0
        wn = np.maximum(w - 2.0 * a * r + a * a * v, 0.0)
        if wn.sum() > 0.0:
            wn = wn / wn.sum()
            wn = em(wn, p @ wn)
        else:
            wn = w2
        pwn, pw2 = p @ wn, p @ w2
        w, pw = (wn, pwn) if loglik(pwn) >= loglik(pw2) else (w2, pw2)
        steps += 3
    return w


@dataclasses.dataclass(frozen=True)
class _Deconvolution:
    """The deconvolution's fit and what its bootstrap replicates reuse: the bins (fixed at
    the full data's quantiles), their kernel probabilities, and each IN score's bin,
    weight and record."""

    n_records: int
    columns: NDArray[np.intp]  # the records deconvolved, among all
    flat_tpr: NDArray[np.float64]  # per record: its share of IN scores above (flat records)
    rest: NDArray[np.bool_]  # per record: deconvolved (not flat)
    grid: NDArray[np.float64]
    probs: NDArray[np.float64]  # (bins, grid)
    weights: NDArray[np.float64] | None  # the fitted mixture weights (None: no record left)
    score_bin: NDArray[np.intp]  # per IN score of a deconvolved record
    score_weight: NDArray[np.float64]
    score_record: NDArray[np.intp]

    def tprs(self, alphas: Sequence[float], w: NDArray[np.float64] | None = None) -> list[float]:
        """The calibrated figure at every alpha, from mixture weights ``w`` (the fit's)."""
        w = self.weights if w is None else w
        n_rest = int(self.rest.sum())
        flat = float(self.flat_tpr.sum())
        if w is None or n_rest == 0:
            return [flat / self.n_records] * len(alphas)
        return [(flat + n_rest * float(w @ _tails(self.grid, a))) / self.n_records for a in alphas]


def _tails(grid: NDArray[np.float64], alpha: float) -> NDArray[np.float64]:
    """``P(u > z_alpha)`` for each mixture component ``N(g, w^2)``."""
    out: NDArray[np.float64] = special.ndtr((grid + special.ndtri(alpha)) / DECONVOLUTION_WIDTH)
    return out


def _deconvolution(s: NDArray[np.float64], m: NDArray[np.bool_]) -> _Deconvolution | None:
    """The deconvolution of the calibrated figure (module docstring) on the records with
    :data:`MIN_OUT_DECONVOLVED` OUT scores; None when there is none."""
    n_out, mean, ss = _out_fit(s, ~m)
    ok = n_out >= MIN_OUT_DECONVOLVED
    if not ok.any():
        return None
    s, m, n_out, mean, ss = s[:, ok], m[:, ok], n_out[ok], mean[ok], ss[ok]
    sd = np.sqrt(ss / (n_out - 1.0))
    n_in = m.sum(axis=0).astype(np.float64)
    # a record whose OUT scores are all equal (a saturated signal) has no Gaussian to
    # deconvolve: its IN scores strictly above them are detections at any alpha
    flat = sd == 0.0
    flat_tpr = np.where(flat, np.where(m, s > mean[None, :], False).sum(axis=0) / n_in, 0.0)
    rest = ~flat
    n_rec = int(s.shape[1])
    empty = np.zeros(0)
    if not rest.any():
        return _Deconvolution(
            n_rec, np.flatnonzero(ok), flat_tpr, rest, empty, np.zeros((0, 0)), None, np.zeros(0, np.intp),
            empty, np.zeros(0, np.intp),
        )  # fmt: skip
    idx = np.flatnonzero(rest)
    u = (s[:, rest] - mean[None, rest]) / sd[None, rest]
    mm, weight = m[:, rest], np.broadcast_to(1.0 / n_in[None, rest], u.shape)
    rec = np.broadcast_to(idx[None, :], u.shape)
    hi = float(np.clip(np.quantile(u[mm], 0.999) + 4.0 * DECONVOLUTION_WIDTH + 2.0, 12.0, 80.0))
    grid = np.concatenate([np.arange(-8.0, 12.0, 0.1), np.arange(12.0, hi + 0.5, 0.5)])
    counts, probs, bins, wts, recs = [], [], [], [], []
    n_of = np.broadcast_to(n_out[None, rest], u.shape)
    offset = 0
    for n in np.unique(n_out[rest]):
        sel = mm & (n_of == n)
        uh = u[sel]
        qs = np.unique(np.quantile(uh, np.linspace(0.0, 1.0, _N_BINS + 1)[1:-1]))
        edges = np.concatenate([[-np.inf], qs, [np.inf]])
        cnt = np.histogram(uh, edges, weights=weight[sel])[0]
        cdf = _kernel_cdf(qs, grid, int(n))
        cdf = np.vstack([np.zeros(grid.size), cdf, np.ones(grid.size)])
        prob = np.diff(cdf, axis=0)
        keep = cnt > 0
        # each IN score's bin among the kept ones (np.histogram's: right edge in the last)
        b = np.clip(np.searchsorted(edges, uh, side="right") - 1, 0, edges.size - 2)
        new_index = np.cumsum(keep) - 1 + offset
        bins.append(new_index[b])
        wts.append(weight[sel])
        recs.append(rec[sel])
        offset += int(keep.sum())
        counts.append(cnt[keep])
        probs.append(np.maximum(prob[keep], 1e-300))
    c = np.concatenate(counts)
    p = np.vstack(probs)
    w = _npmle(c / c.sum(), p)
    return _Deconvolution(
        n_rec, np.flatnonzero(ok), flat_tpr, rest, grid, p, w, np.concatenate(bins), np.concatenate(wts),
        np.concatenate(recs),
    )  # fmt: skip


def _npmle_many(
    c: NDArray[np.float64], p: NDArray[np.float64], w0: NDArray[np.float64], steps: int
) -> NDArray[np.float64]:
    """:func:`_npmle` for many weight vectors at once: columns of ``c`` (bins, B), each
    summing to 1, from the start ``w0`` (grid, B), for ``steps`` EM evaluations (``p @ w``
    carried into the next cycle as there, column by column)."""
    w = w0
    pw = p @ w

    def em(v: NDArray[np.float64], pv: NDArray[np.float64]) -> NDArray[np.float64]:
        out: NDArray[np.float64] = v * (p.T @ (c / np.maximum(pv, 1e-300)))
        return out

    def loglik(pv: NDArray[np.float64]) -> NDArray[np.float64]:
        out: NDArray[np.float64] = (c * np.log(np.maximum(pv, 1e-300))).sum(axis=0)
        return out

    done = 0
    while done < steps:
        w1 = em(w, pw)
        w2 = em(w1, p @ w1)
        r, v = w1 - w, w2 - 2.0 * w1 + w
        vv, rr = (v * v).sum(axis=0), (r * r).sum(axis=0)
        a = np.where(vv > 0.0, np.minimum(-np.sqrt(rr / np.where(vv > 0.0, vv, 1.0)), -1.0), -1.0)
        wn = np.maximum(w - 2.0 * a * r + a * a * v, 0.0)
        tot = wn.sum(axis=0)
        wn = wn / np.where(tot > 0.0, tot, 1.0)
        wn = np.where(tot > 0.0, em(wn, p @ wn), w2)
        pwn, pw2 = p @ wn, p @ w2
        better = loglik(pwn) >= loglik(pw2)
        w, pw = np.where(better, wn, w2), np.where(better, pwn, pw2)
        done += 3
    return w


def _refit_from_fit(
    d: _Deconvolution, c: NDArray[np.float64], probs: NDArray[np.float64]
) -> NDArray[np.float64]:
    """The refits' weights, one column per column of bin counts ``c``, each EM started from
    the fit's weights (:data:`_N_EM_CI` evaluations): over the mixture components of
    nonzero fitted weight only. A component of weight 0 keeps weight 0 in every EM and
    SQUAREM step (each multiplies or extrapolates from it and floors at 0), so leaving it
    out changes nothing but the rounding of the products, and spares the refits the
    components the fit has emptied (a quarter to two thirds of them on the demo's attacks).
    Returns (grid, columns), zero on the components left out."""
    assert d.weights is not None
    nz = d.weights > 0.0
    w0 = np.repeat(d.weights[nz, None], c.shape[1], axis=1)
    w = np.zeros((d.weights.size, c.shape[1]))
    w[nz] = _npmle_many(c, probs[:, nz], w0, _N_EM_CI)
    return w


def _bootstrap_tprs(
    d: _Deconvolution, alphas: Sequence[float], n_boot: int, seed: int
) -> NDArray[np.float64]:
    """The calibrated figure of ``n_boot`` bootstrap replicates over records, each
    resampling the records with all their IN and OUT scores and refitting the mixture:
    (n_boot, alphas). The bins and their kernel are the full data's (a replicate only
    reweights them); each replicate's EM starts from the fit's weights (:data:`_N_EM_CI`
    evaluations), all replicates at once."""
    rng = np.random.default_rng(seed)
    n = d.n_records
    draws = np.empty((n_boot, n))
    for b in range(n_boot):
        draws[b] = np.bincount(rng.integers(0, n, size=n), minlength=n)
    flat = draws @ d.flat_tpr
    n_rest = draws[:, d.rest].sum(axis=1)
    out = np.repeat(flat[:, None], len(alphas), axis=1)
    if d.weights is None:
        return out / n
    nb = d.probs.shape[0]
    c = np.empty((nb, n_boot))
    for b in range(n_boot):
        c[:, b] = np.bincount(d.score_bin, d.score_weight * draws[b, d.score_record], nb)
    tot = c.sum(axis=0)
    c = c / np.where(tot > 0.0, tot, 1.0)
    w = _refit_from_fit(d, c, d.probs)
    for k, a in enumerate(alphas):
        out[:, k] += n_rest * (_tails(d.grid, a) @ w)
    return out / n


def _jackknife_tprs(
    s: NDArray[np.float64],
    m: NDArray[np.bool_],
    d: _Deconvolution,
    alphas: Sequence[float],
    groups: Sequence[NDArray[np.intp]],
) -> NDArray[np.float64]:
    """The calibrated figure with each group of evaluation models left out: (groups,
    alphas), on the records of ``d``. A record left with fewer than
    ``MIN_OUT_DECONVOLVED - 1`` OUT scores, or no IN score, keeps all its scores in that
    refit (it would drop out, and the refits must be over the same records). Each refit's
    IN scores are binned at the quantiles of all the refits' (per number of OUT scores) and
    its EM starts from the fit's weights (:data:`_N_EM_CI` evaluations), all refits at once."""
    s, m = s[:, d.columns], m[:, d.columns]
    n_rec = s.shape[1]
    flats = np.zeros(len(groups))
    n_rests = np.zeros(len(groups))
    pieces: dict[int, list[tuple[int, NDArray[np.float64], NDArray[np.float64]]]] = {}
    for g, drop in enumerate(groups):
        present = np.ones(s.shape, dtype=bool)
        present[drop] = False
        n_out_g = (present & ~m).sum(axis=0)
        whole = (n_out_g < MIN_OUT_DECONVOLVED - 1) | ~(present & m).any(axis=0)
        present[:, whole] = True
        n_out, mean, ss = _out_fit(s, present & ~m)
        sd = np.sqrt(ss / (n_out - 1.0))
        mm = present & m
        n_in = mm.sum(axis=0).astype(np.float64)
        flat = sd == 0.0
        flats[g] = float((np.where(mm, s > mean[None, :], False).sum(axis=0) / n_in)[flat].sum())
        rest = ~flat
        n_rests[g] = float(rest.sum())
        u = (s[:, rest] - mean[None, rest]) / sd[None, rest]
        weight = np.broadcast_to(1.0 / n_in[None, rest], u.shape)
        n_of = np.broadcast_to(n_out[None, rest], u.shape)
        for n in np.unique(n_out[rest]):
            sel = mm[:, rest] & (n_of == n)
            pieces.setdefault(int(n), []).append((g, u[sel], weight[sel]))
    out = np.repeat(flats[:, None], len(alphas), axis=1)
    if d.weights is None or not pieces:
        return out / n_rec
    counts, probs = [], []
    for n, parts in sorted(pieces.items()):
        pooled = np.concatenate([uh for _, uh, _ in parts])
        qs = np.unique(np.quantile(pooled, np.linspace(0.0, 1.0, _N_BINS + 1)[1:-1]))
        edges = np.concatenate([[-np.inf], qs, [np.inf]])
        cnt = np.zeros((edges.size - 1, len(groups)))
        for g, uh, wt in parts:  # np.histogram's bins (the right edge in the last)
            b = np.clip(np.searchsorted(edges, uh, side="right") - 1, 0, edges.size - 2)
            cnt[:, g] = np.bincount(b, wt, edges.size - 1)
        cdf = _kernel_cdf(qs, d.grid, n)
        cdf = np.vstack([np.zeros(d.grid.size), cdf, np.ones(d.grid.size)])
        keep = cnt.sum(axis=1) > 0
        counts.append(cnt[keep])
        probs.append(np.maximum(np.diff(cdf, axis=0)[keep], 1e-300))
    c = np.vstack(counts)
    tot = c.sum(axis=0)
    c = c / np.where(tot > 0.0, tot, 1.0)
    w = _refit_from_fit(d, c, np.vstack(probs))
    for k, a in enumerate(alphas):
        out[:, k] += n_rests * (_tails(d.grid, a) @ w)
    return out / n_rec


def _model_groups(n_models: int, seed: int) -> list[NDArray[np.intp]]:
    """The jackknife's groups of evaluation models: one each up to
    :data:`CALIBRATED_CI_MODEL_GROUPS` models, else that many random groups (seeded)."""
    if n_models <= CALIBRATED_CI_MODEL_GROUPS:
        return [np.array([j]) for j in range(n_models)]
    perm = np.random.default_rng([seed, 1]).permutation(n_models)
    return list(np.array_split(perm, CALIBRATED_CI_MODEL_GROUPS))


def _interval_variances(
    s: NDArray[np.float64],
    m: NDArray[np.bool_],
    d: _Deconvolution,
    alphas: Sequence[float],
    n_boot: int,
    seed: int,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Per alpha: the records' variance (bootstrap) and the models' (jackknife)."""
    v_rec = _bootstrap_tprs(d, alphas, n_boot, seed).var(axis=0, ddof=1)
    groups = _model_groups(s.shape[0], seed)
    g = len(groups)
    th = _jackknife_tprs(s, m, d, alphas, groups)
    v_mod = (g - 1.0) / g * ((th - th.mean(axis=0)) ** 2).sum(axis=0)
    return v_rec, v_mod


def _check(
    scores: ArrayLike, member: ArrayLike, *, allow_inf: bool = False
) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    s = np.asarray(scores, dtype=np.float64)
    m = np.asarray(member)
    if s.ndim != 2 or m.shape != s.shape:
        raise fail("member", f"a boolean array of the scores' shape {s.shape}", m.shape)
    if m.dtype != bool:
        raise fail("member", "a boolean array", m.dtype)
    if np.any(np.isnan(s)) or not (allow_inf or np.all(np.isfinite(s))):
        raise fail("scores", "finite numbers", "NaN or inf")
    n_in, n_out = m.sum(axis=0), (~m).sum(axis=0)
    if n_out.min() < 2 or n_in.min() < 1:
        raise fail(
            "member",
            "at least 2 OUT and 1 IN evaluation models per record",
            f"a record with {int(n_out.min())} OUT / {int(n_in.min())} IN",
        )
    return s, m


def calibrated_tprs_at_fprs(
    scores: ArrayLike,
    member: ArrayLike,
    fprs: Sequence[float],
    *,
    pooled_scores: ArrayLike | None = None,
    n_boot: int = 0,
    seed: int = 0,
) -> tuple[CalibratedTpr, ...]:
    """Pooled and per-record calibrated TPR at each FPR of ``fprs`` (one deconvolution).

    Parameters
    ----------
    scores : (m, n) array
        ``scores[j, i]``: the attack's score (higher = member) of record i by evaluation
        model j (e.g. every reference model in turn as the target), on a scale where a
        record's OUT scores are about Gaussian.
    member : (m, n) bool array
        Whether model j trained on record i.
    fprs : sequence of float
        The false-positive rates alpha, each in (0, 1).
    pooled_scores : (m, n) array, optional
        The scores of the pooled figure (default ``scores``): e.g. the attack's own
        scores when ``scores`` is a strictly increasing map of them (the pooled TPR is
        the same, its threshold on the attack's scale); infinite values allowed.
    n_boot : int
        Bootstrap replicates over records of the calibrated figure's 95% interval
        (:data:`CALIBRATED_CI_METHOD`; the audit's :data:`CALIBRATED_CI_REPLICATES`); 0 (or
        1): no interval, and no refit (about 1 s of CPU for 10,000 records and 16 models
        with 50).
    seed : int
        The seed of the replicates' draws: the interval is a function of the scores and
        the seed.

    Returns
    -------
    tuple of CalibratedTpr
        One per FPR, in order.

    Raises
    ------
    InvalidInputError
        Shapes differ, scores not finite, or a record with fewer than 2 OUT or 1 IN
        scores.
    """
    s, m = _check(scores, member)
    ps = s if pooled_scores is None else _check(pooled_scores, m, allow_inf=True)[0]
    alphas = [check_probability(f, "fpr") for f in fprs]
    n_in, n_out = m.sum(axis=0), (~m).sum(axis=0)
    dec = _deconvolution(s, m)
    cal = None if dec is None else dec.tprs(alphas)
    n_cal = 0 if dec is None else dec.n_records
    cis: list[tuple[float, float] | None] = [None] * len(alphas)
    if dec is not None and cal is not None and n_boot > 1:
        v_rec, v_mod = _interval_variances(s, m, dec, alphas, int(n_boot), int(seed))
        cis = [_interval(cal[k], float(v_rec[k] + v_mod[k])) for k in range(len(alphas))]
    out = []
    for i, alpha in enumerate(alphas):
        pooled_tpr, t_pool, fpr_sd, fpr_sd_ci = _pooled(ps, m, alpha)
        thresholds = {
            fpc: record_thresholds(s, ~m, alpha, finite_population_correction=fpc)
            for fpc in (True, False)
        }
        # strictly above: a record whose OUT scores are all equal (a saturated signal) has
        # threshold = that value, and an IN score tying with it is no evidence of membership
        tpr = {
            fpc: float(np.mean(np.where(m, s > thr[None, :], False).sum(axis=0) / n_in))
            for fpc, thr in thresholds.items()
        }
        nu = n_out.astype(np.float64) - 1.0
        plug_fpr = special.stdtr(nu, special.ndtri(alpha) * np.sqrt(nu / (nu + 2.0)))
        check, n_check = _fpr_check(s, ~m, alpha)
        out.append(
            CalibratedTpr(
                fpr=alpha,
                pooled_tpr=pooled_tpr,
                pooled_threshold=t_pool,
                pooled_record_fpr_sd=fpr_sd,
                pooled_record_fpr_sd_ci=fpr_sd_ci,
                calibrated_tpr=None if cal is None else float(cal[i]),
                calibrated_tpr_ci=cis[i],
                calibrated_ci_replicates=int(n_boot) if cis[i] is not None else 0,
                n_records_calibrated=n_cal,
                fitted_threshold_tpr=tpr[True],
                plug_in_tpr=tpr[False],
                plug_in_fpr=float(np.mean(plug_fpr)),
                n_records=int(s.shape[1]),
                n_in_min=int(n_in.min()),
                n_out_min=int(n_out.min()),
                n_out_median=float(np.median(n_out)),
                fpr_check=check,
                n_fpr_check=n_check,
            )
        )
    return tuple(out)


def calibrated_tpr_at_fpr(scores: ArrayLike, member: ArrayLike, fpr: float) -> CalibratedTpr:
    """Pooled and per-record calibrated TPR at FPR ``fpr`` (Jälkö et al. 2026; module
    docstring): :func:`calibrated_tprs_at_fprs` at one FPR.

    Parameters
    ----------
    scores : (m, n) array
        ``scores[j, i]``: the attack's score (higher = member) of record i by evaluation
        model j (e.g. every reference model in turn as the target).
    member : (m, n) bool array
        Whether model j trained on record i.
    fpr : float
        The false-positive rate alpha, in (0, 1).

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
    >>> member = np.arange(16)[:, None] % 2 == np.zeros((1, 1000), int)
    >>> s = rng.normal(size=(16, 1000)) + 3.0 * member  # every record's TPR at 1%: 0.75
    >>> r = calibrated_tpr_at_fpr(s, member, 0.01)
    >>> bool(0.7 < r.calibrated_tpr < 0.8 and r.fitted_threshold_tpr < 0.6)
    True
    """
    return calibrated_tprs_at_fprs(scores, member, (fpr,))[0]
