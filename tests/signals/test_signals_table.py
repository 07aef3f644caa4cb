"""signal_table: batching, model kinds, orientation of records/models, errors."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from privaudit.data import Dataset
from privaudit.errors import InvalidInputError
from privaudit.models import PrecomputedModel, SklearnTrainer, TrainingError
from privaudit.records import SignalTable
from privaudit.signals import SIGNALS, compute_signal, entropy, signal_table


class CountingModel:
    """A linear model that counts its forward calls."""

    def __init__(self, W: np.ndarray, *, nan_at: int | None = None) -> None:
        self.W = W
        self.calls = 0
        self.nan_at = nan_at

    @property
    def n_classes(self) -> int:
        return int(self.W.shape[1])

    def forward(self, X: np.ndarray) -> np.ndarray:
        # row-wise arithmetic (no BLAS blocking), so results do not depend on the batch
        return (X[:, :, None] * self.W[None, :, :]).sum(axis=1)

    def logits(self, X: np.ndarray) -> np.ndarray:
        self.calls += 1
        z = self.forward(X)
        if self.nan_at is not None and self.nan_at < X.shape[0]:
            z[self.nan_at, 0] = np.nan
        return z


@pytest.fixture
def ds() -> Dataset:
    rng = np.random.default_rng(0)
    n = 53
    return Dataset(
        "toy",
        np.array([f"r{k:02d}" for k in range(n)]),
        rng.normal(size=(n, 4)),
        rng.integers(0, 3, size=n),
        ("a", "b", "c", "d"),
        ("x", "y", "z"),
    )


def test_values_match_compute_signal_and_orientation(ds: Dataset) -> None:
    rng = np.random.default_rng(1)
    models = {
        "m1": CountingModel(rng.normal(size=(4, 3))),
        "m0": CountingModel(rng.normal(size=(4, 3))),
    }
    tabs = signal_table(models, ds, list(SIGNALS), batch_size=10)
    assert list(tabs) == list(SIGNALS)
    for name, tab in tabs.items():
        assert isinstance(tab, SignalTable) and tab.signal == name
        assert tab.model_ids == ("m1", "m0")
        assert tab.record_ids.tolist() == ds.record_ids.tolist()
        for j, m in enumerate(models.values()):
            np.testing.assert_array_equal(
                tab.values[j], compute_signal(name, m.forward(ds.X), ds.y)
            )
    # one forward per batch of 10 records, shared by all five signals
    assert models["m1"].calls == 6 and models["m0"].calls == 6


def test_batch_size_does_not_change_values(ds: Dataset) -> None:
    m = {"m": CountingModel(np.random.default_rng(2).normal(size=(4, 3)))}
    a = signal_table(m, ds, ["loss", "modified_entropy"], batch_size=1)
    b = signal_table(m, ds, ["loss", "modified_entropy"], batch_size=10_000)
    for k in a:
        np.testing.assert_array_equal(a[k].values, b[k].values)


def test_precomputed_models_by_id(ds: Dataset) -> None:
    W = np.random.default_rng(3).normal(size=(4, 3))
    z = CountingModel(W).forward(ds.X)
    perm = np.random.default_rng(4).permutation(ds.n_records)
    logits_model = PrecomputedModel(ds.record_ids[perm], logits=z[perm])
    loss = compute_signal("loss", z, ds.y)
    loss_model = PrecomputedModel(ds.record_ids[perm], losses=loss[perm], n_classes=3)
    live = CountingModel(W)
    tabs = signal_table(
        {"live": live, "pre-logits": logits_model, "pre-loss": loss_model},
        ds,
        ["loss", "prob_true", "logit_confidence"],
        batch_size=16,
    )
    for t in tabs.values():
        np.testing.assert_allclose(t.values[1], t.values[0], rtol=1e-12)
        np.testing.assert_allclose(t.values[2], t.values[0], rtol=1e-9, atol=1e-12)
    with pytest.raises(InvalidInputError, match="losses only"):
        signal_table({"pre-loss": loss_model}, ds, ["entropy"])
    sub = PrecomputedModel(ds.record_ids[:5], logits=z[:5])
    with pytest.raises(InvalidInputError, match="without outputs"):
        signal_table({"short": sub}, ds, ["loss"])


def test_sklearn_model(ds: Dataset) -> None:
    m = SklearnTrainer(LogisticRegression(max_iter=200)).fit(ds.X, ds.y, seed=0)
    t = signal_table({"target": m}, ds, ["prob_true"])["prob_true"]
    np.testing.assert_allclose(
        t.values[0], m.estimator.predict_proba(ds.X)[np.arange(ds.n_records), ds.y], rtol=1e-10
    )


def test_errors(ds: Dataset) -> None:
    W = np.ones((4, 3))
    with pytest.raises(InvalidInputError, match=r"model 'bad'.*NaN.*r03"):
        signal_table({"ok": CountingModel(W), "bad": CountingModel(W, nan_at=3)}, ds, ["loss"])
    with pytest.raises(InvalidInputError, match=r"labels below the 2 classes of model 'two'"):
        signal_table({"two": CountingModel(np.ones((4, 2)))}, ds, ["loss"])
    with pytest.raises(InvalidInputError, match="at least one model"):
        signal_table({}, ds, ["loss"])
    with pytest.raises(InvalidInputError, match="unique"):
        signal_table({"m": CountingModel(W)}, ds, ["loss", "loss"])
    with pytest.raises(InvalidInputError, match="signals"):
        signal_table({"m": CountingModel(W)}, ds, ["accuracy"])
    with pytest.raises(InvalidInputError, match="batch_size"):
        signal_table({"m": CountingModel(W)}, ds, ["loss"], batch_size=0)

    class Broken(CountingModel):
        def logits(self, X: np.ndarray) -> np.ndarray:
            raise RuntimeError("GPU on fire")

    with pytest.raises(TrainingError, match=r"model 'b'.*GPU on fire"):
        signal_table({"b": Broken(W)}, ds, ["loss"])

    class WrongShape(CountingModel):
        def logits(self, X: np.ndarray) -> np.ndarray:
            return np.zeros((X.shape[0], 2))

    with pytest.raises(InvalidInputError, match=r"logits of model 'w'.*shape"):
        signal_table({"w": WrongShape(W)}, ds, ["loss"])


def test_entropy_without_labels() -> None:
    np.testing.assert_allclose(entropy(np.zeros((2, 4))), np.log(4.0))
