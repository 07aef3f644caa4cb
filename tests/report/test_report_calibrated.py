"""The calibrated evaluation (Jälkö et al. 2026) in a run's results.json, report and summary."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from privaudit.errors import InvalidInputError
from privaudit.membership.summary import summary_text
from privaudit.report.results import validate_results


def test_small_run_reports_pooled_and_calibrated_tpr_side_by_side(small_run: Path) -> None:
    results = json.loads((small_run / "results.json").read_text())
    ce = results["calibrated_evaluation"]
    assert ce["n_pseudo_targets"] == ce["n_reference_models"] == 4
    assert ce["fprs"] == [0.01, 0.001]
    (lira,) = ce["attacks"]  # the run's only reference-model attack of the family
    assert lira["name"] == "lira-online"
    for fig in lira["figures"]:
        assert "pooled" in fig["pooled"]["label"]
        assert "finite-population corrected" in fig["calibrated"]["label"]
        assert "no finite-population correction" in fig["calibrated_plug_in"]["label"]
        assert 0.0 <= fig["calibrated"]["tpr"] <= 1.0
    # 4 pseudo-targets x 80 non-members: no pooled TPR at 0.1% FPR (below one false
    # positive, as in the attacks table); the per-record calibrated one exists
    at_01 = lira["figures"][1]
    assert at_01["pooled"]["tpr"] is None and "n/a" in at_01["pooled"]["note"]
    assert at_01["calibrated"]["tpr"] is not None
    html = (small_run / "report.html").read_text()
    for text in (
        "Pooled and per-record calibrated TPR at FPR",
        "pooled TPR",
        "calibrated TPR, plug-in",
        "finite-population corrected",
    ):
        assert text in html, text
    text = summary_text(results)
    assert (
        "TPR with 4 reference models each the target" in text
        and "pool@1%" in text
        and "cal@1%" in text
    )
    # the schema holds the section to its shape
    bad = copy.deepcopy(results)
    del bad["calibrated_evaluation"]["attacks"][0]["figures"][0]["calibrated_plug_in"]
    with pytest.raises(InvalidInputError):
        validate_results(bad)
