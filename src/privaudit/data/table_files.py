"""Reading user table files: CSV (also ``.csv.gz``), Parquet and NumPy ``.npz``.

:func:`read_frame` turns a CSV or Parquet file into a DataFrame with one clear error per
unreadable file (the file's real format is sniffed from its first bytes, so a Parquet file
named ``.csv`` gets a message that says so); :mod:`.tables` encodes the frames as
:class:`~privaudit.data.dataset.Dataset` (and re-exports :func:`read_frame`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from privaudit._validation import fail

# pandas is imported by the functions that read a table file, not with this module: the
# bundled datasets and every audit that reads none do not pay its import (0.2-0.3 s)
if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "describe_name",
    "npz_array",
    "open_npz",
    "read_csv_file",
    "read_frame",
    "read_parquet_file",
]


_PARQUET_MAGIC = b"PAR1"
_ZIP_MAGIC = b"PK\x03\x04"
_GZIP_MAGIC = b"\x1f\x8b"


def _head(p: Path, n: int = 4) -> bytes:
    """The first ``n`` bytes of a file (its format's magic number)."""
    try:
        with open(p, "rb") as fh:
            return fh.read(n)
    except OSError as exc:
        raise fail("path", "a readable file", f"{p} ({exc.strerror or exc})") from None


def read_csv_file(p: Path) -> pd.DataFrame:
    """A CSV table, or an :class:`InvalidInputError` that says why it cannot be read.

    Catches what ``pandas.read_csv`` raises on an empty file, text that is not UTF-8
    (a Latin-1 header, for instance), a binary file (Parquet or ``.npz``) named ``.csv``,
    and malformed rows.
    """
    import pandas as pd

    head = _head(p)
    gz = p.suffix.lower() == ".gz"
    if not head:
        raise fail("path", "a CSV file with a header row", f"an empty file {p} (0 bytes)")
    if head.startswith(_PARQUET_MAGIC):
        raise fail("path", "a CSV file", f"a Parquet file named {p.name} (rename it to .parquet)")
    if head.startswith(_ZIP_MAGIC):
        raise fail("path", "a CSV file", f"a zip or .npz archive named {p.name}")
    if gz and not head.startswith(_GZIP_MAGIC):
        raise fail("path", "a gzip-compressed CSV file (.csv.gz)", f"{p.name} is not gzip data")
    if not gz and head.startswith(_GZIP_MAGIC):
        raise fail("path", "an uncompressed CSV file", f"gzip data in {p.name} (name it .csv.gz)")
    try:
        frame = pd.read_csv(p, encoding="utf-8")
        header = pd.read_csv(p, encoding="utf-8", header=None, nrows=1, dtype=str)
    except UnicodeDecodeError as exc:
        raise fail(
            "path",
            "a UTF-8 encoded CSV file",
            f"bytes that are not UTF-8 at position {exc.start} of {p} "
            f"({exc.object[exc.start : exc.start + 4]!r}); save the file as UTF-8",
        ) from None
    except pd.errors.EmptyDataError:
        raise fail("path", "a CSV file with a header row", f"no columns in {p}") from None
    except (pd.errors.ParserError, ValueError, OSError, EOFError) as exc:
        raise fail("path", "a readable CSV file", f"{p} ({_first_line(exc)})") from None
    names = [str(c) for c in header.iloc[0].tolist()] if len(header) else []
    dups = sorted({c for c in names if names.count(c) > 1})
    if dups:  # pandas would rename the second "a" to "a.1" silently
        raise fail("columns", "unique column names in the header", f"{dups} repeated")
    return frame


def read_parquet_file(p: Path) -> pd.DataFrame:
    """A Parquet file as a DataFrame, or one clear error."""
    import pandas as pd

    head = _head(p)
    if head != _PARQUET_MAGIC:
        found = "an empty file" if not head else "a file that does not start like Parquet"
        raise fail("path", "a Parquet file", f"{found}: {p}")
    try:
        return pd.read_parquet(p)
    except Exception as exc:  # pyarrow raises its own ArrowInvalid / OSError types
        raise fail("path", "a readable Parquet file", f"{p} ({_first_line(exc)})") from None


def open_npz(p: Path) -> Any:
    """An ``.npz`` archive opened without pickle, or one clear error."""
    head = _head(p)
    if head != _ZIP_MAGIC:
        found = "an empty file" if not head else "a file that is not a NumPy .npz archive"
        raise fail("path", "a NumPy .npz file", f"{found}: {p}")
    try:
        fh = open(p, "rb")  # owned by the archive returned; closed here on failure
    except OSError as exc:
        raise fail("path", "a readable file", f"{p} ({exc.strerror or exc})") from None
    try:
        # what np.load(p) does for a zip, except that np.load leaves its file open when
        # the archive cannot be read (a truncated or corrupt .npz)
        return np.lib.npyio.NpzFile(fh, own_fid=True, allow_pickle=False)
    except Exception as exc:  # zipfile.BadZipFile, ValueError, OSError
        fh.close()
        raise fail("path", "a readable .npz file", f"{p} ({_first_line(exc)})") from None


def npz_array(z: Any, key: str, p: Path) -> np.ndarray:
    """The array ``key`` of an open ``.npz`` archive, or one clear error naming the file."""
    try:
        return np.asarray(z[key])
    except Exception as exc:  # object arrays need pickle; a truncated member
        raise fail(
            f"array {key!r} of {p.name}", "a numeric or string array", _first_line(exc)
        ) from None


def _first_line(exc: BaseException) -> str:
    """An exception's type and first message line, for an error message."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]


def describe_name(p: Path) -> str:
    """A file's name for an error about its suffix: the name as it is when it has a suffix
    (``a.txt``); said to have none when it has none, and what its suffix is when it starts
    with a dot (``.csv`` is a hidden file's name with no suffix, not a ``.csv`` file)."""
    dot = " (a leading dot starts no suffix)" if p.name.startswith(".") else ""
    if not p.suffixes:
        return f"{p.name!r}, a name with no suffix{dot}"
    if dot:
        return f"{p.name!r}, a name with the suffix {''.join(p.suffixes)}{dot}"
    return p.name


def _is_frame_file(p: Path) -> bool:
    """Whether the name says CSV (``.csv``, ``.csv.gz``) or Parquet (``.parquet``, ``.pq``)."""
    suffixes = [s.lower() for s in p.suffixes]
    return suffixes[-1:] in ([".csv"], [".parquet"], [".pq"]) or suffixes[-2:] == [".csv", ".gz"]


def read_frame(path: str | Path) -> pd.DataFrame:
    """Read a CSV (optionally ``.csv.gz``) or Parquet table as a DataFrame."""
    p = Path(path)
    if not p.is_file():
        raise fail("path", "an existing file", str(p))
    if not _is_frame_file(p):
        raise fail("path", "a .csv, .csv.gz, .parquet or .pq table", describe_name(p))
    if p.suffix.lower() in (".parquet", ".pq"):
        return read_parquet_file(p)
    return read_csv_file(p)
