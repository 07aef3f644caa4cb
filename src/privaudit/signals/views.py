r"""Augmented query views of image records: LiRA's augmented queries.

Carlini, Chien, Nasr, Song, Terzis, Tramèr, "Membership Inference Attacks From First
Principles" (IEEE S&P 2022), Sec. VI-A ("Augmentations"): models trained with data
augmentation are queried, in eval mode, on augmented versions of each record (the
augmentations they were trained with: mirror images and shifts), and one Gaussian is
fitted per view. The public reference code (tensorflow/privacy ``mi_lira_2021``,
``inference.py``) queries every shift in ``{-s, 0, s}^2`` of the training padding ``s``
(4 pixels on CIFAR-10), each also mirrored when flips were used: 9 or 18 views.

:class:`QueryViews` is that set of views for flattened images of a given shape; a
trainer trained with image augmentation says so through ``query_augmentation()``
(:class:`privaudit.models.torch_models.TorchTrainer`: from its recipe), read by
:func:`query_views_of`. :func:`view_datasets` turns a dataset into one dataset per non-identity
view (same ids and labels, augmented features), on which the ordinary signals
(:func:`privaudit.signals.model_signals`) are computed; the attacks combine the views
(:mod:`privaudit.attacks.lira`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import as_float_array, check_positive_int, fail
from privaudit.data import Dataset
from privaudit.models.torch_recipe import shift_images

__all__ = ["IDENTITY_VIEW", "QueryViews", "query_views_of", "view_datasets"]

#: Name of the un-augmented view (always the first).
IDENTITY_VIEW = "identity"


@dataclasses.dataclass(frozen=True)
class QueryViews:
    """The augmented query views of flattened ``(C, H, W)`` images.

    Parameters
    ----------
    input_shape : (C, H, W)
        Shape of one image; a record's features are the image flattened in C order.
    shift : int
        Shifts ``(dy, dx)`` in ``{-shift, 0, shift}^2`` (zeros shifted in); 0 = none.
    flip : bool
        Each shifted view also mirrored horizontally.
    """

    input_shape: tuple[int, int, int]
    shift: int = 1
    flip: bool = False

    def __post_init__(self) -> None:
        shape = tuple(int(s) for s in self.input_shape)
        if len(shape) != 3 or min(shape) < 1:
            raise fail("input_shape", "(channels, height, width)", self.input_shape)
        object.__setattr__(self, "input_shape", shape)
        if self.shift != 0:
            check_positive_int(self.shift, "shift")
        if self.shift == 0 and not self.flip:
            raise fail("query views", "a shift > 0 or flips (else there is one view only)", 0)

    def _offsets(self) -> list[tuple[int, int]]:
        s = int(self.shift)
        steps = (0,) if s == 0 else (0, -s, s)
        return [(dy, dx) for dy in steps for dx in steps]

    def _specs(self) -> list[tuple[bool, int, int]]:
        return [
            (m, dy, dx)
            for m in ((False, True) if self.flip else (False,))
            for dy, dx in self._offsets()
        ]

    @property
    def names(self) -> tuple[str, ...]:
        """View names; the first is :data:`IDENTITY_VIEW`."""
        out = []
        for mirror, dy, dx in self._specs():
            if not mirror and dy == 0 and dx == 0:
                out.append(IDENTITY_VIEW)
            else:
                out.append(f"{'flip,' if mirror else ''}shift({dy},{dx})")
        return tuple(out)

    @property
    def n_views(self) -> int:
        return len(self._specs())

    def settings(self) -> dict[str, Any]:
        return {
            "input_shape": list(self.input_shape),
            "shift": int(self.shift),
            "flip": bool(self.flip),
        }

    def apply(self, X: NDArray[np.float64]) -> list[tuple[str, NDArray[np.float64]]]:
        """Every view of the flattened images ``X`` (n, C*H*W), identity first."""
        Xa = as_float_array(X, "X", ndim=2)
        c, h, w = self.input_shape
        if Xa.shape[1] != c * h * w:
            raise fail(
                "query views",
                f"records with {c * h * w} features (images of shape {self.input_shape})",
                f"{Xa.shape[1]} features",
            )
        imgs = Xa.reshape(-1, c, h, w)
        out = []
        for name, (mirror, dy, dx) in zip(self.names, self._specs(), strict=True):
            base = np.ascontiguousarray(imgs[..., ::-1]) if mirror else imgs
            if dy == 0 and dx == 0:
                v = base
            else:
                v = shift_images(base, np.tile([dy, dx], (imgs.shape[0], 1)))
            out.append((name, np.ascontiguousarray(v.reshape(Xa.shape[0], -1))))
        return out


def query_views_of(trainer: Any) -> QueryViews | None:
    """The views of ``trainer.query_augmentation()`` (a dict ``input_shape``, ``shift``,
    ``flip``, e.g. :meth:`privaudit.models.torch_models.TorchTrainer.query_augmentation`);
    None when the trainer has no image augmentation."""
    fn = getattr(trainer, "query_augmentation", None)
    spec = fn() if callable(fn) else None
    if spec is None:
        return None
    return QueryViews(
        tuple(spec["input_shape"]), shift=int(spec.get("shift", 0)), flip=bool(spec.get("flip"))
    )


def view_datasets(views: QueryViews, dataset: Dataset) -> list[tuple[str, Dataset]]:
    """One dataset per non-identity view: the same ids and labels, augmented features."""
    out = []
    for name, Xv in views.apply(dataset.X)[1:]:
        out.append((name, dataclasses.replace(dataset, name=f"{dataset.name}@{name}", X=Xv)))
    return out
