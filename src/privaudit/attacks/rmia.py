r"""RMIA, the relative membership-inference attack of Zarifzadeh, Liu and Shokri (ICML 2024).

Score (Zarifzadeh et al. 2024, Sec. 3, Eq. 4-5), with :math:`\Pr(x|\theta)` the target's
probability of the true class:

.. math::

    LR_\theta(x, z) = \frac{\Pr(x|\theta)/\Pr(x)}{\Pr(z|\theta)/\Pr(z)}, \qquad
    \mathrm{Score}(x) = \frac{1}{|Z|}\sum_{z \in Z} \mathbf 1[LR_\theta(x, z) \ge \gamma],

where :math:`\Pr(x) = \mathbb E_{\theta'}[\Pr(x|\theta')]` over reference models:

* online (``prior="balanced"``, the default): :math:`\tfrac12[\Pr_{IN}(x) + \Pr_{OUT}(x)]`,
  each world the mean over the reference models of that world, a world with no model
  imputed by the linear approximation below (:func:`_log_balanced_prior`): the paper's
  reference models train on x with probability 1/2, which the plain mean over all models
  (``prior="mean"``, the paper's code) estimates only for records IN for half of them;
  the two agree exactly there;
* offline: :math:`\Pr(x) = \tfrac12[(1+a)\Pr_{OUT}(x) + (1-a)]`, the linear
  approximation :math:`\Pr_{IN} \approx a \Pr_{OUT} + (1-a)` (Sec. 3, "offline"), where
  :math:`\Pr_{OUT}(x)` is the mean over the reference models that did not train on x.

:math:`\Pr(z)` of a population record is estimated by the same rule as :math:`\Pr(x)`
(Sec. 3), from its own reference models: IN or OUT per ``reference_population_membership``;
without it every reference model is OUT for every population record, so online its IN
world is imputed with ``a`` as a missing world of an audited record is.

Log space. Everything is computed from the cross-entropy loss (the ``loss`` signal,
:math:`\log \Pr(x|\theta) = -\ell`, which the signal layer keeps exact down to about
1e-308 from the logits): :math:`\log r_x = \log\Pr(x|\theta) - \log\Pr(x)`, with the
reference averages taken as log-mean-exp (``expm1``/``log1p``, exact for losses far
below machine epsilon). Computing with :math:`\Pr(x|\theta) = e^{-\ell}` instead
saturates: it rounds to exactly 1 once the logit margin exceeds about 37, and on an
overfit target hundreds of records then share one ratio (measured on the demo target
before this change: 1,169 of 2,400 records tied at gamma = 2).

Score forms (``score=``; their names, :data:`SCORE_NAMES`, are shown beside the figures in
``results.json`` (``params["score_name"]``) and the report's attack table, and
:data:`SCORE_DESCRIPTIONS` in its threat model):

``"ratio"`` (default): the **log likelihood ratio**
    :math:`\log r_x = \log\Pr(x|\theta) - \log\Pr(x)`, the log of the ratio of the
    target's likelihood of ``x`` to its likelihood under the reference models (the
    paper's "relative likelihood" of ``x``, Sec. 3, before any comparison with population
    records). This is **not** the paper's score, which compares ``x`` with each population
    record ``z`` (the pairwise-comparison score, ``"fraction"`` below); population records
    do not enter this form. With one query per record (no augmentations),
    :math:`\mathrm{Score}(x) = \hat F_Z(\log r_x - \log\gamma)`, with :math:`\hat F_Z`
    the empirical CDF of :math:`\log r_z`: a non-decreasing *step* function of
    :math:`\log r_x`. Sweeping the threshold of the fraction at a fixed gamma only
    visits the thresholds :math:`\log r_z + \log\gamma` of :math:`\log r_x`, and sweeping
    gamma as well visits all of them; so the ROC of :math:`\log r_x` is the upper
    envelope over gamma of the fraction's ROCs, with no ties that the data do not
    have. (The fraction ties by construction: all records between two consecutive
    :math:`\log r_z + \log\gamma` share a score. On the demo target FPR at 50% TPR read
    74% with the fraction and 27% with the ratio.) Gamma does not enter this form.
``"fraction"``: the paper's **pairwise-comparison score** (Zarifzadeh et al. 2024, Eq. 4-5)
    :math:`\Pr_z[LR(x, z) \ge \gamma]`, computed on the log scale as
    ``searchsorted(sort(log r_z), log r_x - log gamma, side="right") / |Z|``: exact (ties
    included), :math:`O((N+Z)\log Z)` time and :math:`O(N+Z)` memory; the
    :math:`N \times Z` matrix is never formed. When a population record is also an
    audited record (same id), its self-pair :math:`(x, x)` is removed,
    :math:`(\#\{z\} - \mathbf 1[r_x \le r_x/\gamma])/(|Z| - 1)`, as the paper's code does
    when it uses the target's non-members as population.

Offline ``a``: ``a="auto"`` (default) tunes it on the reference models as the paper
code's ``tune_offline_a`` does (:func:`tune_offline_a`: a grid 0, 0.1, ..., 1, the AUC
of attacking a reference model with the other reference models); where no reference model
can be attacked with the others (one reference model) it is moment-matched
(:func:`moment_matched_a`, privaudit's estimator), and where nothing can be matched either,
the paper's 0.3 (:data:`PAPER_A`); ``params["a_rule"]`` names the rule. A number fixes it
(the paper's CIFAR-10 configurations use 0.3). Online, ``a`` only imputes a missing world
of an audited or a population record (moment-matched for ``"auto"``; ``params["a_rule"]``
is "not needed" only where every audited and population record has both worlds).
Measured on the demo target before the tuning change: a = 0 gave AUC 0.715 and the fixed
0.3 0.709. Gamma: 2.0 (the paper's configurations; the ml_privacy_meter library uses 1),
used by the fraction form only.
One query per record (no augmentations, so no majority vote).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privaudit._stats import mann_whitney_auc
from privaudit._validation import check_choice, fail
from privaudit.attacks.base import AttackData, register, require
from privaudit.errors import DesignError

__all__ = [
    "A_GRID",
    "PAPER_A",
    "PRIORS",
    "SCORE_DESCRIPTIONS",
    "SCORE_FORMS",
    "SCORE_NAMES",
    "log_ratios",
    "moment_matched_a",
    "rmia_log_scores",
    "rmia_offline",
    "rmia_online",
    "rmia_scores",
    "tune_offline_a",
]

Result = tuple[NDArray[Any], NDArray[np.float64], dict[str, Any]]


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
    return _fraction_at_or_below(ratio_z, ratio_x / gamma, self_index)


def _fraction_at_or_below(
    z: NDArray[np.float64], cut: NDArray[np.float64], self_index: NDArray[np.intp] | None
) -> NDArray[np.float64]:
    """``#{z <= cut_x} / |Z|`` per x by sort and search, self pairs removed."""
    counts = np.searchsorted(np.sort(z), cut, side="right").astype(np.float64)
    denom = np.full(cut.size, float(z.size))
    if self_index is not None:
        has = self_index >= 0
        own = z[self_index[has]]
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


