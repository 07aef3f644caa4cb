"""The propensity estimator families: one unfitted scikit-learn pipeline per family.

The paper's six families (Zero-Run paper, Sec. 7 and App. F.2: logistic regression with
sigmoid or isotonic calibration, a linear SVM, a random forest, extremely randomised trees,
histogram gradient boosting) and privaudit's uncalibrated maximum-likelihood ``"logistic"``.
:func:`make_propensity_model` builds one (preprocessing, optional PCA, classifier, inner
calibration); :mod:`.propensity` cross-fits them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.calibration import CalibratedClassifierCV
from sklearn.compose import ColumnTransformer
from sklearn.decomposition import PCA
from sklearn.ensemble import (
    ExtraTreesClassifier,
    HistGradientBoostingClassifier,
    RandomForestClassifier,
)
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import (
    FunctionTransformer,
    OneHotEncoder,
    PolynomialFeatures,
    StandardScaler,
)
from sklearn.svm import LinearSVC

from privaudit._validation import check_choice, check_positive_int, fail
from privaudit.zero_run.features import FeatureMatrix

__all__ = ["ESTIMATORS", "as_seed", "encode_features", "make_propensity_model"]

ESTIMATORS: tuple[str, ...] = (
    "logistic-sigmoid",
    "logistic-isotonic",
    "linear-svm",
    "random-forest",
    "extra-trees",
    "hist-gb",
    "logistic",
    "logistic-quadratic",
)
"""Names of the propensity pipelines: the paper's six (Sec. 7, App. F.2) and privaudit's
uncalibrated maximum-likelihood ``"logistic"`` (see :func:`make_propensity_model`)."""

_LINEAR = frozenset(
    {"logistic-sigmoid", "logistic-isotonic", "linear-svm", "logistic", "logistic-quadratic"}
)
_UNCALIBRATED = frozenset({"logistic", "logistic-quadratic"})


def _classifier(estimator: str, seed: int) -> BaseEstimator:
    """The uncalibrated classifier of one family (see :func:`make_propensity_model`)."""
    if estimator in ("logistic-sigmoid", "logistic-isotonic"):
        return LogisticRegression(C=1.0, max_iter=2000)
    if estimator in _UNCALIBRATED:
        return LogisticRegression(C=100.0, max_iter=5000)
    if estimator == "linear-svm":
        return LinearSVC(C=1.0, dual="auto", max_iter=10_000, random_state=seed)
    if estimator == "random-forest":
        return RandomForestClassifier(
            n_estimators=100,
            min_samples_leaf=10,
            max_features="sqrt",
            max_samples=0.5,
            n_jobs=1,
            random_state=seed,
        )
    if estimator == "extra-trees":
        return ExtraTreesClassifier(
            n_estimators=100,
            min_samples_leaf=10,
            max_features="sqrt",
            n_jobs=1,
            random_state=seed,
        )
    # hist-gb
    return HistGradientBoostingClassifier(
        learning_rate=0.1,
        max_iter=100,
        max_leaf_nodes=15,
        min_samples_leaf=20,
        l2_regularization=1.0,
        early_stopping=False,
        random_state=seed,
    )


def make_propensity_model(
    estimator: str,
    features: FeatureMatrix,
    *,
    n_inner: int = 3,
    pca_components: int | None = None,
    seed: int = 0,
) -> CalibratedClassifierCV | Pipeline:
    """Build one unfitted, calibrated propensity pipeline (uncalibrated for ``"logistic"``).

    ``CalibratedClassifierCV(Pipeline([preprocess, (pca), classifier]), method,
    cv=StratifiedKFold(n_inner, shuffle=True, random_state=seed), ensemble=True)``:
    the classifier is fitted on ``n_inner - 1`` inner folds and the calibration map on
    the held-out inner fold, and the ``n_inner`` calibrated classifiers are averaged
    (Zero-Run paper, Sec. 7 and App. F.2 "Cross-fitting and calibration"). The paper's
    Table 2 (hyper-parameters) is missing from the extracted text; the settings here
    are privaudit's choices:

    ============================  =================================================
    ``logistic-sigmoid``          L2 ``LogisticRegression(C=1)``, sigmoid (Platt)
    ``logistic-isotonic``         the same, isotonic calibration
    ``linear-svm``                ``LinearSVC(C=1)`` (squared hinge), sigmoid
    ``random-forest``             100 trees on half-size bootstrap samples,
                                  ``min_samples_leaf=10``, sqrt features
    ``extra-trees``               100 trees, ``min_samples_leaf=10``, sqrt features
    ``hist-gb``                   100 rounds of rate 0.1, 15 leaves, ``min_samples_leaf=20``,
                                  ``l2_regularization=1``, no early stopping
    ``logistic`` (not the paper)  ``LogisticRegression(C=100)`` on standardised
                                  features, **no calibration** (the pipeline itself
                                  is returned; ``n_inner`` is ignored)
    ``logistic-quadratic`` (not   the same on the standardised numeric columns, their
    the paper)                    squares and pairwise products (standardised again;
                                  squares only beyond :data:`QUADRATIC_PAIRS_MAX`
                                  columns) and the one-hot columns; no calibration
    ============================  =================================================

    ``"logistic-quadratic"`` is the maximum-likelihood fit of a logit that is quadratic in
    the numeric features. It is **well specified whenever the numeric features are Gaussian in
    each class and independent of the categorical ones** (the log ratio of two Gaussian
    densities is a quadratic form; the categories then enter additively): a shift in
    the mean, the spread or the correlation of the features, where the logit-linear
    ``"logistic"`` is misspecified as soon as the spreads differ (e.g. members
    ``x ~ N(0, 1.6^2)``, non-members ``N(0, 1)``: true logit ``-log 1.6 + 0.305 x^2``).

    ``"logistic"`` is a (nearly unpenalised) maximum-likelihood fit of a logit-linear
    model. When that model is well specified, the MLE is asymptotically normal and
    unbiased to ``O(1/n)`` (its bias points away from 0, i.e. toward conservative
    ``|logit|``), which the split pointwise correction
    (:func:`privaudit.zero_run.bounds.pointwise_inputs`) relies on. The calibrated
    families are not: Platt scaling on an inner third and the average of the three
    calibrated probabilities shrink extreme logits toward 0 (measured: logistic-sigmoid's
    plug-in reports eps > 0 in 53/150 null runs at shift 2, this estimator in 6/100).

    The leaf-size floors keep trees from producing the pure-leaf 0/1 probabilities that
    would otherwise read as "no overlap"; 100 trees (RF: on half-size samples) and
    100 boosting rounds keep a cross-fit on ~3000 x 15 data to a few seconds on one
    core. Everything runs with ``n_jobs=1``, and :func:`cross_fit_propensity` caps the
    native thread pools (OpenMP, BLAS) at one thread while fitting (``threadpoolctl``;
    the cap is process-wide while it lasts): callers parallelise bootstrap replicates,
    preferably over processes.
    Isotonic calibration is a step function and can return scores of exactly 0 or 1
    (records the correction then drops); Platt scaling never does.

    Preprocessing: categorical columns are one-hot encoded (categories unseen in the
    training fold are encoded as all zeros). Without PCA, numeric columns are
    standardised for the three linear families (coordinatewise standardisation,
    App. F.2) and passed through for the tree families. With ``pca_components``, PCA
    is fitted on the unscaled encoded features (as suits embeddings, cf. the 48
    components of App. K.1: standardising first would blow low-variance noise
    directions up to the variance of the signal), and for the linear families the
    components are then standardised; put
    tabular columns of very different units on a common scale before asking for PCA.
    All of it is part of the pipeline, so it is fitted only on the data the model is
    fitted on. The paper does not state the order of PCA and standardisation.

    Parameters
    ----------
    estimator
        One of :data:`ESTIMATORS`.
    features
        The validated features (only their column layout is used here).
    n_inner
        Number of inner stratified folds for calibration (paper: 3), at least 2.
    pca_components
        Number of principal components, or ``None`` for no PCA.
    seed
        ``random_state`` of the inner folds, the PCA solver and the randomised models.

    Returns
    -------
    sklearn.calibration.CalibratedClassifierCV or sklearn.pipeline.Pipeline
        An unfitted estimator with ``fit`` and ``predict_proba`` (a plain pipeline for
        ``"logistic"``).

    Raises
    ------
    InvalidInputError
        Unknown estimator name, ``n_inner < 2``, or ``pca_components`` not in
        ``[1, encoded width]``.
    """
    check_choice(estimator, "estimator", ESTIMATORS)
    n_inner = check_positive_int(n_inner, "n_inner", minimum=2)
    if pca_components is not None:
        pca_components = _check_pca_components(pca_components, features)
    seed = as_seed(seed)
    pipeline = Pipeline(_pipeline_steps(estimator, features, pca_components, seed))
    if estimator in _UNCALIBRATED:
        return pipeline
    return CalibratedClassifierCV(
        pipeline,
        method="isotonic" if estimator == "logistic-isotonic" else "sigmoid",
        cv=StratifiedKFold(n_splits=n_inner, shuffle=True, random_state=seed),
        ensemble=True,
    )


def _pipeline_steps(
    estimator: str, features: FeatureMatrix, pca_components: int | None, seed: int
) -> list[tuple[str, Any]]:
    """The uncalibrated pipeline's steps: preprocessing, (PCA), (quadratic terms), classifier."""
    linear = estimator in _LINEAR
    steps: list[tuple[str, Any]] = [
        # standardise numeric columns for the linear models, unless PCA follows: then the
        # PCA sees the raw encoded features and its components are standardised instead
        ("preprocess", _preprocess(features, scale=linear and pca_components is None))
    ]
    if pca_components is not None:
        steps.append(("pca", PCA(n_components=pca_components, random_state=seed)))
        if linear:
            steps.append(("scale", StandardScaler()))
    if estimator == "logistic-quadratic":
        steps.append(("quadratic", _quadratic(features, pca_components)))
    steps.append(("classifier", _classifier(estimator, seed)))
    return steps


