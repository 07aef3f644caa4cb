"""``python examples/llm_audit.py --tiny --json PATH``: the whole flow on a tiny GPT
(pre-trained from scratch, fine-tuned on the member chunks; reference on disjoint chunks)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("transformers")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "llm_audit.py"


def test_tiny_example_writes_the_figures(tmp_path: Path) -> None:
    out = tmp_path / "figures.json"
    proc = subprocess.run(
        [
            sys.executable,
            str(EXAMPLE),
            "--tiny",
            "--json",
            str(out),
            "--cache",
            str(tmp_path / "cache"),
            "--out",
            str(tmp_path / "report"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    fig = json.loads(out.read_text())
    assert set(fig) == {"signals", "blind_baseline", "epsilon_lower_bound"}
    assert {"loss", "zlib", "min-k", "min-k++", "reference"} <= set(fig["signals"])
    assert {"ez-mia", "wbc", "informia-token"} <= set(fig["signals"])  # against the base
    for entry in [*fig["signals"].values(), fig["blind_baseline"]]:
        assert set(entry) == {"auc", "tpr_at_fpr"} and set(entry["tpr_at_fpr"]) == {"0.01"}
        assert 0.0 <= entry["auc"] <= 1.0
        assert 0.0 <= entry["tpr_at_fpr"]["0.01"] <= 1.0  # >= 100 non-members: supported
    s = fig["signals"]
    assert s["loss"]["auc"] > 0.5  # the fine-tuned tiny GPT leaks its members
    assert s["reference"]["auc"] > s["loss"]["auc"]  # calibration by the reference helps
    assert fig["epsilon_lower_bound"] >= 0.0
    for f in ("results.json", "scores.npz", "report.html", "bundle.json"):
        assert (tmp_path / "report" / f).is_file()
    assert "reference-ratio" in proc.stdout and "blind-baseline" in proc.stdout
    res = json.loads((tmp_path / "report" / "results.json").read_text())
    roles = res["llm"]["provenance"]["split"]["roles"]
    assert set(roles) == {"members", "non_members", "reference", "base"}
    # each audited document a member by its own coin: the counts vary, their sum does not
    assert res["llm"]["provenance"]["split"]["coins"] == ["members", "non_members"]
    assert roles["members"]["n_chunks"] + roles["non_members"]["n_chunks"] == 260
    assert res["llm"]["counts"]["n_non_member_chunks"] >= 100
    assert set(res["llm"]["models"]) == {"target", "reference", "base"}
    assert res["llm"]["leaking_texts"]["n"] == 10
