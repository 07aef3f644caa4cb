"""UCI Adult (Census Income), bundled with the package, with a fixed preprocessing.

Source: Becker, B. & Kohavi, R. (1996), *Adult*, UCI Machine Learning Repository,
https://doi.org/10.24432/C5XW20 (CC BY 4.0). Three files in ``_bundled/adult`` are byte
copies of the UCI files (gzip -9n of ``adult.data`` and ``adult.test``, plus
``adult.names``); a fourth, ``adult_parsed.npz``, is their parse (steps 1, 2 and 3 below
and each categorical value's position in ``adult.names``' list: the kept rows of the pool,
the numeric columns as read, the category codes, the labels), written from them by
``_write_parsed``. A load reads that parse and ``adult.names``, their SHA-256 digests
checked, and encodes them (steps 4-6); parsing the two tables on every load would cost
about 0.3 s. A test checks the parse file against a fresh parse of the two checksummed
UCI tables.

Preprocessing (deterministic, no randomness, no dependence on library versions beyond
IEEE float64 arithmetic):

1. **Pool.** ``adult.data`` (32,561 rows) followed by ``adult.test`` (16,281 rows; its
   first line ``|1x3 Cross validator`` is skipped and the trailing ``.`` of its labels
   removed) form one pool of 48,842 raw rows. Row ``k`` of that pool (0-based, training
   file first) gets the id ``f"adult-{k:06d}"``; ids therefore point back to a line of
   the source files and stay the same whatever is dropped later.
2. **Missing values.** Rows with a ``?`` in any column are dropped (3,620 rows), leaving
   45,222 records (30,162 from ``adult.data``, 15,060 from ``adult.test``).
3. **Label.** ``y = 1`` when income is ``>50K``, else ``0``; ``class_names = ("<=50K",
   ">50K")``.
4. **Categorical columns** (workclass, education, marital-status, occupation,
   relationship, race, sex, native-country) are one-hot encoded with one column per
   category, in the order the categories are listed in ``adult.names`` (all categories,
   even those with no remaining rows); feature names are ``"column=value"``. A value
   not listed there raises an error.
5. **Numeric columns** (age, fnlwgt, education-num, capital-gain, capital-loss,
   hours-per-week) are standardised: ``(x - mean) / std`` with the mean and the
   population standard deviation (``ddof=0``) computed in float64 over the 45,222
   kept records. The constants are recorded in ``info["numeric_scaling"]``. (Scaling
   with pool statistics is a fixed public transformation shared by every model, so it
   gives no membership information.)
6. **Column order**: the numeric columns first (in the order above), then the one-hot
   blocks in the order of the columns in the file. The result has 6 + 99 = 105
   features.

``info["source_file"]`` is not per record; a record came from ``adult.test`` exactly when
its numeric id suffix is >= 32,561 (``info["n_rows_adult_data"]``).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import gzip
import io
import itertools
import re
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privaudit.data._bundle import read_bundled
from privaudit.data.dataset import Dataset
from privaudit.errors import PrivauditError

__all__ = ["ADULT_SHA256", "AdultDataError", "load_adult"]

#: SHA-256 of the bundled files (the gzip files are gzip -9n of the UCI originals).
ADULT_SHA256: dict[str, str] = {
    "adult.data.gz": "c7a2b4716a97f930123e0baf879188d701e798172631a654fc703d4b082907f3",
    "adult.test.gz": "8a2c1bffa6e7ce5abfa43881ae5e87c4311ebc2b3cd526c9c40a43f19f06f799",
    "adult.names": "c248284c0b5de30c9e1958d6cdd168a34a654758b620e68f46aefa83fc0a576a",
    "adult_parsed.npz": "5fb1967facf1680a40044385ea3faba8205b7a039c4f8f3126d4718f49b2d41a",
}
#: The bundled parse of the two UCI tables (see the module docstring), read by every load.
PARSED_FILE = "adult_parsed.npz"

COLUMNS: tuple[str, ...] = (
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education-num",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
    "native-country",
    "income",
)
NUMERIC: tuple[str, ...] = (
    "age",
    "fnlwgt",
    "education-num",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
)
CATEGORICAL: tuple[str, ...] = tuple(c for c in COLUMNS[:-1] if c not in NUMERIC)
N_ROWS_DATA = 32_561
N_ROWS_TEST = 16_281


class AdultDataError(PrivauditError):
    """The bundled Adult files are missing or do not match their checksums."""


def _read_bundled(filename: str) -> bytes:
    return read_bundled(
        "adult",
        filename,
        ADULT_SHA256[filename],
        what=f"bundled Adult file {filename!r}",
        error=AdultDataError,
    )


def _categories_from_names(names_text: str) -> dict[str, tuple[str, ...]]:
    """Parse the ``column: v1, v2, ... .`` lines of ``adult.names``."""
    cats: dict[str, tuple[str, ...]] = {}
    for line in names_text.splitlines():
        m = re.match(r"^([a-z-]+): (.*)\.\s*$", line)
        if m and m.group(1) in CATEGORICAL:
            cats[m.group(1)] = tuple(v.strip() for v in m.group(2).split(","))
    missing = [c for c in CATEGORICAL if c not in cats]
    if missing:
        raise AdultDataError(f"adult.names lists no categories for {missing}")
    return cats


def _read_table(raw_gz: bytes, *, skip_first_line: bool) -> list[NDArray[np.object_]]:
    """The columns of a gzipped ``adult.data`` / ``adult.test``: 15 arrays of strings.

    What ``pandas.read_csv(header=None, skipinitialspace=True, dtype=str,
    keep_default_na=False, skip_blank_lines=True)`` reads from these two files (a test
    checks the two agree field for field on the bundled bytes, which are checksummed), in
    a fraction of its time and without importing pandas: blank lines are skipped, the
    spaces after a ``,`` removed and the fields split on ``,``; a line without exactly 15
    fields raises :class:`AdultDataError`.
    """
    text = gzip.decompress(raw_gz).decode("ascii")
    while ", " in text:
        text = text.replace(", ", ",")
    lines = [line for line in text.splitlines() if line.strip()]
    if skip_first_line:
        lines = lines[1:]
    fields = np.array(",".join(lines).split(","), dtype=object)
    n = len(COLUMNS)
    if fields.size != n * len(lines):
        bad = next(i for i, line in enumerate(lines) if line.count(",") != n - 1)
        raise AdultDataError(
            f"Adult: row {bad} has {lines[bad].count(',') + 1} fields, expected {n}"
        )
    return list(fields.reshape(len(lines), n).T)


def load_adult() -> Dataset:
    """Load UCI Adult with the fixed preprocessing described in the module docstring.

    Returns
    -------
    Dataset
        45,222 records, 105 float64 features, binary label (``1`` = income ``>50K``),
        ids ``"adult-XXXXXX"`` (0-based row in ``adult.data`` then ``adult.test``).
        ``info`` records the source, the file checksums, the dropped-row count and the
        scaling constants.

    Raises
    ------
    AdultDataError
        If a bundled file is missing or its SHA-256 does not match ``ADULT_SHA256``.

    Notes
    -----
    The parsed arrays are cached; every call returns a new :class:`Dataset` (with its
    own ``info`` dict).
    """
    ds = copy.copy(_load_adult_cached())  # the arrays are read-only: shared, not checked again
    object.__setattr__(ds, "info", copy.deepcopy(ds.info))
    return ds


@dataclasses.dataclass(frozen=True)
class _Parsed:
    """The parse of the UCI files that the preprocessing starts from: the kept rows of the
    pool (steps 1-2 of the module docstring), their numeric columns as read, the position
    of each categorical value in ``adult.names``' list and the label."""

    kept: NDArray[np.int64]  # (n,) rows of the 48,842-row pool, increasing
    numeric: NDArray[np.float64]  # (n, 6) in NUMERIC's order
    codes: NDArray[np.uint8]  # (n, 8) in CATEGORICAL's order
    y: NDArray[np.uint8]  # (n,)


