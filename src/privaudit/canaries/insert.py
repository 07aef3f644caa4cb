"""Insertion of input canaries into any framework's training data (the data-level API).

The trainer appends the **included** canaries (coin = 1) to its own training records and
trains as it would anyway; the excluded ones are never seen. That is Steinke, Nasr,
Jagielski (2023), Algorithm 1, lines 3-4: the training set is the non-audit records plus
the canaries whose coin came up "in".
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privaudit._validation import as_float_array, as_label_array, fail
from privaudit.canaries.sets import CanaryCoins, CanarySet

__all__ = ["append_canaries", "canary_records", "canary_texts"]


def canary_records(
    canaries: CanarySet, coins: CanaryCoins
) -> tuple[NDArray[np.str_], NDArray[np.float64], NDArray[np.int64]]:
    """The ``(ids, X, y)`` of the included input canaries: what to append to training.

    Raises
    ------
    InvalidInputError
        Gradient canaries (they are inserted by the optimizer,
        :class:`~privaudit.canaries.GradientCanaryInjector`), or coins of another set.
    """
    if canaries.is_gradient:
        raise fail(
            "canaries",
            "input canaries (gradient canaries are added by GradientCanaryInjector)",
            "a gradient canary set",
        )
    if canaries.is_text:
        raise fail("canaries", "input canaries (text canaries: canary_texts)", "a text canary set")
    coins.check_matches(canaries)
    keep = coins.included
    return canaries.ids[keep], canaries.X[keep], canaries.y[keep]


def append_canaries(
    X: ArrayLike, y: ArrayLike, canaries: CanarySet, coins: CanaryCoins
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """``X`` and ``y`` with the included input canaries appended (rows after the originals).

    The canaries' features must have as many columns as ``X``.
    """
    Xa = as_float_array(X, "X", ndim=2)
    ya = as_label_array(y, "y")
    _, Xc, yc = canary_records(canaries, coins)
    if canaries.X.shape[1] != Xa.shape[1]:
        raise fail("X", f"{canaries.X.shape[1]} feature columns (as the canaries)", Xa.shape[1])
    return np.concatenate([Xa, Xc]), np.concatenate([ya, yc])


def canary_texts(canaries: CanarySet, coins: CanaryCoins) -> list[str]:
    """The training texts of the included text canaries: each ``repetitions`` times.

    Append them to the fine-tuning texts (any framework; the order of the training data is
    the training recipe's business). The excluded canaries are never trained on (Steinke,
    Nasr, Jagielski 2023, Algorithm 1, lines 3-4). With ``repetitions > 1`` one coin
    changes that many training records: :func:`~privaudit.canaries.audit_canaries` audits
    the group and reports per-record bounds by group privacy.

    Raises
    ------
    InvalidInputError
        A set that is not of text canaries, or coins of another set.
    """
    if not canaries.is_text:
        raise fail("canaries", "text canaries", f"a {canaries.kind!r} set")
    coins.check_matches(canaries)
    texts = canaries.texts[coins.included].tolist()
    return [t for t in texts for _ in range(canaries.repetitions)]
