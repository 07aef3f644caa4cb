"""Text records for language-model audits: documents, a split by document, chunks.

Membership inference on a language model (``../shared/notes/attacks.md`` section 4)
compares *member* texts (the fine-tuning data) with *non-member* texts of the same
source. Chunks of one document are not independent (same speakers, same topic, shared
phrases), so every split here is **by document**: all chunks of a document belong to
one role, and the roles are disjoint in documents (hence in chunks).

The bundled corpus is Tiny Shakespeare (Karpathy 2015, char-rnn,
``data/_bundled/tiny_shakespeare/input.txt.gz``, 1,115,394 characters, public domain
text; sha256 checked at every load, see ``../shared/data/README.md`` section 4).

Documents
---------
Tiny Shakespeare has no document markers. It is a sequence of *speeches* (a speaker
line such as ``"First Citizen:"`` followed by the speech), separated by one blank
line. :func:`shakespeare_documents` cuts the corpus at these speech boundaries only:
a document is a maximal run of consecutive speeches, grown speech by speech until it
holds at least ``doc_chars`` characters (the last document takes what is left). A
document is therefore a contiguous passage of the play text, never cut inside a
speech. Its id is ``"ts-d<index>"`` (index in corpus order, zero-padded to 5 digits).

Chunks
------
:func:`chunk_documents` cuts each document into chunks of at most ``chunk_chars``
characters at line boundaries (a line longer than ``chunk_chars`` is cut at
``chunk_chars``); a last chunk shorter than ``chunk_chars // 2`` is merged into the
chunk before it. The chunk id is ``"<document id>-c<index>"`` (stable: it depends
only on the corpus, ``doc_chars`` and ``chunk_chars``).

User texts
----------
:func:`read_text_records` reads a JSONL file with one object per line:
``{"id": ..., "text": ..., "member": true|false, "document": optional}``; without
``document`` every record is its own document.
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import fail
from privaudit.data._bundle import read_bundled
from privaudit.errors import DesignError, InvalidInputError, PrivauditError

__all__ = [
    "TINY_SHAKESPEARE_SHA256",
    "TextCorpusError",
    "TextRecords",
    "TextSplit",
    "chunk_documents",
    "load_tiny_shakespeare",
    "read_text_records",
    "shakespeare_documents",
    "split_by_document",
    "strings_sha256",
    "write_text_records",
]

#: sha256 of the bundled ``input.txt.gz`` (shared/data/README.md section 4).
TINY_SHAKESPEARE_SHA256 = "bed00f18e91cda6838950656f0a95e07e0f4dbe8649a4b959f7602a7e53fbc6e"


class TextCorpusError(PrivauditError):
    """The bundled text corpus is missing or does not match its checksum."""


def load_tiny_shakespeare() -> str:
    """The bundled Tiny Shakespeare text (checksum-verified), 1,115,394 characters.

    Raises
    ------
    TextCorpusError
        When the bundled file is missing or its sha256 differs.
    """
    raw = read_bundled(
        "tiny_shakespeare",
        "input.txt.gz",
        TINY_SHAKESPEARE_SHA256,
        what="bundled Tiny Shakespeare",
        error=TextCorpusError,
    )
    return gzip.decompress(raw).decode("utf-8")


def strings_sha256(strings: Sequence[str]) -> str:
    """sha256 of strings in order (each UTF-8, prefixed by its length: unambiguous)."""
    h = hashlib.sha256()
    for t in strings:
        b = t.encode("utf-8")
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.hexdigest()


def _ids_fingerprint(ids: Sequence[str]) -> str:
    """sha256 of the sorted ids, one per line."""
    return hashlib.sha256("\n".join(sorted(map(str, ids))).encode()).hexdigest()


@dataclasses.dataclass(frozen=True)
class TextRecords:
    """Texts with stable ids, their documents and (when known) their membership.

    ``ids[i]`` names ``texts[i]``, which comes from document ``documents[i]``;
    ``member[i]`` is True for a member (a text the target was trained on). Ids are
    unique; texts are non-empty.
    """

    ids: tuple[str, ...]
    texts: tuple[str, ...]
    documents: tuple[str, ...]
    member: NDArray[np.bool_] | None = None

    def __post_init__(self) -> None:
        n = len(self.ids)
        if len(self.texts) != n or len(self.documents) != n:
            raise fail(
                "texts/documents",
                f"one text and one document per id ({n})",
                f"{len(self.texts)} texts, {len(self.documents)} documents",
            )
        if n == 0:
            raise fail("ids", "at least one text record", "none")
        seen: set[str] = set()
        dups = [i for i in self.ids if i in seen or seen.add(i)]  # type: ignore[func-returns-value]
        if dups:
            raise fail("ids", "unique record ids", f"{len(dups)} duplicate(s), e.g. {dups[:3]}")
        empty = [self.ids[i] for i, t in enumerate(self.texts) if not t.strip()]
        if empty:
            raise fail("texts", "non-empty texts", f"{len(empty)} empty, e.g. ids {empty[:3]}")
        if self.member is not None:
            m = np.asarray(self.member, dtype=bool).copy()
            if m.shape != (n,):
                raise fail("member", f"one membership per record ({n})", m.shape)
            m.setflags(write=False)
            object.__setattr__(self, "member", m)

    def __len__(self) -> int:
        return len(self.ids)

    def subset(self, ids: Sequence[str]) -> TextRecords:
        """The records with these ids, in this order."""
        index = {k: i for i, k in enumerate(self.ids)}
        try:
            pos = [index[k] for k in ids]
        except KeyError as exc:
            raise fail("ids", "ids of these records", f"unknown id {exc}") from None
        return TextRecords(
            ids=tuple(self.ids[p] for p in pos),
            texts=tuple(self.texts[p] for p in pos),
            documents=tuple(self.documents[p] for p in pos),
            member=None if self.member is None else self.member[pos],
        )

    def with_member(self, member: NDArray[np.bool_]) -> TextRecords:
        """The same records with this membership."""
        return dataclasses.replace(self, member=np.asarray(member, dtype=bool))

    def texts_hash(self) -> str:
        """sha256 of ids and texts in order (a cache key of per-text results)."""
        return strings_sha256([x for pair in zip(self.ids, self.texts, strict=True) for x in pair])

    def counts(self) -> dict[str, int]:
        """Numbers of member/non-member records and documents (membership must be known)."""
        if self.member is None:
            raise fail("member", "records with a known membership", "None")
        docs = np.asarray(self.documents, dtype=object)
        return {
            "n_member_chunks": int(self.member.sum()),
            "n_non_member_chunks": int((~self.member).sum()),
            "n_member_documents": len(set(docs[self.member].tolist())),
            "n_non_member_documents": len(set(docs[~self.member].tolist())),
        }


def shakespeare_documents(text: str | None = None, *, doc_chars: int = 1200) -> dict[str, str]:
    """Tiny Shakespeare cut into documents at speech boundaries (module docstring).

    Parameters
    ----------
    text : str, optional
        The corpus; default :func:`load_tiny_shakespeare`.
    doc_chars : int
        A document grows speech by speech until it has at least this many characters.

    Returns
    -------
    dict
        Document id -> text, in corpus order.
    """
    if doc_chars < 1:
        raise fail("doc_chars", "a positive number of characters", doc_chars)
    corpus = load_tiny_shakespeare() if text is None else text
    speeches = [s.strip("\n") for s in corpus.split("\n\n")]
    speeches = [s for s in speeches if s.strip()]
    docs: dict[str, str] = {}
    current: list[str] = []
    size = 0
    for s in speeches:
        current.append(s)
        size += len(s) + 2
        if size >= doc_chars:
            docs[f"ts-d{len(docs):05d}"] = "\n\n".join(current)
            current, size = [], 0
    if current:
        docs[f"ts-d{len(docs):05d}"] = "\n\n".join(current)
    return docs


def _chunk_lines(text: str, chunk_chars: int) -> list[str]:
    lines: list[str] = []
    for line in text.split("\n"):
        while len(line) > chunk_chars:
            lines.append(line[:chunk_chars])
            line = line[chunk_chars:]
        lines.append(line)
    chunks: list[str] = []
    current = ""
    for line in lines:
        candidate = line if not current else current + "\n" + line
        if len(candidate) > chunk_chars and current:
            chunks.append(current)
            current = line
        else:
            current = candidate
    if current.strip():
        if chunks and len(current) < chunk_chars // 2:
            chunks[-1] = chunks[-1] + "\n" + current
        else:
            chunks.append(current)
    return [c for c in chunks if c.strip()]


def chunk_documents(documents: Mapping[str, str], *, chunk_chars: int = 256) -> TextRecords:
    """Cut every document into chunks at line boundaries (module docstring); ids are stable.

    Returns
    -------
    TextRecords
        One record per chunk (membership unknown), documents in the given order.
    """
    if chunk_chars < 8:
        raise fail("chunk_chars", "at least 8 characters per chunk", chunk_chars)
    ids: list[str] = []
    texts: list[str] = []
    docs: list[str] = []
    for doc_id, text in documents.items():
        for j, chunk in enumerate(_chunk_lines(text, chunk_chars)):
            ids.append(f"{doc_id}-c{j:03d}")
            texts.append(chunk)
            docs.append(str(doc_id))
    return TextRecords(ids=tuple(ids), texts=tuple(texts), documents=tuple(docs))


@dataclasses.dataclass(frozen=True)
class TextSplit:
    """Disjoint roles (``members``, ``non_members``, ``reference``, ``base``, ...) of chunk
    ids, split by document; ``documents[role]`` are the documents each role drew from.

    Disjointness (no document, hence no chunk, in two roles) is checked on construction.
    """

    chunks: dict[str, tuple[str, ...]]
    documents: dict[str, tuple[str, ...]]
    seed: int
    #: the two roles drawn by one fair coin per document (``split_by_document(coins=...)``);
    #: empty when every role is a subset of fixed size
    coins: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        roles = list(self.chunks)
        for what, groups in (("documents", self.documents), ("chunks", self.chunks)):
            owner: dict[str, str] = {}
            for role in roles:
                for x in groups.get(role, ()):
                    if x in owner and owner[x] != role:
                        raise DesignError(
                            f"split: expected disjoint roles, found {what[:-1]} {x!r} in both "
                            f"{owner[x]!r} and {role!r}"
                        )
                    owner[x] = role
                if len(set(groups.get(role, ()))) != len(groups.get(role, ())):
                    raise DesignError(f"split: role {role!r} lists a {what[:-1]} twice")

    def fingerprints(self) -> dict[str, str]:
        """sha256 of each role's sorted chunk ids."""
        return {role: _ids_fingerprint(ids) for role, ids in self.chunks.items()}

    def to_dict(self, *, with_ids: bool = True) -> dict[str, Any]:
        """The split for ``results.json``: per role the counts, the fingerprint and the ids."""
        out: dict[str, Any] = {
            "seed": self.seed,
            "by": "document",
            "coins": list(self.coins),
            "roles": {},
        }
        fps = self.fingerprints()
        for role, ids in self.chunks.items():
            entry: dict[str, Any] = {
                "n_chunks": len(ids),
                "n_documents": len(self.documents[role]),
                "sha256": fps[role],
            }
            if with_ids:
                entry["documents"] = list(self.documents[role])
                entry["chunk_ids"] = list(ids)
            out["roles"][role] = entry
        return out


