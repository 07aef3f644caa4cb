"""Speed-up of reference-model training with 2 workers instead of 1.

Usage::

    .venv/bin/python benchmarks/bench_workers.py [--model mlp|gradient_boosting]
        [--n-reference 16] [--threads 1] [--repeats 1] [--all-in-workers] [--json PATH]

Trains the reference models of an audit on UCI Adult (``run_experiment`` with the
``lira-online`` attack only, no artifact store) with one worker (inline, under a
``threadpoolctl`` limit of ``--threads``) and with two workers (``LocalExecutor(2)``: this
process, in a thread, and one worker process -- or, with ``--all-in-workers``, two worker
processes -- each limited to ``--threads`` BLAS/OpenMP threads), and prints the wall time of the reference phase --
the one ``executor.map`` that trains the ``--n-reference`` models -- and the speed-up
``t(1 worker) / t(2 workers)``. Each configuration runs two experiments one after the
other with one executor, as a game's trials or a script's audits do:

* **first run** -- what a single ``privaudit run`` experiences. The executor is new:
  ``run_experiment`` starts its worker process(es) (spawn, then import of NumPy,
  scikit-learn and privaudit) just before the target model trains in this process, so
  the start-up overlaps the target's training; whatever start-up is left when the
  reference phase begins is waited for *inside* the reference phase and counted in it,
  as are pickling the task, writing the dataset to the pool's folder and every worker
  reading it. The CPU the start-up takes from the target shows in the target phase,
  printed beside it, and in the whole experiment's time.
* **next run** (seed + 1, same executor) -- the workers are already running and have
  imported everything; the reference phase still ships the new task (its dataset
  buffer is already in the pool's folder) and trains the models.

The goal on an idle machine with at least two cores is a speed-up of 1.8 or more for
the reference phase of a ``privaudit run`` (below). On a machine that other jobs share, every time (and
the ratio) is distorted; the script prints the load average next to them.

A third measurement runs the whole audit as ``privaudit run`` does (``run_audit``, which
starts its workers before the data loads) and prints its reference phase: this is the
figure the goal applies to.

``--json PATH`` writes ``{"seconds_1_worker", "seconds_2_workers", "speedup"}`` (the
reference phase of ``run_audit``), ``{"seconds_1_worker_first_run",
"seconds_2_workers_first_run", "speedup_first_run", "audit_seconds"}`` and
``{"seconds_1_worker_next_run", "seconds_2_workers_next_run",
"speedup_next_run", "target_seconds", "experiment_seconds", "cores", "load_average",
"model", "n_reference", "threads_per_worker", "repeats", "use_main_process"}``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

MODELS: dict[str, dict[str, Any]] = {
    # the demo's target: an overfit MLP (BLAS-bound)
    "mlp": {"kind": "mlp", "params": {"hidden_layer_sizes": [256], "max_iter": 100}},
    # the example: histogram gradient boosting (OpenMP-bound)
    "gradient_boosting": {"kind": "gradient_boosting", "params": {"max_iter": 200}},
}

RUNS = ("first", "next")


def _config(model: str, n_reference: int, n_jobs: int, seed: int) -> Any:
    from privaudit.membership.config import config_from_dict

    return config_from_dict(
        {
            "dataset": "adult",
            "model": MODELS[model],
            # LiRA trains the reference models (Attack R trains population "shadow" ones)
            "attacks": ["lira-online"],
            "sizes": {"n_target_pool": 2400, "n_population": 2400},
            "models": {"n_reference": n_reference},
            "seed": seed,
            "n_jobs": n_jobs,
        }
    )


def audit_run(model: str, n_reference: int, n_jobs: int, threads: int, seed: int) -> dict[str, Any]:
    """Reference phase and whole-audit seconds of one ``run_audit`` (what ``privaudit run``
    does: its own executor, workers started before the data loads, closed at the end)."""
    from threadpoolctl import threadpool_limits

    from privaudit.membership.pipeline import run_audit

    cfg = _config(model, n_reference, n_jobs, seed)
    t0 = time.perf_counter()
    with threadpool_limits(limits=threads):
        report = run_audit(cfg, progress=False, write=False)
    return {
        "reference": float(report.results["timings"]["experiment.reference"]),
        "audit": time.perf_counter() - t0,
    }


def two_runs(
    model: str, n_reference: int, n_jobs: int, threads: int, seed: int, main: bool
) -> dict[str, Any]:
    """Reference, target and whole-experiment seconds of two experiments run one after
    the other with one new executor of ``n_jobs`` workers (seeds ``seed``, ``seed + 1``)."""
    from threadpoolctl import threadpool_limits

    from privaudit.config.build import build_trainer, load_dataset
    from privaudit.membership.experiment import run_experiment
    from privaudit.membership.pipeline import experiment_config
    from privaudit.runtime.executor import LocalExecutor

    out: dict[str, Any] = {}
    with LocalExecutor(
        n_jobs, progress=False, threads_per_worker=threads, use_main_process=main
    ) as executor:
        for k, run in enumerate(RUNS):
            cfg = _config(model, n_reference, n_jobs, seed + k)
            data = load_dataset(cfg)
            exp = experiment_config(cfg, data.n_records)
            trainer = build_trainer(cfg.model, data.n_classes)
            t0 = time.perf_counter()
            with threadpool_limits(limits=threads):  # the inline (1-worker) run gets the same cap
                result = run_experiment(data, trainer, exp, executor=executor)
            out[run] = {
                "reference": float(result.timings["reference"]),
                "target": float(result.timings["target"]),
                "experiment": time.perf_counter() - t0,
            }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--model", choices=sorted(MODELS), default="mlp")
    parser.add_argument(
        "--n-reference", type=int, default=16, help="reference models (the demo trains 16)"
    )
    parser.add_argument("--threads", type=int, default=1, help="BLAS/OpenMP threads per worker")
    parser.add_argument("--repeats", type=int, default=1, help="median over this many runs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--all-in-workers",
        action="store_true",
        help="two worker processes (default: this process and one worker process)",
    )
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()

    from privaudit.runtime.executor import available_cores

    cores = available_cores()
    load_before = os.getloadavg()
    raw: dict[int, list[dict[str, Any]]] = {
        n_jobs: [
            two_runs(
                args.model,
                args.n_reference,
                n_jobs,
                args.threads,
                args.seed,
                not args.all_in_workers,
            )
            for _ in range(args.repeats)
        ]
        for n_jobs in (1, 2)
    }
    audits: dict[int, list[dict[str, Any]]] = {
        n_jobs: [
            audit_run(args.model, args.n_reference, n_jobs, args.threads, args.seed)
            for _ in range(args.repeats)
        ]
        for n_jobs in (1, 2)
    }
    load_after = os.getloadavg()

    def amed(n_jobs: int, phase: str) -> float:
        return statistics.median(r[phase] for r in audits[n_jobs])

    def arow(text: str, phase: str) -> str:
        one, two = amed(1, phase), amed(2, phase)
        return f"  {text:<34}{one:9.2f} s{two:11.2f} s{one / two:9.2f}x"

    def med(n_jobs: int, run: str, phase: str) -> float:
        return statistics.median(r[run][phase] for r in raw[n_jobs])

    def row(text: str, run: str, phase: str) -> str:
        one, two = med(1, run, phase), med(2, run, phase)
        return f"  {text:<34}{one:9.2f} s{two:11.2f} s{one / two:9.2f}x"

    print(
        f"reference-model training, {args.n_reference} x {args.model} on Adult (pool 2400), "
        f"{args.threads} thread(s) per worker, {cores} cores, median of {args.repeats}"
    )
    two = "2 processes" if args.all_in_workers else "this + 1 process"
    print(f"  2 workers = {two} (LocalExecutor(2, use_main_process={not args.all_in_workers}))")
    print(f"  {'':<34}{'1 worker':>11}{'2 workers':>13}{'speed-up':>10}")
    print(row("reference phase, first run (*)", "first", "reference"))
    print(row("reference phase, next run", "next", "reference"))
    print(row("target phase, first run (**)", "first", "target"))
    print(row("whole experiment, first run", "first", "experiment"))
    print(arow("reference phase, privaudit run (***)", "reference"))
    print(arow("whole privaudit run", "audit"))
    print("  goal on an idle machine: reference phase of a privaudit run >= 1.8x")
    print(
        "  (*) run_experiment with a new executor: includes waiting for the workers' start-up\n"
        "      left over when the phase begins (they start when the target starts training),\n"
        "      shipping the task and data\n"
        "  (**) the target trains in this process while the workers start\n"
        "  (***) run_audit (what `privaudit run` and `privaudit demo` call): its workers start\n"
        "      before the data loads, so loading, the checks before training and the target\n"
        "      overlap their start-up; whatever is left is counted in the reference phase"
    )
    print(
        f"  load average (1 min) before / after: {load_before[0]:.2f} / {load_after[0]:.2f}"
        + ("  -- the machine was busy: the figures are distorted" if load_before[0] > 0.5 else "")
    )
    if args.json is not None:
        args.json.write_text(
            json.dumps(
                {
                    "seconds_1_worker": amed(1, "reference"),
                    "seconds_2_workers": amed(2, "reference"),
                    "speedup": amed(1, "reference") / amed(2, "reference"),
                    "seconds_1_worker_first_run": med(1, "first", "reference"),
                    "seconds_2_workers_first_run": med(2, "first", "reference"),
                    "speedup_first_run": med(1, "first", "reference")
                    / med(2, "first", "reference"),
                    "audit_seconds": {str(n): amed(n, "audit") for n in (1, 2)},
                    "seconds_1_worker_next_run": med(1, "next", "reference"),
                    "seconds_2_workers_next_run": med(2, "next", "reference"),
                    "speedup_next_run": med(1, "next", "reference") / med(2, "next", "reference"),
                    "target_seconds": {str(n): med(n, "first", "target") for n in (1, 2)},
                    "experiment_seconds": {str(n): med(n, "first", "experiment") for n in (1, 2)},
                    "cores": cores,
                    "load_average": [load_before[0], load_after[0]],
                    "model": args.model,
                    "n_reference": args.n_reference,
                    "threads_per_worker": args.threads,
                    "repeats": args.repeats,
                    "use_main_process": not args.all_in_workers,
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
