r"""LiRA, the likelihood-ratio attack of Carlini et al. (IEEE S&P 2022, Sec. IV), vectorised.

Signal (default): LiRA's logit-scaled confidence
:math:`\phi = \log\frac{p_y}{1 - p_y}` (Sec. IV-B, "logit scaling"), one query per record.
For record i, the reference models are split by ``reference_membership`` into those
that trained on it (IN) and those that did not (OUT) -- read from the matrix, never
assumed from a layout.

Online (Carlini et al. Alg. 1)
    Fit :math:`\mathcal N(\mu_{in,i}, \sigma_{in,i}^2)` and
    :math:`\mathcal N(\mu_{out,i}, \sigma_{out,i}^2)`; score
    :math:`\log \mathcal N(\phi_i; \mu_{in,i}, \sigma_{in,i}^2) - \log \mathcal N(\phi_i;
    \mu_{out,i}, \sigma_{out,i}^2)` (the log likelihood ratio; higher = member).
Offline (Sec. IV-C)
    OUT models only. ``offline_test="one-sided"`` (default, the paper):
    :math:`\Lambda = \Pr[Z > \phi_i]` for :math:`Z \sim \mathcal N(\mu_{out,i},
    \sigma_{out,i}^2)`, the p-value of a one-sided test; the score is
    :math:`-\log \Lambda` (``-log_ndtr(-z)``, z the standardised signal), the paper's
    test on a scale that stays finite and strictly increasing in z where :math:`\Lambda`
    itself rounds to 0 (z above about 38: strong members would tie at the top); an
    alpha-attack: ``score >= -log(alpha)``, the paper's :math:`\Lambda \le \alpha`.
    BaVarIA's offline score is on the same scale. ``offline_test="two-sided"``: the public
    reference code's score :math:`-\log \mathcal N(\phi_i; \mu_{out,i}, \sigma_{out,i}^2)`
    (tensorflow/privacy ``mi_lira_2021/plot.py``), low OUT density on either side; no
    alpha threshold.

Location: ``"mean"`` (the paper) or ``"median"`` (the reference code). Variance:

* ``"auto"`` (default): ``"shrunk"`` below with ``shrinkage="auto"``, whatever the number
  of reference models (``lira_fit._resolve_variance``; ``params["variance"]`` records
  ``"shrunk"`` and ``params["variance_rule"]`` ``"auto"``);
* ``"shrunk"`` (privaudit's, between the paper's per-example and fixed variances): per
  record and world,
  :math:`\sigma_i^2 = (\nu\,\sigma_p^2 + SS_i)/(\nu + n_i - 1)`, the per-example
  variance shrunk toward the pooled within-record variance :math:`\sigma_p^2` of that
  world with :math:`\nu` pseudo-observations (:math:`\nu = \infty`: the pooled one,
  :math:`\nu = 0`: the per-example one with ``ddof=1``; a record with one model in a
  world gets :math:`\sigma_p`). ``shrinkage="auto"`` (default) chooses :math:`\nu` from
  0, 0.5, 1, ..., 64, inf by the leave-one-model-out predictive likelihood of the
  reference signals (:func:`tune_shrinkage`; ``params["shrinkage"]``,
  ``params["shrinkage_loglik"]``); a number fixes it;
* ``"per-example"``: :math:`\sigma_{in,i}`, :math:`\sigma_{out,i}` = standard deviations
  (``ddof=0``, as ``np.std`` in the reference code) of record i's IN / OUT signals;
  needs at least 2 IN (online) and 2 OUT models per record;
* ``"fixed"``: one global :math:`\sigma` for all records and both worlds (the paper's
  recommendation with few reference models), estimated as the pooled within-record
  standard deviation :math:`\sqrt{\sum_i \sum_{j} (\phi_{ij} - \bar\phi_{w(j),i})^2 /
  (N - G)}` over the IN and OUT groups (G groups, N signals);
* ``"fixed-reference-code"``: :math:`\sigma` = ``np.std`` of *all* IN signals of all
  records (OUT signals offline), as ``plot.py`` does (it includes between-record
  spread; kept for comparison with published numbers).

Every sigma is floored at ``sigma_floor`` (the reference code adds 1e-30); the number
of floored values is reported. The Gaussian fitting and the tuning of the defaults live
in :mod:`.lira_fit` (re-exported here); this module reads the tables and scores.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import special

from privaudit._validation import check_choice, fail
from privaudit.attacks._orient import member_oriented
from privaudit.attacks.base import AttackData, register, require
from privaudit.attacks.calibration import (
    calibrate_threshold,
    check_calibration,
    out_count_params,
    population_reference_inputs,
)
from privaudit.attacks.lira_fit import (
    DEFAULT_CLIP,
    LOCATIONS,
    OFFLINE_TESTS,
    VARIANCES,
    _check_clip,
    _check_counts,
    _check_floor,
    _check_shrinkage,
    _clip_both,
    _clipped,
    _log_normal_pdf,
    _masked_location,
    _online_core,
    _resolve_clip,
    _resolve_shrinkage,
    _resolve_variance,
    _sigmas,
    tune_clip,
    tune_shrinkage,
)
from privaudit.errors import DesignError

__all__ = [
    "DEFAULT_CLIP",
    "LOCATIONS",
    "OFFLINE_TESTS",
    "VARIANCES",
    "lira_offline",
    "lira_online",
    "tune_clip",
    "tune_shrinkage",
]

Result = tuple[NDArray[Any], NDArray[np.float64], dict[str, Any]]


def _inputs(
    data: AttackData, signal: str, clip: float | None
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_], int, int]:
    obs = data.table("target", signal).values[0]
    ref = data.table("reference", signal).values
    membership = require(data.reference_membership, "reference_membership")
    n_clipped = 0 if clip is None else int((np.abs(obs) > clip).sum() + (np.abs(ref) > clip).sum())
    return (
        _clipped(obs, clip),
        _clipped(ref, clip),
        np.asarray(membership.keep),
        membership.n_models,
        n_clipped,
    )


def _views(data: AttackData, augmented_queries: bool) -> list[tuple[str, AttackData]]:
    """The query views LiRA uses: the identity only, or every augmented view as well."""
    if not isinstance(augmented_queries, bool):
        raise fail("augmented_queries", "true or false", augmented_queries)
    if not augmented_queries:
        return [("identity", data)]
    if not data.views:
        raise DesignError(
            "augmented_queries=True needs the models' signals on augmented views of the "
            "records (AttackData.views; the experiment engine computes them for image models "
            "trained with an augmentation, e.g. a torch recipe with augmentation 'shift'); "
            "found none"
        )
    return [("identity", data), *data.views.items()]


def _view_scale(resid: list[NDArray[np.float64]], mask: NDArray[np.bool_]) -> float:
    r"""Standard deviation of the mean of V standardised view residuals, relative to one.

    ``resid[v]`` (k x n) are the reference signals standardised per view,
    :math:`e_{v} = (\phi_{v} - \mu_{v}) / \sigma_{v}`, read where ``mask``. With the
    views' correlation R, :math:`\operatorname{Var}(\bar e) = \bar R\,\operatorname{Var}(e)`;
    the ratio :math:`\sqrt{\sum \bar e^2 / (\frac1V \sum_v \sum e_v^2)}` estimates
    :math:`\sqrt{\bar R}` (1 for one view; :math:`1/\sqrt V` for independent views).
    """
    if len(resid) == 1:
        return 1.0
    stack = np.stack([np.where(mask, r, 0.0) for r in resid])
    mean_sq = float((stack.mean(axis=0) ** 2).sum())
    per_view = float((stack**2).sum()) / len(resid)
    if per_view <= 0.0:
        return 1.0
    return float(np.sqrt(max(mean_sq / per_view, 1e-12)))


@register(
    "lira-online",
    fields=("target", "reference", "reference_membership"),
    default_signal="logit_confidence",
    alpha_threshold=False,
    description="LiRA online (Carlini et al. 2022): per-record IN vs OUT Gaussian likelihood ratio",
)
def lira_online(
    data: AttackData,
    *,
    rng: np.random.Generator,
    signal: str = "logit_confidence",
    location: str = "mean",
    variance: str = "auto",
    shrinkage: float | str = "auto",
    clip: float | str | None = "auto",
    sigma_floor: float = 1e-6,
    augmented_queries: bool = False,
) -> Result:
    r"""Online LiRA: :math:`\log N(\phi; \mu_{in}, \sigma_{in}^2) - \log N(\phi; \mu_{out}, \sigma_{out}^2)`.

    Carlini et al. 2022, Algorithm 1 (see the module docstring for the clipping, the
    location and the variance modes). Raises :class:`DesignError` when a record lacks
    IN or OUT models.

    ``augmented_queries=True`` (Sec. VI-A): the IN and OUT Gaussians are fitted per
    query view (``data.views``: the models on augmented copies of the records), each with
    the variance mode, and the score is the mean over the V views of the per-view log
    likelihood ratios (a diagonal multivariate Gaussian, up to the factor V, as the
    reference code ``plot.py`` averages them). The clip and the shrinkage weight are
    tuned on the identity view and used for all.
    """
    check_choice(location, "location", LOCATIONS)
    variance_rule, variance = variance, _resolve_variance(variance)
    shrinkage = _check_shrinkage(shrinkage)
    clip_rule = _check_clip(clip)
    floor = _check_floor(sigma_floor)
    raw_obs, raw_ref, keep, n_models, _ = _inputs(data, signal, None)
    in_mask, out_mask = keep, ~keep
    n_in, n_out = in_mask.sum(axis=0), out_mask.sum(axis=0)
    minimum = 2 if variance == "per-example" else 1
    _check_counts(n_in, "IN", minimum, variance)
    _check_counts(n_out, "OUT", minimum, variance)
    clip_v, clip_info = _resolve_clip(
        clip_rule,
        raw_ref,
        keep,
        online=True,
        location=location,
        variance=variance,
        shrinkage=shrinkage,
        floor=floor,
    )
    _, ref, n_clipped = _clip_both(raw_obs, raw_ref, clip_v)
    nu, shrink_info = _resolve_shrinkage(shrinkage, variance, ref, [in_mask, out_mask])
    views = _views(data, augmented_queries)
    per_view, n_floored = [], 0
    for _, view in views:
        v_obs, v_ref, _, _, nc = _inputs(view, signal, clip_v)
        sc, nf = _online_core(v_obs, v_ref, keep, location, variance, nu, floor)
        per_view.append(sc)
        n_floored += nf
        n_clipped += nc if view is not data else 0
    scores = np.mean(per_view, axis=0)
    return (
        data.record_ids,
        scores,
        {
            "location": location,
            "variance": variance,
            "variance_rule": variance_rule,
            **shrink_info,
            "clip": clip_v,
            **clip_info,
            "n_values_clipped": n_clipped,
            "sigma_floor": floor,
            "n_sigma_floored": n_floored,
            "n_models": n_models,
            "n_in_min": int(n_in.min()),
            "n_in_max": int(n_in.max()),
            "n_out_min": int(n_out.min()),
            "n_out_max": int(n_out.max()),
            "queries_per_record": len(views),
            "n_views": len(views),
            "view_names": [name for name, _ in views],
            "alpha_calibrated": False,
        },
    )


@register(
    "lira-offline",
    fields=("target", "reference", "reference_membership"),
    optional_fields=(
        "population_target",
        "reference_population",
        "reference_population_membership",
    ),
    default_signal="logit_confidence",
    alpha_threshold=True,
    description="LiRA offline (Carlini et al. 2022): per-record test against OUT Gaussians",
)
def lira_offline(
    data: AttackData,
    *,
    rng: np.random.Generator,
    signal: str = "logit_confidence",
    location: str = "mean",
    variance: str = "auto",
    offline_test: str = "one-sided",
    threshold_calibration: str = "population",
    shrinkage: float | str = "auto",
    clip: float | str | None = "auto",
    sigma_floor: float = 1e-6,
    alpha: float | None = None,
    augmented_queries: bool = False,
) -> Result:
    r"""Offline LiRA against the OUT Gaussian :math:`\mathcal N(\mu_{out,i}, \sigma_{out,i}^2)`.

    ``one-sided`` (default; Carlini et al. Sec. IV-C): score :math:`-\log\Pr[Z > \phi_i]`
    with the signal oriented "higher = member", an alpha-attack (the log of the paper's
    p-value, so that it does not round to 0 for strong records). ``two-sided`` (the
    reference code): score :math:`-\log\mathcal N(\phi_i; \mu_{out,i}, \sigma_{out,i}^2)`.
    Raises :class:`DesignError` when a record lacks OUT models.

    Threshold of the one-sided test at a requested alpha: ``threshold_calibration=
    "population"`` (default) scores each population record (``population_target``,
    ``reference_population``) against a random subset of its OUT reference models, of
    the size an audited record gets, with the same location and variance rule (a fixed
    sigma is the one fitted on the audited records), and takes the conformal quantile
    of those scores (:mod:`privaudit.attacks.calibration`); ``"smoothed"`` is the
    paper's ``Lambda <= alpha`` (threshold ``-log(alpha)``, in ``params["threshold"]``;
    ``params["score_kind"]`` is ``"-log p-value"``).

    ``augmented_queries=True`` (Sec. VI-A): one OUT Gaussian per query view
    (``data.views``). One-sided: the statistic is the mean over the V views of the
    standardised signals :math:`z_v = (\phi_v - \mu_{out,v}) / \sigma_{out,v}`, tested
    against :math:`\mathcal N(0, \bar R)` with :math:`\bar R` the mean correlation of
    the views, estimated on the OUT reference signals (:func:`_view_scale`): the
    one-sided test of a multivariate Gaussian with a common correlation, which is the
    single-view test for V = 1. Two-sided: the mean over views of the per-view scores
    (the reference code). Calibration records get the same views and the same scale.
    """
    check_choice(location, "location", LOCATIONS)
    variance_rule, variance = variance, _resolve_variance(variance)
    shrinkage = _check_shrinkage(shrinkage)
    clip_rule = _check_clip(clip)
    check_choice(offline_test, "offline_test", OFFLINE_TESTS)
    threshold_calibration = check_calibration(threshold_calibration)
    floor = _check_floor(sigma_floor)
    raw_obs, raw_ref, keep, n_models, _ = _inputs(data, signal, None)
    out_mask = ~keep
    n_out = out_mask.sum(axis=0)
    _check_counts(n_out, "OUT", 2 if variance == "per-example" else 1, variance)
    clip_v, clip_info = _resolve_clip(
        clip_rule,
        member_oriented(signal, raw_ref),
        keep,
        online=False,
        location=location,
        variance=variance,
        shrinkage=shrinkage,
        floor=floor,
    )
    _, ref, n_clipped = _clip_both(raw_obs, raw_ref, clip_v)
    ref = member_oriented(signal, ref)
    nu, shrink_info = _resolve_shrinkage(shrinkage, variance, ref, [out_mask])
    views = _views(data, augmented_queries)
    z_obs, resid, two_sided, fits, n_floored, nc = _offline_views(
        data, views, signal, clip_v, out_mask, location, variance, nu, floor
    )
    n_clipped += nc
    scale = _view_scale(resid, out_mask)
    scores = _offline_scores(offline_test, z_obs, two_sided, scale)
    calib: dict[str, Any] = {"threshold_calibration": threshold_calibration}
    if offline_test == "one-sided":
        calib["alpha_guarantee"] = "approximate"
        calib["score_kind"] = "-log p-value"  # not -p: the smoothed threshold is -log(alpha)
    if alpha is not None and offline_test == "one-sided" and threshold_calibration == "population":
        cal = _offline_calibration_scores(
            views, fits, signal, n_out, rng, clip_v, location, variance, nu, floor, scale
        )
        calibrate_threshold(calib, cal, alpha, **out_count_params(n_out))
    elif alpha is not None and offline_test == "one-sided":  # Lambda <= alpha
        calib["threshold"] = float(-np.log(alpha))
    return (
        data.record_ids,
        scores,
        {
            **calib,
            "location": location,
            "variance": variance,
            "variance_rule": variance_rule,
            "offline_test": offline_test,
            **shrink_info,
            "clip": clip_v,
            **clip_info,
            "n_values_clipped": n_clipped,
            "sigma_floor": floor,
            "n_sigma_floored": n_floored,
            "n_models": n_models,
            "n_out_min": int(n_out.min()),
            "n_out_max": int(n_out.max()),
            "queries_per_record": len(views),
            "n_views": len(views),
            "view_names": [name for name, _ in views],
            "view_scale": scale,
            "alpha_calibrated": offline_test == "one-sided",
        },
    )


def _offline_scores(
    offline_test: str,
    z_obs: list[NDArray[np.float64]],
    two_sided: list[NDArray[np.float64]],
    scale: float,
) -> NDArray[np.float64]:
    r"""Offline LiRA's score from the per-view fits: one-sided :math:`-\log\Pr[Z > \phi]`
    (Sec. IV-C) on the mean standardised signal over the views, else the mean two-sided
    score."""
    if offline_test == "one-sided":
        out: NDArray[np.float64] = _one_sided(np.mean(z_obs, axis=0) / scale)
    else:
        out = np.mean(two_sided, axis=0)
    return out


def _offline_views(
    data: AttackData,
    views: list[tuple[str, AttackData]],
    signal: str,
    clip_v: float | None,
    out_mask: NDArray[np.bool_],
    location: str,
    variance: str,
    nu: float | None,
    floor: float,
) -> tuple[
    list[NDArray[np.float64]],
    list[NDArray[np.float64]],
    list[NDArray[np.float64]],
    list[tuple[NDArray[np.float64], list[float]]],
    int,
    int,
]:
    """One OUT Gaussian per query view (offline LiRA), fitted on the OUT reference signals.

    Per view: the standardised target signal ``z``, the standardised reference residuals
    (for :func:`_view_scale`), the two-sided score ``-log N(phi; mu, sigma^2)`` and the
    fitted ``(sigma, pooled variance)`` (reused by the calibration). Also returns how many
    sigmas were floored and how many values of the non-identity views were clipped.
    """
    z_obs, resid, two_sided, fits = [], [], [], []
    n_floored = n_clipped = 0
    for _, view in views:
        v_obs, v_ref, _, _, nc = _inputs(view, signal, clip_v)
        n_clipped += nc if view is not data else 0
        v_obs, v_ref = member_oriented(signal, v_obs), member_oriented(signal, v_ref)
        mu = _masked_location(v_ref, out_mask, location)
        (sigma,), pooled = _sigmas(v_ref, [out_mask], variance, nu=nu)
        n_floored += int((sigma < floor).sum())
        sigma = np.maximum(sigma, floor)
        z_obs.append((v_obs - mu) / sigma)
        resid.append((v_ref - mu[None, :]) / sigma[None, :])
        two_sided.append(-_log_normal_pdf(v_obs, mu, sigma))
        fits.append((sigma, pooled))
    return z_obs, resid, two_sided, fits, n_floored, n_clipped


def _offline_calibration_scores(
    views: list[tuple[str, AttackData]],
    fits: list[tuple[NDArray[np.float64], list[float]]],
    signal: str,
    n_out: NDArray[np.int64],
    rng: np.random.Generator,
    clip_v: float | None,
    location: str,
    variance: str,
    nu: float | None,
    floor: float,
    scale: float,
) -> NDArray[np.float64]:
    """The one-sided offline statistic of every population record (the calibration sample).

    Each population record is scored against a random subset of its OUT reference models of
    the size an audited record gets (the same subsets for every view: the generator state is
    replayed), with the audited records' location and variance rule (a fixed sigma is the
    one fitted on the audited records) and the same view ``scale``.
    """
    state = rng.bit_generator.state  # the same calibration subsets for every view
    c_z = []
    for (_, view), (sigma, pooled) in zip(views, fits, strict=True):
        rng.bit_generator.state = state
        c_obs, c_ref, cmask = population_reference_inputs(view, signal, n_out, rng)
        c_obs, c_ref = _clipped(c_obs, clip_v), _clipped(c_ref, clip_v)
        c_obs, c_ref = member_oriented(signal, c_obs), member_oriented(signal, c_ref)
        c_mu = _masked_location(c_ref, cmask, location)
        if variance == "per-example":
            (c_sigma,), _ = _sigmas(c_ref, [cmask], variance)
        elif variance == "shrunk":  # the weight and pooled variance of the audited records
            (c_sigma,), _ = _sigmas(c_ref, [cmask], variance, nu=nu, pooled=pooled)
        else:  # the global sigma fitted on the audited records
            c_sigma = np.full(c_obs.size, float(sigma[0]) if sigma.size else floor)
        c_sigma = np.maximum(c_sigma, floor)
        c_z.append((c_obs - c_mu) / c_sigma)
    return _one_sided(np.mean(c_z, axis=0) / scale)


def _one_sided(z: NDArray[np.float64]) -> NDArray[np.float64]:
    r"""The one-sided offline score :math:`-\log\Pr[Z > z] = -\log\Phi(-z)` of standardised
    signals (Carlini et al. 2022, Sec. IV-C: the log of the test's p-value; ``log_ndtr``
    keeps it finite and strictly increasing where the p-value underflows)."""
    out: NDArray[np.float64] = -special.log_ndtr(-z)
    return out
