"""Fixtures shared by the report tests: one ``privaudit demo --quick`` report (slow tests)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def quick_demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The report folder of ``privaudit demo --quick`` (14 attacks on Adult), run once."""
    from privaudit.cli import main

    root = tmp_path_factory.mktemp("quick-demo")
    out = root / "demo"
    args = ["demo", "--quick", "--no-progress", "--n-jobs", "2", "--out", str(out)]
    assert main([*args, "--cache-dir", str(root / "cache")]) == 0
    return out


SMALL_RUN = {
    "dataset": "digits",
    "model": {"kind": "logistic", "params": {"C": 100.0, "max_iter": 300}},
    "attacks": ["loss", "population", "reference", "lira-online"],
    "sizes": {"n_target_pool": 160, "n_population": 320},
    "models": {"n_reference": 8},
    "alpha": 0.1,
    "seed": 2,
    "n_jobs": 1,
    "output_dir": "report",
}


@pytest.fixture(scope="session")
def small_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The report folder of a small ``privaudit run`` (digits, 4 attacks; seconds)."""
    import yaml

    from privaudit.cli import main

    root = tmp_path_factory.mktemp("small-run")
    cfg = root / "audit.yaml"
    cfg.write_text(yaml.safe_dump(SMALL_RUN))
    assert main(["run", str(cfg), "--no-progress"]) == 0
    return root / "report"
