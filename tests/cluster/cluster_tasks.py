"""Tasks the cluster tests send to Ray workers (importable there: the nodes' path has this folder)."""

from __future__ import annotations

import os
import time

import numpy as np


def seeded_draw(seed: int) -> float:
    """A deterministic function of its item that takes a while (a task worth retrying)."""
    time.sleep(1.5)
    return float(np.random.default_rng(seed).standard_normal())


def fails_on_three(x: int) -> int:
    if x == 3:
        raise ValueError("three is not allowed")
    return x


def pid(_: object) -> int:
    """The worker's process id (after importing what a record-risk task imports)."""
    import privaudit.record_risk.worker  # noqa: F401 - warm the worker

    time.sleep(1.0)
    return os.getpid()


class DeviceProbe:
    """A task that names a torch device (as a torch recipe's ModelTask does) and returns
    the device it runs with, the resources Ray assigned to it and its
    ``CUDA_VISIBLE_DEVICES``."""

    def __init__(self, device: str) -> None:
        self.device = device

    def on_device(self, device: str) -> DeviceProbe:
        return DeviceProbe(device)

    def __call__(self, _: object) -> tuple[str, dict[str, float], str | None]:
        import ray

        resources = dict(ray.get_runtime_context().get_assigned_resources())
        return self.device, resources, os.environ.get("CUDA_VISIBLE_DEVICES")


def fitted_forest(seed: int) -> object:
    """A random forest fitted on a seeded table: a result large enough for Ray's shared-memory
    object store (not inlined), as the record-level games' per-target attacks are."""
    from sklearn.ensemble import RandomForestClassifier

    rng = np.random.default_rng(seed)
    X = rng.standard_normal((400, 300))
    y = (X[:, 0] + 0.5 * rng.standard_normal(400) > 0).astype(int)
    return RandomForestClassifier(n_estimators=60, random_state=seed, n_jobs=1).fit(X, y)


def filler(seed: int) -> np.ndarray:
    """A large array (another shared-memory object, to reuse freed memory): 4 MB, so that
    a map's twelve fit in a node's 100 MB object store even if none were freed (a store
    that overflows spills to disk, which fails on a nearly full disk: OutOfDiskError)."""
    return np.full(500_000, float(seed))
