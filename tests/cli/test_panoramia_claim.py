"""PANORAMIA's eps_tilde is reported with its caveat and never gates a claim (issue 28, item 3).

Kazmi et al. 2024, Sec. 4.2: eps_tilde = max(0, {c+eps}_lb - c_lb) "does not imply a
lower-bound on eps"; it is one only if c_lb is tight. ``privaudit audit --procedure
panoramia`` once returned it as ``epsilon_lower_bound`` and exited 1 when it exceeded
``--claimed-epsilon``; ``privaudit panoramia`` never gated on it. Both now follow one policy.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_ci_formats import check_sarif

from privaudit.cli import main
from privaudit.cli.verify_cmd import verify_bundle
from privaudit.report.bundle import BUNDLE_FILE, file_digest
from privaudit.report.ci_formats import (
    SARIF_NOT_GATED_RULE_ID,
    SARIF_RULE_ID,
    gates_from_audit,
    gates_from_results,
)
from privaudit.stats import panoramia_audit

CLAIM = "0.1"


@pytest.fixture
def panoramia_csv(tmp_path: Path) -> tuple[Path, float]:
    """Test slots on which the MIA separates members well and the baseline does not:
    eps_tilde far above the claim of 0.1."""
    rng = np.random.default_rng(11)
    member = rng.random(800) < 0.5
    df = pd.DataFrame(
        {
            "score": rng.standard_normal(800) + 2.5 * member,
            "member": member.astype(int),
            "baseline_score": rng.standard_normal(800) + 0.2 * member,
        }
    )
    path = tmp_path / "panoramia.csv"
    df.to_csv(path, index=False)
    res = panoramia_audit(df["score"], df["baseline_score"], member)
    eps_tilde = float(res.extra["epsilon_tilde"])
    assert eps_tilde > 1.0  # far above the claim: a gate on it would fail
    return path, eps_tilde


def _args(path: Path, *extra: str) -> list[str]:
    return ["audit", str(path), "--procedure", "panoramia", "--claimed-epsilon", CLAIM, *extra]


def test_claim_below_eps_tilde_exits_0_and_prints_it_with_its_caveat(
    panoramia_csv: tuple[Path, float], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, eps_tilde = panoramia_csv
    out = tmp_path / "r.json"
    assert main(_args(path, "--json", str(out))) == 0
    cap = capsys.readouterr()
    assert "epsilon tilde (see the caveat)" in cap.out
    assert f"{eps_tilde:.6g}" in cap.out
    assert "is a lower bound on the target's eps only if c_lb is tight" in cap.out
    assert "none certified" in cap.out and "(not checked)" in cap.out
    assert "violation" not in cap.err and "not checked:" in cap.err
    d = json.loads(out.read_text())
    assert d["epsilon_lower_bound"] == 0.0  # never eps_tilde
    assert d["epsilon_tilde"] == pytest.approx(eps_tilde)
    assert d["gated"] is False and "no claimed epsilon is checked" in d["not_gated_reason"]
    assert "only if c_lb is tight" in d["epsilon_tilde_caveat"]
    # the other procedures still gate: one-run on the same scores refutes the claim
    assert main(["audit", str(path), "--claimed-epsilon", CLAIM]) == 1
    assert "violation" in capsys.readouterr().err


def test_ci_formats_report_eps_tilde_and_never_fail_on_it(
    panoramia_csv: tuple[Path, float], capsys: pytest.CaptureFixture[str]
) -> None:
    path, eps_tilde = panoramia_csv
    assert main(_args(path, "--format", "json")) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["violation"] is False
    (g,) = d["gates"]
    assert g["gated"] is False and g["violated"] is False
    assert g["reported"]["epsilon_tilde"] == pytest.approx(eps_tilde)
    assert "only if c_lb is tight" in g["caveat"]

    assert main(_args(path, "--format", "junit")) == 0
    root = ET.fromstring(capsys.readouterr().out)
    assert root.get("failures") == "0" and root.get("skipped") == "1"
    (case,) = root.findall("./testsuite/testcase")
    assert case.find("failure") is None
    skipped = case.find("skipped")
    assert skipped is not None and "not gated" in (skipped.get("message") or "")
    assert f"epsilon_tilde {eps_tilde:.6g}" in (case.findtext("system-out") or "")

    assert main(_args(path, "--format", "sarif")) == 0
    doc = json.loads(capsys.readouterr().out)
    check_sarif(doc)
    run = doc["runs"][0]
    assert run["invocations"][0]["exitCode"] == 0
    assert [r["level"] for r in run["results"]] == ["note"]
    note = run["results"][0]
    assert note["ruleId"] == SARIF_NOT_GATED_RULE_ID and SARIF_RULE_ID != note["ruleId"]
    assert note["properties"]["reported"]["epsilon_tilde"] == pytest.approx(eps_tilde)
    assert "only if c_lb is tight" in note["message"]["text"]
    assert run["properties"]["gates"][0]["gated"] is False


def test_gates_read_the_flag_at_top_level_or_in_extra() -> None:
    entry = {
        "procedure": "panoramia",
        "confidence": 0.95,
        "delta": 0.0,
        "epsilon_lower_bound": 5.0,  # even a large value in the field is not gated
        "extra": {"gated": False, "not_gated_reason": "why.", "epsilon_tilde": 2.0},
    }
    for gates in (gates_from_audit(entry), gates_from_results({"audits": [entry]})):
        (g,) = gates
        assert not g.gated and not g.violated(0.1) and g.reported == (("epsilon_tilde", 2.0),)
    gated = {**entry, "extra": {}}
    assert gates_from_audit(gated)[0].violated(0.1)  # a plain entry still gates


def test_verify_recomputes_eps_tilde_also_in_bundles_written_before(
    panoramia_csv: tuple[Path, float], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, eps_tilde = panoramia_csv
    out = tmp_path / "bundle"
    assert main(_args(path, "--out", str(out))) == 0
    capsys.readouterr()
    assert main(["verify", str(out), "--all"]) == 0
    text = capsys.readouterr().out
    assert "ok  result.epsilon_tilde" in text and "ok  result.gated" in text

    # a bundle written before issue 28: eps_tilde in epsilon_lower_bound, no caveat keys
    doc = json.loads((out / "result.json").read_text())
    for key in ("epsilon_tilde_caveat", "gated", "not_gated_reason"):
        doc.pop(key)
        doc["extra"].pop(key)
    doc["epsilon_lower_bound"] = doc["epsilon_tilde"]
    manifest = json.loads((out / BUNDLE_FILE).read_text())

    def rewrite(d: dict[str, object]) -> None:
        (out / "result.json").write_text(json.dumps(d))
        manifest["files"]["result.json"] = file_digest(out / "result.json")  # type: ignore[index]
        (out / BUNDLE_FILE).write_text(json.dumps(manifest))

    rewrite(doc)
    report = verify_bundle(out)
    assert report.ok, report.mismatches
    names = {c.name for c in report.checks if c.status == "ok"}
    assert {"result.epsilon_lower_bound", "result.epsilon_tilde"} <= names
    rewrite({**doc, "epsilon_lower_bound": eps_tilde + 0.5})  # an edited old bundle
    report = verify_bundle(out)
    assert [c.name for c in report.mismatches] == ["result.epsilon_lower_bound"]
