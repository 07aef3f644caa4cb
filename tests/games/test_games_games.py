"""The four inference games (Ye et al. 2022, Def. 3.1-3.4) record what they fix and resample."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from privaudit.data import load_digits
from privaudit.errors import InvalidInputError
from privaudit.membership.experiment import ExperimentConfig
from privaudit.membership.games import GAMES, describe_game, run_game
from privaudit.models import SklearnTrainer
from privaudit.runtime.store import ArtifactStore

CFG = ExperimentConfig(
    attacks=("loss", "population", "reference", "rmia-offline"),
    n_target_pool=80,
    n_population=80,
    n_reference=4,
    alpha=0.1,
    seed=11,
)


@pytest.fixture(scope="module")
def digits():  # type: ignore[no-untyped-def]
    return load_digits()


def _trainer() -> SklearnTrainer:
    return SklearnTrainer(LogisticRegression(C=50.0, max_iter=150), n_classes=10)


def test_descriptions_cover_the_four_definitions() -> None:
    assert set(GAMES) == {"average", "fixed-model", "fixed-record", "fixed-record-and-dataset"}
    for name, definition in zip(GAMES, ("3.1", "3.2", "3.3", "3.4"), strict=True):
        d = describe_game(name)
        assert f"Def. {definition}" in d.definition
        assert d.fixed and d.resampled and not set(d.fixed) & set(d.resampled)
    theta = "target training randomness s_theta (target_seed)"
    assert theta in describe_game("fixed-model").fixed
    assert all(theta in describe_game(g).resampled for g in GAMES if g != "fixed-model")
    assert any(
        "target training set D" in f for f in describe_game("fixed-record-and-dataset").fixed
    )
    assert any("target training set D" in r for r in describe_game("fixed-record").resampled)
    with pytest.raises(InvalidInputError, match="game"):
        describe_game("nope")


def test_fixed_model_is_one_trial_over_all_records(digits) -> None:  # type: ignore[no-untyped-def]
    res = run_game("fixed-model", digits, _trainer(), CFG, n_trials=5, progress=False)
    assert len(res.trials) == 1 and res.game.n_trials == 1
    s = res.samples["reference"]
    assert s.n == CFG.n_target_pool and np.all(s.trial == 0)
    np.testing.assert_array_equal(s.member, res.trials[0].membership)
    assert res.trials[0].game.name == "fixed-model"


def test_average_resamples_dataset_and_model(digits) -> None:  # type: ignore[no-untyped-def]
    res = run_game("average", digits, _trainer(), CFG, n_trials=2, progress=False)
    t0, t1 = res.trials
    np.testing.assert_array_equal(t0.record_ids, t1.record_ids)  # the pool pi is fixed
    assert not np.array_equal(t0.membership, t1.membership)  # D resampled
    assert t0.seeds["target"] != t1.seeds["target"]  # theta resampled
    assert t0.seeds["split"] == t1.seeds["split"]
    s = res.samples["population"]
    assert s.n == 2 * CFG.n_target_pool and set(s.trial.tolist()) == {0, 1}
    assert res.game.name == "average" and res.game.n_trials == 2
    json.dumps(res.to_dict())


def test_fixed_record_game(digits) -> None:  # type: ignore[no-untyped-def]
    res = run_game(
        "fixed-record", digits, _trainer(), CFG, n_trials=3, n_fixed_records=2, progress=False
    )
    assert res.fixed_records is not None and res.fixed_records.size == 2
    s = res.samples["reference"]
    assert s.n == 3 * 2 and set(s.record_ids.tolist()) == set(res.fixed_records.tolist())
    # b is the target's true membership of z in each trial
    for k in range(s.n):
        t = res.trials[int(s.trial[k])]
        i = t.record_ids.tolist().index(s.record_ids[k])
        assert s.member[k] == t.membership[i]
    assert len({t.seeds["membership"] for t in res.trials}) == 3


def test_fixed_record_and_dataset_game_fixes_d_and_reuses_references(
    digits, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    pool = run_game("fixed-model", digits, _trainer(), CFG, progress=False).trials[0].record_ids
    rid = str(pool[3])
    store = ArtifactStore(tmp_path)
    res = run_game(
        "fixed-record-and-dataset",
        digits,
        _trainer(),
        CFG,
        n_trials=4,
        fixed_records=[rid],
        store=store,
        progress=False,
    )
    i = res.trials[0].record_ids.tolist().index(rid)
    rows = np.stack([t.membership for t in res.trials])
    others = np.delete(rows, i, axis=1)
    assert np.all(others == others[0])  # D \ {z} identical in every trial
    refs = [t.membership_matrix.keep[1:] for t in res.trials]
    assert all(np.array_equal(r, refs[0]) for r in refs)  # attacker's reference models fixed
    assert len({t.seeds["target"] for t in res.trials}) == 4
    # only the target is retrained after the first trial: reference models come from the store
    assert res.trials[0].models_trained["reference"] == CFG.n_reference
    assert all(t.models_trained["reference"] == 0 for t in res.trials[1:])
    s = res.samples["rmia-offline"]
    assert s.n == 4 and np.all(s.record_ids == rid)
    np.testing.assert_array_equal(s.member, rows[:, i])
    assert any("D" in f for f in res.game.fixed)


def test_fixed_records_must_be_in_the_pool(digits) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidInputError, match="fixed_records"):
        run_game(
            "fixed-record", digits, _trainer(), CFG, fixed_records=["not-a-record"], progress=False
        )
    with pytest.raises(InvalidInputError, match="n_trials"):
        run_game("average", digits, _trainer(), CFG, n_trials=0, progress=False)


@pytest.mark.parametrize("name", ["fixed-record", "fixed-record-and-dataset"])
def test_fixed_records_are_always_in_the_leave_one_out_sample(digits, name: str) -> None:  # type: ignore[no-untyped-def]
    """Attack L trains per-record models on a sample: the fixed records must be in it,
    else the game gets no draw of L at all (a defect found in review)."""
    cfg = dataclasses.replace(
        CFG, attacks=("leave-one-out",), n_leave_one_out=2, leave_one_out_sample=4
    )
    res = run_game(name, digits, _trainer(), cfg, n_trials=2, n_fixed_records=1, progress=False)
    s = res.samples["leave-one-out"]
    assert s.n == 2 and np.all(s.record_ids == res.fixed_records[0])
    for t in res.trials:
        assert t.leave_one_out_ids is not None and res.fixed_records[0] in t.leave_one_out_ids
