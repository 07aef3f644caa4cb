"""scikit-learn's digits and user tables (CSV, Parquet, NumPy ``.npz``) as :class:`Dataset`.

User tables are converted with one documented, deterministic rule set:

* **Labels** (the ``label_column``): any values (numbers, strings, booleans); the
  distinct values are sorted (numbers numerically, otherwise as strings) and label ``k``
  is the k-th of them; ``class_names`` are their string forms. Missing labels, or a
  single class, are errors.
* **Numeric feature columns** (integer, float, boolean dtypes) are used as float64,
  unscaled (pass ``standardize=True`` to standardise with the table's mean and
  population std). A NaN or infinite value is an error naming the column.
* **Categorical feature columns** (strings, pandas categoricals, objects) are one-hot
  encoded with one column per distinct value, values sorted as strings; feature names
  are ``"column=value"``. Missing values are an error (decide how to impute before
  auditing: the imputation is part of the model).
* **Ids**: the ``id_column`` when given (unique, no missing values; not a feature),
  otherwise ``f"{stem}-{row:06d}"`` with ``row`` the 0-based data row of the file.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from privaudit._validation import fail
from privaudit.data.dataset import Dataset
from privaudit.data.table_files import (
    describe_name,
    npz_array,
    open_npz,
    read_csv_file,
    read_frame,
    read_parquet_file,
)

# pandas is imported by the functions that read a table, not with this module: the
# bundled datasets and every audit that reads none do not pay its import (0.2-0.3 s)
if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "append_records",
    "encode_like",
    "load_digits",
    "load_table",
    "read_frame",
    "table_from_frame",
]


def load_digits() -> Dataset:
    """scikit-learn's 8x8 handwritten digits (UCI Optical Recognition, test part).

    Returns
    -------
    Dataset
        1,797 records, 64 features (pixel intensities 0..16 divided by 16, so in
        [0, 1]), 10 classes ``"0" .. "9"``, ids ``"digits-XXXX"`` (0-based row of
        :func:`sklearn.datasets.load_digits`).
    """
    from sklearn.datasets import load_digits as _sk_load_digits

    bunch = _sk_load_digits()
    X = np.asarray(bunch.data, dtype=np.float64) / 16.0
    y = np.asarray(bunch.target, dtype=np.int64)
    ids = np.array([f"digits-{k:04d}" for k in range(X.shape[0])])
    feats = tuple(f"pixel_{r}_{c}" for r in range(8) for c in range(8))
    info = {
        "source": "scikit-learn load_digits (UCI Optical Recognition of Handwritten Digits)",
        "preprocessing": ["pixel values 0..16 divided by 16"],
        "id_scheme": "digits-{k:04d}, k = 0-based row of sklearn.datasets.load_digits()",
    }
    return Dataset("digits", ids, X, y, feats, tuple(str(k) for k in range(10)), info)


def _sorted_unique(values: pd.Series, what: str) -> list[Any]:
    import pandas as pd

    uniq = pd.unique(values)
    try:
        if all(
            isinstance(v, int | float | np.integer | np.floating | bool | np.bool_) for v in uniq
        ):
            return sorted(uniq.tolist())
    except TypeError:  # pragma: no cover - mixed incomparable numbers
        pass
    return sorted(uniq.tolist(), key=str)


#: A label with fewer records per class than this, on average, is not a class label.
_MIN_RECORDS_PER_CLASS = 5
#: A text column whose values are numbers with more distinct values than this is numeric.
_MAX_NUMERIC_CODES = 20
#: One-hot encoding a text column into more features than this draws a warning.
_MANY_CATEGORIES = 100


def _check_class_labels(lab: pd.Series, classes: list[Any], label_column: str) -> None:
    """A continuous target (non-integer numbers, or hardly any record per value) is an error.

    privaudit audits classifiers; a regression target read as class labels would give
    hundreds of classes of one or two records each, and an audit of nothing.
    """
    import pandas as pd

    where = f"label column {label_column!r}"
    if pd.api.types.is_float_dtype(lab):
        v = lab.to_numpy(dtype=np.float64)
        frac = np.isfinite(v) & (v != np.round(v))
        if frac.any():
            raise fail(
                where,
                "class labels (integers or names)",
                f"{int(frac.sum())} non-integer number(s), e.g. {float(v[frac][0])!r}: a continuous "
                "target? privaudit audits classifiers",
            )
    n = len(lab)
    if len(classes) > 2 and len(classes) * _MIN_RECORDS_PER_CLASS > n:
        raise fail(
            where,
            f"class labels with at least {_MIN_RECORDS_PER_CLASS} records per class on average",
            f"{len(classes)} distinct values among {n} records (a continuous target or an id "
            "column? privaudit audits classifiers)",
        )


def _check_categorical(s: pd.Series, col: str) -> None:
    """A text column that is really numeric with a few stray strings is an error.

    ``pandas`` reads a numeric column with one typo (``"12a"``, ``"?"``) as text, which
    one-hot encoding would silently turn into one feature per distinct number. Text
    columns with many distinct values are legal but draw a
    :class:`~privaudit.errors.PrivauditWarning` (often an id or a free-text column).
    """
    import warnings

    import pandas as pd

    from privaudit.errors import PrivauditWarning

    as_num = pd.to_numeric(s, errors="coerce")
    is_num = as_num.notna().to_numpy()
    n_num = int(is_num.sum())
    if 0 < n_num < len(s) and n_num * 2 >= len(s):
        distinct = int(as_num[is_num].nunique())
        bad = s[~is_num]
        rows = np.flatnonzero(~is_num)
        if distinct > _MAX_NUMERIC_CODES:
            raise fail(
                f"feature column {col!r}",
                "numbers in a numeric column",
                f"{len(bad)} value(s) that are not numbers among {n_num} numbers, e.g. "
                f"{bad.iloc[0]!r} in data row {int(rows[0]) + 1} (fix or drop them; read as "
                f"text the column would be one-hot encoded into {distinct + bad.nunique()} features)",
            )
        warnings.warn(  # a few numeric codes and some words: a category, or a typo?
            f"feature column {col!r}: {n_num} values are numbers and {len(bad)} are not "
            f"(e.g. {bad.iloc[0]!r} in data row {int(rows[0]) + 1}); the column is read as "
            f"text and one-hot encoded into {distinct + bad.nunique()} features",
            PrivauditWarning,
            stacklevel=3,
        )
    n_cats = int(s.astype(str).nunique())
    if n_cats > _MANY_CATEGORIES:
        warnings.warn(
            f"feature column {col!r}: {n_cats} distinct text values become {n_cats} one-hot "
            "features (an id or free-text column? drop it, or give it as id_column)",
            PrivauditWarning,
            stacklevel=3,
        )


def table_from_frame(
    frame: pd.DataFrame,
    label_column: str,
    *,
    name: str,
    id_column: str | None = None,
    feature_columns: Sequence[str] | None = None,
    standardize: bool = False,
    source: str = "DataFrame",
) -> Dataset:
    """Convert a pandas DataFrame to a :class:`Dataset` (rules in the module docstring).

    Parameters
    ----------
    frame : pandas.DataFrame
    label_column : str
        Column holding the class labels.
    name : str
        Dataset name (also the prefix of generated ids).
    id_column : str, optional
        Column of unique record ids; otherwise ids are ``f"{name}-{row:06d}"``.
    feature_columns : sequence of str, optional
        Columns to use as features (default: every column but the label and id).
    standardize : bool
        Standardise numeric columns with the table's mean and population std.
    source : str
        Provenance recorded in ``info["source"]``.
    """
    cols = [str(c) for c in frame.columns]
    frame = frame.copy()
    frame.columns = cols
    if len(set(cols)) != len(cols):
        raise fail("columns", "unique column names", sorted({c for c in cols if cols.count(c) > 1}))
    if label_column not in cols:
        raise fail(
            "label_column", "one of the columns " + ", ".join(map(repr, cols)), repr(label_column)
        )
    if id_column is not None and id_column not in cols:
        raise fail("id_column", "one of the columns " + ", ".join(map(repr, cols)), repr(id_column))
    if id_column is not None and id_column == label_column:
        raise fail("id_column", "a column other than the label column", repr(id_column))
    if len(frame) == 0:
        raise fail("table", "at least one row", "an empty table")
    ids_arr = _record_ids(frame, id_column, name)
    classes, y = _class_labels(frame[label_column], label_column)
    feats = _feature_names(cols, feature_columns, label_column, id_column)
    blocks: list[np.ndarray] = []
    names: list[str] = []
    encoding: dict[str, Any] = {}
    for col in feats:
        block, col_names, encoding[col] = _encode_column(frame[col], col, standardize)
        blocks.append(block)
        names.extend(col_names)
    X = np.hstack(blocks)
    info = {
        "source": source,
        "label_column": label_column,
        "id_column": id_column,
        "class_values": [str(c) for c in classes],
        "encoding": encoding,
        "preprocessing": [
            "numeric columns as float64"
            + (", standardised (ddof=0)" if standardize else ", unscaled"),
            "categorical columns one-hot, categories sorted as strings",
        ],
    }
    return Dataset(name, ids_arr, X, y, tuple(names), tuple(str(c) for c in classes), info)


def _record_ids(frame: pd.DataFrame, id_column: str | None, name: str) -> np.ndarray:
    """The record ids: the id column's (integers kept, anything else as strings; no missing,
    no duplicates), or ``f"{name}-{row:06d}"`` without one."""
    if id_column is None:
        return np.array([f"{name}-{k:06d}" for k in range(len(frame))])
    raw_ids = frame[id_column]
    if raw_ids.isna().any():
        raise fail(
            f"id column {id_column!r}", "no missing ids", f"{int(raw_ids.isna().sum())} missing"
        )
    ids_arr = raw_ids.to_numpy()
    if ids_arr.dtype.kind not in "iu":
        ids_arr = raw_ids.astype(str).to_numpy()
    uniq, counts = np.unique(ids_arr, return_counts=True)
    if uniq.size != ids_arr.size:
        dup = uniq[counts > 1][:5].tolist()
        raise fail(
            f"id column {id_column!r}",
            "unique ids",
            f"{ids_arr.size - uniq.size} duplicate(s), e.g. {dup}",
        )
    return ids_arr


def _class_labels(lab: pd.Series, label_column: str) -> tuple[list[Any], np.ndarray]:
    """The sorted classes of the label column (no missing labels, at least two classes,
    each checked by :func:`_check_class_labels`) and each record's class index."""
    if lab.isna().any():
        raise fail(
            f"label column {label_column!r}",
            "no missing labels",
            f"{int(lab.isna().sum())} missing",
        )
    classes = _sorted_unique(lab, "labels")
    if len(classes) < 2:
        raise fail(f"label column {label_column!r}", "at least 2 classes", f"only {classes!r}")
    _check_class_labels(lab, classes, label_column)
    index = {c: k for k, c in enumerate(classes)}
    return classes, np.array([index[v] for v in lab.tolist()], dtype=np.int64)


