"""Reading the tables a user gives a command: a CSV or Parquet file, a score column, a
membership column, each checked with a message that names the option and the file.

Shared by ``privaudit audit`` and ``privaudit zero-run``. pandas and NumPy are imported inside
the functions (start-up time).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

__all__ = ["membership_values", "read_table", "score_values", "table_column"]


_TRUE = {"1", "true", "t", "yes", "y", "1.0"}


_FALSE = {"0", "false", "f", "no", "n", "0.0"}


def read_table(path: Path) -> Any:
    """Read a CSV (``.csv``/``.txt``, ``.tsv``) or Parquet (``.parquet``/``.pq``) table.

    Raises :class:`~privaudit.errors.InvalidInputError` (named ``FILE``) when the file is
    missing, unreadable or of another type.
    """
    import pandas as pd

    from privaudit._validation import fail

    if not path.is_file():
        raise fail("FILE", "an existing CSV or Parquet file", str(path))
    suffix = path.suffix.lower()
    try:
        if suffix in (".parquet", ".pq"):
            return pd.read_parquet(path)
        if suffix in (".csv", ".txt", ".tsv"):
            return pd.read_csv(path, sep="\t" if suffix == ".tsv" else ",")
    except Exception as exc:
        raise fail("FILE", "a readable CSV or Parquet file", f"{path} ({exc})") from None
    raise fail("FILE", "a .csv or .parquet file", path.name)


def table_column(df: Any, name: str, option: str) -> Any:
    """Column ``name`` of ``df``; an unknown name is an error naming ``option`` and the columns."""
    from privaudit._validation import fail

    if name not in df.columns:
        cols = ", ".join(map(str, df.columns))
        raise fail(option, f"a column of the file (one of: {cols})", repr(name))
    return df[name]


def score_values(col: Any, name: str) -> np.ndarray:
    """A column as float64 scores: every value numeric, none missing or NaN."""
    import numpy as np
    import pandas as pd

    from privaudit._validation import fail

    values = pd.to_numeric(col, errors="coerce")
    bad = values.isna() & col.notna()
    if bad.any():
        first = col[bad].iloc[0]
        raise fail(
            f"column {name!r}", "numeric scores", f"{int(bad.sum())} non-numeric, e.g. {first!r}"
        )
    arr = values.to_numpy(dtype=np.float64)
    n_nan = int(np.isnan(arr).sum())
    if n_nan:
        raise fail(f"column {name!r}", "no missing or NaN scores", f"{n_nan} missing/NaN value(s)")
    return arr


def membership_values(col: Any, name: str) -> np.ndarray:
    """A column of 1/0, true/false, yes/no (any case) or booleans as a bool array."""
    import numpy as np

    from privaudit._validation import fail

    out = np.empty(len(col), dtype=bool)
    for i, x in enumerate(col.tolist()):
        key = str(x).strip().lower()
        if isinstance(x, bool | np.bool_):
            out[i] = bool(x)
        elif key in _TRUE:
            out[i] = True
        elif key in _FALSE:
            out[i] = False
        else:
            raise fail(f"column {name!r}", "1/0 or true/false membership", f"{x!r} in row {i + 1}")
    return out
