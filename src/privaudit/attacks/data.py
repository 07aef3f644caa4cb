"""The attack input contract: :class:`AttackData`, validated once at construction.

Which attack reads which field is tabulated in :mod:`privaudit.attacks.base` (which
re-exports everything here). Every table-valued field is a ``dict`` of
:class:`privaudit.records.SignalTable` keyed by signal name; the checks below make the
ids, models and memberships of every group agree before any attack runs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import as_label_array, fail
from privaudit.records import MembershipMatrix, SignalTable

__all__ = ["SIGNAL_NAMES", "TABLE_FIELDS", "AttackData"]

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
    """A read-only copy of ``a``."""
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
    """The first table of a group (all share models and records)."""
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
        """Validate and freeze every field, one group at a time (the order of the checks
        decides which error a data set with several problems gets)."""
        record_ids = self._check_records()
        target_model = self._check_target(record_ids)
        pop = self._check_population(target_model)
        pop_ids = None if pop is None else _first(pop).record_ids
        self._check_reference(record_ids, pop_ids)
        self._check_shadow()
        for field in ("distilled", "distilled_logits", "outside_reference"):
            object.__setattr__(self, field, _check_tables(getattr(self, field), field, record_ids))
        loo = self._check_leave_one_out(record_ids)
        for prefix in ("distilled", "distilled_logits", "outside_reference"):
            self._check_students_population(prefix, pop_ids)
        self._check_leave_one_out_population(loo, pop_ids)
        self._check_views()

    def _check_records(self) -> NDArray[Any]:
        """Normalise the audited ids (unique, int64 or str, frozen) and their labels."""
        # Ids: reuse the records' normalisation (unique, int64 or str, frozen).
        ids = MembershipMatrix(self.record_ids, ("_",), np.zeros((1, len(self.record_ids)), bool))
        record_ids = ids.record_ids
        labels = as_label_array(self.labels, "labels")
        if labels.size != record_ids.size:
            raise fail("labels", f"one label per audited record ({record_ids.size})", labels.size)
        object.__setattr__(self, "record_ids", record_ids)
        object.__setattr__(self, "labels", _freeze(labels))
        return record_ids

    def _check_target(self, record_ids: NDArray[Any]) -> tuple[str, ...]:
        """The target's tables: exactly one model, on the audited records. Returns its id."""
        target = _check_tables(self.target, "target", record_ids, n_models=1)
        if target is None:
            raise fail("target", "signal tables of the target model", "None")
        object.__setattr__(self, "target", target)
        return _first(target).model_ids

    def _check_population(self, target_model: tuple[str, ...]) -> dict[str, SignalTable] | None:
        """The target on population records (the same single model) and their labels."""
        pop = _check_tables(self.population_target, "population_target", None, n_models=1)
        if pop is not None and _first(pop).model_ids != target_model:
            raise fail(
                "population_target.model_ids",
                f"the target's model id {target_model}",
                _first(pop).model_ids,
            )
        object.__setattr__(self, "population_target", pop)
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
            object.__setattr__(self, "population_labels", _freeze(plab))
        return pop

    def _check_reference(self, record_ids: NDArray[Any], pop_ids: NDArray[Any] | None) -> None:
        """The reference models on the audited records (with their membership) and the same
        models, in the same order, on the population records (optional membership)."""
        ref = _check_tables(self.reference, "reference", record_ids)
        object.__setattr__(self, "reference", ref)
        if ref is not None and self.reference_membership is None:
            raise fail(
                "reference_membership", "the membership matrix of the reference models", "None"
            )
        _check_membership(self.reference_membership, "reference_membership", ref, "reference")
        ref_pop = _check_tables(self.reference_population, "reference_population", pop_ids)
        if ref_pop is not None:
            if ref is None:
                raise fail("reference", "reference tables to go with reference_population", "None")
            if _first(ref_pop).model_ids != _first(ref).model_ids:
                raise fail(
                    "reference_population.model_ids",
                    "the model ids of reference, in the same order",
                    _first(ref_pop).model_ids,
                )
        object.__setattr__(self, "reference_population", ref_pop)
        _check_membership(
            self.reference_population_membership,
            "reference_population_membership",
            ref_pop,
            "reference_population",
        )

    def _check_shadow(self) -> None:
        """The shadow models on their own records: membership and labels come with them."""
        sh = _check_tables(self.shadow, "shadow", None)
        object.__setattr__(self, "shadow", sh)
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
            object.__setattr__(self, "shadow_labels", _freeze(slab))

    def _check_leave_one_out(self, record_ids: NDArray[Any]) -> dict[str, SignalTable] | None:
        """Attack L's models on the audited records, their membership and the serving mask
        (never a model serving a record it trained on)."""
        loo = _check_tables(self.leave_one_out, "leave_one_out", record_ids)
        object.__setattr__(self, "leave_one_out", loo)
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
        object.__setattr__(self, "leave_one_out_serves", serves)
        return loo

    def _check_leave_one_out_population(
        self, loo: dict[str, SignalTable] | None, pop_ids: NDArray[Any] | None
    ) -> None:
        """Attack L's models on the population records (its calibration) and which of them
        serves each population record."""
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
        object.__setattr__(
            self,
            "leave_one_out_population_serves",
            _check_mask(
                self.leave_one_out_population_serves,
                "leave_one_out_population_serves",
                lpop,
            ),
        )

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