def _feature_names(
    cols: list[str],
    feature_columns: Sequence[str] | None,
    label_column: str,
    id_column: str | None,
) -> list[str]:
    """The feature columns: the given ones (checked: known, unique, not the label), or every
    column but the label and id columns; at least one."""
    if feature_columns is None:
        feats = [c for c in cols if c not in (label_column, id_column)]
    else:
        feats = [str(c) for c in feature_columns]
        unknown = [c for c in feats if c not in cols]
        if unknown:
            raise fail(
                "feature_columns", "columns of the table " + ", ".join(map(repr, cols)), unknown
            )
        if label_column in feats:
            raise fail("feature_columns", "no label column among the features", repr(label_column))
        if len(set(feats)) != len(feats):
            raise fail("feature_columns", "unique column names", feats)
    if not feats:
        raise fail("feature_columns", "at least one feature column", "none")
    return feats


def _encode_column(
    s: pd.Series, col: str, standardize: bool
) -> tuple[np.ndarray, list[str], dict[str, Any]]:
    """One feature column as a block of X, its feature names and its encoding record.

    Bool and numeric columns: one float64 column (finite values only), standardised with
    the table's mean and population std when asked. Anything else: one-hot, categories
    sorted as strings (no missing values; :func:`_check_categorical`).
    """
    import pandas as pd

    if pd.api.types.is_bool_dtype(s) or pd.api.types.is_numeric_dtype(s):
        v = s.astype(np.float64).to_numpy()
        n_bad = int((~np.isfinite(v)).sum())
        if n_bad:
            raise fail(
                f"feature column {col!r}",
                "finite numbers (no NaN or missing values)",
                f"{n_bad} NaN/inf/missing value(s)",
            )
        if standardize:
            mean, std = float(v.mean()), float(v.std())
            v = (v - mean) / std if std > 0 else v - mean
            return v[:, None], [col], {"kind": "numeric", "mean": mean, "std": std}
        return v[:, None], [col], {"kind": "numeric"}
    if s.isna().any():
        raise fail(f"feature column {col!r}", "no missing values", f"{int(s.isna().sum())} missing")
    _check_categorical(s, col)
    values = s.astype(str).to_numpy()
    cats = sorted(set(values.tolist()))
    block = (values[:, None] == np.asarray(cats)[None, :]).astype(np.float64)
    return block, [f"{col}={c}" for c in cats], {"kind": "one-hot", "categories": cats}


