"""Per-canary scores, higher = more likely included.

* **Black box, input canaries** (Steinke, Nasr, Jagielski 2023, Sec. 7): the negative
  cross-entropy loss of the canary's own (wrong or out-of-distribution) label under the
  released model. The logit-scaled confidence ``log p_y - log(1 - p_y)`` (Carlini et al.
  2022) is a strictly increasing function of ``-loss`` for one canary, so it gives the
  same ranking and the same guesses; the loss is what is reported.
* **White box, gradient canaries** (Steinke et al. 2023, Sec. 7; Nasr et al., USENIX
  Security 2023, Sec. 3 and 5): the parameter update read along the canary's direction
  ``e_j``. In units of the canary's own contribution, step ``t`` gives

  .. math:: x_t = (\\theta_t - \\theta_{t+1})_j \\, B / (\\eta C),

  which is ``b_t + \\sigma z_t + (\\text{real-data gradient})_j / C`` for plain SGD with
  learning rate ``\\eta``, expected batch size ``B``, clipping norm ``C``, noise
  multiplier ``\\sigma`` and ``b_t ~ Bernoulli(q)`` when the canary is included.

  - ``access="final"`` (the final model and the initial one, Cebere et al., ICLR 2025,
    "hidden state"): the score is the total displacement ``sum_t x_t`` (the dot product
    of ``theta_0 - theta_T`` with the canary direction, scaled);
  - ``access="iterates"`` (every logged iterate): each coordinate's noise scale is taken
    as ``s_j = max(sigma, r_j)``, ``r_j`` the robust spread of its steps (1.4826 times their
    median absolute deviation: a coordinate the real data move a lot weighs less; with
    fewer than 16 steps the spread is too noisy to estimate and ``s_j = sigma``), then
    the log-likelihood ratio of "the canary was in" against "it was not",

    .. math:: s = \\sum_t \\log\\big(1 - q + q\\, e^{(x_t - 1/2)/s_j^2}\\big),

    the Neyman-Pearson statistic of the subsampled Gaussian mechanism step by step
    (Nasr et al. 2023 audit every step's Gaussian; this composes them). Any function of
    the released iterates is a valid score (post-processing), so this choice affects the
    power of the audit, never its validity. Without ``noise_multiplier`` and
    ``sample_rate`` (or with no noise) ``sum_t x_t / r_j`` is used. Centring a coordinate
    by its own median step would also remove the canary's own mean shift (of the order
    of ``q``), so the steps are not centred.

  With momentum or Adam ``x_t`` is not the clipped noisy gradient; the score stays valid
  but loses power (plain SGD is what the audit is designed for).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privaudit._validation import as_float_array, check_choice, fail
from privaudit.canaries.sets import CanarySet

__all__ = ["ACCESS", "gradient_canary_scores", "input_canary_scores", "step_signals"]

#: White-box access levels: the final (and initial) model, or every logged iterate.
ACCESS = ("final", "iterates")

#: Fewest steps from which a coordinate's own spread is estimated (``"iterates"``).
MIN_STEPS_FOR_SPREAD = 16


def input_canary_scores(
    canaries: CanarySet,
    *,
    loss: ArrayLike | None = None,
    logits: ArrayLike | None = None,
    probs: ArrayLike | None = None,
) -> NDArray[np.float64]:
    """``-loss`` of each input canary's label (one of ``loss``, ``logits``, ``probs``).

    Parameters
    ----------
    canaries : CanarySet
        Input canaries; rows of the outputs are in the order of ``canaries.ids``.
    loss : array_like, optional
        Per-canary cross-entropy loss of its label, ``(m,)``.
    logits, probs : array_like, optional
        Per-canary model outputs, ``(m, n_classes)``.
    """
    if canaries.is_gradient or canaries.is_text:
        raise fail("canaries", "input canaries", f"a {canaries.kind} canary set")
    given = [v for v in (loss, logits, probs) if v is not None]
    if len(given) != 1:
        raise fail("loss/logits/probs", "exactly one of them", f"{len(given)} given")
    m = canaries.m
    if loss is not None:
        la = as_float_array(loss, "loss", ndim=1)
        if la.size != m:
            raise fail("loss", f"{m} values (one per canary)", la.size)
        return -la
    name = "logits" if logits is not None else "probs"
    values = logits if logits is not None else probs
    a = as_float_array(values if values is not None else [], name, ndim=2)
    if a.shape != (m, canaries.n_classes):
        raise fail(name, f"shape ({m}, {canaries.n_classes})", a.shape)
    rows = np.arange(m)
    if logits is not None:
        z = a - a.max(axis=1, keepdims=True)
        logp = z[rows, canaries.y] - np.log(np.exp(z).sum(axis=1))
    else:
        if (a < 0).any() or (a > 1).any():
            raise fail("probs", "probabilities in [0, 1]", "values outside")
        logp = np.log(np.clip(a[rows, canaries.y], 1e-300, None))
    return np.asarray(logp, dtype=np.float64)


def step_signals(
    trace: ArrayLike, *, lr: float, expected_batch_size: float, max_grad_norm: float
) -> NDArray[np.float64]:
    """``x_t = (theta_t - theta_{t+1}) B / (lr C)`` per step and canary, ``(T, m)``.

    ``trace`` holds the canary coordinates of the parameters, one row per iterate
    (``T + 1`` rows, the initial model first).
    """
    tr = as_float_array(trace, "iterates", ndim=2)
    if tr.shape[0] < 2:
        raise fail("iterates", "at least 2 iterates (the initial and the final model)", tr.shape[0])
    for name, v in (
        ("lr", lr),
        ("expected_batch_size", expected_batch_size),
        ("max_grad_norm", max_grad_norm),
    ):
        if not (math.isfinite(v) and v > 0):
            raise fail(name, "a finite number > 0", v)
    return np.asarray((tr[:-1] - tr[1:]) * (expected_batch_size / (lr * max_grad_norm)))


def gradient_canary_scores(
    trace: ArrayLike,
    *,
    lr: float,
    expected_batch_size: float,
    max_grad_norm: float,
    access: str = "iterates",
    noise_multiplier: float | None = None,
    sample_rate: float | None = None,
) -> NDArray[np.float64]:
    """White-box scores of Dirac canaries from the logged values of their coordinates.

    Parameters
    ----------
    trace : array_like, shape (T + 1, m)
        The canaries' coordinates after every step (the initial model first). With
        ``access="final"`` only the first and the last row are read.
    lr, expected_batch_size, max_grad_norm : float
        The run's learning rate, expected batch size (``q * n`` of Opacus) and clipping norm.
    access : {"final", "iterates"}
        What the auditor sees (see the module docstring).
    noise_multiplier, sample_rate : float, optional
        ``sigma`` and ``q`` of the run, for the likelihood-ratio score of ``"iterates"``.

    Returns
    -------
    ndarray, shape (m,)
    """
    check_choice(access, "access", ACCESS)
    tr = as_float_array(trace, "iterates", ndim=2)
    if access == "final":
        tr = tr[[0, -1]]
    x = step_signals(
        tr, lr=lr, expected_batch_size=expected_batch_size, max_grad_norm=max_grad_norm
    )
    if access == "final":
        return np.asarray(x.sum(axis=0))
    # robust spread of each coordinate's steps (1.4826 MAD around their median); the
    # steps themselves are not centred (see the module docstring)
    med = np.median(x, axis=0, keepdims=True)
    mad = 1.4826 * np.median(np.abs(x - med), axis=0, keepdims=True)
    if noise_multiplier is None or sample_rate is None or noise_multiplier <= 0:
        return np.asarray((x / np.maximum(mad, 1e-12)).sum(axis=0))
    q = float(sample_rate)
    if not 0.0 < q <= 1.0:
        raise fail("sample_rate", "a rate in (0, 1]", q)
    if x.shape[0] < MIN_STEPS_FOR_SPREAD:
        # the spread of a few steps is mostly noise: it would weigh canaries at random
        mad = np.zeros_like(mad)
    s2 = np.maximum(float(noise_multiplier), mad) ** 2
    if q == 1.0:
        return np.asarray(((x - 0.5) / s2).sum(axis=0))
    llr = np.logaddexp(math.log1p(-q), math.log(q) + (x - 0.5) / s2)
    return np.asarray(llr.sum(axis=0))
