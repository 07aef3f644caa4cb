"""A small run of examples/canaries_own_model.py: a scikit-learn model trained outside
privaudit with canaries appended by the data-level API, audited, verified, a claim refuted
and a tampered coin file refused."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "canaries_own_model.py"


@pytest.mark.slow  # 10-20 s on two busy cores; the CLI tests cover the same steps on small tables
def test_the_example_runs_end_to_end(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("canaries_own_model", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    done = module.run(tmp_path / "demo", m=300, n_train=2000, claimed=0.5)
    assert done["codes"] == {"make": 0, "audit": 1, "verify": 0, "tampered": 2}
    c = done["results"]["canaries"]
    assert c["m"] == 300 and c["access"] == "black-box"
    assert c["epsilon_lower_bound"] > 0.5  # a random forest memorises its mislabelled canaries


@pytest.mark.slow  # 1-3 minutes on two busy cores (a DP-SGD run on 20,000 Adult records)
def test_the_opacus_example_audits_its_own_loop(tmp_path: Path) -> None:
    pytest.importorskip("opacus")
    path = EXAMPLE.with_name("canaries_opacus.py")
    spec = importlib.util.spec_from_file_location("canaries_opacus", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    done = module.run(tmp_path / "demo", m=500, epochs=2)
    assert done["codes"] == {"iterates": 0, "final": 0, "verify": 0}
    res = json.loads((tmp_path / "demo" / "report" / "results.json").read_text())
    c = res["canaries"]
    assert c["access"] == "iterates" and 0 <= c["epsilon_lower_bound"] <= c["accountant_epsilon"]