def encode_like(
    frame: pd.DataFrame,
    reference: Dataset,
    *,
    name: str,
    drop: Sequence[str] = (),
    source: str = "DataFrame",
) -> Dataset:
    """Encode ``frame`` exactly as ``reference`` (a table from :func:`table_from_frame`) was.

    The columns must be the reference table's (any order; ``drop`` columns are ignored),
    each numeric where it was numeric (standardised with the *reference's* mean and
    standard deviation when it was), each categorical value one of the reference's
    categories, each label one of its classes: the records then live in the same
    feature space as the reference's, so a model trained on one can be queried on the
    other. Ids come from the reference's id column, or are ``f"{name}-{row:06d}"``.

    Raises
    ------
    InvalidInputError
        A missing or extra column, a non-numeric value in a numeric column, an unseen
        category or label, missing values, duplicate ids.
    """
    info = reference.info
    encoding, label_column, id_column = _table_encoding(reference)
    want = [*encoding, label_column] + ([id_column] if id_column else [])
    frame = _columns_like(frame, want, drop, reference.name)
    if len(frame) == 0:
        raise fail("table", "at least one row", "an empty table")
    X = np.hstack([_encode_column_like(frame[col], col, enc) for col, enc in encoding.items()])
    if X.shape[1] != reference.n_features:  # pragma: no cover - guarded by the encoding
        raise fail("features", f"{reference.n_features} columns", X.shape[1])
    classes = [str(c) for c in info.get("class_values", reference.class_names)]
    y = _class_labels_like(frame[label_column], label_column, classes)
    ids = _record_ids_like(frame, id_column, name)
    out_info = {**info, "source": source}
    return Dataset(name, ids, X, y, reference.feature_names, reference.class_names, out_info)


