"""An audit logged as an MLflow run (issue 29, item 6), read back with MLflow's client.

Against a local file-store tracking URI (``file:///...``): the figures of results.json as
metrics, its settings as params, the report's files as artifacts, for ``privaudit.log_to_mlflow``
and ``--mlflow URI`` on the commands; the demo's run in the slow tests. Skipped cleanly
without mlflow (``pip install 'privaudit[mlflow]'``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from privaudit.attacks.base import BUILTIN_ATTACKS
from privaudit.cli import main
from privaudit.cli_common.mlflow_cli import with_bare_values
from privaudit.report.mlflow_run import mlflow_metrics, mlflow_params


def _client(uri: str) -> Any:
    pytest.importorskip("mlflow")
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=uri)


def _read_back(uri: str, run_id: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # reading a file store, MLflow >= 3.7
    client = _client(uri)
    return client, client.get_run(run_id)


def _check_run(client: Any, run: Any, report: Path) -> None:
    results = json.loads((report / "results.json").read_text())
    metrics = run.data.metrics
    for a in results["attacks"]:
        assert metrics[f"attacks/{a['name']}/auc"] == pytest.approx(a["auc"], rel=1e-12)
        for k, v in a["tpr_at_fpr"].items():
            key = f"attacks/{a['name']}/tpr_at_fpr_{k}"
            assert (key in metrics) == (v is not None)
            if v is not None:
                assert metrics[key] == pytest.approx(v, rel=1e-12)
        if a["achieved_fpr"] is not None:
            assert metrics[f"attacks/{a['name']}/achieved_fpr"] == pytest.approx(a["achieved_fpr"])
    for b in results["audits"]:
        key = f"audits/{b['procedure']}/{b.get('attack') or 'all'}/epsilon_lower_bound"
        if (b.get("extra") or {}).get("gated") is False:  # refused: no bound to log
            assert key not in metrics
        elif b["epsilon_lower_bound"] is not None:
            assert metrics[key] == pytest.approx(b["epsilon_lower_bound"], rel=1e-12)
    assert metrics["target/test_accuracy"] == pytest.approx(results["target"]["test_accuracy"])
    params = run.data.params
    s = results["settings"]
    assert params["alpha"] == str(s["alpha"])
    assert json.loads(params["attacks"]) == s["attacks"]
    assert params["model.kind"] == s["model"]["kind"]
    assert params["seeds.attacker"] == str(s["seeds"]["attacker"])
    assert params["seed"] == str(results["seed"])
    names = {f.path for f in client.list_artifacts(run.info.run_id)}
    assert {"report.html", "results.json", "scores.npz", "bundle.json"} <= names
    got = client.download_artifacts(run.info.run_id, "results.json")
    assert json.loads(Path(got).read_text()) == results
    assert run.info.status == "FINISHED"
    assert run.data.tags["privaudit.version"] == results["privaudit_version"]


def test_log_to_mlflow_writes_figures_settings_and_files(
    small_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("mlflow")
    import privaudit

    uri = (tmp_path / "mlruns").as_uri()
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    run_id = privaudit.log_to_mlflow(small_run, tracking_uri=uri, experiment="audits")
    import os

    assert "MLFLOW_ALLOW_FILE_STORE" not in os.environ  # allowed for the call only
    client, run = _read_back(uri, run_id, monkeypatch)
    assert client.get_experiment(run.info.experiment_id).name == "audits"
    assert run.info.run_name == small_run.name
    _check_run(client, run, small_run)


def test_run_with_mlflow_option_logs_the_run(
    small_run: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    pytest.importorskip("mlflow")
    import yaml

    raw = yaml.safe_load((small_run.parent / "audit.yaml").read_text())
    cfg = tmp_path / "audit.yaml"
    cfg.write_text(yaml.safe_dump({**raw, "attacks": ["loss", "population"]}))
    uri = (tmp_path / "mlruns").as_uri()
    assert main(["run", str(cfg), "--no-progress", "--mlflow", uri]) == 0
    err = capsys.readouterr().err
    assert f"logged to {uri}" in err
    run_id = err.split("MLflow: run ")[1].split()[0]
    client, run = _read_back(uri, run_id, monkeypatch)
    _check_run(client, run, tmp_path / "report")
    assert run.data.tags["privaudit.command"] == "run"


def test_a_bare_mlflow_flag_means_the_default_uri() -> None:
    assert with_bare_values(["demo", "--mlflow"]) == ["demo", "--mlflow", ""]
    assert with_bare_values(["demo", "--mlflow", "--quick"]) == ["demo", "--mlflow", "", "--quick"]
    assert with_bare_values(["demo", "--mlflow", "file:///x"]) == ["demo", "--mlflow", "file:///x"]


def test_mlflow_missing_is_refused_before_any_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "mlflow", None)  # import mlflow raises ImportError
    out = tmp_path / "demo"
    assert main(["demo", "--quick", "--out", str(out), "--mlflow", (tmp_path / "m").as_uri()]) == 2
    err = capsys.readouterr().err
    assert "pip install 'privaudit[mlflow]'" in err and err.count("\n") == 1
    assert not out.exists() and not (tmp_path / "m").exists()


def test_an_unwritable_tracking_folder_is_refused_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("mlflow")
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    out = tmp_path / "demo"
    uri = (blocker / "mlruns").as_uri()
    assert main(["demo", "--quick", "--out", str(out), "--mlflow", uri]) == 2
    assert "tracking folder that can be written" in capsys.readouterr().err
    assert not out.exists()


def test_metric_and_param_names_are_what_mlflow_accepts(small_run: Path) -> None:
    import re

    results = json.loads((small_run / "results.json").read_text())
    metrics, params = mlflow_metrics(results), mlflow_params(results)
    ok = re.compile(r"^[A-Za-z0-9_.\- /]+$")
    assert all(ok.match(k) for k in [*metrics, *params])
    assert all(isinstance(v, float) for v in metrics.values())
    assert all(len(v) <= 500 for v in params.values())
    assert "timings/experiment" in metrics or any(k.startswith("timings/") for k in metrics)


@pytest.mark.slow
def test_the_demo_run_in_mlflow(
    quick_demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("mlflow")
    from privaudit import log_to_mlflow

    uri = f"file://{tmp_path}/mlruns"
    run_id = log_to_mlflow(quick_demo, tracking_uri=uri)
    client, run = _read_back(uri, run_id, monkeypatch)
    _check_run(client, run, quick_demo)
    assert len([k for k in run.data.metrics if k.endswith("/auc")]) == len(
        BUILTIN_ATTACKS
    )  # the demo runs every built-in attack
