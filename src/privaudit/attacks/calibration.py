r"""Population calibration of the alpha-thresholds of the per-record attacks (R, D, L, LiRA offline).

Why. Attacks R, D and L of Ye et al. (2022, Sec. 4.3-4.5) and offline LiRA (Carlini et
al. 2022, Sec. IV-C) turn a per-record out-world sample of only k = 4-8 model outputs
into a p-value (a smoothed CDF, Ye et al. App. B.3), and declare "member" when the
p-value is at most alpha. That decision holds FPR alpha only if the smoothed CDF is the
true out-world CDF; with a handful of OUT models it is not (the fitted location and
scale are noisy, the rescaled signal is not exactly Gaussian), and the achieved FPR on
held-out non-members drifts from alpha (measured on the demo target, seed 0, alpha = 5%:
R 16.8%, soft-label D 47.3%, logit-matching D 13.3%, L 9.0%).

Rule (``threshold_calibration="population"``). Compute the attack's score, by exactly
the procedure used for an audited record, on ``n`` *calibration records*: population
records that the target never trained on, each scored against models that never
trained on it (as many as an audited record gets). These are draws of the score of a
non-member. With :math:`s_{(1)} \le \dots \le s_{(n)}` the sorted calibration scores and

.. math:: k = \lceil (n + 1)(1 - \alpha) \rceil ,

the attack declares "member" iff ``score > s_(k)`` (stored as the threshold
``nextafter(s_(k), +inf)`` so that the decision stays ``score >= threshold``).

Guarantee (split conformal prediction; Vovk et al. 2005, Angelopoulos & Bates 2021,
Sec. 1). If the score of a new non-member and the ``n`` calibration scores are
exchangeable, the rank of the new score among the ``n + 1`` is uniform (ties broken at
random), so

.. math:: P(S_{new} > s_{(k)}) \le \frac{n + 1 - k}{n + 1} \le \alpha .

The threshold does not depend on the audited records, and the score (hence the ROC,
AUC and TPR at a fixed FPR) is unchanged; only the alpha decision moves.

Exchangeability assumption. The target pool and the population are a uniformly random
split of one dataset, the target trained on neither the calibration records nor the
audited non-members, and every model used to score a calibration record is, like those
used for an audited non-member, one that did not train on it. It fails if the
population is drawn from another distribution than the audited records (the same
assumption as Ye et al.'s attack P, Sec. 4.2, whose threshold is the empirical
alpha-quantile of the target's losses on population data: this rule is attack P's,
applied to the per-record score instead of the raw loss).

``threshold_calibration="smoothed"`` keeps the paper's rule (threshold ``-alpha`` on the
score ``-F_out``; ``-log alpha`` on offline LiRA's ``-log p``), recorded in ``params``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import check_choice, check_probability
from privaudit.attacks.base import AttackData
from privaudit.errors import InsufficientDataError

__all__ = [
    "THRESHOLD_CALIBRATIONS",
    "calibrate_threshold",
    "calibration_diagnostics",
    "check_calibration",
    "conformal_threshold",
    "out_count_params",
    "population_reference_inputs",
    "random_out_subsets",
]

#: ``"population"`` (conformal, default) or ``"smoothed"`` (Ye et al. Eq. 5 with App. B.3).
THRESHOLD_CALIBRATIONS: tuple[str, ...] = ("population", "smoothed")


def check_calibration(value: str) -> str:
    """Validate a ``threshold_calibration`` setting."""
    return check_choice(value, "threshold_calibration", THRESHOLD_CALIBRATIONS)


def conformal_threshold(calibration_scores: NDArray[np.float64], alpha: float) -> float:
    r"""Threshold t with :math:`P(S_{new} \ge t) \le \alpha` for an exchangeable new score.

    ``t = nextafter(s_(k), +inf)`` with :math:`k = \lceil (n+1)(1-\alpha) \rceil` (see the
    module docstring), so ``score >= t`` iff ``score > s_(k)``.

    Raises
    ------
    InsufficientDataError
        If ``k > n``: fewer than :math:`1/\alpha - 1` calibration scores cannot certify
        alpha.

    Examples
    --------
    >>> t = conformal_threshold(np.arange(19.0), 0.05)  # k = 19: above the largest
    >>> bool(t > 18.0) and bool(t < 18.0 + 1e-9)
    True
    """
    alpha = check_probability(alpha, "alpha")
    s = np.sort(np.asarray(calibration_scores, dtype=np.float64))
    n = int(s.size)
    k = math.ceil((n + 1) * (1.0 - alpha) - 1e-9)
    if k > n or n == 0:
        raise InsufficientDataError(
            f"population calibration: expected at least {math.ceil(1.0 / alpha - 1.0 - 1e-9)} "
            f"calibration records to certify alpha={alpha}, found {n}; use more population "
            "records or threshold_calibration='smoothed'"
        )
    return float(np.nextafter(s[k - 1], np.inf))


def calibrate_threshold(
    info: dict[str, Any],
    calibration_scores: NDArray[np.float64],
    alpha: float,
    **extra: Any,
) -> dict[str, Any]:
    """Record a population-calibrated alpha threshold in an attack's ``params`` (``info``).

    Adds, in this order: ``threshold`` (:func:`conformal_threshold`), ``n_calibration``,
    ``alpha_guarantee="per-target"``, ``threshold_sample_size`` (the achieved FPR's check
    counts that sample's error too: ``games.metrics``), the ``extra`` entries, then
    :func:`calibration_diagnostics` (its warnings appended to ``info["warnings"]``).
    Returns ``info``.
    """
    cal = np.asarray(calibration_scores, dtype=np.float64)
    info["threshold"] = conformal_threshold(cal, alpha)
    info["n_calibration"] = int(cal.size)
    info["alpha_guarantee"] = "per-target"
    info["threshold_sample_size"] = int(cal.size)
    info.update(extra)
    diag = calibration_diagnostics(cal, info["threshold"], alpha)
    warnings = diag.pop("warnings")
    info.update(diag)
    if warnings:
        info["warnings"] = [*info.get("warnings", []), *warnings]
    return info


def calibration_diagnostics(
    calibration_scores: NDArray[np.float64], threshold: float, alpha: float
) -> dict[str, Any]:
    """How often the calibrated threshold fires on its own calibration records, with warnings.

    The conformal threshold fires on the calibration records strictly above
    :math:`s_{(k)}`. With continuous scores that is about ``alpha * n`` of them; when a
    block of tied scores straddles the quantile (e.g. many records at one extreme value
    of a smoothed CDF) it can be far fewer, and when the block reaches the largest
    score, none: the attack then cannot fire at this alpha at all, and its achieved
    FPR and TPR of 0 are an artefact of the ties, not a result. Both cases are reported
    as warnings (``params["warnings"]``), which the results and the summary show.

    Returns ``{"calibration_fpr": ..., "calibration_ties_at_threshold": ..., "warnings": [...]}``.
    """
    cal = np.asarray(calibration_scores, dtype=np.float64)
    n = int(cal.size)
    fires = int(np.count_nonzero(cal >= threshold))
    below = cal[cal < threshold]
    tie = int(np.count_nonzero(cal == below.max())) if below.size else 0
    out: dict[str, Any] = {
        "calibration_fpr": fires / n if n else float("nan"),
        "calibration_ties_at_threshold": tie,
        "warnings": [],
    }
    if n and fires == 0:
        out["warnings"].append(
            f"unreachable threshold: at alpha={alpha:g} no calibration record scores above the "
            f"conformal quantile ({tie} of {n} tie at it), so the attack cannot fire; its "
            "achieved FPR/TPR at alpha are not a result (use a smoothing without ties, e.g. "
            "student-t, or more models)"
        )
    elif n and fires < 0.5 * alpha * n and tie > 1:
        out["warnings"].append(
            f"ties at the calibrated threshold: it fires on {fires} of {n} calibration records "
            f"({100.0 * fires / n:.2f}%) at alpha={alpha:g} ({tie} records tie at the quantile); "
            "the attack is much more conservative than alpha"
        )
    return out


def random_out_subsets(
    out: NDArray[np.bool_], sizes: NDArray[np.int64], rng: np.random.Generator
) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
    """Per column, a uniformly random subset of ``sizes[i]`` of its OUT models.

    Parameters
    ----------
    out : (k, Z) bool
        Which models did not train on each calibration record.
    sizes : (Z,) int
        How many OUT models to keep per record (drawn to match the audited records).
    rng : numpy.random.Generator

    Returns
    -------
    mask : (k, Z) bool
        The chosen models.
    usable : (Z,) bool
        Records with at least ``sizes[i]`` OUT models (the others keep no model).
    """
    keys = np.where(out, rng.random(out.shape), np.inf)
    rank = np.argsort(np.argsort(keys, axis=0, kind="stable"), axis=0, kind="stable")
    usable = out.sum(axis=0) >= sizes
    mask = (rank < sizes[None, :]) & out & usable[None, :]
    return mask, usable


def out_count_params(n_out: NDArray[np.int64]) -> dict[str, Any]:
    """What a population-calibrated threshold's guarantee rests on when the audited
    records' numbers of OUT reference models (``n_out``) differ (nothing when they are
    all equal, as in the product's split).

    The calibration draws its OUT-subset sizes from ``n_out``, all audited records' counts
    (:func:`population_reference_inputs`), so the per-target guarantee holds only if
    reference-model membership is independent of the target's, which the attack, blind to
    the target's membership, cannot check. Returns ``alpha_guarantee_requires`` (that
    condition) and ``n_out_per_record`` (the counts, aligned with the scored records),
    from which :func:`~privaudit.metrics.roc.attack_metrics` tests it.
    """
    counts = np.asarray(n_out, dtype=np.int64)
    if counts.size == 0 or int(counts.min()) == int(counts.max()):
        return {}
    return {
        "alpha_guarantee_requires": (
            "reference-model membership independent of the target's: the audited records "
            f"have {int(counts.min())} to {int(counts.max())} OUT reference models and the "
            "calibration draws its subset sizes from all of them, members included"
        ),
        "n_out_per_record": counts.tolist(),
    }


def population_reference_inputs(
    data: AttackData, signal: str, n_out: NDArray[np.int64], rng: np.random.Generator
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_]]:
    """Population records set up exactly like audited records for the reference models.

    For each population record (a known non-member of the target) the target's signal
    (``population_target``), the reference models' signals (``reference_population``) and
    a uniformly random subset of its OUT reference models whose size is drawn from
    ``n_out``, the audited records' OUT counts, so that its score has the distribution an
    audited non-member's score has (the exchangeability that :func:`conformal_threshold`
    needs). Records with too few OUT models are dropped.

    Independence assumption. ``n_out`` counts every audited record, members and
    non-members alike (the attack does not read the target's membership), so the sizes
    are the non-members' only if reference-model membership is independent of target
    membership. The product's split guarantees it (every record is OUT for half the
    reference models, a constant count). A keep matrix passed to the API may not: when
    the target is one row of a balanced matrix (Carlini et al.'s layout), each member
    is OUT for one more reference model than each non-member, and the threshold's FPR on
    non-members exceeds alpha (4 models, alpha = 5%: 6.2%). When the counts differ
    between records the attack records them (:func:`out_count_params`), and
    :func:`~privaudit.metrics.roc.attack_metrics`, which knows the membership,
    withdraws the per-target guarantee when members' and non-members' counts differ.

    Returns
    -------
    obs : (Z',) float
        The target's raw signal on the usable population records.
    ref : (k, Z') float
        The reference models' raw signals on them.
    mask : (k, Z') bool
        The chosen OUT models of each.
    """
    obs = data.table("population_target", signal).values[0]
    ref = data.table("reference_population", signal).values
    pm = data.reference_population_membership
    out_z = np.ones(ref.shape, dtype=bool) if pm is None else ~pm.keep
    sizes = rng.choice(n_out, size=obs.size).astype(np.int64)
    mask, usable = random_out_subsets(out_z, sizes, rng)
    return obs[usable], ref[:, usable], mask[:, usable]
