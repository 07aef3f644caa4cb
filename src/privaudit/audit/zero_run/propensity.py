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
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
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
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from sklearn.svm import LinearSVC
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

ESTIMATORS: tuple[str, ...] = (
    "logistic-sigmoid",
    "logistic-isotonic",
    "linear-svm",
    "random-forest",
    "extra-trees",
    "hist-gb",
    "logistic",
)
"""Names of the propensity pipelines: the paper's six (Sec. 7, App. F.2) and privaudit's
uncalibrated maximum-likelihood ``"logistic"`` (see :func:`make_propensity_model`)."""

_LINEAR = frozenset({"logistic-sigmoid", "logistic-isotonic", "linear-svm", "logistic"})


@dataclass(frozen=True, eq=False)
class FeatureMatrix:
    """Validated propensity features: the data and which columns are categorical.

    Attributes
    ----------
    data
        A float64 array of shape ``(n, d)``, or a DataFrame (reset to a
        ``RangeIndex``) whose numeric columns are float64 and whose categorical
        columns hold strings.
    numeric, categorical
        Positional indices of the numeric and the categorical columns.
    column_names
        The column names as strings (``"0"``, ``"1"``, ... for an array), for messages.
    """

    data: pd.DataFrame | NDArray[np.float64]
    numeric: tuple[int, ...]
    categorical: tuple[int, ...]
    column_names: tuple[str, ...]

    @property
    def n_rows(self) -> int:
        """Number of records."""
        return int(self.data.shape[0])

    @property
    def n_columns(self) -> int:
        """Number of raw (not encoded) columns."""
        return int(self.data.shape[1])

    def take(self, rows: NDArray[np.intp]) -> pd.DataFrame | NDArray[np.float64]:
        """The rows ``rows`` (positions, repeats allowed) of the data."""
        if isinstance(self.data, pd.DataFrame):
            return self.data.iloc[rows]
        return self.data[rows]

    def encoded_width(self) -> int:
        """Number of columns after one-hot encoding on the full data (an upper bound per fold)."""
        if not self.categorical or not isinstance(self.data, pd.DataFrame):
            return self.n_columns
        n_levels = sum(int(self.data.iloc[:, j].nunique()) for j in self.categorical)
        return len(self.numeric) + n_levels


def _nonfinite_message(col: NDArray[np.float64]) -> str | None:
    n_nan = int(np.isnan(col).sum())
    n_inf = int(np.isinf(col).sum())
    if not (n_nan or n_inf):
        return None
    parts = [f"{n} {what}" for n, what in ((n_nan, "NaN"), (n_inf, "infinite")) if n]
    return " and ".join(parts) + " value(s)"


