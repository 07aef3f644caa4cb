"""Time each audit procedure on m = 1,000,000 audit examples (not a test).

Run: ``.venv/bin/python benchmarks/bench_audit.py [m]``. Scores come from a per-example
Gaussian mechanism (members shifted by mu = 1); PANORAMIA gets sigmoid scores and a
weak baseline. Prints one line per procedure: wall time, bound and the counts used.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

import numpy as np

from privaudit.records import AuditResult
from privaudit.stats import (
    fdp_one_run_audit,
    multi_run_audit,
    one_run_audit,
    panoramia_audit,
)


def timed(name: str, fn: Callable[[], AuditResult]) -> None:
    t0 = time.perf_counter()
    res = fn()
    dt = time.perf_counter() - t0
    mu = "" if res.mu_lower_bound is None else f" mu_lb={res.mu_lower_bound:.4f}"
    c = res.counts
    short = {k: c[k] for k in ("m", "r", "v", "tp", "fp", "mia_r", "mia_v") if k in c}
    # PANORAMIA's figure is eps_tilde, not an eps lower bound (issue 28)
    eps = (
        f"eps_tilde={res.extra['epsilon_tilde']:.4f}"
        if "epsilon_tilde" in res.extra
        else f"eps_lb={res.epsilon_lower_bound:.4f}"
    )
    print(
        f"{name:<42s} {dt:8.2f} s  {eps}{mu}  [{res.threshold_selection}] {short}",
        flush=True,
    )


def main() -> None:
    m = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    rng = np.random.default_rng(0)
    member = rng.random(m) < 0.5
    scores = rng.standard_normal(m) + 1.0 * member
    prob = 1.0 / (1.0 + np.exp(-scores))
    baseline = np.clip(0.5 + 0.05 * rng.standard_normal(m) + 0.01 * member, 0.0, 1.0)
    k = m // 20
    print(f"m = {m:,} audit examples (k = {k:,} guesses per side where fixed)")
    timed("multi-run (union bound, all thresholds)", lambda: multi_run_audit(scores, member))
    timed(
        "multi-run (held-out threshold)",
        lambda: multi_run_audit(scores, member, selection="held-out", rng=0),
    )
    timed("one-run eps (fixed k)", lambda: one_run_audit(scores, member, k_pos=k, k_neg=k))
    timed("one-run eps (union bound over k)", lambda: one_run_audit(scores, member))
    timed(
        "one-run eps,delta=1e-12 (fixed k, bisection)",
        lambda: one_run_audit(scores, member, k_pos=k, k_neg=k, delta=1e-12),
    )
    timed(
        "one-run eps,delta=1e-5 (fixed k, scan)",
        lambda: one_run_audit(scores, member, k_pos=k, k_neg=k, delta=1e-5),
    )
    timed(
        "fdp one-run mu (fixed k)",
        lambda: fdp_one_run_audit(scores, member, k_pos=k, k_neg=k, delta=1e-5),
    )
    timed(
        "fdp one-run mu (union bound over k)", lambda: fdp_one_run_audit(scores, member, delta=1e-5)
    )
    timed("panoramia (code: 100 thresholds)", lambda: panoramia_audit(prob, baseline, member))
    timed(
        "panoramia (all: m thresholds)",
        lambda: panoramia_audit(prob, baseline, member, thresholds="all"),
    )


if __name__ == "__main__":
    main()
