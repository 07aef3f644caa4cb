r"""Loss-threshold attacks of Ye et al. (CCS'22, Sec. 4): P, S, R, D, L, and the global baseline.

Each attack is the test of Ye et al. Eq. 4, "member iff
:math:`\ell(\theta, z) \le c_\alpha(\cdot)`", where the threshold function
:math:`c_\alpha` is the alpha-percentile (Eq. 5) of the smoothed loss distribution in the
attack's out world (App. B.3, :mod:`privaudit.attacks.thresholds`):

=====  ==========================  ===================================================
name   threshold (Table 1)         out-world sample
=====  ==========================  ===================================================
S      :math:`c_\alpha(y_z)`       shadow models on their OUT shadow records of class
                                   :math:`y_z` (Eq. 6-7)
P      :math:`c_\alpha(\theta)`    the target on population records (Eq. 8-9)
R      :math:`c_\alpha(x_z, y_z)`  reference models trained on population data, on the
                                   record (Eq. 10-11)
D      :math:`c_\alpha(\theta, z)` models distilled from the target, on the record
                                   (Eq. 13-16)
L      :math:`c_\alpha(D, z)`      models trained on the target's training set without
                                   the record (Sec. 4.5)
=====  ==========================  ===================================================

The score of record z is :math:`-F_{out}(\ell(\theta, z))`, minus the smoothed out-world
CDF at the target's loss (its p-value), so "higher = member", the alpha-attack is
exactly ``score >= -alpha``, and sweeping the threshold gives the ROC curve.

Smoothing defaults: ``"linear"`` for P and S, whose out worlds pool hundreds or
thousands of values (the empirical quantile is then accurate), and ``"student-t"`` (the
predictive Student-t on logit-rescaled losses, :mod:`privaudit.attacks.thresholds`) for
R, D and L, whose per-record out worlds hold only as many values as there are models:
with 4-8 OUT models the paper's plug-in smoothings reach an achieved FPR several times
alpha (e.g. 6.6% at alpha = 1% for the logit-Gaussian with 4 OUT models, 20% for linear
interpolation), while the predictive t stays at alpha when the logit-rescaled losses
are Gaussian. Every paper method stays available through ``smoothing=``.

Alpha decision of R, D and L: by default (``threshold_calibration="population"``) the
threshold is not ``-alpha`` but the conformal quantile of the same score computed on
population records (:mod:`privaudit.attacks.calibration`), which holds alpha whatever
the smoothing; the score, hence the ROC, is unchanged. On the demo target (Adult MLP,
seed 0, alpha = 5%; each attack rerun on ``ExperimentResult.attack_data`` with
``threshold_calibration="smoothed"``) the smoothed rule alone
reached FPR: R 16.8% (8 reference models trained on population data), D 47.3%
(soft-label students are less confident than the overfit target on every record), D
with logit-matching students 13.3%, L 9.0%; calibrated: 6.1%, 4.1%, 6.7%, 4.0%.
``variance="pooled"`` pools the within-record spread over records (as LiRA's fixed
variance); ``"per-record"`` (the paper) stays the default.

Default signal: LiRA's logit-scaled confidence :math:`\phi = \log\frac{p_y}{1-p_y}`,
which *is* the paper's logit rescaling of the loss, :math:`\phi = \log\frac{e^{-\ell}}{1 -
e^{-\ell}}` (App. B.3), but computed stably from the logits by the signal layer. The
two give the same ranking and the same Gaussian fits in exact arithmetic; in floating
point the loss of a confident prediction (margin above about 37 nats) rounds to exactly
0, so on overfit models the loss ties where :math:`\phi` still separates records. The
linear interpolation then interpolates on the :math:`-\phi` scale instead of the loss
scale (the same empirical quantiles, a different interpolant between them).
``signal="loss"`` runs the paper's computation literally.

Signals other than the loss are mapped to the loss-like scale by
:func:`privaudit.attacks._orient.loss_like` (``prob_true`` -> cross-entropy loss).

This module holds the global baseline and P and S; R, D and L (per-record out worlds)
are in :mod:`privaudit.attacks.per_record_attacks`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import check_choice, fail
from privaudit.attacks._orient import loss_like, member_oriented
from privaudit.attacks.base import AttackData, register, require
from privaudit.attacks.calibration import calibrate_threshold
from privaudit.attacks.thresholds import (
    SMOOTHING_METHODS,
    describe,
    fit_out_world,
)
from privaudit.errors import InsufficientDataError

__all__ = [
    "loss_attack",
    "population_attack",
    "shadow_attack",
]

Result = tuple[NDArray[Any], NDArray[np.float64], dict[str, Any]]


def _target_loss_like(data: AttackData, signal: str) -> tuple[NDArray[np.float64], str]:
    return loss_like(signal, data.table("target", signal).values[0])


def _smoothing(smoothing: str) -> str:
    return check_choice(smoothing, "smoothing", SMOOTHING_METHODS)


def _class_conditional_scores(
    x: NDArray[np.float64],
    x_labels: NDArray[np.int64],
    out: NDArray[np.float64],
    out_labels: NDArray[np.int64],
    *,
    rescale: str,
    smoothing: str,
    sigma_floor: float,
    what: str,
) -> tuple[NDArray[np.float64], dict[str, Any]]:
    """``-F_out,y(x)`` with one shared out-world sample per class y."""
    scores = np.empty(x.size, dtype=np.float64)
    counts: dict[str, int] = {}
    floored = 0
    for y in np.unique(x_labels):
        sel = x_labels == y
        sample = out[out_labels == y]
        if sample.size < 2:
            raise InsufficientDataError(
                f"{what}: expected at least 2 out-world values of class {int(y)}, "
                f"found {sample.size} (needed for {int(sel.sum())} audited record(s))"
            )
        world = fit_out_world(
            sample, rescale=rescale, sigma_floor=sigma_floor, name=f"{what} class {int(y)}"
        )
        scores[sel] = world.score(x[sel], smoothing)
        counts[str(int(y))] = int(sample.size)
        floored += world.n_sigma_floored
    return scores, {
        "rescale": rescale,
        "out_values_per_class": counts,
        "min_out_values": min(counts.values()),
        "n_sigma_floored": floored,
    }


@register(
    "loss",
    fields=("target",),
    default_signal="loss",
    alpha_threshold=False,
    description="Global-threshold baseline (Yeom et al. 2018): the target's signal, oriented",
)
def loss_attack(data: AttackData, *, rng: np.random.Generator, signal: str = "loss") -> Result:
    """Global loss-threshold baseline: score = the target's signal oriented "higher = member".

    For the loss, the score is :math:`-\\ell(\\theta, z)` (Yeom et al. 2018; Ye et al.
    Eq. 3 with a constant threshold). No out world, hence no alpha threshold.
    """
    values = data.table("target", signal).values[0]
    return data.record_ids, member_oriented(signal, values).copy(), {"n_models": 0}


@register(
    "population",
    fields=("target", "population_target"),
    optional_fields=("population_labels",),
    default_signal="logit_confidence",
    alpha_threshold=True,
    description="Attack P (Ye et al. 2022 Sec. 4.2): model-dependent threshold from population data",
)
def population_attack(
    data: AttackData,
    *,
    rng: np.random.Generator,
    signal: str = "logit_confidence",
    smoothing: str = "linear",
    per_class: bool = False,
    sigma_floor: float = 1e-8,
    threshold_calibration: str = "population",
    alpha: float | None = None,
) -> Result:
    r"""Attack P: threshold :math:`c_\alpha(\theta)` from the target's losses on population data.

    Out world (Ye et al. Eq. 8-9): the target model with records drawn from the
    population. Score :math:`-F_{pop}(\ell(\theta, z))`. With ``per_class=True`` the
    population is split by class (a label-conditional variant; the paper samples its
    population per class, App. B).

    The alpha decision of the linear smoothing (the paper's empirical quantile,
    ``per_class=False``, ``threshold_calibration="population"``, the default) is
    conformal: the threshold is
    :func:`~privaudit.attacks.calibration.conformal_threshold` of the population records'
    own scores, which flags a record iff its loss is below the
    :math:`\lfloor (N+1)\alpha \rfloor`-th smallest population loss, so a non-member of
    the target, exchangeable with the ``N`` population records, is flagged with
    probability at most alpha (``-F_{pop}`` is monotone in the loss). Reading the
    interpolated quantile at ``-alpha`` instead gives an expected FPR of
    :math:`\alpha + (1 - 2\alpha)/(N+1)`, above alpha: that is
    ``threshold_calibration="smoothed"``. Per class, and with the Gaussian smoothings,
    the decision is ``score >= -alpha`` and its guarantee approximate.
    """
    smoothing = _smoothing(smoothing)
    check_choice(threshold_calibration, "threshold_calibration", ("population", "smoothed"))
    x, rescale = _target_loss_like(data, signal)
    out, _ = loss_like(signal, data.table("population_target", signal).values[0])
    if per_class:
        if data.population_labels is None:
            raise fail(
                "population_labels", "class labels of the population (per_class=True)", "None"
            )
        scores, info = _class_conditional_scores(
            x,
            data.labels,
            out,
            data.population_labels,
            rescale=rescale,
            smoothing=smoothing,
            sigma_floor=sigma_floor,
            what="population",
        )
    else:
        world = fit_out_world(out, rescale=rescale, sigma_floor=sigma_floor, name="population")
        scores = world.score(x, smoothing)
        info = describe(world)
    conformal = smoothing == "linear" and not per_class
    guarantee: dict[str, Any] = {"alpha_guarantee": "approximate"}
    if conformal and threshold_calibration == "population" and alpha is not None:
        # conformal on the population's own scores (docstring): exact, not the
        # interpolated quantile, whose expected FPR is alpha + (1 - 2 alpha)/(N + 1)
        guarantee = calibrate_threshold(
            {"threshold_calibration": "population"}, world.score(out, smoothing), alpha
        )
    elif conformal:
        guarantee["threshold_calibration"] = "smoothed"
    return (
        data.record_ids,
        scores,
        {
            **guarantee,
            "smoothing": smoothing,
            "per_class": per_class,
            "n_population": int(out.size),
            "n_models": 0,
            "sigma_floor": sigma_floor,
            **info,
        },
    )


@register(
    "shadow",
    fields=("target", "shadow", "shadow_membership", "shadow_labels"),
    default_signal="logit_confidence",
    alpha_threshold=True,
    description="Attack S (Ye et al. 2022 Sec. 4.1): class-dependent threshold from shadow models",
)
def shadow_attack(
    data: AttackData,
    *,
    rng: np.random.Generator,
    signal: str = "logit_confidence",
    smoothing: str = "linear",
    sigma_floor: float = 1e-8,
) -> Result:
    r"""Attack S: class-dependent threshold :math:`c_\alpha(y)` from shadow models.

    Out world (Ye et al. Eq. 6-7): every (shadow model, shadow record) pair in which
    the record was *not* in that shadow model's training set and has label y, pooled
    over shadow models. Score :math:`-F_{S^{y}}(\ell(\theta, z))` for a record of label y.
    """
    smoothing = _smoothing(smoothing)
    x, rescale = _target_loss_like(data, signal)
    table = data.table("shadow", signal)
    membership = require(data.shadow_membership, "shadow_membership")
    shadow_labels = require(data.shadow_labels, "shadow_labels")
    out_pairs = ~membership.keep
    if not out_pairs.any():
        raise InsufficientDataError(
            "shadow_membership: expected some OUT (model, record) pairs, found none"
        )
    vals, _ = loss_like(signal, table.values)
    labels = np.broadcast_to(shadow_labels[None, :], vals.shape)
    scores, info = _class_conditional_scores(
        x,
        data.labels,
        vals[out_pairs],
        labels[out_pairs],
        rescale=rescale,
        smoothing=smoothing,
        sigma_floor=sigma_floor,
        what="shadow",
    )
    return (
        data.record_ids,
        scores,
        {
            # Ye et al. Sec. 4.1: c_alpha(y) is model-independent; it holds alpha over
            # random target models (Def. 3.1), not for one fixed target.
            "alpha_guarantee": "average-over-targets",
            "smoothing": smoothing,
            "n_models": len(table.model_ids),
            "n_shadow_records": int(table.record_ids.size),
            "n_out_pairs": int(out_pairs.sum()),
            "sigma_floor": sigma_floor,
            **info,
        },
    )
