"""Runtime services shared by every layer: seeds, executors, the artifact store, progress.

* :mod:`~privaudit.runtime.seeds` -- per-purpose seeds from one user seed
  (``numpy.random.SeedSequence.spawn``);
* :mod:`~privaudit.runtime.executor` -- ``Executor.map`` in order; local processes or Ray;
* :mod:`~privaudit.runtime.store` -- content-addressed cache with atomic writes and resume;
* :mod:`~privaudit.runtime.progress` -- progress bars that are quiet off a terminal.
"""

from privaudit.runtime.executor import Executor, LocalExecutor, RayExecutor, TaskError
from privaudit.runtime.progress import progress_bar, progress_enabled
from privaudit.runtime.seeds import derive_rng, derive_seed, spawn_seeds
from privaudit.runtime.store import ArtifactStore, StoreStats, canonical_json, hash_key

__all__ = [
    "ArtifactStore",
    "Executor",
    "LocalExecutor",
    "RayExecutor",
    "StoreStats",
    "TaskError",
    "canonical_json",
    "derive_rng",
    "derive_seed",
    "hash_key",
    "progress_bar",
    "progress_enabled",
    "spawn_seeds",
]
