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
``AttackScores.threshold = -alpha``. Sweeping the threshold gives the ROC.

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
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import (
    as_label_array,
    check_probability,
    fail,
)
from privaudit.errors import DesignError
from privaudit.records import AttackScores, MembershipMatrix, SignalTable

__all__ = [
    "ATTACKS",
    "BUILTIN_ATTACKS",
    "SIGNAL_NAMES",
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

#: Signal names an attack may ask for (the contract of ``privaudit.signals.SIGNALS``).
SIGNAL_NAMES: tuple[str, ...] = (
    "loss",
    "prob_true",
    "logit_confidence",
    "entropy",
    "modified_entropy",
    "label_robustness",
)

#: The table-valued fields of :class:`AttackData`, with the id set their tables carry.
TABLE_FIELDS: tuple[str, ...] = (
    "target",
    "population_target",
    "reference",
    "reference_population",
    "shadow",
    "distilled",
    "distilled_population",
    "distilled_logits",
    "distilled_logits_population",
    "leave_one_out",
    "leave_one_out_population",
    "outside_reference",
    "outside_reference_population",
)

Tables = Mapping[str, SignalTable]


def _freeze(a: NDArray[Any]) -> NDArray[Any]:
    a = np.array(a, copy=True)
    a.setflags(write=False)
    return a


def _check_tables(
    tables: Tables | None,
    field: str,
    record_ids: NDArray[Any] | None,
    *,
    n_models: int | None = None,
) -> dict[str, SignalTable] | None:
    """Check one group of signal tables: keys = signal names, ids aligned, one model set."""
    if tables is None:
        return None
    if not isinstance(tables, Mapping) or not tables:
        raise fail(
            field, "a non-empty dict of SignalTable keyed by signal name", type(tables).__name__
        )
    out: dict[str, SignalTable] = {}
    model_ids: tuple[str, ...] | None = None
    ids = record_ids
    for key, table in tables.items():
        name = f"{field}[{key!r}]"
        if not isinstance(table, SignalTable):
            raise fail(name, "a SignalTable", type(table).__name__)
        if key != table.signal:
            raise fail(name, f"a table of signal {key!r}", f"signal {table.signal!r}")
        if key not in SIGNAL_NAMES:
            raise fail(name, "one of the signals " + ", ".join(SIGNAL_NAMES), repr(key))
        if ids is None:
            ids = table.record_ids
        elif table.record_ids.shape != ids.shape or not np.array_equal(table.record_ids, ids):
            raise fail(
                f"{name}.record_ids",
                "the same record ids, in the same order, as the records it describes",
                f"{table.record_ids.size} ids starting {table.record_ids[:3].tolist()}",
            )
        if model_ids is None:
            model_ids = table.model_ids
        elif table.model_ids != model_ids:
            raise fail(
                f"{name}.model_ids", f"the models of the other {field} tables", table.model_ids
            )
        if n_models is not None and len(table.model_ids) != n_models:
            raise fail(f"{name}.model_ids", f"{n_models} model(s)", len(table.model_ids))
        out[str(key)] = table
    return out


def _first(tables: Mapping[str, SignalTable]) -> SignalTable:
    return next(iter(tables.values()))


def _check_membership(
    membership: MembershipMatrix | None,
    field: str,
    tables: Mapping[str, SignalTable] | None,
    tables_field: str,
) -> None:
    """A membership matrix must describe exactly the models and records of its tables."""
    if membership is None:
        return
    if not isinstance(membership, MembershipMatrix):
        raise fail(field, "a MembershipMatrix", type(membership).__name__)
    if tables is None:
        raise fail(tables_field, f"signal tables to go with {field}", "None")
    t = _first(tables)
    if membership.model_ids != t.model_ids:
        raise fail(
            f"{field}.model_ids", f"the model ids of {tables_field}, in order", membership.model_ids
        )
    if membership.record_ids.shape != t.record_ids.shape or not np.array_equal(
        membership.record_ids, t.record_ids
    ):
        raise fail(
            f"{field}.record_ids",
            f"the record ids of {tables_field}, in order",
            membership.n_records,
        )


def _check_mask(
    mask: Any, field: str, tables: Mapping[str, SignalTable] | None
) -> NDArray[np.bool_] | None:
    """A (models x records) boolean mask aligned with a group of tables, frozen."""
    if mask is None:
        return None
    if tables is None:
        raise fail(field, "None (there are no tables it describes)", "a mask")
    t = _first(tables)
    m = np.asarray(mask)
    if m.dtype != np.bool_:
        raise fail(field, "a boolean array", str(m.dtype))
    if m.shape != t.values.shape:
        raise fail(field, f"shape {t.values.shape} (models x records)", m.shape)
    return _freeze(m)


@dataclasses.dataclass(frozen=True)
class AttackData:
    """Everything an attack may read, validated once at construction.

    Parameters
    ----------
    record_ids : array of ids, shape (n,)
        The audited records (unique, stable ids).
    labels : int array, shape (n,)
        Class labels of the audited records.
    target : dict[str, SignalTable]
        The target model (exactly one model) on the audited records.
    population_target : dict[str, SignalTable], optional
        The target (same single model id) on Z population records (non-members of the
        target); used by attacks P and RMIA.
    population_labels : int array, shape (Z,), optional
        Class labels of the population records (attack P with ``per_class=True``).
    reference : dict[str, SignalTable], optional
        k reference models on the audited records (attacks R, LiRA, RMIA).
    reference_membership : MembershipMatrix, optional
        (k x n) which reference model trained on which audited record. Required with
        ``reference``.
    reference_population : dict[str, SignalTable], optional
        The same k reference models on the population records (RMIA's ``Pr(z)``).
    reference_population_membership : MembershipMatrix, optional
        (k x Z) which reference model trained on which population record; None means
        none did (every reference model is OUT for every population record).
    shadow : dict[str, SignalTable], optional
        m shadow models on their own Zs shadow records (attack S).
    shadow_membership : MembershipMatrix, optional
        (m x Zs) which shadow model trained on which shadow record. Required with
        ``shadow``.
    shadow_labels : int array, shape (Zs,), optional
        Class labels of the shadow records. Required with ``shadow``.
    distilled : dict[str, SignalTable], optional
        Models distilled from the target on population data, on the audited records
        (attack D).
    leave_one_out : dict[str, SignalTable], optional
        Leave-one-out models (trained on the target's training set minus some records)
        on the audited records (attack L).
    leave_one_out_membership : MembershipMatrix, optional
        (k_L x n) which leave-one-out model trained on which audited record. Required
        with ``leave_one_out``.
    leave_one_out_serves : bool array, shape (k_L, n), optional
        Which leave-one-out model is in record i's out world: for a member x, the
        models trained on ``D \\ {x}``; for a non-member, the models trained on ``D``
        (``D \\ {x} = D``). Must be False where ``keep`` is True. Required with
        ``leave_one_out``: it cannot be inferred from ``keep`` (a model trained on
        ``D \\ {x'}`` excludes every non-member too, but is not their out world).
    distilled_population : dict[str, SignalTable], optional
        The distilled models on the population records (calibration of attack D).
    distilled_population_membership : MembershipMatrix, optional
        (k_D x Z) which distilled model trained on which population record. Required
        with ``distilled_population``.
    leave_one_out_population : dict[str, SignalTable], optional
        The leave-one-out models on the population records (calibration of attack L).
    distilled_logits, distilled_logits_population : dict[str, SignalTable], optional
    distilled_logits_population_membership : MembershipMatrix, optional
        As the three ``distilled*`` fields, for students trained by logit regression
        (attack ``distillation-logits``).
    outside_reference : dict[str, SignalTable], optional
        Attack R's reference models, trained on population data only (none on an
        audited record; Ye et al. Sec. 4.3, App. B.2), on the audited records. The
        engine uses its shadow models, which are built the same way.
    outside_reference_population : dict[str, SignalTable], optional
        The same models on the population records (R's calibration).
    outside_reference_population_membership : MembershipMatrix, optional
        (k x Z) which of them trained on which population record. Required with
        ``outside_reference_population``.
    leave_one_out_population_serves : bool array, shape (k_L, Z), optional
        Which leave-one-out model serves each population record (the models trained on
        ``D``: population records are non-members). Required with
        ``leave_one_out_population``.
    views : dict[str, AttackData], optional
        LiRA's augmented queries (Carlini et al. 2022, Sec. VI-A): per non-identity view
        of the audited records (:mod:`privaudit.signals.views`; name -> data), the same
        models queried on the augmented records: an :class:`AttackData` with the same
        ``record_ids``, ``labels``, model ids and memberships, whose tables hold the
        signals on that view (this object is the identity view). Read by the LiRA
        attacks with ``augmented_queries=True``.

    Raises
    ------
    InvalidInputError
        Misaligned ids, wrong shapes, non-finite values, a missing companion field.

    Notes
    -----
    Arrays are frozen (read-only copies); :class:`SignalTable` values are already
    read-only and finite by construction, so attacks can never mutate their inputs.
    """

    record_ids: NDArray[Any]
    labels: NDArray[np.int64]
    target: Mapping[str, SignalTable]
    population_target: Mapping[str, SignalTable] | None = None
    population_labels: NDArray[np.int64] | None = None
    reference: Mapping[str, SignalTable] | None = None
    reference_membership: MembershipMatrix | None = None
    reference_population: Mapping[str, SignalTable] | None = None
    reference_population_membership: MembershipMatrix | None = None
    shadow: Mapping[str, SignalTable] | None = None
    shadow_membership: MembershipMatrix | None = None
    shadow_labels: NDArray[np.int64] | None = None
    distilled: Mapping[str, SignalTable] | None = None
    leave_one_out: Mapping[str, SignalTable] | None = None
    leave_one_out_membership: MembershipMatrix | None = None
    leave_one_out_serves: NDArray[np.bool_] | None = None
    distilled_population: Mapping[str, SignalTable] | None = None
    distilled_population_membership: MembershipMatrix | None = None
    leave_one_out_population: Mapping[str, SignalTable] | None = None
    leave_one_out_population_serves: NDArray[np.bool_] | None = None
    distilled_logits: Mapping[str, SignalTable] | None = None
    distilled_logits_population: Mapping[str, SignalTable] | None = None
    distilled_logits_population_membership: MembershipMatrix | None = None
    outside_reference: Mapping[str, SignalTable] | None = None
    outside_reference_population: Mapping[str, SignalTable] | None = None
    outside_reference_population_membership: MembershipMatrix | None = None
    views: Mapping[str, AttackData] | None = None

    def __post_init__(self) -> None:
        # Ids: reuse the records' normalisation (unique, int64 or str, frozen).
        ids = MembershipMatrix(self.record_ids, ("_",), np.zeros((1, len(self.record_ids)), bool))
        record_ids = ids.record_ids
        labels = as_label_array(self.labels, "labels")
        if labels.size != record_ids.size:
            raise fail("labels", f"one label per audited record ({record_ids.size})", labels.size)
        set_ = object.__setattr__
        set_(self, "record_ids", record_ids)
        set_(self, "labels", _freeze(labels))

        target = _check_tables(self.target, "target", record_ids, n_models=1)
        if target is None:
            raise fail("target", "signal tables of the target model", "None")
        set_(self, "target", target)
        target_model = _first(target).model_ids

        pop = _check_tables(self.population_target, "population_target", None, n_models=1)
        if pop is not None and _first(pop).model_ids != target_model:
            raise fail(
                "population_target.model_ids",
                f"the target's model id {target_model}",
                _first(pop).model_ids,
            )
        set_(self, "population_target", pop)
        if self.population_labels is not None:
            if pop is None:
                raise fail(
                    "population_target", "signal tables to go with population_labels", "None"
                )
            plab = as_label_array(self.population_labels, "population_labels")
            if plab.size != _first(pop).record_ids.size:
                raise fail(
                    "population_labels",
                    f"one label per population record ({_first(pop).record_ids.size})",
                    plab.size,
                )
            set_(self, "population_labels", _freeze(plab))

        ref = _check_tables(self.reference, "reference", record_ids)
        set_(self, "reference", ref)
        if ref is not None and self.reference_membership is None:
            raise fail(
                "reference_membership", "the membership matrix of the reference models", "None"
            )
        _check_membership(self.reference_membership, "reference_membership", ref, "reference")

        ref_pop = _check_tables(
            self.reference_population,
            "reference_population",
            None if pop is None else _first(pop).record_ids,
        )
        if ref_pop is not None:
            if ref is None:
                raise fail("reference", "reference tables to go with reference_population", "None")
            if _first(ref_pop).model_ids != _first(ref).model_ids:
                raise fail(
                    "reference_population.model_ids",
                    "the model ids of reference, in the same order",
                    _first(ref_pop).model_ids,
                )
        set_(self, "reference_population", ref_pop)
        _check_membership(
            self.reference_population_membership,
            "reference_population_membership",
            ref_pop,
            "reference_population",
        )

        sh = _check_tables(self.shadow, "shadow", None)
        set_(self, "shadow", sh)
        if sh is not None:
            if self.shadow_membership is None:
                raise fail(
                    "shadow_membership", "the membership matrix of the shadow models", "None"
                )
            if self.shadow_labels is None:
                raise fail("shadow_labels", "class labels of the shadow records", "None")
        _check_membership(self.shadow_membership, "shadow_membership", sh, "shadow")
        if self.shadow_labels is not None:
            if sh is None:
                raise fail("shadow", "shadow tables to go with shadow_labels", "None")
            slab = as_label_array(self.shadow_labels, "shadow_labels")
            if slab.size != _first(sh).record_ids.size:
                raise fail(
                    "shadow_labels",
                    f"one label per shadow record ({_first(sh).record_ids.size})",
                    slab.size,
                )
            set_(self, "shadow_labels", _freeze(slab))

        set_(self, "distilled", _check_tables(self.distilled, "distilled", record_ids))
        set_(
            self,
            "distilled_logits",
            _check_tables(self.distilled_logits, "distilled_logits", record_ids),
        )
        set_(
            self,
            "outside_reference",
            _check_tables(self.outside_reference, "outside_reference", record_ids),
        )

        loo = _check_tables(self.leave_one_out, "leave_one_out", record_ids)
        set_(self, "leave_one_out", loo)
        if loo is not None and self.leave_one_out_membership is None:
            raise fail(
                "leave_one_out_membership", "the membership matrix of the LOO models", "None"
            )
        _check_membership(
            self.leave_one_out_membership, "leave_one_out_membership", loo, "leave_one_out"
        )
        if loo is not None and self.leave_one_out_serves is None:
            raise fail(
                "leave_one_out_serves",
                "the (models x records) mask of which LOO model serves which record",
                "None",
            )
        serves = _check_mask(self.leave_one_out_serves, "leave_one_out_serves", loo)
        if serves is not None and self.leave_one_out_membership is not None:
            if np.any(serves & self.leave_one_out_membership.keep):
                raise fail(
                    "leave_one_out_serves",
                    "False wherever the model trained on the record (keep is True)",
                    "a model serving a record it trained on",
                )
        set_(self, "leave_one_out_serves", serves)

        pop_ids = None if pop is None else _first(pop).record_ids
        for prefix in ("distilled", "distilled_logits", "outside_reference"):
            self._check_students_population(prefix, pop_ids)
        lpop = _check_tables(self.leave_one_out_population, "leave_one_out_population", pop_ids)
        if lpop is not None:
            if loo is None or _first(lpop).model_ids != _first(loo).model_ids:
                raise fail(
                    "leave_one_out_population.model_ids",
                    "the model ids of leave_one_out, in the same order",
                    _first(lpop).model_ids,
                )
            if self.leave_one_out_population_serves is None:
                raise fail(
                    "leave_one_out_population_serves",
                    "which LOO model serves which population record",
                    "None",
                )
        set_(
            self,
            "leave_one_out_population_serves",
            _check_mask(
                self.leave_one_out_population_serves,
                "leave_one_out_population_serves",
                lpop,
            ),
        )

        self._check_views()

    def _check_views(self) -> None:
        """Every view describes the same records and models as this data."""
        if self.views is None:
            return
        if not isinstance(self.views, Mapping) or not self.views:
            raise fail("views", "a non-empty dict of AttackData keyed by view name", self.views)
        out: dict[str, AttackData] = {}
        for name, view in self.views.items():
            field = f"views[{name!r}]"
            if not isinstance(view, AttackData):
                raise fail(field, "an AttackData", type(view).__name__)
            if view.views is not None:
                raise fail(f"{field}.views", "None (views are not nested)", "views")
            if not np.array_equal(view.record_ids, self.record_ids) or not np.array_equal(
                view.labels, self.labels
            ):
                raise fail(field, "the same audited records and labels", "other records")
            for f in TABLE_FIELDS:
                mine, theirs = getattr(self, f), getattr(view, f)
                if theirs is None:
                    continue
                if mine is None or _first(theirs).model_ids != _first(mine).model_ids:
                    raise fail(f"{field}.{f}", f"the models of {f}, in the same order", f)
                if not np.array_equal(_first(theirs).record_ids, _first(mine).record_ids):
                    raise fail(f"{field}.{f}.record_ids", f"the records of {f}", f)
            for f in ("reference_membership", "reference_population_membership"):
                mine_m, theirs_m = getattr(self, f), getattr(view, f)
                if theirs_m is not None and (
                    mine_m is None or not np.array_equal(mine_m.keep, theirs_m.keep)
                ):
                    raise fail(f"{field}.{f}", f"the same {f}", "another matrix")
            out[str(name)] = view
        object.__setattr__(self, "views", out)

    def _check_students_population(self, prefix: str, pop_ids: NDArray[Any] | None) -> None:
        """``<prefix>_population`` (+ membership) go with the ``<prefix>`` models."""
        field = f"{prefix}_population"
        mfield = f"{field}_membership"
        dpop = _check_tables(getattr(self, field), field, pop_ids)
        students = getattr(self, prefix)
        if dpop is not None:
            if students is None or _first(dpop).model_ids != _first(students).model_ids:
                raise fail(
                    f"{field}.model_ids",
                    f"the model ids of {prefix}, in the same order",
                    _first(dpop).model_ids,
                )
            if getattr(self, mfield) is None:
                raise fail(
                    mfield, "which distilled model trained on which population record", "None"
                )
        object.__setattr__(self, field, dpop)
        _check_membership(getattr(self, mfield), mfield, dpop, field)

    @property
    def n_records(self) -> int:
        """Number of audited records."""
        return int(self.record_ids.size)

    def table(self, field: str, signal: str) -> SignalTable:
        """The ``signal`` table of ``field``; a clear error when it was not provided.

        Raises
        ------
        InvalidInputError
            If ``field`` is None or lacks the signal.
        """
        if field not in TABLE_FIELDS:
            raise fail("field", "one of " + ", ".join(TABLE_FIELDS), repr(field))
        tables: Mapping[str, SignalTable] | None = getattr(self, field)
        if tables is None:
            raise fail(field, f"signal tables (this attack reads {field}[{signal!r}])", "None")
        if signal not in tables:
            raise fail(field, f"a {signal!r} signal table", "signals " + ", ".join(tables))
        return tables[signal]


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
    "privaudit.attacks.lira",
    "privaudit.attacks.rmia",
    "privaudit.attacks.extra_attacks",
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