def prepare_features(
    features: pd.DataFrame | ArrayLike, *, name: str = "features"
) -> FeatureMatrix:
    """Validate propensity features and record which columns are categorical.

    Only covariates of the records may be given: never the audited model's losses,
    logits, predictions, internal representations or the task labels (Zero-Run paper,
    App. F.2 "Estimand and sampling design"); otherwise the correction would attribute
    model-induced leakage to distribution shift.

    Parameters
    ----------
    features
        A pandas DataFrame (numeric columns; ``object``, ``category``, ``string`` and
        ``bool`` columns are categorical and one-hot encoded inside the folds) or a 2-D
        numeric array of shape ``(n, d)``.
    name
        Parameter name used in error messages.

    Returns
    -------
    FeatureMatrix
        The validated data.

    Raises
    ------
    InvalidInputError
        Not 2-D, no rows or columns, a NaN or infinite value in a numeric column or a
        missing value in a categorical column (the message names the column and the
        count), or a column of an unsupported dtype (e.g. datetime).
    """
    if isinstance(features, pd.DataFrame):
        return _prepare_frame(features, name)
    try:
        a = np.asarray(features, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise fail(
            name,
            "a numeric 2-D array or a pandas DataFrame",
            f"{type(features).__name__} ({exc})",
        ) from None
    if a.ndim != 2:
        raise fail(name, "a 2-dimensional array (rows x features)", f"shape {a.shape}")
    if a.shape[0] == 0 or a.shape[1] == 0:
        raise fail(name, "at least one row and one column", f"shape {a.shape}")
    for j in range(a.shape[1]):
        msg = _nonfinite_message(a[:, j])
        if msg is not None:
            raise fail(f"{name} column {j}", "finite numeric values", msg)
    d = a.shape[1]
    return FeatureMatrix(
        data=a,
        numeric=tuple(range(d)),
        categorical=(),
        column_names=tuple(str(j) for j in range(d)),
    )


def _prepare_frame(df: pd.DataFrame, name: str) -> FeatureMatrix:
    if df.shape[0] == 0 or df.shape[1] == 0:
        raise fail(name, "at least one row and one column", f"a DataFrame of shape {df.shape}")
    names = tuple(str(c) for c in df.columns)
    if len(set(names)) != len(names):
        raise fail(name, "unique column names", f"columns {list(names)}")
    numeric: list[int] = []
    categorical: list[int] = []
    columns: dict[str, Any] = {}
    for j, col_name in enumerate(names):
        col = df.iloc[:, j]
        dtype = col.dtype
        label = f"{name} column {col_name!r}"
        if pd.api.types.is_bool_dtype(dtype) or not (
            pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_datetime64_any_dtype(dtype)
        ):
            if not (
                pd.api.types.is_bool_dtype(dtype)
                or pd.api.types.is_object_dtype(dtype)
                or isinstance(dtype, pd.CategoricalDtype)
                or pd.api.types.is_string_dtype(dtype)
            ):
                raise fail(label, "a numeric, bool, object, string or category dtype", dtype)
            n_missing = int(col.isna().sum())
            if n_missing:
                raise fail(label, "no missing categorical values", f"{n_missing} missing value(s)")
            categorical.append(j)
            columns[col_name] = col.astype(str).to_numpy(dtype=object)
        elif pd.api.types.is_numeric_dtype(dtype):
            n_missing = int(col.isna().sum())
            if n_missing:
                raise fail(label, "finite numeric values", f"{n_missing} NaN/missing value(s)")
            values = col.to_numpy(dtype=np.float64)
            msg = _nonfinite_message(values)
            if msg is not None:
                raise fail(label, "finite numeric values", msg)
            numeric.append(j)
            columns[col_name] = values
        else:
            raise fail(label, "a numeric, bool, object, string or category dtype", dtype)
    frame = pd.DataFrame(columns, index=pd.RangeIndex(df.shape[0]))
    frame.columns = pd.Index(list(names), dtype=object)
    return FeatureMatrix(
        data=frame,
        numeric=tuple(numeric),
        categorical=tuple(categorical),
        column_names=names,
    )


def _classifier(estimator: str, seed: int) -> BaseEstimator:
    """The uncalibrated classifier of one family (see :func:`make_propensity_model`)."""
    if estimator in ("logistic-sigmoid", "logistic-isotonic"):
        return LogisticRegression(C=1.0, max_iter=2000)
    if estimator == "logistic":
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
    ============================  =================================================

    ``"logistic"`` is a (nearly unpenalised) maximum-likelihood fit of a logit-linear
    model. When that model is well specified, the MLE is asymptotically normal and
    unbiased to ``O(1/n)`` (its bias points away from 0, i.e. toward conservative
    ``|logit|``), which the split pointwise correction
    (:func:`privaudit.audit.zero_run.bounds.pointwise_inputs`) relies on. The calibrated
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
        pca_components = check_positive_int(pca_components, "pca_components", minimum=1)
        width = features.encoded_width()
        if pca_components > width:
            raise fail(
                "pca_components",
                f"at most the number of encoded feature columns ({width})",
                pca_components,
            )
    seed = _as_seed(seed)
    linear = estimator in _LINEAR
    # standardise numeric columns for the linear models, unless PCA follows: then the
    # PCA sees the raw encoded features and its components are standardised instead
    scale_inputs = linear and pca_components is None
    transformers: list[tuple[str, Any, list[int]]] = []
    if features.numeric:
        transformers.append(
            (
                "numeric",
                StandardScaler() if scale_inputs else "passthrough",
                list(features.numeric),
            )
        )
    if features.categorical:
        transformers.append(
            (
                "categorical",
                OneHotEncoder(handle_unknown="ignore", sparse_output=False),
                list(features.categorical),
            )
        )
    steps: list[tuple[str, Any]] = [
        ("preprocess", ColumnTransformer(transformers, remainder="drop", sparse_threshold=0.0))
    ]
    if pca_components is not None:
        steps.append(("pca", PCA(n_components=pca_components, random_state=seed)))
        if linear:
            steps.append(("scale", StandardScaler()))
    steps.append(("classifier", _classifier(estimator, seed)))
    if estimator == "logistic":
        return Pipeline(steps)
    return CalibratedClassifierCV(
        Pipeline(steps),
        method="isotonic" if estimator == "logistic-isotonic" else "sigmoid",
        cv=StratifiedKFold(n_splits=n_inner, shuffle=True, random_state=seed),
        ensemble=True,
    )


def _as_seed(seed: int | np.random.Generator) -> int:
    if isinstance(seed, np.random.Generator):
        return int(seed.integers(0, 2**31 - 1))
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise fail("seed", "an int or a numpy Generator", repr(seed))
    if seed < 0:
        raise fail("seed", "a non-negative int", seed)
    return int(seed)


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

    rng = np.random.default_rng(_as_seed(seed))
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
    correction needs (:func:`privaudit.audit.zero_run.tampering.conservative_propensity`).

    Parameters and errors as :func:`cross_fit_propensity` (which also documents
    ``bootstrap``); ``n_folds`` must be odd. Each class needs at least
    ``n_folds * n_inner`` records.
    """
    fm, s, n_folds, n_inner = _check_fit_inputs(
        features, member, estimator, n_folds, n_inner, pca_components, bootstrap, paired=True
    )
    rng = np.random.default_rng(_as_seed(seed))
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
