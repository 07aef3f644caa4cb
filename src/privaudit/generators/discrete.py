"""Discretised tables: the input and output of the synthetic-data generators.

A :class:`DiscreteTable` holds one integer code per record and attribute
(``codes[i, j]`` in ``0 .. cardinalities[j] - 1``), with the record ids of the
:class:`~privaudit.data.dataset.Dataset` it came from, so that the record-level games can
select training sets by id exactly as the classifier games do.

:func:`discretise` turns a one-hot/numeric :class:`Dataset` (e.g. :func:`load_adult`) back
into attributes: every block of features named ``"column=value"`` becomes one categorical
attribute (the code is the position of the hot value), every other feature is cut into at
most ``n_bins`` quantile bins, and the class label becomes the last attribute. The cut
points are quantiles of the *whole* dataset given (for Adult, the 45,222-record pool): a
fixed public transformation shared by every training set, so it carries no membership
information; differentially private generators (PrivBayes) need the domain to be public in
exactly this sense (Zhang et al. 2017, Sec. 3: the attribute domains are assumed known).
"""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privaudit._validation import check_positive_int, fail
from privaudit.data.dataset import Dataset

__all__ = ["DiscreteTable", "discretise"]


@dataclasses.dataclass(frozen=True)
class DiscreteTable:
    """Records as integer codes of discrete attributes.

    Parameters
    ----------
    record_ids : array (n,)
        Unique record ids (synthetic tables get ids ``"synth-..."``).
    codes : int64 array (n, d)
        ``codes[i, j]`` in ``0 .. cardinalities[j] - 1``.
    cardinalities : tuple of int, length d
        Domain size of each attribute (public).
    names : tuple of str, length d
        Attribute names.
    levels : tuple of tuple of str
        Human-readable value of each code, per attribute (for reports and user
        generators that want labels).
    """

    record_ids: NDArray[Any]
    codes: NDArray[np.int64]
    cardinalities: tuple[int, ...]
    names: tuple[str, ...]
    levels: tuple[tuple[str, ...], ...] = ()

    def __post_init__(self) -> None:
        codes = np.asarray(self.codes)
        if codes.ndim != 2 or not np.issubdtype(codes.dtype, np.integer):
            raise fail("codes", "a 2-d integer array", f"shape {codes.shape}, dtype {codes.dtype}")
        card = tuple(int(c) for c in self.cardinalities)
        if len(card) != codes.shape[1] or any(c < 1 for c in card):
            raise fail("cardinalities", f"{codes.shape[1]} positive integers", card)
        if codes.size and (codes.min() < 0 or np.any(codes.max(axis=0) >= np.asarray(card))):
            raise fail("codes", "codes below each attribute's cardinality", "codes out of range")
        ids = np.asarray(self.record_ids)
        if ids.shape != (codes.shape[0],):
            raise fail("record_ids", f"{codes.shape[0]} ids", ids.shape)
        if len(self.names) != len(card):
            raise fail("names", f"{len(card)} attribute names", len(self.names))
        codes = np.ascontiguousarray(codes, dtype=np.int64)
        codes.setflags(write=False)
        object.__setattr__(self, "codes", codes)
        object.__setattr__(self, "cardinalities", card)
        object.__setattr__(self, "names", tuple(str(n) for n in self.names))
        levels = tuple(tuple(str(v) for v in lv) for lv in self.levels) or tuple(
            tuple(str(v) for v in range(c)) for c in card
        )
        object.__setattr__(self, "levels", levels)

    @property
    def n_records(self) -> int:
        return int(self.codes.shape[0])

    @property
    def n_attributes(self) -> int:
        return int(self.codes.shape[1])

    def positions(self, ids: ArrayLike) -> NDArray[np.int64]:
        """Row positions of ``ids`` (every id must be present)."""
        index = {r: i for i, r in enumerate(self.record_ids.tolist())}
        wanted = np.asarray(ids).tolist()
        missing = [r for r in wanted if r not in index]
        if missing:
            raise fail("ids", "record ids of the table", f"unknown ids {missing[:5]}")
        return np.asarray([index[r] for r in wanted], dtype=np.int64)

    def with_codes(self, codes: NDArray[np.int64], prefix: str = "synth") -> DiscreteTable:
        """A table on the same domain with new rows (ids ``prefix-000000``, ...)."""
        ids = np.asarray([f"{prefix}-{i:06d}" for i in range(len(codes))])
        return DiscreteTable(ids, codes, self.cardinalities, self.names, self.levels)

    def fingerprint(self) -> str:
        """sha256 of ids, codes and domain (cache keys)."""
        h = hashlib.sha256()
        h.update(repr((self.cardinalities, self.names)).encode())
        h.update("\x00".join(map(str, self.record_ids.tolist())).encode())
        h.update(self.codes.tobytes())
        return h.hexdigest()


