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
    \sigma_{out,i}^2)`, the p-value of a one-sided test; the score is :math:`-\Lambda`
    (an alpha-attack: ``score >= -alpha``). ``offline_test="two-sided"``: the public
    reference code's score :math:`-\log \mathcal N(\phi_i; \mu_{out,i}, \sigma_{out,i}^2)`
    (tensorflow/privacy ``mi_lira_2021/plot.py``), low OUT density on either side; no
    alpha threshold.

Location: ``"mean"`` (the paper) or ``"median"`` (the reference code). Variance:

* ``"auto"`` (default): ``"fixed"`` with fewer than :data:`AUTO_FIXED_BELOW` reference
  models, else ``"per-example"``; ``params`` records the rule and the mode it chose;
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
of floored values is reported.
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
    check_calibration,
    conformal_threshold,
    population_reference_inputs,
)
from privaudit.errors import DesignError

__all__ = ["lira_offline", "lira_online"]

Result = tuple[NDArray[Any], NDArray[np.float64], dict[str, Any]]

LOCATIONS = ("mean", "median")
VARIANCES = ("auto", "per-example", "fixed", "fixed-reference-code")

#: With fewer reference models than this, ``variance="auto"`` uses the fixed (global)
#: variance. Carlini et al. (2022) recommend a global variance when few shadow models are
#: trained (their reference code's README: "Because we only train a few models, the fixed
#: variance variants perform best"); the cut-off of about 64 models is recalled from the
#: paper and not verified against its text (shared/notes/attacks.md, section 2.4).
AUTO_FIXED_BELOW = 64


def _resolve_variance(variance: str, n_models: int) -> str:
    """``"auto"`` -> ``"fixed"`` below :data:`AUTO_FIXED_BELOW` reference models, else per-example."""
    check_choice(variance, "variance", VARIANCES)
    if variance != "auto":
        return variance
    return "fixed" if n_models < AUTO_FIXED_BELOW else "per-example"


OFFLINE_TESTS = ("one-sided", "two-sided")
_LOG_SQRT_2PI = 0.5 * np.log(2.0 * np.pi)


def _masked_location(
    v: NDArray[np.float64], mask: NDArray[np.bool_], how: str
) -> NDArray[np.float64]:
    if how == "mean":
        out: NDArray[np.float64] = np.where(mask, v, 0.0).sum(axis=0) / mask.sum(axis=0)
        return out
    return np.asarray(np.nanmedian(np.where(mask, v, np.nan), axis=0), dtype=np.float64)


def _masked_mean_sq_dev(
    v: NDArray[np.float64], mask: NDArray[np.bool_]
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Per-column sum of squared deviations from the column mean, and counts."""
    n = mask.sum(axis=0)
    mean = np.where(mask, v, 0.0).sum(axis=0) / n
    dev = np.where(mask, v - mean[None, :], 0.0)
    return (dev * dev).sum(axis=0), n


def _check_counts(counts: NDArray[np.int64], world: str, minimum: int, variance: str) -> None:
    bad = counts < minimum
    if bad.any():
        raise DesignError(
            f"reference_membership: expected at least {minimum} {world} reference model(s) per "
            f"record for LiRA with variance={variance!r}, found {int(bad.sum())} record(s) with "
            f"fewer (minimum {int(counts.min())}); train more reference models or use a "
            f"layout in which every record is {world} for enough of them"
        )


def _log_normal_pdf(
    x: NDArray[np.float64], mu: NDArray[np.float64], sigma: NDArray[np.float64]
) -> NDArray[np.float64]:
    z = (x - mu) / sigma
    out: NDArray[np.float64] = -0.5 * z * z - np.log(sigma) - _LOG_SQRT_2PI
    return out


def _sigmas(
    v: NDArray[np.float64],
    masks: list[NDArray[np.bool_]],
    variance: str,
) -> list[NDArray[np.float64]]:
    """Per-world sigmas (one array per mask), per the variance mode."""
    n_rec = v.shape[1]
    if variance == "per-example":
        out = []
        for m in masks:
            ss, n = _masked_mean_sq_dev(v, m)
            out.append(np.sqrt(ss / n))  # ddof=0, as np.std
        return out
    if variance == "fixed":
        total_ss = 0.0
        total_n = 0
        groups = 0
        for m in masks:
            ss, n = _masked_mean_sq_dev(v, m)
            total_ss += float(ss.sum())
            total_n += int(n.sum())
            groups += int(n.size)
        if total_n <= groups:
            raise DesignError(
                "reference_membership: expected more reference signals than (record, world) groups "
                f"to pool a fixed LiRA variance, found {total_n} signal(s) in {groups} group(s); "
                "use variance='fixed-reference-code' or more reference models"
            )
        s = float(np.sqrt(total_ss / (total_n - groups)))
        return [np.full(n_rec, s) for _ in masks]
    # fixed-reference-code: np.std of every signal of the first world (IN online, OUT offline)
    s = float(np.std(v[masks[0]]))
    return [np.full(n_rec, s) for _ in masks]


def _inputs(
    data: AttackData, signal: str
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_], int]:
    obs = data.table("target", signal).values[0]
    ref = data.table("reference", signal).values
    membership = require(data.reference_membership, "reference_membership")
    return obs, ref, np.asarray(membership.keep), membership.n_models


def _check_floor(sigma_floor: float) -> float:
    if not (isinstance(sigma_floor, int | float) and np.isfinite(sigma_floor) and sigma_floor > 0):
        raise fail("sigma_floor", "a positive finite number", sigma_floor)
    return float(sigma_floor)


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
    sigma_floor: float = 1e-6,
) -> Result:
    r"""Online LiRA: :math:`\log N(\phi; \mu_{in}, \sigma_{in}^2) - \log N(\phi; \mu_{out}, \sigma_{out}^2)`.

    Carlini et al. 2022, Algorithm 1 (see the module docstring for the location and
    variance modes). Raises :class:`DesignError` when a record lacks IN or OUT models.
    """
    check_choice(location, "location", LOCATIONS)
    check_choice(variance, "variance", VARIANCES)
    floor = _check_floor(sigma_floor)
    obs, ref, keep, n_models = _inputs(data, signal)
    variance_rule, variance = variance, _resolve_variance(variance, n_models)
    in_mask, out_mask = keep, ~keep
    n_in, n_out = in_mask.sum(axis=0), out_mask.sum(axis=0)
    minimum = 2 if variance == "per-example" else 1
    _check_counts(n_in, "IN", minimum, variance)
    _check_counts(n_out, "OUT", minimum, variance)
    mu_in = _masked_location(ref, in_mask, location)
    mu_out = _masked_location(ref, out_mask, location)
    s_in, s_out = _sigmas(ref, [in_mask, out_mask], variance)
    n_floored = int((s_in < floor).sum() + (s_out < floor).sum())
    s_in, s_out = np.maximum(s_in, floor), np.maximum(s_out, floor)
    scores = _log_normal_pdf(obs, mu_in, s_in) - _log_normal_pdf(obs, mu_out, s_out)
    return (
        data.record_ids,
        scores,
        {
            "location": location,
            "variance": variance,
            "variance_rule": variance_rule,
            "sigma_floor": floor,
            "n_sigma_floored": n_floored,
            "n_models": n_models,
            "n_in_min": int(n_in.min()),
            "n_in_max": int(n_in.max()),
            "n_out_min": int(n_out.min()),
            "n_out_max": int(n_out.max()),
            "queries_per_record": 1,
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
    sigma_floor: float = 1e-6,
    alpha: float | None = None,
) -> Result:
    r"""Offline LiRA against the OUT Gaussian :math:`\mathcal N(\mu_{out,i}, \sigma_{out,i}^2)`.

    ``one-sided`` (default; Carlini et al. Sec. IV-C): score :math:`-\Pr[Z > \phi_i]`
    with the signal oriented "higher = member", an alpha-attack. ``two-sided`` (the
    reference code): score :math:`-\log\mathcal N(\phi_i; \mu_{out,i}, \sigma_{out,i}^2)`.
    Raises :class:`DesignError` when a record lacks OUT models.

    Threshold of the one-sided test at a requested alpha: ``threshold_calibration=
    "population"`` (default) scores each population record (``population_target``,
    ``reference_population``) against a random subset of its OUT reference models, of
    the size an audited record gets, with the same location and variance rule (a fixed
    sigma is the one fitted on the audited records), and takes the conformal quantile
    of those scores (:mod:`privaudit.attacks.calibration`); ``"smoothed"`` is the
    paper's ``Lambda <= alpha`` (threshold ``-alpha``).
    """
    check_choice(location, "location", LOCATIONS)
    check_choice(variance, "variance", VARIANCES)
    check_choice(offline_test, "offline_test", OFFLINE_TESTS)
    threshold_calibration = check_calibration(threshold_calibration)
    floor = _check_floor(sigma_floor)
    obs, ref, keep, n_models = _inputs(data, signal)
    variance_rule, variance = variance, _resolve_variance(variance, n_models)
    obs = member_oriented(signal, obs)
    ref = member_oriented(signal, ref)
    out_mask = ~keep
    n_out = out_mask.sum(axis=0)
    _check_counts(n_out, "OUT", 2 if variance == "per-example" else 1, variance)
    mu = _masked_location(ref, out_mask, location)
    (sigma,) = _sigmas(ref, [out_mask], variance)
    n_floored = int((sigma < floor).sum())
    sigma = np.maximum(sigma, floor)
    if offline_test == "one-sided":
        scores = -special.ndtr(-(obs - mu) / sigma)  # -Pr[Z > phi]
    else:
        scores = -_log_normal_pdf(obs, mu, sigma)
    calib: dict[str, Any] = {"threshold_calibration": threshold_calibration}
    if alpha is not None and offline_test == "one-sided" and threshold_calibration == "population":
        c_obs, c_ref, cmask = population_reference_inputs(data, signal, n_out, rng)
        c_obs, c_ref = member_oriented(signal, c_obs), member_oriented(signal, c_ref)
        c_mu = _masked_location(c_ref, cmask, location)
        if variance == "per-example":
            (c_sigma,) = _sigmas(c_ref, [cmask], variance)
        else:  # the global sigma fitted on the audited records
            c_sigma = np.full(c_obs.size, float(sigma[0]) if sigma.size else floor)
        c_sigma = np.maximum(c_sigma, floor)
        cal = -special.ndtr(-(c_obs - c_mu) / c_sigma)
        calib.update(threshold=conformal_threshold(cal, alpha), n_calibration=int(cal.size))
    return (
        data.record_ids,
        scores,
        {
            **calib,
            "location": location,
            "variance": variance,
            "variance_rule": variance_rule,
            "offline_test": offline_test,
            "sigma_floor": floor,
            "n_sigma_floored": n_floored,
            "n_models": n_models,
            "n_out_min": int(n_out.min()),
            "n_out_max": int(n_out.max()),
            "queries_per_record": 1,
            "alpha_calibrated": offline_test == "one-sided",
        },
    )
