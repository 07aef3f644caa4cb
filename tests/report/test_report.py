"""results.json schema, scores.npz round trip, report.html, atomic non-overwriting writes."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

from privaudit.errors import InvalidInputError
from privaudit.metrics.roc import agreement_matrix, attack_metrics
from privaudit.records import AttackScores, AuditResult
from privaudit.report import (
    HTML_FILE,
    RESULTS_FILE,
    SCORES_FILE,
    ReportExistsError,
    ScoreTable,
    attack_entry,
    build_results,
    load_results,
    load_schema,
    recompute_attack_metrics,
    validate_results,
    write_report,
)


def _fixture(n: int = 1200, seed: int = 0) -> tuple[dict[str, Any], ScoreTable]:
    rng = np.random.default_rng(seed)
    member = rng.random(n) < 0.5
    ids = np.array([f"r{i}" for i in range(n)])
    alpha = 0.05
    thr = float(stats.norm.isf(alpha))
    scores = [
        AttackScores("population", ids, rng.normal(size=n) + 0.3 * member, {}, alpha, thr),
        AttackScores(
            "lira-online",
            ids,
            rng.normal(size=n) + 2.0 * member,
            {"n_reference_models": 8},
            alpha,
            thr,
        ),
        AttackScores("rmia-offline", ids, rng.normal(size=n) + 1.0 * member, {"a": 0.3}),
    ]
    metrics = [attack_metrics(s, member) for s in scores]
    entries = [
        attack_entry(m, n_reference_models=k) for m, k in zip(metrics, [0, 8, 4], strict=True)
    ]
    ag = agreement_matrix(
        {s.attack: s.decisions() for s in scores if s.threshold is not None}, member
    )
    audit = AuditResult("one-run", 0.95, 0.0, 0.7, None, {"n_guesses": 100}, "held-out")
    results = build_results(
        seed=3,
        settings={
            "game": "fixed-dataset",
            "alpha": alpha,
            "dataset": {"name": "toy", "n_records": n},
            "model": {"kind": "mlp"},
            "attacks": [s.attack for s in scores],
        },
        target={
            "train_accuracy": 1.0,
            "test_accuracy": 0.8,
            "n_members": int(member.sum()),
            "n_non_members": int((~member).sum()),
        },
        attacks=entries,
        audits=[audit],
        agreement=ag,
        agreement_alpha=alpha,
        game={"name": "fixed-dataset", "fixed": ["target dataset"], "resampled": ["records"]},
        timings={"train": 1.5},
    )
    return results, ScoreTable.from_attack_scores(scores, ids, member)


def test_results_follow_design_contract() -> None:
    results, _ = _fixture()
    assert results["schema_version"] == "1.0"
    for key in ("privaudit_version", "created", "seed", "settings", "target", "attacks", "audits"):
        assert key in results
    a = results["attacks"][1]
    assert a["name"] == "lira-online" and set(a["tpr_at_fpr"]) == {"0.001", "0.01"}
    assert a["n_reference_models"] == 8 and a["alpha"] == 0.05
    assert 0 <= a["achieved_fpr"] <= 1 and len(a["achieved_fpr_ci"]) == 2
    assert results["attacks"][2]["alpha"] is None and results["attacks"][2]["achieved_fpr"] is None
    assert results["audits"][0]["procedure"] == "one-run"
    json.dumps(results, allow_nan=False)  # strict JSON


def test_schema_file_is_a_valid_json_schema() -> None:
    import jsonschema

    jsonschema.Draft202012Validator.check_schema(load_schema())


@pytest.mark.parametrize(
    ("mutate", "path"),
    [
        (lambda d: d.pop("seed"), "results"),
        (lambda d: d["attacks"][0].__setitem__("auc", 1.5), "results.attacks[0].auc"),
        (lambda d: d["attacks"][1].pop("n_reference_models"), "results.attacks[1]"),
        (lambda d: d["attacks"][0]["tpr_at_fpr"].__setitem__("0.01", "high"), "tpr_at_fpr"),
        (lambda d: d["target"].__setitem__("n_members", -1), "results.target.n_members"),
        (lambda d: d.__setitem__("schema_version", "2.0"), "results.schema_version"),
        (lambda d: d["settings"].pop("alpha"), "results.settings"),
        (lambda d: d.__setitem__("created", "yesterday"), "results.created"),
    ],
)
def test_validator_names_the_bad_field(mutate: Any, path: str) -> None:
    results, _ = _fixture(n=200)
    bad = copy.deepcopy(results)
    mutate(bad)
    with pytest.raises(InvalidInputError, match=path.replace("[", r"\[").replace("]", r"\]")):
        validate_results(bad)


def test_write_report_and_recompute_everything(tmp_path: Path) -> None:
    results, table = _fixture()
    out = write_report(tmp_path / "rep", results, table)
    assert sorted(p.name for p in out.iterdir()) == sorted([RESULTS_FILE, SCORES_FILE, HTML_FILE])
    loaded = load_results(out)
    assert loaded == json.loads(json.dumps(results))
    t2 = ScoreTable.load(out)
    np.testing.assert_array_equal(t2.record_ids, table.record_ids)
    np.testing.assert_array_equal(t2.member, table.member)
    assert t2.attacks == table.attacks and t2.thresholds == table.thresholds
    # every attack number in results.json is recomputable from scores.npz
    re = recompute_attack_metrics(t2, loaded)
    for a in loaded["attacks"]:
        m = re[a["name"]]
        assert m.auc == pytest.approx(a["auc"])
        assert m.tpr_at_fpr == a["tpr_at_fpr"]
        assert m.achieved_fpr == a["achieved_fpr"]
    # npz loads without pickle
    with np.load(out / SCORES_FILE, allow_pickle=False) as z:
        assert "score:lira-online" in z.files


def test_html_is_self_contained_and_shows_the_numbers(tmp_path: Path) -> None:
    results, table = _fixture()
    out = write_report(tmp_path / "rep", results, table)
    html = (out / HTML_FILE).read_text()
    assert html.count("data:image/svg+xml;base64,") == 2  # the ROC curves, log-log and linear
    assert "data:image/png" not in html  # no matplotlib figure in the membership report
    assert "http://" not in html and "https://" not in html  # no external resources
    for a in results["attacks"]:
        assert a["name"] in html
        assert f"{a['auc']:.3f}" in html
    assert "TPR @ 0.1% FPR" in html and "TPR @ 1% FPR" in html
    assert "FPR @ 50% TPR" in html and "FPR @ 90% TPR" in html
    assert "Agreement between attacks" in html and "GT" in html
    assert "fixed-dataset" in html and "Privacy lower bounds" in html


def test_second_run_does_not_overwrite(tmp_path: Path) -> None:
    results, table = _fixture(n=300)
    out = write_report(tmp_path / "rep", results, table)
    before = (out / RESULTS_FILE).read_bytes()
    results2, table2 = _fixture(n=300, seed=1)
    with pytest.raises(ReportExistsError, match="overwrite"):
        write_report(out, results2, table2)
    assert (out / RESULTS_FILE).read_bytes() == before
    write_report(out, results2, table2, overwrite=True)
    assert (out / RESULTS_FILE).read_bytes() != before
    assert [p.name for p in tmp_path.iterdir()] == ["rep"]  # no temp/backup dirs left


def test_failed_write_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    results, table = _fixture(n=300)

    def boom(*_: Any, **__: Any) -> str:
        raise RuntimeError("render failed")

    monkeypatch.setattr("privaudit.report.html.render_html", boom)
    with pytest.raises(RuntimeError):
        write_report(tmp_path / "rep", results, table)
    assert list(tmp_path.iterdir()) == []
    # an earlier report survives a failed overwrite untouched
    monkeypatch.undo()
    out = write_report(tmp_path / "rep", results, table)
    before = (out / RESULTS_FILE).read_bytes()
    monkeypatch.setattr("privaudit.report.html.render_html", boom)
    with pytest.raises(RuntimeError):
        write_report(out, results, table, overwrite=True)
    assert (out / RESULTS_FILE).read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["rep"]


def test_invalid_results_write_nothing(tmp_path: Path) -> None:
    results, table = _fixture(n=300)
    bad = copy.deepcopy(results)
    bad["attacks"][0]["auc"] = -1
    with pytest.raises(InvalidInputError, match="auc"):
        write_report(tmp_path / "rep", bad, table)
    other = ScoreTable(table.record_ids, table.member, {"population": table.scores["population"]})
    with pytest.raises(InvalidInputError, match="exactly the attacks"):
        write_report(tmp_path / "rep", results, other)
    assert list(tmp_path.iterdir()) == []


def test_score_table_validation() -> None:
    with pytest.raises(InvalidInputError, match="unique"):
        ScoreTable(np.array([1, 1]), np.array([True, False]), {"a": np.zeros(2)})
    with pytest.raises(InvalidInputError, match="one score per record"):
        ScoreTable(np.array([1, 2]), np.array([True, False]), {"a": np.zeros(3)})
    with pytest.raises(InvalidInputError, match="only NaN"):
        ScoreTable(np.array([1, 2]), np.array([True, False]), {"a": np.array([np.nan, np.nan])})
    with pytest.raises(InvalidInputError, match="finite"):
        ScoreTable(np.array([1, 2]), np.array([True, False]), {"a": np.array([0.0, np.inf])})
    ids = np.arange(3)
    with pytest.raises(InvalidInputError, match="audited records"):
        ScoreTable.from_attack_scores(
            [AttackScores("a", np.arange(1, 5), np.zeros(4))], ids, [1, 0, 1]
        )


def test_score_table_partial_attack_round_trip(tmp_path: Path) -> None:
    ids = np.array(["a", "b", "c", "d"])
    full = AttackScores("reference", ids, np.array([3.0, 1.0, 2.0, 0.0]), {}, 0.1, 2.0)
    loo = AttackScores("leave-one-out", ids[::-1][:2], np.array([0.5, 0.7]))  # d, c only
    t = ScoreTable.from_attack_scores([full, loo], ids, [True, False, True, False])
    assert np.isnan(t.scores["leave-one-out"][:2]).all()
    rid, s, m = t.scored("leave-one-out")
    assert rid.tolist() == ["c", "d"] and s.tolist() == [0.7, 0.5] and m.tolist() == [True, False]
    t.save(tmp_path / "s.npz")
    t2 = ScoreTable.load(tmp_path / "s.npz")
    np.testing.assert_array_equal(t2.scores["leave-one-out"], t.scores["leave-one-out"])
    assert t2.thresholds == {"reference": 2.0, "leave-one-out": None}


def test_report_layer_never_imports_torch() -> None:
    code = (
        "import sys, privaudit.report, privaudit.report.html;"
        "assert 'torch' not in sys.modules, 'torch imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_roc_is_drawn_through_its_exact_points_with_tie_diagonals() -> None:
    """Issue 10 item 7: a staircase under-draws ties; the drawn curve's area is the AUC."""
    from privaudit.metrics.roc import roc_curve
    from privaudit.report.html import roc_polyline

    rng = np.random.default_rng(3)
    scores = rng.integers(0, 4, size=200).astype(float)  # heavy ties
    member = rng.uniform(size=200) < 0.5
    scores[member] += rng.integers(0, 2, size=int(member.sum()))
    roc = roc_curve(scores, member)
    x, y = roc_polyline(roc)
    np.testing.assert_array_equal(x, roc.fpr)
    np.testing.assert_array_equal(y, roc.tpr)
    area = float(np.sum(np.diff(x) * (y[1:] + y[:-1]) / 2.0))
    assert abs(area - roc.auc) < 1e-12
    staircase = float(np.sum(np.diff(x) * y[:-1]))  # step(where="post")
    assert staircase < roc.auc - 0.01