def _log_mean_p(loss: NDArray[np.float64], mask: NDArray[np.bool_] | None) -> NDArray[np.float64]:
    r""":math:`\log \frac1k\sum_j e^{-\ell_j}` per column (over ``mask``), without rounding.

    With :math:`m = \min_j \ell_j`: :math:`-m + \mathrm{log1p}(\mathrm{mean}_j\,
    \mathrm{expm1}(-(\ell_j - m)))`, exact to a few ulps even when every
    :math:`\ell_j` is far below machine epsilon (saturated models, where
    :math:`e^{-\ell}` rounds to 1).
    """
    valid = np.ones(loss.shape, dtype=bool) if mask is None else mask
    big = np.where(valid, loss, np.inf)
    m = big.min(axis=0)
    d = np.where(valid, np.expm1(-(np.where(valid, loss, 0.0) - m[None, :])), 0.0)
    mean = d.sum(axis=0) / valid.sum(axis=0)
    out: NDArray[np.float64] = -m + np.log1p(mean)
    return out


def _log_offline_prior(log_p_out: NDArray[np.float64], a: float) -> NDArray[np.float64]:
    r""":math:`\log \tfrac12[(1+a)P_{OUT} + (1-a)]` from :math:`\log P_{OUT}`, without rounding.

    With :math:`q = 1 - P_{OUT} = -\mathrm{expm1}(\log P_{OUT})` (exact for tiny q):
    :math:`\tfrac12[(1+a)(1-q) + (1-a)] = 1 - \tfrac{1+a}2 q`, whose log is
    ``log1p(-(1 + a) * q / 2)``: used where :math:`q \le 1/2`. Elsewhere (P_OUT
    small; at ``a = 1`` the prior is P_OUT itself, which may underflow) the log is
    taken as ``log(1/2) + logaddexp(log(1 + a) + log P_OUT, log(1 - a))``.
    """
    return _OfflinePrior(log_p_out)(a)


