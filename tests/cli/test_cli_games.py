"""Every game of Ye et al. (2022, Def. 3.1-3.4) reachable from the config and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from privaudit.cli import main
from privaudit.membership.config import ConfigError, config_from_dict, with_game
from privaudit.report import ScoreTable

SMALL = {
    "dataset": "digits",
    "model": {"kind": "logistic", "params": {"C": 100.0, "max_iter": 200}},
    "attacks": ["population", "reference", "calibrated-loss"],
    "sizes": {"n_target_pool": 120, "n_population": 240},
    "models": {"n_reference": 4},
    "alpha": 0.1,
    "seed": 2,
    "n_jobs": 1,
    "output_dir": "report",
}


def _run(tmp_path: Path, *argv: str, **over: object) -> dict:  # type: ignore[type-arg]
    p = tmp_path / "audit.yaml"
    p.write_text(yaml.safe_dump({**SMALL, **over}))
    assert main(["run", str(p), "--no-progress", *argv]) == 0
    rep = tmp_path / "report"
    html = (rep / "report.html").read_text()
    assert "Threat model" in html
    results = json.loads((rep / "results.json").read_text())
    assert results["game"]["id"] in html
    return results


def test_default_game_is_def_3_2_and_the_card_says_so(tmp_path: Path) -> None:
    r = _run(tmp_path)
    tm = r["threat_model"]
    assert r["game"]["id"] == "def-3.2" and tm["game"]["id"] == "def-3.2"
    assert tm["game"]["n_trials"] == 1
    assert any("target training set D" in f for f in tm["game"]["fixed"])
    names = [a["name"] for a in tm["attacks"]]
    assert names == SMALL["attacks"]
    cal = next(a for a in tm["attacks"] if a["name"] == "calibrated-loss")
    assert any("Watson" in x for x in cal["assumptions"]) and cal["knows"]


def test_def_3_1_pools_several_targets(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    r = _run(tmp_path, "--game", "def-3.1", "--game-trials", "2")
    assert "def-3.1" in capsys.readouterr().out
    g = r["game"]
    assert g["id"] == "def-3.1" and g["name"] == "average" and len(g["trials"]) == 2
    # two independent targets: different membership seeds, every pool record a draw in each
    assert g["trials"][0]["seeds"]["membership"] != g["trials"][1]["seeds"]["membership"]
    pop = next(a for a in r["attacks"] if a["name"] == "population")
    assert pop["n_positives"] + pop["n_negatives"] == 2 * 120
    assert r["target"]["n_trials"] == 2
    assert r["settings"]["models_trained"]["target"] == 2
    assert main(["verify", str(tmp_path / "report")]) == 0  # the pooled numbers recompute
    # the per-attack one-run bounds say that they rest on pooled draws of 2 trials
    assert all("pooled over 2 trials" in a["sampling_assumption"] for a in r["audits"])


def test_def_3_4_draws_the_fixed_records_only(tmp_path: Path) -> None:
    over = {"game": {"name": "def-3.4", "n_trials": 4, "n_fixed_records": 2}}
    r = _run(tmp_path, **over)  # type: ignore[arg-type]
    g = r["game"]
    assert g["id"] == "def-3.4" and len(g["fixed_records"]) == 2
    for a in r["attacks"]:
        assert a["n_positives"] + a["n_negatives"] == 8
        # per-trial thresholds: the achieved FPR counts each draw at its own trial's
        assert a["achieved_fpr"] is not None and len(a["params"]["trial_thresholds"]) == 4
    # Def. 3.4 fixes D and the attacker's models: the reference models train once
    assert r["settings"]["models_trained"]["reference"] == 4
    assert r["settings"]["models_trained"]["target"] == 4
    assert any("fixed record" in f for f in r["threat_model"]["game"]["fixed"])
    # each trial calibrated its own threshold: scores.npz holds margins over them, so
    # "margin >= 0" is each draw's own decision, and the bundle verifies end to end
    table = ScoreTable.load(tmp_path / "report")
    margins = 0
    for a in r["attacks"]:
        if len(set(a["params"]["trial_thresholds"])) > 1:  # population-calibrated per trial
            assert a["threshold"] == 0.0 and a["params"]["pooled_scores"].startswith("margin")
            margins += 1
        flagged = table.scores[a["name"]] >= a["threshold"]
        assert np.isclose(flagged[~table.member].mean(), a["achieved_fpr"])
    assert margins >= 2  # reference and calibrated-loss calibrate on each trial's target
    assert main(["verify", str(tmp_path / "report")]) == 0


@pytest.mark.slow
def test_def_3_3_resamples_the_dataset(tmp_path: Path) -> None:
    over = {"game": {"name": "def-3.3", "n_trials": 4, "n_fixed_records": 2}}
    r = _run(tmp_path, **over)  # type: ignore[arg-type]
    assert r["game"]["id"] == "def-3.3" and r["game"]["name"] == "fixed-record"
    for a in r["attacks"]:
        assert a["n_positives"] + a["n_negatives"] == 8
    # Def. 3.3 resamples D (and the attacker's models with it): retrained in every trial
    assert r["settings"]["models_trained"]["reference"] == 16
    assert r["settings"]["models_trained"]["target"] == 4


def test_bad_game_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "audit.yaml"
    p.write_text(yaml.safe_dump(SMALL))
    assert main(["run", str(p), "--game", "def-3.5"]) == 2
    assert "game" in capsys.readouterr().err
    assert not (tmp_path / "report").exists()


def test_game_config_validation() -> None:
    base = {k: v for k, v in SMALL.items() if k != "output_dir"}
    cfg = config_from_dict({**base, "game": "def-3.3"})
    assert cfg.game.engine_name() == "fixed-record" and cfg.game.definition() == "def-3.3"
    assert config_from_dict({**base, "game": "fixed-model"}).game.definition() == "def-3.2"
    with pytest.raises(ConfigError, match="fixed_records"):
        config_from_dict({**base, "game": {"name": "def-3.1", "fixed_records": [1]}})
    with pytest.raises(ConfigError, match="n_trials"):
        config_from_dict({**base, "game": {"name": "def-3.1", "n_trials": 0}})
    with pytest.raises(ConfigError, match="n_trials"):
        with_game(cfg, n_trials=0)
    assert with_game(cfg, "def-3.1").game.fixed_records is None
    assert np.isclose(cfg.alpha, 0.1)
