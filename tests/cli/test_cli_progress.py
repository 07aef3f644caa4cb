"""Progress in logs (issue 29 item 2): ``--progress {auto,rich,plain,none}`` on every long
command, plain lines while the work runs when stderr is a file, and the same from the API.

The cadence of the plain lines is tested with an injected clock in
``tests/runtime/test_runtime_progress.py``; here: what reaches a log file, and when.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from privaudit.cli import main

TINY = {
    "dataset": "digits",
    "model": {"kind": "logistic", "params": {"C": 100.0, "max_iter": 300}},
    "attacks": ["loss", "reference", "lira-online"],
    "sizes": {"n_target_pool": 200, "n_population": 400},
    "models": {"n_reference": 4},
    "alpha": 0.1,
    "seed": 1,
    "n_jobs": 1,
    "output_dir": "report",
}


def _config(tmp_path: Path, **over: Any) -> Path:
    p = tmp_path / "audit.yaml"
    p.write_text(yaml.safe_dump({**TINY, **over}))
    return p


def _progress_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("privaudit: ")]


#: ``privaudit run`` whose metrics step waits for a file the test creates: the run is
#: provably still going when the test reads the log.
_GATED_RUN = """
    import sys, time
    from pathlib import Path
    import privaudit.membership.pipeline as pipeline

    gate = Path(sys.argv[1])
    metrics_step = pipeline.metrics_step

    def gated(*args, **kwargs):
        deadline = time.monotonic() + 120
        while not gate.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        return metrics_step(*args, **kwargs)

    pipeline.metrics_step = gated
    from privaudit.cli import main
    sys.exit(main(sys.argv[2:]))
