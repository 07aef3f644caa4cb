"""SklearnTrainer / SklearnModel: logits, seeds, absent classes, settings."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.special import softmax
from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import KNeighborsClassifier
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC, LinearSVC

from privaudit.data import load_digits
from privaudit.errors import InvalidInputError
from privaudit.models import (
    ABSENT_CLASS_MARGIN,
    PROBA_FLOOR,
    Model,
    SklearnModel,
    SklearnTrainer,
    Trainer,
    TrainingError,
)
from privaudit.signals import SIGNALS, compute_signal


@pytest.fixture(scope="module")
def digits():  # type: ignore[no-untyped-def]
    d = load_digits()
    return d.X[:600], d.y[:600], d.X[600:900], d.y[600:900]


def _binary(y: np.ndarray) -> np.ndarray:
    return (y >= 5).astype(np.int64)


ESTIMATORS = {
    "logreg": (lambda: LogisticRegression(max_iter=300), "decision_function"),
    "mlp": (lambda: MLPClassifier((16,), max_iter=60, random_state=123), "mlp-preactivation"),
    "gb": (lambda: GradientBoostingClassifier(n_estimators=10, max_depth=2), "decision_function"),
    "pipe-mlp": (
        lambda: make_pipeline(StandardScaler(), MLPClassifier((16,), max_iter=60)),
        "mlp-preactivation",
    ),
}


@pytest.mark.parametrize("binary", [False, True], ids=["multiclass", "binary"])
@pytest.mark.parametrize("key", list(ESTIMATORS))
def test_softmax_of_logits_is_predict_proba(digits, key: str, binary: bool) -> None:  # type: ignore[no-untyped-def]
    X, y, Xt, _ = digits
    if key == "gb" and not binary:
        X, y = X[:300], y[:300]
    yy = _binary(y) if binary else y
    make, source = ESTIMATORS[key]
    model = SklearnTrainer(make()).fit(X, yy, seed=7)
    assert isinstance(model, Model)
    assert model.logit_source == source
    z = model.logits(Xt)
    assert z.dtype == np.float64 and z.shape == (Xt.shape[0], 2 if binary else 10)
    p = model.estimator.predict_proba(Xt)
    ok = (p > 1e-6) & (p < 1 - 1e-6)
    assert ok.sum() > 20  # the check below is not vacuous
    np.testing.assert_allclose(softmax(z, axis=1)[ok], p[ok], rtol=1e-9, atol=1e-12)
    if binary:
        np.testing.assert_array_equal(z[:, 0], 0.0)


@pytest.mark.parametrize("binary", [True, False], ids=["binary", "multiclass"])
def test_overfit_mlp_keeps_finite_logits_where_proba_saturates(digits, binary: bool) -> None:  # type: ignore[no-untyped-def]
    X, y, _, _ = digits
    X, y = X[:200], (_binary(y[:200]) if binary else y[:200])
    model = SklearnTrainer(MLPClassifier((32,), alpha=0.0, max_iter=300)).fit(X, y, seed=0)
    # emulate a heavily overfit network: a confident output layer (the hidden layer and
    # the decisions are unchanged; only the margins grow)
    mlp = model.estimator
    mlp.coefs_[-1] *= 80.0
    mlp.intercepts_[-1] *= 80.0
    p = mlp.predict_proba(X)
    saturated = ((p == 0.0) | (p == 1.0)).any(axis=1)
    assert saturated.sum() > 20  # sklearn's probabilities are exactly 0 / 1 here
    with np.errstate(divide="ignore"):
        assert np.isneginf(mlp.predict_log_proba(X)).any()
    z = model.logits(X)
    assert np.all(np.isfinite(z))
    for name in SIGNALS:
        assert np.all(np.isfinite(compute_signal(name, z, y)))
    phi = compute_signal("logit_confidence", z, y)
    # records whose predict_proba ties at exactly 0/1 keep distinct, finite scores
    assert np.unique(phi[saturated]).size > 0.9 * saturated.sum()
    # and where sklearn is not saturated, they agree
    ok = (p > 1e-6) & (p < 1 - 1e-6)
    np.testing.assert_allclose(softmax(z, axis=1)[ok], p[ok], rtol=1e-9, atol=1e-12)


def test_random_forest_uses_floored_log_proba(digits) -> None:  # type: ignore[no-untyped-def]
    X, y, Xt, _ = digits
    model = SklearnTrainer(RandomForestClassifier(n_estimators=5)).fit(X, y, seed=0)
    assert model.logit_source == "log-proba"
    z = model.logits(Xt)
    p = model.estimator.predict_proba(Xt)
    assert (p == 0).any()
    np.testing.assert_allclose(z, np.log(np.maximum(p, PROBA_FLOOR)))
    assert np.all(np.isfinite(z)) and z.min() == pytest.approx(np.log(PROBA_FLOOR))


@pytest.mark.filterwarnings("ignore:The `probability` parameter:FutureWarning")
def test_platt_scaled_svc_falls_back_to_log_proba(digits) -> None:  # type: ignore[no-untyped-def]
    X, y, Xt, _ = digits
    model = SklearnTrainer(SVC(probability=True)).fit(X[:200], _binary(y[:200]), seed=0)
    assert model.logit_source == "log-proba"
    p = model.estimator.predict_proba(Xt)
    np.testing.assert_allclose(softmax(model.logits(Xt), axis=1), p, atol=1e-9)


def test_margins_only_estimator(digits) -> None:  # type: ignore[no-untyped-def]
    X, y, Xt, _ = digits
    model = SklearnTrainer(LinearSVC()).fit(X, y, seed=0)
    assert model.logit_source == "decision-margins"
    np.testing.assert_array_equal(model.logits(Xt), model.estimator.decision_function(Xt))


def test_absent_class_is_mapped_into_full_label_space(digits) -> None:  # type: ignore[no-untyped-def]
    X, y, Xt, _ = digits
    keep = y != 3
    model = SklearnTrainer(LogisticRegression(max_iter=300), n_classes=10).fit(
        X[keep], y[keep], seed=0
    )
    assert model.n_classes == 10 and 3 not in model.classes_
    z = model.logits(Xt)
    assert z.shape == (Xt.shape[0], 10) and np.all(np.isfinite(z))
    others = np.delete(z, 3, axis=1)
    np.testing.assert_allclose(z[:, 3], others.min(axis=1) - ABSENT_CLASS_MARGIN)
    np.testing.assert_allclose(
        softmax(others, axis=1), model.estimator.predict_proba(Xt), atol=1e-12
    )
    # a binary problem whose training set lacks the highest class of a 3-class label space
    m2 = SklearnTrainer(LogisticRegression()).fit(
        X[:50], (y[:50] > 4).astype(int), seed=0, n_classes=3
    )
    assert m2.logits(Xt).shape == (Xt.shape[0], 3)


def test_seeds(digits) -> None:  # type: ignore[no-untyped-def]
    X, y, Xt, _ = digits
    tr = SklearnTrainer(MLPClassifier((8,), max_iter=20))
    a = tr.fit(X, y, seed=1).logits(Xt)
    b = tr.fit(X, y, seed=1).logits(Xt)
    c = tr.fit(X, y, seed=2).logits(Xt)
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)
    assert tr.estimator.random_state is None and not hasattr(tr.estimator, "coefs_")  # never fitted


def test_nested_random_state_is_seeded(digits) -> None:  # type: ignore[no-untyped-def]
    X, y, _, _ = digits
    model = SklearnTrainer(make_pipeline(StandardScaler(), MLPClassifier((4,), max_iter=5))).fit(
        X, y, seed=42
    )
    assert model.estimator.steps[-1][1].random_state == 42


def test_settings_are_json_deterministic_and_discriminating() -> None:
    s1 = SklearnTrainer(MLPClassifier((64,), alpha=1e-4, random_state=5)).settings()
    s2 = SklearnTrainer(MLPClassifier((64,), alpha=1e-4, random_state=9)).settings()
    s3 = SklearnTrainer(MLPClassifier((64,), alpha=1e-3)).settings()
    assert json.dumps(s1, sort_keys=True) == json.dumps(s2, sort_keys=True)  # seed is not a setting
    assert json.dumps(s1, sort_keys=True) != json.dumps(s3, sort_keys=True)
    assert s1["estimator"] == "sklearn.neural_network._multilayer_perceptron.MLPClassifier"
    assert s1["params"]["hidden_layer_sizes"] == [64]
    pipe = SklearnTrainer(make_pipeline(StandardScaler(), LogisticRegression())).settings()
    json.dumps(pipe)
    assert "0x" not in json.dumps(pipe)
    assert isinstance(SklearnTrainer(LogisticRegression()), Trainer)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"seed": -1}, "seed"),
        ({"seed": 2**32}, "seed"),
        ({"seed": 1.5}, "seed"),
        ({"seed": 0, "y": np.zeros(10, dtype=int)}, "at least 2 classes"),
        ({"seed": 0, "y": np.arange(9)}, "labels"),
        ({"seed": 0, "X": np.full((10, 2), np.nan)}, "NaN"),
        ({"seed": 0, "n_classes": 1}, "n_classes"),
    ],
)
def test_fit_errors(kwargs, match) -> None:  # type: ignore[no-untyped-def]
    args = {"X": np.random.default_rng(0).normal(size=(10, 2)), "y": np.arange(10) % 2} | kwargs
    with pytest.raises(InvalidInputError, match=match):
        SklearnTrainer(LogisticRegression()).fit(args.pop("X"), args.pop("y"), **args)


def test_estimator_failure_is_wrapped() -> None:
    with pytest.raises(TrainingError, match="n_neighbors"):
        SklearnTrainer(KNeighborsClassifier(n_neighbors=50)).fit(
            np.zeros((10, 2)), np.arange(10) % 2, seed=0
        ).logits(np.zeros((1, 2)))


def test_model_rejects_non_integer_classes() -> None:
    est = LogisticRegression().fit(np.arange(4.0)[:, None], np.array(["a", "a", "b", "b"]))
    with pytest.raises(InvalidInputError, match="integer class labels"):
        SklearnModel(est)
    with pytest.raises(InvalidInputError, match="fitted"):
        SklearnModel(LogisticRegression())
