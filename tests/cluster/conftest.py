"""A real two-node Ray cluster on 127.0.0.1 for the tests of this folder (issue 32, item 4).

``ray start --head --port P --num-cpus 1`` and ``ray start --address 127.0.0.1:P
--num-cpus 1``, each with its own temp dir
(:class:`privaudit.runtime.local_cluster.LocalRayCluster`); started once for the folder
and always torn down by the fixture's finaliser (every process it started, by process id).
The nodes get this folder and the driver's ``PYTHONPATH`` on their path, so that their
workers import the privaudit under test and the tasks of ``cluster_tasks.py``. Skipped when
Ray is not installed (CI installs the ``ray`` extra: ``.ci/run``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).parent


def _pythonpath() -> str:
    import privaudit

    src = str(Path(privaudit.__file__).resolve().parents[1])
    parts = [str(HERE), src, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    return os.pathsep.join(dict.fromkeys(parts))


@pytest.fixture(scope="session")
def cluster() -> Iterator[object]:
    pytest.importorskip("ray")
    pytest.importorskip("psutil")
    from privaudit.runtime.local_cluster import LocalRayCluster

    env = {
        "PYTHONPATH": _pythonpath(),
        "OMP_NUM_THREADS": "1",
        # a lost node is noticed in ~3 s, not ~30 s
        "RAY_health_check_period_ms": "1000",
        "RAY_health_check_timeout_ms": "1000",
        "RAY_health_check_failure_threshold": "3",
        # Ray refuses to spill a full object store to a disk over 95% used (by its count,
        # 1 - available / size), and a CI machine's disk can be that full once the venv is
        # installed; the tests' objects fit in the stores (they pass with this at 0.5), so
        # this only keeps a machine's disk from failing them
        "RAY_local_fs_capacity_threshold": "0.99",
    }
    import signal

    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    saved = {k: os.environ.get(k) for k in LocalRayCluster.driver_env}
    os.environ.update(LocalRayCluster.driver_env)  # this process is the driver
    c = LocalRayCluster(n_workers=1, head_cpus=1, worker_cpus=1, env=env)
    try:
        yield c
    finally:
        import ray

        if ray.is_initialized():
            ray.shutdown()
        c.stop()
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture
def two_nodes(cluster: object) -> object:
    """The cluster with its two nodes (a fault test before may have killed the worker)."""
    c = cluster
    if sum(p.poll() is None for p in c.workers) < 1:  # type: ignore[attr-defined]
        c.add_worker()  # type: ignore[attr-defined]
    return c
