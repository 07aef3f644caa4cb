"""Zero-Run under estimated propensities: the null battery of the headline, and per-estimator cells.

**Battery** (the default; :mod:`privaudit.zero_run.null_battery`): the audit's headline
(:func:`~privaudit.zero_run.zero_run_audit` at its defaults, every validity check on) on
0-DP scores under a mean shift (1 and 2), spread shifts (sd ratio 1.3 and 1.6), a shift in the
correlation of two features, a mixture (a sub-population present only among members) and a
categorical shift, 1,500 per class; the rate of headline eps > 0 and mu > 0 must be at most
beta + 2 SE in every case (a refused headline counts as 0: it is a correct result). Beside
it, the power cases: a Gaussian mu = 1 release under the mean shift 0.3, the spread shift 1.6
and the mixture: the mean headline mu, how often it is above 0, refused, above the truth.

Run::

    .venv/bin/python benchmarks/bench_zero_run_null.py [--reps 100] [--power-reps 50]
        [--cases mean-1 spread-1.6 ...] [--power-cases mean-0.3 ...] [--jobs 2] [--json PATH]

**Per-estimator cells** (``--estimators ...``, issue 9): a 0-DP mechanism whose attack score is the shifted feature itself (1,500 members vs
1,500 non-members, shift gamma = 1 and 2, features-only AUC 0.92 and 0.998): any pointwise
eps or mu bound above 0 is a violation. Power: a Gaussian mechanism with mu = 1 under shift
0.3. Design: :mod:`privaudit.zero_run.null_check`. Each replicate refits the
propensity model (paired cross-fitting), so the run is dominated by model fitting;
replicates run in separate processes (``--jobs``).

Run::

    .venv/bin/python benchmarks/bench_zero_run_null.py --estimators logistic hist-gb ...
        [--reps 300] [--shifts 1 2] [--margins 0 2] [--power-reps 20] [--jobs 2] [--json PATH]

``headline`` is the audit's headline (rule "max"): every estimator of
``--headline-estimators`` (default: the CLI's defaults) at beta / J on the same data and
tampering coins, the largest bound.

Prints, per estimator x shift x margin z: the violation rates of the eps and the mu bound
with their standard error and whether they are within beta + 2 SE; then, for the power
check, the mean pointwise mu (truth 1) per estimator and margin; then the wall time.
``margin 0`` is the paper's plug-in correction (privaudit's previous behaviour).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import numpy as np

from privaudit.zero_run.audit import DEFAULT_ESTIMATORS
from privaudit.zero_run.null_battery import NULL_CASES, POWER_CASES, battery_replicate
from privaudit.zero_run.null_check import (
    gaussian_power_headline_replicate,
    gaussian_power_replicate,
    null_headline_replicate,
    null_replicate,
)

Item = tuple[int, str, float, tuple[float, ...], int, tuple[str, ...]]


def _null(args: Item) -> dict[str, Any]:
    seed, est, gamma, zs, n, head = args
    if est == "headline":
        return null_headline_replicate(seed, gamma, estimators=head, n_per_class=n, margin_zs=zs)
    return null_replicate(seed, est, gamma, n_per_class=n, margin_zs=zs)


def _power(args: Item) -> dict[str, Any]:
    seed, est, gamma, zs, n, head = args
    if est == "headline":
        return gaussian_power_headline_replicate(
            seed, estimators=head, gamma=gamma, n_per_class=n, margin_zs=zs
        )
    return gaussian_power_replicate(seed, est, gamma=gamma, n_per_class=n, margin_zs=zs)


def _battery_item(args: tuple[str, int, float | None, int]) -> dict[str, Any]:
    case, seed, power_mu, n = args
    return battery_replicate(case, seed, power_mu=power_mu, n_per_class=n)


def _battery(a: argparse.Namespace, pool: ProcessPoolExecutor, out: dict[str, Any]) -> bool:
    """The null battery and the power cases of the headline; True when a null case fails."""
    failed = False
    print(
        f"{'null case':12s} {'n':>4s} {'eps>0':>6s} {'mu>0':>6s} {'refused':>8s} "
        f"{'beta+2SE':>9s}  verdict",
        flush=True,
    )
    for case in a.cases:
        items = [(case, a.seed + i, None, a.per_class) for i in range(a.reps)]
        rows = list(pool.map(_battery_item, items, chunksize=2))
        n = len(rows)
        limit = a.beta + 2 * math.sqrt(a.beta * (1 - a.beta) / n)
        eps_rate = sum(r["eps"] > 0 for r in rows) / n
        mu_rate = sum(r["mu"] > 0 for r in rows) / n
        refused = sum(r["refused"] for r in rows) / n
        ok = eps_rate <= limit and mu_rate <= limit
        failed |= not ok
        out["battery_null"].append(
            {
                "case": case,
                "n": n,
                "eps_positive_rate": eps_rate,
                "mu_positive_rate": mu_rate,
                "refused_rate": refused,
                "beta_plus_2se": limit,
                "within": ok,
                "rows": rows,
            }
        )
        print(
            f"{case:12s} {n:4d} {eps_rate:6.3f} {mu_rate:6.3f} {refused:8.3f} {limit:9.3f}  "
            f"{'ok' if ok else 'VIOLATED'}",
            flush=True,
        )
    print(
        f"{'power case':12s} {'n':>4s} {'mean mu':>8s} {'mu>0':>6s} {'refused':>8s} "
        f"{'mu>1':>6s} {'mean eps':>9s}",
        flush=True,
    )
    for case in a.power_cases:
        items = [(case, a.seed + i, 1.0, a.per_class) for i in range(a.power_reps)]
        rows = list(pool.map(_battery_item, items, chunksize=2))
        n = len(rows)
        mus = np.array([r["mu"] for r in rows])
        cell = {
            "case": case,
            "n": n,
            "mu_mean": float(mus.mean()),
            "mu_positive_rate": float((mus > 0).mean()),
            "refused_rate": sum(r["refused"] for r in rows) / n,
            "mu_above_truth_rate": float((mus > 1.0).mean()),
            "eps_mean": float(np.mean([r["eps"] for r in rows])),
            "rows": rows,
        }
        out["battery_power"].append(cell)
        print(
            f"{case:12s} {n:4d} {cell['mu_mean']:8.3f} {cell['mu_positive_rate']:6.3f} "
            f"{cell['refused_rate']:8.3f} {cell['mu_above_truth_rate']:6.3f} "
            f"{cell['eps_mean']:9.3f}",
            flush=True,
        )
    return failed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=None, help="null replicates per cell")
    ap.add_argument("--cases", nargs="+", default=list(NULL_CASES), help="battery null cases")
    ap.add_argument("--power-cases", nargs="+", default=list(POWER_CASES))
    ap.add_argument("--shifts", type=float, nargs="+", default=[1.0, 2.0])
    ap.add_argument(
        "--estimators",
        nargs="+",
        default=None,
        help="per-estimator cells instead of the battery: estimator families, 'oracle' (true "
        "propensities) and 'headline' (the largest bound over --headline-estimators, each at "
        "beta / J, without the audit's validity checks)",
    )
    ap.add_argument("--headline-estimators", nargs="+", default=list(DEFAULT_ESTIMATORS))
    ap.add_argument("--margins", type=float, nargs="+", default=[0.0, 2.0])
    ap.add_argument("--power-reps", type=int, default=None, help="Gaussian mu=1 replicates")
    ap.add_argument("--per-class", type=int, default=1500)
    ap.add_argument("--beta", type=float, default=0.05)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0, help="first replicate seed")
    ap.add_argument("--json", type=str, default=None, help="write the figures here")
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    out: dict[str, Any] = {"null": [], "power": [], "battery_null": [], "battery_power": []}
    with ProcessPoolExecutor(max_workers=a.jobs) as pool:
        if a.estimators is None:
            a.reps = 100 if a.reps is None else a.reps
            a.power_reps = 50 if a.power_reps is None else a.power_reps
            failed = _battery(a, pool, out)
        else:
            a.reps = 300 if a.reps is None else a.reps
            a.power_reps = 20 if a.power_reps is None else a.power_reps
            failed = _cells(a, pool, out)
    wall = time.perf_counter() - t0
    print(f"wall time {wall:.1f} s with {a.jobs} processes")
    out["wall_s"] = wall
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(out, fh, indent=2)
    return 1 if failed else 0


def _cells(a: argparse.Namespace, pool: ProcessPoolExecutor, out: dict[str, Any]) -> bool:
    """The per-estimator null cells and power check on the mean shift; True when one fails."""
    zs = tuple(a.margins)
    head = tuple(a.headline_estimators)
    failed = False
    for est in a.estimators:
        for gamma in a.shifts:
            items = [(a.seed + i, est, gamma, zs, a.per_class, head) for i in range(a.reps)]
            rows = list(pool.map(_null, items, chunksize=4))
            for z in zs:
                cell: dict[str, Any] = {"estimator": est, "gamma": gamma, "margin_z": z}
                for kind in ("eps", "mu"):
                    v = np.array([r[f"{kind}_z{z:g}"] for r in rows])
                    rate = float((v > 0).mean())
                    se = math.sqrt(a.beta * (1 - a.beta) / v.size)
                    ok = rate <= a.beta + 2 * se
                    failed |= (not ok) and (z > 0 or est == "oracle")
                    cell[f"{kind}_violation_rate"] = rate
                    cell[f"{kind}_mean"] = float(v.mean())
                    cell[f"{kind}_within_beta_2se"] = bool(ok)
                cell["n"] = len(rows)
                out["null"].append(cell)
                print(
                    f"null {est:17s} gamma={gamma:g} z={z:g} n={len(rows)}: "
                    f"eps>0 {cell['eps_violation_rate']:.3f} "
                    f"(mean {cell['eps_mean']:.3f}) mu>0 {cell['mu_violation_rate']:.3f} "
                    f"(mean {cell['mu_mean']:.3f}); beta+2SE = "
                    f"{a.beta + 2 * math.sqrt(a.beta * (1 - a.beta) / len(rows)):.3f} "
                    f"{'ok' if cell['eps_within_beta_2se'] and cell['mu_within_beta_2se'] else 'VIOLATED'}",
                    flush=True,
                )
        if a.power_reps:
            items = [(a.seed + i, est, 0.3, zs, a.per_class, head) for i in range(a.power_reps)]
            rows = list(pool.map(_power, items, chunksize=2))
            for z in zs:
                mus = np.array([r[f"mu_z{z:g}"] for r in rows])
                out["power"].append(
                    {
                        "estimator": est,
                        "margin_z": z,
                        "mu_mean": float(mus.mean()),
                        "n": len(rows),
                        "mu_above_truth": float((mus > 1.0).mean()),
                    }
                )
                print(
                    f"power {est:17s} mu=1 gamma=0.3 z={z:g} n={len(rows)}: "
                    f"mean pointwise mu {mus.mean():.3f} (above 1: {(mus > 1.0).mean():.3f})",
                    flush=True,
                )
    return failed


if __name__ == "__main__":
    raise SystemExit(main())