"""


def _wait_for(path: Path, needle: str, proc: subprocess.Popen[bytes], timeout: float) -> str:
    deadline = time.monotonic() + timeout
    text = ""
    while time.monotonic() < deadline:
        text = path.read_text() if path.exists() else ""
        if needle in text or proc.poll() is not None:
            return text
        time.sleep(0.05)
    return text


def test_log_file_shows_progress_while_the_run_runs(tmp_path: Path) -> None:
    """stdout and stderr to one file, as ``privaudit run cfg > log.txt 2>&1``: the phases'
    lines are in the file while the process still runs (it waits in the metrics step)."""
    cfg, gate, log = _config(tmp_path), tmp_path / "gate", tmp_path / "log.txt"
    env = {k: v for k, v in os.environ.items() if k != "PRIVAUDIT_NO_PROGRESS"}
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(_GATED_RUN), str(gate), "run", str(cfg)],
            stdout=sink,
            stderr=subprocess.STDOUT,
            env=env,
        )
        try:
            seen = _wait_for(log, "privaudit: attacks 0/3", proc, timeout=180)
            running = proc.poll() is None
        finally:
            gate.touch()
            code = proc.wait(timeout=300)
    assert running, f"the run ended before its progress was seen:\n{seen}"
    lines = _progress_lines(seen)
    # the phases in order as they start; a phase slow enough (a loaded machine) also
    # reports its progress and end ("... elapsed", "... done in 2s"), which may come between
    starts = [ln for ln in lines if " done in " not in ln and " elapsed" not in ln]
    assert starts[:4] == [
        "privaudit: loading the data...",
        "privaudit: checks before training...",
        "privaudit: target model...",
        "privaudit: reference models 0/4",
    ], seen
    assert "privaudit: attacks 0/3" in lines
    assert "Membership inference" not in seen  # the summary comes at the end
    assert code == 0
    final = log.read_text()
    assert "privaudit: metrics..." in final and "privaudit: writing the report..." in final
    assert final.index("privaudit: writing the report...") < final.index("Membership inference")


def test_progress_modes_of_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = _config(tmp_path, attacks=["population"])
    assert main(["run", str(cfg), "--out", str(tmp_path / "a"), "--progress", "plain"]) == 0
    err = capsys.readouterr().err
    assert "privaudit: loading the data..." in err and "privaudit: attacks 0/1" in err
    assert main(["run", str(cfg), "--out", str(tmp_path / "b"), "--progress", "none"]) == 0
    assert _progress_lines(capsys.readouterr().err) == []
    assert main(["run", str(cfg), "--progress", "loud"]) == 2
    err = capsys.readouterr().err
    assert "--progress" in err and "auto, rich, plain, none" in err


def test_progress_from_the_python_api(tmp_path: Path) -> None:
    from privaudit.membership.config import load_config
    from privaudit.membership.pipeline import run_audit
    from privaudit.runtime.progress import ProgressEvent

    events: list[ProgressEvent] = []
    report = run_audit(load_config(_config(tmp_path)), progress=events.append, write=False)
    assert report.results["attacks"]
    starts = [e.desc for e in events if e.stage == "start"]
    assert starts[:4] == [
        "loading the data",
        "checks before training",
        "target model",
        "reference models",
    ]
    assert "attacks" in starts and "metrics" in starts
    refs = [e for e in events if e.desc == "reference models"]
    assert [e.done for e in refs] == [0, 1, 2, 3, 4, 4] and refs[-1].stage == "end"
    assert all(e.completed for e in events)


def test_zero_run_and_record_risk_take_progress(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(0)
    mem = np.arange(200) < 100
    x = rng.standard_normal(200) + 0.5 * mem
    table = tmp_path / "t.csv"
    pd.DataFrame({"x": x, "score": x + mem, "member": mem.astype(int)}).to_csv(table, index=False)
    argv = ["zero-run", str(table), "--estimators", "logistic-sigmoid", "--bootstrap", "2"]
    assert main([*argv, "--progress", "plain"]) == 0
    err = capsys.readouterr().err
    assert "privaudit: propensity models..." in err
    assert "privaudit: bootstrap logistic-sigmoid 0/2" in err
    assert main([*argv, "--json"]) == 0  # --json: quiet unless asked
    assert _progress_lines(capsys.readouterr().err) == []
    assert main(["record-risk", "cfg.yaml", "--progress", "loud"]) == 2
    assert main(["panoramia", "cfg.yaml", "--progress", "loud"]) == 2


def test_progress_mode_of_the_options() -> None:
    from privaudit.cli_common.progress_option import progress_mode

    assert progress_mode("auto", False) == "auto"
    assert progress_mode(" Plain ", False) == "plain"
    assert progress_mode("rich", True) == "none"  # --no-progress wins
    assert progress_mode("auto", False, quiet_default=True) == "none"  # --json
    assert progress_mode("plain", False, quiet_default=True) == "plain"


@pytest.mark.slow
def test_demo_quick_redirected_to_a_file_shows_progress_while_it_runs(tmp_path: Path) -> None:
    """The issue's check, as a user types it: ``privaudit demo --quick > log.txt 2>&1``."""
    script = Path(sys.executable).with_name("privaudit")
    if not script.is_file():
        pytest.skip("no privaudit console script beside this interpreter")
    env = {k: v for k, v in os.environ.items() if k != "PRIVAUDIT_NO_PROGRESS"}
    log = tmp_path / "log.txt"
    proc = subprocess.Popen(
        f"'{script}' demo --quick --n-jobs 2 --no-cache --out rep > log.txt 2>&1",
        shell=True,
        cwd=tmp_path,
        env=env,
    )
    try:
        seen = _wait_for(log, "privaudit: reference models", proc, timeout=300)
        running = proc.poll() is None
    finally:
        code = proc.wait(timeout=1200)
    assert running, seen
    assert "privaudit: target model..." in seen and "Membership inference" not in seen
    final = log.read_text()
    assert code == 0, final
    assert final.index("privaudit: reference models") < final.index("Membership inference")
    assert "privaudit: leave-one-out models" in final