def split_by_document(
    records: TextRecords,
    sizes: Mapping[str, int | None],
    *,
    seed: int,
    chunks_per_document: Mapping[str, int] | None = None,
    coins: tuple[str, str] | None = None,
) -> TextSplit:
    """Split chunk records into disjoint roles by document, seeded.

    Documents are put in a random order (``numpy.random.default_rng(seed)``
    permutation); each role, in the order of ``sizes``, takes whole documents from the
    front until it holds at least ``sizes[role]`` chunks, then keeps the first
    ``sizes[role]`` of them (the chunks left over from its last document go to no role,
    so roles stay disjoint in documents). A size of ``None`` takes every document left.

    ``chunks_per_document[role]`` caps how many chunks (the first ones) that role takes
    from each of its documents; the rest of the document goes to no role. With 1 for the
    audited roles, each audited chunk is its own unit of randomisation (the one-run bound
    then needs no group-privacy division, :func:`privaudit.stats.attack_bounds.grouped_one_run_bounds`)
    while members and non-members still never share a document.

    ``coins=(a, b)`` (e.g. ``("members", "non_members")``) draws those two roles the way
    Steinke et al.'s one-run bound needs (Steinke, Nasr & Jagielski 2023, Algorithm 1:
    one independent fair inclusion coin per audited example): at the place of ``a`` in
    ``sizes`` one pool of ``sizes[a] + sizes[b]`` chunks is taken as above (both roles need
    the same cap), then every document of the pool goes to ``a`` or ``b`` by its own fair
    coin (the same generator, after the permutation). The two roles' sizes are then
    expectations: their chunk counts are random (Binomial over the pool's documents when
    each document gives one chunk). Without ``coins`` every role has its exact size, a
    uniformly random subset of fixed size, which that proof does not cover.

    Raises
    ------
    InvalidInputError
        When the corpus has too few chunks for the sizes asked, or ``coins`` names roles
        that are not two distinct sized roles with the same cap, or a coin role drew no
        document.
    """
    if not sizes:
        raise fail("sizes", "at least one role", "none")
    by_doc: dict[str, list[str]] = {}
    for rid, doc in zip(records.ids, records.documents, strict=True):
        by_doc.setdefault(doc, []).append(rid)
    doc_ids = list(by_doc)
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(doc_ids))
    queue = [doc_ids[i] for i in order]
    caps = dict(chunks_per_document or {})
    for role, cap in caps.items():
        if role not in sizes or cap < 1:
            raise fail(f"chunks_per_document[{role!r}]", "a positive cap of a role in sizes", cap)
    if coins is not None:
        _check_coin_roles(coins, sizes, caps)
    chunks: dict[str, tuple[str, ...]] = {}
    documents: dict[str, tuple[str, ...]] = {}
    pos = 0
    for role, size in sizes.items():
        if size is not None and size < 1:
            raise fail(f"sizes[{role!r}]", "a positive number of chunks or None", size)
        if coins is not None and role == coins[1]:
            continue  # drawn with coins[0]'s pool
        pooled = coins is not None and role == coins[0]
        name = f"sizes[{role!r}]"
        if coins is not None and pooled:
            size = int(sizes[coins[0]] or 0) + int(sizes[coins[1]] or 0)
            name = f"sizes[{coins[0]!r}] + sizes[{coins[1]!r}] (the coin roles' pool)"
        got, docs, pos = _take_documents(queue, pos, by_doc, size, caps.get(role))
        if size is not None and len(got) < size:
            raise InvalidInputError(
                f"{name}: expected at most the {len(got)} chunks left in the corpus "
                f"for this role, found {size} asked (sizes {dict(sizes)}, "
                f"{len(records)} chunks in {len(doc_ids)} documents)"
            )
        if not got:
            raise InvalidInputError(f"{name}: no documents left for this role")
        if coins is not None and pooled:
            for side, (ids, of_side) in _coin_sides(rng, docs, got[:size], by_doc, coins).items():
                chunks[side], documents[side] = ids, of_side
            continue
        chunks[role] = tuple(got if size is None else got[:size])
        documents[role] = tuple(docs)
    chunks = {r: chunks[r] for r in sizes}  # the order of ``sizes``
    documents = {r: documents[r] for r in sizes}
    return TextSplit(chunks=chunks, documents=documents, seed=int(seed), coins=tuple(coins or ()))


