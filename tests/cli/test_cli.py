"""`privaudit run` and `privaudit demo` through the real entry point `main(argv)`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from privaudit.cli import main

SMALL = {
    "dataset": "digits",
    "model": {"kind": "logistic", "params": {"C": 100.0, "max_iter": 300}},
    "attacks": ["loss", "population", "reference", "lira-online", "rmia-offline"],
    "sizes": {"n_target_pool": 200, "n_population": 400},
    "models": {"n_reference": 4},
    "alpha": 0.1,
    "seed": 1,
    "n_jobs": 1,
    "output_dir": "report",
}


def write_config(tmp_path: Path, **over: object) -> Path:
    p = tmp_path / "audit.yaml"
    p.write_text(yaml.safe_dump({**SMALL, **over}))
    return p


def test_run_writes_report_and_prints_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = write_config(tmp_path)
    assert main(["run", str(cfg), "--no-progress"]) == 0
    out = capsys.readouterr().out
    for name in SMALL["attacks"]:  # type: ignore[union-attr]
        assert name in out
    assert "AUC" in out and "report" in out
    rep = tmp_path / "report"  # output_dir is relative to the config file
    results = json.loads((rep / "results.json").read_text())
    assert [a["name"] for a in results["attacks"]] == SMALL["attacks"]
    assert (rep / "report.html").stat().st_size > 10_000 and (rep / "scores.npz").exists()


def test_run_refuses_to_overwrite_then_overwrites(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = write_config(tmp_path, attacks=["population"])
    out = tmp_path / "elsewhere"
    assert main(["run", str(cfg), "--out", str(out), "--no-progress"]) == 0
    first = (out / "results.json").read_text()
    capsys.readouterr()
    assert main(["run", str(cfg), "--out", str(out), "--no-progress"]) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert (out / "results.json").read_text() == first
    assert main(["run", str(cfg), "--out", str(out), "--overwrite", "--no-progress"]) == 0
    assert not (tmp_path / "report").exists()  # --out replaced output_dir


@pytest.mark.parametrize(
    ("over", "field"),
    [
        ({"model": {"kind": "svm"}}, "model.kind"),
        ({"alpha": 2.0}, "alpha"),
        ({"attacks": ["population", "lira"]}, "attacks"),
        ({"models": {"n_reference": 5}}, "models.n_reference"),
        ({"typo_field": 1}, "typo_field"),
        ({"sizes": {"n_target_pool": 1500, "n_population": 1500}}, "sizes"),
    ],
)
def test_bad_config_exit_2_names_field_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], over: dict, field: str
) -> None:
    cfg = write_config(tmp_path, **over)
    assert main(["run", str(cfg), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert f"{field}:" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["audit.yaml"]


def test_missing_config_file_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(tmp_path / "nope.yaml")]) == 2
    assert "nope.yaml" in capsys.readouterr().err


def test_demo_refuses_existing_directory_without_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "d").mkdir()
    assert main(["demo", "--out", str(tmp_path / "d"), "--quick"]) == 2
    assert "--overwrite" in capsys.readouterr().err


def test_help_lists_commands(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "demo" in out and "run" in out


@pytest.mark.slow
def test_quick_demo_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["demo", "--quick", "--out", str(tmp_path / "demo"), "--n-jobs", "2", "--no-progress"])
        == 0
    )
    assert {p.name for p in (tmp_path / "demo").iterdir()} == {
        "report.html",
        "results.json",
        "scores.npz",
        "bundle.json",
    }
    assert "rmia-online" in capsys.readouterr().out
    # the demo's bundle re-verifies (issue 8, item 8)
    assert main(["verify", str(tmp_path / "demo")]) == 0
    assert "verify: OK" in capsys.readouterr().out
