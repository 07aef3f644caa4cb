"""PANORAMIA when records come from documents (text chunks): the unit of every split is the
document, each test slot one chunk of its own document.

The null simulation: the generator samples the real distribution exactly (``c = 0``), the
target's loss does not depend on membership (``eps = 0``), members and non-members are a
random half of the DOCUMENTS, 5 chunks per document, and the classifier is a 1-NN margin on
the record (a function of ``x`` and its training records, as any trained classifier is).
Every bound must then exceed 0 with probability at most its share of beta. Split by chunk
(the other chunks of a test slot's document in the classifier's training data or in
``D_G``), ``c_lb`` and ``{c+eps}_lb`` exceeded 0 in 92% of 200 replicates (allowed 2.5%)
and RM;RN's eps_lb in 100% (allowed 5%).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any

import numpy as np
import pytest

from privaudit.errors import DesignError
from privaudit.panoramia.game import (
    SYNTHETIC_PREFIX,
    PanoramiaSizes,
    run_panoramia,
    split_members,
)

D = 16
NOISE = 0.5


@dataclasses.dataclass(frozen=True)
class Rec:
    ids: tuple[str, ...]
    x: np.ndarray


class NullLoss:
    """A loss that does not depend on membership: a hash of the record id."""

    def __init__(self, seed: int) -> None:
        self.seed = seed

    def losses(self, ids: tuple[str, ...]) -> np.ndarray:
        out = np.empty(len(ids))
        for i, r in enumerate(ids):
            h = hashlib.sha256(f"{self.seed}|{r}".encode()).digest()
            out[i] = int.from_bytes(h[:6], "little") / 2**48
        return out


@dataclasses.dataclass
class NN:
    tr_x: np.ndarray
    tr_y: np.ndarray
    info: dict[str, Any]

    def score(self, records: Rec, loss: np.ndarray) -> np.ndarray:
        d = ((records.x[:, None, :] - self.tr_x[None, :, :]) ** 2).sum(-1)
        dm = np.where(self.tr_y[None, :], d, np.inf).min(1)
        dn = np.where(~self.tr_y[None, :], d, np.inf).min(1)
        return dn - dm


class DocModality:
    """Records ``d<doc>-c<chunk>``: a document centre plus chunk noise; the generator samples
    the same distribution (c = 0). ``with_documents=False``: no ``documents`` method (the
    record-level game)."""

    name = "doc-null"

    def __init__(self, *, with_documents: bool = True, distinct: bool = False) -> None:
        self.distinct = distinct
        if not with_documents:
            self.documents = None  # type: ignore[assignment]

    def ids(self, r: Rec) -> tuple[str, ...]:
        return r.ids

    def documents(self, r: Rec) -> tuple[str, ...]:
        if self.distinct:  # every record its own document, named unlike its id
            return tuple(f"doc-{i[::-1]}" for i in r.ids)
        return tuple(i.split("-c")[0] for i in r.ids)

    def take(self, r: Rec, ids: Any) -> Rec:
        idx = {v: i for i, v in enumerate(r.ids)}
        pos = [idx[str(v)] for v in ids]
        return Rec(tuple(r.ids[i] for i in pos), r.x[pos])

    def concat(self, a: Rec, b: Rec) -> Rec:
        return Rec(a.ids + b.ids, np.r_[a.x, b.x])

    def fit_generator(self, r: Rec, *, seed: int) -> None:
        return None

    def sample(self, g: Any, n: int, *, seed: int) -> Rec:
        rng = np.random.default_rng(seed)
        x = rng.normal(size=(n, D)) + NOISE * rng.normal(size=(n, D))
        return Rec(tuple(f"{SYNTHETIC_PREFIX}{i:06d}" for i in range(n)), x)

    def fit_helper(self, r: Rec, *, seed: int) -> NullLoss:
        return NullLoss(seed + 1)

    def loss_features(self, model: NullLoss, r: Rec) -> np.ndarray:
        return model.losses(r.ids)[:, None]

    def fit_scorer(self, train: Any, val: Any, *, seed: int, criterion: Any) -> NN:
        return NN(train.records.x, np.asarray(train.label, bool), {"kind": "1nn"})

    def settings(self) -> dict[str, Any]:
        return {"generator": {}, "helper": {}, "scorer": {}}


def population(n_docs: int, k: int, seed: int) -> tuple[Rec, Rec]:
    """``n_docs`` documents of ``k`` chunks; members a random half of the documents."""
    rng = np.random.default_rng(1000 + seed)
    mu = rng.normal(size=(n_docs, D))
    ids = np.array([f"d{d:05d}-c{j}" for d in range(n_docs) for j in range(k)])
    docs = np.repeat(np.arange(n_docs), k)
    x = mu[docs] + NOISE * rng.normal(size=(n_docs * k, D))
    is_mem = np.isin(docs, rng.permutation(n_docs)[: n_docs // 2])
    return Rec(tuple(ids[is_mem]), x[is_mem]), Rec(tuple(ids[~is_mem]), x[~is_mem])


def play(mod: DocModality, members: Rec, non: Rec | None, seed: int, **kw: Any) -> Any:
    return run_panoramia(mod, NullLoss(seed), members, non_members=non, seed=seed, **kw)


def test_null_simulation_bounds_hold_with_five_chunks_per_document() -> None:
    """c = eps = 0, 5 chunks per document: P(bound > 0) <= its share of beta (0.05)."""
    reps, beta = 40, 0.05
    rows, sizes = [], []
    for rep in range(reps):
        mem, non = population(240, 5, rep)
        res = play(DocModality(), mem, non, rep)
        rows.append((res.c_lb, res.c_plus_eps_lb, res.comparisons["rmrn"]["eps_lb"]))
        sizes.append((res.sizes["m"], res.sizes.get("n_test_documents")))
    pos = (np.array(rows) > 0).mean(axis=0)
    assert pos[0] <= beta / 2 and pos[1] <= beta / 2, pos
    assert pos[2] <= beta, pos
    assert set(sizes) == {(30, 30)}  # m = 30 slots, one per document


def test_split_is_by_document() -> None:
    mem, non = population(120, 5, 0)
    res = play(DocModality(), mem, non, 0)
    s = res.split

    def doc(i: str) -> str:
        return i.split("-c")[0]

    test_members = [
        a if c else b for a, b, c in zip(s.test_ids, s.unshown_ids, s.test_member, strict=True)
    ]
    parts = {
        "D_G": s.generator,
        "train": s.train_members,
        "val": s.val_members,
        "test": (*test_members, *s.withheld_ids),
    }
    docs = {k: {doc(i) for i in v} for k, v in parts.items()}
    names = list(docs)
    for a in range(len(names)):
        for b in range(a + 1, len(names)):
            assert not docs[names[a]] & docs[names[b]], (names[a], names[b])
    # every part holds whole documents: all 5 chunks of each of its documents
    for k, v in parts.items():
        assert len(v) == 5 * len(docs[k]), k
    # one chunk per test document, the other four withheld
    assert len({doc(i) for i in test_members}) == len(test_members) == res.sizes["m"]
    assert len(s.withheld_ids) == 4 * res.sizes["m"] == res.sizes["n_withheld"]
    assert res.sizes["n_audit_documents"] == len({doc(i) for i in s.members})
    # RM;RN: the same, and its first test members are PANORAMIA's
    rs = res.rmrn_split
    assert rs is not None
    rtest = [
        a if c else b for a, b, c in zip(rs.test_ids, rs.unshown_ids, rs.test_member, strict=True)
    ]
    assert rtest == test_members[: len(rtest)]
    rparts = {
        "train": rs.train_members + rs.train_non_members,
        "val": rs.val_members + rs.val_non_members,
        "test": (*rs.test_ids, *rs.unshown_ids, *rs.withheld_ids),
    }
    rdocs = {k: {doc(i) for i in v} for k, v in rparts.items()}
    assert not rdocs["train"] & rdocs["val"] and not rdocs["test"] & (rdocs["train"] | rdocs["val"])
    assert len({doc(i) for i in (*rs.test_ids, *rs.unshown_ids)}) == 2 * len(rs.test_ids)
    assert res.comparisons["rmrn"]["n_withheld"] == len(rs.withheld_ids) > 0
    # the result says what a slot is, and on how many documents
    note = res.notes[-1]
    assert note.startswith("Test slots are documents: one chunk per document shown")
    assert f"m = {res.sizes['m']} slots from {res.sizes['m']} documents" in note
    assert f"m = {res.comparisons['rmrn']['m']} slots" in note


def test_deterministic_and_independent_of_input_order() -> None:
    mem, non = population(120, 5, 3)
    a = play(DocModality(), mem, non, 7)
    b = play(DocModality(), mem, non, 7)
    assert json.dumps(a.to_dict(), sort_keys=True) == json.dumps(b.to_dict(), sort_keys=True)
    assert a.split == b.split and a.rmrn_split == b.rmrn_split
    rev = Rec(mem.ids[::-1], mem.x[::-1])
    c = play(DocModality(), rev, non, 7)
    assert c.to_dict() == a.to_dict()
    d = play(DocModality(), mem, non, 8)
    assert d.split.test_ids != a.split.test_ids


def test_one_record_per_document_is_the_record_level_game() -> None:
    """Documents that each hold one record (named unlike the records) change nothing."""
    mem, non = population(400, 1, 0)
    plain = play(DocModality(with_documents=False), mem, non, 0)
    distinct = play(DocModality(distinct=True), mem, non, 0)
    assert distinct.to_dict() == plain.to_dict()
    assert distinct.split == plain.split and distinct.rmrn_split == plain.rmrn_split
    assert "n_test_documents" not in plain.sizes and not plain.split.withheld_ids
    ids = [f"r{i}" for i in range(50)]
    same = split_members(ids, PanoramiaSizes(), seed=0, documents={i: f"x{i}" for i in ids})
    assert same == split_members(ids, PanoramiaSizes(), seed=0)


def test_refusals_name_the_field_and_the_counts() -> None:
    mem, non = population(40, 5, 0)
    # a document split between known members and real non-members
    moved = Rec(non.ids[:2], non.x[:2])  # two chunks of a non-member document
    mixed = Rec(mem.ids + moved.ids, np.r_[mem.x, moved.x])
    rest = Rec(non.ids[2:], non.x[2:])
    with pytest.raises(
        DesignError,
        match=r"non_members: 1 document\(s\) hold both known members \(2 records\) and real "
        r"non-members \(3 records\)",
    ):
        play(DocModality(), mixed, rest, 0)
    # too few documents for the test slots
    few, _ = population(6, 10, 0)
    with pytest.raises(
        DesignError,
        match=r"test_fraction: a fraction 0\.5 of 1 documents \(10 records\) leaves an empty "
        r"part \(0 and 1\); give more documents",
    ):
        play(DocModality(), few, None, 0)
    # the same records without documents are enough (15 records of D_in)
    play(DocModality(with_documents=False), few, None, 0)


def test_summary_says_what_a_slot_is_and_that_the_guarantees_are_separate(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from privaudit.panoramia.cli import render_panoramia_summary

    mem, non = population(120, 5, 0)
    res = play(DocModality(), mem, non, 0)
    render_panoramia_summary({"panoramia": res.to_dict()}, None, width=300)
    out = " ".join(capsys.readouterr().out.split())
    m = res.sizes["m"]
    assert f"m = {m} test slots" in out and f"one chunk of each of {m} documents" in out
    assert "three guarantees held separately: c_lb with {c+eps}_lb (jointly), RM;RN, O(1)" in out
