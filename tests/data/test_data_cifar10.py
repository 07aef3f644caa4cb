"""The bundled CIFAR-10 subset: ids, layout, standardisation, the shared file's pixels."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from privaudit.data import CIFAR10_SHAPE, Dataset, load_cifar10
from privaudit.data.cifar10 import cifar10_record_id
from privaudit.errors import InvalidInputError

_ROOT = Path(__file__).resolve().parents[2]
# CI: the shared folder beside the clone; a git worktree one level deeper has it two up
SHARED = (
    next(
        (p for p in (_ROOT / ".." / "shared", _ROOT / ".." / ".." / "shared") if p.is_dir()),
        _ROOT / ".." / "shared",
    )
    / "data"
    / "cifar10"
    / "cifar10_6102.npz"
)


@pytest.fixture(scope="module")
def cifar() -> Dataset:
    return load_cifar10()


def test_shape_ids_classes_and_standardisation(cifar: Dataset) -> None:
    ds = cifar
    assert ds.X.shape == (6102, int(np.prod(CIFAR10_SHAPE))) and ds.n_classes == 10
    ids = ds.record_ids.tolist()
    assert ids[0] == "cifar10-data_batch_1-0000" and ids[1016] == "cifar10-data_batch_1-1016"
    assert ids[1017] == "cifar10-data_batch_2-0000" and ids[-1] == "cifar10-test_batch-1016"
    assert len(set(ids)) == 6102
    assert np.bincount(ds.y).tolist() == [622, 617, 590, 597, 629, 562, 617, 618, 639, 611]
    # labels start as the official files do (shared/data/README.md)
    assert ds.y[:10].tolist() == [6, 9, 9, 4, 1, 1, 2, 7, 8, 3]
    assert ds.y[5085:5095].tolist() == [3, 8, 8, 0, 6, 6, 1, 6, 3, 1]
    imgs = ds.X.reshape(-1, *CIFAR10_SHAPE)
    np.testing.assert_allclose(imgs.mean(axis=(0, 2, 3)), 0.0, atol=1e-9)
    np.testing.assert_allclose(imgs.std(axis=(0, 2, 3)), 1.0, atol=1e-9)
    assert ds.info["n_standardization_records"] == 6102
    assert ds.feature_names[1] == "pixel_0_0_1" and ds.feature_names[1024] == "pixel_1_0_0"


def test_pixels_are_the_shared_files_in_chw_order(cifar: Dataset) -> None:
    if not SHARED.is_file():  # the shared data folder sits beside the clone in CI
        pytest.skip("shared CIFAR-10 file not present")
    ds = cifar
    with np.load(SHARED) as z:
        hwc, labels = z["images"], z["labels"]
        batch, index = z["source_batch"], z["index_in_batch"]
    mean = np.asarray(ds.info["channel_mean"])
    std = np.asarray(ds.info["channel_std"])
    imgs = ds.X.reshape(-1, *CIFAR10_SHAPE) * std[None, :, None, None] + mean[None, :, None, None]
    restored = np.rint(imgs * 255).astype(np.uint8)
    np.testing.assert_array_equal(restored, hwc.transpose(0, 3, 1, 2))
    np.testing.assert_array_equal(ds.y, labels)
    names = (
        "data_batch_1",
        "data_batch_2",
        "data_batch_3",
        "data_batch_4",
        "data_batch_5",
        "test_batch",
    )
    want = [cifar10_record_id(names[b], int(i)) for b, i in zip(batch, index, strict=True)]
    assert ds.record_ids.tolist() == want


def test_standardisation_fitted_on_the_given_records_only(cifar: Dataset) -> None:
    seen = [f"cifar10-test_batch-{k:04d}" for k in range(1017)]
    ds = load_cifar10(standardize_on=seen)
    assert ds.info["n_standardization_records"] == 1017
    imgs = ds.subset(seen).X.reshape(-1, *CIFAR10_SHAPE)
    np.testing.assert_allclose(imgs.mean(axis=(0, 2, 3)), 0.0, atol=1e-9)
    np.testing.assert_allclose(imgs.std(axis=(0, 2, 3)), 1.0, atol=1e-9)
    # the same pixels up to the per-channel affine map
    a = cifar.X.reshape(-1, *CIFAR10_SHAPE)[:3]
    b = ds.X.reshape(-1, *CIFAR10_SHAPE)[:3]
    m0, s0 = np.asarray(cifar.info["channel_mean"]), np.asarray(cifar.info["channel_std"])
    m1, s1 = np.asarray(ds.info["channel_mean"]), np.asarray(ds.info["channel_std"])
    np.testing.assert_allclose(
        a * s0[None, :, None, None] + m0[None, :, None, None],
        b * s1[None, :, None, None] + m1[None, :, None, None],
        atol=1e-12,
    )
    assert not np.allclose(m0, m1)


@pytest.mark.parametrize(
    ("ids", "match"),
    [
        ([], "standardize_on: expected a non-empty"),
        (["cifar10-test_batch-0000", "cifar10-test_batch-0000"], "distinct record ids"),
        (["cifar10-test_batch-5000"], "ids of bundled CIFAR-10 records"),
        ([1, 2], "record ids \\(strings\\)"),
    ],
)
def test_bad_standardize_on_is_one_clear_error(ids: list[object], match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        load_cifar10(standardize_on=np.array(ids))


def test_record_id_validation() -> None:
    assert cifar10_record_id("data_batch_5", 42) == "cifar10-data_batch_5-0042"
    with pytest.raises(InvalidInputError, match="batch: expected one of"):
        cifar10_record_id("batch_6", 0)
    with pytest.raises(InvalidInputError, match="index"):
        cifar10_record_id("test_batch", 10_000)