def _check_coin_roles(
    coins: tuple[str, str], sizes: Mapping[str, int | None], caps: Mapping[str, int]
) -> None:
    """``coins`` of :func:`split_by_document`: two distinct roles of ``sizes``, both sized,
    with the same cap."""
    if len(coins) != 2 or coins[0] == coins[1] or not set(coins) <= set(sizes):
        raise fail("coins", "two distinct roles of sizes", coins)
    for role in coins:
        size = sizes[role]
        if size is None or size < 1:
            raise fail(f"sizes[{role!r}]", "a positive number of chunks for a coin role", size)
    if caps.get(coins[0]) != caps.get(coins[1]):
        raise fail(
            "chunks_per_document",
            f"the same cap for the coin roles {coins[0]!r} and {coins[1]!r}",
            {r: caps.get(r) for r in coins},
        )


def _coin_sides(
    rng: np.random.Generator,
    docs: Sequence[str],
    kept: Sequence[str],
    by_doc: Mapping[str, Sequence[str]],
    coins: tuple[str, str],
) -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    """The pooled documents ``docs`` sent to ``coins[0]`` or ``coins[1]`` by one fair coin
    each (``rng``): per side, its chunks (those of ``kept``) and its documents."""
    heads = rng.random(len(docs)) < 0.5
    keep = set(kept)
    out = {}
    for side, mask in ((coins[0], heads), (coins[1], ~heads)):
        mine = tuple(d for d, h in zip(docs, mask, strict=True) if h)
        ids = tuple(i for d in mine for i in by_doc[d] if i in keep)
        if not ids:
            raise InvalidInputError(
                f"coins: role {side!r} drew no document of the {len(docs)} pooled; "
                "audit more documents"
            )
        out[side] = (ids, mine)
    return out


