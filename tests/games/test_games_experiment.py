"""The experiment engine end to end on a small digits subset (seconds, not minutes)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from privaudit.attacks import ATTACKS
from privaudit.data import load_digits
from privaudit.errors import InvalidInputError
from privaudit.membership.experiment import (
    DEFAULT_ATTACKS,
    ExperimentConfig,
    ExperimentResult,
    run_experiment,
    target_pool_ids,
)
from privaudit.metrics.roc import auc
from privaudit.models import SklearnTrainer
from privaudit.runtime.store import ArtifactStore, canonical_json

CFG = ExperimentConfig(
    n_target_pool=160,
    n_population=160,
    n_reference=4,
    n_shadow=2,
    n_distilled=2,
    n_leave_one_out=2,
    leave_one_out_sample=8,
    alpha=0.1,
    seed=3,
)


@pytest.fixture(scope="module")
def digits():  # type: ignore[no-untyped-def]
    return load_digits()


def _trainer(C: float = 100.0) -> SklearnTrainer:
    return SklearnTrainer(LogisticRegression(C=C, max_iter=200), n_classes=10)


@pytest.fixture(scope="module")
def stored_run(digits, tmp_path_factory):  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("store")
    first = run_experiment(digits, _trainer(), CFG, store=root, progress=False)
    return root, first


def test_every_attack_runs(stored_run) -> None:  # type: ignore[no-untyped-def]
    _, res = stored_run
    assert isinstance(res, ExperimentResult)
    assert tuple(res.scores) == DEFAULT_ATTACKS
    n = CFG.n_target_pool
    assert res.record_ids.size == n and res.membership.size == n
    assert 2 <= res.membership.sum() <= n - 2  # one fair coin per pool record
    for name, s in res.scores.items():
        assert np.all(np.isfinite(s.scores)), name
        if ATTACKS[name].alpha_threshold:
            assert s.alpha == CFG.alpha and s.threshold is not None
        else:
            assert s.alpha is None
        if name == "leave-one-out":
            # reported on every record it scored: all non-members (served by the models
            # on D) and the sampled members (served by their own D \ {x} models)
            assert res.leave_one_out_ids is not None
            m = res.member_of(name)
            assert (~m).sum() == (~res.membership).sum()
            assert m.sum() == CFG.leave_one_out_sample // 2
            assert set(s.record_ids[m].tolist()) <= set(res.leave_one_out_ids.tolist())
        else:
            np.testing.assert_array_equal(s.record_ids, res.record_ids)
    # the target overfits (C=100 on 80 digits), and the reference attacks see it
    assert res.train_accuracy == 1.0 and res.test_accuracy < 1.0
    for name in ("reference", "lira-offline", "rmia-online", "leave-one-out"):
        assert auc(res.scores[name].scores, res.member_of(name)) > 0.6, name
    assert set(res.timings) >= {
        "split",
        "target",
        "reference",
        "shadow",
        "distilled",
        "leave_one_out",
        "attacks",
    }
    assert res.models_trained == {
        "target": 1,
        "reference": CFG.n_reference,
        "shadow": 2,
        "distilled": 2,
        "leave_one_out": 2 * (1 + CFG.leave_one_out_sample // 2),
    }
    # population-calibrated thresholds of the per-record attacks
    for name in ("reference", "distillation", "leave-one-out", "lira-offline"):
        p = res.scores[name].params
        assert p["threshold_calibration"] == "population", name
        assert res.scores[name].threshold == p["threshold"], name
    # R's references (the shadow models) train on max(members, half) of the population:
    # the rest, and what they left out of the first part, calibrates R
    n_source = max(int(res.membership.sum()), CFG.n_population // 2)
    assert res.scores["reference"].params["n_calibration"] >= CFG.n_population - n_source
    # distillation keeps the population outside its source (the same size) undistilled
    assert res.scores["distillation"].params["n_calibration"] >= CFG.n_population - n_source
    assert res.game.name == "fixed-model" and "Def. 3.2" in res.game.definition
    json.dumps(res.to_dict())  # JSON-able


def test_population_disjoint_and_pool_reproducible(stored_run, digits) -> None:  # type: ignore[no-untyped-def]
    _, res = stored_run
    assert not set(res.population_ids.tolist()) & set(res.record_ids.tolist())
    np.testing.assert_array_equal(target_pool_ids(digits, CFG), res.record_ids)


def test_target_membership_is_one_independent_fair_coin_per_record(digits) -> None:  # type: ignore[no-untyped-def]
    """Steinke et al.'s one-run bound (privaudit.stats.attack_bounds) assumes independent
    coins: the number of members must vary as Binomial(n, 1/2) over membership seeds (a
    fixed-size half, the earlier draw, has variance 0), and each record's bit must be a
    fair coin independent of its neighbour's."""
    from privaudit.membership.ye_split import draw_membership, draw_pool

    cfg = dataclasses.replace(CFG, n_target_pool=200)
    pool, _ = draw_pool(digits, cfg, cfg.component_seeds())
    bits = np.array(
        [
            draw_membership(pool, cfg, {**cfg.component_seeds(), "membership": s})
            for s in range(2000)
        ]
    )
    n = pool.n_records
    counts = bits.sum(axis=1)
    # mean n/2 and variance n/4 (Binomial); both within 5 standard errors over 2,000 draws
    assert abs(counts.mean() - n / 2) < 5 * np.sqrt(n / 4 / 2000)
    assert abs(counts.var() / (n / 4) - 1) < 5 * np.sqrt(2 / 1999)
    # each record a fair coin; neighbouring records uncorrelated
    assert np.all(np.abs(bits.mean(axis=0) - 0.5) < 5 * np.sqrt(0.25 / 2000))
    r = np.corrcoef(bits[:, 0], bits[:, 1])[0, 1]
    assert abs(r) < 5 / np.sqrt(2000)


