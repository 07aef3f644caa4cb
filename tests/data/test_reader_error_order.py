"""Exact messages, and the order in which problems are reported, of load_table's ``.npz``
reader and read_text_records (a line with several problems names the first one checked)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from privaudit.data import load_table
from privaudit.data.text import read_text_records
from privaudit.errors import InvalidInputError

X = np.arange(12.0).reshape(4, 3)
Y = np.array([0, 1, 0, 1])


@pytest.mark.parametrize(
    ("arrays", "id_column", "message"),
    [
        ({"A": X}, None, "npz file: expected an array named 'X' (features), found arrays ['A']"),
        (  # the label array is looked up before X is read
            {"X": X[:, 0], "t": Y},
            None,
            "label_column: expected one of the arrays 'X', 't', found 'y'",
        ),
        (
            {"X": X[:, 0], "y": Y},
            None,
            "X: expected a 2-dimensional feature array, found shape (4,)",
        ),
        (  # the label is checked before the id column is looked up
            {"X": X, "y": Y[:3]},
            "nope",
            "y: expected a 1-D array of 4 labels, found shape (3,)",
        ),
        ({"X": X, "y": Y}, "nope", "id_column: expected one of the arrays 'X', 'y', found 'nope'"),
        (
            {"X": X, "y": Y, "ids": np.arange(4)[:, None]},
            "ids",
            "ids: expected a 1-D array of 4 ids, found shape (4, 1)",
        ),
    ],
)
def test_npz_errors(
    tmp_path: Path, arrays: dict[str, np.ndarray], id_column: str | None, message: str
) -> None:
    p = tmp_path / "t.npz"
    np.savez(p, **arrays)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match=f"^{re.escape(message)}$"):
        load_table(p, "y", id_column=id_column)


def test_npz_with_ids_and_file_stem_name(tmp_path: Path) -> None:
    p = tmp_path / "arr.v1.npz"
    np.savez(p, X=X, y=Y, ids=np.array(["a", "b", "c", "d"]))
    ds = load_table(p, "y", id_column="ids")
    assert ds.name == "arr" and ds.feature_names == ("x0", "x1", "x2")
    assert ds.record_ids.tolist() == ["a", "b", "c", "d"]
    assert ds.info["source"] == "file arr.v1.npz"


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"id": None, "text": "", "member": 3}, ".id: expected a string or integer, found None"),
        (
            {"id": "a", "text": "", "member": 3},
            ".id: expected unique ids, found 'a' also on line 1",
        ),
        ({"id": "b", "text": "", "member": 3}, ".text: expected a non-empty string, found ''"),
        (
            {"id": "b", "text": "t", "member": 3, "document": None},
            ".member: expected true or false, found 3",
        ),
        (
            {"id": "b", "text": "t", "member": True, "document": 1.5},
            ".document: expected a string or integer, found 1.5",
        ),
    ],
)
def test_jsonl_line_reports_its_first_problem(
    tmp_path: Path, row: dict[str, object], message: str
) -> None:
    p = tmp_path / "t.jsonl"
    first = {"id": "a", "text": "x", "member": False}
    p.write_text(json.dumps(first) + "\n\n" + json.dumps(row) + "\n", encoding="utf-8")
    expected = "data.texts (t.jsonl line 3)" + message
    with pytest.raises(InvalidInputError, match=f"^{re.escape(expected)}$"):
        read_text_records(p)
