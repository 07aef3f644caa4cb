"""The per-record calibrated TPR against simulations with known truth: its bias, and its interval's coverage.

Usage::

    .venv/bin/python benchmarks/bench_calibrated.py [--seeds 5] [--coverage] [--json PATH]

Every simulated record i has OUT scores ``N(mu_i, sd_i^2)`` and IN scores of a known law,
so the mean over records of the TPR at the record's own FPR-alpha threshold (the estimand
of :func:`privaudit.metrics.calibrated.calibrated_tprs_at_fprs`, ``calibrated``) is known.
``m`` evaluation models each score every record independently, every record IN for
exactly ``m / 2`` of them (in an audit's calibrated evaluation the evaluation models are
the second half of the reference models, scored by the attack fitted on the first half, and
a record is IN for about half of them).

**Bias** (always run): 2,400 records, 8, 16 and 32 models (4, 8 and 16 OUT scores a
record), ``--seeds`` seeds; printed per row and model count, at 1% and 0.1% FPR, the mean
over seeds of calibrated TPR minus the truth and its standard deviation over seeds. Rows:

* ``alike``: every record OUT ``N(0, 1)``, IN ``N(3, 1)``;
* ``heterogeneous``: ``mu_i ~ N(0, 2^2)``, ``sd_i = exp(N(0, 0.6^2))``, IN shifted by
  ``d_i sd_i`` with ``d_i ~ Exp(mean 1.5)``, the same spread;
* ``in-less-spread``: as ``heterogeneous``, the IN spread ``sd_i exp(N(-0.3, 0.3^2))``;
* ``in-skewed``: IN = an OUT draw plus ``g_i sd_i E`` with ``g_i ~ Exp(mean 1.5)`` and
  ``E ~ Exp(1)`` per (model, record): not Gaussian (its truth by Monte Carlo, 4,000 draws a
  record);
* ``alike-narrow-in``: OUT ``N(0, 1)``, IN ``N(3, 0.4^2)``;
* ``no-leakage``: as ``heterogeneous`` with ``d_i = 0`` (truth: alpha).

The first row also prints the fitted-threshold and plug-in TPRs (what the calibrated
figure is not).

**Coverage** (``--coverage``): each run draws its own records and models; the 95%
interval (``calibrated_tpr_ci``, 50 bootstrap replicates over records plus the jackknife
over models) is checked against the truth, and so is the interval of the bootstrap over
records alone (the same refits, the models' variance left out). Cells (scores, OUT scores
a record, records, runs): heterogeneous ``mu_i``, ``sd_i`` as above with ``d_i`` = 0
(half the records), ``|N(1.5, 0.5^2)|`` (30%) or 4 (20%) (``mixture``); the same with a
**model shift**, every evaluation model adding its own ``N(0, 0.5^2) sd_i`` to all its
scores (the truth then the TPR for a new model: OUT ``N(mu_i, 1.25 sd_i^2)``, IN shifted by
``d_i sd_i``); and ``in-skewed`` as above. Printed per cell and FPR: covered / runs, the
median width, and the same for the records-alone interval.

``--json PATH`` writes ``bias`` (rows: ``row``, ``n_models``, ``fpr``, ``truth``,
``mean_error``, ``sd_error``, ``seeds``) and, with ``--coverage``, ``coverage`` (rows:
``scores``, ``n_out``, ``n_records``, ``fpr``, ``runs``, ``covered``, ``median_width``,
``records_alone_covered``, ``records_alone_median_width``).

Measured on 2026-12-07 (``--coverage --json``, OMP_NUM_THREADS=1, 2 cores shared with
another job): the tables of ``docs/membership.md`` ("Per-record calibrated figures").
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from privaudit.metrics import calibrated as cal
from privaudit.metrics.calibrated import calibrated_tprs_at_fprs

FPRS = (0.01, 0.001)

# a world: (scores (m, n), member (m, n), truth(alpha) -> float)
World = tuple[np.ndarray, np.ndarray, Callable[[float], float]]


def balanced(rng: np.random.Generator, m: int, n: int) -> np.ndarray:
    """Every record IN for exactly half of the ``m`` evaluation models."""
    return np.argsort(rng.uniform(size=(m, n)), axis=0) < m // 2


def _gaussian_world(
    rng: np.random.Generator,
    member: np.ndarray,
    mu: np.ndarray,
    sd: np.ndarray,
    d: np.ndarray,
    sd_in: np.ndarray,
    model_shift: float = 0.0,
) -> World:
    """OUT ``N(mu, sd^2)``, IN ``N(mu + d sd, sd_in^2)``; with ``model_shift`` every model
    adds ``N(0, model_shift^2) sd`` to all its scores (the truth then for a new model)."""
    m = member.shape[0]
    s = np.where(member, mu + d * sd + sd_in * rng.normal(size=member.shape), mu)
    s = s + np.where(member, 0.0, sd * rng.normal(size=member.shape))
    s = s + rng.normal(0.0, model_shift, size=(m, 1)) * sd
    out_sd = sd * np.sqrt(1.0 + model_shift**2)
    in_sd = np.sqrt(sd_in**2 + (model_shift * sd) ** 2)

    def truth(a: float) -> float:
        return float(stats.norm.cdf((d * sd - stats.norm.isf(a) * out_sd) / in_sd).mean())

    return s, member, truth


def _skewed_world(rng: np.random.Generator, member: np.ndarray) -> World:
    n = member.shape[1]
    mu, sd = rng.normal(0.0, 2.0, n), np.exp(rng.normal(0.0, 0.6, n))
    g = rng.exponential(1.5, n)
    s = mu + sd * (rng.normal(size=member.shape) + member * g * rng.exponential(size=member.shape))
    e = rng.exponential(size=(4000, n))

    def truth(a: float) -> float:
        return float(stats.norm.sf(stats.norm.isf(a) - g[None, :] * e).mean())

    return s, member, truth


def world(kind: str, rng: np.random.Generator, m: int, n: int) -> World:
    member = balanced(rng, m, n)
    ones = np.ones(n)
    if kind == "alike":
        return _gaussian_world(rng, member, 0 * ones, ones, 3 * ones, ones)
    if kind == "alike-narrow-in":
        return _gaussian_world(rng, member, 0 * ones, ones, 3 * ones, 0.4 * ones)
    if kind == "in-skewed":
        return _skewed_world(rng, member)
    mu, sd = rng.normal(0.0, 2.0, n), np.exp(rng.normal(0.0, 0.6, n))
    if kind in ("mixture", "model-shift"):
        u = rng.uniform(size=n)
        d = np.where(u < 0.5, 0.0, np.where(u < 0.8, np.abs(rng.normal(1.5, 0.5, n)), 4.0))
        return _gaussian_world(rng, member, mu, sd, d, sd, 0.5 if kind == "model-shift" else 0.0)
    d = rng.exponential(1.5, n) if kind != "no-leakage" else 0 * ones
    sd_in = sd * np.exp(rng.normal(-0.3, 0.3, n)) if kind == "in-less-spread" else sd
    return _gaussian_world(rng, member, mu, sd, d, sd_in)


BIAS_ROWS = (
    "alike",
    "heterogeneous",
    "in-less-spread",
    "in-skewed",
    "alike-narrow-in",
    "no-leakage",
)


def bias(seeds: int) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    print("calibrated TPR minus the truth, mean (sd) over seeds; 2,400 records")
    print(f"{'scores':18s} {'models':>6s} {'FPR':>6s} {'truth':>7s} {'error':>16s}")
    for kind in BIAS_ROWS:
        for m in (8, 16, 32):
            errs: dict[float, list[float]] = {a: [] for a in FPRS}
            truths: dict[float, list[float]] = {a: [] for a in FPRS}
            extra: dict[float, list[tuple[float, float]]] = {a: [] for a in FPRS}
            for seed in range(seeds):
                rng = np.random.default_rng([seed, m, BIAS_ROWS.index(kind)])
                s, member, truth = world(kind, rng, m, 2400)
                for res in calibrated_tprs_at_fprs(s, member, FPRS):
                    t = truth(res.fpr)
                    assert res.calibrated_tpr is not None
                    errs[res.fpr].append(res.calibrated_tpr - t)
                    truths[res.fpr].append(t)
                    extra[res.fpr].append((res.fitted_threshold_tpr, res.plug_in_tpr))
            for a in FPRS:
                e = np.asarray(errs[a])
                row = {
                    "row": kind,
                    "n_models": m,
                    "fpr": a,
                    "truth": float(np.mean(truths[a])),
                    "mean_error": float(e.mean()),
                    "sd_error": float(e.std(ddof=1)) if e.size > 1 else 0.0,
                    "seeds": seeds,
                }
                rows.append(row)
                note = ""
                if kind == "alike":
                    ft, pi = np.mean(extra[a], axis=0)
                    note = f"   fitted-threshold {ft:.3f}, plug-in {pi:.3f}"
                print(
                    f"{kind:18s} {m:6d} {a:6g} {row['truth']:7.3f} "
                    f"{row['mean_error']:+.3f} ({row['sd_error']:.3f}){note}",
                    flush=True,
                )
    return rows


COVERAGE_CELLS = (
    ("mixture", 8, 1000, 40),
    ("mixture", 8, 5000, 20),
    ("mixture", 16, 5000, 40),
    ("mixture", 32, 5000, 20),
    ("model-shift", 8, 1000, 20),
    ("model-shift", 16, 5000, 40),
    ("model-shift", 32, 5000, 40),
    ("in-skewed", 8, 5000, 20),
)


def coverage() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    print(
        "\n95% interval of the calibrated TPR: covered / runs, median width (records alone: the same)"
    )
    for cell, (kind, m, n, runs) in enumerate(COVERAGE_CELLS):
        hits = {a: [0, 0] for a in FPRS}
        widths: dict[float, list[list[float]]] = {a: [[], []] for a in FPRS}
        for run in range(runs):
            rng = np.random.default_rng([cell, run, 17])
            s, member, truth = world(kind, rng, m, n)
            # the figure and both intervals from one fit and one set of refits (the same
            # floats as calibrated_tprs_at_fprs's, checked on each cell's first run)
            dec = cal._deconvolution(s, member)
            assert dec is not None
            est = dec.tprs(FPRS)
            v_rec, v_mod = cal._interval_variances(
                s, member, dec, FPRS, cal.CALIBRATED_CI_REPLICATES, run
            )
            if run == 0:
                public = calibrated_tprs_at_fprs(
                    s, member, FPRS, n_boot=cal.CALIBRATED_CI_REPLICATES, seed=run
                )
                assert [r.calibrated_tpr_ci for r in public] == [
                    cal._interval(est[k], float(v_rec[k] + v_mod[k])) for k in range(len(FPRS))
                ]
            for k, a in enumerate(FPRS):
                t = truth(a)
                for j, v in enumerate((v_rec[k] + v_mod[k], v_rec[k])):
                    lo, hi = cal._interval(est[k], float(v))
                    hits[a][j] += int(lo <= t <= hi)
                    widths[a][j].append(hi - lo)
        for a in FPRS:
            row = {
                "scores": kind,
                "n_out": m // 2,
                "n_records": n,
                "fpr": a,
                "runs": runs,
                "covered": hits[a][0],
                "median_width": float(np.median(widths[a][0])),
                "records_alone_covered": hits[a][1],
                "records_alone_median_width": float(np.median(widths[a][1])),
            }
            rows.append(row)
            print(
                f"{kind:12s} {m // 2:2d} OUT {n:5d} records {a:6g}: {hits[a][0]}/{runs}, "
                f"{row['median_width']:.3f} (records alone {hits[a][1]}/{runs}, "
                f"{row['records_alone_median_width']:.3f})",
                flush=True,
            )
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--coverage", action="store_true")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    out: dict[str, Any] = {"bias": bias(args.seeds)}
    if args.coverage:
        out["coverage"] = coverage()
    print(f"\n{time.perf_counter() - t0:.0f} s")
    if args.json is not None:
        args.json.write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