def discretise(dataset: Dataset, *, n_bins: int = 8, include_label: bool = True) -> DiscreteTable:
    """Attributes of ``dataset`` as discrete codes (see the module docstring).

    Parameters
    ----------
    dataset : Dataset
        One-hot blocks ``"column=value"`` are folded back into one attribute each; other
        features are cut into at most ``n_bins`` quantile bins (fewer when values tie,
        e.g. capital-gain, which is 0 for 92% of Adult).
    n_bins : int
        Maximum number of bins of a numeric feature.
    include_label : bool
        Append the class label as the last attribute (named ``"label"``).

    Examples
    --------
    >>> from privaudit.data import load_adult
    >>> t = discretise(load_adult())
    >>> t.n_attributes, t.cardinalities[-1]
    (15, 2)
    """
    n_bins = check_positive_int(n_bins, "n_bins", minimum=2)
    X = dataset.X
    names: list[str] = []
    cols: list[NDArray[np.int64]] = []
    levels: list[tuple[str, ...]] = []
    blocks: dict[str, list[int]] = {}
    order: list[tuple[str, Any]] = []
    for j, f in enumerate(dataset.feature_names):
        if "=" in f:
            col = f.split("=", 1)[0]
            if col not in blocks:
                blocks[col] = []
                order.append(("cat", col))
            blocks[col].append(j)
        else:
            order.append(("num", j))
    for kind, what in order:
        if kind == "cat":
            idx = blocks[what]
            block = X[:, idx]
            if not np.all(np.isin(block, (0.0, 1.0))) or not np.all(block.sum(axis=1) == 1):
                raise fail(f"features {what}=*", "a one-hot block (one 1 per row)", "other values")
            cols.append(np.argmax(block, axis=1).astype(np.int64))
            names.append(str(what))
            levels.append(tuple(dataset.feature_names[k].split("=", 1)[1] for k in idx))
        else:
            v = X[:, what]
            qs = np.unique(np.quantile(v, np.linspace(0, 1, n_bins + 1)[1:-1]))
            vals, cnt = np.unique(v, return_counts=True)
            mode = vals[np.argmax(cnt)]
            if qs.size + 1 < n_bins and np.any(v != mode):
                # a value holding many records (capital-gain is 0 for 92% of Adult) gets
                # its own bin; the other values are cut into quantile bins of their own
                rest = v[v != mode]
                extra = np.quantile(rest, np.linspace(0, 1, n_bins - qs.size)[1:-1])
                cuts = (
                    [mode, np.nextafter(mode, np.inf)]
                    if mode > rest.min()
                    else [np.nextafter(mode, np.inf)]
                )
                qs = np.unique(np.concatenate([qs, extra, cuts]))
            code = np.searchsorted(qs, v, side="right").astype(np.int64)
            used, code = np.unique(code, return_inverse=True)
            edges = np.concatenate([[-np.inf], qs, [np.inf]])
            cols.append(code.astype(np.int64))
            names.append(dataset.feature_names[what])
            single = edges[1:] == np.nextafter(edges[:-1], np.inf)  # a one-value bin
            sc = dataset.info.get("numeric_scaling", {}).get(dataset.feature_names[what])
            if isinstance(sc, dict):  # labels in the original units (Adult's scaling)
                edges = edges * float(sc["std"]) + float(sc["mean"])
            levels.append(
                tuple(
                    f"{edges[u]:.4g}" if single[u] else f"[{edges[u]:.4g}, {edges[u + 1]:.4g})"
                    for u in used
                )
            )
    if include_label:
        cols.append(dataset.y.astype(np.int64))
        names.append("label")
        levels.append(tuple(dataset.class_names))
    codes = np.stack(cols, axis=1)
    card = tuple(len(lv) for lv in levels)
    return DiscreteTable(dataset.record_ids, codes, card, tuple(names), tuple(levels))
