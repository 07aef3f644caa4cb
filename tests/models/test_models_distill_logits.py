"""Logit-matching distillation (``distill(..., method="logits")``) and its persistence."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import KNeighborsClassifier
from sklearn.neural_network import MLPClassifier, MLPRegressor
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from privaudit.data import load_digits
from privaudit.errors import InvalidInputError
from privaudit.membership.experiment import ExperimentConfig, run_experiment
from privaudit.models import (
    LogitRegressionModel,
    SklearnModel,
    SklearnTrainer,
    distill,
    load_model,
    logit_regressor_for,
    save_model,
    untrusted_types,
)


@pytest.fixture(scope="module")
def digits():  # type: ignore[no-untyped-def]
    d = load_digits()
    return d.X, d.y


def _binary_world(n: int = 900, d: int = 6, seed: int = 0):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (X[:, 0] + 0.5 * X[:, 1] + rng.normal(scale=0.8, size=n) > 0).astype(np.int64)
    return X, y


def _mlp(max_iter: int = 300) -> MLPClassifier:
    return MLPClassifier((32,), alpha=0.0, max_iter=max_iter, learning_rate_init=0.01)


@pytest.fixture(scope="module")
def binary_teacher():  # type: ignore[no-untyped-def]
    X, y = _binary_world()
    trainer = SklearnTrainer(_mlp(), n_classes=2)
    teacher = trainer.fit(X[:200], y[:200], seed=0)  # overfit: large logits
    return trainer, teacher, X


def test_binary_student_reproduces_the_teachers_margin(binary_teacher) -> None:  # type: ignore[no-untyped-def]
    trainer, teacher, X = binary_teacher
    pop = X[300:900]
    student = distill(trainer, teacher, pop, seed=1, method="logits")
    assert isinstance(student, LogitRegressionModel) and student.n_classes == 2
    assert isinstance(student.regressor, MLPRegressor)
    assert student.fit_info["distilled"] is True and student.fit_info["distill_method"] == "logits"
    zt, zs = teacher.logits(pop), student.logits(pop)
    assert zs.shape == (pop.shape[0], 2) and np.all(zs[:, 0] == 0.0)
    mt, ms = zt[:, 1] - zt[:, 0], zs[:, 1]
    assert np.median(np.abs(mt)) > 4.0  # a confident teacher: the hard case for soft labels
    # on its distillation set the student's margins are close to the teacher's ...
    rel = np.sqrt(np.mean((ms - mt) ** 2) / np.mean(mt**2))
    assert rel < 0.2, rel
    # ... and so is their scale; a soft-label student is further from them
    scale = np.median(np.abs(ms)) / np.median(np.abs(mt))
    assert 0.8 < scale < 1.25, scale
    soft = distill(trainer, teacher, pop, seed=1, method="soft-labels")
    zsoft = soft.logits(pop)
    rel_soft = np.sqrt(np.mean((zsoft[:, 1] - zsoft[:, 0] - mt) ** 2) / np.mean(mt**2))
    assert rel < 0.75 * rel_soft, (rel, rel_soft)
    # the same seed gives the same student; another seed another one
    again = distill(trainer, teacher, pop, seed=1, method="logits")
    np.testing.assert_array_equal(again.logits(pop), zs)
    other = distill(trainer, teacher, pop, seed=2, method="logits")
    assert not np.array_equal(other.logits(pop), zs)


def test_multiclass_student_matches_centred_logits(digits) -> None:  # type: ignore[no-untyped-def]
    X, y = digits
    trainer = SklearnTrainer(MLPClassifier((32,), max_iter=150), n_classes=10)
    teacher = trainer.fit(X[:300], y[:300], seed=0)
    pop = X[300:900]
    student = distill(trainer, teacher, pop, seed=0, method="logits")
    assert student.n_classes == 10
    zt = teacher.logits(pop)
    zt = zt - zt.mean(axis=1, keepdims=True)
    zs = student.logits(pop)
    r2 = 1.0 - np.sum((zs - zt) ** 2) / np.sum(zt**2)
    assert r2 > 0.9, r2
    np.testing.assert_allclose(zs.mean(axis=1), 0.0, atol=0.5)
    Xe = X[900:]
    assert np.mean(student.logits(Xe).argmax(1) == teacher.logits(Xe).argmax(1)) > 0.85


def test_regressor_mapping_keeps_architecture_and_budget() -> None:
    clf = MLPClassifier(
        (7, 5), activation="tanh", solver="adam", alpha=0.3, max_iter=11, batch_size=17
    )
    reg = logit_regressor_for(clf)
    assert isinstance(reg, MLPRegressor)
    p = reg.get_params()
    for k in ("hidden_layer_sizes", "activation", "solver", "alpha", "max_iter", "batch_size"):
        assert p[k] == clf.get_params()[k], k
    pipe = logit_regressor_for(Pipeline([("s", StandardScaler()), ("m", clf)]))
    assert isinstance(pipe, Pipeline) and isinstance(pipe.steps[-1][1], MLPRegressor)
    assert not hasattr(pipe.steps[0][1], "mean_")  # unfitted clone


def test_pipeline_student(binary_teacher) -> None:  # type: ignore[no-untyped-def]
    _, teacher, X = binary_teacher
    tr = SklearnTrainer(Pipeline([("s", StandardScaler()), ("m", _mlp(50))]), n_classes=2)
    student = distill(tr, teacher, X[300:500], seed=0, method="logits")
    assert isinstance(student.regressor, Pipeline)  # type: ignore[attr-defined]
    assert student.logits(X[:5]).shape == (5, 2)


def test_clear_errors(binary_teacher) -> None:  # type: ignore[no-untyped-def]
    _, teacher, X = binary_teacher
    for est in (LogisticRegression(), KNeighborsClassifier()):
        with pytest.raises(InvalidInputError, match=r"no regressor for .*soft-labels"):
            distill(SklearnTrainer(est), teacher, X[300:400], seed=0, method="logits")
    with pytest.raises(InvalidInputError, match="method"):
        distill(SklearnTrainer(_mlp()), teacher, X[300:400], seed=0, method="logit")
    with pytest.raises(InvalidInputError, match="SklearnTrainer"):
        distill(object(), teacher, X[300:400], seed=0, method="logits")
    with pytest.raises(TypeError, match="distill_method"):
        ExperimentConfig(distill_method="logits")  # type: ignore[call-arg]  # an attack now


@pytest.mark.parametrize("n_classes", [2, 10])
def test_roundtrip_bit_identical(tmp_path: Path, digits, binary_teacher, n_classes) -> None:  # type: ignore[no-untyped-def]
    if n_classes == 2:
        trainer, teacher, X = binary_teacher
    else:
        X, y = digits
        trainer = SklearnTrainer(MLPClassifier((16,), max_iter=40), n_classes=10)
        teacher = trainer.fit(X[:300], y[:300], seed=0)
    m = distill(trainer, teacher, X[300:600], seed=4, method="logits")
    p = save_model(m, tmp_path / "d.skops")  # type: ignore[arg-type]
    assert not list(tmp_path.glob("*.tmp"))
    # only types privaudit trusts by default (no trusted_types needed)
    m2 = load_model(p)
    assert isinstance(m2, LogitRegressionModel)
    assert m2.n_classes == n_classes and m2.fit_info == m.fit_info  # type: ignore[attr-defined]
    np.testing.assert_array_equal(m2.logits(X), m.logits(X))  # bit-identical
    assert all("privaudit" not in t for t in untrusted_types(p))
    # a classifier file still loads as a classifier
    assert isinstance(load_model(save_model(teacher, tmp_path / "c.skops")), SklearnModel)


def test_engine_stores_and_reuses_logit_students(tmp_path: Path) -> None:
    ds = load_digits()
    trainer = SklearnTrainer(MLPClassifier((16,), max_iter=60), n_classes=10)
    cfg = ExperimentConfig(
        attacks=("distillation-logits",),
        n_target_pool=160,
        n_population=160,
        n_distilled=2,
        alpha=0.1,
        seed=1,
    )
    first = run_experiment(ds, trainer, cfg, store=tmp_path, progress=False)
    assert first.models_trained["distilled_logits"] == 2
    assert "distilled" not in first.models_trained  # no soft-label student was needed
    models = [load_model(p) for p in tmp_path.rglob("*.skops")]
    assert sum(isinstance(m, LogitRegressionModel) for m in models) == 2
    second = run_experiment(ds, trainer, cfg, store=tmp_path, progress=False)
    assert second.models_trained.get("distilled_logits", 0) == 0
    np.testing.assert_array_equal(
        second.scores["distillation-logits"].scores, first.scores["distillation-logits"].scores
    )
    assert first.scores["distillation-logits"].params["students"].startswith("logit regression")
    # the method enters the cache key: the soft-label students of attack D are trained
    # anew, on the same subsets with the same seeds, and both attacks run side by side
    both = dataclasses.replace(cfg, attacks=("distillation", "distillation-logits"))
    third = run_experiment(ds, trainer, both, store=tmp_path, progress=False)
    assert third.models_trained["distilled"] == 2
    assert third.models_trained.get("distilled_logits", 0) == 0
    assert third.scores["distillation"].params["students"].startswith("soft-labels")
    assert not np.array_equal(
        third.scores["distillation"].scores, third.scores["distillation-logits"].scores
    )
