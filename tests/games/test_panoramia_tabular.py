"""PANORAMIA's tabular modality: codec, generator on D_G only, helper, staged scorer."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from privaudit.data import load_adult
from privaudit.data.dataset import Dataset
from privaudit.models.sklearn import SklearnTrainer
from privaudit.panoramia.game import ScorerData, run_panoramia
from privaudit.panoramia.tabular import TabularCodec, TabularModality


@pytest.fixture(scope="module")
def adult_pool() -> tuple[Dataset, Dataset]:
    ad = load_adult()
    pos = np.random.default_rng(0).permutation(ad.n_records)[:1600]
    pool = ad.subset(ad.record_ids[pos])
    return pool.subset(pool.record_ids[:1200]), pool.subset(pool.record_ids[1200:])


def _trainer() -> SklearnTrainer:
    return SklearnTrainer(LogisticRegression(C=10.0, max_iter=300), n_classes=2)


def test_codec_round_trip_and_decoded_values(adult_pool: Any) -> None:
    members, _ = adult_pool
    codec = TabularCodec.from_reference(members, n_bins=8)
    codes = codec.encode(members)
    assert np.array_equal(codes, codec.table.codes)  # the reference encodes as discretise does
    X, y = codec.decode(codes, np.random.default_rng(0))
    assert np.array_equal(
        codec.encode(
            Dataset("d", np.arange(len(y)), X, y, members.feature_names, members.class_names)
        ),
        codes,
    )
    for j, (kind, what) in enumerate(codec.attributes):
        if kind == "num":  # a decoded numeric is a reference value of its bin
            for u in np.unique(codes[:, j])[:3]:
                assert set(X[codes[:, j] == u, what]) <= set(members.X[codes[:, j] == u, what])
        elif kind == "cat":
            assert np.all(X[:, list(what)].sum(axis=1) == 1)
    assert np.array_equal(y, members.y)


def test_generator_trained_on_d_g_only_and_samples_in_feature_space(adult_pool: Any) -> None:
    members, _ = adult_pool
    seen: list[tuple[str, ...]] = []

    class Spy(TabularModality):
        def fit_generator(self, records: Dataset, *, seed: int) -> Any:
            seen.append(self.ids(records))
            return super().fit_generator(records, seed=seed)

    mod = Spy(_trainer(), scorer={"max_iter": 20})
    d_g = members.subset(members.record_ids[:300])
    gen = mod.fit_generator(d_g, seed=0)
    s = mod.sample(gen, 50, seed=1)
    assert s.record_ids.tolist() == [f"synth-{i:06d}" for i in range(50)]
    assert s.feature_names == members.feature_names and s.X.shape == (50, members.n_features)
    assert seen == [mod.ids(d_g)]
    again = mod.sample(mod.fit_generator(d_g, seed=0), 50, seed=1)
    assert np.array_equal(again.X, s.X) and np.array_equal(again.y, s.y)


def test_scorer_keeps_the_best_iteration_not_the_last(adult_pool: Any) -> None:
    members, _ = adult_pool
    mod = TabularModality(_trainer(), scorer={"max_iter": 12})
    rng = np.random.default_rng(0)
    a, b = members.subset(members.record_ids[:400]), members.subset(members.record_ids[400:600])
    la, lb = rng.random((400, 1)), rng.random((200, 1))
    ya, yb = rng.random(400) < 0.5, rng.random(200) < 0.5
    calls: list[int] = []

    def peak_at_four(scores: Any, label: Any) -> float:
        calls.append(1)
        return -abs(len(calls) - 4)

    sc = mod.fit_scorer(ScorerData(a, la, ya), ScorerData(b, lb, yb), seed=0,
                        criterion=peak_at_four)  # fmt: skip
    assert sc.info["best_iteration"] == 4 and sc.info["n_iter_fitted"] == 12
    staged = list(sc.model.staged_decision_function(np.hstack([b.X, lb])))
    out = sc.score(b, lb)
    assert np.array_equal(out, np.ravel(staged[3]))
    assert not np.array_equal(out, np.ravel(staged[-1]))


def test_tabular_game_end_to_end(adult_pool: Any) -> None:
    members, _ = adult_pool
    tr = _trainer()
    target = tr.fit(members.X, members.y, seed=0)
    mod = TabularModality(tr, scorer={"max_iter": 15})
    res = run_panoramia(mod, target, members, seed=1)
    d = res.to_dict()
    assert d["modality"] == "tabular" and d["sizes"]["m"] == 300
    assert 1 <= d["classifiers"]["mia"]["best_iteration"] <= 15
    assert np.unique(res.scores.scores["panoramia-mia"]).size > 10  # continuous scores
    assert d["bounds"]["eps_tilde"] == max(0.0, d["bounds"]["c_plus_eps_lb"] - d["bounds"]["c_lb"])
    res2 = run_panoramia(TabularModality(tr, scorer={"max_iter": 15}), target, members, seed=1)
    assert res2.to_dict() == d


def test_dataset_arrays_round_trip(adult_pool: Any) -> None:
    from privaudit.panoramia.game import dataset_from_arrays, dataset_to_arrays

    members, _ = adult_pool
    back = dataset_from_arrays(dataset_to_arrays(members))
    assert back.fingerprint() == members.fingerprint()
    mod = TabularModality(_trainer())
    assert mod.records_from_arrays(mod.records_to_arrays(members)).fingerprint() == (
        members.fingerprint()
    )
