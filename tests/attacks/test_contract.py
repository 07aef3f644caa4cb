"""Contract suite run over every registered attack."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from privaudit.attacks import ATTACKS, AttackData, attack_names, required_inputs, run_attack
from privaudit.errors import InvalidInputError
from privaudit.records import AttackScores

from .conftest import World, make_world, pair_auc

ALL = attack_names()
BUILTIN = (
    "loss",
    "population",
    "shadow",
    "reference",
    "distillation",
    "distillation-logits",
    "leave-one-out",
    "lira-online",
    "lira-offline",
    "rmia-online",
    "rmia-offline",
    "calibrated-loss",
    "learned",
    "label-only",
    "bavaria-online",
    "bavaria-offline",
    "informia-online",
    "informia-offline",
)


def _labels(world: World, res: AttackScores) -> np.ndarray:
    pos = {rid: i for i, rid in enumerate(world.data.record_ids.tolist())}
    return world.member[[pos[r] for r in res.record_ids.tolist()]]


def test_every_builtin_attack_is_registered_in_design_order() -> None:
    assert ALL[: len(BUILTIN)] == BUILTIN


@pytest.mark.parametrize("name", ALL)
def test_higher_score_means_member_on_leaky_model(world: World, name: str) -> None:
    res = run_attack(name, world.data, seed=0)
    assert isinstance(res, AttackScores)
    assert res.attack == name
    member = _labels(world, res)
    assert member.any() and (~member).any()
    auc = pair_auc(res.scores, member)
    assert auc > 0.7, f"{name}: AUC {auc:.3f}"
    # A score that ignored the data, or had the wrong sign, would fail here:
    assert pair_auc(-res.scores, member) < 0.3


@pytest.mark.parametrize("name", ALL)
def test_inputs_not_mutated_and_read_only(name: str) -> None:
    w = make_world(1, n=120, n_pop=150)
    before = copy.deepcopy(w.data)
    run_attack(name, w.data, seed=0)
    for field in ("target", "reference", "reference_population", "population_target", "shadow"):
        a, b = getattr(w.data, field), getattr(before, field)
        for sig in a:
            np.testing.assert_array_equal(a[sig].values, b[sig].values)
            assert not a[sig].values.flags.writeable
    assert not w.data.labels.flags.writeable
    assert not w.data.record_ids.flags.writeable
    np.testing.assert_array_equal(w.data.labels, before.labels)


def test_attack_data_copies_caller_arrays() -> None:
    w = make_world(2, n=50, n_pop=60)
    labels = np.array(w.data.labels)  # writable copy owned by the caller
    ids = np.array(w.data.record_ids)
    d = AttackData(record_ids=ids, labels=labels, target=w.data.target)
    labels[:] = 1 - labels
    ids[0] = "changed"
    np.testing.assert_array_equal(d.labels, w.data.labels)
    assert d.record_ids[0] == w.data.record_ids[0]
    with pytest.raises(ValueError):
        d.labels[0] = 5


@pytest.mark.parametrize("name", ALL)
def test_same_seed_same_scores(world: World, name: str) -> None:
    a = run_attack(name, world.data, seed=123)
    b = run_attack(name, world.data, seed=123)
    np.testing.assert_array_equal(a.scores, b.scores)
    np.testing.assert_array_equal(a.record_ids, b.record_ids)
    assert a.params == b.params


@pytest.mark.parametrize("name", ALL)
def test_params_record_settings_and_serialise(world: World, name: str) -> None:
    res = run_attack(name, world.data, seed=7)
    assert res.params["signal"] == required_inputs(name).signals[0]
    assert res.params["seed"] == 7
    assert "n_models" in res.params
    json.dumps(res.to_dict())  # JSON-able
    back = AttackScores.from_dict(json.loads(json.dumps(res.to_dict())))
    np.testing.assert_array_equal(back.scores, res.scores)


@pytest.mark.parametrize("name", ALL)
def test_alpha_threshold_contract(world: World, name: str) -> None:
    spec = ATTACKS[name]
    if not spec.alpha_threshold:
        with pytest.raises(InvalidInputError, match="alpha"):
            run_attack(name, world.data, alpha=0.1)
        return
    res = run_attack(name, world.data, alpha=0.1)
    assert res.alpha == 0.1
    if res.params.get("score_kind") == "statistic":
        # not a p-value: the threshold is the conformal quantile of population scores
        assert res.params["threshold_calibration"] == "population"
        assert res.threshold == res.params["threshold"] and res.params["n_calibration"] > 0
        dec = res.decisions()
        member = _labels(world, res)
        assert dec[member].mean() > dec[~member].mean()
        assert dec[~member].mean() < 0.1 + 4 * np.sqrt(0.09 / (~member).sum())
        return
    # the score is -p (threshold -alpha) or, offline LiRA's, -log p (threshold -log alpha)
    log_p = res.params.get("score_kind") == "-log p-value"
    paper = float(-np.log(0.1)) if log_p else -0.1
    if res.params.get("threshold_calibration", "smoothed") == "smoothed":
        assert res.threshold == pytest.approx(paper, rel=1e-15)
    else:  # population-calibrated (conformal) threshold, recorded in params
        assert res.threshold == res.params["threshold"] and res.params["n_calibration"] > 0
        smoothed = run_attack(name, world.data, alpha=0.1, threshold_calibration="smoothed")
        assert smoothed.threshold == pytest.approx(paper, rel=1e-15)
        np.testing.assert_array_equal(smoothed.scores, res.scores)  # same scores, same ROC
    dec = res.decisions()
    assert res.threshold is not None
    np.testing.assert_array_equal(dec, res.scores >= res.threshold)
    # p-value scores lie in [-1, 0] (-log p in [0, inf)), except the linear smoothing's
    # tie-free extension beyond the out-world sample (thresholds.OutWorld.linear_score)
    if log_p:
        assert res.scores.min() >= 0.0 and np.all(np.isfinite(res.scores))
    elif res.params.get("smoothing") != "linear":
        assert res.scores.min() >= -1.0 and res.scores.max() <= 0.0
    member = _labels(world, res)
    # alpha-attack: flags more members than non-members on the leaky world
    assert dec[member].mean() > dec[~member].mean()


@pytest.mark.parametrize("name", ALL)
def test_missing_required_input_is_a_clear_error(name: str) -> None:
    w = make_world(3, n=40, n_pop=50)
    req = required_inputs(name)
    minimal = AttackData(record_ids=w.data.record_ids, labels=w.data.labels, target=w.data.target)
    if req.fields == ("target",):
        run_attack(name, minimal)
        return
    with pytest.raises(InvalidInputError, match=r"expected"):
        run_attack(name, minimal)


def test_required_inputs_lists_fields_and_signal() -> None:
    r = required_inputs("rmia-offline")
    assert "reference_population" in r.fields and r.signals == ("loss",)
    assert required_inputs("reference", signal="prob_true").signals == ("prob_true",)
    assert required_inputs("lira-online").signals == ("logit_confidence",)
    with pytest.raises(InvalidInputError, match="signal"):
        required_inputs("rmia-online", signal="prob_true")
    with pytest.raises(InvalidInputError, match="attack"):
        required_inputs("nope")


def test_unknown_parameter_and_attack(world: World) -> None:
    with pytest.raises(InvalidInputError, match="params"):
        run_attack("reference", world.data, smoothingg="linear")
    with pytest.raises(InvalidInputError, match="attack"):
        run_attack("lira", world.data)
    with pytest.raises(InvalidInputError, match="smoothing"):
        run_attack("reference", world.data, smoothing="spline")
    with pytest.raises(InvalidInputError, match="alpha"):
        run_attack("reference", world.data, alpha=1.5)
    with pytest.raises(InvalidInputError, match="data"):
        run_attack("loss", {"target": 1})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "signal", ["loss", "prob_true", "logit_confidence", "entropy", "modified_entropy"]
)
def test_threshold_attacks_accept_every_signal(world: World, signal: str) -> None:
    for name in ("population", "reference", "distillation", "distillation-logits"):
        res = run_attack(name, world.data, signal=signal)
        assert res.params["signal"] == signal
        assert pair_auc(res.scores, world.member) > 0.6, (name, signal)


@pytest.mark.parametrize("smoothing", ["linear", "logit-gaussian", "min", "average"])
def test_every_smoothing_runs_through_the_attacks(world: World, smoothing: str) -> None:
    for name in ("population", "shadow", "reference", "distillation", "leave-one-out"):
        res = run_attack(name, world.data, alpha=0.05, smoothing=smoothing)
        assert res.params["smoothing"] == smoothing
        assert pair_auc(res.scores, _labels(world, res)) > 0.7
