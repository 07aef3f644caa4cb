"""What the terminal summary says (issue 29, items 4 and 5): an achieved FPR off alpha is
marked in plain text as the report's red cell is, and the models line says where models
came from (the cache's folder, the demo's default one, a provided target's own file)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from privaudit.cli import main
from privaudit.membership.cli import DEMO_CACHE_DIR, _models_line, render_summary, summary_lines

ATTACK: dict[str, Any] = {
    "name": "population",
    "auc": 0.61,
    "tpr_at_fpr": {"0.001": None, "0.01": 0.02},
    "n_positives": 600,
    "n_negatives": 600,
    "achieved_fpr": 0.307,
    "achieved_fpr_ci": [0.27, 0.345],
    "alpha_within_error": False,
    "alpha_guarantee": "per-target",
    "n_reference_models": 0,
}
RESULTS: dict[str, Any] = {
    "target": {
        "train_accuracy": 0.99,
        "test_accuracy": 0.8,
        "n_members": 600,
        "n_non_members": 600,
    },
    "settings": {
        "alpha": 0.05,
        "model": {"kind": "mlp"},
        "dataset": {"name": "adult"},
        "models_trained": {"target": 1, "reference": 8},
        "models_loaded": {"target": 0, "reference": 0},
        "cache_dir": None,
        "executor": "local",
    },
    "attacks": [
        ATTACK,
        {**ATTACK, "name": "reference", "achieved_fpr": 0.012, "achieved_fpr_ci": [0.005, 0.024]},
        {**ATTACK, "name": "lira-offline", "achieved_fpr": 0.05, "alpha_within_error": True},
    ],
}


def test_an_achieved_fpr_off_alpha_is_marked_in_plain_text(
    capsys: pytest.CaptureFixture[str],
) -> None:
    render_summary(copy.deepcopy(RESULTS), None, width=80)
    out = capsys.readouterr().out  # not a terminal: no colour, the mark must say it
    rows = {line.split()[0]: line for line in out.splitlines() if line.strip()}
    assert "30.7%^ [27.0, 34.5]" in rows["population"]
    assert "1.2%v [0.5, 2.4]" in rows["reference"]
    assert "5.0% [27.0, 34.5]" in rows["lira-offline"] and "^" not in rows["lira-offline"]
    notes, _ = summary_lines(RESULTS)
    (note,) = [n for n in notes if n.startswith("^ / v")]
    assert note.endswith(
        "population, reference (each of the 3 checks at 95%: about 0.2 such flags are "
        "expected on average by chance alone)"
    )


def test_an_unchecked_achieved_fpr_is_neither_green_nor_red(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """alpha_within_error None (e.g. members and non-members with different OUT-model
    counts): marked ?, named with the reason, not counted as off alpha, and the model card
    says "not checked" instead of "off alpha"."""
    from privaudit.report.model_card import _attack_rows, _caveats

    res = copy.deepcopy(RESULTS)
    res["attacks"][0].update(alpha_within_error=None, alpha_check="no check: OUT counts differ")
    render_summary(res, None, width=100)
    out = capsys.readouterr().out
    rows = {line.split()[0]: line for line in out.splitlines() if line.strip()}
    assert "30.7%? [27.0, 34.5]" in rows["population"]
    notes, _ = summary_lines(res)
    (off,) = [n for n in notes if n.startswith("^ / v")]
    assert "population" not in off and "each of the 2 checks" in off
    (q,) = [n for n in notes if n.startswith("?:")]
    assert q.endswith("population (no check: OUT counts differ)")
    res.setdefault("audits", [])
    card_rows = [" ".join(r) for r in _attack_rows(res, ["0.01"])]
    assert any("(not checked)" in r and "population" in r for r in card_rows)
    assert not any("population" in c for c in _caveats(res, ["0.01"]) if "off alpha" in c)


def test_models_line_names_the_cache_or_its_absence() -> None:
    s = dict(RESULTS["settings"])
    assert "9 trained (no cache: set cache_dir to keep models for a rerun)" in _models_line(s)
    assert "9 trained (no cache: --no-cache)" in _models_line(s, cache_note="--no-cache")
    s.update(cache_dir=".privaudit-cache", models_loaded={"target": 1, "reference": 8})
    s["models_trained"] = {"target": 0, "reference": 0}
    line = _models_line(s, cache_note="the demo's default folder, in the working directory")
    assert "all 9 models loaded from the cache at .privaudit-cache (the demo's default" in line
    s["models_trained"] = {"target": 0, "reference": 2}
    s["models_loaded"] = {"target": 0, "reference": 0}
    assert "2 trained, stored in the cache at .privaudit-cache" in _models_line(s)


def test_a_provided_target_is_read_from_its_file_not_the_cache() -> None:
    s = {**RESULTS["settings"], "models_loaded": {"target": 1, "reference": 0}}
    s["models_trained"] = {"target": 0, "recipe_check": 1, "reference": 8}
    target = {"origin": "provided", "path": "/data/own/model.skops"}
    line = _models_line(s, target)
    assert line.startswith("Models: the target read from model.skops; 9 trained (no cache")
    assert "loaded from the cache" not in line


def test_demo_help_names_its_default_cache_folder(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert f"the folder {DEMO_CACHE_DIR} in the working directory" in out.replace("│ ", "")
    assert Path(str(DEMO_CACHE_DIR)).name == ".privaudit-cache"
