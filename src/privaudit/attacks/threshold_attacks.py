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
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import check_choice, fail
from privaudit.attacks._orient import loss_like, member_oriented
from privaudit.attacks.base import AttackData, register, require
from privaudit.attacks.calibration import (
    calibrate_threshold,
    check_calibration,
)
from privaudit.attacks.thresholds import (
    OUT_WORLD_VARIANCES,
    SMOOTHING_METHODS,
    OutWorld,
    describe,
    fit_out_world,
)
from privaudit.errors import InsufficientDataError

__all__ = [
    "distillation_attack",
    "distillation_logits_attack",
    "leave_one_out_attack",
    "loss_attack",
    "population_attack",
    "reference_attack",
    "shadow_attack",
]

Result = tuple[NDArray[Any], NDArray[np.float64], dict[str, Any]]

#: Default scale of the per-record fits of R, D and L (see :func:`fit_out_world`).
DEFAULT_VARIANCE = "per-record"


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
) -> Result:
    r"""Attack P: threshold :math:`c_\alpha(\theta)` from the target's losses on population data.

    Out world (Ye et al. Eq. 8-9): the target model with records drawn from the
    population. Score :math:`-F_{pop}(\ell(\theta, z))`. With ``per_class=True`` the
    population is split by class (a label-conditional variant; the paper samples its
    population per class, App. B).
    """
    smoothing = _smoothing(smoothing)
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
    if smoothing == "linear":  # the empirical alpha-quantile of the target's own signals
        sizes = info.get("out_values_per_class") if per_class else None
        n_thr = min(sizes.values()) if sizes else int(out.size)
        guarantee: dict[str, Any] = {
            "alpha_guarantee": "per-target",
            "threshold_sample_size": int(n_thr),
        }
    else:
        guarantee = {"alpha_guarantee": "approximate"}
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


def _calibrated(
    info: dict[str, Any],
    alpha: float | None,
    threshold_calibration: str,
    calibration_scores: Callable[[], NDArray[np.float64]],
) -> dict[str, Any]:
    """Add the population-calibrated threshold to ``info`` (see :mod:`.calibration`)."""
    info["threshold_calibration"] = threshold_calibration
    if alpha is None or threshold_calibration == "smoothed":
        info["alpha_guarantee"] = "approximate"
        return info
    cal = calibration_scores()
    fpr_smoothed = float(np.mean(cal >= -alpha)) if cal.size else float("nan")
    return calibrate_threshold(info, cal, alpha, calibration_fpr_smoothed=fpr_smoothed)


def _pooled(world: OutWorld) -> tuple[float, int] | None:
    if world.variance != "pooled" or world.df is None:
        return None
    return float(world.sigma[0]), int(world.df[0])


def _per_record_scores(
    x: NDArray[np.float64],
    vals: NDArray[np.float64],
    mask: NDArray[np.bool_] | None,
    *,
    rescale: str,
    smoothing: str,
    sigma_floor: float,
    variance: str,
    name: str,
    pooled: tuple[float, int] | None = None,
) -> tuple[NDArray[np.float64], OutWorld]:
    world = fit_out_world(
        vals,
        mask=mask,
        rescale=rescale,
        sigma_floor=sigma_floor,
        name=name,
        variance=variance,
        pooled=pooled,
    )
    return world.score(x, smoothing), world


def _check_variance(variance: str) -> str:
    return check_choice(variance, "variance", OUT_WORLD_VARIANCES)


PopulationInputs = tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_] | None]


