"""Query counts (bitmask histogram + superset sums) against direct counting."""

from __future__ import annotations

import numpy as np
import pytest

from privaudit.errors import InvalidInputError
from privaudit.signals.queries import closest_distance, match_masks, query_counts


@pytest.mark.parametrize("d", [1, 2, 4, 5, 7, 10])
def test_query_counts_equal_direct_counts(d: int) -> None:
    rng = np.random.default_rng(d)
    syn = rng.integers(0, 3, size=(60, d))
    targets = np.vstack([rng.integers(0, 3, size=(3, d)), syn[:2]])
    q = query_counts(syn, targets, normalise=False)
    assert q.shape == (5, 2**d - 1)
    for k in range(5):
        for S in range(1, 2**d):
            cols = [j for j in range(d) if S >> j & 1]
            assert q[k, S - 1] == np.all(syn[:, cols] == targets[k, cols], axis=1).sum()
    assert np.allclose(query_counts(syn, targets), q / 60)


def test_masks_and_closest_distance() -> None:
    syn = np.array([[0, 1, 2], [0, 0, 0]])
    t = np.array([[0, 1, 0], [1, 1, 1]])
    assert match_masks(syn, t).tolist() == [[0b011, 0b101], [0b010, 0b000]]
    assert closest_distance(syn, t).tolist() == [1.0, 2.0]
    with pytest.raises(InvalidInputError):
        query_counts(syn, np.zeros((1, 2), dtype=int))
