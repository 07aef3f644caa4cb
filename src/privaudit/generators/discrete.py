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
from typing import Any, NamedTuple

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
    order, blocks = _attribute_order(dataset.feature_names)
    attributes = [
        _one_hot_attribute(X, dataset.feature_names, what, blocks[what])
        if kind == "cat"
        else _binned_attribute(X[:, what], dataset, what, n_bins)
        for kind, what in order
    ]
    if include_label:
        attributes.append(
            _Attribute("label", dataset.y.astype(np.int64), tuple(dataset.class_names))
        )
    codes = np.stack([a.codes for a in attributes], axis=1)
    card = tuple(len(a.levels) for a in attributes)
    names = tuple(a.name for a in attributes)
    levels = tuple(a.levels for a in attributes)
    return DiscreteTable(dataset.record_ids, codes, card, names, levels)


class _Attribute(NamedTuple):
    """One discrete attribute: its name, each record's code and each code's label."""

    name: str
    codes: NDArray[np.int64]
    levels: tuple[str, ...]


def _attribute_order(
    feature_names: tuple[str, ...],
) -> tuple[list[tuple[str, Any]], dict[str, list[int]]]:
    """The attributes in feature order, ``("cat", column)`` for a one-hot block
    ``"column=value"`` (placed at its first feature) and ``("num", j)`` for any other
    feature ``j``; and each block's feature positions."""
    blocks: dict[str, list[int]] = {}
    order: list[tuple[str, Any]] = []
    for j, f in enumerate(feature_names):
        if "=" in f:
            col = f.split("=", 1)[0]
            if col not in blocks:
                blocks[col] = []
                order.append(("cat", col))
            blocks[col].append(j)
        else:
            order.append(("num", j))
    return order, blocks


def _one_hot_attribute(
    X: NDArray[np.float64], feature_names: tuple[str, ...], column: str, idx: list[int]
) -> _Attribute:
    """The one-hot block ``column=*`` (features ``idx`` of ``X``) folded back into one
    attribute: the code is the position of the hot value (one 1 per row, else an error)."""
    block = X[:, idx]
    if not np.all(np.isin(block, (0.0, 1.0))) or not np.all(block.sum(axis=1) == 1):
        raise fail(f"features {column}=*", "a one-hot block (one 1 per row)", "other values")
    codes = np.argmax(block, axis=1).astype(np.int64)
    levels = tuple(feature_names[k].split("=", 1)[1] for k in idx)
    return _Attribute(str(column), codes, levels)


def _binned_attribute(v: NDArray[np.float64], dataset: Dataset, j: int, n_bins: int) -> _Attribute:
    """Numeric feature ``j`` of ``dataset`` (values ``v``) cut into at most ``n_bins`` bins:
    only the bins that hold records become codes, labelled by their edges."""
    qs = _cut_points(v, n_bins)
    code = np.searchsorted(qs, v, side="right").astype(np.int64)
    used, code = np.unique(code, return_inverse=True)
    edges = np.concatenate([[-np.inf], qs, [np.inf]])
    name = dataset.feature_names[j]
    scaling = dataset.info.get("numeric_scaling", {}).get(name)
    return _Attribute(name, code.astype(np.int64), _bin_labels(edges, used, scaling))


def _cut_points(v: NDArray[np.float64], n_bins: int) -> NDArray[np.float64]:
    """Sorted cut points of at most ``n_bins`` quantile bins of ``v`` (when ties leave fewer
    bins, the most common value gets a bin of its own)."""
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
    return qs


def _bin_labels(
    edges: NDArray[np.float64], used: NDArray[np.int64], scaling: Any
) -> tuple[str, ...]:
    """Labels of the used bins: ``"[lo, hi)"``, or the value of a one-value bin; in the
    original units when ``scaling`` is a ``{"mean", "std"}`` record (Adult's scaling)."""
    single = edges[1:] == np.nextafter(edges[:-1], np.inf)  # a one-value bin
    if isinstance(scaling, dict):
        edges = edges * float(scaling["std"]) + float(scaling["mean"])
    return tuple(
        f"{edges[u]:.4g}" if single[u] else f"[{edges[u]:.4g}, {edges[u + 1]:.4g})" for u in used
    )
