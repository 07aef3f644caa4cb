"""PANORAMIA: audit a released model with generated non-members (Kazmi et al., NeurIPS 2024).

The game (paper Section 3, Definition 2; Algorithm 1), as a composition of steps that a
:class:`Modality` (tabular, image, text, the exact fixture) implements:

1. **Split the known members** ``D_f`` (a subset of the target's training data) into
   ``D_G`` (trains the generator) and ``D_in`` (the audit's members), disjoint, by a
   seeded permutation (:func:`split_members`).
2. **Generator** ``G`` trained on ``D_G`` only; it samples a synthetic pool (ids
   ``synth-000000``, ...) of ``synthetic_per_member * |D_in|`` records, split
   (seeded, disjoint) into a **helper pool** and the **audit pool** ``D_out``.
3. **Helper** ``h``: the target's architecture and recipe trained on the helper pool
   only (Section 5.1: the baseline's loss feature comes from a model trained on
   synthetic data; ``h`` never sees ``D_out``, ``D_in`` or ``D_G``).
4. **Coin-flip test pairs** (Definition 2): ``m = round(test_fraction * |D_in|)``
   members of ``D_in`` are paired with ``m`` records of ``D_out``; an independent fair
   coin ``s_i`` per pair decides which one slot ``i`` shows; the partner that is not
   shown is used nowhere. The other records of ``D_in`` and ``D_out`` train the
   classifiers (``val_fraction`` of each held out for model selection).
5. **Classifiers**: the MIA sees ``(x, loss of f on x)``, the baseline ``(x, loss of h
   on x)``; each is selected on the validation split by :func:`selection_criterion`
   (the PANORAMIA bound itself at ``beta/2``, ties broken by the validation AUC).
6. **Measurement**: continuous scores on the test slots ->
   :func:`privaudit.audit.panoramia.panoramia_audit` (``c_lb``, ``{c+eps}_lb``,
   ``eps_tilde = max(0, {c+eps}_lb - c_lb)``, the paper's sign), the per-threshold
   curves (:func:`privaudit.audit.panoramia.panoramia_curve`).

Every part of the split is checked (:meth:`PanoramiaSplit.check`: disjoint, ``D_G`` and
``D_in`` subsets of the given members, synthetic ids never real ids, test slots paired
and labelled correctly) and recorded by record id; a violated check raises
:class:`~privaudit.errors.DesignError`, it is never assumed. The defects of the authors'
released code that this runner avoids by construction: ``eps_tilde`` printed negated,
hard 0/1 predictions in place of scores, "members" taken from an unsplit table, the
helper trained on the audit's own non-members, an unseeded generator split overlapping
``D_in``, early stopping keeping the last model instead of the best.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import check_probability, fail
from privaudit.audit._level import resolve_beta
from privaudit.audit.one_run import one_run_audit
from privaudit.audit.panoramia import panoramia_audit, panoramia_curve, panoramia_lb
from privaudit.data.dataset import Dataset
from privaudit.errors import DesignError
from privaudit.games.metrics import auc
from privaudit.games.train_many import NPZ, cached
from privaudit.records import AuditResult, ScoreTable
from privaudit.runtime.seeds import derive_rng, derive_seed

if TYPE_CHECKING:
    from privaudit.runtime.store import ArtifactStore

__all__ = [
    "SYNTHETIC_PREFIX",
    "Modality",
    "PanoramiaResult",
    "PanoramiaSizes",
    "PanoramiaSplit",
    "RealPairSplit",
    "Scorer",
    "ScorerData",
    "check_synthetic_ids",
    "dataset_from_arrays",
    "dataset_to_arrays",
    "ids_sha256",
    "run_panoramia",
    "selection_criterion",
    "split_members",
]

R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)

#: Id prefix of generated records: ``synth-000000``, ``synth-000001``, ...
SYNTHETIC_PREFIX = "synth-"


# --------------------------------------------------------------------------------------
# sizes, data and the modality protocol (the interfaces of pano_api.md section 2)
# --------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class PanoramiaSizes:
    """How the known members and the synthetic pool are divided (see the module docstring).

    Parameters
    ----------
    generator_fraction : float
        Known members -> ``D_G`` (generator training); the rest -> ``D_in``.
    synthetic_per_member : float
        Synthetic pool size = this x ``|D_in|`` (helper pool + audit pool).
    helper_fraction : float
        Synthetic pool -> helper pool (trains ``h``); the rest -> ``D_out``.
    test_fraction : float
        Of ``D_in`` (paired with as many of ``D_out``) -> the coin-flip test pairs.
    val_fraction : float
        Of the classifier training part (members and synthetic) -> validation.
    """

    generator_fraction: float = 0.5
    synthetic_per_member: float = 2.0
    helper_fraction: float = 0.5
    test_fraction: float = 0.5
    val_fraction: float = 0.25

    def __post_init__(self) -> None:
        for name in ("generator_fraction", "helper_fraction", "test_fraction", "val_fraction"):
            x = getattr(self, name)
            if isinstance(x, bool) or not isinstance(x, int | float) or not 0.0 < x < 1.0:
                raise fail(f"sizes.{name}", "a fraction in (0, 1)", x)
        s = self.synthetic_per_member
        if (
            isinstance(s, bool)
            or not isinstance(s, int | float)
            or not (s > 0 and math.isfinite(s))
        ):
            raise fail("sizes.synthetic_per_member", "a positive number", s)

    def to_dict(self) -> dict[str, float]:
        return {k: float(v) for k, v in dataclasses.asdict(self).items()}


@dataclasses.dataclass(frozen=True)
class ScorerData(Generic[R]):
    """Records, their loss features (of ``f`` for the MIA, of ``h`` for the baseline), labels."""

    records: R
    loss: NDArray[np.float64]
    label: NDArray[np.bool_]


class Scorer(Protocol[R_co]):
    """A fitted membership classifier; ``score`` is continuous, higher = member."""

    info: dict[str, Any]

    def score(self, records: Any, loss: NDArray[np.float64]) -> NDArray[np.float64]: ...


class Modality(Protocol[R]):
    """What the game needs from one kind of data (pano_api.md section 2).

    ``settings()`` returns JSON-able ``{"generator": {...}, "helper": {...}, "scorer":
    {...}, ...}``; a fitted generator or helper may carry a JSON-able ``info`` dict (fit
    details), merged into the result's ``generator`` / ``helper`` sections. Optional:
    ``example_loss(features) -> (n,)``, one loss per example for the O(1) comparison's
    loss threshold (default: column 0 of the loss features).
    """

    name: str

    def ids(self, records: R) -> tuple[str, ...]: ...

    def take(self, records: R, ids: Sequence[str]) -> R: ...

    def concat(self, a: R, b: R) -> R: ...

    def fit_generator(self, records: R, *, seed: int) -> Any: ...

    def sample(self, generator: Any, n: int, *, seed: int) -> R: ...

    def fit_helper(self, records: R, *, seed: int) -> Any: ...

    def loss_features(self, model: Any, records: R) -> NDArray[np.float64]: ...

    def fit_scorer(
        self,
        train: ScorerData[R],
        val: ScorerData[R],
        *,
        seed: int,
        criterion: Callable[[NDArray[np.float64], NDArray[np.bool_]], float],
    ) -> Scorer[R]: ...

    def settings(self) -> dict[str, Any]: ...


# --------------------------------------------------------------------------------------
# the split (Definition 2), checked and recorded by record id
# --------------------------------------------------------------------------------------


def ids_sha256(ids: Sequence[str]) -> str:
    """sha256 of a set of record ids (sorted, joined by ``\\x1f``): the split's record."""
    return hashlib.sha256("\x1f".join(sorted(map(str, ids))).encode("utf-8")).hexdigest()