def _per_record_attack(
    data: AttackData,
    *,
    attack: str,
    table: str,
    out_world: str,
    mask: NDArray[np.bool_] | None,
    population: Callable[[], PopulationInputs],
    info: dict[str, Any],
    signal: str,
    smoothing: str,
    variance: str,
    threshold_calibration: str,
    sigma_floor: float,
    alpha: float | None,
    scored: NDArray[np.bool_] | None = None,
) -> Result:
    """The common body of attacks R, D and L: per-record out-world p-values.

    ``table`` names the attacker models' signals on the audited records (``out_world``
    describes them in errors) and ``mask`` which of them form each record's out world
    (None: all). ``scored`` restricts the attack to
    some records. ``population()`` returns, for known non-members of the target, the
    target's raw signal, the attacker models' raw signals and their out-world mask, set
    up exactly like an audited record's, for the population-calibrated threshold.
    """
    smoothing = _smoothing(smoothing)
    variance = _check_variance(variance)
    threshold_calibration = check_calibration(threshold_calibration)
    x, rescale = _target_loss_like(data, signal)
    vals, _ = loss_like(signal, data.table(table, signal).values)
    ids = data.record_ids
    if scored is not None:
        x, vals, ids = x[scored], vals[:, scored], ids[scored]
        mask = None if mask is None else mask[:, scored]
    kw: dict[str, Any] = {
        "rescale": rescale,
        "smoothing": smoothing,
        "sigma_floor": sigma_floor,
        "variance": variance,
    }
    try:
        scores, world = _per_record_scores(x, vals, mask, name=table, **kw)
    except InsufficientDataError as exc:
        raise InsufficientDataError(
            f"attack {attack!r} needs {out_world} per record: {exc}"
        ) from None

    def calibration() -> NDArray[np.float64]:
        c_obs, c_ref, c_mask = population()
        cx, _ = loss_like(signal, c_obs)
        cvals, _ = loss_like(signal, c_ref)
        cal, _ = _per_record_scores(
            cx, cvals, c_mask, name=f"{table}_population", pooled=_pooled(world), **kw
        )
        return cal

    full = {"smoothing": smoothing, **info, "sigma_floor": sigma_floor, **describe(world)}
    return ids, scores, _calibrated(full, alpha, threshold_calibration, calibration)


@register(
    "reference",
    fields=("target", "outside_reference"),
    optional_fields=(
        "population_target",
        "outside_reference_population",
        "outside_reference_population_membership",
    ),
    default_signal="logit_confidence",
    alpha_threshold=True,
    description="Attack R (Ye et al. 2022 Sec. 4.3): per-record threshold from reference models trained on population data",
)
def reference_attack(
    data: AttackData,
    *,
    rng: np.random.Generator,
    signal: str = "logit_confidence",
    smoothing: str = "student-t",
    variance: str = DEFAULT_VARIANCE,
    threshold_calibration: str = "population",
    sigma_floor: float = 1e-8,
    alpha: float | None = None,
) -> Result:
    r"""Attack R: per-record threshold :math:`c_\alpha(x_z, y_z)` from reference models.

    Out world (Ye et al. Eq. 10-11): reference models trained on population datasets
    :math:`D_i \sim \pi` that exclude z, evaluated on z. They are read from
    ``outside_reference``: models trained on population data only, so every one is in
    every audited record's out world (the paper's construction, App. B.2; the engine
    uses its shadow models, which are trained the same way). ``variance`` chooses the
    per-record or pooled scale of the Gaussian / Student-t fit
    (:func:`~.thresholds.fit_out_world`).

    Threshold: with ``threshold_calibration="population"`` (default) and an alpha,
    the population records that none of these models trained on
    (``outside_reference_population_membership``) are scored against all of them,
    exactly like an audited record, and the threshold is the conformal quantile of
    those scores (:mod:`privaudit.attacks.calibration`); ``"smoothed"`` is the paper's
    threshold ``-alpha`` on the score.
    """

    return _per_record_attack(
        data,
        attack="reference",
        table="outside_reference",
        out_world="reference models trained on population data",
        mask=None,
        population=lambda: _untouched_population(data, signal, "outside_reference", "reference"),
        info={
            "n_models": len(data.table("outside_reference", signal).model_ids),
            "references": "trained on population data only (Ye et al. Sec. 4.3, App. B.2)",
        },
        signal=signal,
        smoothing=smoothing,
        variance=variance,
        threshold_calibration=threshold_calibration,
        sigma_floor=sigma_floor,
        alpha=alpha,
    )


