"""The bundled MNIST subset."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from privaudit.data import MNIST_SHAPE, load_mnist

_ROOT = Path(__file__).resolve().parents[2]
# CI: the shared folder beside the clone; a git worktree one level deeper has it two up
SHARED = (
    next(
        (p for p in (_ROOT / ".." / "shared", _ROOT / ".." / ".." / "shared") if p.is_dir()),
        _ROOT / ".." / "shared",
    )
    / "data"
    / "mnist"
    / "mnist.npz"
)


def test_mnist_subset_shape_ids_and_range() -> None:
    ds = load_mnist()
    assert ds.X.shape == (6000, int(np.prod(MNIST_SHAPE))) and ds.n_classes == 10
    assert ds.record_ids[0] == "mnist-00000" and np.unique(ds.record_ids).size == 6000
    assert ds.X.min() == 0.0 and ds.X.max() == 1.0
    assert np.bincount(ds.y).tolist() == [592, 671, 581, 608, 623, 514, 608, 651, 551, 601]


def test_mnist_subset_is_the_start_of_the_original_training_set() -> None:
    if not SHARED.is_file():  # the shared data folder sits beside the clone in CI
        import pytest

        pytest.skip("shared MNIST file not present")
    with np.load(SHARED) as z:
        x, y = z["x_train"][:6000], z["y_train"][:6000]
    ds = load_mnist()
    np.testing.assert_array_equal(np.rint(ds.X * 255).astype(np.uint8), x.reshape(6000, -1))
    np.testing.assert_array_equal(ds.y, y)
