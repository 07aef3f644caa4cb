"""The Zero-Run report: results.json (round trip) and a self-contained report.html."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from markupsafe import escape

from privaudit.errors import InvalidInputError
from privaudit.report import ReportExistsError
from privaudit.report.html import format_num
from privaudit.zero_run import ZeroRunResult, zero_run_audit
from privaudit.zero_run.report import (
    render_zero_run_html,
    write_zero_run_report,
    zero_run_payload,
)


@pytest.fixture(scope="module")
def result() -> ZeroRunResult:
    """A quick audit with given (oracle) propensities: a shifted feature, a leaky score."""
    rng = np.random.default_rng(3)
    m = 400
    x = rng.standard_normal(m)
    pi = 1.0 / (1.0 + np.exp(-1.2 * x))  # P(member | x)
    member = rng.random(m) < pi
    scores = rng.standard_normal(m) + 1.5 * member + 1.0 * x
    flat = np.full(m, 0.5)  # a propensity model that ignores the shift
    res = zero_run_audit(scores, member, propensity={"oracle": pi, "ignores-shift": flat})
    # add a bootstrap block to one estimator (only estimated propensities get one)
    entries = [dict(e) for e in res.estimators]
    mus = np.sort(rng.uniform(0.0, 0.6, 40))
    entries[0]["bootstrap"] = {
        "n": 40,
        "quantile": 0.025,
        "mu_lower_quantile": float(np.quantile(mus, 0.025, method="lower")),
        "mu_median": float(np.median(mus)),
        "mu_values": mus.tolist(),
        "epsilon_lower_quantile": 0.1,
        "epsilon_values": [0.1] * 40,
    }
    return dataclasses.replace(
        res, estimators=tuple(entries), warnings=(*res.warnings, "a <b>bold</b> 'test' warning")
    )


def test_write_files_and_round_trip(result: ZeroRunResult, tmp_path: Path) -> None:
    out = tmp_path / "sub" / "report"
    paths = write_zero_run_report(result, out)
    assert paths == {"dir": out, "results": out / "results.json", "html": out / "report.html"}
    assert sorted(p.name for p in out.iterdir()) == ["report.html", "results.json"]
    text = paths["results"].read_text()
    d = json.loads(text)  # strict JSON: no NaN / Infinity literals
    assert "Infinity" not in text and "NaN" not in text
    assert d["privaudit_version"] == zero_run_payload(result)["privaudit_version"]
    back = ZeroRunResult.from_dict(d)
    assert back.to_dict() == result.to_dict()
    assert ZeroRunResult.load(out).to_dict() == result.to_dict()
    assert back.bound("oracle", "pointwise").procedure == "zero-run-pointwise"


def test_html_shows_corrections_numbers_plots_and_warnings(result: ZeroRunResult) -> None:
    page = render_zero_run_html(result)
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    for word in ("uncorrected", "global", "pointwise", "Diagnostics", "Falsification"):
        assert word in page
    for w in result.warnings:
        assert str(escape(w)) in page
    assert "<b>bold</b>" not in page  # user-visible text is escaped
    for e in result.estimators:
        assert e["name"] in page
        for corr in ("global", "pointwise"):
            assert format_num(e[corr]["mu_lower_bound"]) in page
        assert format_num(e["diagnostics"]["auc"]) in page
    assert format_num(result.uncorrected["mu_lower_bound"]) in page
    assert format_num(result.headline["mu_lower_bound"]) in page
    assert "Bootstrap over propensity fits" in page
    # two histograms (one per estimator) + one bootstrap plot, embedded SVG, no external file
    assert page.count('src="data:image/svg+xml;base64,') == 3 and "data:image/png" not in page
    assert "http://" not in page and "https://" not in page


def test_html_without_bootstrap_has_no_bootstrap_section(result: ZeroRunResult) -> None:
    entries = [{**e, "bootstrap": None} for e in result.estimators]
    page = render_zero_run_html(dataclasses.replace(result, estimators=tuple(entries)))
    assert "Bootstrap over propensity fits" not in page
    assert page.count('src="data:image/svg+xml;base64,') == 2


def test_infinite_bound_is_strict_json(result: ZeroRunResult, tmp_path: Path) -> None:
    entries: list[dict[str, Any]] = [dict(e) for e in result.estimators]
    entries[1]["pointwise"] = {**entries[1]["pointwise"], "epsilon_lower_bound": math.inf}
    res = dataclasses.replace(result, estimators=tuple(entries))
    paths = write_zero_run_report(res, tmp_path / "r")
    d = json.loads(paths["results"].read_text())
    assert d["estimators"][1]["pointwise"]["epsilon_lower_bound"] == {"__float__": "inf"}
    back = ZeroRunResult.load(paths["results"])
    assert back.estimators[1]["pointwise"]["epsilon_lower_bound"] == math.inf
    assert "inf" in paths["html"].read_text()


def test_existing_directory_is_kept_without_overwrite(
    result: ZeroRunResult, tmp_path: Path
) -> None:
    out = tmp_path / "r"
    out.mkdir()
    (out / "old.txt").write_text("old")
    with pytest.raises(ReportExistsError, match="overwrite"):
        write_zero_run_report(result, out)
    assert sorted(p.name for p in out.iterdir()) == ["old.txt"]
    write_zero_run_report(result, out, overwrite=True)
    assert sorted(p.name for p in out.iterdir()) == ["report.html", "results.json"]
    assert [p.name for p in tmp_path.iterdir()] == ["r"]  # no temporary leftovers


def test_failed_render_leaves_nothing(
    result: ZeroRunResult, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import privaudit.zero_run.report as zr

    def boom(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("rename failed")

    monkeypatch.setattr(zr, "move_into_place", boom)
    with pytest.raises(RuntimeError):
        write_zero_run_report(result, tmp_path / "r")
    assert list(tmp_path.iterdir()) == []


def test_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="ZeroRunResult"):
        write_zero_run_report({"headline": {}}, tmp_path / "r")  # type: ignore[arg-type]
    (tmp_path / "x.json").write_text("{not json")
    with pytest.raises(InvalidInputError, match=r"results\.json"):
        ZeroRunResult.load(tmp_path / "x.json")
    (tmp_path / "y.json").write_text(json.dumps({"record": "audit_result"}))
    with pytest.raises(InvalidInputError, match="zero_run_result"):
        ZeroRunResult.load(tmp_path / "y.json")
