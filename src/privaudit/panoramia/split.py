"""PANORAMIA's split (Kazmi et al. 2024, Definition 2), checked and recorded by record id.

The known members are partitioned into ``D_G`` (trains the generator) and ``D_in`` (the
audit's members); the generated pool into a helper pool and the audit pool ``D_out``;
``m`` members of ``D_in`` are paired with ``m`` generated records and an independent fair
coin per pair decides which one the test slot shows (:class:`PanoramiaSplit`). RM;RN and
O(1) pair ``D_in`` with real non-members the same way (:class:`RealPairSplit`). Every
part is seeded, checked (a violation raises :class:`~privaudit.errors.DesignError`) and
recorded as the sha256 of its ids. The game itself is :mod:`privaudit.panoramia.game`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Sequence
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
    "ids_sha256",
    "split_members",
]

#: Id prefix of generated records: ``synth-000000``, ``synth-000001``, ...
SYNTHETIC_PREFIX = "synth-"


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