def _permuted(ids: Sequence[str], seed: int, purpose: str) -> list[str]:
    rng = derive_rng(seed, purpose=purpose)
    ordered = sorted(map(str, ids))  # the permutation does not depend on the input order
    return [ordered[i] for i in rng.permutation(len(ordered))]


def _cut(n: int, fraction: float, what: str) -> int:
    k = round(fraction * n)
    if k < 1 or k > n - 1:
        raise DesignError(
            f"{what}: a fraction {fraction:g} of {n} records leaves an empty part "
            f"({k} and {n - k}); give more records or change the fraction"
        )
    return k


def split_members(
    member_ids: Sequence[str], sizes: PanoramiaSizes, *, seed: int
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(D_G, D_in)``: a seeded partition of the known members (Definition 2)."""
    perm = _permuted(member_ids, seed, "panoramia/members")
    k = _cut(len(perm), sizes.generator_fraction, "generator_fraction")
    return tuple(perm[:k]), tuple(perm[k:])


def check_synthetic_ids(ids: Sequence[str], n: int, real: set[str]) -> None:
    """Generated ids: exactly ``n``, unique, prefixed ``synth-``, never a real record's id."""
    if len(ids) != n:
        raise DesignError(f"the generator returned {len(ids)} records, {n} were asked for")
    if len(set(ids)) != len(ids):
        raise DesignError("the generator returned duplicate record ids")
    bad = [i for i in ids if not str(i).startswith(SYNTHETIC_PREFIX) or i in real]
    if bad:
        raise DesignError(
            f"generated record ids must start with {SYNTHETIC_PREFIX!r} and never be a real "
            f"record's id; found {bad[:3]}"
        )


@dataclasses.dataclass(frozen=True)
class PanoramiaSplit:
    """Every part of the game by record id (see the module docstring).

    ``test_ids[i]`` is slot ``i``'s record, ``test_member[i]`` its coin ``s_i`` (True:
    the member of pair ``i`` is shown), ``unshown_ids[i]`` the partner not shown.
    """

    known_members: tuple[str, ...]
    generator: tuple[str, ...]
    members: tuple[str, ...]
    synthetic: tuple[str, ...]
    helper_pool: tuple[str, ...]
    audit_synthetic: tuple[str, ...]
    train_members: tuple[str, ...]
    train_synthetic: tuple[str, ...]
    val_members: tuple[str, ...]
    val_synthetic: tuple[str, ...]
    test_ids: tuple[str, ...]
    test_member: tuple[bool, ...]
    unshown_ids: tuple[str, ...]
    non_members: tuple[str, ...] = ()

    @classmethod
    def build(
        cls,
        known_members: Sequence[str],
        generator: Sequence[str],
        members: Sequence[str],
        synthetic: Sequence[str],
        sizes: PanoramiaSizes,
        *,
        seed: int,
        non_members: Sequence[str] = (),
    ) -> PanoramiaSplit:
        """Split the synthetic pool, pair the test slots, flip the coins (all seeded)."""
        synth = _permuted(synthetic, seed, "panoramia/synthetic")
        k = _cut(len(synth), sizes.helper_fraction, "helper_fraction")
        helper, audit = synth[:k], synth[k:]
        d_in = _permuted(members, seed, "panoramia/pairs-members")
        d_out = _permuted(audit, seed, "panoramia/pairs-synthetic")
        m = _cut(len(d_in), sizes.test_fraction, "test_fraction")
        if m > len(d_out) - 2:
            raise DesignError(
                f"{m} test pairs need more than {len(d_out)} generated audit records "
                "(raise synthetic_per_member or lower helper_fraction / test_fraction)"
            )
        coins = derive_rng(seed, purpose="panoramia/coins").random(m) < 0.5
        test = tuple(a if s else b for a, b, s in zip(d_in[:m], d_out[:m], coins, strict=True))
        unshown = tuple(b if s else a for a, b, s in zip(d_in[:m], d_out[:m], coins, strict=True))
        rest_in, rest_out = d_in[m:], d_out[m:]
        v_in = _cut(len(rest_in), sizes.val_fraction, "val_fraction (members)")
        v_out = _cut(len(rest_out), sizes.val_fraction, "val_fraction (synthetic)")
        split = cls(
            known_members=tuple(map(str, known_members)),
            generator=tuple(generator),
            members=tuple(members),
            synthetic=tuple(synthetic),
            helper_pool=tuple(helper),
            audit_synthetic=tuple(audit),
            train_members=tuple(rest_in[v_in:]),
            train_synthetic=tuple(rest_out[v_out:]),
            val_members=tuple(rest_in[:v_in]),
            val_synthetic=tuple(rest_out[:v_out]),
            test_ids=test,
            test_member=tuple(bool(s) for s in coins),
            unshown_ids=unshown,
            non_members=tuple(map(str, non_members)),
        )
        split.check()
        return split

    def check(self) -> None:
        """Raise :class:`DesignError` on any violation (never assumed; see the module docstring)."""

        def disjoint(**parts: Sequence[str]) -> None:
            seen: dict[str, str] = {}
            for name, ids in parts.items():
                if len(set(ids)) != len(ids):
                    raise DesignError(f"split: {name} holds duplicate record ids")
                for i in ids:
                    if i in seen:
                        raise DesignError(f"split: record {i!r} is in both {seen[i]} and {name}")
                    seen[i] = name

        def subset(small: Sequence[str], big: Sequence[str], what: str) -> None:
            extra = set(small) - set(big)
            if extra:
                raise DesignError(f"split: {what} ({len(extra)} records, e.g. {sorted(extra)[:3]})")

        disjoint(known_members=self.known_members)
        disjoint(D_G=self.generator, D_in=self.members)
        subset(self.generator, self.known_members, "D_G is not a subset of the known members")
        subset(self.members, self.known_members, "D_in is not a subset of the known members")
        disjoint(known_members=self.known_members, synthetic=self.synthetic)
        disjoint(known_members=self.known_members, non_members=self.non_members)
        disjoint(synthetic=self.synthetic, non_members=self.non_members)
        disjoint(helper_pool=self.helper_pool, audit_synthetic=self.audit_synthetic)
        if set(self.helper_pool) | set(self.audit_synthetic) != set(self.synthetic):
            raise DesignError("split: helper pool + audit pool is not the synthetic pool")
        disjoint(
            generator=self.generator,
            helper_pool=self.helper_pool,
            train_members=self.train_members,
            train_synthetic=self.train_synthetic,
            val_members=self.val_members,
            val_synthetic=self.val_synthetic,
            test=self.test_ids,
            unshown=self.unshown_ids,
        )
        subset(
            self.train_members + self.val_members, self.members, "classifier members not in D_in"
        )
        subset(
            self.train_synthetic + self.val_synthetic,
            self.audit_synthetic,
            "classifier synthetic records not in D_out",
        )
        n = len(self.test_ids)
        if len(self.test_member) != n or len(self.unshown_ids) != n:
            raise DesignError("split: one coin and one unshown partner per test slot")
        d_in, d_out = set(self.members), set(self.audit_synthetic)
        for shown, hidden, s in zip(self.test_ids, self.unshown_ids, self.test_member, strict=True):
            a, b = (shown, hidden) if s else (hidden, shown)
            if a not in d_in or b not in d_out:
                raise DesignError(
                    f"split: test pair ({a!r}, {b!r}) is not (a D_in member, a D_out record) "
                    f"with the coin {s}"
                )
        used_in = set(self.train_members) | set(self.val_members)
        used_in |= {x for x, s in zip(self.test_ids, self.test_member, strict=True) if s}
        used_in |= {x for x, s in zip(self.unshown_ids, self.test_member, strict=True) if not s}
        if used_in != d_in:
            raise DesignError("split: classifier train + validation + test pairs is not D_in")

    def record(self) -> dict[str, Any]:
        """The ``split`` section: sha256 of each part's ids, and ``checked``."""
        return {
            "ids_sha256": {
                "generator": ids_sha256(self.generator),
                "members": ids_sha256(self.members),
                "helper_pool": ids_sha256(self.helper_pool),
                "audit_synthetic": ids_sha256(self.audit_synthetic),
                "test": ids_sha256(self.test_ids),
            },
            "checked": True,
        }


@dataclasses.dataclass(frozen=True)
class RealPairSplit:
    """RM;RN's and O(1)'s split: real members of ``D_in`` paired with real non-members.

    The members keep the game's pairing order (the first test members are the same
    records as PANORAMIA's), the non-members are permuted (seeded); ``m_real =
    min(round(test_fraction * |D_in|), round(test_fraction * |non-members|))`` coin-flip
    pairs; the rest of both trains and validates RM;RN's classifier.
    """

    members: tuple[str, ...]
    non_members: tuple[str, ...]
    train_members: tuple[str, ...]
    train_non_members: tuple[str, ...]
    val_members: tuple[str, ...]
    val_non_members: tuple[str, ...]
    test_ids: tuple[str, ...]
    test_member: tuple[bool, ...]
    unshown_ids: tuple[str, ...]

    @classmethod
    def build(
        cls, members: Sequence[str], non_members: Sequence[str], sizes: PanoramiaSizes, *, seed: int
    ) -> RealPairSplit:
        d_in = _permuted(members, seed, "panoramia/pairs-members")
        d_nm = _permuted(non_members, seed, "panoramia/rmrn-non-members")
        m = min(
            _cut(len(d_in), sizes.test_fraction, "test_fraction"),
            _cut(len(d_nm), sizes.test_fraction, "test_fraction (non-members)"),
        )
        coins = derive_rng(seed, purpose="panoramia/rmrn-coins").random(m) < 0.5
        pairs = list(zip(d_in[:m], d_nm[:m], coins, strict=True))
        rest_in, rest_nm = d_in[m:], d_nm[m:]
        v_in = _cut(len(rest_in), sizes.val_fraction, "val_fraction (members)")
        v_nm = _cut(len(rest_nm), sizes.val_fraction, "val_fraction (non-members)")
        split = cls(
            members=tuple(members),
            non_members=tuple(non_members),
            train_members=tuple(rest_in[v_in:]),
            train_non_members=tuple(rest_nm[v_nm:]),
            val_members=tuple(rest_in[:v_in]),
            val_non_members=tuple(rest_nm[:v_nm]),
            test_ids=tuple(a if s else b for a, b, s in pairs),
            test_member=tuple(bool(s) for s in coins),
            unshown_ids=tuple(b if s else a for a, b, s in pairs),
        )
        split.check()
        return split

    def check(self) -> None:
        """Raise :class:`DesignError` on any violation."""
        if set(self.members) & set(self.non_members):
            raise DesignError("RM;RN split: a record is both a member and a non-member")
        parts = (
            self.train_members + self.train_non_members + self.val_members
            + self.val_non_members + self.test_ids + self.unshown_ids
        )  # fmt: skip
        if len(set(parts)) != len(parts):
            raise DesignError("RM;RN split: train, validation and test pairs overlap")
        d_in, d_nm = set(self.members), set(self.non_members)
        if (
            not set(self.train_members + self.val_members) <= d_in
            or not set(self.train_non_members + self.val_non_members) <= d_nm
        ):
            raise DesignError("RM;RN split: classifier records outside their side")
        if not len(self.test_member) == len(self.test_ids) == len(self.unshown_ids):
            raise DesignError("RM;RN split: one coin and one unshown partner per test slot")
        for shown, hidden, s in zip(self.test_ids, self.unshown_ids, self.test_member, strict=True):
            a, b = (shown, hidden) if s else (hidden, shown)
            if a not in d_in or b not in d_nm:
                raise DesignError(f"RM;RN split: test pair ({a!r}, {b!r}) mislabelled (coin {s})")


# --------------------------------------------------------------------------------------
# model selection and the result
# --------------------------------------------------------------------------------------


def selection_criterion(
    beta: float,
) -> Callable[[NDArray[np.float64], NDArray[np.bool_]], float]:
    """The model-selection criterion: the PANORAMIA bound on the validation split.

    ``panoramia_lb(scores, label, beta_per_test=beta/2)`` (quantile thresholds), rounded
    to 1e-6, plus ``1e-7 * AUC``: lexicographic (bound first, AUC on ties; bounds closer
    than 1e-6 are ties) as one float, so any "higher is better" selector can use it.
    """
    b = check_probability(beta, "beta")

    def criterion(scores: NDArray[np.float64], label: NDArray[np.bool_]) -> float:
        s = np.asarray(scores, dtype=np.float64)
        lab = np.asarray(label, dtype=bool)
        lb, _ = panoramia_lb(s, lab, beta_per_test=b / 2.0)
        return round(lb, 6) + 1e-7 * auc(s, lab)

    return criterion


def _dict_info(obj: Any) -> dict[str, Any]:
    info = getattr(obj, "info", None)
    return dict(info) if isinstance(info, Mapping) else {}


@dataclasses.dataclass(frozen=True)
class PanoramiaResult:
    """The outcome of :func:`run_panoramia`: ``to_dict()`` is results.json's ``panoramia`` section.

    ``scores``: the test slots (record ids, coin ``member``, scores ``"panoramia-mia"``
    and ``"panoramia-baseline"``); ``rmrn_scores`` RM;RN's test slots when run;
    ``audit`` the :class:`~privaudit.records.AuditResult` of ``panoramia_audit``;
    ``split`` every part by record id.
    """

    modality: str
    seed: int
    confidence: float
    sizes: dict[str, int]
    bounds: dict[str, Any]
    comparisons: dict[str, Any]
    curves: dict[str, Any]
    generator: dict[str, Any]
    helper: dict[str, Any]
    classifiers: dict[str, Any]
    split: PanoramiaSplit
    notes: tuple[str, ...]
    scores: ScoreTable
    audit: AuditResult
    rmrn_scores: ScoreTable | None = None
    rmrn_split: RealPairSplit | None = None

    @property
    def eps_tilde(self) -> float:
        return float(self.bounds["eps_tilde"])

    @property
    def c_lb(self) -> float:
        return float(self.bounds["c_lb"])

    @property
    def c_plus_eps_lb(self) -> float:
        return float(self.bounds["c_plus_eps_lb"])

    def to_dict(self) -> dict[str, Any]:
        """JSON-able, with exactly the keys of pano_api.md section 2."""
        return {
            "modality": self.modality,
            "seed": self.seed,
            "confidence": self.confidence,
            "sizes": dict(self.sizes),
            "bounds": self.bounds,
            "comparisons": self.comparisons,
            "curves": self.curves,
            "generator": self.generator,
            "helper": self.helper,
            "classifiers": self.classifiers,
            "split": self.split.record(),
            "notes": list(self.notes),
        }


NOTES = (
    "eps_tilde = max(0, {c+eps}_lb - c_lb) is a lower bound on eps only if c_lb is tight "
    "(Kazmi et al. 2024, Section 4.2).",
    "Member guesses only; beta/2 per test (Corollary 1), then a union bound over the same "
    "L = min(100, m) score-quantile thresholds for every compared method.",
    "Each test slot shows a real member or a generated record by an independent fair coin "
    "(Definition 2); scores are the classifiers' continuous outputs.",
)


# --------------------------------------------------------------------------------------
# the runner
# --------------------------------------------------------------------------------------


def _labels(n_pos: int, n_neg: int) -> NDArray[np.bool_]:
    return np.r_[np.ones(n_pos, dtype=bool), np.zeros(n_neg, dtype=bool)]


Pair = tuple[Sequence[str], Sequence[str]]


def _classifier_records(
    modality: Modality[R],
    real: R,
    other: R,
    *,
    train: Pair,
    val: Pair,
    test_pool: Pair,
    test_ids: Sequence[str],
    test_member: Sequence[bool],
) -> tuple[tuple[R, R, R], tuple[NDArray[np.bool_], NDArray[np.bool_], NDArray[np.bool_]]]:
    """The classifiers' (train, validation, test) records and labels.

    Each pair is ``(ids of real members, ids of the other side)`` (generated records for
    PANORAMIA, real non-members for RM;RN); train and validation hold the members first
    (label True), the test records are the coin-flip slots in their order.
    """

    def part(pair: Pair) -> R:
        return modality.concat(modality.take(real, pair[0]), modality.take(other, pair[1]))

    records = (part(train), part(val), modality.take(part(test_pool), test_ids))
    labels = (
        _labels(len(train[0]), len(train[1])),
        _labels(len(val[0]), len(val[1])),
        np.asarray(test_member, dtype=bool),
    )
    return records, labels


def _finite_scores(s: Any, n: int, who: str) -> NDArray[np.float64]:
    a = np.asarray(s, dtype=np.float64)
    if a.shape != (n,) or not np.all(np.isfinite(a)):
        raise DesignError(f"{who}: expected {n} finite scores, found shape {a.shape}")
    return a


def _loss(modality: Modality[R], model: Any, records: R, n: int, who: str) -> NDArray[np.float64]:
    a = np.asarray(modality.loss_features(model, records), dtype=np.float64)
    if a.ndim == 1:
        a = a[:, None]
    if a.ndim != 2 or a.shape[0] != n or not np.all(np.isfinite(a)):
        raise DesignError(f"{who}: expected ({n}, k) finite loss features, found {a.shape}")
    return a


def dataset_to_arrays(records: Dataset) -> dict[str, NDArray[Any]]:
    """A :class:`~privaudit.data.dataset.Dataset` as arrays (``records_to_arrays`` of the
    Dataset-based modalities; ``info`` is not kept)."""
    return {
        "name": np.asarray(records.name),
        "record_ids": np.asarray(records.record_ids),
        "X": records.X,
        "y": records.y,
        "feature_names": np.asarray(records.feature_names, dtype=str),
        "class_names": np.asarray(records.class_names, dtype=str),
    }


def dataset_from_arrays(arrays: Mapping[str, NDArray[Any]]) -> Dataset:
    """The inverse of :func:`dataset_to_arrays`."""
    return Dataset(
        str(arrays["name"][()]),
        np.asarray(arrays["record_ids"]),
        np.asarray(arrays["X"], dtype=np.float64),
        np.asarray(arrays["y"], dtype=np.int64),
        tuple(str(f) for f in arrays["feature_names"].tolist()),
        tuple(str(c) for c in arrays["class_names"].tolist()),
    )


INFO = "__info__"
Arrays = dict[str, NDArray[Any]]


def _info_array(info: Mapping[str, Any]) -> NDArray[Any]:
    return np.asarray(json.dumps(info, sort_keys=True, allow_nan=False))


def _read_info(arrays: Arrays) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(str(arrays[INFO][()]))
    return out


def _sha(a: NDArray[Any]) -> str:
    a = np.ascontiguousarray(a)
    h = hashlib.sha256(f"{a.dtype.str}{a.shape}".encode())
    h.update(a.tobytes() if a.dtype.kind != "U" else "\x1f".join(a.ravel().tolist()).encode())
    return h.hexdigest()


class _Steps(Generic[R]):
    """The game's expensive steps through an :class:`ArtifactStore` (when given).

    Cached by content (never by name): the synthetic samples (the generator's only
    use; key: its settings, ``D_G``'s content, the size and seeds), the helper's loss
    features on the classifier records (its only use; key: its settings, the helper
    pool's content, the seed, the records' content) and each scorer's test scores and
    selection record (key: the scorer settings, the content of its train / validation
    / test records, their loss features and labels, the seed and beta). A killed run
    resumes from what was stored. Records go into the store through the modality's
    ``records_to_arrays`` / ``records_from_arrays`` (required only with a store; see
    :func:`dataset_to_arrays`).
    """

    def __init__(self, modality: Modality[R], store: ArtifactStore | None) -> None:
        self.modality = modality
        self.store = store
        if store is not None:
            for name in ("records_to_arrays", "records_from_arrays"):
                if not callable(getattr(modality, name, None)):
                    raise fail(
                        "store", f"a modality with {name}() (to cache its records)", modality.name
                    )

    def records(
        self, key: Mapping[str, Any], create: Callable[[], tuple[R, dict[str, Any]]]
    ) -> tuple[R, dict[str, Any]]:
        """``create() -> (records, info)`` through the store (records as arrays)."""
        if self.store is None:
            return create()
        to_arrays = getattr(self.modality, "records_to_arrays")  # noqa: B009
        from_arrays = getattr(self.modality, "records_from_arrays")  # noqa: B009

        def make() -> Arrays:
            rec, info = create()
            arrays = to_arrays(rec)
            return {
                **{f"rec:{k}": np.asarray(v) for k, v in arrays.items()},
                INFO: _info_array(info),
            }

        out = self.run(key, make)
        rec = from_arrays({k[4:]: v for k, v in out.items() if k.startswith("rec:")})
        return rec, _read_info(out)

    def fingerprint(self, records: R) -> str:
        if self.store is None:
            return ""
        arrays = getattr(self.modality, "records_to_arrays")(records)  # noqa: B009
        return hashlib.sha256(
            "\x1e".join(f"{k}={_sha(np.asarray(arrays[k]))}" for k in sorted(arrays)).encode()
        ).hexdigest()

    def run(self, key: Mapping[str, Any], create: Callable[[], Arrays]) -> Arrays:
        if self.store is None:
            return create()
        value, _ = cached(self.store, key, create, NPZ)
        return value

    def scores(
        self,
        role: str,
        train: ScorerData[R],
        val: ScorerData[R],
        test: ScorerData[R],
        *,
        seed: int,
        criterion: Callable[[NDArray[np.float64], NDArray[np.bool_]], float],
        beta: float,
        scorer_settings: Any,
    ) -> tuple[NDArray[np.float64], dict[str, Any]]:
        """Fit a scorer on ``train``, select on ``val``, score ``test`` (continuous)."""

        def make() -> Arrays:
            scorer = self.modality.fit_scorer(train, val, seed=seed, criterion=criterion)
            sc = _finite_scores(scorer.score(test.records, test.loss), test.label.size, role)
            return {"scores": sc, INFO: _info_array(dict(scorer.info))}

        key = {
            "step": "panoramia/scorer",
            "modality": self.modality.name,
            "role": role,
            "scorer": scorer_settings,
            "seed": seed,
            "beta": beta,
            "data": [
                [self.fingerprint(d.records), _sha(np.asarray(d.loss)), _sha(np.asarray(d.label))]
                for d in (train, val, test)
            ],
        }
        out = self.run(key, make)
        return np.asarray(out["scores"], dtype=np.float64), _read_info(out)


def _example_loss(modality: Modality[Any], loss: NDArray[np.float64]) -> NDArray[np.float64]:
    """One loss per example for O(1): ``modality.example_loss(features)`` or column 0."""
    fn = getattr(modality, "example_loss", None)
    out = fn(loss) if callable(fn) else loss[:, 0]
    return np.asarray(out, dtype=np.float64).ravel()


@dataclasses.dataclass(frozen=True)
class _RealComparison:
    rmrn: dict[str, Any]
    o1: dict[str, Any]
    curve: dict[str, list[float]]
    classifier: dict[str, Any]
    scores: ScoreTable
    split: RealPairSplit


def _compare_real(
    steps: _Steps[R],
    target: Any,
    members: R,
    non_members: R,
    d_in: Sequence[str],
    sizes: PanoramiaSizes,
    *,
    seed: int,
    beta: float,
    criterion: Callable[[NDArray[np.float64], NDArray[np.bool_]], float],
    scorer_settings: Any,
) -> _RealComparison:
    """RM;RN and O(1) on the same target (Kazmi et al. 2024, Section 5.2).

    RM;RN: the MIA pipeline (x + loss of f, the same scorer and selection) with real
    non-members in place of generated ones; ``c = 0``, so one test at ``beta`` over the
    same quantile thresholds (``panoramia_lb(..., beta_per_test=beta)``). O(1) (Steinke
    et al. 2023): a loss threshold of the target on the same coin-flip slots, two-sided
    guesses, ``one_run_audit(selection="union-bound")`` (the search over guess counts
    paid by a union bound).
    """
    modality = steps.modality
    nm_ids = modality.ids(non_members)
    rs = RealPairSplit.build(d_in, nm_ids, sizes, seed=seed)

    (tr, va, te), (y_tr, y_va, y_te) = _classifier_records(
        modality,
        members,
        non_members,
        train=(rs.train_members, rs.train_non_members),
        val=(rs.val_members, rs.val_non_members),
        test_pool=(rs.members, rs.non_members),
        test_ids=rs.test_ids,
        test_member=rs.test_member,
    )
    loss_te = _loss(modality, target, te, y_te.size, "rmrn loss (test)")
    sc, classifier = steps.scores(
        "rmrn",
        ScorerData(tr, _loss(modality, target, tr, y_tr.size, "rmrn loss (train)"), y_tr),
        ScorerData(va, _loss(modality, target, va, y_va.size, "rmrn loss (validation)"), y_va),
        ScorerData(te, loss_te, y_te),
        seed=derive_seed(seed, purpose="panoramia/scorer-rmrn"),
        criterion=criterion,
        beta=beta,
        scorer_settings=scorer_settings,
    )
    eps, info = panoramia_lb(sc, y_te, beta_per_test=beta)
    rmrn = {
        "eps_lb": float(eps),
        "m": int(y_te.size),
        "n_test_members": int(y_te.sum()),
        "r": int(info["r"]),
        "v": int(info["v"]),
        "n_thresholds": int(info["n_thresholds"]),
        "beta_per_threshold": float(info["beta_per_threshold"]),
    }
    o1_res = one_run_audit(
        -_example_loss(modality, loss_te), y_te, beta=beta, selection="union-bound"
    )
    o1 = {
        "eps_lb": float(o1_res.epsilon_lower_bound),
        "m": int(o1_res.counts["m"]),
        "k_pos": int(o1_res.counts["k_pos"]),
        "k_neg": int(o1_res.counts["k_neg"]),
        "r": int(o1_res.counts["r"]),
        "v": int(o1_res.counts["v"]),
        "selection": o1_res.threshold_selection,
    }
    table = ScoreTable(record_ids=np.asarray(rs.test_ids), member=y_te, scores={"rmrn-mia": sc})
    return _RealComparison(
        rmrn=rmrn,
        o1=o1,
        curve=panoramia_curve(sc, y_te, beta_per_test=beta),
        classifier=classifier,
        scores=table,
        split=rs,
    )


def run_panoramia(
    modality: Modality[R],
    target: Any,
    members: R,
    *,
    non_members: R | None = None,
    sizes: PanoramiaSizes = PanoramiaSizes(),
    seed: int,
    confidence: float = 0.95,
    store: ArtifactStore | None = None,
) -> PanoramiaResult:
    """Run the PANORAMIA game on ``target`` (Kazmi et al. 2024, Algorithm 1; module docstring).

    Parameters
    ----------
    modality : Modality
        The data kind's steps (generator, helper, loss features, scorers).
    target : object
        Whatever ``modality.loss_features(target, records)`` accepts.
    members : records
        KNOWN members of the target (a subset of its training data).
    non_members : records, optional
        Real records NOT in the target's training data: RM;RN and O(1) run on the same
        target (``comparisons``, ``curves["rmrn"]``, ``rmrn_scores``), on coin-flip pairs
        of ``D_in`` members and these (:class:`RealPairSplit`).
    sizes : PanoramiaSizes
    seed : int
        Drives every split, the generator, the helper and the scorers
        (``derive_seed(seed, purpose=...)``): same inputs and seed, same numbers.
    confidence : float
        ``1 - beta`` of the measurement (``beta/2`` per test, Corollary 1).
    store : ArtifactStore, optional
        Cache the samples, the helper's loss features and the scorers' outputs by
        content (:class:`_Steps`), so a killed run resumes; the modality must then have
        ``records_to_arrays`` / ``records_from_arrays``.
    """
    steps = _Steps(modality, store)
    beta = resolve_beta(None, confidence)
    member_ids = modality.ids(members)
    if len(set(member_ids)) != len(member_ids):
        raise fail("members", "unique record ids", "duplicates")
    nm_ids = modality.ids(non_members) if non_members is not None else ()
    settings = modality.settings()

    # 1. D_G / D_in
    d_g, d_in = split_members(member_ids, sizes, seed=seed)
    n_synth = round(sizes.synthetic_per_member * len(d_in))
    d_g_rec = modality.take(members, d_g)
    gen_seed = derive_seed(seed, purpose="panoramia/generator")
    sample_seed = derive_seed(seed, purpose="panoramia/generator-sample")

    # 2. the generator, on D_G only, and the synthetic pool (cached as the samples)
    def make_samples() -> tuple[R, dict[str, Any]]:
        generator = modality.fit_generator(d_g_rec, seed=gen_seed)
        return modality.sample(generator, n_synth, seed=sample_seed), _dict_info(generator)

    synth, generator_info = steps.records(
        {
            "step": "panoramia/samples",
            "modality": modality.name,
            "generator": settings.get("generator"),
            "d_g": steps.fingerprint(d_g_rec),
            "n": n_synth,
            "seeds": [gen_seed, sample_seed],
        },
        make_samples,
    )
    synth_ids = modality.ids(synth)
    check_synthetic_ids(synth_ids, n_synth, set(member_ids) | set(nm_ids))
    split = PanoramiaSplit.build(
        member_ids, d_g, d_in, synth_ids, sizes, seed=seed, non_members=nm_ids
    )

    # 3. classifier data
    (train_rec, val_rec, test_rec), (y_train, y_val, y_test) = _classifier_records(
        modality,
        members,
        synth,
        train=(split.train_members, split.train_synthetic),
        val=(split.val_members, split.val_synthetic),
        test_pool=(split.members, split.audit_synthetic),
        test_ids=split.test_ids,
        test_member=split.test_member,
    )
    criterion = selection_criterion(beta)
    sizes_n = (y_train.size, y_val.size, y_test.size)

    # 4. the helper, on the helper pool only (cached as its loss features)
    helper_rec = modality.take(synth, split.helper_pool)
    helper_seed = derive_seed(seed, purpose="panoramia/helper")

    def make_helper_losses() -> Arrays:
        helper = modality.fit_helper(helper_rec, seed=helper_seed)
        out = {
            name: _loss(modality, helper, rec, n, f"baseline loss ({name})")
            for name, rec, n in zip(
                ("train", "val", "test"), (train_rec, val_rec, test_rec), sizes_n, strict=True
            )
        }
        return {**out, INFO: _info_array(_dict_info(helper))}

    helper_losses = steps.run(
        {
            "step": "panoramia/helper-losses",
            "modality": modality.name,
            "helper": settings.get("helper"),
            "helper_pool": steps.fingerprint(helper_rec),
            "seed": helper_seed,
            "records": [steps.fingerprint(r) for r in (train_rec, val_rec, test_rec)],
        },
        make_helper_losses,
    )
    helper_info = _read_info(helper_losses)
    target_losses = {
        name: _loss(modality, target, rec, n, f"mia loss ({name})")
        for name, rec, n in zip(
            ("train", "val", "test"), (train_rec, val_rec, test_rec), sizes_n, strict=True
        )
    }

    # 5. the classifiers, selected on validation by the bound (cached as their scores)
    classifiers: dict[str, Any] = {}
    test_scores: dict[str, NDArray[np.float64]] = {}
    for role, losses in (("mia", target_losses), ("baseline", helper_losses)):
        sc, info = steps.scores(
            role,
            ScorerData(train_rec, np.asarray(losses["train"]), y_train),
            ScorerData(val_rec, np.asarray(losses["val"]), y_val),
            ScorerData(test_rec, np.asarray(losses["test"]), y_test),
            seed=derive_seed(seed, purpose=f"panoramia/scorer-{role}"),
            criterion=criterion,
            beta=beta,
            scorer_settings=settings.get("scorer"),
        )
        classifiers[role] = info
        test_scores[role] = sc

    # 5. measurement
    audit = panoramia_audit(test_scores["mia"], test_scores["baseline"], y_test, beta=beta)
    _, info_mia = panoramia_lb(test_scores["mia"], y_test, beta_per_test=beta / 2)
    _, info_base = panoramia_lb(test_scores["baseline"], y_test, beta_per_test=beta / 2)
    bounds = {
        "c_lb": float(audit.extra["c_lower_bound"]),
        "c_plus_eps_lb": float(audit.extra["c_plus_epsilon_lower_bound"]),
        "eps_tilde": float(audit.extra["epsilon_tilde"]),
        "n_thresholds": int(info_mia["n_thresholds"]),
        "beta_per_threshold": float(info_mia["beta_per_threshold"]),
        "mia": {"r": int(info_mia["r"]), "v": int(info_mia["v"])},
        "baseline": {"r": int(info_base["r"]), "v": int(info_base["v"])},
    }
    curves = {
        role: panoramia_curve(test_scores[role], y_test, beta_per_test=beta / 2)
        for role in ("mia", "baseline")
    }
    comparisons: dict[str, Any] = {"rmrn": None, "o1": None}
    classifiers["rmrn"] = None
    real: _RealComparison | None = None
    if non_members is not None:
        real = _compare_real(
            steps, target, members, non_members, split.members, sizes,
            seed=seed, beta=beta, criterion=criterion, scorer_settings=settings.get("scorer"),
        )  # fmt: skip
        comparisons = {"rmrn": real.rmrn, "o1": real.o1}
        classifiers["rmrn"] = real.classifier
        curves["rmrn"] = real.curve
    n_test_members = int(y_test.sum())
    result_sizes = {
        "n_known_members": len(member_ids),
        "n_generator_train": len(split.generator),
        "n_audit_members": len(split.members),
        "n_synthetic": len(split.synthetic),
        "n_helper_pool": len(split.helper_pool),
        "n_audit_synthetic": len(split.audit_synthetic),
        "n_classifier_train": int(y_train.size),
        "n_validation": int(y_val.size),
        "m": int(y_test.size),
        "n_test_members": n_test_members,
        "n_test_synthetic": int(y_test.size) - n_test_members,
    }
    table = ScoreTable(
        record_ids=np.asarray(split.test_ids),
        member=y_test,
        scores={
            "panoramia-mia": test_scores["mia"],
            "panoramia-baseline": test_scores["baseline"],
        },
    )
    return PanoramiaResult(
        modality=modality.name,
        seed=int(seed),
        confidence=1.0 - beta,
        sizes=result_sizes,
        bounds=bounds,
        comparisons=comparisons,
        curves=curves,
        generator={
            **dict(settings.get("generator", {})),
            "n_train": len(split.generator),
            "n_sampled": len(split.synthetic),
            **generator_info,
        },
        helper={
            **dict(settings.get("helper", {})),
            "n_train": len(split.helper_pool),
            **helper_info,
        },
        classifiers=classifiers,
        split=split,
        notes=NOTES,
        scores=table,
        audit=audit,
        rmrn_scores=None if real is None else real.scores,
        rmrn_split=None if real is None else real.split,
    )
