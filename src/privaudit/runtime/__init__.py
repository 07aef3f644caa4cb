"""Runtime services shared by every layer: seeds, executors, the artifact store, progress.

* :mod:`~privaudit.runtime.seeds` -- per-purpose seeds from one user seed
  (``numpy.random.SeedSequence.spawn``);
* :mod:`~privaudit.runtime.executor` -- ``Executor.map`` in order; local processes or Ray;
* :mod:`~privaudit.runtime.executor_setting` -- :func:`make_executor`, the executor of a
  command's ``executor`` / ``ray_address`` / ``n_jobs``;
* :mod:`~privaudit.runtime.task_resources` -- the GPUs a Ray task requests (a torch
  recipe's ``device``);
* :mod:`~privaudit.runtime.local_cluster` -- :class:`LocalRayCluster`, a real multi-node Ray
  cluster on 127.0.0.1 (the cluster tests and the scale-out benchmark);
* :mod:`~privaudit.runtime.store` -- content-addressed cache with atomic writes and resume;
* :mod:`~privaudit.runtime.interrupts` -- SIGINT/SIGTERM: an interrupted task is never
  stored;
* :mod:`~privaudit.runtime.progress` -- progress bars that are quiet off a terminal.

The names below are imported on first use, so that importing one submodule (the command
line imports :mod:`~privaudit.runtime.interrupts` before anything else) does not import
NumPy and the executors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from privaudit.runtime.executor import Executor, LocalExecutor, RayExecutor, TaskError
    from privaudit.runtime.executor_setting import make_executor
    from privaudit.runtime.local_cluster import LocalRayCluster
    from privaudit.runtime.progress import progress_bar, progress_enabled
    from privaudit.runtime.seeds import derive_rng, derive_seed, spawn_seeds
    from privaudit.runtime.store import ArtifactStore, StoreStats, canonical_json, hash_key

__all__ = [
    "ArtifactStore",
    "Executor",
    "LocalExecutor",
    "LocalRayCluster",
    "RayExecutor",
    "StoreStats",
    "TaskError",
    "canonical_json",
    "derive_rng",
    "derive_seed",
    "hash_key",
    "make_executor",
    "progress_bar",
    "progress_enabled",
    "spawn_seeds",
]

_LAZY = {
    **dict.fromkeys(("Executor", "LocalExecutor", "RayExecutor", "TaskError"), "executor"),
    "make_executor": "executor_setting",
    "LocalRayCluster": "local_cluster",
    **dict.fromkeys(("progress_bar", "progress_enabled"), "progress"),
    **dict.fromkeys(("derive_rng", "derive_seed", "spawn_seeds"), "seeds"),
    **dict.fromkeys(("ArtifactStore", "StoreStats", "canonical_json", "hash_key"), "store"),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(f"privaudit.runtime.{_LAZY[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
