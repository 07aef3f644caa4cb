"""``privaudit run examples/own_model.yaml``: a target trained outside privaudit, with the
auditor's member / non-member ids, recorded in results.json (small sizes)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from privaudit.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _prepare(tmp_path: Path, yaml_name: str, framework: str, extra: list[str]) -> Path:
    for f in (yaml_name, "own_model.py", "own_model_nets.py"):
        shutil.copy(EXAMPLES / f, tmp_path / f)
    subprocess.run(
        [
            sys.executable,
            str(tmp_path / "own_model.py"),
            "--framework",
            framework,
            "--n-audited",
            "200",
            "--n-population",
            "300",
            *extra,
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    cfg = yaml.safe_load((tmp_path / yaml_name).read_text())
    cfg["n_jobs"] = 1
    cfg["models"] = {
        "n_reference": 4,
        "n_shadow": 2,  # Attack R: at least 2 population-trained references
        "n_distilled": 2,
        "n_leave_one_out": 2,
        "leave_one_out_sample": 4,
    }
    return cfg  # type: ignore[no-any-return]


def _check(tmp_path: Path, cfg: dict) -> dict:  # type: ignore[type-arg]
    p = tmp_path / "audit.yaml"
    p.write_text(yaml.safe_dump(cfg))
    assert main(["run", str(p), "--no-progress", "--out", str(tmp_path / "rep")]) == 0
    res = json.loads((tmp_path / "rep" / "results.json").read_text())
    t = res["target"]
    members = (tmp_path / "own_model_out" / "members.txt").read_text().split()
    non_members = (tmp_path / "own_model_out" / "non_members.txt").read_text().split()
    assert t["origin"] == "provided"
    assert t["n_members"] == len(members) and t["n_non_members"] == len(non_members)
    assert len(members) + len(non_members) == 200 and 60 < len(members) < 140  # fair coins
    assert t["model_sha256"] and t["split_sha256"] and "recipe_check" in t
    # the split is recorded by record id beside results.json
    with np.load(tmp_path / "rep" / "scores.npz", allow_pickle=False) as z:
        ids, member = z["record_ids"].astype(str), z["member"].astype(bool)
    assert set(ids[member].tolist()) == set(members)
    assert set(ids[~member].tolist()) == set(non_members)
    return res


def test_own_sklearn_model_example(tmp_path: Path) -> None:
    cfg = _prepare(tmp_path, "own_model.yaml", "sklearn", ["--max-iter", "40"])
    cfg["model"]["params"]["max_iter"] = 40
    cfg["attacks"] = ["loss", "lira-online", "rmia-offline"]
    cfg["attack_params"] = {"lira-online": {"variance": "fixed"}}
    res = _check(tmp_path, cfg)
    assert res["target"]["kind"] == "sklearn"


@pytest.mark.slow
def test_own_torch_model_example(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    cfg = _prepare(tmp_path, "own_model_torch.yaml", "torch", ["--epochs", "20"])
    cfg["model"]["params"]["epochs"] = 20
    cfg["attacks"] = ["loss", "reference", "distillation", "lira-online"]
    cfg["attack_params"] = {"lira-online": {"variance": "fixed"}}
    res = _check(tmp_path, cfg)
    assert res["target"]["kind"] == "torch"