def test_html_names_rmia_score_form(tmp_path: Path) -> None:
    """Issue 28: the attack table names RMIA's score (the default is not the paper's)."""
    results, table = _fixture(n=300)
    (rmia,) = [a for a in results["attacks"] if a["name"] == "rmia-offline"]
    rmia["params"] = {**rmia["params"], "score": "ratio", "score_name": "log likelihood ratio"}
    html = (write_report(tmp_path / "rep", results, table) / HTML_FILE).read_text()
    assert 'rmia-offline <span class="ci">(log likelihood ratio)</span>' in html
    assert "pairwise-comparison score" in html  # the note names the paper's score beside it


def test_compiled_templates_are_cached_and_a_cache_failure_is_only_slower(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # report/html.py keeps Jinja2's compiled templates between runs: the page is the same
    # with the cache, without it, and when the cache folder refuses every write
    from jinja2 import FileSystemBytecodeCache

    from privaudit.report import html

    results, table = _fixture(n=300)
    assert isinstance(html.jinja_environment().bytecode_cache, FileSystemBytecodeCache)
    cached = html.render_html(results, table)

    def refuse(self: Any, bucket: Any) -> None:
        raise PermissionError("read-only cache folder (simulated)")

    monkeypatch.setattr(FileSystemBytecodeCache, "dump_bytecode", refuse)
    monkeypatch.setattr(FileSystemBytecodeCache, "load_bytecode", lambda self, bucket: None)
    assert html.render_html(results, table) == cached
    out = write_report(tmp_path / "rep", results, table)
    assert (out / HTML_FILE).read_text(encoding="utf-8") == cached
    monkeypatch.setattr(html, "_bytecode_cache", lambda: None)
    assert html.jinja_environment().bytecode_cache is None
    assert html.render_html(results, table) == cached


def test_fpr_cell_marks_a_threshold_checked_with_its_calibration_error(tmp_path: Path) -> None:
    """The green/red check of a population-calibrated threshold is beta-binomial, not the
    printed Clopper-Pearson interval: its cell is marked and says which check ran."""
    rng = np.random.default_rng(5)
    n = 400
    member = rng.random(n) < 0.5
    ids = np.array([f"r{i}" for i in range(n)])
    scores = rng.normal(size=n) + member
    calibrated = AttackScores("population", ids, scores, {"threshold_sample_size": 199}, 0.05, 1.6)
    plain = AttackScores("lira-online", ids, scores, {}, 0.05, 1.6)
    entries = [
        attack_entry(attack_metrics(s, member), n_reference_models=0) for s in (calibrated, plain)
    ]
    results, _ = _fixture(n=n)
    results["attacks"] = entries
    results["settings"]["attacks"] = ["population", "lira-online"]
    html = (
        write_report(
            tmp_path / "rep",
            results,
            ScoreTable.from_attack_scores([calibrated, plain], ids, member),
        )
        / HTML_FILE
    ).read_text()
    rows = {
        name: html.split(f'<td class="name">{name}', 1)[1].split("</tr>", 1)[0]
        for name in ("population", "lira-online")
    }
    assert "<sup>&dagger;</sup>" in rows["population"]
    assert (
        'title="beta-binomial: ' in rows["population"] and "199 calibration" in rows["population"]
    )
    assert "&dagger;" not in rows["lira-online"]
    assert 'title="Clopper-Pearson 95% interval' in rows["lira-online"]