class _OfflinePrior:
    r""":func:`_log_offline_prior` of one :math:`\log P_{OUT}` array for several ``a``: what
    does not depend on ``a`` (``q``, the branch of each record) computed once."""

    def __init__(self, log_p_out: NDArray[np.float64]) -> None:
        q = -np.expm1(log_p_out)
        small = q <= 0.5
        self.log_p_out = log_p_out
        self.far_idx = np.flatnonzero(~small)  # each branch computed where it is used only
        self.q_small = np.where(small, q, 0.0)

    def __call__(self, a: float) -> NDArray[np.float64]:
        out: NDArray[np.float64] = np.log1p(-0.5 * (1.0 + a) * self.q_small)
        far_idx = self.far_idx
        if far_idx.size:
            with np.errstate(divide="ignore"):
                log_1ma = np.log1p(-a) if a < 1.0 else -np.inf
                out[far_idx] = np.log(0.5) + np.logaddexp(
                    np.log1p(a) + self.log_p_out[far_idx], log_1ma
                )
        return out


#: Grid of the offline ``a`` (Zarifzadeh et al. 2024, App. B.2.2 / the paper code's
#: ``tune_offline_a``: 0, 0.1, ..., 1).
A_GRID: tuple[float, ...] = tuple(round(0.1 * i, 1) for i in range(11))
#: Offline ``a`` of the paper's CIFAR-10 configurations (Zarifzadeh et al. 2024, App. B.2.2):
#: ``a="auto"`` falls back to it when the reference models can neither tune ``a`` (no
#: pseudo-target) nor moment-match it (no reference model trained on an audited record).
PAPER_A = 0.3
#: Score forms (see the module docstring).
SCORE_FORMS: tuple[str, ...] = ("ratio", "fraction")
#: Online RMIA's estimates of :math:`\Pr(x)` from the reference models (``prior=``).
PRIORS: dict[str, str] = {
    "balanced": "half the mean of the IN models plus half the mean of the OUT models, a world "
    "with no model imputed by the linear approximation with a (privaudit's default)",
    "mean": "the mean over all reference models, IN and OUT alike (the paper's code)",
}
#: The name of each score form, shown beside its figures (``params["score_name"]``, the
#: report's attack table; issue 28): the default is not the paper's score.
SCORE_NAMES: dict[str, str] = {
    "ratio": "log likelihood ratio",
    "fraction": "pairwise-comparison score",
}
#: What each score form computes (the report's threat model).
SCORE_DESCRIPTIONS: dict[str, str] = {
    "ratio": "the log likelihood ratio log Pr(x|theta) - log Pr(x) (privaudit's default; not "
    "the paper's pairwise-comparison score, which is score: fraction)",
    "fraction": "the paper's pairwise-comparison score Pr_z[LR(x, z) >= gamma] over population "
    "records z (Zarifzadeh et al. 2024, Eq. 4-5)",
}


@dataclasses.dataclass(frozen=True)
class _Inputs:
    log_px: NDArray[np.float64]  # log Pr(x | target), (n,)
    log_pz: NDArray[np.float64]  # log Pr(z | target), (Z,)
    loss_x: NDArray[np.float64]  # reference losses on the audited records, (k, n)
    loss_z: NDArray[np.float64]  # reference losses on the population, (k, Z)
    keep_x: NDArray[np.bool_]  # (k, n)
    keep_z: NDArray[np.bool_] | None  # (k, Z); None = no reference trained on z
    self_index: NDArray[np.intp] | None


