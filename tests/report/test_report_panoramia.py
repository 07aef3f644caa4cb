"""The PANORAMIA results section and report: schema, HTML section, bundle verification."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from panoramia_section import panoramia_fixture

from privaudit.cli.verify_cmd import verify_bundle
from privaudit.errors import InvalidInputError
from privaudit.panoramia.report import (
    PANORAMIA_SCORES_FILE,
    RMRN_SCORES_FILE,
    implied_precision,
    panoramia_results,
    write_panoramia_report,
)
from privaudit.report import validate_results
from privaudit.report.bundle import make_manifest
from privaudit.report.results import ScoreTable

SETTINGS = {"dataset": {"name": "table"}, "model": {"target": {"kind": "sklearn"}}}
TARGET = {"train_accuracy": None, "test_accuracy": None}


def _results(
    rmrn: bool = True, baseline_shift: float = 0.4
) -> tuple[dict, ScoreTable, ScoreTable | None]:
    section, table, rm = panoramia_fixture(rmrn=rmrn, baseline_shift=baseline_shift)
    doc = panoramia_results(section, table, seed=0, settings=SETTINGS, target=TARGET, rmrn=rmrn)
    return doc, table, rm


def test_results_validate_and_name_the_files() -> None:
    doc, table, _ = _results()
    validate_results(doc)
    assert doc["files"] == {"scores": PANORAMIA_SCORES_FILE, "rmrn_scores": RMRN_SCORES_FILE}
    assert [a["name"] for a in doc["attacks"]] == ["panoramia-mia", "panoramia-baseline"]
    assert doc["audits"] == []  # eps_tilde is not a DP lower bound unless c_lb is tight
    assert doc["target"]["n_members"] == int(table.member.sum())
    assert "only if c_lb is tight" in doc["panoramia"]["threat_model"]
    mia = doc["attacks"][0]
    assert mia["auc"] > doc["attacks"][1]["auc"] > 0.5  # the fixture's MIA is stronger


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("bounds", "c_lb"), -0.1),
        (("bounds", "mia"), {"r": 3}),
        (("sizes", "m"), 1.5),
        (("comparisons", "rmrn"), {"eps_lb": 1.0}),
        (("curves", "mia", "precision"), [1.5]),
    ],
)
def test_schema_rejects_a_broken_section(path: tuple[str, ...], value: object) -> None:
    doc, _, _ = _results()
    node = doc["panoramia"]
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    with pytest.raises(InvalidInputError, match=r"results\.panoramia"):
        validate_results(doc)


def test_report_renders_the_section_and_verify_recomputes(tmp_path: Path) -> None:
    doc, table, rm = _results()
    manifest = make_manifest(
        kind="membership-inference",
        command="run_panoramia_audit",
        config={},
        seeds={"root": 0},
        dataset_fingerprint=None,
    )
    out = write_panoramia_report(tmp_path / "rep", doc, table, rmrn_table=rm, bundle=manifest)
    assert sorted(p.name for p in out.iterdir()) == [
        "bundle.json",
        PANORAMIA_SCORES_FILE,
        "report.html",
        "results.json",
        RMRN_SCORES_FILE,
    ]
    html = (out / "report.html").read_text()
    b = doc["panoramia"]["bounds"]
    assert 'id="panoramia"' in html and "Threat model." in html
    assert f"{b['eps_tilde']:.3f}" in html and f"{b['c_lb']:.3f}" in html
    assert f"{implied_precision(b['c_plus_eps_lb']):.3f}" in html
    # ROC x2, precision-recall, lb vs recall: all SVG
    assert html.count("data:image/svg+xml;base64,") >= 4 and "data:image/png" not in html
    assert "RM;RN" in html and "O(1)" in html
    assert "MIA (x + target loss)" in html and "baseline (x + helper loss)" in html
    report = verify_bundle(out)
    assert report.ok, [c for c in report.checks if c.status == "mismatch"]
    names = {c.name for c in report.checks if c.status == "ok"}
    assert "panoramia.bounds.eps_tilde" in names and "panoramia.comparisons.rmrn.eps_lb" in names
    assert "panoramia.bounds.cap" in names
    assert "panoramia-cap-warning" not in html  # c_lb far below its cap
    assert "panoramia-size-warning" not in html  # m = 400 test slots


@pytest.mark.parametrize(
    ("m", "rmrn", "words"),
    [
        (60, True, "(PANORAMIA m = 60, RM;RN m = 60, O(1) m = 60; fewer than 100)"),
        (60, False, "(PANORAMIA m = 60; fewer than 100)"),
        (12, True, "On m = 12 slots perfect scores give a bound of 0.000 at confidence 0.95"),
    ],
)
def test_few_test_slots_are_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], m: int, rmrn: bool, words: str
) -> None:
    """Bounds on a few slots are a warning, not a result; on too few (cap 0) every bound
    is 0 by construction, and the report says so in the HTML and the CLI's summary."""
    from privaudit.panoramia.cli import render_panoramia_summary

    section, table, rm = panoramia_fixture(m, rmrn=rmrn)
    assert (section["bounds"]["cap"] == 0) == (m == 12)
    doc = panoramia_results(section, table, seed=0, settings=SETTINGS, target=TARGET, rmrn=rmrn)
    manifest = make_manifest(
        kind="membership-inference", command="t", config={}, seeds={}, dataset_fingerprint=None
    )
    out = write_panoramia_report(tmp_path / "rep", doc, table, rmrn_table=rm, bundle=manifest)
    html = (out / "report.html").read_text()
    assert 'id="panoramia-size-warning"' in html and words in html
    render_panoramia_summary(doc, None, width=400)
    assert words in " ".join(capsys.readouterr().out.split())
    assert verify_bundle(out).ok