def _table_encoding(reference: Dataset) -> tuple[dict[str, Any], str, str | None]:
    """The encoding record, label column and id column a table dataset keeps in its
    ``info``; a dataset not read from a table (it has none) is an error."""
    info = reference.info
    encoding = info.get("encoding")
    label_column = info.get("label_column")
    if not isinstance(encoding, dict) or not isinstance(label_column, str):
        raise fail("reference", "a dataset read from a table (with its encoding)", reference.name)
    return encoding, label_column, info.get("id_column")


def _columns_like(
    frame: pd.DataFrame, want: list[str], drop: Sequence[str], reference_name: str
) -> pd.DataFrame:
    """A copy of ``frame`` with string column names and the ``drop`` columns removed, whose
    columns must then be exactly ``want`` (in any order): the reference table's."""
    frame = frame.copy()
    frame.columns = [str(c) for c in frame.columns]
    frame = frame.drop(columns=[c for c in drop if c in frame.columns])
    missing = [c for c in want if c not in frame.columns]
    extra = [c for c in frame.columns if c not in want]
    if missing or extra:
        raise fail(
            "columns",
            f"the columns of the dataset table {reference_name!r} ({', '.join(want)})",
            f"missing {missing}, extra {extra}",
        )
    return frame


def _encode_column_like(s: pd.Series, col: str, enc: dict[str, Any]) -> np.ndarray:
    """One feature column as a block of X, encoded by the reference's record ``enc`` of it
    (no missing values): a numeric column by :func:`_numeric_like`, any other one-hot by
    :func:`_one_hot_like`."""
    if s.isna().any():
        raise fail(f"column {col!r}", "no missing values", f"{int(s.isna().sum())} missing")
    if enc["kind"] == "numeric":
        return _numeric_like(s, col, enc)
    return _one_hot_like(s, col, list(enc["categories"]))