def _take_documents(
    queue: Sequence[str],
    pos: int,
    by_doc: Mapping[str, Sequence[str]],
    size: int | None,
    cap: int | None,
) -> tuple[list[str], list[str], int]:
    """Whole documents from ``queue[pos:]`` (at most ``cap`` chunks of each) until at least
    ``size`` chunks (``None``: every document left); the chunks, documents and next position."""
    got: list[str] = []
    docs: list[str] = []
    while pos < len(queue) and (size is None or len(got) < size):
        docs.append(queue[pos])
        got += by_doc[queue[pos]][:cap]
        pos += 1
    return got, docs, pos


def read_text_records(
    path: str | Path, *, name: str = "data.texts", require_both: bool = True
) -> TextRecords:
    """Read a user's texts from JSONL: ``id``, ``text``, ``member`` (and optional ``document``).

    Lines end at ``"\\n"`` (or ``"\\r\\n"``) only, and a UTF-8 byte-order mark at the
    start is skipped; blank lines are skipped. Validated at the boundary: every other line
    a JSON object with a string or integer ``id``, a non-empty string ``text``, a boolean
    ``member``; ids unique; both classes present (members only is accepted with
    ``require_both=False``: PANORAMIA needs no non-members).

    Raises
    ------
    InvalidInputError
        Naming ``name``, the line and the problem.
    """
    p = Path(path)
    if not p.is_file():
        raise fail(name, "an existing JSONL file", f"no file at {p}")
    lines = _read_utf8_lines(p, name)
    ids, texts, docs, member = _parse_records(lines, name, p)
    if not ids:
        raise fail(name, "at least one record", f"no records in {p}")
    _check_membership(docs, member, name, p, require_both)
    return TextRecords(
        ids=tuple(ids), texts=tuple(texts), documents=tuple(docs), member=np.asarray(member)
    )