def test_a_baseline_at_the_cap_is_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from privaudit.panoramia.cli import render_panoramia_summary

    doc, table, rm = _results(baseline_shift=8.0)  # the baseline separates perfectly
    b = doc["panoramia"]["bounds"]
    assert 0.9 * b["cap"] <= b["c_lb"] <= b["cap"]
    manifest = make_manifest(
        kind="membership-inference", command="t", config={}, seeds={}, dataset_fingerprint=None
    )
    out = write_panoramia_report(tmp_path / "rep", doc, table, rmrn_table=rm, bundle=manifest)
    html = (out / "report.html").read_text()
    room = f"cannot exceed {b['cap'] - b['c_lb']:.3f}"
    assert 'id="panoramia-cap-warning"' in html and room in html
    render_panoramia_summary(doc, None, width=200)
    text = capsys.readouterr().out
    assert "warning" in text and "within 10 % of its cap" in text
    assert verify_bundle(out).ok
    # results written before the cap was recorded still verify
    del doc["panoramia"]["bounds"]["cap"]
    old = write_panoramia_report(tmp_path / "old", doc, table, rmrn_table=rm, bundle=manifest)
    assert (
        verify_bundle(old).ok and "panoramia-cap-warning" not in (old / "report.html").read_text()
    )


def test_verify_catches_an_edited_bound(tmp_path: Path) -> None:
    doc, table, rm = _results()
    doc["panoramia"]["bounds"]["c_lb"] = doc["panoramia"]["bounds"]["c_lb"] + 0.2
    manifest = make_manifest(
        kind="membership-inference", command="t", config={}, seeds={}, dataset_fingerprint=None
    )
    out = write_panoramia_report(tmp_path / "rep", doc, table, rmrn_table=rm, bundle=manifest)
    bad = [c.name for c in verify_bundle(out).checks if c.status == "mismatch"]
    assert bad == ["panoramia.bounds.c_lb"]


def test_without_real_non_members_the_comparisons_say_not_run(tmp_path: Path) -> None:
    doc, table, rm = _results(rmrn=False)
    assert rm is None and "rmrn_scores" not in doc["files"]
    out = write_panoramia_report(tmp_path / "rep", doc, table)
    html = (out / "report.html").read_text()
    assert html.count("not run: needs real non-members") == 2
    with pytest.raises(InvalidInputError, match="rmrn_table"):
        write_panoramia_report(tmp_path / "rep2", doc, table, rmrn_table=table)