def _numeric_like(s: pd.Series, col: str, enc: dict[str, Any]) -> np.ndarray:
    """A numeric column (bool or numbers, all finite) as one float64 column, standardised
    with the reference's mean and std when the reference's was."""
    import pandas as pd

    if not (pd.api.types.is_bool_dtype(s) or pd.api.types.is_numeric_dtype(s)):
        raise fail(f"column {col!r}", "numbers (numeric in the dataset table)", f"{s.dtype} values")
    v = s.astype(np.float64).to_numpy()
    if not np.all(np.isfinite(v)):
        raise fail(f"column {col!r}", "finite numbers", "NaN/inf")
    if "mean" in enc:
        v = v - enc["mean"]
        if enc["std"] > 0:
            v = v / enc["std"]
    return v[:, None]


def _one_hot_like(s: pd.Series, col: str, cats: list[Any]) -> np.ndarray:
    """A categorical column one-hot over the reference's categories ``cats`` (values
    compared as strings; a value that is none of them is an error)."""
    values = s.astype(str).to_numpy()
    unseen = sorted(set(values.tolist()) - set(cats))
    if unseen:
        raise fail(
            f"column {col!r}",
            "categories of the dataset table " + ", ".join(map(repr, cats[:10])),
            f"unseen {unseen[:5]}",
        )
    return (values[:, None] == np.asarray(cats)[None, :]).astype(np.float64)


def _class_labels_like(lab: pd.Series, label_column: str, classes: list[str]) -> np.ndarray:
    """Each record's index among the reference's ``classes`` (a missing or unseen label is
    an error). Labels and classes are matched by :func:`_class_key`, so that a label read
    as ``1.0`` in one table and ``1`` in another (or as ``1.0`` in both: the reference's
    classes are kept as the text ``"1.0"``) is the same class; where that would merge two of
    the reference's classes (``"1"`` and ``"1.0"`` as text), by their exact text."""
    if lab.isna().any():
        raise fail(f"label column {label_column!r}", "no missing labels", "missing labels")
    values = lab.tolist()
    index = {_class_key(c): k for k, c in enumerate(classes)}
    if len(index) == len(classes):
        keys = [_class_key(str(v)) for v in values]
    else:
        index = {c: k for k, c in enumerate(classes)}
        keys = [str(v) for v in values]
    unseen = sorted({str(v) for v, key in zip(values, keys, strict=True) if key not in index})
    if unseen:
        raise fail(
            f"label column {label_column!r}", f"the classes {classes}", f"unseen {unseen[:5]}"
        )
    return np.array([index[k] for k in keys], dtype=np.int64)


