"""Orientation of signals for attacks (private).

Signals keep their natural direction; ``privaudit.signals.SIGNAL_HIGHER_IS_MEMBER``
says which way each runs (loss: low = member). Attacks orient inside, with the two
helpers here.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import fail
from privaudit.signals import SIGNAL_HIGHER_IS_MEMBER

_TINY = float(np.finfo(np.float64).tiny)


def higher_is_member(signal: str) -> bool:
    """Whether larger values of ``signal`` indicate membership."""
    try:
        return bool(SIGNAL_HIGHER_IS_MEMBER[signal])
    except KeyError:
        raise fail("signal", "one of " + ", ".join(SIGNAL_HIGHER_IS_MEMBER), repr(signal)) from None


def member_oriented(signal: str, values: NDArray[np.float64]) -> NDArray[np.float64]:
    """``values`` if higher = member for ``signal``, else ``-values``."""
    out: NDArray[np.float64] = values if higher_is_member(signal) else -values
    return out


def loss_like(signal: str, values: NDArray[np.float64]) -> tuple[NDArray[np.float64], str]:
    """Map a signal to the paper's loss-like scale (lower = member) and its rescaling.

    * ``loss``: itself, logit-rescaled for the Gaussian fit (Ye et al. App. B.3);
    * ``prob_true``: ``-log(max(p, tiny))``, i.e. the cross-entropy loss, logit-rescaled;
    * any other signal: oriented so that lower = member, Gaussian fit without rescaling
      (``logit_confidence`` is already the logit rescaling of the loss, so the Gaussian
      fit is the same model as for ``loss``).
    """
    if signal == "loss":
        return values, "logit"
    if signal == "prob_true":
        return -np.log(np.maximum(values, _TINY)), "logit"
    return -member_oriented(signal, values), "none"