def test_implied_precision() -> None:
    assert implied_precision(0.0) == 0.5
    assert implied_precision(np.log(3.0)) == pytest.approx(0.75)
    doc, _, _ = _results()
    json.dumps(doc, allow_nan=False)


@pytest.mark.parametrize("rmrn_reads", [True, False])
def test_an_mia_reading_the_helper_is_said_in_the_threat_model_and_legends(
    rmrn_reads: bool,
) -> None:
    from privaudit.panoramia.report import _label

    section, table, _ = panoramia_fixture(rmrn=True)
    plain = panoramia_results(section, table, seed=0, settings=SETTINGS, target=TARGET)
    section["classifiers"] = {
        "mia": {"best_iteration": 40, "reads_helper": True},
        "baseline": {"best_iteration": 12},
        "rmrn": {"best_iteration": 9, "reads_helper": True} if rmrn_reads else None,
    }
    doc = panoramia_results(section, table, seed=0, settings=SETTINGS, target=TARGET)
    validate_results(doc)
    tm, tm0 = doc["panoramia"]["threat_model"], plain["panoramia"]["threat_model"]
    assert "also reads the helper's loss" in tm and "helper's loss" not in tm0
    assert ("so does RM;RN's classifier" in tm) is rmrn_reads
    pano = doc["panoramia"]
    assert _label(pano, "mia") == "MIA (x + target loss + helper loss)"
    assert _label(pano, "baseline") == "baseline (x + helper loss)"
    assert ("helper" in _label(pano, "rmrn")) is rmrn_reads
    assert _label(plain["panoramia"], "mia") == "MIA (x + target loss)"
    assert _label(plain["panoramia"], "rmrn") == "RM;RN (real non-members; x + target loss)"


def test_classifier_inputs_name_the_reference_when_there_is_one() -> None:
    from privaudit.panoramia.report import classifier_inputs

    net = {"network": {"reference": "generator"}}
    pano = {"classifiers": {"mia": {**net, "reads_helper": True}, "baseline": net, "rmrn": None}}
    assert classifier_inputs(pano, "mia") == "x + target loss + helper loss + reference loss"
    assert classifier_inputs(pano, "baseline") == "x + helper loss + reference loss"
    assert classifier_inputs(pano, "rmrn") == "x + target loss"
    off = {"classifiers": {"baseline": {"network": {"reference": None}}}}
    assert classifier_inputs(off, "baseline") == "x + helper loss"
    both = {"classifiers": {"mia": {"network": {"reference": "generator+target-recipe"}}}}
    assert classifier_inputs(both, "mia") == "x + target loss + 2 reference losses"


def test_figure_titles_say_what_ran_for_every_modality() -> None:
    """The figures' titles name the generator, helper and classifiers also where a modality
    records no ``kind`` (text: the fine-tuned base LM; image and text classifiers)."""
    from privaudit.panoramia.report import _what_ran

    text = {
        "modality": "text",
        "generator": {"base": "SmolLM2", "sampling": {"top_k": 50}, "n_train": 30},
        "helper": {"base": {"name": "SmolLM2"}, "recipe": {"steps": 10}},
        "classifiers": {"mia": {"network": {"reference": "generator"}}},
    }
    assert _what_ran(text) == (
        "generator SmolLM2 fine-tuned, top-50 sampling on 30 members; helper the target's "
        "recipe; classifiers byte CNN of the text + CNN of the per-token losses"
    )
    image = {
        "modality": "image",
        "generator": {"kind": "conditional-conv-vae", "n_train": 750},
        "helper": {"recipe": {}},
        "classifiers": {"mia": {"best_epoch": 3}},
    }
    assert "classifiers CNN of the image + MLP of the losses" in _what_ran(image)
    tabular = panoramia_fixture()[0]
    assert _what_ran(tabular).startswith("generator baynet on ")
    assert "n/a" not in _what_ran(text) + _what_ran(image)
