"""Propensity scores ``pi(x) = P(S = member | X = x)`` for the Zero-Run audit.

Zero-Run auditing ("Privacy Auditing with Zero (0) Training Run", 2026) corrects a
membership audit for the distribution shift between known members and known
non-members through the propensity score of Definition 3.1, estimated from features of
the record only -- never from the audited model's losses, logits, predictions or task
labels (App. F.2, "Estimand and sampling design"). This module implements the
estimation protocol of Sections 6-7 and Appendix F:

* six estimator families (Sec. 7 "Propensity Score Estimation", App. F.2 Table 2):
  L2 logistic regression with sigmoid (Platt) or isotonic calibration, a linear SVM,
  a random forest, extremely randomised trees and histogram gradient boosting, the
  last four with sigmoid calibration;
* out-of-sample scores by ``n_folds``-fold stratified cross-fitting (App. F.1,
  Algorithm 8; the paper uses five folds), and inside each outer training fold
  ``CalibratedClassifierCV`` with ``n_inner`` stratified inner folds (the classifier is
  fitted on ``n_inner - 1`` inner folds, the calibrator on the remaining one, and the
  ``n_inner`` calibrated classifiers are averaged);
* all learned preprocessing (one-hot encoding, standardisation of the linear models,
  optional PCA) is part of the fitted pipeline, hence fitted inside the folds;
* scores are not clipped or shrunk toward 1/2 (App. F.2, "Calibration and overlap
  diagnostics"): extreme values are evidence of poor overlap;
* ``bootstrap=True`` resamples the training part of each outer fold with replacement
  (stratified by class) for the bootstrap over propensity fits (Sec. 6, "Bootstrapped
  Privacy Lower Bounds"; App. F.2, "Propensity-estimation uncertainty").

The paper's Table 2 (hyper-parameters) is not in the extracted text; the model
settings below are privaudit's own choices, documented in :func:`make_propensity_model`.

Feature validation lives in :mod:`.features` and the estimator families in
:mod:`.estimators` (both re-exported here); this module cross-fits them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from sklearn.calibration import CalibratedClassifierCV
from sklearn.model_selection import StratifiedKFold
from threadpoolctl import threadpool_limits

from privaudit._validation import (
    as_bool_array,
    as_float_array,
    check_both_classes,
    check_choice,
    check_positive_int,
    fail,
)
from privaudit.errors import EstimationError, InsufficientDataError
from privaudit.zero_run.estimators import ESTIMATORS, as_seed, make_propensity_model
from privaudit.zero_run.features import FeatureMatrix, prepare_features

__all__ = [
    "ESTIMATORS",
    "FeatureMatrix",
    "PairedPropensity",
    "cross_fit_propensity",
    "cross_fit_propensity_pair",
    "logit_standard_error",
    "make_propensity_model",
    "prepare_features",
]


def _grouped_stratified_splits(
    rows: NDArray[np.intp], y: NDArray[np.int64], n_splits: int, rng: np.random.Generator
) -> list[tuple[NDArray[np.intp], NDArray[np.intp]]]:
    """Stratified inner folds that keep copies of one original record together.

    ``rows`` are the original row ids of a bootstrap sample (with repeats). Each
    distinct id of each class is assigned to a fold in a shuffled round-robin, so that
    a duplicated record never sits both in the classifier's and in the calibrator's
    part of an inner split (which would make the calibrator trust memorised fits).
    """
    fold_of = np.empty(rows.size, dtype=np.intp)
    for cls in (0, 1):
        ids = np.unique(rows[y == cls])
        if ids.size < n_splits:
            raise InsufficientDataError(
                f"bootstrap: class {cls} has {ids.size} distinct record(s) in an outer "
                f"training fold, fewer than n_inner={n_splits} calibration folds"
            )
        assignment = np.empty(ids.size, dtype=np.intp)
        assignment[rng.permutation(ids.size)] = np.arange(ids.size) % n_splits
        mask = y == cls
        fold_of[mask] = assignment[np.searchsorted(ids, rows[mask])]
    positions = np.arange(rows.size)
    return [(positions[fold_of != k], positions[fold_of == k]) for k in range(n_splits)]


def _check_fit_inputs(
    features: FeatureMatrix | pd.DataFrame | ArrayLike,
    member: ArrayLike,
    estimator: str,
    n_folds: int,
    n_inner: int,
    pca_components: int | None,
    bootstrap: bool,
    *,
    paired: bool,
) -> tuple[FeatureMatrix, NDArray[np.bool_], int, int]:
    """Validate the inputs of a cross-fit before any fitting (see the two callers)."""
    fm = features if isinstance(features, FeatureMatrix) else prepare_features(features)
    s = as_bool_array(member, "member", ndim=1)
    if s.size != fm.n_rows:
        raise fail("member", f"one value per feature row ({fm.n_rows})", f"{s.size} values")
    n_pos, n_neg = check_both_classes(s, "member")
    check_choice(estimator, "estimator", ESTIMATORS)
    n_folds = check_positive_int(n_folds, "n_folds", minimum=3 if paired else 2)
    if paired and n_folds % 2 == 0:
        raise fail("n_folds", "an odd number of folds (>= 3) for paired cross-fitting", n_folds)
    n_inner = check_positive_int(n_inner, "n_inner", minimum=2)
    if not isinstance(bootstrap, bool | np.bool_):
        raise fail("bootstrap", "a bool", repr(bootstrap))
    need = n_folds * n_inner
    if min(n_pos, n_neg) < need:
        kind = "paired cross-fitting" if paired else "stratified cross-fitting"
        raise InsufficientDataError(
            f"member: expected at least n_folds x n_inner = {n_folds} x {n_inner} = {need} "
            f"records of each class for {kind} with inner calibration, "
            f"found {n_pos} member(s) and {n_neg} non-member(s)"
        )
    # validates pca_components against the encoded width once, before any fitting
    make_propensity_model(estimator, fm, n_inner=n_inner, pca_components=pca_components)
    return fm, s, n_folds, n_inner


def cross_fit_propensity(
    features: FeatureMatrix | pd.DataFrame | ArrayLike,
    member: ArrayLike,
    *,
    estimator: str = "logistic-sigmoid",
    n_folds: int = 5,
    n_inner: int = 3,
    pca_components: int | None = None,
    seed: int | np.random.Generator = 0,
    bootstrap: bool = False,
) -> NDArray[np.float64]:
    r"""Out-of-fold propensity scores ``pi_hat_i = P(member | x_i)`` for every record.

    Cross-fitting (Zero-Run paper, App. F.1, Algorithm 8, with ``n_folds`` folds as in
    Sec. 7 / App. F.2): the records are split by ``StratifiedKFold(n_folds,
    shuffle=True)``; for each outer fold ``k`` a calibrated pipeline
    (:func:`make_propensity_model`, with its own ``n_inner``-fold calibration) is fitted
    on the other folds and predicts ``pi_hat_i`` for the records of fold ``k``. Hence
    every ``pi_hat_i`` comes from a pipeline -- preprocessing, PCA, classifier and
    calibrator -- that never saw record ``i``.

    With ``bootstrap=True`` the training part of each outer fold is resampled with
    replacement, separately within members and non-members (same class counts), before
    fitting; the inner calibration folds then keep all copies of a record on the same
    side. This is one replicate of the bootstrap over propensity fits (paper Sec. 6,
    "Bootstrapped Privacy Lower Bounds", steps 1-2, and App. F.2), adapted to
    cross-fitting on the audit set itself so that each score stays out-of-sample: the
    paper resamples the propensity-training pairs and then cross-fits.

    Scores are never clipped or shrunk toward 1/2 (App. F.2): a value of exactly 0 or
    1 is returned as such and makes ``eps_DS = |logit(pi)|`` infinite downstream.

    Parameters
    ----------
    features
        Covariates of the records only (:func:`prepare_features`): never the audited
        model's scores, losses or predictions, nor the task labels.
    member
        Membership, 1-D booleans or 0/1 (``True`` = known member, ``S_i = +1``).
    estimator
        One of :data:`ESTIMATORS`.
    n_folds, n_inner
        Outer cross-fitting folds (paper: 5) and inner calibration folds (paper: 3).
    pca_components
        Optional number of principal components, fitted inside every fold.
    seed
        Seed (or Generator) of the folds, the bootstrap draws and the randomised models.
    bootstrap
        Resample each outer training part (see above).

    Returns
    -------
    numpy.ndarray
        ``pi_hat``, float64 of shape ``(n,)`` with values in ``[0, 1]``.

    Raises
    ------
    InvalidInputError
        Bad features (see :func:`prepare_features`), membership not 1-D booleans, one
        class only, a length mismatch, or an unknown estimator (the message lists the
        valid names).
    InsufficientDataError
        A class has fewer than ``n_folds * n_inner`` records, so the stratified outer
        and inner splits cannot all contain both classes.
    EstimationError
        The pipeline raised while fitting or predicting, or returned non-finite or
        out-of-range probabilities; the message names the estimator and the outer fold.
    """
    fm, s, n_folds, n_inner = _check_fit_inputs(
        features, member, estimator, n_folds, n_inner, pca_components, bootstrap, paired=False
    )

    rng = np.random.default_rng(as_seed(seed))
    y = s.astype(np.int64)
    outer = StratifiedKFold(
        n_splits=n_folds, shuffle=True, random_state=int(rng.integers(0, 2**31 - 1))
    )
    fold_seeds = rng.integers(0, 2**31 - 1, size=n_folds)
    pi = np.empty(fm.n_rows, dtype=np.float64)
    for k, (train, test) in enumerate(outer.split(np.zeros(fm.n_rows), y)):
        where = f"propensity estimator {estimator!r}, outer fold {k + 1}/{n_folds}"
        pi[test] = _fit_predict(
            fm,
            y,
            train,
            test,
            estimator=estimator,
            n_inner=n_inner,
            pca_components=pca_components,
            fold_seed=int(fold_seeds[k]),
            bootstrap=bootstrap,
            where=where,
        )
    return pi


@dataclass(frozen=True, eq=False)
class PairedPropensity:
    """Two independent out-of-sample propensity estimates per record and their combination.

    Attributes
    ----------
    logit_a, logit_b
        ``logit pi_hat`` of each record from two pipelines fitted on **disjoint** sets of
        other records (:func:`cross_fit_propensity_pair`); ``+-inf`` where a pipeline
        returned exactly 0 or 1.
    pi
        The combined estimate ``expit((logit_a + logit_b) / 2)`` (``+inf`` logit where the
        two disagree infinitely, which makes ``eps_DS`` infinite: the record is dropped).
    logit_se
        The standard error of the combined logit (:func:`logit_standard_error`).
    """

    logit_a: NDArray[np.float64]
    logit_b: NDArray[np.float64]
    pi: NDArray[np.float64]
    logit_se: NDArray[np.float64]


def _logit(p: NDArray[np.float64]) -> NDArray[np.float64]:
    with np.errstate(divide="ignore"):
        return np.asarray(np.log(p) - np.log1p(-p), dtype=np.float64)


def logit_standard_error(
    logit_a: ArrayLike, logit_b: ArrayLike, *, min_bin: int = 100, max_bins: int = 20
) -> NDArray[np.float64]:
    r"""Standard error of ``(logit_a + logit_b) / 2`` from the disagreement of the two fits.

    If ``logit_a = l + e_a`` and ``logit_b = l + e_b`` with independent errors of variance
    ``s^2`` (two fits on disjoint, i.i.d. training sets), then ``D = logit_a - logit_b``
    has ``E[D^2] = 2 s^2`` and the mean ``(logit_a + logit_b) / 2`` has variance
    ``s^2 / 2 = E[D^2] / 4``. One ``D_i`` is a one-degree-of-freedom estimate, so the
    variance is smoothed: records are grouped into quantile bins of
    ``|(logit_a + logit_b) / 2|`` (at most ``max_bins``, at least ``min_bin`` records
    each, so that the error may grow toward the extremes, as it does for trees) and each
    record gets ``sqrt(mean(D^2) / 4)`` of its bin. Records with an infinite logit get
    ``+inf``. Shared *bias* of the two fits cancels in ``D`` and is not measured.
    """
    la = as_float_array(logit_a, "logit_a", ndim=1, allow_inf=True)
    lb = as_float_array(logit_b, "logit_b", ndim=1, allow_inf=True)
    if la.size != lb.size:
        raise fail("logit_b", f"one logit per record ({la.size})", lb.size)
    min_bin = check_positive_int(min_bin, "min_bin")
    max_bins = check_positive_int(max_bins, "max_bins")
    with np.errstate(invalid="ignore"):
        mid = np.abs((la + lb) / 2.0)
        d2 = (la - lb) ** 2
    finite = np.isfinite(mid) & np.isfinite(d2)
    out = np.full(la.size, np.inf)
    n = int(finite.sum())
    if n == 0:
        return out
    idx = np.flatnonzero(finite)
    order = idx[np.argsort(mid[idx], kind="stable")]
    n_bins = max(1, min(max_bins, n // min_bin))
    for part in np.array_split(order, n_bins):
        out[part] = math.sqrt(float(d2[part].mean()) / 4.0)
    return out


def cross_fit_propensity_pair(
    features: FeatureMatrix | pd.DataFrame | ArrayLike,
    member: ArrayLike,
    *,
    estimator: str = "logistic-sigmoid",
    n_folds: int = 5,
    n_inner: int = 3,
    pca_components: int | None = None,
    seed: int | np.random.Generator = 0,
    bootstrap: bool = False,
) -> PairedPropensity:
    r"""Two independent out-of-sample propensity estimates per record (paired cross-fitting).

    The records are split into ``n_folds = K`` stratified folds (``K`` odd, at least 3) and
    ``h = (K - 1) / 2``. Pipeline ``j`` (:func:`make_propensity_model`) is fitted on the
    ``h`` consecutive folds ``j, ..., j + h - 1`` (mod ``K``). A record of fold ``k`` is
    scored by pipeline ``k + 1`` (estimate *a*) and pipeline ``k + 1 + h`` (estimate *b*):
    neither saw the record, and their training sets are disjoint, so given the record's
    features the two errors are independent (i.i.d. records). With ``K = 5`` each of the
    5 pipelines sees 2/5 of the data, so the mean of the two estimates is about as precise
    as one fit on 4/5 (parametric rates) and the cost is below that of
    :func:`cross_fit_propensity` (5 fits on 4/5). The disagreement ``a - b`` measures the
    estimation error (:func:`logit_standard_error`), which the conservative pointwise
    correction needs (:func:`privaudit.zero_run.tampering.conservative_propensity`).

    Parameters and errors as :func:`cross_fit_propensity` (which also documents
    ``bootstrap``); ``n_folds`` must be odd. Each class needs at least
    ``n_folds * n_inner`` records.
    """
    fm, s, n_folds, n_inner = _check_fit_inputs(
        features, member, estimator, n_folds, n_inner, pca_components, bootstrap, paired=True
    )
    rng = np.random.default_rng(as_seed(seed))
    y = s.astype(np.int64)
    outer = StratifiedKFold(
        n_splits=n_folds, shuffle=True, random_state=int(rng.integers(0, 2**31 - 1))
    )
    fold_of = np.empty(fm.n_rows, dtype=np.intp)
    for k, (_, test) in enumerate(outer.split(np.zeros(fm.n_rows), y)):
        fold_of[test] = k
    h = (n_folds - 1) // 2
    fold_seeds = rng.integers(0, 2**31 - 1, size=n_folds)
    la = np.empty(fm.n_rows, dtype=np.float64)
    lb = np.empty(fm.n_rows, dtype=np.float64)
    for j in range(n_folds):
        trained = [(j + i) % n_folds for i in range(h)]
        train = np.flatnonzero(np.isin(fold_of, trained))
        # pipeline j is estimate a for fold j - 1 and estimate b for fold j - 1 - h
        fa, fb = (j - 1) % n_folds, (j - 1 - h) % n_folds
        test = np.flatnonzero((fold_of == fa) | (fold_of == fb))
        where = (
            f"propensity estimator {estimator!r}, pipeline {j + 1}/{n_folds} of paired outer folds"
        )
        p = _fit_predict(
            fm,
            y,
            train,
            test,
            estimator=estimator,
            n_inner=n_inner,
            pca_components=pca_components,
            fold_seed=int(fold_seeds[j]),
            bootstrap=bootstrap,
            where=where,
        )
        lt = _logit(p)
        in_a = fold_of[test] == fa
        la[test[in_a]] = lt[in_a]
        lb[test[~in_a]] = lt[~in_a]
    with np.errstate(invalid="ignore"):
        mean = (la + lb) / 2.0
    mean = np.where(np.isnan(mean), np.inf, mean)  # +inf and -inf: dropped
    with np.errstate(over="ignore"):
        pi = np.asarray(1.0 / (1.0 + np.exp(-mean)), dtype=np.float64)
    return PairedPropensity(la, lb, pi, logit_standard_error(la, lb))


def _fit_predict(
    fm: FeatureMatrix,
    y: NDArray[np.int64],
    train: NDArray[np.intp],
    test: NDArray[np.intp],
    *,
    estimator: str,
    n_inner: int,
    pca_components: int | None,
    fold_seed: int,
    bootstrap: bool,
    where: str,
) -> NDArray[np.float64]:
    """Fit one calibrated pipeline on ``train`` (optionally resampled) and score ``test``."""
    fold_rng = np.random.default_rng(fold_seed)
    model_seed = int(fold_rng.integers(0, 2**31 - 1))
    model = make_propensity_model(
        estimator, fm, n_inner=n_inner, pca_components=pca_components, seed=model_seed
    )
    rows = train
    if bootstrap:
        parts = [
            fold_rng.choice(train[y[train] == cls], size=int((y[train] == cls).sum()))
            for cls in (0, 1)
        ]
        rows = np.concatenate(parts)
        if isinstance(model, CalibratedClassifierCV):
            model.set_params(cv=_grouped_stratified_splits(rows, y[rows], n_inner, fold_rng))
    try:
        # one thread: hist-gb would otherwise start an OpenMP pool per fit, which
        # on a loaded machine (or under parallel replicates) is ~10x slower
        with threadpool_limits(limits=1):
            model.fit(fm.take(rows), y[rows])
            proba = np.asarray(model.predict_proba(fm.take(test)), dtype=np.float64)
        col = int(np.flatnonzero(np.asarray(model.classes_) == 1)[0])
    except Exception as exc:  # any failure of a third-party fit is reported as ours
        raise EstimationError(f"{where}: fit failed: {type(exc).__name__}: {exc}") from exc
    p = proba[:, col] if proba.ndim == 2 else proba
    if p.shape != (test.size,):
        raise EstimationError(
            f"{where}: expected {test.size} probabilities, got shape {proba.shape}"
        )
    bad = ~np.isfinite(p) | (p < 0.0) | (p > 1.0)
    if bad.any():
        raise EstimationError(f"{where}: {int(bad.sum())} non-finite or out-of-range probabilities")
    return np.asarray(p, dtype=np.float64)
