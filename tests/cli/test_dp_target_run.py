"""A DP-SGD (Opacus) target through ``privaudit run``: the accountant's epsilon beside
every one-run lower bound, which stays below it; the run exits 0."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from privaudit.cli import main

FACTORY = str(Path(__file__).resolve().parents[1] / "models" / "torch_factories.py") + ":mlp"


@pytest.mark.slow
def test_dp_target_records_the_accountant_epsilon(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("opacus")
    cfg = {
        "dataset": "digits",
        "model": {
            "kind": "torch",
            "params": {
                "factory": FACTORY,
                "factory_kwargs": {"n_features": 64, "hidden": 16, "n_classes": 10},
                "optimizer": "sgd",
                "lr": 0.5,
                "epochs": 2,
                "batch_size": 64,
                "dp": {"target_epsilon": 1.0, "delta": 1e-5},
            },
        },
        "attacks": ["loss", "population"],
        "sizes": {"n_target_pool": 400, "n_population": 400},
        "output_dir": "rep",
    }
    p = tmp_path / "audit.yaml"
    p.write_text(yaml.safe_dump(cfg))
    assert main(["run", str(p), "--no-progress"]) == 0
    res = json.loads((tmp_path / "rep" / "results.json").read_text())
    eps = res["target"]["accountant_epsilon"]
    assert 0 < eps <= 1.0 + 1e-6 and res["target"]["delta"] == 1e-5
    assert res["audits"]
    for a in res["audits"]:
        assert a["delta"] == 1e-5
        assert a["extra"]["accountant_epsilon"] == eps
        assert a["epsilon_lower_bound"] <= eps and not a["extra"]["exceeds_accountant_epsilon"]
