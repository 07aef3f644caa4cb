"""Input-handling edge cases of the data readers: JSONL line separators and a UTF-8 BOM
(read_text_records), ``.npz`` array names that clash with the feature columns, a corrupt
``.npz`` left open, and a file name with no suffix (load_table / read_frame)."""

from __future__ import annotations

import gc
import io
import json
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

from privaudit.data import load_table
from privaudit.data.table_files import open_npz, read_frame
from privaudit.data.text import read_text_records
from privaudit.errors import InvalidInputError

# --- read_text_records: JSON Lines are separated by "\n" only ------------------------------

#: Characters str.splitlines() breaks on besides "\n" and "\r". U+0085, U+2028 and U+2029
#: may stand raw inside a JSON string (json.dumps(..., ensure_ascii=False) writes them so);
#: the control characters cannot, but may stand on a line of their own.
_IN_STRINGS = ["\u2028", "\u2029", "\x85"]


def _row(i: int, text: str, member: bool) -> str:
    return json.dumps({"id": i, "text": text, "member": member}, ensure_ascii=False)


@pytest.mark.parametrize("sep", _IN_STRINGS)
def test_jsonl_text_may_hold_unicode_line_separators(tmp_path: Path, sep: str) -> None:
    p = tmp_path / "t.jsonl"
    texts = [f"first{sep}line", f"a{sep}{sep}b", f"{sep}lead", "plain"]
    rows = [_row(i, t, i % 2 == 0) for i, t in enumerate(texts)]
    p.write_text("\n".join(rows) + "\n", encoding="utf-8")
    assert sep in p.read_text(encoding="utf-8")  # raw, not escaped
    recs = read_text_records(p)
    assert recs.texts == tuple(texts)
    assert recs.ids == ("0", "1", "2", "3")


@pytest.mark.parametrize("sep", _IN_STRINGS)
def test_jsonl_line_numbers_count_newlines_only(tmp_path: Path, sep: str) -> None:
    p = tmp_path / "t.jsonl"
    lines = [_row(1, f"x{sep}y", True), _row(2, "z", False), _row(1, "dup", False)]
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    expected = "data.texts (t.jsonl line 3).id: expected unique ids, found '1' also on line 1"
    with pytest.raises(InvalidInputError, match=f"^{re.escape(expected)}$"):
        read_text_records(p)


@pytest.mark.parametrize("blank", ["\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\u2028", "\x85"])
def test_jsonl_blank_line_of_a_separator_is_one_line(tmp_path: Path, blank: str) -> None:
    """A line holding only such a character is one blank line (skipped), not two."""
    p = tmp_path / "t.jsonl"
    body = "\n".join([_row(1, "a", True), blank, _row(1, "b", False)]) + "\n"
    p.write_text(body, encoding="utf-8")
    with pytest.raises(InvalidInputError, match=r"\(t\.jsonl line 3\)\.id: expected unique ids"):
        read_text_records(p)


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
@pytest.mark.parametrize("trailing", [True, False])
def test_jsonl_crlf_blank_lines_and_trailing_newline(
    tmp_path: Path, newline: str, trailing: bool
) -> None:
    p = tmp_path / "t.jsonl"
    lines = [_row(1, "a", True), "", "   ", _row(2, "b", False), ""]
    body = newline.join(lines) + (newline if trailing else "")
    p.write_bytes(body.encode("utf-8"))
    recs = read_text_records(p)
    assert recs.ids == ("1", "2") and recs.texts == ("a", "b")
    p.write_bytes((body + _row(1, "c", False) + newline).encode("utf-8"))
    line = 6 if trailing else 5  # without a trailing newline, the last blank line is absorbed
    with pytest.raises(InvalidInputError, match=rf"line {line}\)\.id: .*also on line 1$"):
        read_text_records(p)


def test_jsonl_empty_and_blank_files_have_no_records(tmp_path: Path) -> None:
    for body in ["", "\n", "\r\n\r\n", "  \n\t\n"]:
        p = tmp_path / "t.jsonl"
        p.write_bytes(body.encode("utf-8"))
        with pytest.raises(InvalidInputError, match=r"expected at least one record, found no"):
            read_text_records(p)


# --- read_text_records: a UTF-8 byte-order mark ---------------------------------------------


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_jsonl_with_utf8_bom_is_read(tmp_path: Path, newline: str) -> None:
    p = tmp_path / "t.jsonl"
    body = newline.join([_row(1, "é", True), _row(2, "b", False)]) + newline
    p.write_bytes(b"\xef\xbb\xbf" + body.encode("utf-8"))
    recs = read_text_records(p)
    assert recs.ids == ("1", "2") and recs.texts == ("é", "b")
    # line numbers are unchanged by the mark
    p.write_bytes(b"\xef\xbb\xbf" + (body + _row(2, "c", True) + newline).encode("utf-8"))
    with pytest.raises(InvalidInputError, match=r"line 3\)\.id: .*'2' also on line 2$"):
        read_text_records(p)


def test_jsonl_bom_inside_the_file_is_still_an_error(tmp_path: Path) -> None:
    """Only a mark at the very start is skipped; one starting a later line is not JSON."""
    p = tmp_path / "t.jsonl"
    p.write_bytes((_row(1, "a", True) + "\n\ufeff" + _row(2, "b", False) + "\n").encode("utf-8"))
    with pytest.raises(InvalidInputError, match=r"line 2\): expected one JSON object per line"):
        read_text_records(p)


