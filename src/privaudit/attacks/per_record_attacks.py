r"""Attacks R, D and L of Ye et al. (CCS'22, Sec. 4.3-4.5): per-record out worlds.

Each record's threshold comes from its own out world, a handful of models (reference
models trained on population data, students distilled from the target, or models trained
on the target's training set without the record), smoothed by the predictive Student-t by
default, and is calibrated on population records (:mod:`privaudit.attacks.calibration`).
The rules shared with P and S (the score :math:`-F_{out}`, smoothing, signals) are in
:mod:`privaudit.attacks.threshold_attacks`, whose module docstring explains them and the
measured effect of the calibration.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import check_choice, fail
from privaudit.attacks._orient import loss_like
from privaudit.attacks.base import AttackData, register, require
from privaudit.attacks.calibration import (
    calibrate_threshold,
    check_calibration,
)
from privaudit.attacks.threshold_attacks import (
    Result,
    _smoothing,
    _target_loss_like,
)
from privaudit.attacks.thresholds import (
    OUT_WORLD_VARIANCES,
    OutWorld,
    describe,
    fit_out_world,
)
from privaudit.errors import InsufficientDataError

__all__ = [
    "distillation_attack",
    "distillation_logits_attack",
    "leave_one_out_attack",
    "reference_attack",
]

#: Default scale of the per-record fits of R, D and L (see :func:`fit_out_world`).
DEFAULT_VARIANCE = "per-record"


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
