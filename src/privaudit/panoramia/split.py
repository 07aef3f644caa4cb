"""PANORAMIA's split (Kazmi et al. 2024, Definition 2), checked and recorded by record id.

The known members are partitioned into ``D_G`` (trains the generator) and ``D_in`` (the
audit's members); the generated pool into a helper pool and the audit pool ``D_out``;
``m`` members of ``D_in`` are paired with ``m`` generated records and an independent fair
coin per pair decides which one the test slot shows (:class:`PanoramiaSplit`). RM;RN and
O(1) pair ``D_in`` with real non-members the same way (:class:`RealPairSplit`). Every
part is seeded, checked (a violation raises :class:`~privaudit.errors.DesignError`) and
recorded as the sha256 of its ids. The game itself is :mod:`privaudit.panoramia.game`.

**Documents.** When records come from documents (text chunks: ``documents`` maps each
record id to its document) and some document holds several records, the unit of every
split is the document: ``D_G``, the classifiers' training and validation records and the
test slots are unions of whole documents, and each test document shows exactly one of its
records (drawn by the seeded RNG); its other records (``withheld_ids``) are used nowhere.
Kazmi et al.'s Props. 1 and 2 need ``P(s_i = 1 | x_i, everything the classifier was fitted
on) <= q``: a classifier that saw other chunks of slot ``i``'s document (in its training or
validation data, or through ``D_G``, which trains the generator and the reference model)
recognises the document, not membership. Without documents, or when every document holds
one record, the unit is the record and the split is the record-level one (the same ids
for the same seed).
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Mapping, Sequence
from typing import Any

from privaudit._validation import fail
from privaudit.errors import DesignError
from privaudit.runtime.seeds import derive_rng

__all__ = [
    "SYNTHETIC_PREFIX",
    "PanoramiaSizes",
    "PanoramiaSplit",
    "RealPairSplit",
    "check_synthetic_ids",
    "document_overlap",
    "ids_sha256",
    "split_members",
]

#: Id prefix of generated records: ``synth-000000``, ``synth-000001``, ...
SYNTHETIC_PREFIX = "synth-"


@dataclasses.dataclass(frozen=True)
class PanoramiaSizes:
    """How the known members and the synthetic pool are divided (see the module docstring).

    Each fraction of the known members is of records, or of documents when records come
    from documents (the module docstring).

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


#: Record id -> document id (records of one document share it); ``None``: every record is
#: its own document.
Documents = Mapping[str, str] | None

Group = tuple[str, ...]


def _groups(ids: Sequence[str], documents: Documents) -> list[Group]:
    """The units of a split, in a canonical order: one group of record ids per document
    (sorted by document id, the records of each sorted), or one group per record (sorted)
    when ``documents`` is None or every document holds one record (the record-level split)."""
    keys = sorted(map(str, ids))
    if documents is None:
        return [(i,) for i in keys]
    by_doc: dict[str, list[str]] = {}
    for i in keys:
        by_doc.setdefault(str(documents[i]), []).append(i)
    if all(len(g) == 1 for g in by_doc.values()):
        return [(i,) for i in keys]
    return [tuple(by_doc[d]) for d in sorted(by_doc)]


def _permuted_groups(
    ids: Sequence[str], documents: Documents, seed: int, purpose: str
) -> list[Group]:
    """:func:`_permuted` over documents: the groups of :func:`_groups`, seeded permutation
    (one record per group: exactly :func:`_permuted`)."""
    groups = _groups(ids, documents)
    rng = derive_rng(seed, purpose=purpose)
    return [groups[i] for i in rng.permutation(len(groups))]


def _flat(groups: Sequence[Group]) -> tuple[str, ...]:
    return tuple(i for g in groups for i in g)


def _unit(groups: Sequence[Group]) -> str:
    """How :func:`_cut` names its units: ``records``, or ``documents (N records)``."""
    if all(len(g) == 1 for g in groups):
        return "records"
    return f"documents ({sum(map(len, groups))} records)"


