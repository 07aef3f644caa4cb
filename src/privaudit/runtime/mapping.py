"""The ``map`` interface of executors, importable without the executor module.

:class:`privaudit.runtime.executor.Executor` (local processes, Ray) satisfies
:class:`Mapper` structurally. Layers that must never reach Ray, even through a lazy import
(the ``audit`` layer, by the import contract), type their ``executor`` arguments with
:class:`Mapper` and fall back to :class:`InlineMapper`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

from privaudit.runtime.progress import ProgressOption, check_progress, progress_bar

__all__ = ["InlineMapper", "Mapper"]

T = TypeVar("T")
R = TypeVar("R")


class Mapper(Protocol):
    """Anything with an order-keeping ``map(fn, items, *, desc, label)``."""

    def map(
        self,
        fn: Callable[[T], R],
        items: Sequence[T],
        *,
        desc: str = ...,
        label: Callable[[T], str] | None = ...,
    ) -> list[R]:
        """``[fn(item) for item in items]``, in the order of ``items``."""
        ...


class InlineMapper:
    """Runs the tasks one after the other in this process, with a progress bar on a terminal.

    Examples
    --------
    >>> InlineMapper(progress=False).map(abs, [-1, 2])
    [1, 2]
    """

    def __init__(self, *, progress: ProgressOption = None) -> None:
        self.progress = check_progress(progress)

    def map(
        self,
        fn: Callable[[T], R],
        items: Sequence[T],
        *,
        desc: str = "tasks",
        label: Callable[[T], str] | None = None,
    ) -> list[R]:
        """``[fn(item) for item in items]``; ``label`` is accepted for interface parity."""
        out: list[R] = []
        with progress_bar(desc, len(items), enabled=self.progress) as bar:
            for it in items:
                out.append(fn(it))
                bar.advance()
        return out