def _untouched_population(
    data: AttackData, signal: str, field: str, attack: str
) -> PopulationInputs:
    """Calibration inputs: population records that none of the ``field`` models trained on.

    Each is scored against all of them, exactly like an audited record (which none of
    them trained on either): the exchangeability the conformal threshold needs.
    """
    mfield = f"{field}_population_membership"
    pm = require(getattr(data, mfield), mfield)
    usable = ~pm.keep.any(axis=0)
    if not usable.any():
        raise InsufficientDataError(
            f"{mfield}: expected population records that none of the models of attack "
            f"{attack!r} trained on (for its calibration), found none; use fewer or smaller "
            "training sets, or threshold_calibration='smoothed'"
        )
    c_obs = data.table("population_target", signal).values[0]
    c_ref = data.table(f"{field}_population", signal).values
    return c_obs[usable], c_ref[:, usable], None


def _distillation(
    data: AttackData,
    *,
    attack: str,
    field: str,
    rng: np.random.Generator,
    signal: str,
    smoothing: str,
    variance: str,
    threshold_calibration: str,
    sigma_floor: float,
    alpha: float | None,
    students: str,
) -> Result:
    """Attack D's body for the students in ``field`` (soft-label or logit-matching)."""

    return _per_record_attack(
        data,
        attack=attack,
        table=field,
        out_world="distilled models",
        mask=None,
        population=lambda: _untouched_population(data, signal, field, attack),
        info={"n_models": len(data.table(field, signal).model_ids), "students": students},
        signal=signal,
        smoothing=smoothing,
        variance=variance,
        threshold_calibration=threshold_calibration,
        sigma_floor=sigma_floor,
        alpha=alpha,
    )


@register(
    "distillation",
    fields=("target", "distilled"),
    optional_fields=(
        "population_target",
        "distilled_population",
        "distilled_population_membership",
    ),
    default_signal="logit_confidence",
    alpha_threshold=True,
    description="Attack D (Ye et al. 2022 Sec. 4.4): per-record threshold from models distilled from the target on its soft labels",
)
def distillation_attack(
    data: AttackData,
    *,
    rng: np.random.Generator,
    signal: str = "logit_confidence",
    smoothing: str = "student-t",
    variance: str = DEFAULT_VARIANCE,
    threshold_calibration: str = "population",
    sigma_floor: float = 1e-8,
    alpha: float | None = None,
) -> Result:
    r"""Attack D: threshold :math:`c_\alpha(\theta, x_z, y_z)` from self-distilled models.

    Out world (Ye et al. Eq. 13-16): models trained on population data soft-labelled by
    the target (``distilled``: students of the target's output probabilities, the
    paper's objective), which approximate models retrained on the target's training
    set without z; all are used for every record (they never saw the audited records).

    Population calibration: the population records that no distilled model trained on
    (``distilled_population_membership``) are scored against all distilled models,
    exactly like an audited record, and the threshold is their conformal quantile.
    """
    return _distillation(
        data,
        attack="distillation",
        field="distilled",
        rng=rng,
        signal=signal,
        smoothing=smoothing,
        variance=variance,
        threshold_calibration=threshold_calibration,
        sigma_floor=sigma_floor,
        alpha=alpha,
        students="soft-labels (Ye et al. 2022 eq. 14-15)",
    )


