r"""BaVarIA, the Bayesian-variance likelihood-ratio attack (Brännvall, arXiv 2603.11799, 2026).

Brännvall shows that LiRA (Carlini et al. 2022), RMIA (Zarifzadeh et al. 2024) and BASE
are one exponential-family log-likelihood-ratio family that differ in how many
parameters they estimate per record, and that with few reference models the bottleneck
is the per-record *variance*: LiRA switches between a per-record and a global variance
by a threshold on the number of models. BaVarIA replaces the switch with a conjugate
**normal-inverse-gamma** (NIG) prior, whose posterior predictive is a Student-t
("BaVarIA-t") or a Gaussian with a stabilised variance ("BaVarIA-n") (abstract, and the
method section as summarised there).

What is implemented here, per record i and world w (IN or OUT, from
``reference_membership``, never from a layout), on LiRA's signal (default the
logit-scaled confidence :math:`\phi`):

* the reference signals of the world, :math:`n` values with mean :math:`\bar\phi` and
  sum of squared deviations :math:`SS`;
* the model :math:`\phi \sim \mathcal N(\mu, \sigma^2)` with a flat prior on
  :math:`\mu` and :math:`\sigma^2 \sim \text{Inv-Gamma}(a_0, b_0)`, so that the posterior
  of :math:`\sigma^2` is :math:`\text{Inv-Gamma}(a_0 + (n-1)/2,\; b_0 + SS/2)` and the
  posterior predictive of a new model's signal (the target's) is

  .. math::

      \phi_{new} \sim t_{2 a_n}\!\Big(\bar\phi,\; \frac{b_n}{a_n}\big(1 + \tfrac1n\big)\Big),
      \qquad a_n = a_0 + \tfrac{n-1}2,\; b_n = b_0 + \tfrac{SS}2

  (Murphy 2007, "Conjugate Bayesian analysis of the Gaussian distribution", Sec. 3, the
  NIG with :math:`\kappa_0 \to 0`);
* the prior :math:`(a_0, b_0)` fitted by empirical Bayes (type-II maximum likelihood)
  on every (record, world) group with at least 2 reference signals: under the prior,
  :math:`SS` has the closed-form marginal density
  :math:`p(SS) \propto SS^{d/2-1} b_0^{a_0} \Gamma(a_0 + d/2) / (\Gamma(a_0)\Gamma(d/2)
  (b_0 + SS/2)^{a_0 + d/2})` with :math:`d = n - 1`, maximised numerically over
  :math:`(\log a_0, \log b_0)`. The fit reads only the reference models, never the
  target; the IN and OUT groups share one prior online (as LiRA's fixed variance pools
  both worlds), the OUT groups alone offline.

Scores (higher = member):

``bavaria-online``
    :math:`\log p_{IN}(\phi_i) - \log p_{OUT}(\phi_i)`, the predictive log likelihood
    ratio; needs at least one IN and one OUT reference model per record.
``bavaria-offline``
    :math:`-\log \Pr[T > \phi_i]` with :math:`T` the OUT predictive (on the signal
    oriented higher = member): minus the log of a one-sided p-value (LiRA offline's
    default test; the log keeps the scores of strongly leaking records apart where the
    p-value itself would round to 0); needs at least one OUT model per record. No alpha threshold is offered (the p-value is
    exact only when the signals are Gaussian and the prior is right).

The signal is clipped to :math:`[-c, c]` first, as LiRA's is, with :math:`c` tuned on
the reference models by leaving one model out (:func:`tune_clip`; ``clip=None`` does not
clip). This is privaudit's choice, not the paper's text: the logit-scaled confidence of a
model that fits its training set runs into the hundreds for some records (Adult MLP: up
to 157), and without the clip BaVarIA fell below privaudit's LiRA (which clips) at every
reference count on the Adult MLP, while unclipped LiRA was no better than unclipped
BaVarIA (``benchmarks/bench_attack_power.py --sweep``, docs/membership.md).

``predictive="t"`` (default) uses the Student-t; ``predictive="normal"`` (BaVarIA-n) a
Gaussian with the same centre and the variance :math:`\frac{b_n}{a_n}(1 + \frac1n)`.

What the available text does not settle (say so, do not guess silently): the paper's
exact prior on the mean (here flat: the location is the per-record sample mean, as in
LiRA), how its prior hyperparameters are chosen (here type-II maximum likelihood over
the records), and the exact "stabilised variance" of BaVarIA-n (here the t's squared
scale, i.e. the reciprocal of the posterior mean precision times :math:`1 + 1/n`). When
no (record, world) group has two reference signals (one reference model, or two in a
layout giving each record one per world) the variance cannot be learned from the
reference models and the attack raises :class:`~privaudit.errors.DesignError`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import special

from privaudit._validation import check_choice
from privaudit.attacks._orient import member_oriented
from privaudit.attacks.base import AttackData, register, require
from privaudit.attacks.lira_fit import (
    CLIP_GRID,
    TUNING_FPRS,
    _best_clip,
    _check_clip,
    _clipped,
    _pseudo_targets,
    _tpr_at_fprs,
)
from privaudit.errors import DesignError

__all__ = ["PREDICTIVES", "bavaria_offline", "bavaria_online", "fit_variance_prior", "tune_clip"]

Result = tuple[NDArray[Any], NDArray[np.float64], dict[str, Any]]

#: The posterior predictives: Student-t (BaVarIA-t) or Gaussian (BaVarIA-n).
PREDICTIVES: tuple[str, ...] = ("t", "normal")

_A0_BOUNDS = (1e-3, 1e6)
#: Relative size of a sum of squares below which a group's signals count as all equal.
_DEGENERATE = 1e-9
#: False positives a pseudo-target must allow at an FPR for that FPR to tune the clip.
_MIN_FALSE_POSITIVES = 10


def fit_variance_prior(ss: NDArray[np.float64], d: NDArray[np.float64]) -> tuple[float, float, int]:
    r"""Type-II ML inverse-gamma prior :math:`(a_0, b_0)` of per-group variances.

    Parameters
    ----------
    ss : (G,) array
        Sums of squared deviations from the group mean.
    d : (G,) array
        Their degrees of freedom :math:`n - 1`; groups with ``d < 1`` carry no variance
        information and are ignored.

    Returns
    -------
    (a0, b0, n_groups)
        The maximiser of :math:`\sum_g \log p(SS_g \mid a_0, b_0)` (module docstring),
        ``a0`` bounded to [1e-3, 1e6] (the upper bound is the no-heterogeneity limit,
        where the prior is a point mass at the pooled variance), and the number of groups
        used. Groups whose signals are all equal (``SS`` at most 1e-9 of the pooled
        variance times ``d``: a saturated or clipped signal) are left out of the fit:
        their marginal density grows without bound as :math:`b_0 \to 0`, so a few of
        them would drive the prior to a point mass at variance 0 (and the predictive
        scales to 0); they still get the fitted prior's posterior.

    Raises
    ------
    DesignError
        When no group has ``d >= 1`` and signals that differ.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> var = 1.0 / rng.gamma(5.0, 1.0 / 4.0, size=4000)  # Inv-Gamma(5, 4)
    >>> ss = var * rng.chisquare(3, size=4000)
    >>> a0, b0, g = fit_variance_prior(ss, np.full(4000, 3.0))
    >>> bool(3.5 < a0 < 7.0 and 2.5 < b0 < 6.0), g
    (True, 4000)
    """
    s_all = np.asarray(ss, dtype=np.float64)
    d_all = np.asarray(d, dtype=np.float64)
    ok = d_all >= 1
    pooled = float(s_all[ok].sum() / d_all[ok].sum()) if ok.any() else 0.0
    ok &= s_all > _DEGENERATE * pooled * d_all
    if not ok.any() or pooled <= 0.0:
        raise DesignError(
            "reference_membership: expected at least 2 reference models in one world "
            "(IN or OUT) for some record, with signals that differ, to learn BaVarIA's "
            "variance prior from the reference models; found at most 1 per record and "
            "world, or equal signals only; train more reference models"
        )
    s, dd = s_all[ok], d_all[ok]
    pooled = float(s.sum() / dd.sum())
    half = dd / 2.0
    lb0 = np.log(pooled)

    def nll(theta: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
        # theta = (log a0, log b0 - log pooled): the scale parameter relative to the data
        a0, b0 = np.exp(theta[0]), np.exp(theta[1] + lb0)
        t = b0 + s / 2.0
        ll = (
            a0 * np.log(b0)
            + special.gammaln(a0 + half)
            - special.gammaln(a0)
            - (a0 + half) * np.log(t)
        )
        g_a = a0 * (np.log(b0) + special.digamma(a0 + half) - special.digamma(a0) - np.log(t))
        g_b = a0 - (a0 + half) * b0 / t
        return -float(ll.sum()), -np.array([g_a.sum(), g_b.sum()])

    from scipy import optimize  # here: scipy.optimize costs ~0.2 s to import, every command's

    best: tuple[float, NDArray[np.float64]] | None = None
    for a_init in (1.0, 3.0, 30.0):
        x0 = np.array([np.log(a_init), np.log(a_init)])
        res = optimize.minimize(
            nll,
            x0,
            jac=True,
            method="L-BFGS-B",
            bounds=[(np.log(_A0_BOUNDS[0]), np.log(_A0_BOUNDS[1])), (-40.0, 40.0)],
        )
        if best is None or res.fun < best[0]:
            best = (float(res.fun), np.asarray(res.x))
    if best is None:  # pragma: no cover - the loop runs
        raise DesignError("BaVarIA: the variance prior could not be fitted")
    return float(np.exp(best[1][0])), float(np.exp(best[1][1] + lb0)), int(ok.sum())


def _group_stats(
    v: NDArray[np.float64], mask: NDArray[np.bool_]
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Per column: count, mean and sum of squared deviations over ``mask``."""
    n = mask.sum(axis=0).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(mask, v, 0.0).sum(axis=0) / n
    dev = np.where(mask, v - np.where(n > 0, mean, 0.0)[None, :], 0.0)
    return n, mean, (dev * dev).sum(axis=0)


