r"""Validity of the pointwise Zero-Run bounds under estimated propensities: the null check.

A mechanism that leaks nothing (0-DP, so ``mu = 0`` and ``eps = 0``) audited under a
distribution shift, as in issue 9: ``n`` members and ``n`` non-members, a feature
``A = gamma (2 S - 1) + Z`` (``Z ~ N(0, 1)``) plus ``n_noise`` pure-noise features, and the
attack score is ``A`` itself (the features-only AUC is ``Phi(sqrt(2) gamma)``, 0.92 at
``gamma = 1``). Any pointwise bound above 0 is a violation. :func:`null_replicate` runs
one replicate for one estimator; the ``"oracle"`` estimator uses the true propensity
``expit(2 gamma A)`` (exact validity, Corollary 6.1).

:func:`gaussian_power_replicate` is the power check of the issue: a Gaussian mechanism
with ``mu = 1`` (the release ``Y = mu S + N(0, 1)``, attack score the posterior log-odds
``mu Y - mu^2 / 2 + logit pi_hat_a``) under shift ``gamma = 0.3``.

:func:`null_headline_replicate` and :func:`gaussian_power_headline_replicate` do the same
for the audit's headline (:func:`.audit.zero_run_audit`, rule ``"max"``): every estimator
at ``beta / J`` on the same data and tampering coins, the largest bound (without the
falsification test's exclusions, which could only lower it).

All are deterministic in their seed, run in one process each (parallelise over
replicates) and are used by ``benchmarks/bench_zero_run_null.py`` and the tests.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privaudit._validation import check_positive_int, fail
from privaudit.zero_run.bounds import DEFAULT_MARGIN_Z, pointwise_inputs, zero_run_bounds
from privaudit.zero_run.propensity import (
    ESTIMATORS,
    PairedPropensity,
    cross_fit_propensity_pair,
)
from privaudit.zero_run.tampering import draw_uniforms

__all__ = [
    "gaussian_power_headline_replicate",
    "gaussian_power_replicate",
    "null_headline_replicate",
    "null_replicate",
]


def _draw(
    seed: int, gamma: float, n_per_class: int, n_noise: int
) -> tuple[np.random.Generator, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    member = np.r_[np.ones(n_per_class, bool), np.zeros(n_per_class, bool)]
    a = gamma * np.where(member, 1.0, -1.0) + rng.standard_normal(2 * n_per_class)
    feats = np.c_[a, rng.standard_normal((2 * n_per_class, n_noise))]
    return rng, member, a, feats


def _bounds(
    uniforms: np.ndarray,
    scores: np.ndarray,
    member: np.ndarray,
    feats: np.ndarray,
    a: np.ndarray,
    gamma: float,
    estimator: str,
    seed: int,
    margin_zs: tuple[float, ...],
    beta: float,
    fit: PairedPropensity | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {"seed": seed, "estimator": estimator, "gamma": gamma}
    if estimator == "oracle":
        pi = 1.0 / (1.0 + np.exp(-2.0 * gamma * a))
        res = zero_run_bounds(scores, member, pi, uniforms=uniforms, beta=beta)["pointwise"]
        for z in margin_zs:
            out[f"eps_z{z:g}"] = float(res.epsilon_lower_bound)
            out[f"mu_z{z:g}"] = float(res.mu_lower_bound or 0.0)
        return out
    if fit is None:
        fit = cross_fit_propensity_pair(feats, member, estimator=estimator, seed=seed)
    for z in margin_zs:
        # the audit's own correction (margin z; the split one ignores z)
        kw = pointwise_inputs(estimator, fit, z)
        res = zero_run_bounds(scores, member, uniforms=uniforms, beta=beta, **kw)["pointwise"]
        out[f"eps_z{z:g}"] = float(res.epsilon_lower_bound)
        out[f"mu_z{z:g}"] = float(res.mu_lower_bound or 0.0)
    return out


def _check(estimator: str, gamma: float, n_per_class: int, n_noise: int) -> None:
    if estimator != "oracle" and estimator not in ESTIMATORS:
        raise fail("estimator", f"'oracle' or one of {ESTIMATORS}", estimator)
    if not gamma >= 0.0:
        raise fail("gamma", "a number >= 0", gamma)
    check_positive_int(n_per_class, "n_per_class", minimum=15)
    check_positive_int(n_noise, "n_noise", minimum=0)


def null_replicate(
    seed: int,
    estimator: str,
    gamma: float,
    *,
    n_per_class: int = 1500,
    n_noise: int = 2,
    margin_zs: tuple[float, ...] = (DEFAULT_MARGIN_Z,),
    beta: float = 0.05,
) -> dict[str, Any]:
    """One null replicate: pointwise eps and mu bounds (truth 0) for each margin ``z``.

    The estimator's own pointwise correction (:func:`.bounds.pointwise_inputs`): the
    margin rule with ``z``, or the split rule (``"logistic"``), which ignores ``z``.

    Returns ``{"seed", "estimator", "gamma", "eps_z<z>", "mu_z<z>", ...}``; a value above
    0 is a violation.
    """
    _check(estimator, gamma, n_per_class, n_noise)
    rng, member, a, feats = _draw(seed, gamma, n_per_class, n_noise)
    u = draw_uniforms(member.size, rng)
    return _bounds(u, a, member, feats, a, gamma, estimator, seed, margin_zs, beta)


def gaussian_power_replicate(
    seed: int,
    estimator: str,
    *,
    mu: float = 1.0,
    gamma: float = 0.3,
    n_per_class: int = 1500,
    n_noise: int = 2,
    margin_zs: tuple[float, ...] = (DEFAULT_MARGIN_Z,),
    beta: float = 0.05,
) -> dict[str, Any]:
    """One power replicate: a ``mu``-GDP Gaussian mechanism under shift ``gamma``.

    The attack is the posterior log-odds with the estimator's estimate *a* (the first of
    its two paired fits, so that the split correction's tampering estimate *b* stays
    independent of the attack), or the true propensity for ``"oracle"``. Returns the same keys as :func:`null_replicate`.
    """
    _check(estimator, gamma, n_per_class, n_noise)
    rng, member, a, feats = _draw(seed, gamma, n_per_class, n_noise)
    y = mu * member + rng.standard_normal(member.size)
    fit = None
    if estimator == "oracle":
        logit_pi = 2.0 * gamma * a
    else:
        fit = cross_fit_propensity_pair(feats, member, estimator=estimator, seed=seed)
        logit_pi = np.clip(fit.logit_a, -50.0, 50.0)
    scores = mu * y - mu * mu / 2.0 + logit_pi
    u = draw_uniforms(member.size, rng)
    return _bounds(u, scores, member, feats, a, gamma, estimator, seed, margin_zs, beta, fit)


def _headline(
    u: np.ndarray,
    scores: np.ndarray,
    member: np.ndarray,
    feats: np.ndarray,
    a: np.ndarray,
    gamma: float,
    fits: dict[str, PairedPropensity],
    seed: int,
    margin_zs: tuple[float, ...],
    beta: float,
) -> dict[str, Any]:
    level = beta / len(fits)
    per = {
        name: _bounds(u, scores, member, feats, a, gamma, name, seed, margin_zs, level, fit)
        for name, fit in fits.items()
    }
    out: dict[str, Any] = {"seed": seed, "estimator": "headline", "gamma": gamma}
    for z in margin_zs:
        for kind in ("eps", "mu"):
            key = f"{kind}_z{z:g}"
            out[key] = max(r[key] for r in per.values())
            for name, r in per.items():
                out[f"{name}:{key}"] = r[key]
    return out


def _fit_all(
    feats: np.ndarray, member: np.ndarray, estimators: tuple[str, ...], seed: int
) -> dict[str, PairedPropensity]:
    if not estimators or "oracle" in estimators:
        raise fail("estimators", f"a non-empty list of names from {ESTIMATORS}", estimators)
    return {
        name: cross_fit_propensity_pair(feats, member, estimator=name, seed=seed)
        for name in dict.fromkeys(estimators)
    }


def null_headline_replicate(
    seed: int,
    gamma: float,
    *,
    estimators: tuple[str, ...] = ("logistic-sigmoid", "hist-gb"),
    n_per_class: int = 1500,
    n_noise: int = 2,
    margin_zs: tuple[float, ...] = (DEFAULT_MARGIN_Z,),
    beta: float = 0.05,
) -> dict[str, Any]:
    """One null replicate of the headline: the largest bound over ``estimators`` at ``beta / J``.

    The data and tampering coins are those of :func:`null_replicate` with the same seed.
    Returns the keys of :func:`null_replicate` (``"estimator": "headline"``) plus
    ``"<estimator>:eps_z<z>"`` and ``"<estimator>:mu_z<z>"`` (each at ``beta / J``).
    """
    for e in estimators:
        _check(e, gamma, n_per_class, n_noise)
    rng, member, a, feats = _draw(seed, gamma, n_per_class, n_noise)
    u = draw_uniforms(member.size, rng)
    fits = _fit_all(feats, member, tuple(estimators), seed)
    return _headline(u, a, member, feats, a, gamma, fits, seed, margin_zs, beta)


def gaussian_power_headline_replicate(
    seed: int,
    *,
    estimators: tuple[str, ...] = ("logistic-sigmoid", "hist-gb"),
    mu: float = 1.0,
    gamma: float = 0.3,
    n_per_class: int = 1500,
    n_noise: int = 2,
    margin_zs: tuple[float, ...] = (DEFAULT_MARGIN_Z,),
    beta: float = 0.05,
) -> dict[str, Any]:
    """One power replicate of the headline (largest bound over ``estimators`` at ``beta / J``).

    The attack is the posterior log-odds with the first estimator's estimate *a* (one
    attack for all estimators, as in the audit). Same data and coins as
    :func:`gaussian_power_replicate` with the same seed.
    """
    for e in estimators:
        _check(e, gamma, n_per_class, n_noise)
    rng, member, a, feats = _draw(seed, gamma, n_per_class, n_noise)
    y = mu * member + rng.standard_normal(member.size)
    fits = _fit_all(feats, member, tuple(estimators), seed)
    logit_pi = np.clip(fits[estimators[0]].logit_a, -50.0, 50.0)
    scores = mu * y - mu * mu / 2.0 + logit_pi
    u = draw_uniforms(member.size, rng)
    return _headline(u, scores, member, feats, a, gamma, fits, seed, margin_zs, beta)