@register(
    "distillation-logits",
    fields=("target", "distilled_logits"),
    optional_fields=(
        "population_target",
        "distilled_logits_population",
        "distilled_logits_population_membership",
    ),
    default_signal="logit_confidence",
    alpha_threshold=True,
    in_defaults=False,
    description="Attack D with logit-matching students (Ba & Caruana 2014): models that regress the target's logits",
)
def distillation_logits_attack(
    data: AttackData,
    *,
    rng: np.random.Generator,
    signal: str = "logit_confidence",
    smoothing: str = "student-t",
    variance: str = DEFAULT_VARIANCE,
    threshold_calibration: str = "population",
    sigma_floor: float = 1e-8,
    alpha: float | None = None,
) -> Result:
    r"""Attack D's test with students trained by *logit regression* (not the paper's D).

    The same per-record out-world test and population calibration as
    :func:`distillation_attack`, but the out world comes from ``distilled_logits``:
    students that regress the target's logits with a squared loss (Ba & Caruana 2014,
    Sec. 2.2; :func:`privaudit.models.distill` with ``method="logits"``). Soft labels
    cannot transmit the scale of a saturated target's logits, a regression can, so
    the students' logit-scaled confidences are comparable with the target's. This is
    not Ye et al.'s objective (eq. 14-15), hence its own name.
    """
    return _distillation(
        data,
        attack="distillation-logits",
        field="distilled_logits",
        rng=rng,
        signal=signal,
        smoothing=smoothing,
        variance=variance,
        threshold_calibration=threshold_calibration,
        sigma_floor=sigma_floor,
        alpha=alpha,
        students="logit regression (Ba & Caruana 2014)",
    )


@register(
    "leave-one-out",
    fields=("target", "leave_one_out", "leave_one_out_membership", "leave_one_out_serves"),
    optional_fields=(
        "population_target",
        "leave_one_out_population",
        "leave_one_out_population_serves",
    ),
    default_signal="logit_confidence",
    alpha_threshold=True,
    description="Attack L (Ye et al. 2022 Sec. 4.5): per-record threshold from leave-one-out models",
)
def leave_one_out_attack(
    data: AttackData,
    *,
    rng: np.random.Generator,
    signal: str = "logit_confidence",
    smoothing: str = "student-t",
    variance: str = DEFAULT_VARIANCE,
    threshold_calibration: str = "population",
    sigma_floor: float = 1e-8,
    min_out_models: int = 2,
    alpha: float | None = None,
) -> Result:
    r"""Attack L (idealised): threshold from models trained on the target's data without z.

    Model j serves record i when ``leave_one_out_serves[j, i]`` (members: the models
    trained on ``D \ {x}``; non-members: the models trained on ``D``). Only records
    with at least ``min_out_models`` (>= 2) serving models are scored: the result holds
    those records only, and ``params`` reports ``n_scored`` and ``n_skipped``.

    Population calibration: population records (non-members) scored against the
    models that serve them (``leave_one_out_population_serves``: those trained on
    ``D``), exactly as an audited non-member; the threshold is their conformal quantile.
    """
    if (
        isinstance(min_out_models, bool)
        or not isinstance(min_out_models, int)
        or min_out_models < 2
    ):
        raise fail(
            "min_out_models",
            "an integer >= 2 (a smoothed threshold needs 2 values)",
            min_out_models,
        )
    membership = require(data.leave_one_out_membership, "leave_one_out_membership")
    mask = require(data.leave_one_out_serves, "leave_one_out_serves")
    scored = mask.sum(axis=0) >= min_out_models
    if not scored.any():
        raise InsufficientDataError(
            f"leave_one_out_serves: expected some audited record with at least {min_out_models} "
            "leave-one-out models serving it, found none"
        )

    def population() -> PopulationInputs:
        serves = require(data.leave_one_out_population_serves, "leave_one_out_population_serves")
        usable = serves.sum(axis=0) >= min_out_models
        c_obs = data.table("population_target", signal).values[0]
        c_ref = data.table("leave_one_out_population", signal).values
        return c_obs[usable], c_ref[:, usable], serves[:, usable]

    return _per_record_attack(
        data,
        attack="leave-one-out",
        table="leave_one_out",
        out_world="leave-one-out models",
        mask=mask,
        scored=scored,
        population=population,
        info={
            "n_models": membership.n_models,
            "min_out_models": min_out_models,
            "n_scored": int(scored.sum()),
            "n_skipped": int((~scored).sum()),
        },
        signal=signal,
        smoothing=smoothing,
        variance=variance,
        threshold_calibration=threshold_calibration,
        sigma_floor=sigma_floor,
        alpha=alpha,
    )
