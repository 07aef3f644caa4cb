"""One place for input checks, with one message template.

Every message reads ``"<name>: expected <what>, found <what>"`` so that a user can see at
once which parameter is wrong, what was wanted and what was given.
"""

from __future__ import annotations

from collections.abc import Sequence, Sized
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privaudit.errors import InvalidInputError


def fail(name: str, expected: str, found: object) -> InvalidInputError:
    """Build the one error message format: ``name: expected X, found Y``."""
    return InvalidInputError(f"{name}: expected {expected}, found {found}")


def _describe(a: np.ndarray) -> str:
    return f"array of shape {a.shape} and dtype {a.dtype}"


def as_float_array(
    x: ArrayLike,
    name: str,
    *,
    ndim: int | None = None,
    allow_nan: bool = False,
    allow_inf: bool = False,
    allow_empty: bool = False,
) -> NDArray[np.float64]:
    """Return ``x`` as a float64 array (a copy only when needed) after checking it.

    Raises :class:`InvalidInputError` on non-numeric input, a wrong number of
    dimensions, NaN or infinite values (unless allowed) and empty input (unless allowed).
    """
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise fail(name, "numeric values", f"{type(x).__name__} ({exc})") from None
    if ndim is not None and a.ndim != ndim:
        raise fail(name, f"a {ndim}-dimensional array", _describe(a))
    if not allow_empty and a.size == 0:
        raise fail(name, "a non-empty array", _describe(a))
    if not allow_nan:
        n_nan = int(np.isnan(a).sum())
        if n_nan:
            raise fail(name, "no NaN values", f"{n_nan} NaN value(s)")
    if not allow_inf:
        n_inf = int(np.isinf(a).sum())
        if n_inf:
            raise fail(name, "finite values", f"{n_inf} infinite value(s)")
    return a


def as_bool_array(x: ArrayLike, name: str, *, ndim: int | None = None) -> NDArray[np.bool_]:
    """Return ``x`` as a bool array; accepts bools and the integers 0/1 only."""
    a = np.asarray(x)
    if a.dtype != np.bool_:
        if a.dtype.kind not in "iuf" or (a.size and not np.isin(a, (0, 1)).all()):
            raise fail(name, "booleans or 0/1 values", _describe(a))
        a = a.astype(bool)
    if ndim is not None and a.ndim != ndim:
        raise fail(name, f"a {ndim}-dimensional array", _describe(a))
    return a


def as_label_array(x: ArrayLike, name: str) -> NDArray[np.int64]:
    """Return integer class labels (1-D, non-negative)."""
    a = np.asarray(x)
    if a.ndim != 1:
        raise fail(name, "a 1-dimensional array of class labels", _describe(a))
    if a.dtype.kind == "f":
        if not np.all(np.isfinite(a)) or not np.all(a == np.round(a)):
            raise fail(name, "integer class labels", "non-integer values")
    elif a.dtype.kind not in "iub":
        raise fail(name, "integer class labels", _describe(a))
    out = a.astype(np.int64)
    if out.size and out.min() < 0:
        raise fail(name, "non-negative class labels", f"minimum {out.min()}")
    return out


def check_same_length(**arrays: Sized) -> int:
    """Check that every named array has the same length; return that length."""
    lengths = {k: len(v) for k, v in arrays.items()}
    if len(set(lengths.values())) > 1:
        names = ", ".join(f"{k}={n}" for k, n in lengths.items())
        first = next(iter(lengths))
        raise fail(first, "the same length as " + ", ".join(list(lengths)[1:]), names)
    return next(iter(lengths.values())) if lengths else 0


def check_unique_ids(ids: ArrayLike, name: str = "record_ids") -> NDArray[Any]:
    """Check that ids are 1-D, non-empty and unique; return them as an array."""
    a = np.asarray(ids)
    if a.ndim != 1:
        raise fail(name, "a 1-dimensional array of ids", _describe(a))
    if a.size == 0:
        raise fail(name, "at least one id", "none")
    uniq, counts = np.unique(a, return_counts=True)
    if uniq.size != a.size:
        dup = uniq[counts > 1][:5].tolist()
        raise fail(name, "unique ids", f"{a.size - uniq.size} duplicate(s), e.g. {dup}")
    return a


def check_both_classes(member: NDArray[np.bool_], name: str = "membership") -> tuple[int, int]:
    """Check that a membership vector has at least one member and one non-member."""
    n_pos = int(member.sum())
    n_neg = int(member.size - n_pos)
    if n_pos == 0 or n_neg == 0:
        raise fail(
            name,
            "at least one member and one non-member",
            f"{n_pos} member(s), {n_neg} non-member(s)",
        )
    return n_pos, n_neg


def check_probability(x: float, name: str, *, open_interval: bool = True) -> float:
    """Check ``0 < x < 1`` (or ``0 <= x <= 1`` when ``open_interval`` is False)."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        raise fail(name, "a number", repr(x)) from None
    ok = (0.0 < v < 1.0) if open_interval else (0.0 <= v <= 1.0)
    if not ok or not np.isfinite(v):
        raise fail(name, "a value in " + ("(0, 1)" if open_interval else "[0, 1]"), v)
    return v


def check_positive_int(x: int, name: str, *, minimum: int = 1) -> int:
    """Check that ``x`` is an integer ``>= minimum``."""
    if isinstance(x, bool) or not isinstance(x, int | np.integer):
        raise fail(name, "an integer", repr(x))
    if x < minimum:
        raise fail(name, f"an integer >= {minimum}", x)
    return int(x)


def check_choice(x: str, name: str, choices: Sequence[str]) -> str:
    """Check that ``x`` is one of ``choices``."""
    if x not in choices:
        raise fail(name, "one of " + ", ".join(map(repr, choices)), repr(x))
    return x


def check_gpus_per_task(gpus: float) -> float:
    """``gpus`` as Ray accepts it per task: a fraction in (0, 1] or a whole number >= 1."""
    if isinstance(gpus, bool) or not isinstance(gpus, int | float):
        raise fail(
            "gpus_per_task", "a number of GPUs (a fraction in (0, 1] or a whole number)", repr(gpus)
        )
    g = float(gpus)
    if not (0 < g <= 1 or (g > 1 and g.is_integer())):
        raise fail("gpus_per_task", "a fraction in (0, 1] or a whole number of GPUs", gpus)
    return g
