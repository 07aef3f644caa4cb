"""Dataset record: validation, immutability, subsets, fingerprints."""

from __future__ import annotations

import numpy as np
import pytest

from privaudit.data import Dataset
from privaudit.errors import InvalidInputError


def make(n: int = 6, ids: object = None, name: str = "toy") -> Dataset:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 3))
    y = np.arange(n) % 3
    rid = np.array([f"r{k}" for k in range(n)]) if ids is None else ids
    return Dataset(name, rid, X, y, ("a", "b", "c"), ("x", "y", "z"), {"source": "test"})


def test_arrays_are_read_only_copies() -> None:
    X = np.zeros((2, 1))
    ds = Dataset("t", np.array([1, 2]), X, np.array([0, 1]), ("f",), ("a", "b"))
    X[0, 0] = 5.0  # the caller's array is not shared
    assert ds.X[0, 0] == 0.0
    for arr in (ds.X, ds.y, ds.record_ids):
        with pytest.raises(ValueError):
            arr[0] = 1
    assert ds.X.dtype == np.float64 and ds.y.dtype == np.int64 and ds.record_ids.dtype == np.int64


def test_copy_false_adopts_the_arrays_read_only() -> None:
    # a loader's or a subset's fresh arrays are taken as given (no second copy of a large
    # table) and made read-only; subsets share nothing with their parent
    X = np.arange(6.0).reshape(3, 2)
    ids = np.array(["a", "b", "c"])
    y = np.array([0, 1, 0])
    ds = Dataset("t", ids, X, y, ("f", "g"), ("n", "p"), copy=False)
    assert np.shares_memory(ds.X, X) and np.shares_memory(ds.record_ids, ids)
    assert not X.flags.writeable and not ds.y.flags.writeable
    sub = make(6).subset(["r4", "r1"])
    parent = make(6)
    assert not np.shares_memory(sub.X, parent.X) and not sub.X.flags.writeable
    with pytest.raises(ValueError):
        sub.X[0, 0] = 1.0
    np.testing.assert_array_equal(sub.X, parent.X[[4, 1]])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"record_ids": np.array(["a", "a"])}, "unique"),
        ({"X": np.array([[np.nan], [0.0]])}, "NaN"),
        ({"X": np.zeros((3, 1))}, "rows"),
        ({"y": np.array([0, 2])}, "labels in 0..1"),
        ({"y": np.array([0, -1])}, "non-negative"),
        ({"feature_names": ("f", "g")}, "feature_names"),
        ({"class_names": ("only",)}, "at least 2 classes"),
        ({"name": ""}, "name"),
    ],
)
def test_validation(kwargs: dict[str, object], match: str) -> None:
    base: dict[str, object] = {
        "name": "t",
        "record_ids": np.array(["a", "b"]),
        "X": np.zeros((2, 1)),
        "y": np.array([0, 1]),
        "feature_names": ("f",),
        "class_names": ("n", "p"),
    }
    base.update(kwargs)
    with pytest.raises(InvalidInputError, match=match):
        Dataset(**base)  # type: ignore[arg-type]


def test_subset_by_ids_keeps_order_and_classes() -> None:
    ds = make()
    sub = ds.subset(["r4", "r1"])
    assert sub.record_ids.tolist() == ["r4", "r1"]
    np.testing.assert_array_equal(sub.X, ds.X[[4, 1]])
    np.testing.assert_array_equal(sub.y, ds.y[[4, 1]])
    assert sub.n_classes == 3  # class "x" (label 0) absent but kept in the label space
    assert sub.info["parent"] == ds.fingerprint()


def test_subset_by_mask() -> None:
    ds = make()
    mask = np.array([True, False, True, False, False, True])
    assert ds.subset(mask).record_ids.tolist() == ["r0", "r2", "r5"]


@pytest.mark.parametrize(
    "bad", [["nope"], ["r1", "r1"], np.zeros(6, dtype=bool), np.ones(3, dtype=bool)]
)
def test_subset_errors(bad: object) -> None:
    with pytest.raises(InvalidInputError):
        make().subset(bad)  # type: ignore[arg-type]


def test_positions_roundtrip_and_int_ids() -> None:
    ds = make(ids=np.array([50, 10, 40, 30, 20, 60]))
    np.testing.assert_array_equal(ds.positions([20, 50]), [4, 0])
    with pytest.raises(InvalidInputError, match="unknown"):
        ds.positions([99])
    with pytest.raises(InvalidInputError, match="integer"):
        ds.positions(["20"])


def test_fingerprint_sensitivity() -> None:
    ds = make()
    same = make()
    assert ds.fingerprint() == same.fingerprint()
    assert len(ds.fingerprint()) == 64
    X2 = ds.X.copy()
    X2[0, 0] = np.nextafter(X2[0, 0], np.inf)  # one ulp
    changed = [
        Dataset("toy", ds.record_ids, X2, ds.y, ds.feature_names, ds.class_names),
        Dataset("toy", ds.record_ids, ds.X, (ds.y + 1) % 3, ds.feature_names, ds.class_names),
        Dataset("toy2", ds.record_ids, ds.X, ds.y, ds.feature_names, ds.class_names),
        Dataset("toy", ds.record_ids[::-1], ds.X, ds.y, ds.feature_names, ds.class_names),
        ds.subset(ds.record_ids[::-1]),
    ]
    prints = {c.fingerprint() for c in changed}
    assert len(prints) == len(changed) and ds.fingerprint() not in prints
    # string ids "1" vs integer id 1 must not collide
    a = Dataset("t", np.array([1, 2]), np.zeros((2, 1)), [0, 1], ("f",), ("a", "b"))
    b = Dataset("t", np.array(["1", "2"]), np.zeros((2, 1)), [0, 1], ("f",), ("a", "b"))
    assert a.fingerprint() != b.fingerprint()


def test_describe() -> None:
    d = make().describe()
    assert d["class_counts"] == {"x": 2, "y": 2, "z": 2}
    assert d["n_records"] == 6
