"""`privaudit demo` without --out: a fresh report folder each run, models reused from the cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from privaudit.cli import main
from privaudit.membership.cli import new_results_dir


def test_new_results_dir_never_reuses_an_existing_folder(tmp_path: Path) -> None:
    first = new_results_dir(tmp_path, "demo")
    assert not first.exists() and first.parent == tmp_path and first.name.startswith("demo-")
    first.mkdir()
    second = new_results_dir(tmp_path, "demo")
    assert second != first and not second.exists()


@pytest.mark.slow
def test_repeated_quick_demo_writes_new_report_and_reuses_models(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    args = ["demo", "--quick", "--no-progress", "--n-jobs", "1"]
    assert main(args) == 0
    assert main(args) == 0
    reports = sorted((tmp_path / "privaudit-results").iterdir())
    assert len(reports) == 2
    first, second = (json.loads((r / "results.json").read_text()) for r in reports)
    assert sum(second["settings"]["models_trained"].values()) == 0
    assert sum(second["settings"]["models_loaded"].values()) > 0
    assert [a["auc"] for a in first["attacks"]] == [a["auc"] for a in second["attacks"]]
