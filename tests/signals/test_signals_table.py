"""signal_table: batching, model kinds, orientation of records/models, errors."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from privaudit.data import Dataset
from privaudit.errors import InvalidInputError
from privaudit.models import PrecomputedModel, SklearnTrainer, TrainingError
from privaudit.records import SignalTable
from privaudit.signals import SIGNALS, compute_signal, entropy, model_signals, signal_table


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


class _Boundary(CountingModel):
    """Class 1 iff x_0 > 0 (a label-only signal sees a boundary); counts ``logits`` calls
    and the number of rows of each."""

    def __init__(self) -> None:
        super().__init__(np.zeros((4, 2)))
        self.rows: list[int] = []

    @property
    def n_classes(self) -> int:
        return 2

    def logits(self, X: np.ndarray) -> np.ndarray:
        self.calls += 1
        self.rows.append(int(X.shape[0]))
        return np.stack([np.zeros(X.shape[0]), 50.0 * X[:, 0]], axis=1)


@pytest.fixture
def ds2() -> Dataset:
    rng = np.random.default_rng(5)
    X = rng.normal(size=(30, 4))
    return Dataset(
        "two",
        np.array([f"r{k:02d}" for k in range(30)]),
        X,
        (X[:, 0] > 0).astype(np.int64),
        ("a", "b", "c", "d"),
        ("x", "y"),
    )


def test_query_signals_only_skip_the_logits_pass(ds2: Dataset) -> None:
    """Only query signals requested: no batch of plain logits is computed (and thrown away);
    the query signal is bit-identical to the one computed beside logit signals."""
    only = _Boundary()
    out = model_signals("m", only, ds2, ["label_robustness"], batch_size=7)
    # one query batch (30 <= 256 records): the clean rows, then their noisy copies
    assert only.rows == [30, 30 * 5 * 8]
    both = model_signals("m", _Boundary(), ds2, ["loss", "label_robustness"], batch_size=7)
    np.testing.assert_array_equal(out["label_robustness"], both["label_robustness"])
    # logit signals still take one logits call per batch (30 records in batches of 7: 5)
    logit_only = _Boundary()
    model_signals("m", logit_only, ds2, ["loss", "entropy"], batch_size=7)
    assert logit_only.rows == [7, 7, 7, 7, 2]


def test_model_signals_follow_the_requested_order(ds2: Dataset) -> None:
    """The result holds the signals in the order asked, query signals included."""
    out = model_signals("m", _Boundary(), ds2, ["label_robustness", "loss", "prob_true"])
    assert list(out) == ["label_robustness", "loss", "prob_true"]
    out = model_signals("m", _Boundary(), ds2, ["loss", "label_robustness", "prob_true"])
    assert list(out) == ["loss", "label_robustness", "prob_true"]


def test_model_signals_refuse_duplicates_like_signal_table(ds2: Dataset) -> None:
    W = np.ones((4, 2))
    with pytest.raises(InvalidInputError, match=r"signals: expected unique signal names") as tab:
        signal_table({"m": CountingModel(W)}, ds2, ["loss", "loss"])
    with pytest.raises(InvalidInputError, match=r"signals: expected unique signal names") as one:
        model_signals("m", CountingModel(W), ds2, ["loss", "loss"])
    assert str(one.value) == str(tab.value)
    with pytest.raises(InvalidInputError, match=r"signals: expected unique signal names"):
        model_signals("m", _Boundary(), ds2, ["label_robustness", "loss", "label_robustness"])


def test_each_query_signal_is_stored_under_its_own_name(
    ds2: Dataset, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second query signal: computed by its own function, stored under its own name."""
    import privaudit.signals.table as table

    def half(
        model: object, X: np.ndarray, y: np.ndarray, ids: np.ndarray, **kw: object
    ) -> np.ndarray:
        return np.full(X.shape[0], 0.5)

    monkeypatch.setattr(table, "QUERY_SIGNALS", (*table.QUERY_SIGNALS, "half"))
    monkeypatch.setattr(table, "ALL_SIGNALS", (*table.ALL_SIGNALS, "half"))
    functions = {**getattr(table, "_QUERY_FUNCTIONS", {}), "half": half}
    monkeypatch.setattr(table, "_QUERY_FUNCTIONS", functions, raising=False)
    out = model_signals("m", _Boundary(), ds2, ["half", "loss"])
    assert list(out) == ["half", "loss"]
    np.testing.assert_array_equal(out["half"], np.full(30, 0.5))
    out = model_signals("m", _Boundary(), ds2, ["label_robustness", "half"])
    assert sorted(out) == ["half", "label_robustness"]
    np.testing.assert_array_equal(
        out["label_robustness"],
        model_signals("m", _Boundary(), ds2, ["label_robustness"])["label_robustness"],
    )


def test_every_query_signal_has_its_function() -> None:
    import privaudit.signals.table as table

    assert set(table._QUERY_FUNCTIONS) == set(table.QUERY_SIGNALS)