QUADRATIC_PAIRS_MAX = 16
"""Up to this many numeric (or PCA) columns, ``"logistic-quadratic"`` has every pairwise
product; beyond it only the squares (the products would outnumber the records of a fit)."""


def _with_squares(x: np.ndarray) -> np.ndarray:
    """The columns and their squares (the quadratic terms when pairwise products are too many)."""
    return np.c_[x, x**2]


def _quadratic(features: FeatureMatrix, pca_components: int | None) -> ColumnTransformer:
    """Degree-2 terms of the numeric columns (or PCA components), standardised.

    It follows the preprocessing step, whose output starts with the numeric columns (or is
    the ``pca_components`` principal components); the one-hot columns pass through. Up to
    :data:`QUADRATIC_PAIRS_MAX` columns: the columns, their squares and pairwise products
    (``PolynomialFeatures(2)``); beyond, the columns and their squares only.
    """
    n_num = pca_components if pca_components is not None else len(features.numeric)
    expand = (
        PolynomialFeatures(2, include_bias=False)
        if n_num <= QUADRATIC_PAIRS_MAX
        else FunctionTransformer(_with_squares)
    )
    poly = Pipeline([("expand", expand), ("scale", StandardScaler())])
    return ColumnTransformer(
        [("numeric", poly, list(range(n_num)))], remainder="passthrough", sparse_threshold=0.0
    )


