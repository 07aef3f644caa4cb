"""Label-only robustness signal (Choquette-Choo et al. 2021, Sec. 4.2)."""

from __future__ import annotations

import numpy as np
import pytest

from privaudit.data.dataset import Dataset
from privaudit.errors import InvalidInputError
from privaudit.models import PrecomputedModel
from privaudit.signals import QUERY_SIGNALS, label_robustness, model_signals


class _Linear:
    """Class 1 iff x_0 > 0: the distance to the boundary is |x_0|."""

    n_classes = 2

    def logits(self, X: np.ndarray) -> np.ndarray:
        return np.stack([np.zeros(X.shape[0]), 50.0 * X[:, 0]], axis=1)


def test_robustness_grows_with_distance_to_the_boundary() -> None:
    x0 = np.array([0.01, 0.1, 0.5, 2.0, -0.3])
    X = np.stack([x0, np.zeros(5)], axis=1)
    y = np.array([1, 1, 1, 1, 1])
    r = label_robustness(_Linear(), X, y, np.arange(5), scale=np.ones(2), n_queries=32)
    assert np.all(np.diff(r[:4]) > 0) and r[3] > 0.95
    assert r[0] < 0.75  # near the boundary, about half of the noisy copies flip
    assert r[4] < 0.25  # misclassified: only noisy copies that cross the boundary count
    assert np.all((r >= 0) & (r <= 1))


def test_same_record_same_noise_whatever_the_batch() -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(6, 3))
    y = (X[:, 0] > 0).astype(np.int64)
    ids = np.array([f"r{i}" for i in range(6)])
    full = label_robustness(_Linear(), X, y, ids, scale=np.ones(3))
    part = label_robustness(_Linear(), X[3:], y[3:], ids[3:], scale=np.ones(3))
    np.testing.assert_array_equal(full[3:], part)
    other = label_robustness(_Linear(), X, y, ids, scale=np.ones(3), seed=1)
    assert not np.array_equal(full, other)


def test_model_signals_queries_and_refuses_precomputed() -> None:
    rng = np.random.default_rng(1)
    X = rng.normal(size=(20, 2))
    y = (X[:, 0] > 0).astype(np.int64)
    ds = Dataset("t", np.arange(20), X, y, ("a", "b"), ("0", "1"))
    out = model_signals("m", _Linear(), ds, ["loss", *QUERY_SIGNALS])
    assert set(out) == {"loss", "label_robustness"}
    assert out["label_robustness"].min() >= 0.5  # correctly classified records
    pre = PrecomputedModel(np.arange(20), logits=_Linear().logits(X))
    with pytest.raises(InvalidInputError, match="precomputed"):
        model_signals("m", pre, ds, ["label_robustness"])


def test_bad_inputs() -> None:
    X = np.zeros((3, 2))
    with pytest.raises(InvalidInputError, match="noise_scales"):
        label_robustness(_Linear(), X, np.zeros(3, int), np.arange(3), noise_scales=(0.0,))
    with pytest.raises(InvalidInputError, match="scale"):
        label_robustness(_Linear(), X, np.zeros(3, int), np.arange(3), scale=np.ones(3))
