"""Speed-up of reference-model training with 2 worker processes instead of 1.

Usage::

    .venv/bin/python benchmarks/bench_workers.py [--model mlp|gradient_boosting]
        [--n-reference 8] [--threads 1] [--repeats 1] [--json PATH]

Trains the reference models of an audit on UCI Adult (``run_experiment`` with the
``lira-online`` attack only, no artifact store) once with one worker and once with two,
each worker limited to ``--threads`` BLAS/OpenMP threads (the one-worker run is inline,
under the same ``threadpoolctl`` limit), and prints the seconds of the reference phase
and the speed-up ``t(1 worker) / t(2 workers)``. The two-worker time includes starting
the processes and sending them the dataset. The goal on an idle machine with at least
two cores is a speed-up of 1.8 or more; on a machine that other jobs share, both times
(and the ratio) are distorted, and the script prints the load average next to them.

``--json PATH`` writes ``{"seconds_1_worker", "seconds_2_workers", "speedup", "cores",
"load_average", "model", "n_reference", "threads_per_worker"}``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
from pathlib import Path
from typing import Any

MODELS: dict[str, dict[str, Any]] = {
    # the demo's target: an overfit MLP (BLAS-bound)
    "mlp": {"kind": "mlp", "params": {"hidden_layer_sizes": [256], "max_iter": 100}},
    # the example: histogram gradient boosting (OpenMP-bound)
    "gradient_boosting": {"kind": "gradient_boosting", "params": {"max_iter": 200}},
}


def reference_seconds(model: str, n_reference: int, n_jobs: int, threads: int, seed: int) -> float:
    """Seconds of the reference phase of one experiment with ``n_jobs`` workers."""
    from threadpoolctl import threadpool_limits

    from privaudit.config import config_from_dict
    from privaudit.games.experiment import run_experiment
    from privaudit.pipeline import build_trainer, experiment_config, load_dataset
    from privaudit.runtime.executor import LocalExecutor

    cfg = config_from_dict(
        {
            "dataset": "adult",
            "model": MODELS[model],
            # LiRA trains the reference models (Attack R now trains population "shadow" ones)
            "attacks": ["lira-online"],
            "sizes": {"n_target_pool": 2400, "n_population": 2400},
            "models": {"n_reference": n_reference},
            "seed": seed,
            "n_jobs": n_jobs,
        }
    )
    data = load_dataset(cfg)
    exp = experiment_config(cfg, data.n_records)
    trainer = build_trainer(cfg.model, data.n_classes)
    executor = LocalExecutor(n_jobs, progress=False, threads_per_worker=threads)
    with threadpool_limits(limits=threads):  # the inline (1-worker) run gets the same cap
        result = run_experiment(data, trainer, exp, executor=executor)
    return float(result.timings["reference"])


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--model", choices=sorted(MODELS), default="mlp")
    parser.add_argument("--n-reference", type=int, default=8)
    parser.add_argument("--threads", type=int, default=1, help="BLAS/OpenMP threads per worker")
    parser.add_argument("--repeats", type=int, default=1, help="median over this many runs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()

    from privaudit.runtime.executor import available_cores

    cores = available_cores()
    load_before = os.getloadavg()
    times: dict[int, float] = {}
    for n_jobs in (1, 2):
        runs = [
            reference_seconds(args.model, args.n_reference, n_jobs, args.threads, args.seed)
            for _ in range(args.repeats)
        ]
        times[n_jobs] = statistics.median(runs)
    load_after = os.getloadavg()
    speedup = times[1] / times[2]
    print(
        f"reference-model training, {args.n_reference} x {args.model} on Adult (pool 2400), "
        f"{args.threads} thread(s) per worker, {cores} cores"
    )
    print(f"  1 worker : {times[1]:8.2f} s")
    print(f"  2 workers: {times[2]:8.2f} s (including process start-up)")
    print(f"  speed-up : {speedup:8.2f}x  (goal on an idle machine: >= 1.8x)")
    print(
        f"  load average (1 min) before / after: {load_before[0]:.2f} / {load_after[0]:.2f}"
        + ("  -- the machine was busy: the figures are distorted" if load_before[0] > 0.5 else "")
    )
    if args.json is not None:
        args.json.write_text(
            json.dumps(
                {
                    "seconds_1_worker": times[1],
                    "seconds_2_workers": times[2],
                    "speedup": speedup,
                    "cores": cores,
                    "load_average": [load_before[0], load_after[0]],
                    "model": args.model,
                    "n_reference": args.n_reference,
                    "threads_per_worker": args.threads,
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