def _check_pca_components(pca_components: int, features: FeatureMatrix) -> int:
    """A number of principal components in ``[1, encoded width]`` (one-hot columns counted)."""
    pca_components = check_positive_int(pca_components, "pca_components", minimum=1)
    width = features.encoded_width()
    if pca_components > width:
        raise fail(
            "pca_components",
            f"at most the number of encoded feature columns ({width})",
            pca_components,
        )
    return pca_components


def _preprocess(features: FeatureMatrix, *, scale: bool) -> ColumnTransformer:
    """The pipeline's first step: numeric columns standardised (``scale``) or passed
    through, categorical columns one-hot encoded (unseen categories: all zeros)."""
    transformers: list[tuple[str, Any, list[int]]] = []
    if features.numeric:
        transformers.append(
            ("numeric", StandardScaler() if scale else "passthrough", list(features.numeric))
        )
    if features.categorical:
        transformers.append(
            (
                "categorical",
                OneHotEncoder(handle_unknown="ignore", sparse_output=False),
                list(features.categorical),
            )
        )
    return ColumnTransformer(transformers, remainder="drop", sparse_threshold=0.0)


def encode_features(features: FeatureMatrix) -> np.ndarray:
    """All rows, numeric columns as they are and categorical ones one-hot encoded.

    The encoding of the tree families (:func:`_preprocess` without scaling), fitted on every
    row: it reads no membership, so nothing is learned from the audit's labels.
    """
    rows = np.arange(features.n_rows)
    return np.asarray(
        _preprocess(features, scale=False).fit_transform(features.take(rows)), dtype=np.float64
    )


def as_seed(seed: int | np.random.Generator) -> int:
    """An int seed from an int (checked, >= 0) or a Generator (one draw from it)."""
    if isinstance(seed, np.random.Generator):
        return int(seed.integers(0, 2**31 - 1))
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise fail("seed", "an int or a numpy Generator", repr(seed))
    if seed < 0:
        raise fail("seed", "a non-negative int", seed)
    return int(seed)
