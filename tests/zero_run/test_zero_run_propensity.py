"""Propensity estimation for the Zero-Run audit (paper Sec. 6-7, App. F.1/F.2)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.calibration import CalibratedClassifierCV
from sklearn.decomposition import PCA
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import StratifiedKFold
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from privaudit.errors import EstimationError, InsufficientDataError, InvalidInputError
from privaudit.zero_run import propensity as prop
from privaudit.zero_run.diagnostics import calibration_slope
from privaudit.zero_run.propensity import (
    ESTIMATORS,
    FeatureMatrix,
    cross_fit_propensity,
    make_propensity_model,
    prepare_features,
)


def logistic_shift(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Features, membership and the true propensity of a logistic shift model."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 4))
    pi = 1.0 / (1.0 + np.exp(-(1.2 * x[:, 0] - 0.8 * x[:, 1] + 0.2)))
    return x, rng.random(n) < pi, pi


class Spy(ClassifierMixin, BaseEstimator):
    """Remembers the (id -> label) pairs it was fitted on; 0.5 for any unseen id.

    Column 0 of the features is a unique record id. A prediction other than 0.5 for a
    record can only come from having been fitted on that record.
    """

    def __init__(self, cv: Any = None) -> None:
        self.cv = cv

    def fit(self, x: Any, y: np.ndarray) -> Spy:
        ids = np.asarray(x, dtype=float)[:, 0]
        self.seen_ = dict(zip(ids.tolist(), np.asarray(y).tolist(), strict=True))
        self.classes_ = np.array([0, 1])
        return self

    def predict_proba(self, x: Any) -> np.ndarray:
        ids = np.asarray(x, dtype=float)[:, 0]
        p1 = np.array([float(self.seen_.get(i, 0.5)) for i in ids.tolist()])
        return np.column_stack([1.0 - p1, p1])


def use_spy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(prop, "make_propensity_model", lambda *a, **k: Spy())


# ---------------------------------------------------------------- out-of-sample


@pytest.mark.parametrize("bootstrap", [False, True])
def test_every_score_comes_from_a_model_that_never_saw_the_record(
    monkeypatch: pytest.MonkeyPatch, bootstrap: bool
) -> None:
    rng = np.random.default_rng(0)
    n = 200
    x = np.column_stack([np.arange(n), rng.standard_normal(n)])
    s = rng.random(n) < 0.4
    use_spy(monkeypatch)
    pi = cross_fit_propensity(x, s, seed=1, bootstrap=bootstrap)
    np.testing.assert_array_equal(pi, 0.5)
    # the spy does reveal labels in-sample, so the check above can fail
    in_sample = Spy().fit(x, s.astype(int)).predict_proba(x)[:, 1]
    np.testing.assert_array_equal(in_sample, s.astype(float))


def test_unique_id_feature_gives_no_out_of_fold_signal() -> None:
    rng = np.random.default_rng(3)
    n = 400
    ids = np.arange(n, dtype=float)[:, None]
    s = rng.random(n) < 0.5  # random labels: nothing to learn, only to memorise
    pi = cross_fit_propensity(ids, s, estimator="random-forest", seed=0)
    assert abs(roc_auc_score(s, pi) - 0.5) < 0.1
    # in-sample the same pipeline memorises part of the labels (the test has teeth)
    model = make_propensity_model("random-forest", prepare_features(ids), seed=0)
    in_sample = model.fit(ids, s.astype(int)).predict_proba(ids)[:, 1]
    assert roc_auc_score(s, in_sample) > 0.57


# ---------------------------------------------------------------- reproducibility


@pytest.mark.parametrize(
    ("estimator", "bootstrap"), [("extra-trees", False), ("logistic-sigmoid", True)]
)
def test_reproducible_from_seed(estimator: str, bootstrap: bool) -> None:
    x, s, _ = logistic_shift(200, 1)
    a = cross_fit_propensity(x, s, estimator=estimator, seed=7, bootstrap=bootstrap)
    b = cross_fit_propensity(x, s, estimator=estimator, seed=7, bootstrap=bootstrap)
    c = cross_fit_propensity(x, s, estimator=estimator, seed=8, bootstrap=bootstrap)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_reproducible_from_generator() -> None:
    x, s, _ = logistic_shift(200, 1)
    g1 = cross_fit_propensity(x, s, seed=np.random.default_rng(5), bootstrap=True)
    g2 = cross_fit_propensity(x, s, seed=np.random.default_rng(5), bootstrap=True)
    np.testing.assert_array_equal(g1, g2)


# ---------------------------------------------------------------- recovery


@pytest.fixture(scope="module")
def shift_data() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return logistic_shift(1200, 11)


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_every_family_recovers_a_logistic_propensity(
    shift_data: tuple[np.ndarray, np.ndarray, np.ndarray], estimator: str
) -> None:
    x, s, pi_true = shift_data
    pi = cross_fit_propensity(x, s, estimator=estimator, seed=0)
    assert pi.shape == s.shape and pi.dtype == np.float64
    assert np.all((pi >= 0) & (pi <= 1))
    corr = np.corrcoef(pi, pi_true)[0, 1]
    oracle_auc = roc_auc_score(s, pi_true)
    assert roc_auc_score(s, pi) > oracle_auc - 0.05
    if estimator.startswith("logistic") or estimator == "linear-svm":
        assert corr > 0.95
    else:
        assert corr > 0.8
    if estimator in ("logistic-sigmoid", "linear-svm"):
        slope, _ = calibration_slope(pi, s)
        assert slope is not None and abs(slope - 1.0) < 0.2
        # Platt-calibrated scores of the correctly specified model are never exactly 0/1
        assert 0 < pi.min() and pi.max() < 1


def test_isotonic_and_sigmoid_calibration_differ_and_stay_in_unit_interval(
    shift_data: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> None:
    x, s, _ = shift_data
    sig = cross_fit_propensity(x, s, estimator="logistic-sigmoid", seed=2)
    iso = cross_fit_propensity(x, s, estimator="logistic-isotonic", seed=2)
    for p in (sig, iso):
        assert np.all(np.isfinite(p)) and np.all((p >= 0) & (p <= 1))
    assert not np.allclose(sig, iso)
    # isotonic maps are step functions: far fewer distinct values than Platt scaling
    assert np.unique(iso).size < np.unique(sig).size


def test_pca_inside_the_pipeline(shift_data: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
    x, s, pi_true = shift_data
    rng = np.random.default_rng(0)
    # 4 informative + 6 noise columns, reduced to 5 components inside each fold
    wide = np.column_stack([x, 0.1 * rng.standard_normal((x.shape[0], 6))])
    pi = cross_fit_propensity(wide, s, pca_components=5, seed=0)
    assert np.corrcoef(pi, pi_true)[0, 1] > 0.9
    with pytest.raises(InvalidInputError, match="pca_components"):
        cross_fit_propensity(wide, s, pca_components=11)


# ---------------------------------------------------------------- model structure


def test_model_structure() -> None:
    fm = prepare_features(np.zeros((10, 3)))
    for name in ESTIMATORS:
        m = make_propensity_model(name, fm, n_inner=4, pca_components=2, seed=3)
        if name in ("logistic", "logistic-quadratic"):  # uncalibrated MLEs: the pipeline
            assert isinstance(m, Pipeline)
            assert m.steps[-1][1].get_params()["C"] == 100.0
            pipe, plain = m, make_propensity_model(name, fm)
            assert ("quadratic" in dict(m.steps)) == (name == "logistic-quadratic")
        else:
            assert isinstance(m, CalibratedClassifierCV)
            assert m.ensemble is True
            assert m.method == ("isotonic" if name == "logistic-isotonic" else "sigmoid")
            assert isinstance(m.cv, StratifiedKFold) and m.cv.n_splits == 4
            pipe, plain = m.estimator, make_propensity_model(name, fm).estimator
        steps = dict(pipe.steps)
        assert isinstance(steps["pca"], PCA) and steps["pca"].n_components == 2
        linear = name in (
            "logistic-sigmoid",
            "logistic-isotonic",
            "linear-svm",
            "logistic",
            "logistic-quadratic",
        )
        # with PCA: raw features into the PCA, standardised components for linear models
        assert steps["preprocess"].transformers[0][1] == "passthrough"
        assert isinstance(steps.get("scale"), StandardScaler) == linear
        no_pca = dict(plain.steps)
        assert "pca" not in no_pca and "scale" not in no_pca
        assert isinstance(no_pca["preprocess"].transformers[0][1], StandardScaler) == linear
        params = steps["classifier"].get_params()
        if "n_jobs" in params and not name.startswith("logistic"):  # no-op there
            assert params["n_jobs"] == 1
        if "random_state" in params and not name.startswith("logistic"):
            assert params["random_state"] == 3


def test_grouped_inner_splits_keep_copies_together() -> None:
    rng = np.random.default_rng(0)
    base = np.arange(60)
    y_base = (base % 3 == 0).astype(np.int64)
    rows = rng.choice(base, size=60)
    splits = prop._grouped_stratified_splits(rows, y_base[rows], 3, rng)
    assert len(splits) == 3
    all_test = np.concatenate([te for _, te in splits])
    np.testing.assert_array_equal(np.sort(all_test), np.arange(60))
    for train, test in splits:
        assert not set(rows[train]) & set(rows[test])
        assert set(y_base[rows[test]]) == {0, 1}
        assert set(y_base[rows[train]]) == {0, 1}


# ---------------------------------------------------------------- DataFrame input


def test_dataframe_with_categorical_columns() -> None:
    rng = np.random.default_rng(4)
    n = 600
    cat = rng.choice(["north", "south", "east"], size=n, p=[0.45, 0.45, 0.1])
    cat[0] = "rare"  # a level that some training folds never see
    flag = rng.random(n) < 0.5
    num = rng.standard_normal(n)
    logit = np.select([cat == "north", cat == "south"], [1.5, -1.5], 0.0) + 0.5 * num
    s = rng.random(n) < 1 / (1 + np.exp(-logit))
    df = pd.DataFrame(
        {"region": pd.Categorical(cat), "flag": flag, "x": num, "k": rng.integers(0, 5, n)},
        index=np.arange(n) + 1000,  # a non-default index must not matter
    )
    fm = prepare_features(df)
    assert fm.categorical == (0, 1) and fm.numeric == (2, 3)
    assert fm.column_names == ("region", "flag", "x", "k")
    for estimator in ("logistic-sigmoid", "hist-gb"):
        pi = cross_fit_propensity(df, s, estimator=estimator, seed=0)
        assert np.all((pi >= 0) & (pi <= 1))
        assert roc_auc_score(s, pi) > 0.75
    # the region effect is recovered: north > east > south on average
    pi = cross_fit_propensity(df, s, seed=0)
    means = {c: pi[cat == c].mean() for c in ("north", "east", "south")}
    assert means["north"] > means["east"] > means["south"]


def test_prepare_features_array_and_frame_equivalent() -> None:
    x, s, _ = logistic_shift(200, 5)
    df = pd.DataFrame(x, columns=[0, 1, 2, 3])  # integer column names
    a = cross_fit_propensity(x, s, seed=3)
    b = cross_fit_propensity(df, s, seed=3)
    np.testing.assert_allclose(a, b, rtol=1e-12)
    fm = prepare_features(x.tolist())
    assert isinstance(fm, FeatureMatrix) and fm.n_rows == 200 and fm.n_columns == 4
    np.testing.assert_allclose(cross_fit_propensity(fm, s, seed=3), a, rtol=1e-12)


# ---------------------------------------------------------------- bootstrap


def test_bootstrap_gives_different_but_sensible_scores(
    shift_data: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> None:
    x, s, pi_true = shift_data
    plain = cross_fit_propensity(x, s, seed=0)
    reps = [cross_fit_propensity(x, s, seed=0, bootstrap=True)]
    reps.append(cross_fit_propensity(x, s, seed=1, bootstrap=True))
    for r in reps:
        assert not np.allclose(r, plain)
        assert np.corrcoef(r, pi_true)[0, 1] > 0.95
    assert not np.allclose(reps[0], reps[1])
    # the bootstrap spread is a real but modest perturbation of the fit
    assert 1e-4 < np.std(reps[0] - plain) < 0.05


# ---------------------------------------------------------------- errors


def test_one_class_is_invalid() -> None:
    x = np.zeros((50, 2))
    with pytest.raises(InvalidInputError, match="at least one member and one non-member"):
        cross_fit_propensity(x, np.ones(50, dtype=bool))


def test_nan_and_inf_features_name_column_and_count() -> None:
    x, s, _ = logistic_shift(100, 0)
    x[[3, 7, 9], 2] = np.nan
    with pytest.raises(InvalidInputError, match=r"column 2.*3 NaN"):
        cross_fit_propensity(x, s)
    x, _, _ = logistic_shift(100, 0)
    x[5, 1] = np.inf
    with pytest.raises(InvalidInputError, match=r"column 1.*1 infinite"):
        prepare_features(x)
    df = pd.DataFrame({"age": np.arange(100.0), "city": ["a", "b"] * 50})
    df.loc[[1, 2], "age"] = np.nan
    with pytest.raises(InvalidInputError, match=r"'age'.*2 NaN"):
        prepare_features(df)
    df = pd.DataFrame({"age": np.arange(100.0), "city": ["a", None] * 50})
    with pytest.raises(InvalidInputError, match=r"'city'.*50 missing"):
        prepare_features(df)
    nullable = pd.DataFrame({"n": pd.array([1, None, 3, 4], dtype="Int64")})
    with pytest.raises(InvalidInputError, match=r"'n'.*1 NaN"):
        prepare_features(nullable)


def test_bad_shapes_and_dtypes() -> None:
    with pytest.raises(InvalidInputError, match="2-dimensional"):
        prepare_features(np.zeros(10))
    with pytest.raises(InvalidInputError, match="at least one row"):
        prepare_features(np.zeros((0, 3)))
    with pytest.raises(InvalidInputError, match="dtype"):
        prepare_features(pd.DataFrame({"t": pd.date_range("2020", periods=5)}))
    with pytest.raises(InvalidInputError, match="numeric"):
        prepare_features([["a", "b"]])
    x, s, _ = logistic_shift(100, 0)
    with pytest.raises(InvalidInputError, match="member"):
        cross_fit_propensity(x, s[:-1])
    with pytest.raises(InvalidInputError, match="member"):
        cross_fit_propensity(x, np.full(100, 2))
    with pytest.raises(InvalidInputError, match="n_folds"):
        cross_fit_propensity(x, s, n_folds=1)
    with pytest.raises(InvalidInputError, match="seed"):
        cross_fit_propensity(x, s, seed=-1)


def test_unknown_estimator_lists_valid_names() -> None:
    x, s, _ = logistic_shift(100, 0)
    with pytest.raises(InvalidInputError) as info:
        cross_fit_propensity(x, s, estimator="xgboost")
    for name in ESTIMATORS:
        assert name in str(info.value)
    with pytest.raises(InvalidInputError, match="'xgboost'"):
        make_propensity_model("xgboost", prepare_features(x))


def test_too_few_per_class_for_nested_folds() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((100, 2))
    s = np.zeros(100, dtype=bool)
    s[:14] = True  # 14 < 5 x 3
    with pytest.raises(InsufficientDataError, match=r"5 x 3 = 15.*14 member"):
        cross_fit_propensity(x, s)
    s[14] = True  # exactly 15 is enough
    pi = cross_fit_propensity(x, s)
    assert np.all(np.isfinite(pi))
    with pytest.raises(InsufficientDataError, match=r"2 x 2 = 4"):
        cross_fit_propensity(x[:20], np.arange(20) < 3, n_folds=2, n_inner=2)


class Broken(ClassifierMixin, BaseEstimator):
    def __init__(self, mode: str = "raise", cv: Any = None) -> None:
        self.mode = mode
        self.cv = cv

    def fit(self, x: Any, y: np.ndarray) -> Broken:
        if self.mode == "raise":
            raise ValueError("singular matrix in solver")
        self.classes_ = np.array([0, 1])
        return self

    def predict_proba(self, x: Any) -> np.ndarray:
        n = len(x)
        p = np.full(n, np.nan if self.mode == "nan" else 1.5)
        return np.column_stack([1 - p, p])


@pytest.mark.parametrize(
    ("mode", "pattern"),
    [
        ("raise", r"'hist-gb', outer fold 1/5.*ValueError: singular matrix in solver"),
        ("nan", r"'hist-gb', outer fold 1/5.*non-finite"),
        ("range", r"'hist-gb', outer fold 1/5.*out-of-range"),
    ],
)
def test_failing_estimator_raises_estimation_error(
    monkeypatch: pytest.MonkeyPatch, mode: str, pattern: str
) -> None:
    x, s, _ = logistic_shift(100, 0)
    monkeypatch.setattr(prop, "make_propensity_model", lambda *a, **k: Broken(mode))
    with pytest.raises(EstimationError, match=pattern):
        cross_fit_propensity(x, s, estimator="hist-gb")
