"""The attack input contract (:class:`AttackData`), the registry and :func:`run_attack`.

Every attack reads one frozen :class:`AttackData` and returns one
:class:`privaudit.records.AttackScores` whose ``scores`` are oriented
**higher = more likely member**. Signals keep their natural direction
(``signals.SIGNAL_HIGHER_IS_MEMBER``; loss is *low* for members) and attacks orient
inside. Every signal table is a :class:`privaudit.records.SignalTable`
(``values[j, i]`` = signal of model ``model_ids[j]`` on record ``record_ids[i]``), and
every group of tables is a ``dict`` keyed by signal name (``"loss"``, ``"prob_true"``,
``"logit_confidence"``, ``"entropy"``, ``"modified_entropy"``).

Which inputs each attack reads
------------------------------
"Audited records" are the records whose membership in the target is being inferred
(``AttackData.record_ids``); every table on them must carry exactly those ids, in that
order. ``S`` below is the attack's signal (parameter ``signal``; default in brackets;
for P, S, R, D, L the default ``logit_confidence`` is the paper's logit-rescaled loss
computed stably, see :mod:`privaudit.attacks.threshold_attacks`).

=================  ==========================================================================
attack             reads (besides ``record_ids``, ``labels``, ``target[S]``)
=================  ==========================================================================
``loss``           nothing else. Global-threshold baseline (Yeom et al. 2018): score = the
                   signal oriented "higher = member" [``loss``]. No alpha threshold.
``population``     Attack P (Ye et al. 2022, Sec. 4.2): ``population_target[S]`` (1 x Z, the
                   target on population records, non-members of the target); with
                   ``per_class=True`` also ``population_labels``. [``logit_confidence``]
``shadow``         Attack S (Sec. 4.1): ``shadow[S]`` (m x Zs, shadow models trained on
                   population data, on their own shadow records), ``shadow_membership``
                   (m x Zs; the OUT pairs form the out world) and ``shadow_labels`` (Zs,
                   for the class-dependent threshold c_alpha(y)). [``logit_confidence``]
``reference``      Attack R (Sec. 4.3): ``outside_reference[S]`` (k x n: reference models
                   trained on population data only, as in the paper, on the audited
                   records; every one is in every record's out world). Calibration:
                   ``outside_reference_population`` and its membership. [``logit_confidence``]
``distillation``   Attack D (Sec. 4.4): ``distilled[S]`` (k x n, models distilled from the
                   target on population data, evaluated on the audited records; all are
                   treated as OUT). [``logit_confidence``]
``distillation-logits``  Attack D with logit-matching students: ``distilled_logits[S]``
                   (models trained to regress the target's logits, Ba & Caruana 2014,
                   not the paper's soft labels). [``logit_confidence``]
``leave-one-out``  Attack L (Sec. 4.5): ``leave_one_out[S]`` (k x n),
                   ``leave_one_out_membership`` and ``leave_one_out_serves`` (k x n);
                   model j is used for record i when ``serves[j, i]``. Only records
                   with at least 2 such models are
                   scored: the returned ``record_ids`` are that subset, and
                   ``params["n_skipped"]`` says how many were left out. [``logit_confidence``]
``lira-online``    LiRA (Carlini et al. 2022): ``reference[S]`` and ``reference_membership``;
                   per record, IN and OUT Gaussians. [``logit_confidence``]
``lira-offline``   LiRA offline: as above, OUT models only. [``logit_confidence``]
``rmia-online``    RMIA (Zarifzadeh et al. 2024): ``reference[S]``, ``reference_membership``,
                   ``population_target[S]`` (1 x Z) and ``reference_population[S]``
                   (k x Z, the same reference models on the same population records);
                   optional ``reference_population_membership`` (k x Z; None = no
                   reference model trained on any population record). [``loss``: the
                   ratio is computed in log space, log p = -loss]
``rmia-offline``   RMIA offline: as rmia-online, OUT models only; ``a`` tuned on the
                   reference models by default. [``loss``]
``bavaria-online`` BaVarIA (Brannvall 2026): as lira-online; the variance under a
                   normal-inverse-gamma prior fitted on the reference models (not in
                   the default attacks). [``logit_confidence``]
``bavaria-offline`` BaVarIA offline: as lira-offline, OUT models only. [``logit_confidence``]
``informia-online`` InfoRMIA (Tao and Shokri 2026): as rmia-online; the information gain
                   log2 Pr(x|theta)/Pr(x) plus the population KL term, in bits (not in the
                   default attacks: it ranks as rmia-online's default score). [``loss``]
``informia-offline`` InfoRMIA offline: as rmia-offline. [``loss``]
=================  ==========================================================================

The reference models of ``reference`` and ``reference_population`` must be the same
models (same ``model_ids``, same order). :func:`required_inputs` gives the fields and
signals of an attack programmatically, so the experiment engine knows which models to
train and which signal tables to build.

Alpha thresholds
----------------
Attacks P, S, R, D, L (and offline LiRA in its one-sided form) are hypothesis tests at
a requested false-positive rate ``alpha`` (Ye et al. 2022, Eq. 5): their score is
``-F_out(x)``, minus the smoothed out-world CDF (= the p-value) of the target's
signal, so ``scores >= -alpha`` is exactly the paper's decision at FPR ``alpha``;
:func:`run_attack` then sets ``AttackScores.alpha = alpha`` and
``AttackScores.threshold = -alpha``. Sweeping the threshold gives the ROC. Offline LiRA
(and offline BaVarIA) score ``-log p`` instead, a strictly increasing map of ``-p`` that
does not round to 0 for strong records, with the threshold ``-log alpha`` in
``params["threshold"]``.

The per-record attacks R, D, L and offline LiRA instead calibrate the threshold on
population records by default (``threshold_calibration="population"``,
:mod:`privaudit.attacks.calibration`): they return ``params["threshold"]`` and
:func:`run_attack` uses it. An attack whose function has an ``alpha`` parameter is
given the requested alpha (None when no alpha was requested: no calibration).
The calibration reads ``population_target`` with ``reference_population`` (R, LiRA),
``distilled_population`` (D; ``distilled_logits_population`` for its logit-matching
variant) or ``leave_one_out_population`` (L).
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import check_probability, fail
from privaudit.attacks.data import SIGNAL_NAMES, TABLE_FIELDS, AttackData
from privaudit.errors import DesignError
from privaudit.records import AttackScores

__all__ = [
    "ATTACKS",
    "BUILTIN_ATTACKS",
    "SIGNAL_NAMES",
    "TABLE_FIELDS",
    "AttackData",
    "AttackFunction",
    "AttackSpec",
    "InputRequirements",
    "attack_names",
    "default_attacks",
    "register",
    "require",
    "required_inputs",
    "run_attack",
]

# --------------------------------------------------------------------------------------
# Registry
# --------------------------------------------------------------------------------------


#: The signature every registered attack implements:
#: ``func(data, *, rng, signal, **settings) -> (record_ids, scores, params)``, where
#: ``rng`` is a generator derived from ``run_attack``'s ``seed``, ``scores`` are "higher
#: = member" for the returned ``record_ids`` (all audited records, or a documented
#: subset), and ``params`` records every setting used.
AttackFunction = Callable[..., tuple[NDArray[Any], NDArray[np.float64], dict[str, Any]]]

T = TypeVar("T")


def require(value: T | None, name: str) -> T:
    """``value`` if it is not None, else an InvalidInputError naming the missing input."""
    if value is None:
        raise fail(name, "an input (this attack reads it)", "None")
    return value


@dataclasses.dataclass(frozen=True)
class InputRequirements:
    """Which :class:`AttackData` fields and signals an attack reads.

    ``fields`` are the AttackData fields that must be set (e.g. ``("target",
    "reference", "reference_membership")``); ``optional_fields`` are read when
    present; ``signals`` the signal tables needed in every table-valued field.
    """

    attack: str
    fields: tuple[str, ...]
    signals: tuple[str, ...]
    optional_fields: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class AttackSpec:
    """One registered attack.

    Attributes
    ----------
    name : str
        Stable lower-case identifier (``results.json``, configs, the CLI).
    func : AttackFunction
        The implementation; returns ``(record_ids, scores, params)``.
    fields : tuple of str
        Required :class:`AttackData` fields.
    default_signal : str
        The signal used unless ``signal=`` is passed.
    alpha_threshold : bool
        True when the attack decides at a requested FPR ``alpha``: either its score is
        ``-p_value`` of an out-world test (threshold ``-alpha``), or it returns a
        calibrated ``params["threshold"]`` (with ``params["score_kind"] ==
        "statistic"`` when the score is not a p-value).
    description : str
        One line for reports.
    optional_fields : tuple of str
        Fields read when present (or needed for some settings).
    signal_choices : tuple of str
        Signals the attack accepts.
    in_defaults : bool
        Whether the attack runs when none are listed (:func:`default_attacks`); False
        for attacks that need a particular kind of target (``distillation-logits``:
        an MLP, whose classifier has a matching regressor).
    extra_signals : tuple of str
        Signals read besides the main one (an attack on several signals).
    """

    name: str
    func: AttackFunction
    fields: tuple[str, ...]
    default_signal: str
    alpha_threshold: bool
    description: str
    optional_fields: tuple[str, ...] = ()
    signal_choices: tuple[str, ...] = SIGNAL_NAMES
    in_defaults: bool = True
    extra_signals: tuple[str, ...] = ()


#: The registry: stable attack name -> spec. Filled by the attack modules on import.
ATTACKS: dict[str, AttackSpec] = {}

_ATTACK_MODULES: tuple[str, ...] = (
    "privaudit.attacks.threshold_attacks",
    "privaudit.attacks.per_record_attacks",
    "privaudit.attacks.lira",
    "privaudit.attacks.rmia",
    "privaudit.attacks.extra_attacks",
    "privaudit.attacks.bavaria",
    "privaudit.attacks.informia",
)


def register(
    name: str,
    *,
    fields: tuple[str, ...],
    default_signal: str,
    alpha_threshold: bool,
    description: str,
    optional_fields: tuple[str, ...] = (),
    signal_choices: tuple[str, ...] = SIGNAL_NAMES,
    in_defaults: bool = True,
    extra_signals: tuple[str, ...] = (),
) -> Callable[[AttackFunction], AttackFunction]:
    """Decorator registering an attack under a stable ``name``.

    Raises
    ------
    InvalidInputError
        If ``name`` is already registered to another function, or a field or signal
        is unknown.
    """
    known = {f.name for f in dataclasses.fields(AttackData)}
    for f in (*fields, *optional_fields):
        if f not in known:
            raise fail("fields", "AttackData field names", repr(f))
    if default_signal not in signal_choices or not set(signal_choices) <= set(SIGNAL_NAMES):
        raise fail("signal_choices", "signal names containing the default signal", signal_choices)
    if not set(extra_signals) <= set(SIGNAL_NAMES):
        raise fail("extra_signals", "signal names", extra_signals)

    def deco(func: AttackFunction) -> AttackFunction:
        if name in ATTACKS and ATTACKS[name].func is not func:
            existing = ATTACKS[name].func
            if getattr(existing, "__qualname__", None) != getattr(func, "__qualname__", None):
                raise fail("name", "an attack name not registered yet", repr(name))
        ATTACKS[name] = AttackSpec(
            name=name,
            func=func,
            fields=tuple(fields),
            default_signal=default_signal,
            alpha_threshold=alpha_threshold,
            description=description,
            optional_fields=tuple(optional_fields),
            signal_choices=tuple(signal_choices),
            in_defaults=bool(in_defaults),
            extra_signals=tuple(extra_signals),
        )
        return func

    return deco


def _ensure_registered() -> None:
    for mod in _ATTACK_MODULES:
        importlib.import_module(mod)


#: The stable order of the built-in attacks (DESIGN, "results contract").
BUILTIN_ATTACKS: tuple[str, ...] = (
    "loss",
    "population",
    "shadow",
    "reference",
    "distillation",
    "distillation-logits",
    "leave-one-out",
    "lira-online",
    "lira-offline",
    "rmia-online",
    "rmia-offline",
    "calibrated-loss",
    "learned",
    "label-only",
    "bavaria-online",
    "bavaria-offline",
    "informia-online",
    "informia-offline",
)


def attack_names() -> tuple[str, ...]:
    """Names of every registered attack: the built-in ones in DESIGN order, then others."""
    _ensure_registered()
    rank = {n: i for i, n in enumerate(BUILTIN_ATTACKS)}
    return tuple(sorted(ATTACKS, key=lambda n: (rank.get(n, len(rank)), list(ATTACKS).index(n))))


def default_attacks() -> tuple[str, ...]:
    """The attacks run when none are listed: every registered one with ``in_defaults``."""
    return tuple(n for n in attack_names() if ATTACKS[n].in_defaults)


def _spec(name: str) -> AttackSpec:
    _ensure_registered()
    if name not in ATTACKS:
        raise fail("attack", "one of " + ", ".join(map(repr, ATTACKS)), repr(name))
    return ATTACKS[name]


def required_inputs(name: str, *, signal: str | None = None) -> InputRequirements:
    """The AttackData fields and signal tables the attack ``name`` needs.

    Parameters
    ----------
    name : str
        A registered attack name.
    signal : str, optional
        The signal the attack will be run with (default: the attack's default signal).
    """
    spec = _spec(name)
    sig = spec.default_signal if signal is None else signal
    if sig not in spec.signal_choices:
        raise fail(
            "signal", f"one of {', '.join(spec.signal_choices)} for attack {name!r}", repr(sig)
        )
    signals = (sig, *(s for s in spec.extra_signals if s != sig))
    return InputRequirements(
        attack=name, fields=spec.fields, signals=signals, optional_fields=spec.optional_fields
    )


def run_attack(
    name: str,
    data: AttackData,
    *,
    alpha: float | None = None,
    seed: int | np.random.Generator | None = None,
    **params: Any,
) -> AttackScores:
    """Run the registered attack ``name`` on ``data``.

    Parameters
    ----------
    name : str
        A registered attack (``attack_names()``).
    data : AttackData
        Validated inputs; the fields in ``required_inputs(name)`` must be set.
    alpha : float, optional
        Requested false-positive rate in (0, 1). Only for alpha-threshold attacks
        (``ATTACKS[name].alpha_threshold``); the result then has ``alpha`` set and
        ``threshold = -alpha``, so ``scores >= threshold`` are the decisions.
    seed : int or numpy.random.Generator, optional
        Randomness for attacks that use any (recorded in ``params``). The attacks
        implemented here are deterministic functions of their inputs.
    **params
        Attack settings (``signal``, ``smoothing``, ``a``, ``gamma``, ...).

    Returns
    -------
    AttackScores
        Scores "higher = more likely member"; ``params`` records every setting
        (numbers of models used, smoothing method, a, gamma, variance mode, ...).

    Raises
    ------
    InvalidInputError
        Unknown attack or parameter, missing input field, alpha for an attack that has
        no calibrated threshold.
    DesignError
        The inputs cannot support the attack (e.g. a record without OUT reference
        models).
    """
    spec = _spec(name)
    if not isinstance(data, AttackData):
        raise fail("data", "an AttackData", type(data).__name__)
    for f in spec.fields:
        if getattr(data, f) is None:
            raise fail(
                f, f"an input for attack {name!r} (it reads {', '.join(spec.fields)})", "None"
            )
    if alpha is not None:
        if not spec.alpha_threshold:
            raise fail(
                "alpha",
                f"None for attack {name!r}, which has no calibrated alpha threshold",
                alpha,
            )
        alpha = check_probability(alpha, "alpha")
    signal = params.pop("signal", spec.default_signal)
    if signal not in spec.signal_choices:
        raise fail(
            "signal", f"one of {', '.join(spec.signal_choices)} for attack {name!r}", repr(signal)
        )
    if isinstance(seed, np.random.Generator):
        rng = seed
        seed_record: Any = "generator"
    else:
        rng = np.random.default_rng(seed)
        seed_record = seed
    func_params = inspect.signature(spec.func).parameters
    accepted = [p for p in func_params if p not in ("data", "rng", "signal", "alpha")]
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise fail(
            "params",
            f"settings of attack {name!r} (" + ", ".join(accepted) + ")",
            ", ".join(unknown),
        )
    if "alpha" in func_params:
        params["alpha"] = alpha
    ids, scores, used = spec.func(data, rng=rng, signal=signal, **params)
    if alpha is not None and used.get("alpha_calibrated") is False:
        raise fail(
            "alpha",
            f"None for attack {name!r} with these settings (no calibrated alpha threshold)",
            alpha,
        )
    scores = np.asarray(scores, dtype=np.float64)
    if not np.all(np.isfinite(scores)):  # pragma: no cover - a bug in an attack
        raise DesignError(f"attack {name!r} produced non-finite scores")
    threshold = None if alpha is None else float(used.get("threshold", -alpha))
    used = {"signal": signal, **used, "seed": seed_record}
    return AttackScores(
        attack=name,
        record_ids=ids,
        scores=scores,
        params=used,
        alpha=alpha,
        threshold=threshold,
    )
