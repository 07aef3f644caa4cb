r"""RMIA, the relative membership-inference attack of Zarifzadeh, Liu and Shokri (ICML 2024).

Score (Zarifzadeh et al. 2024, Sec. 3, Eq. 4-5), with :math:`\Pr(x|\theta)` the target's
probability of the true class (``prob_true``):

.. math::

    LR_\theta(x, z) = \frac{\Pr(x|\theta)/\Pr(x)}{\Pr(z|\theta)/\Pr(z)}, \qquad
    \mathrm{Score}(x) = \frac{1}{|Z|}\sum_{z \in Z} \mathbf 1[LR_\theta(x, z) \ge \gamma],

where :math:`\Pr(x) = \mathbb E_{\theta'}[\Pr(x|\theta')]` over reference models:

* online: the mean over all reference models (IN and OUT);
* offline: :math:`\Pr(x) = \tfrac12[(1+a)\Pr_{OUT}(x) + (1-a)]`, the linear
  approximation :math:`\Pr_{IN} \approx a \Pr_{OUT} + (1-a)` (Sec. 3, "offline"), where
  :math:`\Pr_{OUT}(x)` is the mean over the reference models that did not train on x.
  The same formula gives :math:`\Pr(z)` for population records.

Computation. With :math:`r_x = \Pr(x|\theta)/\Pr(x)` and :math:`r_z` likewise,
:math:`LR \ge \gamma \iff r_z \le r_x/\gamma` (all :math:`r > 0`). So the score is
``searchsorted(sort(r_z), r_x / gamma, side="right") / |Z|``: exact (ties included),
:math:`O((N+Z)\log Z)` time and :math:`O(N+Z)` memory; the :math:`N \times Z` matrix is
never formed. Probabilities are floored at the smallest normal double so every ratio
is finite and positive.

When a population record is also an audited record (same id), its self-pair
:math:`(x, x)` is removed: :math:`(\#\{z\} - \mathbf 1[r_x \le r_x/\gamma])/(|Z| - 1)`,
as the paper's code does when it uses the target's non-members as population.

Defaults: ``gamma=2.0`` and ``a=0.3`` (the paper's CIFAR-10 configurations; the
ml_privacy_meter library uses gamma = 1). One query per record (no augmentations, so
no majority vote).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import fail
from privaudit.attacks.base import AttackData, register, require
from privaudit.errors import DesignError

__all__ = ["rmia_offline", "rmia_online", "rmia_scores"]

Result = tuple[NDArray[Any], NDArray[np.float64], dict[str, Any]]

_TINY = float(np.finfo(np.float64).tiny)


def rmia_scores(
    ratio_x: NDArray[np.float64],
    ratio_z: NDArray[np.float64],
    gamma: float,
    *,
    self_index: NDArray[np.intp] | None = None,
) -> NDArray[np.float64]:
    r"""Fraction of population records z with :math:`r_z \le r_x/\gamma`, per x.

    Parameters
    ----------
    ratio_x : (N,) positive floats
        :math:`\Pr(x|\theta)/\Pr(x)` per audited record.
    ratio_z : (Z,) positive floats
        :math:`\Pr(z|\theta)/\Pr(z)` per population record.
    gamma : float
        Threshold on the pairwise likelihood ratio (> 0).
    self_index : (N,) int array, optional
        For each x, the index of the same record in the population, or -1; such self
        pairs are removed (denominator ``Z - 1``).

    Returns
    -------
    (N,) float array in [0, 1]; O((N+Z) log Z) time, O(N+Z) memory.

    Examples
    --------
    >>> rmia_scores(np.array([1.0, 4.0]), np.array([0.5, 1.0, 2.0]), 2.0)
    array([0.33333333, 1.        ])
    """
    if not (np.isfinite(gamma) and gamma > 0):
        raise fail("gamma", "a positive finite number", gamma)
    cut = ratio_x / gamma
    counts = np.searchsorted(np.sort(ratio_z), cut, side="right").astype(np.float64)
    denom = np.full(ratio_x.size, float(ratio_z.size))
    if self_index is not None:
        has = self_index >= 0
        own = ratio_z[self_index[has]]
        counts[has] -= (own <= cut[has]).astype(np.float64)
        denom[has] -= 1.0
    if np.any(denom < 1):
        raise DesignError(
            "population_target: expected at least one population record other than x itself"
        )
    out: NDArray[np.float64] = counts / denom
    return out


def _self_index(record_ids: NDArray[Any], pop_ids: NDArray[Any]) -> NDArray[np.intp] | None:
    """Position of each audited record in the population (-1 if absent), by id value.

    Integer ids of any kind (int64 / uint64) compare by value; string ids by text;
    an integer id and a string id never match (the records layer keeps ids as int64 or
    str, so ``7`` and ``"7"`` are different records).
    """
    kx, kz = record_ids.dtype.kind, pop_ids.dtype.kind
    pos: dict[Any, int]
    keys: list[Any]
    if kx in "iu" and kz in "iu":
        pos = {int(v): j for j, v in enumerate(pop_ids.tolist())}
        keys = [int(v) for v in record_ids.tolist()]
    elif kx in "US" and kz in "US":
        pos = {str(v): j for j, v in enumerate(pop_ids.tolist())}
        keys = [str(v) for v in record_ids.tolist()]
    else:
        return None
    out = np.fromiter((pos.get(k, -1) for k in keys), dtype=np.intp, count=len(keys))
    if not (out >= 0).any():
        return None
    return out


def _mean_over(values: NDArray[np.float64], mask: NDArray[np.bool_] | None) -> NDArray[np.float64]:
    if mask is None:
        out: NDArray[np.float64] = values.mean(axis=0)
        return out
    return np.asarray(np.where(mask, values, 0.0).sum(axis=0) / mask.sum(axis=0), dtype=np.float64)


def _rmia(data: AttackData, *, offline: bool, a: float, gamma: float) -> Result:
    signal = "prob_true"
    if not (isinstance(gamma, int | float) and np.isfinite(gamma) and gamma > 0):
        raise fail("gamma", "a positive finite number", gamma)
    if offline and not (isinstance(a, int | float) and 0.0 <= a <= 1.0):
        raise fail("a", "a number in [0, 1]", a)
    p_x = np.maximum(data.table("target", signal).values[0], _TINY)
    pop_table = data.table("population_target", signal)
    p_z = np.maximum(pop_table.values[0], _TINY)
    ref_x = data.table("reference", signal).values
    ref_z = data.table("reference_population", signal).values
    membership = require(data.reference_membership, "reference_membership")
    pop_membership = data.reference_population_membership
    n_models = membership.n_models
    info: dict[str, Any] = {
        "gamma": float(gamma),
        "n_models": n_models,
        "n_population": int(p_z.size),
    }
    if offline:
        out_x = ~membership.keep
        n_out_x = out_x.sum(axis=0)
        if n_out_x.min() < 1:
            raise DesignError(
                "reference_membership: expected at least 1 OUT reference model per audited record "
                f"for offline RMIA, found {int((n_out_x < 1).sum())} record(s) with none"
            )
        out_z = None if pop_membership is None else ~pop_membership.keep
        if out_z is not None and out_z.sum(axis=0).min() < 1:
            raise DesignError(
                "reference_population_membership: expected at least 1 OUT reference model per "
                "population record for offline RMIA, found records with none"
            )
        pr_x = 0.5 * ((1.0 + a) * _mean_over(ref_x, out_x) + (1.0 - a))
        pr_z = 0.5 * ((1.0 + a) * _mean_over(ref_z, out_z) + (1.0 - a))
        info.update(
            a=float(a),
            n_out_min=int(n_out_x.min()),
            n_out_max=int(n_out_x.max()),
            population_out_source="all models"
            if out_z is None
            else "reference_population_membership",
        )
    else:
        pr_x = ref_x.mean(axis=0)
        pr_z = ref_z.mean(axis=0)
        n_in = membership.keep.sum(axis=0)
        info.update(n_in_min=int(n_in.min()), n_in_max=int(n_in.max()))
    ratio_x = p_x / np.maximum(pr_x, _TINY)
    ratio_z = p_z / np.maximum(pr_z, _TINY)
    self_index = _self_index(data.record_ids, pop_table.record_ids)
    scores = rmia_scores(ratio_x, ratio_z, float(gamma), self_index=self_index)
    info.update(
        n_self_pairs_removed=0 if self_index is None else int((self_index >= 0).sum()),
        reference_average="mean",
        prob_floor=_TINY,
        queries_per_record=1,
        alpha_calibrated=False,
    )
    return data.record_ids, scores, info


_FIELDS = (
    "target",
    "population_target",
    "reference",
    "reference_membership",
    "reference_population",
)


@register(
    "rmia-online",
    fields=_FIELDS,
    optional_fields=("reference_population_membership",),
    default_signal="prob_true",
    signal_choices=("prob_true",),
    alpha_threshold=False,
    description="RMIA online (Zarifzadeh et al. 2024): pairwise likelihood ratios against population",
)
def rmia_online(
    data: AttackData,
    *,
    rng: np.random.Generator,
    signal: str = "prob_true",
    gamma: float = 2.0,
) -> Result:
    r"""Online RMIA: :math:`\Pr(x)` = mean of :math:`\Pr(x|\theta')` over all reference models."""
    return _rmia(data, offline=False, a=1.0, gamma=gamma)


@register(
    "rmia-offline",
    fields=_FIELDS,
    optional_fields=("reference_population_membership",),
    default_signal="prob_true",
    signal_choices=("prob_true",),
    alpha_threshold=False,
    description="RMIA offline (Zarifzadeh et al. 2024): OUT reference models with the a-correction",
)
def rmia_offline(
    data: AttackData,
    *,
    rng: np.random.Generator,
    signal: str = "prob_true",
    a: float = 0.3,
    gamma: float = 2.0,
) -> Result:
    r"""Offline RMIA: :math:`\Pr(x) = \tfrac12[(1+a)\Pr_{OUT}(x) + (1-a)]`."""
    return _rmia(data, offline=True, a=a, gamma=gamma)