def _read_utf8_lines(p: Path, name: str) -> list[str]:
    r"""The lines of a UTF-8 text file (other bytes are an error naming ``name``).

    A byte-order mark at the start is skipped. Lines end at ``"\n"`` only, as JSON Lines
    are defined (one ``"\r"`` before it is dropped: ``"\r\n"`` files read the same), not
    at the other breaks of :meth:`str.splitlines` (U+2028, U+2029 and U+0085, which
    ``json.dumps(..., ensure_ascii=False)`` writes raw inside strings; ``"\x0b"``,
    ``"\x0c"``, ``"\x1c"``-``"\x1e"``). Item ``k`` of the list is line ``k + 1`` of the
    file; the newline ending the last line opens no extra line.
    """
    try:
        text = p.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise fail(name, "UTF-8 text", f"bytes that are not UTF-8 in {p} ({exc.reason})") from None
    lines = text.split("\n")
    if lines[-1] == "":  # the newline ending the last line (or an empty file)
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def _parse_records(
    lines: list[str], name: str, p: Path
) -> tuple[list[str], list[str], list[str], list[bool]]:
    """The ids, texts, documents and memberships of the non-blank lines, each line
    validated in turn (an error names the line); ids unique across lines."""
    ids: list[str] = []
    texts: list[str] = []
    docs: list[str] = []
    member: list[bool] = []
    first_line: dict[str, int] = {}
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{name} ({p.name} line {lineno})"
        obj = _json_record(line, where)
        rid = _record_id(obj, where, first_line)
        first_line[rid] = lineno
        text, m, doc = _record_fields(obj, where, rid)
        ids.append(rid)
        texts.append(text)
        docs.append(doc)
        member.append(m)
    return ids, texts, docs, member