def _predictive(
    n: NDArray[np.float64], ss: NDArray[np.float64], a0: float, b0: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Degrees of freedom and scale of the posterior predictive t (module docstring)."""
    a_n = a0 + (n - 1.0) / 2.0
    b_n = b0 + ss / 2.0
    scale = np.sqrt(b_n / a_n * (1.0 + 1.0 / n))
    return 2.0 * a_n, scale


def _logpdf(
    x: NDArray[np.float64],
    loc: NDArray[np.float64],
    df: NDArray[np.float64],
    scale: NDArray[np.float64],
    predictive: str,
) -> NDArray[np.float64]:
    from scipy import stats  # here: scipy.stats costs ~0.4 s to import, every command's

    if predictive == "t":
        return np.asarray(stats.t.logpdf(x, df, loc=loc, scale=scale), dtype=np.float64)
    return np.asarray(stats.norm.logpdf(x, loc=loc, scale=scale), dtype=np.float64)


def _inputs(
    data: AttackData, signal: str
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_], int]:
    obs = data.table("target", signal).values[0]
    ref = data.table("reference", signal).values
    membership = require(data.reference_membership, "reference_membership")
    return obs, ref, np.asarray(membership.keep), membership.n_models


def _check_world(n: NDArray[np.float64], world: str, attack: str) -> None:
    if (n < 1).any():
        raise DesignError(
            f"reference_membership: expected at least 1 {world} reference model per record "
            f"for {attack}, found {int((n < 1).sum())} record(s) with none; train more "
            "reference models"
        )


def _online_core(
    obs: NDArray[np.float64], ref: NDArray[np.float64], keep: NDArray[np.bool_], predictive: str
) -> tuple[NDArray[np.float64], tuple[float, float, int]]:
    """Online scores and the prior; every record needs an IN and an OUT reference model."""
    n_in, m_in, ss_in = _group_stats(ref, keep)
    n_out, m_out, ss_out = _group_stats(ref, ~keep)
    prior = fit_variance_prior(np.concatenate([ss_in, ss_out]), np.concatenate([n_in, n_out]) - 1.0)
    a0, b0, _ = prior
    df_in, sc_in = _predictive(n_in, ss_in, a0, b0)
    df_out, sc_out = _predictive(n_out, ss_out, a0, b0)
    scores = _logpdf(obs, m_in, df_in, sc_in, predictive) - _logpdf(
        obs, m_out, df_out, sc_out, predictive
    )
    return scores, prior


def _offline_core(
    obs: NDArray[np.float64], ref: NDArray[np.float64], keep: NDArray[np.bool_], predictive: str
) -> tuple[NDArray[np.float64], tuple[float, float, int]]:
    """Offline scores (member-oriented signals) and the prior; needs OUT models per record."""
    n_out, m_out, ss_out = _group_stats(ref, ~keep)
    prior = fit_variance_prior(ss_out, n_out - 1.0)
    a0, b0, _ = prior
    df, sc = _predictive(n_out, ss_out, a0, b0)
    z = (obs - m_out) / sc
    if predictive == "t":
        from scipy import stats  # here, as in _logpdf

        log_sf = stats.t.logsf(z, df)
    else:
        log_sf = special.log_ndtr(-z)
    return -np.asarray(log_sf, dtype=np.float64), prior


def tune_clip(
    ref: NDArray[np.float64],
    keep: NDArray[np.bool_],
    *,
    online: bool,
    predictive: str,
    grid: tuple[float | None, ...] = CLIP_GRID,
    max_models: int = 16,
) -> tuple[float | None, dict[str, float]]:
    r"""The signal's clip for BaVarIA, chosen on the reference models (leave one model out).

    The rule of LiRA's :func:`privaudit.attacks.lira_fit.tune_clip`, with BaVarIA as the
    attack: each of up to ``max_models`` reference models in turn plays the target,
    attacked with the others (prior refitted on them, for every clip ``c`` of the grid;
    None = no clipping); the clip of the largest mean TPR at the FPRs of
    :data:`~privaudit.attacks.lira_fit.TUNING_FPRS` over the pseudo-targets wins (ties:
    the larger clip). Unlike LiRA's rule, an FPR counts only where a pseudo-target has
    enough non-members for 10 false positives (:data:`_MIN_FALSE_POSITIVES`): a TPR at
    one or two false positives is too noisy to choose a clip by, and on small audits it
    chose clips that cost AUC. The real target is never read. ``ref`` is
    member-oriented for the offline attack. When no pseudo-target can be scored nothing
    is clipped and the table is empty.
    """
    core = _online_core if online else _offline_core

    def mean_tpr(c: float | None) -> float | None:
        rc = _clipped(ref, c)
        found: list[float] = []
        for j, others, ok, member in _pseudo_targets(keep, online, 1, max_models):
            try:
                sc, _ = core(rc[j, ok], rc[others][:, ok], keep[others][:, ok], predictive)
            except DesignError:  # too few signals among the others to learn a prior
                continue
            n_neg = int((~member).sum())
            fprs = tuple(f for f in TUNING_FPRS if n_neg * f >= _MIN_FALSE_POSITIVES)
            tprs = _tpr_at_fprs(sc, member, fprs) if fprs else []
            if tprs:
                found.append(float(np.mean(tprs)))
        return sum(found, 0.0) / len(found) if found else None

    return _best_clip(grid, mean_tpr, ref)


def _resolve_clip(
    clip: float | str | None,
    ref: NDArray[np.float64],
    keep: NDArray[np.bool_],
    *,
    online: bool,
    predictive: str,
) -> tuple[float | None, dict[str, Any]]:
    rule = _check_clip(clip)
    if rule != "auto":
        return (None if rule is None else float(rule)), {"clip_rule": "given"}
    value, table = tune_clip(ref, keep, online=online, predictive=predictive)
    return value, {
        "clip_rule": "auto (leave-one-model-out TPR)"
        if table
        else "auto: too few reference models to tune, not clipped",
        "clip_tuning_tpr": table,
    }


def _info(
    predictive: str,
    prior: tuple[float, float, int],
    clip: float | None,
    clip_info: dict[str, Any],
    n_models: int,
    counts: dict[str, Any],
) -> dict[str, Any]:
    return {
        "predictive": predictive,
        "prior": "inverse-gamma on the variance, flat on the mean (type-II ML on the "
        "reference models)",
        "prior_a0": prior[0],
        "prior_b0": prior[1],
        "prior_groups": prior[2],
        "clip": clip,
        **clip_info,
        "n_models": n_models,
        **counts,
        "queries_per_record": 1,
        "alpha_calibrated": False,
    }


@register(
    "bavaria-online",
    fields=("target", "reference", "reference_membership"),
    default_signal="logit_confidence",
    alpha_threshold=False,
    in_defaults=False,
    description="BaVarIA online (Brännvall 2026): IN vs OUT predictive likelihood ratio under "
    "a normal-inverse-gamma prior on each record's variance",
)
def bavaria_online(
    data: AttackData,
    *,
    rng: np.random.Generator,
    signal: str = "logit_confidence",
    predictive: str = "t",
    clip: float | str | None = "auto",
) -> Result:
    r"""Online BaVarIA: :math:`\log p_{IN}(\phi_i) - \log p_{OUT}(\phi_i)` (module docstring).

    ``clip``: the signal is clipped to ``[-clip, clip]`` first; ``"auto"`` (default)
    tunes it on the reference models (:func:`tune_clip`), None does not clip. Raises
    :class:`DesignError` when a record lacks IN or OUT reference models, or when no
    record has two differing reference signals in one world (no variance to learn).
    """
    check_choice(predictive, "predictive", PREDICTIVES)
    obs, ref, keep, n_models = _inputs(data, signal)
    n_in, n_out = keep.sum(axis=0), (~keep).sum(axis=0)
    _check_world(n_in, "IN", "bavaria-online")
    _check_world(n_out, "OUT", "bavaria-online")
    clip_v, clip_info = _resolve_clip(clip, ref, keep, online=True, predictive=predictive)
    scores, prior = _online_core(_clipped(obs, clip_v), _clipped(ref, clip_v), keep, predictive)
    counts = {
        "n_in_min": int(n_in.min()),
        "n_in_max": int(n_in.max()),
        "n_out_min": int(n_out.min()),
        "n_out_max": int(n_out.max()),
    }
    return data.record_ids, scores, _info(predictive, prior, clip_v, clip_info, n_models, counts)


@register(
    "bavaria-offline",
    fields=("target", "reference", "reference_membership"),
    default_signal="logit_confidence",
    alpha_threshold=False,
    in_defaults=False,
    description="BaVarIA offline (Brännvall 2026): one-sided test against each record's OUT "
    "posterior predictive (normal-inverse-gamma prior on the variance)",
)
def bavaria_offline(
    data: AttackData,
    *,
    rng: np.random.Generator,
    signal: str = "logit_confidence",
    predictive: str = "t",
    clip: float | str | None = "auto",
) -> Result:
    r"""Offline BaVarIA: :math:`-\log\Pr[T > \phi_i]`, T the OUT predictive (module docstring).

    The signal is oriented higher = member first; ``clip`` as in :func:`bavaria_online`.
    Raises :class:`DesignError` when a record lacks OUT reference models, or no record
    has two differing OUT reference signals.
    """
    check_choice(predictive, "predictive", PREDICTIVES)
    obs, ref, keep, n_models = _inputs(data, signal)
    obs, ref = member_oriented(signal, obs), member_oriented(signal, ref)
    n_out = (~keep).sum(axis=0)
    _check_world(n_out, "OUT", "bavaria-offline")
    clip_v, clip_info = _resolve_clip(clip, ref, keep, online=False, predictive=predictive)
    scores, prior = _offline_core(_clipped(obs, clip_v), _clipped(ref, clip_v), keep, predictive)
    counts = {"n_out_min": int(n_out.min()), "n_out_max": int(n_out.max())}
    return data.record_ids, scores, _info(predictive, prior, clip_v, clip_info, n_models, counts)