def _parse_uci(cats: dict[str, tuple[str, ...]]) -> _Parsed:
    """The parse of the two checksummed UCI files (what :data:`PARSED_FILE` holds)."""
    train = _read_table(_read_bundled("adult.data.gz"), skip_first_line=False)
    test = _read_table(_read_bundled("adult.test.gz"), skip_first_line=True)
    if train[0].size != N_ROWS_DATA or test[0].size != N_ROWS_TEST:
        raise AdultDataError(
            f"Adult: expected {N_ROWS_DATA} + {N_ROWS_TEST} rows, found {train[0].size} + "
            f"{test[0].size}"
        )
    # adult.test's labels end with "."
    test[-1] = np.array([v.rstrip(".") for v in test[-1]], dtype=object)
    columns = [np.concatenate(pair) for pair in zip(train, test, strict=True)]
    has_missing = np.zeros(len(columns[0]), dtype=bool)
    for values in columns:
        has_missing |= values == "?"
    keep = ~has_missing
    pool = {name: values[keep] for name, values in zip(COLUMNS, columns, strict=True)}

    income = pool["income"]
    bad_label = ~np.isin(income, ["<=50K", ">50K"])
    if bad_label.any():
        raise AdultDataError(
            f"Adult: unexpected income labels {sorted(set(income[bad_label]))[:5]}"
        )
    codes = np.empty((income.size, len(CATEGORICAL)), dtype=np.uint8)
    for j, col in enumerate(CATEGORICAL):
        position = {c: i for i, c in enumerate(cats[col])}
        values = pool[col]
        code = np.fromiter(map(position.get, values, itertools.repeat(-1)), np.int64, values.size)
        if (code < 0).any():
            unknown = sorted(set(values[code < 0].tolist()))
            raise AdultDataError(f"Adult column {col!r}: values not in adult.names: {unknown[:5]}")
        codes[:, j] = code
    return _Parsed(
        kept=np.flatnonzero(keep).astype(np.int64),
        numeric=np.stack([pool[col].astype(np.float64) for col in NUMERIC], axis=1),
        codes=codes,
        y=(income == ">50K").astype(np.uint8),
    )


