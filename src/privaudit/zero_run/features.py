"""Propensity features: validation and the column layout the propensity pipelines need.

Only covariates of the records may be propensity features -- never the audited model's
losses, logits, predictions or the task labels (Zero-Run paper, App. F.2 "Estimand and
sampling design"). :func:`prepare_features` checks a DataFrame or a 2-D array once and
records which columns are numeric and which categorical (one-hot encoded inside the folds
by :func:`.estimators.make_propensity_model`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from privaudit._validation import fail

__all__ = ["FeatureMatrix", "prepare_features"]


@dataclass(frozen=True, eq=False)
class FeatureMatrix:
    """Validated propensity features: the data and which columns are categorical.

    Attributes
    ----------
    data
        A float64 array of shape ``(n, d)``, or a DataFrame (reset to a
        ``RangeIndex``) whose numeric columns are float64 and whose categorical
        columns hold strings.
    numeric, categorical
        Positional indices of the numeric and the categorical columns.
    column_names
        The column names as strings (``"0"``, ``"1"``, ... for an array), for messages.
    """

    data: pd.DataFrame | NDArray[np.float64]
    numeric: tuple[int, ...]
    categorical: tuple[int, ...]
    column_names: tuple[str, ...]

    @property
    def n_rows(self) -> int:
        """Number of records."""
        return int(self.data.shape[0])

    @property
    def n_columns(self) -> int:
        """Number of raw (not encoded) columns."""
        return int(self.data.shape[1])

    def take(self, rows: NDArray[np.intp]) -> pd.DataFrame | NDArray[np.float64]:
        """The rows ``rows`` (positions, repeats allowed) of the data."""
        if isinstance(self.data, pd.DataFrame):
            return self.data.iloc[rows]
        return self.data[rows]

    def encoded_width(self) -> int:
        """Number of columns after one-hot encoding on the full data (an upper bound per fold)."""
        if not self.categorical or not isinstance(self.data, pd.DataFrame):
            return self.n_columns
        n_levels = sum(int(self.data.iloc[:, j].nunique()) for j in self.categorical)
        return len(self.numeric) + n_levels


def _nonfinite_message(col: NDArray[np.float64]) -> str | None:
    """How many NaN / infinite values a numeric column holds, for a message (None: none)."""
    n_nan = int(np.isnan(col).sum())
    n_inf = int(np.isinf(col).sum())
    if not (n_nan or n_inf):
        return None
    parts = [f"{n} {what}" for n, what in ((n_nan, "NaN"), (n_inf, "infinite")) if n]
    return " and ".join(parts) + " value(s)"


def prepare_features(
    features: pd.DataFrame | ArrayLike, *, name: str = "features"
) -> FeatureMatrix:
    """Validate propensity features and record which columns are categorical.

    Only covariates of the records may be given: never the audited model's losses,
    logits, predictions, internal representations or the task labels (Zero-Run paper,
    App. F.2 "Estimand and sampling design"); otherwise the correction would attribute
    model-induced leakage to distribution shift.

    Parameters
    ----------
    features
        A pandas DataFrame (numeric columns; ``object``, ``category``, ``string`` and
        ``bool`` columns are categorical and one-hot encoded inside the folds) or a 2-D
        numeric array of shape ``(n, d)``.
    name
        Parameter name used in error messages.

    Returns
    -------
    FeatureMatrix
        The validated data.

    Raises
    ------
    InvalidInputError
        Not 2-D, no rows or columns, a NaN or infinite value in a numeric column or a
        missing value in a categorical column (the message names the column and the
        count), or a column of an unsupported dtype (e.g. datetime).
    """
    if isinstance(features, pd.DataFrame):
        return _prepare_frame(features, name)
    try:
        a = np.asarray(features, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise fail(
            name,
            "a numeric 2-D array or a pandas DataFrame",
            f"{type(features).__name__} ({exc})",
        ) from None
    if a.ndim != 2:
        raise fail(name, "a 2-dimensional array (rows x features)", f"shape {a.shape}")
    if a.shape[0] == 0 or a.shape[1] == 0:
        raise fail(name, "at least one row and one column", f"shape {a.shape}")
    for j in range(a.shape[1]):
        msg = _nonfinite_message(a[:, j])
        if msg is not None:
            raise fail(f"{name} column {j}", "finite numeric values", msg)
    d = a.shape[1]
    return FeatureMatrix(
        data=a,
        numeric=tuple(range(d)),
        categorical=(),
        column_names=tuple(str(j) for j in range(d)),
    )


def _prepare_frame(df: pd.DataFrame, name: str) -> FeatureMatrix:
    """:func:`prepare_features` of a DataFrame: numeric columns as float64, the others as strings."""
    if df.shape[0] == 0 or df.shape[1] == 0:
        raise fail(name, "at least one row and one column", f"a DataFrame of shape {df.shape}")
    names = tuple(str(c) for c in df.columns)
    if len(set(names)) != len(names):
        raise fail(name, "unique column names", f"columns {list(names)}")
    numeric: list[int] = []
    categorical: list[int] = []
    columns: dict[str, Any] = {}
    for j, col_name in enumerate(names):
        col = df.iloc[:, j]
        dtype = col.dtype
        label = f"{name} column {col_name!r}"
        if pd.api.types.is_bool_dtype(dtype) or not (
            pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_datetime64_any_dtype(dtype)
        ):
            if not (
                pd.api.types.is_bool_dtype(dtype)
                or pd.api.types.is_object_dtype(dtype)
                or isinstance(dtype, pd.CategoricalDtype)
                or pd.api.types.is_string_dtype(dtype)
            ):
                raise fail(label, "a numeric, bool, object, string or category dtype", dtype)
            n_missing = int(col.isna().sum())
            if n_missing:
                raise fail(label, "no missing categorical values", f"{n_missing} missing value(s)")
            categorical.append(j)
            columns[col_name] = col.astype(str).to_numpy(dtype=object)
        elif pd.api.types.is_numeric_dtype(dtype):
            n_missing = int(col.isna().sum())
            if n_missing:
                raise fail(label, "finite numeric values", f"{n_missing} NaN/missing value(s)")
            values = col.to_numpy(dtype=np.float64)
            msg = _nonfinite_message(values)
            if msg is not None:
                raise fail(label, "finite numeric values", msg)
            numeric.append(j)
            columns[col_name] = values
        else:
            raise fail(label, "a numeric, bool, object, string or category dtype", dtype)
    frame = pd.DataFrame(columns, index=pd.RangeIndex(df.shape[0]))
    frame.columns = pd.Index(list(names), dtype=object)
    return FeatureMatrix(
        data=frame,
        numeric=tuple(numeric),
        categorical=tuple(categorical),
        column_names=names,
    )