def _json_record(line: str, where: str) -> dict[str, Any]:
    """One line as a JSON object with the keys id, text, member (document optional)."""
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise fail(where, "one JSON object per line", f"invalid JSON ({exc.msg})") from None
    if not isinstance(obj, dict):
        raise fail(where, "a JSON object", type(obj).__name__)
    extra = set(obj) - {"id", "text", "member", "document"}
    if extra:
        raise fail(where, "only the keys id, text, member, document", sorted(extra))
    for key in ("id", "text", "member"):
        if key not in obj:
            raise fail(where, f"a key {key!r}", f"keys {sorted(obj)}")
    return obj


def _record_id(obj: dict[str, Any], where: str, first_line: dict[str, int]) -> str:
    """The record's id as a string (a string or integer not on an earlier line)."""
    rid = obj["id"]
    if isinstance(rid, bool) or not isinstance(rid, str | int):
        raise fail(f"{where}.id", "a string or integer", repr(rid))
    rid = str(rid)
    if rid in first_line:
        raise fail(
            f"{where}.id",
            "unique ids",
            f"{rid!r} also on line {first_line[rid]}",
        )
    return rid


def _record_fields(obj: dict[str, Any], where: str, rid: str) -> tuple[str, bool, str]:
    """The record's non-empty text, boolean membership and document (a string or
    integer, as a string; default its id)."""
    text = obj["text"]
    if not isinstance(text, str) or not text.strip():
        raise fail(f"{where}.text", "a non-empty string", repr(text)[:40])
    m = obj["member"]
    if not isinstance(m, bool):
        raise fail(f"{where}.member", "true or false", repr(m))
    doc = obj.get("document", rid)
    if isinstance(doc, bool) or not isinstance(doc, str | int):
        raise fail(f"{where}.document", "a string or integer", repr(doc))
    return text, m, str(doc)


def _check_membership(
    docs: list[str], member: list[bool], name: str, p: Path, require_both: bool
) -> None:
    """Both classes present (members only with ``require_both=False``) and each document
    wholly member or wholly non-member (the split is by document)."""
    n_in = sum(member)
    if n_in == 0 or (require_both and n_in == len(member)):
        raise fail(
            f"{name}.member",
            "both members and non-members" if require_both else "at least one member",
            f"{n_in} members and {len(member) - n_in} non-members in {p.name}",
        )
    mixed = _documents_in_both_classes(docs, member)
    if mixed:
        raise fail(
            f"{name}.document",
            "each document wholly member or wholly non-member (split by document)",
            f"{len(mixed)} document(s) in both classes, e.g. {mixed[:3]}",
        )


def _documents_in_both_classes(docs: Sequence[str], member: Sequence[bool]) -> list[str]:
    seen: dict[str, set[bool]] = {}
    for d, m in zip(docs, member, strict=True):
        seen.setdefault(d, set()).add(bool(m))
    return [d for d, s in seen.items() if len(s) == 2]


def write_text_records(records: TextRecords, path: str | Path) -> Path:
    """Write records with known membership as JSONL (the format :func:`read_text_records` reads)."""
    if records.member is None:
        raise fail("records.member", "records with a known membership", "None")
    p = Path(path)
    with p.open("w", encoding="utf-8") as fh:
        for i, t, d, m in zip(
            records.ids, records.texts, records.documents, records.member, strict=True
        ):
            fh.write(json.dumps({"id": i, "text": t, "member": bool(m), "document": d}) + "\n")
    return p