def _read_parsed() -> _Parsed:
    """:func:`_parse_uci`'s arrays as stored in the checksummed :data:`PARSED_FILE`."""
    raw = _read_bundled(PARSED_FILE)
    with np.load(io.BytesIO(raw), allow_pickle=False) as z:
        return _Parsed(**{f.name: z[f.name] for f in dataclasses.fields(_Parsed)})


def _write_parsed(path: str) -> None:
    """Write :data:`PARSED_FILE` from the UCI files (after a change of the parse: then
    update its digest in :data:`ADULT_SHA256`; a test checks the file against a parse)."""
    cats = _categories_from_names(_read_bundled("adult.names").decode("ascii"))
    parsed = _parse_uci(cats)
    np.savez_compressed(
        path, **{f.name: getattr(parsed, f.name) for f in dataclasses.fields(parsed)}
    )


def _record_ids(kept: NDArray[np.int64]) -> NDArray[np.str_]:
    """``f"adult-{k:06d}"`` for each pool row ``k`` (< 10**6), written as bytes in one
    array operation (a Python string per record costs 30 ms here)."""
    buf = np.empty((kept.size, 12), dtype=np.uint8)
    buf[:, :6] = np.frombuffer(b"adult-", dtype=np.uint8)
    buf[:, 6:] = kept[:, None] // 10 ** np.arange(5, -1, -1) % 10 + ord("0")
    return buf.view("S12").ravel().astype("U12")


@functools.lru_cache(maxsize=1)
def _load_adult_cached() -> Dataset:
    cats = _categories_from_names(_read_bundled("adult.names").decode("ascii"))
    parsed = _read_parsed()
    n = parsed.y.size
    ids = _record_ids(parsed.kept)
    y = parsed.y.astype(np.int64)
    # one array, the numeric columns then the one-hot blocks written into it
    X = np.zeros((n, len(NUMERIC) + sum(len(cats[c]) for c in CATEGORICAL)), dtype=np.float64)
    feature_names: list[str] = []
    scaling: dict[str, dict[str, float]] = {}
    for j, col in enumerate(NUMERIC):
        v = np.ascontiguousarray(parsed.numeric[:, j])
        mean = float(np.mean(v))
        std = float(np.std(v))
        X[:, j] = (v - mean) / std
        feature_names.append(col)
        scaling[col] = {"mean": mean, "std": std}
    rows = np.arange(n)
    for j, col in enumerate(CATEGORICAL):
        X[rows, len(feature_names) + parsed.codes[:, j]] = 1.0
        feature_names.extend(f"{col}={c}" for c in cats[col])

    info: dict[str, Any] = {
        "source": "UCI Adult (Census Income), Becker & Kohavi 1996, doi:10.24432/C5XW20, CC BY 4.0",
        "files": dict(ADULT_SHA256),
        "n_rows_adult_data": N_ROWS_DATA,
        "n_rows_adult_test": N_ROWS_TEST,
        "n_dropped_missing": N_ROWS_DATA + N_ROWS_TEST - n,
        "id_scheme": "adult-{k:06d}, k = 0-based row in adult.data then adult.test (before dropping)",
        "preprocessing": [
            "pool adult.data + adult.test (test labels: trailing '.' removed)",
            "drop rows with '?' in any column",
            "label: income == '>50K'",
            "numeric columns standardised with pool mean and population std (ddof=0)",
            "categorical columns one-hot, category order as listed in adult.names",
        ],
        "numeric_scaling": scaling,
    }
    return Dataset("adult", ids, X, y, tuple(feature_names), ("<=50K", ">50K"), info, copy=False)
