"""LiRA's augmented queries through the experiment engine and the attacks."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from privaudit.attacks import AttackData, run_attack
from privaudit.data import load_digits
from privaudit.errors import DesignError
from privaudit.membership.experiment import ExperimentConfig, run_experiment
from privaudit.models import SklearnTrainer
from privaudit.records import MembershipMatrix, SignalTable

CFG = ExperimentConfig(
    n_target_pool=120,
    n_population=160,
    n_reference=4,
    attacks=("lira-online", "lira-offline"),
    attack_params={
        "lira-online": {"variance": "fixed", "augmented_queries": True},
        "lira-offline": {"variance": "fixed", "augmented_queries": True},
    },
    alpha=0.1,
    seed=5,
)


class _ShiftedDigits(SklearnTrainer):
    """A digits classifier whose training augmentation is (said to be) 1-pixel shifts."""

    def query_augmentation(self) -> dict[str, Any]:
        return {"input_shape": (1, 8, 8), "shift": 1, "flip": False}


def _trainer(cls: type[SklearnTrainer] = _ShiftedDigits) -> SklearnTrainer:
    return cls(LogisticRegression(C=10.0, max_iter=100), n_classes=10)


@pytest.fixture(scope="module")
def digits():  # type: ignore[no-untyped-def]
    return load_digits()


def test_engine_queries_every_view(digits) -> None:  # type: ignore[no-untyped-def]
    res = run_experiment(digits, _trainer(), CFG, progress=False)
    data = res.attack_data
    assert data is not None and data.views is not None
    assert len(data.views) == 8  # {-1, 0, 1}^2 minus the identity
    for name in ("lira-online", "lira-offline"):
        p = res.scores[name].params
        assert p["n_views"] == 9 and p["queries_per_record"] == 9
        assert p["view_names"][0] == "identity"
        assert np.all(np.isfinite(res.scores[name].scores))
    # the views are the models on shifted records: their signals differ from the identity's
    v = data.views["shift(1,0)"]
    sig = "logit_confidence"
    assert not np.allclose(v.table("target", sig).values, data.table("target", sig).values)
    assert v.reference_population is not None  # the offline attack's calibration views
    assert res.scores["lira-offline"].threshold is not None
    # without augmented queries: one view, the scores of the identity view alone
    plain = dataclasses.replace(CFG, attack_params={a: {"variance": "fixed"} for a in CFG.attacks})
    res1 = run_experiment(digits, _trainer(), plain, progress=False)
    assert res1.attack_data is not None and res1.attack_data.views is None
    assert res1.scores["lira-online"].params["n_views"] == 1
    one = run_attack("lira-online", data, seed=0, variance="fixed")
    np.testing.assert_allclose(one.scores, res1.scores["lira-online"].scores)


def test_engine_refuses_views_without_augmentation(digits) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(DesignError, match="augmented_queries"):
        run_experiment(digits, _trainer(SklearnTrainer), CFG, progress=False)


def _data(rng: np.random.Generator, views: int, *, same: bool) -> AttackData:
    n, k = 200, 8
    ids = np.arange(n)
    keep = np.zeros((k, n), dtype=bool)
    for i in range(n):
        keep[rng.permutation(k)[: k // 2], i] = True
    member = rng.random(n) < 0.5
    base = rng.normal(size=(k + 1, n)) + 0.8 * np.vstack([member, keep])

    def one(values: np.ndarray) -> dict[str, Any]:
        return {
            "record_ids": ids,
            "labels": np.zeros(n, dtype=np.int64),
            "target": {"loss": SignalTable("loss", ids, ("t",), values[:1])},
            "reference": {
                "loss": SignalTable("loss", ids, tuple(f"r{j}" for j in range(k)), values[1:])
            },
            "reference_membership": MembershipMatrix(ids, tuple(f"r{j}" for j in range(k)), keep),
        }

    extra = {
        f"v{j}": AttackData(**one(base if same else base + rng.normal(size=base.shape)))
        for j in range(views - 1)
    }
    return AttackData(**one(base), views=extra or None)


@pytest.mark.parametrize("attack", ["lira-online", "lira-offline"])
def test_identical_views_give_the_single_view_scores(attack: str) -> None:
    rng = np.random.default_rng(0)
    data = _data(rng, 4, same=True)
    kw = {"signal": "loss", "variance": "fixed", "clip": None}
    single = run_attack(attack, data, seed=0, **kw)
    many = run_attack(attack, data, seed=0, augmented_queries=True, **kw)
    np.testing.assert_allclose(many.scores, single.scores, atol=1e-12)
    assert many.params["n_views"] == 4 and single.params["n_views"] == 1
    if attack == "lira-offline":  # perfectly correlated views: the scale stays 1
        assert many.params["view_scale"] == pytest.approx(1.0)


def test_independent_views_shrink_the_offline_scale() -> None:
    # views with independent noise: the mean of V standardised views has a smaller spread
    data = _data(np.random.default_rng(1), 9, same=False)
    res = run_attack(
        "lira-offline",
        data,
        seed=0,
        signal="loss",
        variance="fixed",
        clip=None,
        augmented_queries=True,
    )
    assert 1 / 3 < res.params["view_scale"] < 1.0


def test_augmented_queries_need_views() -> None:
    data = _data(np.random.default_rng(2), 1, same=True)
    with pytest.raises(DesignError, match="augmented views"):
        run_attack("lira-online", data, seed=0, signal="loss", augmented_queries=True)