def _class_key(text: str) -> str:
    """A class's text with a whole number written as an integer (``"1.0"`` -> ``"1"``,
    ``"-2.0"`` -> ``"-2"``); any other text as it is."""
    try:
        f = float(text)
    except ValueError:
        return text
    return str(int(f)) if f.is_integer() else text


def _record_ids_like(frame: pd.DataFrame, id_column: str | None, name: str) -> np.ndarray:
    """The id column's values (no missing ids; integers kept, anything else as strings), or
    ``f"{name}-{row:06d}"`` without one."""
    if not id_column:
        return np.array([f"{name}-{k:06d}" for k in range(len(frame))])
    raw = frame[id_column]
    if raw.isna().any():
        raise fail(f"id column {id_column!r}", "no missing ids", "missing ids")
    ids = raw.to_numpy()
    if ids.dtype.kind not in "iu":
        ids = raw.astype(str).to_numpy()
    return ids


def append_records(dataset: Dataset, other: Dataset) -> Dataset:
    """``dataset`` followed by ``other``'s records (same features and classes, disjoint ids).

    Raises
    ------
    InvalidInputError
        Other features or classes, an id in both.
    """
    if other.feature_names != dataset.feature_names or other.class_names != dataset.class_names:
        raise fail("records", f"the features and classes of {dataset.name!r}", other.name)
    a, b = dataset.record_ids, other.record_ids
    if a.dtype.kind != b.dtype.kind and (a.dtype.kind in "iu") != (b.dtype.kind in "iu"):
        raise fail("ids", f"ids of the kind of {dataset.name!r}'s ({a.dtype})", str(b.dtype))
    both = np.intersect1d(a, b)
    if both.size:
        raise fail(
            "ids",
            f"ids not already in {dataset.name!r}",
            f"{both.size} shared, e.g. {both[:5].tolist()}",
        )
    info = {**dataset.info, "appended": {"name": other.name, "n_records": other.n_records}}
    return Dataset(
        dataset.name,
        np.concatenate([a, b]),
        np.vstack([dataset.X, other.X]),
        np.concatenate([dataset.y, other.y]),
        dataset.feature_names,
        dataset.class_names,
        info,
    )


def load_table(
    path: str | Path,
    label_column: str,
    *,
    id_column: str | None = None,
    feature_columns: Sequence[str] | None = None,
    standardize: bool = False,
    name: str | None = None,
) -> Dataset:
    """Load a user table from CSV, Parquet or NumPy ``.npz`` as a :class:`Dataset`.

    Parameters
    ----------
    path : str or Path
        ``.csv`` (optionally ``.csv.gz``), ``.parquet`` / ``.pq``, or ``.npz``. An
        ``.npz`` must hold a 2-D numeric array ``X``; ``label_column`` names the 1-D
        label array in it (typically ``"y"``) and ``id_column`` an optional 1-D id array
        (neither may be named like a column of ``X``: ``x0``, ``x1``, ...). It is opened
        with ``allow_pickle=False``.
    label_column : str
        Column (or ``.npz`` array) of class labels.
    id_column : str, optional
        Column of unique record ids (default: ``f"{stem}-{row:06d}"``).
    feature_columns : sequence of str, optional
        Feature columns (default: all but the label and id columns). For ``.npz``
        files, names of the columns of ``X`` are ``x0, x1, ...``.
    standardize : bool
        Standardise numeric features with the table's mean and population std.
    name : str, optional
        Dataset name (default: the file stem).

    Raises
    ------
    InvalidInputError
        Unknown file type, missing label/id/feature columns (the message lists the
        available ones), NaN features, missing labels, a single class, duplicate ids, an
        ``.npz`` label or id array named like a feature column.
    """
    p = Path(path)
    if not p.is_file():
        raise fail("path", "an existing file", str(p))
    stem = p.name.split(".")[0] or "table"
    frame = _read_table_file(p, label_column, id_column)
    return table_from_frame(
        frame,
        label_column,
        name=name or stem,
        id_column=id_column,
        feature_columns=feature_columns,
        standardize=standardize,
        source=f"file {p.name}",
    )


