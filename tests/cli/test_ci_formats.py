"""``--format json|junit|sarif`` and ``--claimed-epsilon`` of ``audit`` and ``run`` (issue 8, item 9)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import pandas as pd
import pytest
import yaml
from test_cli import SMALL as CLI_SMALL

from privaudit.cli import main
from privaudit.report.ci_formats import SARIF_RULE_ID
from privaudit.stats import one_run_audit

# The part of the SARIF 2.1.0 schema (OASIS, sarif-schema-2.1.0.json) that privaudit's
# output uses: every property the standard marks required on these objects, with types.
SARIF_MINIMAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["version", "runs"],
    "properties": {
        "$schema": {"type": "string", "format": "uri"},
        "version": {"const": "2.1.0"},
        "runs": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["tool"],
                "properties": {
                    "tool": {
                        "type": "object",
                        "required": ["driver"],
                        "properties": {
                            "driver": {
                                "type": "object",
                                "required": ["name"],
                                "properties": {
                                    "name": {"type": "string", "minLength": 1},
                                    "version": {"type": "string"},
                                    "informationUri": {"type": "string", "format": "uri"},
                                    "rules": {
                                        "type": "array",
                                        "items": {
                                            "type": "object",
                                            "required": ["id"],
                                            "properties": {
                                                "id": {"type": "string"},
                                                "shortDescription": {"$ref": "#/$defs/message"},
                                                "fullDescription": {"$ref": "#/$defs/message"},
                                                "defaultConfiguration": {
                                                    "type": "object",
                                                    "properties": {
                                                        "level": {"$ref": "#/$defs/level"}
                                                    },
                                                },
                                            },
                                        },
                                    },
                                },
                            }
                        },
                    },
                    "invocations": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["executionSuccessful"],
                            "properties": {
                                "executionSuccessful": {"type": "boolean"},
                                "exitCode": {"type": "integer"},
                            },
                        },
                    },
                    "results": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["message"],
                            "properties": {
                                "ruleId": {"type": "string"},
                                "ruleIndex": {"type": "integer", "minimum": -1},
                                "level": {"$ref": "#/$defs/level"},
                                "kind": {
                                    "enum": [
                                        "notApplicable",
                                        "pass",
                                        "fail",
                                        "review",
                                        "open",
                                        "informational",
                                    ]
                                },
                                "message": {"$ref": "#/$defs/message"},
                                "locations": {
                                    "type": "array",
                                    "items": {
                                        "type": "object",
                                        "properties": {
                                            "physicalLocation": {
                                                "type": "object",
                                                "properties": {
                                                    "artifactLocation": {
                                                        "type": "object",
                                                        "properties": {"uri": {"type": "string"}},
                                                    }
                                                },
                                            }
                                        },
                                    },
                                },
                            },
                        },
                    },
                },
            },
        },
    },
    "$defs": {
        "message": {
            "type": "object",
            "anyOf": [{"required": ["text"]}, {"required": ["id"]}],
            "properties": {"text": {"type": "string"}, "id": {"type": "string"}},
        },
        "level": {"enum": ["none", "note", "warning", "error"]},
    },
}


def check_sarif(doc: dict[str, Any]) -> None:
    jsonschema.Draft202012Validator(SARIF_MINIMAL_SCHEMA).validate(doc)
    run = doc["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    for r in run["results"]:  # ruleIndex points at the rule named by ruleId
        assert rules[r["ruleIndex"]]["id"] == r["ruleId"]


def test_minimal_sarif_schema_rejects_broken_documents() -> None:
    good = {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "x"}}, "results": []}]}
    check_sarif(
        {**good, "runs": [{**good["runs"][0], "tool": {"driver": {"name": "x", "rules": []}}}]}
    )
    for bad in (
        {"runs": good["runs"]},
        {**good, "version": "2.0.0"},
        {**good, "runs": [{"tool": {}}]},
        {**good, "runs": [{"tool": {"driver": {"name": "x"}}, "results": [{"level": "error"}]}]},
        {
            **good,
            "runs": [
                {
                    "tool": {"driver": {"name": "x"}},
                    "results": [{"message": {"text": "m"}, "level": "bad"}],
                }
            ],
        },
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.Draft202012Validator(SARIF_MINIMAL_SCHEMA).validate(bad)


@pytest.fixture
def scores_csv(tmp_path: Path) -> tuple[Path, float]:
    rng = np.random.default_rng(3)
    mem = rng.random(600) < 0.5
    df = pd.DataFrame({"score": rng.standard_normal(600) + 2.0 * mem, "member": mem.astype(int)})
    path = tmp_path / "scores.csv"
    df.to_csv(path, index=False)
    lb = one_run_audit(df["score"].to_numpy(), mem, k_pos=60, k_neg=60).epsilon_lower_bound
    assert lb > 0.5
    return path, lb


def _audit(path: Path, *extra: str) -> list[str]:
    return ["audit", str(path), "--k-pos", "60", "--k-neg", "60", *extra]


@pytest.mark.parametrize("fmt", ["json", "junit", "sarif"])
def test_audit_formats_pass_and_fail(
    fmt: str, scores_csv: tuple[Path, float], capsys: pytest.CaptureFixture[str]
) -> None:
    path, lb = scores_csv
    assert main(_audit(path, "--format", fmt, "--claimed-epsilon", str(lb * 2))) == 0
    ok = capsys.readouterr()
    assert main(_audit(path, "--format", fmt, "--claimed-epsilon", str(lb / 2))) == 1
    bad = capsys.readouterr()
    assert "violation" in bad.err and "exceeds the claimed epsilon" in bad.err
    for cap, violated in ((ok, False), (bad, True)):
        assert "epsilon lower bound" not in cap.out.split("\n")[0]  # no human table on stdout
        if fmt == "json":
            d = json.loads(cap.out)
            assert d["violation"] is violated and d["command"] == "audit"
            assert d["gates"][0]["epsilon_lower_bound"] == pytest.approx(lb)
            assert d["result"]["procedure"] == "one-run"
        elif fmt == "junit":
            root = ET.fromstring(cap.out)
            cases = root.findall("./testsuite/testcase")
            assert len(cases) == 1 and root.get("tests") == "1"
            failures = cases[0].findall("failure")
            assert len(failures) == int(violated) and root.get("failures") == str(int(violated))
            if violated:
                assert "exceeds" in (failures[0].get("message") or "")
        else:
            doc = json.loads(cap.out)
            check_sarif(doc)
            results = doc["runs"][0]["results"]
            assert len(results) == int(violated)
            assert doc["runs"][0]["invocations"][0]["exitCode"] == int(violated)
            if violated:
                r = results[0]
                assert r["ruleId"] == SARIF_RULE_ID and r["level"] == "error"
                uri = r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
                assert uri.endswith("scores.csv")
                assert r["properties"]["epsilonLowerBound"] == pytest.approx(lb)


def test_junit_without_claim_is_skipped_and_file_output(
    scores_csv: tuple[Path, float], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, _ = scores_csv
    target = tmp_path / "junit.xml"
    assert main(_audit(path, "--format", "junit", "--format-file", str(target))) == 0
    out = capsys.readouterr().out
    assert "epsilon lower bound" in out  # the human table stays on stdout
    case = ET.parse(target).getroot().find("./testsuite/testcase")
    assert case is not None and case.find("skipped") is not None and case.find("failure") is None


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--format", "xml"], "--format"),
        (["--format", "text", "--format-file", "x.json"], "--format-file"),
        (["--format", "json", "--claimed-epsilon", "-1"], "--claimed-epsilon"),
        (["--format", "json", "--claimed-epsilon", "nan"], "--claimed-epsilon"),
        (["--format", "json", "--format-file", "no/such/dir/x.json"], "--format-file"),
    ],
)
def test_bad_format_options_exit_2(
    args: list[str],
    named: str,
    scores_csv: tuple[Path, float],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.chdir(tmp_path)
    path, _ = scores_csv
    assert main(_audit(path, *args)) == 2
    err = capsys.readouterr().err
    assert named in err and "Traceback" not in err
    assert not (tmp_path / "x.json").exists()


SMALL = {**CLI_SMALL, "attacks": ["loss", "population"]}


def test_run_formats_gate_on_the_attack_bounds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = tmp_path / "audit.yaml"
    cfg.write_text(yaml.safe_dump(SMALL))
    assert main(["run", str(cfg), "--no-progress", "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    gates = d["gates"]
    assert [g["name"] for g in gates] == ["one-run:loss", "one-run:population"]
    assert d["violation"] is False and d["claimed_epsilon"] is None
    results = json.loads((tmp_path / "report" / "results.json").read_text())
    assert [a["attack"] for a in results["audits"]] == ["loss", "population"]
    for a in results["audits"]:  # Bonferroni over the two attacks
        assert a["confidence"] == pytest.approx(1 - 0.05 / 2) and a["family_confidence"] == 0.95
    top = max(g["epsilon_lower_bound"] for g in gates)
    assert top > 0  # a logistic model on 100 digits members leaks
    claim = top / 2
    junit = tmp_path / "junit.xml"
    sarif = tmp_path / "r.sarif"
    argv = ["run", str(cfg), "--no-progress", "--overwrite", "--claimed-epsilon", str(claim)]
    assert main([*argv, "--format", "junit", "--format-file", str(junit)]) == 1
    root = ET.parse(junit).getroot()
    failing = [c.get("name") for c in root.iter("testcase") if c.find("failure") is not None]
    want = [
        f"{g['name']}: epsilon lower bound <= claimed epsilon"
        for g in gates
        if g["epsilon_lower_bound"] > claim
    ]
    assert failing == want and len(failing) >= 1
    assert main([*argv, "--format", "sarif", "--format-file", str(sarif)]) == 1
    doc = json.loads(sarif.read_text())
    check_sarif(doc)
    assert len(doc["runs"][0]["results"]) == len(want)
    uri = doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"][
        "uri"
    ]
    assert uri.endswith("audit.yaml")
