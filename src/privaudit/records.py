"""Frozen, serialisable records passed between the stages of an audit.

Every record is a frozen dataclass whose numpy arrays are made read-only on
construction, so a stage can never mutate what an earlier stage produced. Each
record validates itself at construction (the boundary), and round-trips through
``to_dict``/``from_dict`` (JSON-compatible) and ``save``/``load`` (``.npz`` for arrays,
so that large per-record tables stay compact).

Conventions (docs/architecture.md):

* record ids are stable identifiers (strings or integers), never positions;
* every attack score is oriented "higher = more likely member";
* a ``values`` matrix of a :class:`SignalTable` is ``(n_models, n_records)``, the same
  orientation as :class:`MembershipMatrix`.
"""

from __future__ import annotations

import dataclasses
import json
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Self, TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privaudit._validation import (
    as_bool_array,
    as_float_array,
    check_unique_ids,
    fail,
)

T = TypeVar("T", bound="Record")

RECORD_SCHEMA_VERSION = "1.0"


def _freeze(a: np.ndarray) -> np.ndarray:
    a = np.array(a, copy=True)
    a.setflags(write=False)
    return a


def _to_jsonable(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        return {"__ndarray__": v.tolist(), "dtype": v.dtype.str}
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, Mapping):
        return {str(k): _to_jsonable(x) for k, x in v.items()}
    if isinstance(v, tuple | list):
        return [_to_jsonable(x) for x in v]
    if isinstance(v, float) and not np.isfinite(v):
        return {"__float__": repr(v)}
    return v


