"""Faults on a REAL two-node Ray cluster (issue 32, item 3): a worker node's raylet killed
by process id mid-run -> its tasks are retried on the other node, same numbers; the driver
killed -> the same command resumes from the artifact store; a task that fails
deterministically fails the run once, naming the task (no retry)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def _pids_under(proc_pid: int) -> set[int]:
    import psutil

    try:
        return {p.pid for p in psutil.Process(proc_pid).children(recursive=True)}
    except psutil.Error:
        return set()


def _kill_when_started_on_worker(
    cluster: Any, attempts: Path, killed: dict[str, int], done: threading.Event
) -> None:
    """Kill the worker node's raylet as soon as a task attempt started on that node."""
    node = cluster.workers[-1].pid
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and not done.is_set():
        started = {int(p.name.split(".")[1]) for p in attempts.rglob("*.*.*")}
        if started & _pids_under(node):
            killed["pid"] = cluster.kill_raylet(len(cluster.workers) - 1)
            return
        time.sleep(0.2)


def test_killed_worker_node_tasks_retried_same_numbers(two_nodes: Any, tmp_path: Path) -> None:
    import cluster_tasks

    from privaudit.runtime.executor import RayExecutor

    items = list(range(8))
    ex = RayExecutor(address=two_nodes.address, attempts_dir=tmp_path / "attempts", progress=False)
    killed: dict[str, int] = {}
    (tmp_path / "attempts").mkdir()
    done = threading.Event()
    watcher = threading.Thread(
        target=_kill_when_started_on_worker, args=(two_nodes, tmp_path / "attempts", killed, done)
    )
    watcher.start()
    try:
        got = ex.map(cluster_tasks.seeded_draw, items, desc="draws", label=str)
    finally:
        done.set()
        watcher.join()
    assert "pid" in killed  # the raylet of the worker node was killed during the map
    import numpy as np

    expected = [float(np.random.default_rng(i).standard_normal()) for i in items]
    assert got == expected
    assert ex.retried >= 1  # the killed node's task ran again elsewhere


RECORD_RISK = {
    "dataset": "adult",
    "target": {"kind": "generator", "generator": "baynet", "params": {"degree": 1}},
    "attack": "tapas-query",
    "attack_params": {"n_trees": 20},
    "n": 100,
    "n_targets": 4,
    "n_rounds": 32,
    "n_shadow": 16,
    "n_aux": 400,
    "rounds_per_task": 1,
    "seed": 1,
}


def test_record_risk_survives_a_lost_node(two_nodes: Any, tmp_path: Path) -> None:
    from privaudit.record_risk.cli import build_record_risk
    from privaudit.record_risk.config import RecordRiskFileConfig
    from privaudit.record_risk.risk import run_record_risk
    from privaudit.runtime.executor import LocalExecutor, RayExecutor

    cfg = RecordRiskFileConfig.model_validate(RECORD_RISK)

    def run(executor: Any, cache: Path) -> Any:
        parts = build_record_risk(cfg)
        return run_record_risk(
            parts["dataset"], parts["target"], parts["attack"], parts["config"],
            table=parts["table"], store=cache, executor=executor,
        )  # fmt: skip

    import cluster_tasks

    local = run(LocalExecutor(1, progress=False), tmp_path / "local")
    attempts = tmp_path / "attempts"
    attempts.mkdir()
    ex = RayExecutor(address=two_nodes.address, attempts_dir=attempts, progress=False)
    # both nodes warm (a worker process each, privaudit imported), so the run uses both
    assert len(set(ex.map(cluster_tasks.pid, range(6), desc="warm-up"))) >= 2
    killed: dict[str, int] = {}
    done = threading.Event()
    watcher = threading.Thread(
        target=_kill_when_started_on_worker, args=(two_nodes, attempts, killed, done)
    )
    watcher.start()
    try:
        remote = run(ex, tmp_path / "ray")
    finally:
        done.set()
        watcher.join()
    assert "pid" in killed
    assert remote.to_dict()["records"] == local.to_dict()["records"]


def _env() -> dict[str, str]:
    from privaudit.runtime.local_cluster import LocalRayCluster

    return {**os.environ, **LocalRayCluster.driver_env}


def test_killed_driver_resumes_from_the_cache(two_nodes: Any, tmp_path: Path) -> None:
    from privaudit.cli import main

    cfg = {**RECORD_RISK, "seed": 2, "cache_dir": "cache", "output_dir": "rep"}
    path = tmp_path / "rr.yaml"
    path.write_text(yaml.safe_dump(cfg))
    code = "import sys; from privaudit.cli import main; sys.exit(main(sys.argv[1:]))"
    argv = [sys.executable, "-c", code, "record-risk", str(path), "--no-progress"]
    driver = subprocess.Popen(
        [*argv, "--ray", two_nodes.address], env=_env(), cwd=tmp_path,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    objects = tmp_path / "cache" / "objects"
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and driver.poll() is None:
            if objects.is_dir() and sum(1 for _ in objects.glob("*/*/manifest.json")) >= 3:
                break
            time.sleep(0.2)
        assert driver.poll() is None, "the run ended before it could be killed"
        driver.kill()  # SIGKILL: no handler, no clean-up
    finally:
        driver.kill()
        driver.wait(timeout=60)
    kept = sum(1 for _ in objects.glob("*/*/manifest.json"))
    assert kept >= 3
    assert main(["record-risk", str(path), "--no-progress", "--ray", two_nodes.address]) == 0
    resumed = json.loads((tmp_path / "rep" / "results.json").read_text())["record_risk"]
    cfg_local = {**cfg, "cache_dir": "cache-local", "output_dir": "rep-local"}
    path_local = tmp_path / "local.yaml"
    path_local.write_text(yaml.safe_dump(cfg_local))
    assert main(["record-risk", str(path_local), "--no-progress"]) == 0
    local = json.loads((tmp_path / "rep-local" / "results.json").read_text())["record_risk"]
    assert resumed["records"] == local["records"]
    # the killed run's finished tasks were not computed again
    assert resumed["releases"]["trained"] < local["releases"]["trained"]


def test_deterministic_failure_fails_once_naming_the_task(two_nodes: Any, tmp_path: Path) -> None:
    import cluster_tasks

    from privaudit.runtime.executor import RayExecutor, TaskError

    ex = RayExecutor(address=two_nodes.address, attempts_dir=tmp_path, progress=False)
    with pytest.raises(TaskError) as info:
        ex.map(cluster_tasks.fails_on_three, [1, 2, 3, 4], desc="fits", label=lambda x: f"m{x}")
    assert info.value.label == "m3" and isinstance(info.value.original, ValueError)
    assert "fits: task 2 (m3) failed with ValueError: three is not allowed" in str(info.value)
    starts = [p.name.split(".")[0] for p in tmp_path.rglob("*.*.*")]
    assert starts.count("2") == 1  # never retried
    assert ex.retried == 0