def _read_table_file(p: Path, label_column: str, id_column: str | None) -> pd.DataFrame:
    """The table in ``p`` as a DataFrame, read as its suffix says: CSV (``.csv``,
    ``.csv.gz``), Parquet (``.parquet``, ``.pq``) or NumPy (``.npz``); others are errors."""
    suffixes = [s.lower() for s in p.suffixes]
    if suffixes[-1:] == [".csv"] or suffixes[-2:] == [".csv", ".gz"]:
        return read_csv_file(p)
    if suffixes[-1:] in ([".parquet"], [".pq"]):
        return read_parquet_file(p)
    if suffixes[-1:] == [".npz"]:
        return _read_npz_table(p, label_column, id_column)
    if suffixes[-1:] == [".npy"]:
        raise fail(
            "path",
            "a .npz file with arrays 'X' and the label array (a .npy holds one array and no label names)",
            p.name,
        )
    raise fail("path", "a .csv, .csv.gz, .parquet, .pq or .npz file", describe_name(p))


def _read_npz_table(p: Path, label_column: str, id_column: str | None) -> pd.DataFrame:
    """An ``.npz`` table: the 2-D array ``X`` as columns ``x0, x1, ...``, then the 1-D label
    array ``label_column`` and, when asked, the 1-D id array ``id_column``."""
    import pandas as pd

    with open_npz(p) as z:
        keys = list(z.files)
        if "X" not in keys:
            raise fail("npz file", "an array named 'X' (features)", f"arrays {keys}")
        _require_npz_array(keys, label_column, "label_column")
        Xz = npz_array(z, "X", p)
        if Xz.ndim != 2:
            raise fail("X", "a 2-dimensional feature array", f"shape {Xz.shape}")
        columns = [f"x{j}" for j in range(Xz.shape[1])]
        _require_not_a_column(columns, label_column, "label_column")
        frame = pd.DataFrame(Xz, columns=columns)
        frame[label_column] = _npz_vector(z, label_column, p, Xz.shape[0], "labels")
        if id_column is not None:
            _require_npz_array(keys, id_column, "id_column")
            _require_not_a_column(columns, id_column, "id_column")
            frame[id_column] = _npz_vector(z, id_column, p, Xz.shape[0], "ids")
    return frame


def _require_not_a_column(columns: list[str], key: str, parameter: str) -> None:
    """An error naming ``parameter`` when the array ``key`` is named like one of the columns
    ``x0, x1, ...`` of ``X``: read into the table it would replace that feature column."""
    if key in columns:
        names = f"names {columns[0]} .. {columns[-1]}" if len(columns) > 1 else f"name {key}"
        raise fail(
            parameter,
            f"an array name other than the {names} of the column{'s' * (len(columns) > 1)} of X",
            f"{key!r} (it would replace feature column {key}; rename the array)",
        )


def _require_npz_array(keys: list[str], key: str, parameter: str) -> None:
    """An error naming ``parameter`` unless ``key`` is one of the archive's arrays."""
    if key not in keys:
        raise fail(parameter, "one of the arrays " + ", ".join(map(repr, keys)), repr(key))


def _npz_vector(z: Any, key: str, p: Path, n: int, what: str) -> np.ndarray:
    """The archive's array ``key``, which must be 1-D with one entry (of ``what``) per row."""
    a = npz_array(z, key, p)
    if a.ndim != 1 or a.size != n:
        raise fail(key, f"a 1-D array of {n} {what}", f"shape {a.shape}")
    return a
