"""The :class:`Dataset` record: stable record ids, float features and integer labels.

A dataset is immutable: its arrays are read-only copies made at construction (or, with
``copy=False``, arrays made for it and made read-only), so no stage of an audit can change
the records another stage sees. Records are addressed by
their ids (strings or integers, unique), never by their positions.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privaudit._validation import as_float_array, as_label_array, check_unique_ids, fail

__all__ = ["Dataset"]

FINGERPRINT_VERSION = "privaudit-dataset-v1"


def _frozen(a: np.ndarray, copy: bool) -> np.ndarray:
    out = np.array(a, copy=True) if copy else a
    out.setflags(write=False)
    return out


def _normalise_ids(ids: ArrayLike, name: str = "record_ids") -> NDArray[Any]:
    a = check_unique_ids(ids, name)
    if a.dtype.kind == "b":
        raise fail(name, "integer or string ids", f"dtype {a.dtype}")
    if a.dtype.kind in "iu":
        return a.astype(np.int64)
    if a.dtype.kind == "U":  # already strings, checked unique
        return a
    if a.dtype.kind == "O":
        s = a.astype(str)
        if np.unique(s).size != s.size:
            raise fail(name, "ids that stay unique as strings", "collisions after str()")
        return s
    raise fail(name, "integer or string ids", f"dtype {a.dtype}")


@dataclasses.dataclass(frozen=True, eq=False)
class Dataset:
    """A labelled tabular dataset whose records carry stable ids.

    Parameters
    ----------
    name : str
        Short name (``"adult"``, ``"digits"``, a file stem), part of the fingerprint.
    record_ids : array of str or int, shape (n,)
        Unique, stable record identifiers. Subsets keep them, so a record is the same
        record in every split, membership matrix and signal table.
    X : float64 array, shape (n, d)
        Features, finite.
    y : int64 array, shape (n,)
        Class labels in ``0 .. n_classes - 1``.
    feature_names : tuple of str, length d
    class_names : tuple of str
        ``class_names[k]`` is the human-readable name of label ``k``; its length is the
        number of classes (a subset keeps every class, even ones it no longer contains).
    info : dict
        Provenance: source files, checksums, preprocessing steps.
    copy : bool, default True
        Copy the arrays (the dataset keeps read-only copies). ``False`` takes them as
        given and makes them read-only, for arrays made for this dataset and kept by no
        one else (a loader's, a subset's fancy-indexed ones): a 45,000 x 105 table is
        then not copied again.

    Examples
    --------
    >>> import numpy as np
    >>> ds = Dataset("toy", np.array(["a", "b"]), np.zeros((2, 1)), np.array([0, 1]),
    ...              ("f",), ("no", "yes"))
    >>> ds.subset(["b"]).record_ids.tolist()
    ['b']
    """

    name: str
    record_ids: NDArray[Any]
    X: NDArray[np.float64]
    y: NDArray[np.int64]
    feature_names: tuple[str, ...]
    class_names: tuple[str, ...]
    info: dict[str, Any] = dataclasses.field(default_factory=dict)
    copy: dataclasses.InitVar[bool] = True

    def __post_init__(self, copy: bool) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise fail("name", "a non-empty string", repr(self.name))
        ids = _normalise_ids(self.record_ids)
        X = as_float_array(self.X, "X", ndim=2)
        y = as_label_array(self.y, "y")
        n = ids.size
        if X.shape[0] != n:
            raise fail("X", f"{n} rows (one per record id)", f"{X.shape[0]} rows")
        if y.size != n:
            raise fail("y", f"{n} labels (one per record id)", f"{y.size} labels")
        feats = tuple(str(f) for f in self.feature_names)
        if len(feats) != X.shape[1]:
            raise fail("feature_names", f"{X.shape[1]} names (one per column of X)", len(feats))
        if len(set(feats)) != len(feats):
            raise fail("feature_names", "unique names", "duplicates")
        classes = tuple(str(c) for c in self.class_names)
        if len(classes) < 2:
            raise fail("class_names", "at least 2 classes", len(classes))
        if y.max() >= len(classes):
            raise fail("y", f"labels in 0..{len(classes) - 1}", f"maximum {int(y.max())}")
        object.__setattr__(self, "record_ids", _frozen(ids, copy))
        object.__setattr__(self, "X", _frozen(X, copy))
        object.__setattr__(self, "y", _frozen(y, copy))
        object.__setattr__(self, "feature_names", feats)
        object.__setattr__(self, "class_names", classes)
        object.__setattr__(self, "info", dict(self.info))

    # ------------------------------------------------------------------ basic facts
    @property
    def n_records(self) -> int:
        """Number of records ``n``."""
        return int(self.record_ids.size)

    @property
    def n_features(self) -> int:
        """Number of feature columns ``d``."""
        return int(self.X.shape[1])

    @property
    def n_classes(self) -> int:
        """Number of classes (``len(class_names)``), including classes absent here."""
        return len(self.class_names)

    def __len__(self) -> int:
        return self.n_records

    def __repr__(self) -> str:
        return (
            f"Dataset(name={self.name!r}, n_records={self.n_records}, "
            f"n_features={self.n_features}, n_classes={self.n_classes})"
        )

    # ------------------------------------------------------------------ lookups
    def positions(self, ids: ArrayLike) -> NDArray[np.int64]:
        """Row positions of the given record ids, in the given order.

        Raises :class:`~privaudit.errors.InvalidInputError` naming unknown ids.
        """
        want = np.asarray(ids)
        if want.ndim != 1:
            raise fail("ids", "a 1-dimensional array of record ids", f"shape {want.shape}")
        if want.size == 0:
            return np.zeros(0, dtype=np.int64)
        if self.record_ids.dtype.kind in "iu":
            if want.dtype.kind not in "iu":
                raise fail(
                    "ids", "integer record ids (this dataset's ids are integers)", want.dtype
                )
            want = want.astype(np.int64)
        else:
            want = want.astype(str)
        order = np.argsort(self.record_ids, kind="stable")
        sorted_ids = self.record_ids[order]
        pos = np.searchsorted(sorted_ids, want)
        pos_clipped = np.minimum(pos, sorted_ids.size - 1)
        found = sorted_ids[pos_clipped] == want
        if not np.all(found):
            missing = want[~found][:5].tolist()
            raise fail(
                "ids",
                f"record ids of dataset {self.name!r}",
                f"{int((~found).sum())} unknown, e.g. {missing}",
            )
        return order[pos_clipped].astype(np.int64)

    def subset(self, ids_or_mask: ArrayLike) -> Dataset:
        """A new dataset with the selected records.

        Parameters
        ----------
        ids_or_mask : bool array of shape (n,) or array of record ids
            A boolean mask keeps the records where it is True, in dataset order; an
            array of ids keeps those records in the order given (duplicates rejected).

        Returns
        -------
        Dataset
            Same name, feature names, class names and info (plus ``info["parent"]``,
            the parent's fingerprint); ``n_classes`` is unchanged even when a class is
            absent from the subset.
        """
        sel = np.asarray(ids_or_mask)
        if sel.dtype == np.bool_:
            if sel.shape != (self.n_records,):
                raise fail("ids_or_mask", f"a boolean mask of shape ({self.n_records},)", sel.shape)
            pos = np.flatnonzero(sel)
        else:
            if sel.ndim == 1 and sel.size and np.unique(sel).size != sel.size:
                raise fail("ids_or_mask", "unique record ids", "duplicates")
            pos = self.positions(sel)
        if pos.size == 0:
            raise fail("ids_or_mask", "at least one selected record", "none")
        info = dict(self.info)
        info["parent"] = self.fingerprint()
        return Dataset(
            self.name,
            self.record_ids[pos],
            self.X[pos],
            self.y[pos],
            self.feature_names,
            self.class_names,
            info,
            copy=False,  # fancy indexing made the arrays
        )

    def fingerprint(self) -> str:
        """SHA-256 hex digest of the dataset's content, used in cache keys.

        The hash covers a version tag, ``name``, the ids (their dtype and values), the
        shape and bytes of ``X`` (little-endian float64, C order) and of ``y``
        (little-endian int64), and the number of classes. Two datasets with the same
        records in a different order have different fingerprints (positions matter to
        models trained with a seed).
        """
        cached = self.__dict__.get("_fingerprint")
        if isinstance(cached, str):
            return cached
        h = hashlib.sha256()

        def put(tag: str, payload: bytes) -> None:
            h.update(tag.encode())
            h.update(len(payload).to_bytes(8, "little"))
            h.update(payload)

        put("version", FINGERPRINT_VERSION.encode())
        put("name", self.name.encode())
        if self.record_ids.dtype.kind in "iu":
            put("ids:int64", np.ascontiguousarray(self.record_ids, dtype="<i8").tobytes())
        else:
            put("ids:str", "\x1f".join(self.record_ids.tolist()).encode())
        put("X-shape", np.asarray(self.X.shape, dtype="<i8").tobytes())
        put("X", np.ascontiguousarray(self.X, dtype="<f8").tobytes())
        put("y", np.ascontiguousarray(self.y, dtype="<i8").tobytes())
        put("n_classes", str(self.n_classes).encode())
        digest = h.hexdigest()
        object.__setattr__(self, "_fingerprint", digest)
        return digest

    def describe(self) -> Mapping[str, Any]:
        """A JSON-able summary (name, sizes, class counts, fingerprint)."""
        counts = np.bincount(self.y, minlength=self.n_classes)
        return {
            "name": self.name,
            "n_records": self.n_records,
            "n_features": self.n_features,
            "n_classes": self.n_classes,
            "class_counts": {c: int(k) for c, k in zip(self.class_names, counts, strict=True)},
            "fingerprint": self.fingerprint(),
        }