def _log_ratios(
    inp: _Inputs,
    *,
    offline: bool,
    a: float,
    prior: str = "balanced",
    models: NDArray[np.bool_] | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``log r_x`` and ``log r_z`` (log Pr(.|theta) - log Pr(.)), over the ``models`` rows.

    Online, ``prior`` is ``"balanced"`` (:func:`_log_balanced_prior`, ``a`` imputes a
    missing world) or ``"mean"`` (every reference model alike; ``a`` unused)."""
    sel = np.ones(inp.loss_x.shape[0], dtype=bool) if models is None else models
    if offline:
        return _offline_log_ratios(inp, _log_p_out(inp, sel), a)
    if prior == "mean":
        prior_x = _log_mean_p(inp.loss_x[sel], None)
        prior_z = _log_mean_p(inp.loss_z[sel], None)
    else:
        keep_z = np.zeros(inp.loss_z.shape, dtype=bool) if inp.keep_z is None else inp.keep_z
        prior_x = _log_balanced_prior(inp.loss_x[sel], inp.keep_x[sel], a)
        prior_z = _log_balanced_prior(inp.loss_z[sel], keep_z[sel], a)
    return inp.log_px - prior_x, inp.log_pz - prior_z


def _log_balanced_prior(
    loss: NDArray[np.float64], keep: NDArray[np.bool_], a: float
) -> NDArray[np.float64]:
    r""":math:`\log \tfrac12[\Pr_{IN}(x) + \Pr_{OUT}(x)]` per column, each world the mean
    of its own reference models; a world with no model is imputed by the paper's linear
    approximation :math:`\Pr_{IN} \approx a\Pr_{OUT} + (1-a)` (Zarifzadeh et al. 2024,
    Sec. 3, "offline").

    The paper's :math:`\Pr(x)` is the average of :math:`\Pr(x|\theta')` over reference
    models whose training sets contain ``x`` with probability 1/2 (Sec. 3). The plain mean
    over the models estimates it only when half of them are IN for ``x``; with few models
    (or a layout that is not balanced per record) a record with more IN models gets a
    larger :math:`\Pr(x)` and a lower score for a reason that has nothing to do with the
    target. Averaging each world separately (post-stratification) removes that; it equals
    the plain mean wherever a record is IN for exactly half of the models.

    * both worlds: :math:`\tfrac12(P_{IN} + P_{OUT})`;
    * OUT only: :math:`\tfrac12[(1+a)P_{OUT} + (1-a)]`, offline RMIA's prior
      (:func:`_log_offline_prior`);
    * IN only: :math:`P_{OUT}` imputed by inverting the approximation,
      :math:`\max(0, (P_{IN} - (1-a))/a)`, so :math:`\Pr(x) = 1 - \tfrac12 q(1 + 1/a)`
      with :math:`q = 1 - P_{IN} < a`, and :math:`P_{IN}/2` where :math:`q \ge a`.

    Computed from :math:`\log P` and :math:`q = -\mathrm{expm1}(\log P)` with ``log1p``
    where :math:`q \le 1/2` (exact for losses far below machine epsilon), in linear space
    elsewhere.
    """
    has_in = keep.any(axis=0)
    has_out = (~keep).any(axis=0)
    out = np.empty(loss.shape[1])
    both = np.flatnonzero(has_in & has_out)
    if both.size:
        lin = _log_mean_p(loss[:, both], keep[:, both])
        lout = _log_mean_p(loss[:, both], ~keep[:, both])
        q = -(np.expm1(lin) + np.expm1(lout)) / 2.0  # 1 - (P_IN + P_OUT) / 2
        near_one = q <= 0.5
        out[both] = np.where(
            near_one,
            np.log1p(-np.where(near_one, q, 0.0)),
            np.logaddexp(lin, lout) - np.log(2.0),
        )
    only_out = np.flatnonzero(~has_in)
    if only_out.size:
        out[only_out] = _log_offline_prior(_log_mean_p(loss[:, only_out], None), a)
    only_in = np.flatnonzero(~has_out)
    if only_in.size:
        lin = _log_mean_p(loss[:, only_in], None)
        q = -np.expm1(lin)
        res = lin - np.log(2.0)  # q >= a: P_OUT imputed as 0
        if a > 0.0:
            small = (q < a) & (q <= 0.5)
            res = np.where(small, np.log1p(-0.5 * np.where(small, q, 0.0) * (1.0 + 1.0 / a)), res)
            mid = (q < a) & (q > 0.5)
            if mid.any():
                p_in = np.exp(lin[mid])
                res[mid] = np.log(0.5 * (p_in + (p_in - (1.0 - a)) / a))
        out[only_in] = res
    return out


def moment_matched_a(loss: NDArray[np.float64], keep: NDArray[np.bool_]) -> float:
    r"""The ``a`` of :math:`\Pr_{IN} \approx a\Pr_{OUT} + (1-a)` that matches the means of the
    reference models' probabilities of the records they trained on (``keep``) and of those
    they did not: :math:`a = \overline{(1 - P)}_{IN} / \overline{(1 - P)}_{OUT}`, clipped to
    [0, 1].

    Each reference model's IN and OUT records are random draws from the same records (the
    audited ones; with ``reference_population_membership``, the population's too), so the
    two means estimate :math:`E[1 - P_{IN}]` and :math:`E[1 - P_{OUT}]` of one record
    distribution, and the approximation, taken in expectation, gives their ratio. Needs no pseudo-target, so it works with one reference model, where the paper's
    grid search (:func:`tune_offline_a`) has nothing to attack; privaudit's own estimator,
    not the paper's (which tunes ``a`` by the grid; App. B.2.2). ``1 - P`` is
    ``-expm1(-loss)``, exact for tiny losses.
    """
    q = -np.expm1(-np.asarray(loss, dtype=np.float64))
    keep = np.asarray(keep, dtype=bool)
    if not keep.any() or keep.all():
        raise DesignError(
            "reference_membership: expected reference models with both IN and OUT audited "
            "records to estimate RMIA's a; pass a number for a"
        )
    q_out = float(q[~keep].mean())
    if q_out <= 0.0:
        return 1.0
    return float(np.clip(q[keep].mean() / q_out, 0.0, 1.0))


def _log_p_out(
    inp: _Inputs, sel: NDArray[np.bool_]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    r""":math:`\log P_{OUT}` of the audited records and of the population over the OUT
    models among the ``sel`` rows (what offline RMIA's prior is made of, for every ``a``)."""
    lz = inp.loss_z[sel]
    out_z = np.ones(lz.shape, dtype=bool) if inp.keep_z is None else ~inp.keep_z[sel]
    return _log_p_out_x(inp, sel), _log_mean_p(lz, out_z)


def _log_p_out_x(inp: _Inputs, sel: NDArray[np.bool_]) -> NDArray[np.float64]:
    r""":math:`\log P_{OUT}` of the audited records alone (:func:`_log_p_out`'s first array)."""
    return _log_mean_p(inp.loss_x[sel], ~inp.keep_x[sel])


def _offline_log_ratios(
    inp: _Inputs, log_p_out: tuple[NDArray[np.float64], NDArray[np.float64]], a: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Offline ``log r_x`` and ``log r_z`` from :func:`_log_p_out`'s arrays and ``a``."""
    return (
        inp.log_px - _log_offline_prior(log_p_out[0], a),
        inp.log_pz - _log_offline_prior(log_p_out[1], a),
    )


def _final_scores(
    lr_x: NDArray[np.float64],
    lr_z: NDArray[np.float64],
    score: str,
    gamma: float,
    self_index: NDArray[np.intp] | None,
) -> NDArray[np.float64]:
    if score == "ratio":
        return lr_x
    return rmia_log_scores(lr_x, lr_z, gamma, self_index=self_index)


def rmia_log_scores(
    log_ratio_x: NDArray[np.float64],
    log_ratio_z: NDArray[np.float64],
    gamma: float,
    *,
    self_index: NDArray[np.intp] | None = None,
) -> NDArray[np.float64]:
    r"""The paper's fraction :math:`\Pr_z[LR(x, z) \ge \gamma]` from log ratios.

    :math:`LR(x, z) \ge \gamma \iff \log r_z \le \log r_x - \log\gamma`; the same
    sort-and-count as :func:`rmia_scores`, on the log scale (no overflow, no
    saturation). Self pairs are removed as there.
    """
    if not (np.isfinite(gamma) and gamma > 0):
        raise fail("gamma", "a positive finite number", gamma)
    return _fraction_at_or_below(log_ratio_z, log_ratio_x - np.log(gamma), self_index)


def tune_offline_a(
    inp: _Inputs,
    *,
    score: str,
    gamma: float,
    grid: tuple[float, ...] = A_GRID,
    max_models: int = 8,
) -> tuple[float, dict[str, float], int]:
    """Choose offline RMIA's ``a`` on the reference models (Zarifzadeh et al. 2024).

    The paper code's ``tune_offline_a``: attack a reference model with the other
    reference models and keep the ``a`` of the grid with the highest AUC. Here each of
    up to ``max_models`` reference models in turn is the pseudo-target (its own
    membership of the audited records is the ground truth, its losses on the
    population give :math:`\\Pr(z|\\theta)`), the *other* reference models are the
    references (their OUT models per record), and the AUCs are averaged over the
    pseudo-targets; ties go to the smaller ``a``. The real target is never used.

    Returns ``(a, {a: mean AUC}, n_pseudo_targets)``.
    """
    k = inp.loss_x.shape[0]
    n_used = min(k, max_models)
    aucs = {f"{a:.1f}": 0.0 for a in grid}
    counted = 0
    for j in range(n_used):
        others = np.ones(k, dtype=bool)
        others[j] = False
        out_x = ~inp.keep_x[others]
        ok = out_x.sum(axis=0) >= 1
        if inp.keep_z is not None and (~inp.keep_z[others]).sum(axis=0).min() < 1:
            continue
        member = inp.keep_x[j]
        z_ok = np.ones(inp.loss_z.shape[1], dtype=bool) if inp.keep_z is None else ~inp.keep_z[j]
        if not ok.any() or member[ok].all() or not member[ok].any() or not z_ok.any():
            continue
        pseudo = _Inputs(
            log_px=-inp.loss_x[j, ok],
            log_pz=-inp.loss_z[j, z_ok],
            loss_x=inp.loss_x[:, ok],
            loss_z=inp.loss_z[:, z_ok],
            keep_x=inp.keep_x[:, ok],
            keep_z=None if inp.keep_z is None else inp.keep_z[:, z_ok],
            self_index=None,
        )
        # the same for every a of the grid; the ratio score reads no population record
        if score == "ratio":
            prior = _OfflinePrior(_log_p_out_x(pseudo, others))
        else:
            log_p_out = _log_p_out(pseudo, others)
        for a in grid:
            if score == "ratio":  # log r_x alone: the same floats as _offline_log_ratios
                s = pseudo.log_px - prior(a)
            else:
                lr_x, lr_z = _offline_log_ratios(pseudo, log_p_out, a)
                s = _final_scores(lr_x, lr_z, score, gamma, None)
            aucs[f"{a:.1f}"] += mann_whitney_auc(s, member[ok])
        counted += 1
    if counted == 0:
        raise DesignError(
            "reference_membership: expected a reference model whose audited records include "
            "members and non-members, with OUT models among the others, to tune offline "
            "RMIA's a; pass a number for a"
        )
    mean = {key: v / counted for key, v in aucs.items()}
    best = max(grid, key=lambda a: (mean[f"{a:.1f}"], -a))
    return float(best), mean, counted


def _rmia(
    data: AttackData,
    *,
    offline: bool,
    a: float | str,
    gamma: float,
    score: str,
    prior: str = "balanced",
) -> Result:
    check_choice(score, "score", SCORE_FORMS)
    if not (isinstance(gamma, int | float) and np.isfinite(gamma) and gamma > 0):
        raise fail("gamma", "a positive finite number", gamma)
    inp, info, lr_x, lr_z = log_ratios(
        data, offline=offline, a=a, score=score, gamma=float(gamma), prior=prior
    )
    scores = _final_scores(lr_x, lr_z, score, float(gamma), inp.self_index)
    info.update(
        n_self_pairs_removed=0 if inp.self_index is None else int((inp.self_index >= 0).sum()),
        queries_per_record=1,
        alpha_calibrated=False,
    )
    return data.record_ids, scores, info


def _matched_or_paper_a(inp: _Inputs) -> tuple[float, str]:
    """``a`` moment-matched on the reference models' IN and OUT records (the audited ones,
    and the population records when ``reference_population_membership`` says some model
    trained on them), else :data:`PAPER_A` (nothing on the references informs it); with
    its rule."""
    loss, keep = inp.loss_x, inp.keep_x
    if inp.keep_z is not None:
        loss = np.concatenate([loss, inp.loss_z], axis=1)
        keep = np.concatenate([keep, inp.keep_z], axis=1)
    if keep.any() and not keep.all():
        return moment_matched_a(loss, keep), "moment-matched"
    return PAPER_A, "the paper's CIFAR-10 value (nothing to tune or match on)"


def log_ratios(
    data: AttackData,
    *,
    offline: bool,
    a: float | str,
    score: str = "ratio",
    gamma: float = 2.0,
    prior: str = "balanced",
) -> tuple[_Inputs, dict[str, Any], NDArray[np.float64], NDArray[np.float64]]:
    r"""RMIA's :math:`\log r_x` and :math:`\log r_z` (log Pr(.|theta) - log Pr(.)) of the
    audited and the population records, with the inputs and the parameters that made them.

    Shared by RMIA and InfoRMIA (:mod:`privaudit.attacks.informia`). Offline with
    ``a="auto"``, ``a`` is tuned on the reference models for the AUC of ``score``'s form
    (at ``gamma`` for the fraction form), or moment-matched (:func:`moment_matched_a`)
    where no reference model can be attacked with the others (one reference model).
    Online, ``prior`` is :data:`PRIORS`' ``"balanced"`` (each world averaged on its own,
    a missing one imputed with ``a``, moment-matched for ``"auto"``) or ``"mean"``.
    """
    _check_a(a)
    check_choice(prior, "prior", tuple(PRIORS))
    inp, n_models = _read_inputs(data)
    info = _base_info(inp, n_models, score, gamma)
    if offline:
        a_used = _offline_a(inp, a, score=score, gamma=gamma, info=info)
    else:
        a_used = _online_a(inp, a, prior=prior, info=info)
    lr_x, lr_z = _log_ratios(inp, offline=offline, a=a_used, prior=prior)
    return inp, info, lr_x, lr_z


def _check_a(a: float | str) -> None:
    """Reject an ``a`` that is neither ``"auto"`` nor a number in [0, 1] (a bool is no number)."""
    if not (
        a == "auto" or (isinstance(a, int | float) and not isinstance(a, bool) and 0.0 <= a <= 1.0)
    ):
        raise fail("a", "a number in [0, 1] or 'auto' (estimated on the reference models)", a)


def _read_inputs(data: AttackData) -> tuple[_Inputs, int]:
    """RMIA's :class:`_Inputs` from the ``loss`` tables, and the number of reference models."""
    signal = "loss"
    pop_table = data.table("population_target", signal)
    membership = require(data.reference_membership, "reference_membership")
    pop_membership = data.reference_population_membership
    inp = _Inputs(
        log_px=-data.table("target", signal).values[0],
        log_pz=-pop_table.values[0],
        loss_x=data.table("reference", signal).values,
        loss_z=data.table("reference_population", signal).values,
        keep_x=np.asarray(membership.keep),
        keep_z=None if pop_membership is None else np.asarray(pop_membership.keep),
        self_index=_self_index(data.record_ids, pop_table.record_ids),
    )
    return inp, membership.n_models


def _base_info(inp: _Inputs, n_models: int, score: str, gamma: float) -> dict[str, Any]:
    """The parameters online and offline RMIA share (``gamma`` for the fraction form only)."""
    info: dict[str, Any] = {
        "score": score,
        "score_name": SCORE_NAMES[score],
        "n_models": n_models,
        "n_population": int(inp.log_pz.size),
        "log_space": True,
    }
    if score == "fraction":
        info["gamma"] = float(gamma)
    return info


def _online_a(inp: _Inputs, a: float | str, *, prior: str, info: dict[str, Any]) -> float:
    r"""Online RMIA's ``a`` (it imputes a world with no model; balanced prior only); ``info`` gets
    it, its rule, the IN-model counts and how many audited and population records have
    one world only.

    :math:`\Pr(z)` of a population record is estimated as :math:`\Pr(x)` is (Zarifzadeh
    et al. 2024, Sec. 3: both are the mean of :math:`\Pr(\cdot|\theta')` over reference
    models that train on the record with probability 1/2), so a population record with
    one world (every one when ``reference_population_membership`` is absent: no reference
    model trained on it) needs ``a`` as much as an audited one does; with ``a = 1`` its
    :math:`\Pr(z)` would be :math:`P_{OUT}(z)` beside :math:`\tfrac12(P_{IN} + P_{OUT})`
    for the audited records, and every population log ratio too large."""
    info["reference_average"] = prior
    n_in = inp.keep_x.sum(axis=0)
    info.update(n_in_min=int(n_in.min()), n_in_max=int(n_in.max()))
    if prior != "balanced":
        return 1.0  # the plain mean reads no a
    n_models_x = inp.keep_x.shape[0]
    n_one_world = int(((n_in == 0) | (n_in == n_models_x)).sum())
    if inp.keep_z is None:  # no reference model trained on a population record
        n_one_world_z = int(inp.loss_z.shape[1])
    else:
        n_in_z = inp.keep_z.sum(axis=0)
        n_one_world_z = int(((n_in_z == 0) | (n_in_z == n_models_x)).sum())
    info["n_records_one_world"] = n_one_world
    info["n_population_one_world"] = n_one_world_z
    if a == "auto" and (n_one_world or n_one_world_z):
        a_used, info["a_rule"] = _matched_or_paper_a(inp)
    elif a == "auto":
        a_used, info["a_rule"] = (
            1.0,
            "not needed (every audited and population record has both worlds)",
        )
    else:
        a_used = float(a)
        info["a_rule"] = "given"
    info["a"] = a_used
    return a_used


def _offline_a(
    inp: _Inputs, a: float | str, *, score: str, gamma: float, info: dict[str, Any]
) -> float:
    """Offline RMIA's ``a`` (given, tuned by :func:`tune_offline_a`, or matched); ``info`` gets
    it, its rule and the OUT-model counts."""
    n_out_x = _offline_out_counts(inp)
    if a == "auto":
        try:
            a_used, grid_auc, n_pseudo = tune_offline_a(inp, score=score, gamma=gamma)
            info.update(a_rule="auto", a_tuning_auc=grid_auc, a_tuning_models=n_pseudo)
        except DesignError:  # no reference model to attack with the others
            a_used, info["a_rule"] = _matched_or_paper_a(inp)
    else:
        a_used = float(a)
        info["a_rule"] = "given"
    info.update(
        a=a_used,
        reference_average="mean",
        n_out_min=int(n_out_x.min()),
        n_out_max=int(n_out_x.max()),
        population_out_source="all models"
        if inp.keep_z is None
        else "reference_population_membership",
    )
    return a_used


def _offline_out_counts(inp: _Inputs) -> NDArray[np.int64]:
    """OUT reference models per audited record; every audited and population record needs one."""
    n_out_x = (~inp.keep_x).sum(axis=0)
    if n_out_x.min() < 1:
        raise DesignError(
            "reference_membership: expected at least 1 OUT reference model per audited record "
            f"for offline RMIA, found {int((n_out_x < 1).sum())} record(s) with none"
        )
    if inp.keep_z is not None and (~inp.keep_z).sum(axis=0).min() < 1:
        raise DesignError(
            "reference_population_membership: expected at least 1 OUT reference model per "
            "population record for offline RMIA, found records with none"
        )
    return n_out_x


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
    default_signal="loss",
    signal_choices=("loss",),
    alpha_threshold=False,
    description="RMIA online (Zarifzadeh et al. 2024): log likelihood ratio against the IN and OUT reference averages, weighted equally, by default; the paper's pairwise comparison with population records with score=fraction",
)
def rmia_online(
    data: AttackData,
    *,
    rng: np.random.Generator,
    signal: str = "loss",
    gamma: float = 2.0,
    score: str = "ratio",
    prior: str = "balanced",
    a: float | str = "auto",
) -> Result:
    r"""Online RMIA: :math:`\Pr(x)` from the IN and the OUT reference models of ``x``.

    ``prior="balanced"`` (default): :math:`\tfrac12[\Pr_{IN}(x) + \Pr_{OUT}(x)]`, each the
    mean over its own models, a world with no model imputed with ``a`` (moment-matched on
    the reference models for ``"auto"``; :func:`_log_balanced_prior`,
    :func:`moment_matched_a`); ``prior="mean"``: the mean over all reference models (the
    paper's code). The two agree wherever a record is IN for half of the models.
    ``score="ratio"`` (default): the log likelihood ratio :math:`\log\Pr(x|\theta) -
    \log\Pr(x)`; ``score="fraction"``: the paper's pairwise-comparison score
    :math:`\Pr_z[LR(x, z) \ge \gamma]` (module docstring, :data:`SCORE_NAMES`).
    """
    return _rmia(data, offline=False, a=a, gamma=gamma, score=score, prior=prior)


@register(
    "rmia-offline",
    fields=_FIELDS,
    optional_fields=("reference_population_membership",),
    default_signal="loss",
    signal_choices=("loss",),
    alpha_threshold=False,
    description="RMIA offline (Zarifzadeh et al. 2024): OUT reference models with the a-correction; log likelihood ratio by default, the paper's pairwise comparison with score=fraction",
)
def rmia_offline(
    data: AttackData,
    *,
    rng: np.random.Generator,
    signal: str = "loss",
    a: float | str = "auto",
    gamma: float = 2.0,
    score: str = "ratio",
) -> Result:
    r"""Offline RMIA: :math:`\Pr(x) = \tfrac12[(1+a)\Pr_{OUT}(x) + (1-a)]`, ``a`` tuned by default.

    ``score="ratio"`` (default): the log likelihood ratio :math:`\log\Pr(x|\theta) -
    \log\Pr(x)`; ``score="fraction"``: the paper's pairwise-comparison score
    (module docstring, :data:`SCORE_NAMES`).
    """
    return _rmia(data, offline=True, a=a, gamma=gamma, score=score)
