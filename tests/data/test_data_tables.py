"""User tables (CSV, Parquet, npz) and digits."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privaudit.data import load_digits, load_table
from privaudit.errors import InvalidInputError


def frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "pid": ["p3", "p1", "p2", "p9"],
            "age": [30, 40, 50, 60],
            "city": ["b", "a", "b", "c"],
            "smoker": [True, False, True, False],
            "label": ["yes", "no", "no", "yes"],
        }
    )


def test_digits() -> None:
    d = load_digits()
    assert d.X.shape == (1797, 64) and d.n_classes == 10
    assert d.X.min() == 0.0 and d.X.max() == 1.0
    assert np.bincount(d.y).tolist() == [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]
    assert load_digits().fingerprint() == d.fingerprint()


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_csv_parquet_roundtrip(tmp_path: Path, suffix: str) -> None:
    p = tmp_path / f"people{suffix}"
    f = frame()
    f.to_csv(p, index=False) if suffix == ".csv" else f.to_parquet(p)
    ds = load_table(p, "label", id_column="pid")
    assert ds.name == "people"
    assert ds.record_ids.tolist() == ["p3", "p1", "p2", "p9"]
    assert ds.class_names == ("no", "yes")
    assert ds.y.tolist() == [1, 0, 0, 1]
    assert ds.feature_names == ("age", "city=a", "city=b", "city=c", "smoker")
    np.testing.assert_array_equal(ds.X[:, 0], [30, 40, 50, 60])
    np.testing.assert_array_equal(ds.X[:, 1:4], [[0, 1, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]])
    np.testing.assert_array_equal(ds.X[:, 4], [1, 0, 1, 0])
    # deterministic: same file, same fingerprint
    assert load_table(p, "label", id_column="pid").fingerprint() == ds.fingerprint()


def test_generated_ids_feature_selection_and_standardize(tmp_path: Path) -> None:
    p = tmp_path / "t.csv"
    frame().to_csv(p, index=False)
    ds = load_table(p, "label", feature_columns=["age"], standardize=True)
    assert ds.record_ids.tolist() == ["t-000000", "t-000001", "t-000002", "t-000003"]
    assert ds.feature_names == ("age",)
    assert ds.X[:, 0].mean() == pytest.approx(0.0) and ds.X[:, 0].std() == pytest.approx(1.0)


def test_numeric_labels_sorted_numerically(tmp_path: Path) -> None:
    p = tmp_path / "n.csv"
    pd.DataFrame({"x": [1.0, 2.0, 3.0], "y": [10, 2, 10]}).to_csv(p, index=False)
    ds = load_table(p, "y")
    assert ds.class_names == ("2", "10") and ds.y.tolist() == [1, 0, 1]


def test_npz(tmp_path: Path) -> None:
    p = tmp_path / "arr.npz"
    np.savez(p, X=np.arange(6.0).reshape(3, 2), y=np.array([0, 1, 1]), ids=np.array([7, 8, 9]))
    ds = load_table(p, "y", id_column="ids")
    assert ds.record_ids.tolist() == [7, 8, 9] and ds.feature_names == ("x0", "x1")
    with pytest.raises(InvalidInputError, match="'X'"):
        np.savez(tmp_path / "bad.npz", A=np.zeros((2, 2)), y=[0, 1])
        load_table(tmp_path / "bad.npz", "y")
    with pytest.raises(InvalidInputError, match="arrays"):
        load_table(p, "label")


@pytest.mark.parametrize(
    ("mutate", "kwargs", "match"),
    [
        (lambda f: f, {"label_column": "target"}, r"one of the columns 'pid', 'age'"),
        (lambda f: f.assign(age=[1.0, np.nan, 2.0, 3.0]), {}, r"feature column 'age'.*NaN"),
        (lambda f: f.assign(label="yes"), {}, "at least 2 classes"),
        (lambda f: f.assign(pid=["a", "a", "b", "c"]), {"id_column": "pid"}, "duplicate"),
        (lambda f: f.assign(label=["yes", None, "no", "no"]), {}, "missing labels"),
        (lambda f: f.assign(city=["a", None, "b", "b"]), {}, "city.*missing"),
        (lambda f: f, {"id_column": "nope"}, "id_column"),
        (lambda f: f, {"feature_columns": ["age", "ghost"]}, "ghost"),
    ],
)
def test_errors(tmp_path: Path, mutate, kwargs, match) -> None:  # type: ignore[no-untyped-def]
    p = tmp_path / "e.parquet"
    mutate(frame()).to_parquet(p)
    args = {"label_column": "label"} | kwargs
    label = args.pop("label_column")
    with pytest.raises(InvalidInputError, match=match):
        load_table(p, label, **args)


def test_unsupported_files(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="existing file"):
        load_table(tmp_path / "missing.csv", "y")
    np.save(tmp_path / "a.npy", np.zeros((2, 2)))
    with pytest.raises(InvalidInputError, match=r"\.npz"):
        load_table(tmp_path / "a.npy", "y")
    (tmp_path / "a.txt").write_text("x")
    with pytest.raises(InvalidInputError, match="csv"):
        load_table(tmp_path / "a.txt", "y")
