"""The full `privaudit demo` (minutes): the issue's done-when criteria on the demo target."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from privaudit.cli import main


@pytest.mark.slow
def test_full_demo_reference_attacks_beat_population_and_shadow(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    assert main(["demo", "--out", str(out), "--n-jobs", "2", "--no-progress"]) == 0
    results = json.loads((out / "results.json").read_text())
    by = {a["name"]: a for a in results["attacks"]}
    assert results["target"]["train_accuracy"] > results["target"]["test_accuracy"] + 0.1
    assert by["reference"]["n_negatives"] >= 1000  # TPR at 0.1% FPR is reported
    baseline = max(by["population"]["tpr_at_fpr"]["0.01"], by["shadow"]["tpr_at_fpr"]["0.01"])
    # Reference-based attacks are clearly stronger at 1% FPR. (Attack D is not checked
    # here: on this target it does not beat P; see the report to the lead.)
    for name in ("reference", "lira-online", "lira-offline", "rmia-online", "rmia-offline"):
        assert by[name]["tpr_at_fpr"]["0.01"] >= 1.5 * baseline, name
    # the population and shadow attacks' achieved FPR is within binomial error of alpha
    for name in ("population", "shadow"):
        assert by[name]["alpha_within_error"], name
