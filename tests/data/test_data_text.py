"""Text records for LLM audits: bundled Tiny Shakespeare, documents, chunks, split by
document, the user's JSONL."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from privaudit.data.text import (
    TextRecords,
    TextSplit,
    chunk_documents,
    load_tiny_shakespeare,
    read_text_records,
    shakespeare_documents,
    split_by_document,
    write_text_records,
)
from privaudit.errors import DesignError, InvalidInputError


@pytest.fixture(scope="module")
def chunks() -> TextRecords:
    return chunk_documents(shakespeare_documents(), chunk_chars=256)


def test_bundled_corpus_is_tiny_shakespeare() -> None:
    text = load_tiny_shakespeare()
    assert len(text) == 1_115_394
    assert text.startswith("First Citizen:\nBefore we proceed")


def test_documents_are_contiguous_runs_of_whole_speeches() -> None:
    text = load_tiny_shakespeare()
    docs = shakespeare_documents(text, doc_chars=1200)
    speeches = [s.strip("\n") for s in text.split("\n\n") if s.strip()]
    # joining the documents gives back every speech, in order, none cut
    rejoined = [s for d in docs.values() for s in d.split("\n\n")]
    assert rejoined == speeches
    sizes = [len(d) for d in docs.values()]
    assert min(sizes[:-1]) >= 1200 - 2 * len(docs)  # every document but the last is full
    assert list(docs)[:2] == ["ts-d00000", "ts-d00001"]
    # each document starts with a speaker line ("Name:")
    assert all(d.split("\n", 1)[0].endswith(":") for d in docs.values())


def test_chunks_have_stable_ids_and_bounded_size(chunks: TextRecords) -> None:
    again = chunk_documents(shakespeare_documents(), chunk_chars=256)
    assert again.ids == chunks.ids and again.texts == chunks.texts
    lengths = np.array([len(t) for t in chunks.texts])
    assert lengths.max() <= 256 + 128 + 1  # a short tail is merged into the chunk before it
    assert lengths.min() >= 1
    assert chunks.ids[0] == "ts-d00000-c000"
    assert all(i.startswith(d + "-c") for i, d in zip(chunks.ids, chunks.documents, strict=True))


def test_split_by_document_is_disjoint_seeded_and_sized(chunks: TextRecords) -> None:
    sizes = {"members": 100, "non_members": 120, "reference": 100, "base": None}
    s = split_by_document(chunks, sizes, seed=3)
    assert [len(s.chunks[r]) for r in ("members", "non_members", "reference")] == [100, 120, 100]
    doc_of = dict(zip(chunks.ids, chunks.documents, strict=True))
    seen: dict[str, str] = {}
    for role, ids in s.chunks.items():
        for i in ids:
            d = doc_of[i]
            assert seen.setdefault(d, role) == role  # a document belongs to one role
            assert d in s.documents[role]
    assert s == split_by_document(chunks, sizes, seed=3)
    assert s.chunks["members"] != split_by_document(chunks, sizes, seed=4).chunks["members"]
    d = s.to_dict()
    assert d["roles"]["members"]["n_chunks"] == 100 and len(d["roles"]["members"]["sha256"]) == 64


def test_chunks_per_document_caps_the_audited_roles(chunks: TextRecords) -> None:
    """One chunk per document for the audited roles: every audited chunk is its own unit of
    randomisation (the first chunk of its document); other roles still take whole documents."""
    sizes = {"members": 50, "non_members": 50, "reference": 40}
    caps = {"members": 1, "non_members": 1}
    s = split_by_document(chunks, sizes, seed=1, chunks_per_document=caps)
    doc_of = dict(zip(chunks.ids, chunks.documents, strict=True))
    first_of: dict[str, str] = {}
    for i, d in zip(chunks.ids, chunks.documents, strict=True):
        first_of.setdefault(d, i)
    for role in ("members", "non_members"):
        docs = [doc_of[i] for i in s.chunks[role]]
        assert len(docs) == len(set(docs)) == 50
        assert all(first_of[doc_of[i]] == i for i in s.chunks[role])
    ref_docs = {doc_of[i] for i in s.chunks["reference"]}
    assert len(ref_docs) < 40  # whole documents, several chunks each
    with pytest.raises(InvalidInputError, match="chunks_per_document"):
        split_by_document(chunks, sizes, seed=1, chunks_per_document={"base": 1})


def test_coins_give_each_audited_document_its_own_fair_coin(chunks: TextRecords) -> None:
    """coins=(members, non_members): one pool of the two sizes' sum, then one fair coin per
    pooled document. The pool and the other roles do not depend on the coins; the member
    count is Binomial(pool, 1/2) over seeds (a fixed-size subset has variance 0), and every
    pooled document is a member about half the time."""
    sizes = {"members": 40, "non_members": 40, "reference": 30}
    caps = {"members": 1, "non_members": 1}
    fixed = split_by_document(chunks, sizes, seed=5, chunks_per_document=caps)
    coined = split_by_document(
        chunks, sizes, seed=5, chunks_per_document=caps, coins=("members", "non_members")
    )
    pool = {*fixed.chunks["members"], *fixed.chunks["non_members"]}
    assert {*coined.chunks["members"], *coined.chunks["non_members"]} == pool
    assert coined.chunks["reference"] == fixed.chunks["reference"]
    assert coined.to_dict()["coins"] == ["members", "non_members"]
    assert fixed.to_dict()["coins"] == []
    doc_of = dict(zip(chunks.ids, chunks.documents, strict=True))
    for role in ("members", "non_members"):
        assert coined.documents[role] == tuple(doc_of[i] for i in coined.chunks[role])

    counts, first_is_member = [], 0
    for seed in range(400):
        kw = {"seed": seed, "chunks_per_document": caps}
        s = split_by_document(chunks, sizes, coins=("members", "non_members"), **kw)
        counts.append(len(s.chunks["members"]))
        assert len(s.chunks["members"]) + len(s.chunks["non_members"]) == 80
        # the pool's first document (a fixed split's first member) goes either way
        first_is_member += split_by_document(chunks, sizes, **kw).chunks["members"][0] in set(
            s.chunks["members"]
        )
    # whole documents (no cap): the pool's last document is cut to the size asked before the
    # coins, so the two roles hold exactly that many chunks, apart in documents
    uncapped = split_by_document(chunks, sizes, seed=2, coins=("members", "non_members"))
    got = [uncapped.chunks[r] for r in ("members", "non_members")]
    assert len(got[0]) + len(got[1]) == 80 and not set(got[0]) & set(got[1])
    pool_only = split_by_document(chunks, {"pool": 80, "reference": 30}, seed=2)
    assert set(got[0]) | set(got[1]) == set(pool_only.chunks["pool"])
    assert not set(uncapped.documents["members"]) & set(uncapped.documents["non_members"])
    c = np.asarray(counts, float)
    assert abs(c.mean() - 40) < 4 * np.sqrt(20 / 400)  # Binomial(80, 1/2): variance 20
    assert 20 * 0.7 < c.var() < 20 * 1.3
    assert abs(first_is_member - 200) < 4 * 10  # Binomial(400, 1/2): sd 10


def test_coins_refuse_what_they_cannot_draw(chunks: TextRecords) -> None:
    sizes: dict[str, int | None] = {"members": 10, "non_members": 10, "base": None}
    with pytest.raises(InvalidInputError, match="coins"):
        split_by_document(chunks, sizes, seed=0, coins=("members", "reference"))
    with pytest.raises(InvalidInputError, match="coins"):
        split_by_document(chunks, sizes, seed=0, coins=("members", "members"))
    with pytest.raises(InvalidInputError, match="base"):
        split_by_document(chunks, sizes, seed=0, coins=("members", "base"))
    with pytest.raises(InvalidInputError, match=r"sizes\['non_members'\]"):
        split_by_document(
            chunks, {"members": 3, "non_members": 0}, seed=0, coins=("members", "non_members")
        )
    with pytest.raises(InvalidInputError, match="the coin roles' pool"):
        split_by_document(
            chunks,
            {"members": len(chunks), "non_members": 1},
            seed=0,
            coins=("members", "non_members"),
        )
    with pytest.raises(InvalidInputError, match="same cap"):
        split_by_document(
            chunks,
            sizes,
            seed=0,
            chunks_per_document={"members": 1},
            coins=("members", "non_members"),
        )
    with pytest.raises(InvalidInputError, match="drew no document"):
        for seed in range(50):  # a pool of 2 documents: both on one side within 50 seeds
            split_by_document(
                chunks,
                {"members": 1, "non_members": 1},
                seed=seed,
                chunks_per_document={"members": 1, "non_members": 1},
                coins=("members", "non_members"),
            )


def test_split_refuses_overlap_and_oversize(chunks: TextRecords) -> None:
    with pytest.raises(DesignError, match="disjoint"):
        TextSplit(chunks={"a": ("x",), "b": ("x",)}, documents={"a": ("d1",), "b": ("d2",)}, seed=0)
    with pytest.raises(InvalidInputError, match=r"sizes\['members'\]"):
        split_by_document(chunks, {"members": len(chunks) + 1}, seed=0)


def _jsonl(path: Path, rows: list[object]) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return path


def test_read_text_records_round_trip(tmp_path: Path, chunks: TextRecords) -> None:
    firsts = [i for i in chunks.ids if i.endswith("-c000")][:6]
    recs = chunks.subset(firsts).with_member(np.array([1, 1, 1, 0, 0, 0], bool))
    p = write_text_records(recs, tmp_path / "t.jsonl")
    back = read_text_records(p)
    assert back.ids == recs.ids and back.texts == recs.texts and back.documents == recs.documents
    assert back.member is not None and back.member.tolist() == [True] * 3 + [False] * 3


@pytest.mark.parametrize(
    ("rows", "match"),
    [
        (
            [{"id": 1, "text": "a b", "member": True}, {"id": 1, "text": "c", "member": False}],
            r"line 2\)\.id: expected unique ids, found '1' also on line 1",
        ),
        (
            [{"id": 1, "text": " ", "member": True}, {"id": 2, "text": "c", "member": False}],
            r"\.text: expected a non-empty string",
        ),
        (
            [{"id": 1, "text": "a", "member": True}, {"id": 2, "text": "c", "member": True}],
            r"data\.texts\.member: expected both members and non-members, found 2 members and 0",
        ),
        (
            [{"id": 1, "text": "a", "member": 1}, {"id": 2, "text": "c", "member": False}],
            r"\.member: expected true or false",
        ),
        (["{not json"], r"line 1\): expected one JSON object per line"),
        ([{"id": 1, "member": True}], r"expected a key 'text'"),
        ([{"id": 1, "text": "a", "member": True, "x": 0}], r"only the keys"),
        (
            [
                {"id": 1, "text": "a", "member": True, "document": "d"},
                {"id": 2, "text": "b", "member": False, "document": "d"},
            ],
            r"each document wholly member or wholly non-member",
        ),
    ],
)
def test_read_text_records_errors(tmp_path: Path, rows: list[object], match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        read_text_records(_jsonl(tmp_path / "t.jsonl", rows), name="data.texts")


def test_read_text_records_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match=r"data\.texts: expected an existing JSONL file"):
        read_text_records(tmp_path / "nope.jsonl", name="data.texts")
