"""Re-verifiable bundles and ``privaudit verify`` (issue 8, item 8)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from test_cli import SMALL

from privaudit.cli import main
from privaudit.cli.verify_cmd import verify_bundle
from privaudit.report import ScoreTable
from privaudit.report.bundle import (
    BUNDLE_FILE,
    TOLERANCES,
    compare,
    file_digest,
)


@pytest.fixture(scope="module")
def run_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("bundle")
    cfg = root / "audit.yaml"
    cfg.write_text(yaml.safe_dump(SMALL))
    assert main(["run", str(cfg), "--no-progress"]) == 0
    return root / "report"


@pytest.fixture
def bundle_copy(run_bundle: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "copy"
    shutil.copytree(run_bundle, dst)
    return dst


def test_run_writes_a_complete_manifest(run_bundle: Path) -> None:
    m = json.loads((run_bundle / BUNDLE_FILE).read_text())
    assert m["kind"] == "membership-inference" and m["bundle_version"] == "1.0"
    assert set(m["files"]) == {"results.json", "scores.npz", "report.html"}
    for name, d in m["files"].items():
        assert d == file_digest(run_bundle / name)
    results = json.loads((run_bundle / "results.json").read_text())
    assert m["seeds"] == results["settings"]["seeds"] and m["seeds"]["root"] == SMALL["seed"]
    assert m["dataset_fingerprint"] == results["settings"]["dataset"]["fingerprint"]
    assert m["config"]["model"]["kind"] == "logistic" and m["config"]["alpha"] == SMALL["alpha"]
    for pkg in ("python", "privaudit", "numpy", "scipy", "scikit-learn"):
        assert m["packages"][pkg]
    assert m["tolerances"] == TOLERANCES


def test_round_trip_verifies(run_bundle: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", str(run_bundle)]) == 0
    out = capsys.readouterr().out
    assert "verify: OK" in out and "0 mismatch" in out
    # the accuracies need the model: listed, not passed silently
    assert "target.train_accuracy" in out
    report = verify_bundle(run_bundle / BUNDLE_FILE)
    names = {c.name for c in report.checks if c.status == "ok"}
    # every attack's AUC, every per-attack bound, the agreement and the fingerprint were recomputed
    for a in SMALL["attacks"]:  # type: ignore[union-attr]
        assert any(n.startswith("attacks[") and f"({a}).auc" in n for n in names), a
    assert sum(n.endswith(".epsilon_lower_bound") for n in names) == len(SMALL["attacks"])  # type: ignore[arg-type]
    assert any(n.startswith("agreement.train") for n in names)
    assert "dataset fingerprint" in names
    # the calibrated evaluation needs the reference models' scores: listed, not recomputed
    results = json.loads((run_bundle / "results.json").read_text())
    skipped = {c.name for c in report.checks if c.status == "not-recomputable"}
    assert ("calibrated_evaluation" in skipped) == bool(results.get("calibrated_evaluation"))


def test_tampered_scores_are_detected(
    bundle_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    table = ScoreTable.load(bundle_copy)
    s = dict(table.scores)
    col = s["lira-online"].copy()
    member = table.member
    # move one non-member above every member: a small, plausible-looking edit
    i = int(np.flatnonzero(~member)[0])
    col[i] = np.nanmax(col) + 1.0
    s["lira-online"] = col
    ScoreTable(table.record_ids, member, s, table.thresholds).save(bundle_copy / "scores.npz")
    assert main(["verify", str(bundle_copy)]) == 1
    cap = capsys.readouterr()
    assert "MISMATCH" in cap.err
    assert "file scores.npz" in cap.out  # the digest
    assert "(lira-online).auc" in cap.out  # and the recomputation
    # with the manifest's digest "fixed" too, the recomputation alone still catches it
    m = json.loads((bundle_copy / BUNDLE_FILE).read_text())
    m["files"]["scores.npz"] = file_digest(bundle_copy / "scores.npz")
    (bundle_copy / BUNDLE_FILE).write_text(json.dumps(m))
    report = verify_bundle(bundle_copy)
    assert not report.ok
    assert all(not c.name.startswith("file ") for c in report.mismatches)
    assert any(c.name.endswith("(lira-online).auc") for c in report.mismatches)


def test_edited_result_is_detected(bundle_copy: Path) -> None:
    p = bundle_copy / "results.json"
    d = json.loads(p.read_text())
    d["audits"][0]["epsilon_lower_bound"] += 0.01
    p.write_text(json.dumps(d, indent=2))
    m = json.loads((bundle_copy / BUNDLE_FILE).read_text())
    m["files"]["results.json"] = file_digest(p)
    (bundle_copy / BUNDLE_FILE).write_text(json.dumps(m))
    report = verify_bundle(bundle_copy)
    assert [c.name for c in report.mismatches] == ["audits[0].epsilon_lower_bound"]


@pytest.mark.parametrize("damage", ["no-folder", "no-manifest", "garbage", "bad-scores", "kind"])
def test_unreadable_bundle_exits_2(
    damage: str, bundle_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = bundle_copy
    if damage == "no-folder":
        target = bundle_copy / "nowhere"
    elif damage == "no-manifest":
        (bundle_copy / BUNDLE_FILE).unlink()
    elif damage == "garbage":
        (bundle_copy / BUNDLE_FILE).write_bytes(b"\xff\x00 not json")
    elif damage == "bad-scores":
        (bundle_copy / "scores.npz").write_text("not a zip")
    else:
        m = json.loads((bundle_copy / BUNDLE_FILE).read_text())
        m["kind"] = "mystery"
        (bundle_copy / BUNDLE_FILE).write_text(json.dumps(m))
    assert main(["verify", str(target)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: BUNDLE") and "Traceback" not in err


def test_compare_tolerances() -> None:
    tol = {"rel": 1e-9, "abs": 1e-12}
    ok, _ = compare(
        {"a": 1.0, "b": [1, "x"], "c": "inf"},
        {"a": 1.0 + 1e-12, "b": [1, "x"], "c": float("inf")},
        "r",
        tol,
    )
    assert all(c.status == "ok" for c in ok) and len(ok) == 4
    bad, _ = compare({"a": 1.0}, {"a": 1.0 + 1e-6}, "r", tol)
    assert [c.status for c in bad] == ["mismatch"]
    bad, _ = compare({"a": True}, {"a": 1}, "r", tol)  # a bool is not a number
    assert [c.status for c in bad] == ["mismatch"]
    bad, skipped = compare({"a": [1, 2], "z": 0}, {"a": [1]}, "r", tol)
    assert [c.status for c in bad] == ["mismatch"] and [c.name for c in skipped] == ["r.z"]


@pytest.mark.parametrize("procedure", ["one-run", "multi-run", "fdp-one-run", "panoramia"])
def test_audit_bundle_round_trip_and_tamper(
    procedure: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = np.random.default_rng(5)
    mem = rng.random(400) < 0.5
    df = pd.DataFrame(
        {
            "score": 1 / (1 + np.exp(-(rng.standard_normal(400) + 1.5 * mem))),
            "member": mem.astype(int),
            "baseline_score": rng.random(400),
        }
    )
    csv = tmp_path / "s.csv"
    df.to_csv(csv, index=False)
    out = tmp_path / "b"
    args = ["audit", str(csv), "--procedure", procedure, "--out", str(out)]
    if procedure == "one-run":
        args += ["--selection", "held-out", "--seed", "3"]
    assert main(args) == 0
    assert {p.name for p in out.iterdir()} == {"bundle.json", "result.json", "inputs.npz"}
    m = json.loads((out / BUNDLE_FILE).read_text())
    assert m["kind"] == "audit" and m["config"]["procedure"] == procedure
    assert m["dataset_fingerprint"] == file_digest(csv)["sha256"]
    capsys.readouterr()
    assert main(["verify", str(out)]) == 0
    assert "verify: OK" in capsys.readouterr().out
    assert main(args) == 2  # the bundle folder exists: refused, untouched
    with np.load(out / "inputs.npz") as z:
        arrays = {k: z[k] for k in z.files}
    arrays["scores"] = arrays["scores"][::-1].copy()
    np.savez_compressed(out / "inputs.npz", **arrays)
    m["files"]["inputs.npz"] = file_digest(out / "inputs.npz")
    (out / BUNDLE_FILE).write_text(json.dumps(m))
    report = verify_bundle(out)
    assert not report.ok and any(c.name.startswith("result.") for c in report.mismatches)


@pytest.mark.slow  # re-runs the propensity cross-fitting and bootstrap: ~10-40 s
def test_zero_run_bundle_round_trip_and_tamper(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = np.random.default_rng(0)
    n = 240
    x = rng.standard_normal(n)
    member = rng.random(n) < 1 / (1 + np.exp(-x))
    df = pd.DataFrame(
        {
            "x": x,
            "colour": rng.choice(["red", "green", "blue"], n),  # a categorical feature
            "score": rng.standard_normal(n) + 1.2 * member + 0.5 * x,
            "member": member.astype(int),
        }
    )
    csv = tmp_path / "zr.csv"
    df.to_csv(csv, index=False)
    out = tmp_path / "zr"
    args = ["zero-run", str(csv), "--estimators", "logistic-sigmoid", "--bootstrap", "2"]
    assert main([*args, "--out", str(out)]) == 0
    assert {p.name for p in out.iterdir()} == {
        "bundle.json",
        "results.json",
        "report.html",
        "inputs.npz",
        "features.parquet",
    }
    m = json.loads((out / BUNDLE_FILE).read_text())
    assert m["kind"] == "zero-run" and m["config"]["n_bootstrap"] == 2
    assert m["config"]["features"] == ["x", "colour"]
    capsys.readouterr()
    assert main(["verify", str(out)]) == 0
    assert "verify: OK" in capsys.readouterr().out
    with np.load(out / "inputs.npz") as z:
        arrays = {k: z[k] for k in z.files}
    arrays["scores"] = arrays["scores"] + 0.3 * arrays["member"]  # a stronger-looking attack
    np.savez_compressed(out / "inputs.npz", **arrays)
    m["files"]["inputs.npz"] = file_digest(out / "inputs.npz")
    (out / BUNDLE_FILE).write_text(json.dumps(m))
    report = verify_bundle(out)
    assert not report.ok
    assert any("mu_lower_bound" in c.name for c in report.mismatches)
