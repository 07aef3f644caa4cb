"""Signals of a released synthetic table about target records: query counts and distances.

**Query counts** (the TAPAS-style query attack, Houssiau, Jordon, Cohen, Daniel, Elliott,
Geddes, Mole, Rangel-Smith, Szpruch, "TAPAS: a Toolbox for Adversarial Privacy Auditing of
Synthetic Data", NeurIPS 2022 SyntheticData4ML workshop; the attack Krčo et al. 2025 play in
both games, after Meeus, Guepin, Cretu, de Montjoye, "Achilles' Heels", ESORICS 2023): for a
target ``x`` with ``d`` attributes and every non-empty attribute subset ``S``, the number of
synthetic rows ``y`` with ``y_j = x_j`` for all ``j in S``: ``2^d - 1`` counting queries.

They are computed at once: each synthetic row gets the bitmask ``m(y) = sum_j [y_j = x_j]
2^j``; a histogram ``h`` of the masks over ``2^d`` bins is turned into superset sums
``c(S) = sum_{T superset of S} h(T)`` by the standard zeta transform (one pass
``c[.. 0 ..] += c[.. 1 ..]`` per bit; the lowest 4 bits after a transpose, so that every
pass adds contiguous blocks), ``O(d 2^d)`` per target instead of ``O(2^d n)``.

**Distance to the closest record** (a common baseline, e.g. Stadler, Oprisanu, Troncoso,
"Synthetic Data -- Anonymisation Groundhog Day", USENIX Security 2022): the Hamming
distance from ``x`` to its nearest synthetic row, ``d - max_y |{j : y_j = x_j}|``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import fail

__all__ = ["MAX_QUERY_ATTRIBUTES", "closest_distance", "match_masks", "query_counts"]

#: 2^d histograms are materialised per target; beyond this many attributes refuse.
MAX_QUERY_ATTRIBUTES = 20


def _check(synthetic: NDArray[np.int64], targets: NDArray[np.int64]) -> tuple[int, int]:
    s = np.asarray(synthetic)
    t = np.asarray(targets)
    if s.ndim != 2 or t.ndim != 2 or s.shape[1] != t.shape[1]:
        raise fail(
            "synthetic, targets", "2-d code arrays with the same attributes", (s.shape, t.shape)
        )
    return int(s.shape[0]), int(s.shape[1])


def match_masks(synthetic: NDArray[np.int64], targets: NDArray[np.int64]) -> NDArray[np.int64]:
    """``masks[k, i] = sum_j [synthetic[i, j] == targets[k, j]] 2^j`` (K, n)."""
    _, d = _check(synthetic, targets)
    if d > 62:
        raise fail("attributes", "at most 62", d)
    eq = np.asarray(synthetic)[None, :, :] == np.asarray(targets)[:, None, :]
    weights = np.int64(1) << np.arange(d, dtype=np.int64)
    return np.asarray(eq.astype(np.int64) @ weights, dtype=np.int64)


def query_counts(
    synthetic: NDArray[np.int64], targets: NDArray[np.int64], *, normalise: bool = True
) -> NDArray[np.float32]:
    """Counts of synthetic rows matching each target on every non-empty attribute subset.

    Parameters
    ----------
    synthetic : int array (n, d)
        The released synthetic table (attribute codes).
    targets : int array (K, d)
        Target records.
    normalise : bool
        Divide by ``n`` (fractions; comparable across synthetic sizes).

    Returns
    -------
    float32 array (K, 2^d - 1)
        Column ``S - 1`` is the query on subset ``S`` (bit ``j`` of ``S`` = attribute ``j``).

    Examples
    --------
    >>> import numpy as np
    >>> syn = np.array([[0, 1], [0, 0], [1, 1]])
    >>> query_counts(syn, np.array([[0, 1]]), normalise=False).tolist()
    [[2.0, 2.0, 1.0]]
    """
    n, d = _check(synthetic, targets)
    if d > MAX_QUERY_ATTRIBUTES:
        raise fail("attributes", f"at most {MAX_QUERY_ATTRIBUTES} for 2^d queries", d)
    K = len(targets)
    size = 1 << d
    masks = match_masks(synthetic, targets)
    flat = (masks + (np.arange(K, dtype=np.int64) * size)[:, None]).ravel()
    c = np.bincount(flat, minlength=K * size).astype(np.float32)
    low = min(4, d)
    hi = d - low
    # bits >= low: in place, c[.. 0 ..] += c[.. 1 ..] along each bit (contiguous blocks)
    c = c.reshape(K, size)
    for j in range(low, d):
        v = c.reshape(K, size >> (j + 1), 2, 1 << j)
        v[:, :, 0, :] += v[:, :, 1, :]
    # the lowest bits, whose strided passes would be slow: move them to the front
    c = np.ascontiguousarray(c.reshape(K, 1 << hi, 1 << low).transpose(0, 2, 1))
    for j in range(low):
        v = c.reshape(K, 1 << (low - j - 1), 2, (1 << j) << hi)
        v[:, :, 0, :] += v[:, :, 1, :]
    c = np.ascontiguousarray(c.reshape(K, 1 << low, 1 << hi).transpose(0, 2, 1))
    out = c.reshape(K, size)[:, 1:]
    if normalise and n:
        out = out / np.float32(n)
    return np.ascontiguousarray(out)


def closest_distance(
    synthetic: NDArray[np.int64], targets: NDArray[np.int64]
) -> NDArray[np.float64]:
    """Hamming distance from each target to its closest synthetic row, shape (K,)."""
    n, d = _check(synthetic, targets)
    if n == 0:
        return np.full(len(targets), float(d))
    eq = (np.asarray(synthetic)[None, :, :] == np.asarray(targets)[:, None, :]).sum(axis=2)
    return (d - eq.max(axis=1)).astype(np.float64)