def _from_jsonable(v: Any) -> Any:
    if isinstance(v, dict):
        if "__ndarray__" in v:
            return np.asarray(v["__ndarray__"], dtype=np.dtype(v["dtype"]))
        if "__float__" in v:
            return float(v["__float__"])
        return {k: _from_jsonable(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_from_jsonable(x) for x in v]
    return v


def json_number(v: Any) -> float | None:
    """A number of a ``to_dict()`` payload: plain, ``{"__float__": "inf"}`` (how non-finite
    floats are written) or ``None``."""
    if v is None:
        return None
    if isinstance(v, Mapping) and "__float__" in v:
        return float(v["__float__"])
    return float(v)


#: The id arrays :func:`_ids` returned, by ``id()``: read-only copies that nothing else can
#: write, so a record built from another's ids (a subset of its models, say) skips the
#: uniqueness check's sort. An entry leaves with its array.
_CHECKED_IDS: weakref.WeakValueDictionary[int, np.ndarray] = weakref.WeakValueDictionary()


def _ids(ids: Any, name: str) -> np.ndarray:
    checked = _CHECKED_IDS.get(id(ids))
    if checked is not None and checked is ids:
        return checked
    a = check_unique_ids(ids, name)
    if a.dtype.kind in "iu":
        out = _freeze(a.astype(np.int64))
    elif a.dtype.kind in "UO":
        out = _freeze(a.astype(str))
    else:
        raise fail(name, "integer or string ids", f"dtype {a.dtype}")
    _CHECKED_IDS[id(out)] = out
    return out


@dataclasses.dataclass(frozen=True)
class Record:
    """Base class: JSON and ``.npz`` round-tripping for frozen dataclasses."""

    kind: ClassVar[str] = "record"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-compatible dict; arrays keep their dtype."""
        out: dict[str, Any] = {"record": self.kind, "schema_version": RECORD_SCHEMA_VERSION}
        for f in dataclasses.fields(self):
            out[f.name] = _to_jsonable(getattr(self, f.name))
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Self:
        """Inverse of :meth:`to_dict`."""
        if d.get("record") != cls.kind:
            raise fail("record", f"a serialised {cls.kind!r}", repr(d.get("record")))
        names = {f.name for f in dataclasses.fields(cls)}
        kwargs = {k: _from_jsonable(v) for k, v in d.items() if k in names}
        for f in dataclasses.fields(cls):
            if isinstance(kwargs.get(f.name), list) and "tuple" in str(f.type):
                kwargs[f.name] = tuple(kwargs[f.name])
        return cls(**kwargs)

    def save(self, path: str | Path) -> Path:
        """Write the record to ``path`` (``.npz``: arrays binary, the rest as JSON)."""
        p = Path(path)
        arrays: dict[str, np.ndarray] = {}
        meta: dict[str, Any] = {"record": self.kind, "schema_version": RECORD_SCHEMA_VERSION}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if isinstance(v, np.ndarray):
                arrays[f.name] = v
            else:
                meta[f.name] = _to_jsonable(v)
        arrays["__meta__"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
        tmp = p.with_name(p.name + ".tmp")
        with open(tmp, "wb") as fh:
            np.savez_compressed(fh, **arrays)  # type: ignore[arg-type]
        tmp.replace(p)
        return p

    @classmethod
    def load(cls, path: str | Path) -> Self:
        """Inverse of :meth:`save`. Never unpickles (``allow_pickle=False``)."""
        with np.load(Path(path), allow_pickle=False) as z:
            meta = json.loads(bytes(z["__meta__"]).decode())
            d: dict[str, Any] = dict(meta)
            for k in z.files:
                if k != "__meta__":
                    d[k] = {"__ndarray__": z[k].tolist(), "dtype": z[k].dtype.str}
        return cls.from_dict(d)


@dataclasses.dataclass(frozen=True)
class MembershipMatrix(Record):
    """Which record was in which model's training set.

    ``keep[j, i]`` is True when record ``record_ids[i]`` was in the training set of
    model ``model_ids[j]``.
    """

    kind: ClassVar[str] = "membership_matrix"
    record_ids: NDArray[Any]
    model_ids: tuple[str, ...]
    keep: NDArray[np.bool_]

    def __post_init__(self) -> None:
        ids = _ids(self.record_ids, "record_ids")
        models = tuple(str(m) for m in self.model_ids)
        if len(set(models)) != len(models) or not models:
            raise fail("model_ids", "a non-empty list of unique model ids", list(models))
        keep = as_bool_array(self.keep, "keep", ndim=2)
        if keep.shape != (len(models), ids.size):
            raise fail("keep", f"shape ({len(models)}, {ids.size}) (models x records)", keep.shape)
        object.__setattr__(self, "record_ids", ids)
        object.__setattr__(self, "model_ids", models)
        object.__setattr__(self, "keep", _freeze(keep))

    @property
    def n_models(self) -> int:
        return len(self.model_ids)

    @property
    def n_records(self) -> int:
        return int(self.record_ids.size)

    def row(self, model_id: str) -> NDArray[np.bool_]:
        """Membership of every record in one model's training set."""
        try:
            return self.keep[self.model_ids.index(model_id)]
        except ValueError:
            raise fail("model_id", "one of " + ", ".join(self.model_ids), repr(model_id)) from None

    def select_models(self, model_ids: tuple[str, ...] | list[str]) -> MembershipMatrix:
        """The sub-matrix of the given models, in the given order."""
        idx = [self.model_ids.index(m) for m in model_ids]
        return MembershipMatrix(self.record_ids, tuple(model_ids), self.keep[idx])


@dataclasses.dataclass(frozen=True)
class SignalTable(Record):
    """One signal (e.g. ``"loss"``) of several models on several records.

    ``values[j, i]`` is the signal of model ``model_ids[j]`` on record ``record_ids[i]``.
    Signals are finite by construction (the signal layer computes them stably).
    """

    kind: ClassVar[str] = "signal_table"
    signal: str
    record_ids: NDArray[Any]
    model_ids: tuple[str, ...]
    values: NDArray[np.float64]

    def __post_init__(self) -> None:
        ids = _ids(self.record_ids, "record_ids")
        models = tuple(str(m) for m in self.model_ids)
        if len(set(models)) != len(models) or not models:
            raise fail("model_ids", "a non-empty list of unique model ids", list(models))
        vals = as_float_array(self.values, f"values of signal {self.signal!r}", ndim=2)
        if vals.shape != (len(models), ids.size):
            raise fail(
                "values", f"shape ({len(models)}, {ids.size}) (models x records)", vals.shape
            )
        object.__setattr__(self, "record_ids", ids)
        object.__setattr__(self, "model_ids", models)
        object.__setattr__(self, "values", _freeze(vals))

    def model(self, model_id: str) -> NDArray[np.float64]:
        """The signal of one model on every record."""
        try:
            return self.values[self.model_ids.index(model_id)]
        except ValueError:
            raise fail("model_id", "one of " + ", ".join(self.model_ids), repr(model_id)) from None

    def select_models(self, model_ids: tuple[str, ...] | list[str]) -> SignalTable:
        idx = [self.model_ids.index(m) for m in model_ids]
        return SignalTable(self.signal, self.record_ids, tuple(model_ids), self.values[idx])


@dataclasses.dataclass(frozen=True)
class AttackScores(Record):
    """Per-record membership scores of one attack against one target model.

    ``scores`` are oriented "higher = more likely member". For an attack that takes a
    decision at a requested false-positive rate ``alpha``, ``threshold`` is the score
    at and above which a record is declared a member at that alpha (None otherwise).
    ``params`` records every setting that produced the scores (numbers of models,
    smoothing method, a, gamma, ...).
    """

    kind: ClassVar[str] = "attack_scores"
    attack: str
    record_ids: NDArray[Any]
    scores: NDArray[np.float64]
    params: dict[str, Any] = dataclasses.field(default_factory=dict)
    alpha: float | None = None
    threshold: float | None = None

    def __post_init__(self) -> None:
        ids = _ids(self.record_ids, "record_ids")
        s = as_float_array(self.scores, f"scores of attack {self.attack!r}", ndim=1)
        if s.size != ids.size:
            raise fail("scores", f"one score per record ({ids.size})", s.size)
        object.__setattr__(self, "record_ids", ids)
        object.__setattr__(self, "scores", _freeze(s))
        object.__setattr__(self, "params", dict(self.params))

    def decisions(self) -> NDArray[np.bool_]:
        """Member / non-member decisions at the requested alpha."""
        if self.threshold is None:
            raise fail("threshold", "an attack run at a requested alpha", "no threshold")
        return np.asarray(self.scores >= self.threshold)


@dataclasses.dataclass(frozen=True)
class RocCurve(Record):
    """A ROC curve: ``fpr[i], tpr[i]`` for the decision ``score >= thresholds[i]``.

    Points run from (0, 0) (threshold +inf) to (1, 1), non-decreasing in both rates.
    """

    kind: ClassVar[str] = "roc_curve"
    fpr: NDArray[np.float64]
    tpr: NDArray[np.float64]
    thresholds: NDArray[np.float64]
    auc: float
    n_positives: int
    n_negatives: int

    def __post_init__(self) -> None:
        fpr = as_float_array(self.fpr, "fpr", ndim=1)
        tpr = as_float_array(self.tpr, "tpr", ndim=1)
        thr = as_float_array(self.thresholds, "thresholds", ndim=1, allow_inf=True)
        if not (fpr.size == tpr.size == thr.size):
            raise fail(
                "fpr", "fpr, tpr and thresholds of one length", (fpr.size, tpr.size, thr.size)
            )
        object.__setattr__(self, "fpr", _freeze(fpr))
        object.__setattr__(self, "tpr", _freeze(tpr))
        object.__setattr__(self, "thresholds", _freeze(thr))


@dataclasses.dataclass(frozen=True)
class AuditResult(Record):
    """A privacy lower bound together with the guarantee it carries.

    ``procedure`` names the statistical procedure (``multi-run``, ``one-run``,
    ``fdp-one-run``, ``panoramia``, ...); ``confidence`` is 1 - beta; ``counts`` are the
    numbers the bound was computed from; ``threshold_selection`` states how thresholds
    or guess counts were chosen (``"fixed"``, ``"held-out"``, ``"union-bound over L"``).
    ``extra`` holds procedure-specific values (``c_lower_bound``, ...). ``notes`` states
    the assumptions a reader must know (e.g. that a mu -> eps conversion assumes a
    Gaussian trade-off curve).
    """

    kind: ClassVar[str] = "audit_result"
    procedure: str
    confidence: float
    delta: float
    epsilon_lower_bound: float
    mu_lower_bound: float | None = None
    counts: dict[str, Any] = dataclasses.field(default_factory=dict)
    threshold_selection: str = "fixed"
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not 0.0 < float(self.confidence) < 1.0:
            raise fail("confidence", "a value in (0, 1)", self.confidence)
        if not 0.0 <= float(self.delta) < 1.0:
            raise fail("delta", "a value in [0, 1)", self.delta)
        if not float(self.epsilon_lower_bound) >= 0.0:
            raise fail("epsilon_lower_bound", "a non-negative number", self.epsilon_lower_bound)
        object.__setattr__(self, "counts", dict(self.counts))
        object.__setattr__(self, "extra", dict(self.extra))
        object.__setattr__(self, "notes", tuple(self.notes))


def to_json(record: Record, path: str | Path) -> Path:
    """Write ``record.to_dict()`` to ``path`` atomically."""
    p = Path(path)
    tmp = p.with_name(p.name + ".tmp")
    tmp.write_text(json.dumps(record.to_dict(), indent=2))
    tmp.replace(p)
    return p


def from_json(cls: type[T], path: str | Path) -> T:
    """Read a record written by :func:`to_json`."""
    return cls.from_dict(json.loads(Path(path).read_text()))


#: File name of a saved :class:`ScoreTable` in a report directory.
SCORES_FILE = "scores.npz"


@dataclasses.dataclass(frozen=True)
class ScoreTable:
    """Per-record scores of every attack, with record ids and true membership.

    ``scores[name][i]`` is attack ``name``'s score (higher = member) on ``record_ids[i]``;
    ``thresholds[name]`` the attack's decision threshold at its requested alpha, if any.
    NaN means "not scored by this attack" (the leave-one-out attack scores a sample of
    the audited records only); :meth:`scored` gives the scored subset.
    ``groups[i]``, when given, names the unit of randomisation of record ``i`` (records of
    one group were members or non-members together, e.g. the chunks of one document); the
    one-run bounds audit the groups (:func:`privaudit.stats.attack_bounds.grouped_one_run_bounds`).
    Saved as ``scores.npz`` (no pickle): keys ``record_ids``, ``member``, ``attacks``
    (names, in order), ``thresholds`` (NaN where none), ``score:<name>`` per attack and
    ``groups`` when given.
    """

    record_ids: NDArray[Any]
    member: NDArray[np.bool_]
    scores: dict[str, NDArray[np.float64]]
    thresholds: dict[str, float | None] = dataclasses.field(default_factory=dict)
    groups: NDArray[Any] | None = None

    def __post_init__(self) -> None:
        ids = check_unique_ids(self.record_ids, "record_ids")
        m = as_bool_array(self.member, "member", ndim=1)
        if m.size != ids.size:
            raise fail("member", f"one membership per record ({ids.size})", m.size)
        if not self.scores:
            raise fail("scores", "scores of at least one attack", "none")
        out: dict[str, NDArray[np.float64]] = {}
        for name, s in self.scores.items():
            a = as_float_array(s, f"scores[{name!r}]", ndim=1, allow_nan=True).copy()
            if np.isnan(a).all():
                raise fail(f"scores[{name!r}]", "at least one scored record", "only NaN")
            if a.size != ids.size:
                raise fail(f"scores[{name!r}]", f"one score per record ({ids.size})", a.size)
            a.setflags(write=False)
            out[str(name)] = a
        ids = np.array(ids, copy=True)
        ids.setflags(write=False)
        m = np.array(m, copy=True)
        m.setflags(write=False)
        object.__setattr__(self, "record_ids", ids)
        object.__setattr__(self, "member", m)
        object.__setattr__(self, "scores", out)
        object.__setattr__(
            self,
            "thresholds",
            {k: (None if v is None else float(v)) for k, v in self.thresholds.items()},
        )
        if self.groups is not None:
            g = np.asarray(self.groups).astype(str)
            if g.shape != (ids.size,):
                raise fail("groups", f"one group per record ({ids.size})", g.shape)
            g.setflags(write=False)
            object.__setattr__(self, "groups", g)

    @classmethod
    def from_attack_scores(
        cls,
        scores: Sequence[AttackScores],
        record_ids: ArrayLike,
        member: ArrayLike,
        *,
        groups: ArrayLike | None = None,
    ) -> ScoreTable:
        """Build from several attacks' scores on (subsets of) the audited records.

        ``record_ids``/``member`` are all audited records and their true membership; an
        attack that scored only some of them (by id) gets NaN on the others. ``groups``:
        the unit of randomisation of each record (see the class docstring).
        """
        if not scores:
            raise fail("scores", "at least one AttackScores", "none")
        ids = check_unique_ids(record_ids, "record_ids")
        index = {k: i for i, k in enumerate(ids.tolist())}
        names = [s.attack for s in scores]
        if len(set(names)) != len(names):
            raise fail("scores", "one AttackScores per attack name", names)
        columns: dict[str, NDArray[np.float64]] = {}
        for s in scores:
            col = np.full(ids.size, np.nan)
            try:
                pos = [index[r] for r in s.record_ids.tolist()]
            except KeyError as exc:
                raise fail(
                    f"scores of attack {s.attack!r}", "ids among the audited records", f"id {exc}"
                ) from None
            col[pos] = s.scores
            columns[s.attack] = col
        return cls(
            record_ids=ids,
            member=np.asarray(member),
            scores=columns,
            thresholds={s.attack: s.threshold for s in scores},
            groups=None if groups is None else np.asarray(groups),
        )

    def scored(self, name: str) -> tuple[NDArray[Any], NDArray[np.float64], NDArray[np.bool_]]:
        """``(record_ids, scores, member)`` of the records attack ``name`` scored."""
        if name not in self.scores:
            raise fail("name", "one of " + ", ".join(self.scores), repr(name))
        ok = ~np.isnan(self.scores[name])
        return self.record_ids[ok], self.scores[name][ok], self.member[ok]

    @property
    def attacks(self) -> tuple[str, ...]:
        return tuple(self.scores)

    def attack_scores(self, name: str, *, alpha: float | None = None) -> AttackScores:
        """The scores of one attack as an :class:`AttackScores` record."""
        if name not in self.scores:
            raise fail("name", "one of " + ", ".join(self.scores), repr(name))
        thr = self.thresholds.get(name)
        ids, s, _ = self.scored(name)
        return AttackScores(name, ids, s, {}, alpha if thr is not None else None, thr)

    def save(self, path: str | Path) -> Path:
        """Write ``.npz`` (compressed, loadable with ``allow_pickle=False``)."""
        p = Path(path)
        names = list(self.scores)
        arrays: dict[str, Any] = {
            "record_ids": self.record_ids,
            "member": self.member,
            "attacks": np.asarray(names, dtype=str),
            "thresholds": np.asarray(
                [np.nan if self.thresholds.get(n) is None else self.thresholds[n] for n in names],
                dtype=np.float64,
            ),
        }
        for n in names:
            arrays[f"score:{n}"] = self.scores[n]
        if self.groups is not None:
            arrays["groups"] = self.groups
        with p.open("wb") as fh:
            np.savez_compressed(fh, **arrays)
        return p

    @classmethod
    def load(cls, path: str | Path) -> ScoreTable:
        """Read a file written by :meth:`save` (a file, or a report directory holding one)."""
        p = Path(path)
        if p.is_dir():
            p = p / SCORES_FILE
        with np.load(p, allow_pickle=False) as z:
            names = [str(n) for n in z["attacks"].tolist()]
            thr = z["thresholds"]
            return cls(
                record_ids=z["record_ids"],
                member=z["member"],
                scores={n: z[f"score:{n}"] for n in names},
                thresholds={
                    n: (None if np.isnan(t) else float(t)) for n, t in zip(names, thr, strict=True)
                },
                groups=z["groups"] if "groups" in z.files else None,
            )