def test_reference_models_respect_keep_matrix(stored_run) -> None:  # type: ignore[no-untyped-def]
    root, res = stored_run
    mm = res.membership_matrix
    assert mm.model_ids[0] == "target"
    np.testing.assert_array_equal(mm.row("target"), res.membership)
    # balanced over the reference models only: every pool record IN for exactly
    # n_reference / 2 of them, whatever its target bit (no label leak via the layout)
    assert np.all(mm.keep[1:].sum(axis=0) == CFG.n_reference // 2)
    # each reference model was trained on exactly the records of its row (store keys)
    trained = {
        json.dumps(m["key_parts"]["train_ids"], sort_keys=True)
        for m in ArtifactStore(root).manifests()
        if m["key_parts"].get("artifact") == "model" and m["key_parts"]["role"] == "reference"
    }
    expected = {
        json.dumps(
            json.loads(canonical_json({"x": res.record_ids[mm.row(rid)]}))["x"], sort_keys=True
        )
        for rid in mm.model_ids[1:]
    }
    assert trained == expected and len(expected) == CFG.n_reference


def test_store_reuse_no_retraining(stored_run, digits) -> None:  # type: ignore[no-untyped-def]
    root, first = stored_run
    second = run_experiment(digits, _trainer(), CFG, store=root, progress=False)
    assert sum(second.models_trained.values()) == 0
    assert second.models_loaded == first.models_trained
    for name in first.scores:
        np.testing.assert_array_equal(first.scores[name].scores, second.scores[name].scores)
    assert second.train_accuracy == first.train_accuracy


def test_changed_setting_is_not_served_stale(stored_run, digits) -> None:  # type: ignore[no-untyped-def]
    root, first = stored_run
    cfg = dataclasses.replace(CFG, attacks=("reference",))
    other = run_experiment(digits, _trainer(C=0.01), cfg, store=root, progress=False)
    # R's reference models are the shadow models (trained on population data)
    assert other.models_trained == {"target": 1, "shadow": CFG.n_shadow}
    assert not np.array_equal(other.scores["reference"].scores, first.scores["reference"].scores)


def test_same_seed_same_scores_and_parallel_equals_inline(digits) -> None:  # type: ignore[no-untyped-def]
    cfg = dataclasses.replace(
        CFG, attacks=("reference", "rmia-offline"), n_target_pool=100, n_population=100
    )
    a = run_experiment(digits, _trainer(), cfg, progress=False)
    a2 = run_experiment(digits, _trainer(), cfg, progress=False)
    b = run_experiment(digits, _trainer(), dataclasses.replace(cfg, n_jobs=2), progress=False)
    c = run_experiment(digits, _trainer(), dataclasses.replace(cfg, seed=4), progress=False)
    for name in cfg.attacks:
        np.testing.assert_array_equal(a.scores[name].scores, a2.scores[name].scores)
        # worker processes run BLAS single-threaded: equal up to floating-point reduction order
        np.testing.assert_allclose(
            a.scores[name].scores, b.scores[name].scores, rtol=1e-9, atol=1e-12
        )
    assert not np.array_equal(a.record_ids, c.record_ids)


def test_only_needed_models_are_trained(digits) -> None:  # type: ignore[no-untyped-def]
    cfg = dataclasses.replace(CFG, attacks=("loss", "population"))
    res = run_experiment(digits, _trainer(), cfg, progress=False)
    assert res.models_trained == {"target": 1}
    assert set(res.timings) == {"split", "target", "attacks"}


def test_force_membership_overrides_target_row_only(digits) -> None:  # type: ignore[no-untyped-def]
    cfg = dataclasses.replace(CFG, attacks=("loss",))
    base = run_experiment(digits, _trainer(), cfg, progress=False)
    rid = base.record_ids[0]
    flipped = not bool(base.membership[0])
    res = run_experiment(
        digits,
        _trainer(),
        dataclasses.replace(cfg, force_membership=((rid, flipped),)),
        progress=False,
    )
    assert bool(res.membership[0]) is flipped
    np.testing.assert_array_equal(res.membership[1:], base.membership[1:])
    np.testing.assert_array_equal(res.membership_matrix.keep[1:], base.membership_matrix.keep[1:])


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"n_reference": 5}, "n_reference"),
        ({"n_reference": 2}, "n_reference"),
        ({"n_shadow": 0}, "n_shadow"),
        ({"attacks": ("nope",)}, "attacks"),
        ({"attacks": ()}, "attacks"),
        ({"alpha": 1.5}, "alpha"),
        ({"signals": ("bogus",)}, "signals"),
        ({"attack_params": {"shadow": {}}, "attacks": ("loss",)}, "attack_params"),
        ({"seed": -1}, "seed"),
        ({"n_leave_one_out": 1}, "n_leave_one_out"),
    ],
)
def test_config_validation_names_the_field(change: dict, field: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(InvalidInputError, match=f"^{field}"):
        dataclasses.replace(CFG, **change)


def test_dataset_too_small_is_clear(digits) -> None:  # type: ignore[no-untyped-def]
    cfg = dataclasses.replace(CFG, n_target_pool=1500, n_population=1000)
    with pytest.raises(InvalidInputError, match="n_target_pool"):
        run_experiment(digits, _trainer(), cfg, progress=False)


def test_bad_arguments(digits, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidInputError, match="dataset"):
        run_experiment("digits", _trainer(), CFG)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="trainer"):
        run_experiment(digits, object(), CFG)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="config"):
        run_experiment(digits, _trainer(), {"seed": 1})  # type: ignore[arg-type]
