"""LiRA's augmented query views of flattened images (signals/views.py)."""

from __future__ import annotations

import numpy as np
import pytest

from privaudit.data import load_digits
from privaudit.errors import InvalidInputError
from privaudit.signals.views import IDENTITY_VIEW, QueryViews, query_views_of, view_datasets


def test_views_of_the_reference_code() -> None:
    # shifts in {-s, 0, s}^2, each mirrored with flips: 9 / 18 views, identity first
    v = QueryViews((1, 4, 4), shift=2)
    assert v.n_views == 9 and v.names[0] == IDENTITY_VIEW
    assert len(set(v.names)) == 9
    f = QueryViews((1, 4, 4), shift=2, flip=True)
    assert f.n_views == 18 and f.names[9] == "flip,shift(0,0)"
    assert QueryViews((1, 4, 4), shift=0, flip=True).n_views == 2
    with pytest.raises(InvalidInputError):
        QueryViews((1, 4, 4), shift=0)
    with pytest.raises(InvalidInputError):
        QueryViews((4, 4), shift=1)  # type: ignore[arg-type]


def test_views_shift_and_mirror_pixels() -> None:
    img = np.arange(16.0).reshape(1, 1, 4, 4)
    X = img.reshape(1, -1)
    views = dict(QueryViews((1, 4, 4), shift=1, flip=True).apply(X))
    np.testing.assert_array_equal(views[IDENTITY_VIEW], X)
    down = views["shift(1,0)"].reshape(4, 4)  # moved one row down, zeros shifted in
    np.testing.assert_array_equal(down[0], 0.0)
    np.testing.assert_array_equal(down[1:], img[0, 0, :3])
    right = views["shift(0,1)"].reshape(4, 4)
    np.testing.assert_array_equal(right[:, 0], 0.0)
    np.testing.assert_array_equal(right[:, 1:], img[0, 0, :, :3])
    np.testing.assert_array_equal(views["flip,shift(0,0)"].reshape(4, 4), img[0, 0, :, ::-1])
    with pytest.raises(InvalidInputError, match="16 features"):
        QueryViews((1, 4, 4), shift=1).apply(np.zeros((2, 15)))


def test_view_datasets_keep_ids_and_labels() -> None:
    full = load_digits()
    ds = full.subset(full.record_ids[:20])
    out = view_datasets(QueryViews((1, 8, 8), shift=1), ds)
    assert [n for n, _ in out] == list(QueryViews((1, 8, 8), shift=1).names[1:])
    for _, v in out:
        np.testing.assert_array_equal(v.record_ids, ds.record_ids)
        np.testing.assert_array_equal(v.y, ds.y)
        assert v.fingerprint() != ds.fingerprint()


def test_query_views_of_trainers() -> None:
    class T:
        def query_augmentation(self) -> dict[str, object]:
            return {"input_shape": [1, 8, 8], "shift": 2, "flip": False}

    assert query_views_of(T()) == QueryViews((1, 8, 8), shift=2)
    assert query_views_of(object()) is None


def test_torch_trainer_query_augmentation() -> None:
    pytest.importorskip("torch")
    from privaudit.models.torch_models import TorchRecipe, TorchTrainer

    base = {"factory": "privaudit.models.torch_nets:mlp", "input_shape": (1, 8, 8)}
    shift = TorchTrainer(TorchRecipe(**base, augmentation="shift", max_shift=3))  # type: ignore[arg-type]
    assert query_views_of(shift) == QueryViews((1, 8, 8), shift=3)
    flip = TorchTrainer(TorchRecipe(**base, augmentation="flip"))  # type: ignore[arg-type]
    assert query_views_of(flip) == QueryViews((1, 8, 8), shift=0, flip=True)
    plain = TorchTrainer(TorchRecipe(factory="privaudit.models.torch_nets:mlp"))
    assert query_views_of(plain) is None
