r"""Label-only signals: how robust a model's predicted label is to input perturbations.

Choquette-Choo, Tramèr, Carlini and Papernot, "Label-Only Membership Inference
Attacks" (ICML 2021), Sec. 4: a model is more robust on its training points, so the
distance from a record to the decision boundary separates members from non-members
using the predicted labels only. For tabular and image data without an exact boundary
search they estimate that distance by the model's robustness to random noise
("noise robustness", Sec. 4.2 and 6): the fraction of noisy copies of the record that
are still classified correctly.

:func:`label_robustness` computes, for record :math:`(x, y)`,

.. math::

    r(x, y) = \frac{1}{1 + S Q}\Big(\mathbb 1[f(x) = y]
        + \sum_{s=1}^{S}\sum_{q=1}^{Q} \mathbb 1[f(x + \sigma_s\, \mathrm{scale} \odot
        \varepsilon_{s,q}) = y]\Big), \qquad \varepsilon_{s,q} \sim N(0, I),

over :data:`NOISE_SCALES` (``sigma_s``, multiples of each feature's standard deviation
``scale``) with ``Q`` queries per scale: averaging over a geometric range of noise scales
approximates the area under the record's robustness curve, a monotone proxy of its
distance to the boundary. Only ``argmax`` of the model's output is read. A record
misclassified at every scale scores 0.

The noise is a deterministic function of the record ids and ``seed``: every model sees
the *same* noisy copies of a record (paired queries), so differences between the target
and reference models come from the models, not from the noise. ``scale`` should be the
standard deviation of each feature over the whole dataset (not of the evaluated subset),
so that every evaluated set is perturbed alike; columns with zero spread get no noise.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import as_float_array, check_positive_int, fail

__all__ = ["NOISE_SCALES", "QUERY_SIGNALS", "label_robustness"]

#: Signals that need the model and the records' features (not only logits).
QUERY_SIGNALS: tuple[str, ...] = ("label_robustness",)

#: Noise scales, in units of each feature's standard deviation.
NOISE_SCALES: tuple[float, ...] = (0.05, 0.1, 0.2, 0.4, 0.8)


def _record_seed(record_id: Any, seed: int) -> int:
    h = hashlib.sha256(f"{seed}/{record_id!r}".encode()).digest()
    return int.from_bytes(h[:8], "little")


def label_robustness(
    model: Any,
    X: NDArray[np.float64],
    y: NDArray[np.int64],
    record_ids: NDArray[Any],
    *,
    scale: NDArray[np.float64] | None = None,
    n_queries: int = 8,
    noise_scales: tuple[float, ...] = NOISE_SCALES,
    seed: int = 0,
) -> NDArray[np.float64]:
    """Fraction of the record and its noisy copies that ``model`` labels correctly.

    Parameters
    ----------
    model : Model
        Anything with ``logits(X) -> (n, C)``; only the argmax is used.
    X : (n, d) float
        The records' features.
    y : (n,) int
        Their true labels.
    record_ids : (n,)
        Their ids: the noise of each record is seeded by its id and ``seed``.
    scale : (d,) float, optional
        Per-feature noise unit (default: the standard deviation of ``X``'s columns).
    n_queries : int
        Noisy copies per noise scale (default 8).
    noise_scales : tuple of float
        Multiples of ``scale`` (default :data:`NOISE_SCALES`).
    seed : int
        Root seed of the noise.

    Returns
    -------
    float64 array (n,) in [0, 1]; higher = more robust (more likely a member).
    """
    Xa = as_float_array(X, "X", ndim=2)
    ya = np.asarray(y, dtype=np.int64)
    ids = np.asarray(record_ids)
    if ya.shape != (Xa.shape[0],) or ids.shape != (Xa.shape[0],):
        raise fail("y, record_ids", f"one per row of X ({Xa.shape[0]})", (ya.shape, ids.shape))
    q = check_positive_int(n_queries, "n_queries")
    sigmas = np.asarray(noise_scales, dtype=np.float64)
    if sigmas.ndim != 1 or sigmas.size == 0 or np.any(~np.isfinite(sigmas)) or np.any(sigmas <= 0):
        raise fail("noise_scales", "positive finite numbers", noise_scales)
    unit = Xa.std(axis=0) if scale is None else as_float_array(scale, "scale", ndim=1)
    if unit.shape != (Xa.shape[1],):
        raise fail("scale", f"one value per feature ({Xa.shape[1]})", unit.shape)
    n, d = Xa.shape
    if n == 0:
        return np.zeros(0, dtype=np.float64)
    m = sigmas.size * q
    # (n, m, d) standard normal noise, each record's rows from its own generator
    eps = np.empty((n, m, d), dtype=np.float64)
    for i, rid in enumerate(ids.tolist()):
        eps[i] = np.random.default_rng(_record_seed(rid, seed)).standard_normal((m, d))
    step = np.repeat(sigmas, q)[None, :, None] * unit[None, None, :]
    noisy = (Xa[:, None, :] + step * eps).reshape(n * m, d)
    pred_clean = np.argmax(np.asarray(model.logits(Xa), dtype=np.float64), axis=1)
    pred_noisy = np.argmax(np.asarray(model.logits(noisy), dtype=np.float64), axis=1).reshape(n, m)
    correct = (pred_clean == ya).astype(np.float64) + (pred_noisy == ya[:, None]).sum(axis=1)
    return np.asarray(correct / (1.0 + m), dtype=np.float64)
