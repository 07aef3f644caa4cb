"""Time each phase of ``privaudit demo``.

Usage::

    .venv/bin/python benchmarks/bench_demo.py [--quick] [--n-jobs N] [--seed S]

Phases: data loading; target training; reference, shadow, distilled and leave-one-out
model training (each including the signals the worker computes for its model); every
attack (timed one by one by re-running the experiment with that attack only against a
warm artifact store, so no model is retrained); metrics; report writing. A fresh
temporary artifact store is used, so the first pass trains everything.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--n-jobs", type=int, default=-1)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    from privaudit.config.build import build_trainer, load_dataset
    from privaudit.membership.experiment import run_experiment
    from privaudit.membership.pipeline import demo_config, experiment_config, run_audit
    from privaudit.report import write_report

    with tempfile.TemporaryDirectory() as tmp:
        cfg = demo_config(
            seed=args.seed,
            n_jobs=args.n_jobs,
            quick=args.quick,
            output_dir=Path(tmp) / "report",
            cache_dir=Path(tmp) / "cache",
        )
        t_all = time.perf_counter()
        report = run_audit(cfg, progress=False, write=False)
        t0 = time.perf_counter()
        assert report.out_dir is None
        write_report(cfg.output_dir, report.results, report.scores)
        t_report = time.perf_counter() - t0
        total = time.perf_counter() - t_all

        timings = report.results["timings"]
        rows = [("data (load Adult)", timings["data"])]
        labels = {
            "split": "split + keep matrix",
            "target": "target training (+ signals)",
            "reference": "reference models (+ signals)",
            "shadow": "shadow models (+ signals)",
            "distilled": "distilled models (+ signals)",
            "leave_one_out": "leave-one-out models (+ signals)",
            "attacks": "all attacks",
        }
        for key, label in labels.items():
            if f"experiment.{key}" in timings:
                rows.append((label, timings[f"experiment.{key}"]))

        # each attack alone, every model and signal table loaded from the warm store
        dataset = load_dataset(cfg)
        trainer = build_trainer(cfg.model, dataset.n_classes)
        base = experiment_config(cfg, dataset.n_records)
        import dataclasses

        for name in base.attacks:
            sub = dataclasses.replace(
                base,
                attacks=(name,),
                attack_params={k: v for k, v in base.attack_params.items() if k == name},
            )
            res = run_experiment(dataset, trainer, sub, store=cfg.cache_dir, progress=False)
            rows.append((f"  attack {name}", res.timings["attacks"]))
        rows.append(("metrics (all attacks + agreement)", timings["metrics"]))
        rows.append(("report (results.json, scores.npz, report.html)", t_report))

    width = max(len(r[0]) for r in rows)
    print(f"privaudit demo{' --quick' if args.quick else ''}, n_jobs={args.n_jobs}")
    for label, sec in rows:
        print(f"{label:<{width}}  {sec:8.2f} s")
    print(f"{'TOTAL (audit + report)':<{width}}  {total:8.2f} s")


if __name__ == "__main__":
    main()
