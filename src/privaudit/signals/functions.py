"""Per-record membership signals computed stably from logits (or from losses).

Notation: ``z`` are a record's logits over ``C`` classes, ``y`` its true label,
``l_j = z_j - logsumexp(z)`` the log-softmax and ``p_j = exp(l_j)`` the probabilities.
Every function works in log space and returns finite float64 values for any finite
logits, including extremes such as ``[0, 1e4]`` or ``[-1e4, 0]`` (checked by property
tests).

=================== ======================================================= ==============
name                formula                                                 member when
=================== ======================================================= ==============
``loss``            ``-l_y = logsumexp(z) - z_y`` (cross-entropy)          lower
``prob_true``       ``p_y = exp(-loss)``                                   higher
``logit_confidence`` ``phi = z_y - logsumexp_{j != y} z_j = log(p_y/(1-p_y))`` higher
``entropy``         ``-sum_j p_j l_j``                                     lower
``modified_entropy`` ``-(1-p_y) log p_y - sum_{j != y} p_j log(1-p_j)``     lower
=================== ======================================================= ==============

Sources: the loss is the signal of Ye et al. (2022, CCS, Sec. 4); ``logit_confidence``
is LiRA's logit scaling (Carlini et al. 2022, S&P, Sec. IV-C, eq. (4)), computed as in
/shared/notes/attacks.md §2.1 without ever forming ``1 - p``; entropy and modified
entropy are Song & Mittal (2021, USENIX Security, "Systematic Evaluation of Privacy
Risks of Machine Learning Models", Sec. 3.2; the Mentr formula is reproduced from that
paper, which is not among the project's stored papers).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import log_softmax

from privaudit._validation import as_float_array, as_label_array, check_choice, fail

__all__ = [
    "LOSS_DERIVABLE",
    "MAX_ABS_LOGIT",
    "SIGNALS",
    "SIGNAL_HIGHER_IS_MEMBER",
    "compute_signal",
    "compute_signal_from_loss",
    "cross_entropy_loss",
    "entropy",
    "logit_confidence",
    "logit_confidence_from_loss",
    "modified_entropy",
    "prob_true",
    "prob_true_from_loss",
]

SIGNALS: tuple[str, ...] = ("loss", "prob_true", "logit_confidence", "entropy", "modified_entropy")

#: Direction of each signal: True when a *higher* value suggests a member.
SIGNAL_HIGHER_IS_MEMBER: dict[str, bool] = {
    "loss": False,
    "prob_true": True,
    "logit_confidence": True,
    "entropy": False,
    "modified_entropy": False,
    # label-only (privaudit.signals.perturb): members are more robust to input noise
    "label_robustness": True,
}

#: Signals that are functions of the true-class loss alone (available with losses only).
LOSS_DERIVABLE: tuple[str, ...] = ("loss", "prob_true", "logit_confidence")

#: logits beyond this magnitude are rejected: differences of two of them stay finite.
MAX_ABS_LOGIT = 1e300
_LN2 = float(np.log(2.0))
_TINY = float(np.finfo(np.float64).tiny)


def _check(logits: ArrayLike, labels: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    z = as_float_array(logits, "logits", ndim=2, allow_empty=True)
    y = as_label_array(labels, "labels")
    if y.size != z.shape[0]:
        raise fail("labels", f"{z.shape[0]} labels (one per row of logits)", y.size)
    if z.shape[1] < 2:
        raise fail("logits", "at least 2 columns (classes)", z.shape[1])
    if z.size and np.abs(z).max() > MAX_ABS_LOGIT:
        raise fail(
            "logits", f"values with |z| <= {MAX_ABS_LOGIT:g}", f"max |z| = {np.abs(z).max():g}"
        )
    if y.size and y.max() >= z.shape[1]:
        raise fail(
            "labels",
            f"labels in 0..{z.shape[1] - 1} (the logits have {z.shape[1]} classes)",
            f"maximum {int(y.max())}",
        )
    return z, y


def _log_softmax(z: NDArray[np.float64]) -> NDArray[np.float64]:
    """``(z - max z) - log(sum exp(z - max z))``: shifting first keeps ties exact."""
    return np.asarray(log_softmax(z, axis=1), dtype=np.float64)


def _logsumexp_excluding(z: NDArray[np.float64], idx: NDArray[np.int64]) -> NDArray[np.float64]:
    """Row-wise ``logsumexp_{j != idx_i} z_ij`` without forming -inf or warnings."""
    rows = np.arange(z.shape[0])
    mask = np.ones_like(z, dtype=bool)
    mask[rows, idx] = False
    masked = np.where(mask, z, -np.inf)
    m = masked.max(axis=1)
    e = np.where(mask, np.exp(np.where(mask, z, m[:, None]) - m[:, None]), 0.0)
    return np.asarray(m + np.log(e.sum(axis=1)), dtype=np.float64)


def cross_entropy_loss(logits: ArrayLike, labels: ArrayLike) -> NDArray[np.float64]:
    r"""Cross-entropy loss ``logsumexp(z) - z_y`` (>= 0), the signal of Ye et al. 2022.

    Computed as :math:`\log(1 + \sum_{j \ne y} e^{z_j - z_y}) = \mathrm{log1p}(e^{-\phi})`
    with :math:`\phi` = :func:`logit_confidence` (``np.logaddexp(0, -phi)``). Unlike
    ``-log_softmax(z)_y``, which rounds to exactly 0 once the margin exceeds about 37
    nats (``1 + e^{-37}`` is 1 in float64), this keeps the loss positive and distinct
    down to about ``1e-308`` (margins up to about 708 nats), so confident records do
    not tie.

    Parameters
    ----------
    logits : float array (n, C)
    labels : int array (n,)

    Returns
    -------
    float64 array (n,)
    """
    z, y = _check(logits, labels)
    if z.shape[0] == 0:
        return np.zeros(0)
    phi = z[np.arange(z.shape[0]), y] - _logsumexp_excluding(z, y)
    out = np.logaddexp(0.0, -phi)
    return np.maximum(np.asarray(out, dtype=np.float64), 0.0)


def prob_true(logits: ArrayLike, labels: ArrayLike) -> NDArray[np.float64]:
    """Probability of the true class ``p_y = softmax(z)_y = exp(-loss)``, in [0, 1]."""
    return np.exp(-cross_entropy_loss(logits, labels))


def logit_confidence(logits: ArrayLike, labels: ArrayLike) -> NDArray[np.float64]:
    """LiRA's logit-scaled confidence ``phi = log(p_y / (1 - p_y))``.

    Computed as ``z_y - logsumexp_{j != y} z_j`` (Carlini et al. 2022, Sec. IV-C; the
    stable form of notes/attacks.md §2.1), which never forms ``1 - p_y`` and so stays
    finite: logits ``[0, 1e4]`` with ``y = 1`` give ``phi = 1e4``, not ``+inf``.
    """
    z, y = _check(logits, labels)
    if z.shape[0] == 0:
        return np.zeros(0)
    return np.asarray(z[np.arange(z.shape[0]), y] - _logsumexp_excluding(z, y), dtype=np.float64)


def entropy(logits: ArrayLike, labels: ArrayLike | None = None) -> NDArray[np.float64]:
    """Shannon entropy of the prediction ``-sum_j p_j log p_j`` (nats), in [0, log C].

    ``labels`` are ignored (accepted for a uniform signature). Song & Mittal (2021),
    Sec. 3.2.
    """
    if labels is None:
        n = np.shape(logits)[0] if np.ndim(logits) >= 1 else 0
        z, _ = _check(logits, np.zeros(n, dtype=np.int64))
    else:
        z, _ = _check(logits, labels)
    if z.shape[0] == 0:
        return np.zeros(0)
    ls = _log_softmax(z)
    p = np.exp(ls)
    h = np.asarray(-(p * ls).sum(axis=1), dtype=np.float64)
    # rounding in ls (about one ulp of max|z|) may push h past its bounds [0, log C]
    return np.clip(h, 0.0, float(np.log(z.shape[1])))


def _log1m_softmax(z: NDArray[np.float64], ls: NDArray[np.float64]) -> NDArray[np.float64]:
    """``log(1 - p_j)`` for every entry, stably.

    For every class but the row's most likely one, ``p_j <= 1/2`` and
    ``log1p(-exp(l_j))`` is accurate. For the most likely class ``j*``,
    ``log(1 - p_{j*}) = logsumexp_{k != j*} l_k``.
    """
    n = z.shape[0]
    top = np.argmax(z, axis=1)
    out = np.log1p(-np.exp(np.minimum(ls, -_LN2)))
    out[np.arange(n), top] = _logsumexp_excluding(ls, top)
    return out


def modified_entropy(logits: ArrayLike, labels: ArrayLike) -> NDArray[np.float64]:
    """Modified prediction entropy of Song & Mittal (2021), Sec. 3.2 (Mentr):

    ``Mentr = -(1 - p_y) log p_y - sum_{j != y} p_j log(1 - p_j)``, >= 0.

    It is 0 for a confident correct prediction and grows both with uncertainty and
    with confident mistakes (unlike the entropy, it uses the label). Computed in log
    space: ``log p_y = l_y``, ``1 - p_y = exp(log(1 - p_y))`` and ``log(1 - p_j)`` as in
    :func:`_log1m_softmax`, so it is finite for any finite logits.
    """
    z, y = _check(logits, labels)
    n = z.shape[0]
    if n == 0:
        return np.zeros(0)
    ls = _log_softmax(z)
    p = np.exp(ls)
    log1m = _log1m_softmax(z, ls)
    rows = np.arange(n)
    term_y = -np.exp(log1m[rows, y]) * ls[rows, y]
    others = p * log1m
    others[rows, y] = 0.0
    return np.maximum(np.asarray(term_y - others.sum(axis=1), dtype=np.float64), 0.0)


# ---------------------------------------------------------------------- losses only
def _check_loss(losses: ArrayLike) -> NDArray[np.float64]:
    loss = as_float_array(losses, "losses", ndim=1, allow_empty=True)
    if loss.size and loss.min() < 0:
        raise fail("losses", "non-negative cross-entropy losses", f"minimum {loss.min()}")
    return loss


def prob_true_from_loss(losses: ArrayLike) -> NDArray[np.float64]:
    """``p_y = exp(-loss)``."""
    return np.exp(-_check_loss(losses))


def logit_confidence_from_loss(losses: ArrayLike) -> NDArray[np.float64]:
    """``phi = log(p/(1-p)) = -loss - log(-expm1(-loss))`` with ``p = exp(-loss)``.

    ``-expm1(-loss)`` is ``1 - p`` computed without cancellation. A loss of exactly 0
    (``p = 1`` in float64, which happens when the logit margin exceeds ~745) is floored
    at the smallest normal float64 (2.2e-308), so ``phi`` is capped at about 708.4:
    a losses-only model cannot express larger margins.
    """
    loss = np.maximum(_check_loss(losses), _TINY)
    return np.asarray(-loss - np.log(-np.expm1(-loss)), dtype=np.float64)


def compute_signal_from_loss(name: str, losses: ArrayLike) -> NDArray[np.float64]:
    """A signal from cross-entropy losses alone (for losses-only precomputed models).

    Only :data:`LOSS_DERIVABLE` signals are functions of the loss; entropy and modified
    entropy need the full probability vector and raise ``InvalidInputError``.
    """
    check_choice(name, "signal", SIGNALS)
    if name not in LOSS_DERIVABLE:
        raise fail(
            "signal",
            f"one of {', '.join(LOSS_DERIVABLE)} for a model given by losses only ({name!r} needs full logits)",
            repr(name),
        )
    if name == "loss":
        return np.array(_check_loss(losses), dtype=np.float64)
    if name == "prob_true":
        return prob_true_from_loss(losses)
    return logit_confidence_from_loss(losses)


_FUNCTIONS: dict[str, Callable[[ArrayLike, ArrayLike], NDArray[np.float64]]] = {
    "loss": cross_entropy_loss,
    "prob_true": prob_true,
    "logit_confidence": logit_confidence,
    "entropy": entropy,
    "modified_entropy": modified_entropy,
}


def compute_signal(name: str, logits: ArrayLike, labels: ArrayLike) -> NDArray[np.float64]:
    """Compute signal ``name`` (one of :data:`SIGNALS`) for every row of ``logits``.

    Parameters
    ----------
    name : str
    logits : float array (n, C), finite
    labels : int array (n,), in ``0 .. C - 1``

    Returns
    -------
    float64 array (n,), finite. Orientation: :data:`SIGNAL_HIGHER_IS_MEMBER`.
    """
    check_choice(name, "signal", SIGNALS)
    return _FUNCTIONS[name](logits, labels)
