r"""The placebo check of the pointwise Zero-Run bound: the same audit on a score that cannot leak.

Why it is needed. Theorem 5.1's pointwise correction is exact only with conservative
propensities, ``|logit pi_hat(x)| >= |logit pi(x)|`` at the guessed records (Corollary 6.1).
An estimated propensity model can miss that in a region where the attack's guesses
concentrate: a logit-linear model when the shift is in the *spread* of a feature (the true
logit is quadratic), a tree ensemble in the tails it cannot extrapolate to. The score of such
an attack is then partly a features-only statistic that the correction fails to absorb, and
the audit reports leakage of a mechanism that leaks nothing (issue 28: members
``x1 ~ N(0, 1.6^2)``, non-members ``N(0, 1)``, score ``|x1|``: hist-gb's pointwise eps above
0 in 9 of 20 runs).

The check. A features-only score ``g(x)`` leaks nothing through the model (the mechanism is
0-DP with respect to it), so the pointwise audit of ``g`` must give 0 except with
probability ``beta``, *if* the propensities are conservative. privaudit takes as ``g`` the
**placebo score**: the attack's score projected on the features, ``g(x) = E[score | x]``,
estimated out of sample (:func:`placebo_scores`: ``n_folds``-fold cross-fitted histogram
gradient-boosting regression). Under the null of the issue (score ``= f(x)``) the placebo
reproduces the score, and with the same tampering coins its audit reproduces the excess; when
the score also carries membership signal, ``E[score | x] = f(x) + c (2 pi(x) - 1)`` is still a
function of ``x`` alone, so the placebo audit is still a valid test of the propensities.
:func:`placebo_check` runs the estimator's own pointwise audit (same rule, coins and level)
on it; a bound above 0 **fails** the estimator, which then leaves the headline.

What it guarantees. Leaving estimators out of a Bonferroni maximum is always allowed (the
maximum over any subset is at most the maximum over all, :mod:`.audit`), so the check costs
validity nothing. What it buys is *evidence*, not a proof: an estimator whose correction is
too weak in the direction the attack uses is caught with the power of this test (measured
by the null battery, ``benchmarks/bench_zero_run_null.py``; docs/zero_run_validity.md). Its
price is power: a conservative estimator fails it with probability at most ``beta / J``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.model_selection import KFold
from threadpoolctl import threadpool_limits

from privaudit.errors import EstimationError
from privaudit.zero_run.bounds import zero_run_bounds
from privaudit.zero_run.estimators import encode_features
from privaudit.zero_run.features import FeatureMatrix

__all__ = ["PLACEBO_SCORE", "placebo_check", "placebo_scores"]

PLACEBO_SCORE = (
    "the attack's score projected on the features (E[score | x], cross-fitted histogram "
    "gradient-boosting regression): a features-only score, which leaks nothing"
)
"""What the placebo score is, in words (for results and reports)."""


def placebo_scores(
    features: FeatureMatrix, scores: NDArray[np.float64], *, seed: int, n_folds: int = 5
) -> NDArray[np.float64]:
    """The placebo score: ``E[score | x]``, estimated out of fold.

    ``n_folds``-fold cross-fitting (the folds shuffled with ``seed``): each record's value
    comes from a ``HistGradientBoostingRegressor`` (100 rounds of rate 0.1, 15 leaves, at
    least 20 records per leaf) fitted on the other folds, on the features one-hot encoded
    as for the tree propensity models. Membership is never read.

    Parameters
    ----------
    features : FeatureMatrix
        The validated propensity features (:func:`.features.prepare_features`).
    scores : ndarray
        The attack's scores, one per record.
    seed : int
        Seeds the folds and the regressors.
    n_folds : int
        Number of cross-fitting folds (at least 2).

    Returns
    -------
    ndarray
        One features-only score per record.
    """
    encoded = encode_features(features)
    out = np.empty(scores.size, dtype=np.float64)
    folds = KFold(n_splits=n_folds, shuffle=True, random_state=seed)
    try:
        with threadpool_limits(limits=1):
            for train, test in folds.split(encoded):
                model = HistGradientBoostingRegressor(
                    learning_rate=0.1,
                    max_iter=100,
                    max_leaf_nodes=15,
                    min_samples_leaf=20,
                    early_stopping=False,
                    random_state=seed,
                )
                model.fit(encoded[train], scores[train])
                out[test] = model.predict(encoded[test])
    except Exception as exc:  # a third-party fit failure is reported as ours
        raise EstimationError(
            f"placebo score (regression of the attack score on the features): fit failed: "
            f"{type(exc).__name__}: {exc}"
        ) from exc
    return out


def placebo_check(
    placebo: NDArray[np.float64],
    member: NDArray[np.bool_],
    *,
    uniforms: NDArray[np.float64],
    bound_args: Mapping[str, Any],
) -> dict[str, Any]:
    """One estimator's pointwise audit of the placebo score; failed when a bound is above 0.

    ``bound_args`` are the estimator's own arguments of :func:`.bounds.zero_run_bounds`
    (its propensities, pointwise rule and level ``beta / J``) and ``uniforms`` the audit's
    tampering coins, so that the placebo audit differs from the real one only in the score.

    Returns
    -------
    dict
        ``{"epsilon_lower_bound", "mu_lower_bound", "failed", "beta"}``.
    """
    res = zero_run_bounds(
        placebo, member, uniforms=uniforms, corrections=("pointwise",), **bound_args
    )["pointwise"]
    eps = float(res.epsilon_lower_bound)
    mu = float(res.mu_lower_bound or 0.0)
    return {
        "epsilon_lower_bound": eps,
        "mu_lower_bound": mu,
        "failed": bool(eps > 0.0 or mu > 0.0),
        "beta": float(bound_args["beta"]),
    }
