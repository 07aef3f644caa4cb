"""The "train many" step: run many releases through the executor, cached and resumable.

Every experiment trains many models or generators (reference, shadow and game rounds).
:func:`train_many` maps a task over items with an :class:`~privaudit.runtime.executor.Executor`
(local processes or Ray), and, given an :class:`~privaudit.runtime.store.ArtifactStore`,
stores each item's result under a key that hashes everything that produced it, *inside
the worker* as soon as it is done: a killed run resumes without recomputing finished
items. A result is a dict of numpy arrays (saved as ``.npz`` without pickle).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Generic, TypeVar

import numpy as np
from numpy.typing import NDArray

from privaudit.runtime.executor import Executor
from privaudit.runtime.store import ArtifactStore

__all__ = ["CachedTask", "train_many"]

T = TypeVar("T")
Arrays = dict[str, NDArray[Any]]


def _save(obj: Arrays, path: Path) -> None:
    with open(path, "wb") as fh:
        np.savez(fh, allow_pickle=False, **obj)


def _load(path: Path) -> Arrays:
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


class CachedTask(Generic[T]):
    """``fn(item)`` through the store: returns ``(result, created)``."""

    def __init__(
        self,
        fn: Callable[[T], Arrays],
        store: ArtifactStore | None,
        key_fn: Callable[[T], Mapping[str, Any]],
    ) -> None:
        self.fn = fn
        self.store = store
        self.key_fn = key_fn

    def __call__(self, item: T) -> tuple[Arrays, bool]:
        if self.store is None:
            return self.fn(item), True
        created: list[bool] = []

        def create() -> Arrays:
            created.append(True)
            return self.fn(item)

        out = self.store.get_or_create(self.key_fn(item), create, _save, _load, suffix=".npz")
        return out, bool(created)


def train_many(
    fn: Callable[[T], Arrays],
    items: Sequence[T],
    *,
    executor: Executor,
    store: ArtifactStore | None,
    key_fn: Callable[[T], Mapping[str, Any]],
    desc: str,
    label: Callable[[T], str] | None = None,
) -> tuple[list[Arrays], list[bool]]:
    """Results of ``fn`` on every item (in order) and, per item, whether it was computed.

    ``fn`` and ``key_fn`` must be picklable for a process or Ray executor.
    """
    task = CachedTask(fn, store, key_fn)
    res = executor.map(task, list(items), desc=desc, label=label)
    return [r for r, _ in res], [bool(c) for _, c in res]
