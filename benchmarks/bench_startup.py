"""Start-up time of the ``privaudit`` command line (issue 29 item 3).

Usage::

    .venv/bin/python benchmarks/bench_startup.py [--repeats 5] [--command run] [--json PATH]

Runs ``privaudit --version``, ``privaudit --help`` and ``privaudit <command> --help`` (each
command given with ``--command``, default ``run`` and ``demo``) ``--repeats`` times as
fresh subprocesses (the console script beside this interpreter, else the same call of
``privaudit.cli.main``) and prints the median, minimum and maximum wall time of each. The goal
is a median under 0.5 s for ``--version`` and ``--help``: the commands' modules import
NumPy, pandas, scikit-learn and the audit layers inside the command functions, so the
start-up pays only for Python, typer (rich for the help screen) and privaudit's package
metadata. On a shared machine every wall time is distorted; the load average is printed
next to the figures, and the median CPU time (user + system of the child) beside them, which
other jobs distort less. A benchmark, not a test: nothing is asserted.

``--json PATH`` writes ``{label: {"median_s", "min_s", "max_s", "runs_s", "median_cpu_s"}}``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path


def _launcher() -> list[str]:
    """The ``privaudit`` console script of this interpreter's environment, else what it runs."""
    script = Path(sys.executable).with_name("privaudit")
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from privaudit.cli import main; sys.exit(main())"]


def _cpu() -> float:
    """CPU seconds (user + system) of the finished child processes so far."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _time(argv: list[str], repeats: int) -> tuple[list[float], list[float]]:
    """Wall and CPU time of ``repeats`` fresh runs of ``argv`` (output discarded; exit 0
    required)."""
    wall, cpu = [], []
    for _ in range(repeats):
        c0, t0 = _cpu(), time.perf_counter()
        done = subprocess.run(argv, capture_output=True, check=False)
        wall.append(time.perf_counter() - t0)
        cpu.append(_cpu() - c0)
        if done.returncode != 0:
            sys.exit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.decode()[-500:]}")
    return wall, cpu


def main() -> None:
    """Parse the options, time each invocation and print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument(
        "--command", action="append", help="also time `privaudit COMMAND --help` (repeatable)"
    )
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    base = _launcher()
    cases = [("--version", ["--version"]), ("--help", ["--help"])]
    cases += [(f"{c} --help", [c, "--help"]) for c in (args.command or ["run", "demo"])]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"privaudit start-up: {' '.join(base)}; {args.repeats} runs each; load {load:.2f}")
    print(f"{'invocation':<16} {'median':>8} {'min':>8} {'max':>8} {'cpu':>8}")
    doc = {}
    for label, extra in cases:
        runs, cpu = _time(base + extra, args.repeats)
        med, med_cpu = statistics.median(runs), statistics.median(cpu)
        print(f"{label:<16} {med:8.3f} {min(runs):8.3f} {max(runs):8.3f} {med_cpu:8.3f}  s")
        doc[label] = {
            "median_s": med,
            "min_s": min(runs),
            "max_s": max(runs),
            "runs_s": runs,
            "median_cpu_s": med_cpu,
        }
    if args.json is not None:
        args.json.write_text(json.dumps(doc, indent=2) + "\n")


if __name__ == "__main__":
    main()
