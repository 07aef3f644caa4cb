"""Time and peak memory of RMIA scoring N targets against Z population records.

Usage::

    .venv/bin/python benchmarks/bench_rmia.py [--n 100000] [--z 100000] [--models 8] [--seed 0]

Builds synthetic ``loss`` signal tables (RMIA works in log space from the loss) (target: 1 x N and 1 x Z; k reference
models: k x N and k x Z, a balanced keep matrix), then times ``run_attack`` for
``rmia-online`` and ``rmia-offline`` end to end (validation included) and the core
``rmia_scores`` alone. Peak memory is the tracemalloc peak of the scoring call (numpy
allocations are traced), next to the process's maximum resident set size. An N x Z
boolean matrix would need N*Z bytes (10 GB for 100,000 x 100,000).
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
import tracemalloc

import numpy as np

from privaudit.attacks import AttackData, run_attack
from privaudit.attacks.rmia import rmia_scores
from privaudit.records import MembershipMatrix, SignalTable


def build(n: int, z: int, k: int, seed: int) -> AttackData:
    rng = np.random.default_rng(seed)
    ids = np.arange(n)
    pop_ids = np.arange(n, n + z)
    member = rng.uniform(size=n) < 0.5
    keep = np.argsort(np.argsort(rng.uniform(size=(k, n)), axis=0), axis=0) < k // 2
    keep_pop = np.argsort(np.argsort(rng.uniform(size=(k, z)), axis=0), axis=0) < k // 2

    def losses(mu: np.ndarray, inside: np.ndarray) -> np.ndarray:
        phi = mu + 2.0 * inside + 0.6 * rng.normal(size=inside.shape)
        return np.logaddexp(0.0, -phi)  # the loss -log sigmoid(phi)

    mu_x, mu_z = rng.normal(1, 2, n), rng.normal(1, 2, z)
    refs = tuple(f"ref{j}" for j in range(k))
    sig = "loss"
    return AttackData(
        record_ids=ids,
        labels=np.zeros(n, dtype=np.int64),
        target={sig: SignalTable(sig, ids, ("target",), losses(mu_x, member[None, :]))},
        population_target={
            sig: SignalTable(sig, pop_ids, ("target",), losses(mu_z, np.zeros((1, z), bool)))
        },
        reference={sig: SignalTable(sig, ids, refs, losses(mu_x, keep))},
        reference_membership=MembershipMatrix(ids, refs, keep),
        reference_population={sig: SignalTable(sig, pop_ids, refs, losses(mu_z, keep_pop))},
        reference_population_membership=MembershipMatrix(pop_ids, refs, keep_pop),
    )


def measure(label: str, fn) -> None:  # type: ignore[no-untyped-def]
    tracemalloc.start()
    t0 = time.perf_counter()
    fn()
    dt = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"{label:<34s} time {dt:8.3f} s   peak traced memory {peak / 2**20:8.1f} MiB")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=100_000, help="audited (target) records")
    p.add_argument("--z", type=int, default=100_000, help="population records")
    p.add_argument("--models", type=int, default=8, help="reference models")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    print(
        f"RMIA benchmark: N={a.n:,} targets, Z={a.z:,} population records, k={a.models} reference models"
    )
    print(f"(an N x Z boolean matrix would take {a.n * a.z / 2**30:,.1f} GiB)")
    t0 = time.perf_counter()
    data = build(a.n, a.z, a.models, a.seed)
    print(f"{'build signal tables (not timed below)':<34s} time {time.perf_counter() - t0:8.3f} s")
    measure("rmia-online (run_attack)", lambda: run_attack("rmia-online", data))
    measure(
        "rmia-online (fraction, gamma=2)",
        lambda: run_attack("rmia-online", data, score="fraction"),
    )
    measure("rmia-offline (run_attack, a=0.3)", lambda: run_attack("rmia-offline", data, a=0.3))
    measure("rmia-offline (a tuned, 11 x 8 fits)", lambda: run_attack("rmia-offline", data))
    rng = np.random.default_rng(a.seed)
    rx, rz = rng.lognormal(size=a.n), rng.lognormal(size=a.z)
    measure("rmia_scores core (sort+search)", lambda: rmia_scores(rx, rz, 2.0))
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    scale = 1 if sys.platform == "darwin" else 1024  # bytes on macOS, KiB on Linux
    print(f"process max resident set size: {rss * scale / 2**20:.1f} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