@pytest.mark.parametrize(
    "data",
    [
        '{"id": 1, "text": "café", "member": true}\n'.encode("latin-1"),
        '\ufeff{"id": 1, "text": "a", "member": true}\n'.encode("utf-16"),
    ],
)
def test_jsonl_not_utf8_is_still_an_error(tmp_path: Path, data: bytes) -> None:
    p = tmp_path / "t.jsonl"
    p.write_bytes(data)
    with pytest.raises(InvalidInputError, match=r"^data\.texts: expected UTF-8 text, found bytes"):
        read_text_records(p)


# --- load_table(.npz): label / id arrays named like a feature column -------------------------

_X = np.arange(12.0).reshape(4, 3)
_Y = np.array([0, 1, 0, 1])


@pytest.mark.parametrize(
    ("arrays", "label", "id_column", "message"),
    [
        (
            {"X": _X, "y": _Y, "x0": np.array([5, 6, 7, 8])},
            "y",
            "x0",
            "id_column: expected an array name other than the names x0 .. x2 of the columns "
            "of X, found 'x0' (it would replace feature column x0; rename the array)",
        ),
        (
            {"X": _X, "x2": _Y},
            "x2",
            None,
            "label_column: expected an array name other than the names x0 .. x2 of the columns "
            "of X, found 'x2' (it would replace feature column x2; rename the array)",
        ),
        (
            {"X": _X[:, :1], "x0": _Y, "ids": np.arange(4)},
            "x0",
            "ids",
            "label_column: expected an array name other than the name x0 of the column "
            "of X, found 'x0' (it would replace feature column x0; rename the array)",
        ),
    ],
)
def test_npz_array_named_like_a_feature_column_is_an_error(
    tmp_path: Path,
    arrays: dict[str, np.ndarray],
    label: str,
    id_column: str | None,
    message: str,
) -> None:
    p = tmp_path / "t.npz"
    np.savez(p, **arrays)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match=f"^{re.escape(message)}$"):
        load_table(p, label, id_column=id_column)


def test_npz_array_names_beyond_the_feature_columns_are_fine(tmp_path: Path) -> None:
    p = tmp_path / "t.npz"
    ids = np.array([5, 6, 7, 8])
    np.savez(p, X=_X, x3=_Y, x00=ids)  # x3 and x00 are no column of a 3-column X
    ds = load_table(p, "x3", id_column="x00")
    assert ds.feature_names == ("x0", "x1", "x2")
    np.testing.assert_array_equal(ds.X, _X)
    assert ds.record_ids.tolist() == ids.tolist() and ds.y.tolist() == _Y.tolist()


# --- open_npz: a corrupt archive is closed ---------------------------------------------------


def _npz_bytes() -> bytes:
    buf = io.BytesIO()
    np.savez(buf, X=_X, y=_Y)
    return buf.getvalue()


@pytest.mark.parametrize(
    "corrupt",
    [
        lambda b: b[: len(b) // 2],  # truncated: no central directory
        lambda b: b[:4],  # the zip magic only
        lambda b: b.replace(b"PK\x05\x06", b"\0" * 4),  # no end of central directory
    ],
)
def test_corrupt_npz_is_an_error_and_leaves_no_file_open(tmp_path: Path, corrupt) -> None:  # type: ignore[no-untyped-def]
    p = tmp_path / "t.npz"
    p.write_bytes(corrupt(_npz_bytes()))
    gc.collect()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        with pytest.raises(InvalidInputError, match=r"^path: expected a readable \.npz file"):
            open_npz(p)
        with pytest.raises(InvalidInputError, match=r"^path: expected a readable \.npz file"):
            load_table(p, "y")
        gc.collect()
    leaks = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
    assert leaks == []


def test_open_npz_closes_the_file_with_the_archive(tmp_path: Path) -> None:
    p = tmp_path / "t.npz"
    p.write_bytes(_npz_bytes())
    gc.collect()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        with open_npz(p) as z:
            assert sorted(z.files) == ["X", "y"]
            np.testing.assert_array_equal(z["X"], _X)
        assert load_table(p, "y").n_records == 4
        gc.collect()
    assert [w for w in caught if issubclass(w.category, ResourceWarning)] == []


def test_open_npz_refuses_pickled_arrays(tmp_path: Path) -> None:
    p = tmp_path / "t.npz"
    np.savez(p, X=_X, y=np.array([{"a": 1}] * 4, dtype=object))
    with pytest.raises(InvalidInputError, match=r"array 'y' of t\.npz: .*pickle"):
        load_table(p, "y")


# --- a file name with no suffix --------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "found"),
    [
        (".csv", "found '.csv', a name with no suffix (a leading dot starts no suffix)"),
        (".parquet", "found '.parquet', a name with no suffix (a leading dot starts no suffix)"),
        ("table", "found 'table', a name with no suffix"),
        (
            ".csv.gz",
            "found '.csv.gz', a name with the suffix .gz (a leading dot starts no suffix)",
        ),
    ],
)
def test_name_without_suffix_says_so(tmp_path: Path, name: str, found: str) -> None:
    p = tmp_path / name
    p.write_text("a,y\n1,0\n2,1\n", encoding="utf-8")
    with pytest.raises(InvalidInputError, match=f"^path: expected a .*, {re.escape(found)}$"):
        load_table(p, "y")
    with pytest.raises(InvalidInputError, match=f"^path: expected a .*, {re.escape(found)}$"):
        read_frame(p)


def test_name_with_a_suffix_is_named_as_before(tmp_path: Path) -> None:
    p = tmp_path / "a.txt"
    p.write_text("x", encoding="utf-8")
    with pytest.raises(
        InvalidInputError,
        match=r"^path: expected a \.csv, \.csv\.gz, \.parquet, \.pq or \.npz file, found a\.txt$",
    ):
        load_table(p, "y")
    with pytest.raises(
        InvalidInputError, match=r"^path: expected a \.csv, \.csv\.gz, \.parquet or \.pq table"
    ):
        read_frame(p)
