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
    # 8 reference models: 4 fit the attack, 4 play the target
    assert (ce["n_map_references"], ce["n_pseudo_targets"], ce["n_reference_models"]) == (4, 4, 8)
    assert ce["fprs"] == [0.01, 0.001]
    (lira,) = ce["attacks"]  # the run's only reference-model attack of the family
    assert lira["name"] == "lira-online"
    for fig in lira["figures"]:
        assert "pooled" in fig["pooled"]["label"]
        assert "deconvolved" in fig["calibrated"]["label"]
        assert "no finite-population correction" in fig["calibrated_plug_in"]["label"]
        # 4 pseudo-targets: 2 or 3 OUT scores per record with an IN one, too few to
        # deconvolve (4 needed)
        assert fig["calibrated"]["tpr"] is None and "n/a" in fig["calibrated"]["note"]
        assert fig["calibrated"]["ci"] is None and fig["calibrated"]["ci_replicates"] == 0
        assert fig["n_out_median"] == 2 and 0.0 <= fig["fitted_threshold"]["tpr"] <= 1.0
        assert fig["calibrated_plug_in"]["fpr"] > fig["fpr"]
    # 4 pseudo-targets x 80 non-members: no pooled TPR at 0.1% FPR (below one false
    # positive, as in the attacks table); the fitted-threshold one exists
    at_01 = lira["figures"][1]
    assert at_01["pooled"]["tpr"] is None and "n/a" in at_01["pooled"]["note"]
    assert at_01["pooled"]["record_fpr_sd"] is None
    assert at_01["fitted_threshold"]["tpr"] is not None
    html = (small_run / "report.html").read_text()
    for text in (
        "Pooled and per-record calibrated TPR at FPR",
        "pooled TPR",
        "calibrated TPR, plug-in",
        "fitted-threshold TPR",
        "record FPR spread",
    ):
        assert text in html, text
    text = summary_text(results)
    assert "4 reference models as targets, attack fitted on 4" in text
    assert "TPR at 1% FPR" in text and "TPR at 0.1% FPR" in text and "cal [95% CI]" in text
    # the schema holds the section to its shape
    for key in ("calibrated_plug_in", "fitted_threshold"):
        bad = copy.deepcopy(results)
        del bad["calibrated_evaluation"]["attacks"][0]["figures"][0][key]
        with pytest.raises(InvalidInputError):
            validate_results(bad)


def test_the_calibrated_interval_is_shown_and_held_to_its_shape(small_run: Path) -> None:
    """A calibrated figure with its interval (as with 4 or more OUT scores a record): in the
    report and the summary beside the figure, and the schema holds it to two rates."""
    from privaudit.report.html import render_html
    from privaudit.report.results import RESULTS_FILE, SCORES_FILE, ScoreTable

    results = json.loads((small_run / RESULTS_FILE).read_text())
    fig = results["calibrated_evaluation"]["attacks"][0]["figures"][0]
    fig["calibrated"].update(tpr=0.4321, ci=[0.4012, 0.4655], ci_replicates=50)
    fig["calibrated"].pop("note", None)
    validate_results(results)
    html = render_html(results, ScoreTable.load(small_run / SCORES_FILE))
    assert "43.21%" in html and "[40.12%, 46.55%]" in html
    assert "jackknife over the evaluation models" in html
    text = " ".join(summary_text(results).split())
    assert "43.2% [40.1, 46.6]" in text and "evaluation models resampled" in text
    # one table per FPR: the widest interval and the longest attack name fit in 80 columns
    fig["calibrated"].update(tpr=0.0015, ci=[0.0, 0.9603])
    results["calibrated_evaluation"]["attacks"][0]["name"] = "informia-offline"
    for width in (80, 120):
        narrow = summary_text(results, width=width)
        assert "…" not in narrow and max(map(len, narrow.splitlines())) <= width
        assert "informia-offline" in narrow and "0.1% [0.0, 96.0]" in narrow
    for bad_ci in ([0.4], [0.4, 1.2], "0.4"):
        bad = copy.deepcopy(results)
        bad["calibrated_evaluation"]["attacks"][0]["figures"][0]["calibrated"]["ci"] = bad_ci
        with pytest.raises(InvalidInputError):
            validate_results(bad)
