"""Per-record outputs computed elsewhere (any framework), keyed by record ids.

A :class:`PrecomputedModel` stands for a model privaudit cannot run (a large network,
a remote API): the auditor supplies, for each record id, either the full logit vector
or only the cross-entropy loss. It cannot be called on features, so it has no
``logits(X)``; :func:`privaudit.signals.signal_table` looks its outputs up by id.

With losses only, the signals that depend on the true-class probability alone are
still exact (``prob_true = exp(-loss)``, LiRA's ``logit_confidence``), while entropy
and modified entropy need the whole probability vector and are refused.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privaudit._validation import as_float_array, check_positive_int, check_unique_ids, fail

__all__ = ["PrecomputedModel", "load_precomputed"]


def _freeze(a: np.ndarray) -> np.ndarray:
    out = np.array(a, copy=True)
    out.setflags(write=False)
    return out


class PrecomputedModel:
    """Per-record logits (n, C) or per-record losses (n,), keyed by record ids.

    Parameters
    ----------
    record_ids : array of ids (unique)
    logits : float array (n, C), optional
        Pre-softmax scores of each record (exactly one of ``logits`` / ``losses``).
    losses : float array (n,), optional
        Cross-entropy loss ``-log p_y`` of each record on its true label (>= 0).
    n_classes : int, optional
        Size of the label space; required with ``losses``, checked against ``C`` with
        ``logits``.
    name : str
        For messages.
    """

    def __init__(
        self,
        record_ids: ArrayLike,
        *,
        logits: ArrayLike | None = None,
        losses: ArrayLike | None = None,
        n_classes: int | None = None,
        name: str = "precomputed",
    ) -> None:
        ids = check_unique_ids(record_ids)
        if ids.dtype.kind in "iu":
            ids = ids.astype(np.int64)
        elif ids.dtype.kind in "UO":
            ids = ids.astype(str)
        else:
            raise fail("record_ids", "integer or string ids", f"dtype {ids.dtype}")
        if (logits is None) == (losses is None):
            raise fail(
                "logits/losses",
                "exactly one of logits or losses",
                "both" if logits is not None else "neither",
            )
        self.name = str(name)
        self._logits: NDArray[np.float64] | None = None
        self._losses: NDArray[np.float64] | None = None
        if logits is not None:
            z = as_float_array(logits, f"logits of {self.name!r}", ndim=2)
            if z.shape[0] != ids.size:
                raise fail(
                    f"logits of {self.name!r}", f"{ids.size} rows (one per record id)", z.shape[0]
                )
            if z.shape[1] < 2:
                raise fail(f"logits of {self.name!r}", "at least 2 columns (classes)", z.shape[1])
            if n_classes is not None and check_positive_int(n_classes, "n_classes") != z.shape[1]:
                raise fail("n_classes", f"the number of logit columns ({z.shape[1]})", n_classes)
            self._n_classes = int(z.shape[1])
            self._logits = _freeze(z)
        elif losses is not None:
            loss = as_float_array(losses, f"losses of {self.name!r}", ndim=1)
            if loss.size != ids.size:
                raise fail(
                    f"losses of {self.name!r}", f"{ids.size} values (one per record id)", loss.size
                )
            if (loss < 0).any():
                raise fail(
                    f"losses of {self.name!r}",
                    "non-negative cross-entropy losses",
                    f"{int((loss < 0).sum())} negative value(s), min {loss.min()}",
                )
            if n_classes is None:
                raise fail("n_classes", "the number of classes (required with losses)", None)
            self._n_classes = check_positive_int(n_classes, "n_classes", minimum=2)
            self._losses = _freeze(loss)
        self.record_ids = _freeze(ids)
        order = np.argsort(self.record_ids, kind="stable")
        self._sorted_ids = self.record_ids[order]
        self._order = order

    @property
    def n_classes(self) -> int:
        """Number of classes ``C``."""
        return self._n_classes

    @property
    def kind(self) -> str:
        """``"logits"`` or ``"losses"``."""
        return "logits" if self._logits is not None else "losses"

    @property
    def has_logits(self) -> bool:
        """Whether full logit vectors are available."""
        return self._logits is not None

    def __repr__(self) -> str:
        return f"PrecomputedModel({self.name!r}, {self.kind}, n_records={self.record_ids.size}, n_classes={self._n_classes})"

    def _positions(self, record_ids: ArrayLike) -> NDArray[np.int64]:
        want = np.asarray(record_ids)
        if want.ndim != 1:
            raise fail("record_ids", "a 1-dimensional array of ids", f"shape {want.shape}")
        if want.size == 0:
            return np.zeros(0, dtype=np.int64)
        if self.record_ids.dtype.kind in "iu":
            if want.dtype.kind not in "iu":
                raise fail(
                    "record_ids", f"integer ids (as stored in {self.name!r})", f"dtype {want.dtype}"
                )
            want = want.astype(np.int64)
        else:
            want = want.astype(str)
        pos = np.searchsorted(self._sorted_ids, want)
        pos_c = np.minimum(pos, self._sorted_ids.size - 1)
        found = self._sorted_ids[pos_c] == want
        if not found.all():
            missing = want[~found][:5].tolist()
            raise fail(
                "record_ids",
                f"ids for which {self.name!r} has outputs",
                f"{int((~found).sum())} without outputs, e.g. {missing}",
            )
        return self._order[pos_c].astype(np.int64)

    def logits_for(self, record_ids: ArrayLike) -> NDArray[np.float64]:
        """The stored logits of the given records, in the given order, shape (m, C)."""
        if self._logits is None:
            raise fail(
                f"model {self.name!r}",
                "per-record logits (this signal needs the full probability vector)",
                "losses only",
            )
        return np.array(self._logits[self._positions(record_ids)], dtype=np.float64)

    def losses_for(
        self, record_ids: ArrayLike, labels: ArrayLike | None = None
    ) -> NDArray[np.float64]:
        """Cross-entropy losses of the given records, shape (m,).

        For a logits model, ``labels`` (the true classes) are needed and the loss is
        ``logsumexp(z) - z_y``.
        """
        pos = self._positions(record_ids)
        if self._losses is not None:
            return np.array(self._losses[pos], dtype=np.float64)
        if labels is None:
            raise fail("labels", "the true labels (to compute losses from stored logits)", None)
        from scipy.special import logsumexp

        lab = np.asarray(labels, dtype=np.int64)
        z = self.logits_for(record_ids)
        if lab.shape != (z.shape[0],) or (lab < 0).any() or (lab >= self._n_classes).any():
            raise fail("labels", f"{z.shape[0]} labels in 0..{self._n_classes - 1}", lab)
        return np.asarray(logsumexp(z, axis=1) - z[np.arange(z.shape[0]), lab], dtype=np.float64)

    def save(self, path: str | Path) -> Path:
        """Write to ``.npz`` (arrays ``record_ids`` and ``logits`` or ``losses``)."""
        p = Path(path)
        arrays: dict[str, Any] = {
            "record_ids": self.record_ids,
            "n_classes": np.asarray(self._n_classes),
            "name": np.asarray(self.name),
        }
        if self._logits is not None:
            arrays["logits"] = self._logits
        else:
            arrays["losses"] = self._losses
        tmp = p.with_name(p.name + ".tmp")
        with open(tmp, "wb") as fh:
            np.savez_compressed(fh, **arrays)
        tmp.replace(p)
        return p


def load_precomputed(
    path: str | Path,
    *,
    id_column: str = "record_id",
    n_classes: int | None = None,
    name: str | None = None,
) -> PrecomputedModel:
    """Read per-record outputs from ``.npz``, ``.csv`` or ``.parquet``.

    * ``.npz`` (opened with ``allow_pickle=False``): arrays ``record_ids`` and either
      ``logits`` (n, C) or ``losses`` (n,); optional scalars ``n_classes``, ``name``.
    * tables: the ``id_column`` and either a ``loss`` column or logit columns named
      ``logit_0, logit_1, ...`` (numbered from 0, no gaps).
    """
    import pandas as pd

    p = Path(path)
    if not p.is_file():
        raise fail("path", "an existing file", str(p))
    nm = name or p.name.split(".")[0]
    suffix = p.suffix.lower()
    if suffix == ".npz":
        with np.load(p, allow_pickle=False) as z:
            keys = set(z.files)
            if "record_ids" not in keys:
                raise fail("npz file", "an array 'record_ids'", sorted(keys))
            ids = z["record_ids"]
            C = int(z["n_classes"]) if "n_classes" in keys and n_classes is None else n_classes
            if name is None and "name" in keys:
                nm = str(z["name"])
            if "logits" in keys:
                return PrecomputedModel(ids, logits=z["logits"], n_classes=C, name=nm)
            if "losses" in keys:
                return PrecomputedModel(ids, losses=z["losses"], n_classes=C, name=nm)
            raise fail("npz file", "an array 'logits' or 'losses'", sorted(keys))
    if suffix == ".csv":
        frame = pd.read_csv(p)
    elif suffix in (".parquet", ".pq"):
        frame = pd.read_parquet(p)
    else:
        raise fail("path", "a .npz, .csv or .parquet file", p.name)
    cols = [str(c) for c in frame.columns]
    if id_column not in cols:
        raise fail("id_column", "one of the columns " + ", ".join(map(repr, cols)), repr(id_column))
    ids = frame[id_column].to_numpy()
    if ids.dtype.kind not in "iu":
        ids = frame[id_column].astype(str).to_numpy()
    logit_cols = sorted(
        (c for c in cols if c.startswith("logit_")),
        key=lambda c: int(c[6:]) if c[6:].isdigit() else -1,
    )
    if "loss" in cols:
        return PrecomputedModel(
            ids, losses=frame["loss"].to_numpy(dtype=np.float64), n_classes=n_classes, name=nm
        )
    if logit_cols:
        expected = [f"logit_{k}" for k in range(len(logit_cols))]
        if logit_cols != expected:
            raise fail("logit columns", ", ".join(expected), ", ".join(logit_cols))
        return PrecomputedModel(
            ids, logits=frame[logit_cols].to_numpy(dtype=np.float64), n_classes=n_classes, name=nm
        )
    raise fail("columns", "a 'loss' column or logit columns 'logit_0', 'logit_1', ...", cols)