def _one_per_document(
    groups: Sequence[Group], seed: int, purpose: str
) -> tuple[list[str], list[str]]:
    """The record each test document shows (one per group, drawn by the seeded RNG: the
    first ``k`` draws depend only on the first ``k`` groups) and the others (withheld)."""
    if all(len(g) == 1 for g in groups):
        return [g[0] for g in groups], []
    u = derive_rng(seed, purpose=purpose).random(len(groups))
    shown: list[str] = []
    withheld: list[str] = []
    for g, x in zip(groups, u, strict=True):
        j = min(int(x * len(g)), len(g) - 1)
        shown.append(g[j])
        withheld.extend(g[:j] + g[j + 1 :])
    return shown, withheld


def _cut(n: int, fraction: float, what: str, unit: str = "records") -> int:
    k = round(fraction * n)
    if k < 1 or k > n - 1:
        raise DesignError(
            f"{what}: a fraction {fraction:g} of {n} {unit} leaves an empty part "
            f"({k} and {n - k}); give more {unit.split()[0]} or change the fraction"
        )
    return k


def split_members(
    member_ids: Sequence[str],
    sizes: PanoramiaSizes,
    *,
    seed: int,
    documents: Documents = None,
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(D_G, D_in)``: a seeded partition of the known members (Definition 2), by
    document when ``documents`` puts several records in one document (module docstring)."""
    groups = _permuted_groups(member_ids, documents, seed, "panoramia/members")
    k = _cut(len(groups), sizes.generator_fraction, "generator_fraction", _unit(groups))
    return _flat(groups[:k]), _flat(groups[k:])


def document_overlap(
    member_ids: Sequence[str], non_member_ids: Sequence[str], documents: Documents
) -> DesignError | None:
    """The error to raise when a document holds both known members and real non-members
    (its chunks would be told apart by the document, not by membership), else None."""
    if documents is None or not non_member_ids:
        return None
    mem_docs = {str(documents[str(i)]) for i in member_ids}
    shared = sorted(mem_docs & {str(documents[str(i)]) for i in non_member_ids})
    if not shared:
        return None
    n_mem = sum(str(documents[str(i)]) in shared for i in member_ids)
    n_non = sum(str(documents[str(i)]) in shared for i in non_member_ids)
    return DesignError(
        f"non_members: {len(shared)} document(s) hold both known members ({n_mem} records) "
        f"and real non-members ({n_non} records), e.g. {shared[:3]}; members and "
        "non-members must be split by document (every record of a document on one side)"
    )


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
    the member of pair ``i`` is shown), ``unshown_ids[i]`` the partner not shown. By
    document (module docstring): ``documents[j]`` is the document of ``known_members[j]``
    (empty: every record its own document), ``withheld_ids`` the records of the test
    documents that are not their slot's member (used nowhere).
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
    withheld_ids: tuple[str, ...] = ()
    documents: tuple[str, ...] = ()

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
        documents: Documents = None,
    ) -> PanoramiaSplit:
        """Split the synthetic pool, pair the test slots, flip the coins (all seeded); with
        ``documents``, ``D_in`` is cut by document and each test document shows one record."""
        synth = _permuted(synthetic, seed, "panoramia/synthetic")
        k = _cut(len(synth), sizes.helper_fraction, "helper_fraction")
        helper, audit = synth[:k], synth[k:]
        d_in = _permuted_groups(members, documents, seed, "panoramia/pairs-members")
        d_out = _permuted(audit, seed, "panoramia/pairs-synthetic")
        unit = _unit(d_in)
        m = _cut(len(d_in), sizes.test_fraction, "test_fraction", unit)
        if m > len(d_out) - 2:
            raise DesignError(
                f"{m} test pairs need more than {len(d_out)} generated audit records "
                "(raise synthetic_per_member or lower helper_fraction / test_fraction)"
            )
        coins = derive_rng(seed, purpose="panoramia/coins").random(m) < 0.5
        shown, withheld = _one_per_document(d_in[:m], seed, "panoramia/test-records")
        test = tuple(a if s else b for a, b, s in zip(shown, d_out[:m], coins, strict=True))
        unshown = tuple(b if s else a for a, b, s in zip(shown, d_out[:m], coins, strict=True))
        rest_in, rest_out = d_in[m:], d_out[m:]
        v_in = _cut(len(rest_in), sizes.val_fraction, "val_fraction (members)", unit)
        v_out = _cut(len(rest_out), sizes.val_fraction, "val_fraction (synthetic)")
        known = tuple(map(str, known_members))
        split = cls(
            known_members=known,
            generator=tuple(generator),
            members=tuple(members),
            synthetic=tuple(synthetic),
            helper_pool=tuple(helper),
            audit_synthetic=tuple(audit),
            train_members=_flat(rest_in[v_in:]),
            train_synthetic=tuple(rest_out[v_out:]),
            val_members=_flat(rest_in[:v_in]),
            val_synthetic=tuple(rest_out[:v_out]),
            test_ids=test,
            test_member=tuple(bool(s) for s in coins),
            unshown_ids=unshown,
            non_members=tuple(map(str, non_members)),
            withheld_ids=tuple(withheld),
            documents=() if documents is None else tuple(str(documents[i]) for i in known),
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
            withheld=self.withheld_ids,
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
        if used_in | set(self.withheld_ids) != d_in:
            raise DesignError(
                "split: classifier train + validation + test pairs (+ withheld) is not D_in"
            )
        self._check_documents()

    def _test_members(self) -> list[str]:
        """The member of each test pair (shown or not), in slot order."""
        return [
            a if s else b
            for a, b, s in zip(self.test_ids, self.unshown_ids, self.test_member, strict=True)
        ]

    def _check_documents(self) -> None:
        """By document: ``D_G``, classifier train, validation and the test documents hold
        disjoint documents, each test document one slot, withheld records only test
        documents' (module docstring)."""
        if not self.documents:
            if self.withheld_ids:
                raise DesignError("split: withheld records without documents")
            return
        if len(self.documents) != len(self.known_members):
            raise DesignError("split: one document per known member")
        doc = dict(zip(self.known_members, self.documents, strict=True))
        tests = [doc[i] for i in self._test_members()]
        if len(set(tests)) != len(tests):
            raise DesignError("split: a document shows more than one test slot")
        _disjoint_documents(
            doc,
            D_G=self.generator,
            train_members=self.train_members,
            val_members=self.val_members,
            test=(*self._test_members(), *self.withheld_ids),
        )
        if not {doc[i] for i in self.withheld_ids} <= set(tests):
            raise DesignError("split: withheld records of documents that show no test slot")

    def record(self) -> dict[str, Any]:
        """The ``split`` section: sha256 of each part's ids, and ``checked``."""
        return {
            "ids_sha256": {
                "generator": ids_sha256(self.generator),
                "members": ids_sha256(self.members),
                "helper_pool": ids_sha256(self.helper_pool),
                "audit_synthetic": ids_sha256(self.audit_synthetic),
                "test": ids_sha256(self.test_ids),
                **({"withheld": ids_sha256(self.withheld_ids)} if self.withheld_ids else {}),
            },
            "checked": True,
        }


def _disjoint_documents(doc: Mapping[str, str], **parts: Sequence[str]) -> None:
    """Raise :class:`DesignError` when two parts share a document."""
    seen: dict[str, str] = {}
    for name, ids in parts.items():
        for d in sorted({doc[i] for i in ids}):
            if d in seen:
                raise DesignError(f"split: document {d!r} is in both {seen[d]} and {name}")
            seen[d] = name


@dataclasses.dataclass(frozen=True)
class RealPairSplit:
    """RM;RN's and O(1)'s split: real members of ``D_in`` paired with real non-members.

    The members keep the game's pairing order (the first test members are the same
    records as PANORAMIA's), the non-members are permuted (seeded); ``m_real =
    min(round(test_fraction * |D_in|), round(test_fraction * |non-members|))`` coin-flip
    pairs; the rest of both trains and validates RM;RN's classifier. By document (module
    docstring): both sides are cut by document, each test document shows one record (the
    members' draws are the game's, so the first test members are still PANORAMIA's), the
    other records of the test documents (``withheld_ids``) are used nowhere;
    ``member_documents`` / ``non_member_documents`` are the documents of ``members`` /
    ``non_members`` (empty: every record its own document).
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
    withheld_ids: tuple[str, ...] = ()
    member_documents: tuple[str, ...] = ()
    non_member_documents: tuple[str, ...] = ()

    @classmethod
    def build(
        cls,
        members: Sequence[str],
        non_members: Sequence[str],
        sizes: PanoramiaSizes,
        *,
        seed: int,
        documents: Documents = None,
    ) -> RealPairSplit:
        overlap = document_overlap(members, non_members, documents)
        if overlap is not None:
            raise overlap
        d_in = _permuted_groups(members, documents, seed, "panoramia/pairs-members")
        d_nm = _permuted_groups(non_members, documents, seed, "panoramia/rmrn-non-members")
        u_in, u_nm = _unit(d_in), _unit(d_nm)
        m = min(
            _cut(len(d_in), sizes.test_fraction, "test_fraction", u_in),
            _cut(len(d_nm), sizes.test_fraction, "test_fraction (non-members)", u_nm),
        )
        coins = derive_rng(seed, purpose="panoramia/rmrn-coins").random(m) < 0.5
        shown_in, held_in = _one_per_document(d_in[:m], seed, "panoramia/test-records")
        shown_nm, held_nm = _one_per_document(d_nm[:m], seed, "panoramia/rmrn-test-records")
        pairs = list(zip(shown_in, shown_nm, coins, strict=True))
        rest_in, rest_nm = d_in[m:], d_nm[m:]
        v_in = _cut(len(rest_in), sizes.val_fraction, "val_fraction (members)", u_in)
        v_nm = _cut(len(rest_nm), sizes.val_fraction, "val_fraction (non-members)", u_nm)
        docs = (
            ((), ())
            if documents is None
            else tuple(tuple(str(documents[str(i)]) for i in ids) for ids in (members, non_members))
        )
        split = cls(
            members=tuple(members),
            non_members=tuple(non_members),
            train_members=_flat(rest_in[v_in:]),
            train_non_members=_flat(rest_nm[v_nm:]),
            val_members=_flat(rest_in[:v_in]),
            val_non_members=_flat(rest_nm[:v_nm]),
            test_ids=tuple(a if s else b for a, b, s in pairs),
            test_member=tuple(bool(s) for s in coins),
            unshown_ids=tuple(b if s else a for a, b, s in pairs),
            withheld_ids=(*held_in, *held_nm),
            member_documents=docs[0],
            non_member_documents=docs[1],
        )
        split.check()
        return split

    def check(self) -> None:
        """Raise :class:`DesignError` on any violation."""
        if set(self.members) & set(self.non_members):
            raise DesignError("RM;RN split: a record is both a member and a non-member")
        parts = (
            self.train_members + self.train_non_members + self.val_members
            + self.val_non_members + self.test_ids + self.unshown_ids + self.withheld_ids
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
        self._check_documents()

    def _check_documents(self) -> None:
        """By document: no document on both sides; classifier train, validation and the
        test documents disjoint in documents; each test document one slot."""
        if not self.member_documents and not self.non_member_documents:
            if self.withheld_ids:
                raise DesignError("RM;RN split: withheld records without documents")
            return
        if len(self.member_documents) != len(self.members) or len(self.non_member_documents) != len(
            self.non_members
        ):
            raise DesignError("RM;RN split: one document per member and non-member")
        if set(self.member_documents) & set(self.non_member_documents):
            raise DesignError("RM;RN split: a document holds both members and non-members")
        doc = dict(zip(self.members, self.member_documents, strict=True))
        doc.update(zip(self.non_members, self.non_member_documents, strict=True))
        pairs = (*self.test_ids, *self.unshown_ids)
        tests = [doc[i] for i in pairs]
        if len(set(tests)) != len(tests):
            raise DesignError("RM;RN split: a document shows more than one test slot")
        _disjoint_documents(
            doc,
            train=self.train_members + self.train_non_members,
            validation=self.val_members + self.val_non_members,
            test=pairs + self.withheld_ids,
        )
        if not {doc[i] for i in self.withheld_ids} <= set(tests):
            raise DesignError("RM;RN split: withheld records of documents that show no test slot")
