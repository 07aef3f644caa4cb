"""Distillation (Attack D) and safe persistence."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import skops.io as sio
from scipy.special import softmax
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.ensemble import GradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import KNeighborsClassifier
from sklearn.neural_network import MLPClassifier

from privaudit.data import load_digits
from privaudit.errors import InvalidInputError
from privaudit.models import (
    SklearnModel,
    SklearnTrainer,
    UntrustedModelError,
    distill,
    load_model,
    save_model,
    soft_label_expansion,
    untrusted_types,
)


@pytest.fixture(scope="module")
def digits():  # type: ignore[no-untyped-def]
    d = load_digits()
    return d.X, d.y


def test_soft_label_expansion() -> None:
    X = np.array([[1.0, 2.0], [3.0, 4.0]])
    P = np.array([[0.25, 0.75], [1.0, 0.0]])
    Xr, yr, wr = soft_label_expansion(X, P)
    np.testing.assert_array_equal(Xr, [[1, 2], [1, 2], [3, 4], [3, 4]])
    np.testing.assert_array_equal(yr, [0, 1, 0, 1])
    np.testing.assert_array_equal(wr, [0.25, 0.75, 1.0, 0.0])
    with pytest.raises(InvalidInputError, match="summing to 1"):
        soft_label_expansion(X, np.array([[0.5, 0.6], [1.0, 0.0]]))


def test_weighted_expansion_equals_soft_cross_entropy() -> None:
    # oracle: the expanded weighted log-loss equals the soft-label cross-entropy
    rng = np.random.default_rng(0)
    X = rng.normal(size=(7, 3))
    P = softmax(rng.normal(size=(7, 4)), axis=1)
    Q = softmax(rng.normal(size=(7, 4)), axis=1)  # a student's probabilities
    _, yr, wr = soft_label_expansion(X, P)
    expanded = -(wr * np.log(np.repeat(Q, 4, axis=0)[np.arange(28), yr])).sum()
    soft = -(P * np.log(Q)).sum()
    assert expanded == pytest.approx(soft, rel=1e-12)


def test_distilled_student_matches_teacher(digits) -> None:  # type: ignore[no-untyped-def]
    X, y = digits
    teacher = SklearnTrainer(LogisticRegression(C=0.5, max_iter=1000)).fit(X[:400], y[:400], seed=0)
    pop = X[400:900]
    student = distill(
        SklearnTrainer(LogisticRegression(C=1e3, max_iter=3000)), teacher, pop, seed=1
    )
    assert isinstance(student, SklearnModel) and student.n_classes == 10
    assert student.fit_info["distilled"] is True
    Xe = X[900:]
    pt = softmax(teacher.logits(Xe), axis=1)
    ps = softmax(student.logits(Xe), axis=1)
    # the teacher is realisable by the student family: the distilled model recovers it
    assert np.abs(pt - ps).max() < 0.05
    assert np.mean(pt.argmax(1) == ps.argmax(1)) > 0.97
    # a student trained on the hard labels of the same points is further from the teacher
    hard = SklearnTrainer(LogisticRegression(C=1e3, max_iter=3000)).fit(pop, y[400:900], seed=1)
    assert np.abs(pt - softmax(hard.logits(Xe), axis=1)).mean() > 2 * np.abs(pt - ps).mean()


def test_distill_mlp_runs_with_sample_weight(digits) -> None:  # type: ignore[no-untyped-def]
    X, y = digits
    teacher = SklearnTrainer(MLPClassifier((16,), max_iter=100)).fit(X[:300], y[:300], seed=0)
    student = distill(
        SklearnTrainer(MLPClassifier((16,), max_iter=30)), teacher, X[300:600], seed=0
    )
    agree = np.mean(student.logits(X[600:]).argmax(1) == teacher.logits(X[600:]).argmax(1))
    assert agree > 0.8


def test_distill_requires_sample_weight(digits) -> None:  # type: ignore[no-untyped-def]
    X, y = digits
    teacher = SklearnTrainer(LogisticRegression(max_iter=300)).fit(X[:200], y[:200], seed=0)
    with pytest.raises(InvalidInputError, match="sample_weight"):
        distill(SklearnTrainer(KNeighborsClassifier()), teacher, X[200:300], seed=0)


@pytest.mark.parametrize(
    "make",
    [
        lambda: LogisticRegression(max_iter=300),
        lambda: MLPClassifier((16,), max_iter=40),
        lambda: GradientBoostingClassifier(n_estimators=8, max_depth=2),
    ],
    ids=["logreg", "mlp", "gb"],
)
def test_roundtrip_bit_identical(tmp_path: Path, digits, make) -> None:  # type: ignore[no-untyped-def]
    X, y = digits
    m = SklearnTrainer(make()).fit(X[:300], y[:300], seed=3)
    p = save_model(m, tmp_path / "m.skops")
    m2 = load_model(p)
    assert isinstance(m2, SklearnModel)
    assert m2.logit_source == m.logit_source and m2.n_classes == m.n_classes
    assert m2.fit_info == m.fit_info
    np.testing.assert_array_equal(m2.logits(X), m.logits(X))  # bit-identical
    assert not list(tmp_path.glob("*.tmp"))
    assert p.read_bytes()[:2] == b"PK"


class _Custom(ClassifierMixin, BaseEstimator):
    def fit(self, X, y):  # type: ignore[no-untyped-def]
        self.classes_ = np.unique(y)
        return self

    def predict_proba(self, X):  # type: ignore[no-untyped-def]
        return np.full((len(X), 2), 0.5)


def test_untrusted_types_refused(tmp_path: Path) -> None:
    m = SklearnModel(_Custom().fit(np.zeros((2, 1)), [0, 1]))
    p = save_model(m, tmp_path / "c.skops")
    bad = [t for t in untrusted_types(p) if "_Custom" in t]
    assert bad
    with pytest.raises(UntrustedModelError, match="_Custom"):
        load_model(p)
    m2 = load_model(p, trusted_types=bad)
    np.testing.assert_array_equal(m2.logits(np.zeros((1, 1))), np.log([[0.5, 0.5]]))


def test_load_errors(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="existing"):
        load_model(tmp_path / "none.skops")
    (tmp_path / "junk.skops").write_bytes(b"not a zip")
    with pytest.raises(InvalidInputError, match="skops"):
        load_model(tmp_path / "junk.skops")
    sio.dump({"format": "other"}, tmp_path / "o.skops")
    with pytest.raises(InvalidInputError, match="save_model"):
        load_model(tmp_path / "o.skops")
