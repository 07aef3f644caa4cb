"""The :class:`Model` and :class:`Trainer` protocols every model adapter satisfies.

A *model* maps features to pre-softmax scores ("logits") ``z`` such that
``softmax(z)`` are its class probabilities; every per-record signal (loss, probability
of the true class, LiRA's logit-scaled confidence, ...) is computed from them by
:mod:`privaudit.signals`. A *trainer* turns a labelled training set and an integer seed
into a model, and describes itself by JSON-able ``settings`` that enter every cache key.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import as_float_array, as_label_array, check_positive_int, fail

__all__ = ["Model", "Trainer", "check_fit_inputs"]


@runtime_checkable
class Model(Protocol):
    """A trained classifier that exposes its logits.

    Attributes
    ----------
    n_classes : int
        Number of classes ``C`` of the label space (columns of :meth:`logits`), which
        includes classes the model never saw in training.
    """

    @property
    def n_classes(self) -> int:
        """Number of classes ``C``."""
        ...

    def logits(self, X: NDArray[np.float64]) -> NDArray[np.float64]:
        """Pre-softmax scores, float64 of shape ``(n, C)``; ``softmax`` = probabilities."""
        ...


@runtime_checkable
class Trainer(Protocol):
    """Something that trains a :class:`Model` from ``(X, y)`` and an integer seed.

    ``fit`` must be a pure function of ``(X, y, seed, settings())``: the same inputs give
    the same model, which is what makes cached models reusable.
    """

    @property
    def name(self) -> str:
        """Short identifier of the trainer (e.g. ``"mlpclassifier"``)."""
        ...

    def fit(self, X: NDArray[np.float64], y: NDArray[np.int64], *, seed: int) -> Model:
        """Train a model on ``X`` (float64, (n, d)) and ``y`` (int64 labels)."""
        ...

    def settings(self) -> dict[str, Any]:
        """JSON-able, deterministic description of everything that affects ``fit``."""
        ...


def check_fit_inputs(
    X: Any, y: Any, seed: Any, n_classes: int | None
) -> tuple[NDArray[np.float64], NDArray[np.int64], int]:
    """Validate the arguments of a ``Trainer.fit``: ``(X, y, C)``.

    ``X`` float64 (n, d); ``y`` int64 labels, one per row, below ``C``; ``seed`` an
    integer in ``[0, 2**32 - 1]``; ``C = n_classes`` or ``max(y) + 1``.
    """
    X = as_float_array(X, "X", ndim=2)
    y = as_label_array(y, "y")
    if y.size != X.shape[0]:
        raise fail("y", f"{X.shape[0]} labels (one per row of X)", y.size)
    if (
        isinstance(seed, bool)
        or not isinstance(seed, int | np.integer)
        or not 0 <= int(seed) < 2**32
    ):
        raise fail("seed", "an integer in [0, 2**32 - 1]", repr(seed))
    C = (
        int(y.max()) + 1
        if n_classes is None
        else check_positive_int(n_classes, "n_classes", minimum=2)
    )
    if y.max() >= C:
        raise fail("y", f"labels below n_classes={C}", f"maximum {int(y.max())}")
    return X, y, C
