"""The executor interface: :class:`Executor`, :class:`TaskError` and the inline runner.

:mod:`privaudit.runtime.executor` documents the executors and re-exports everything here;
:class:`~privaudit.runtime.executor.LocalExecutor` and
:class:`~privaudit.runtime.ray_executor.RayExecutor` implement the interface.
"""

from __future__ import annotations

import abc
import os
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from privaudit._validation import fail
from privaudit.errors import PrivauditError
from privaudit.runtime import interrupts
from privaudit.runtime.progress import ProgressOption, check_progress, progress_bar

__all__ = ["Executor", "TaskError", "available_cores", "resolve_n_jobs", "run_inline"]

T = TypeVar("T")
R = TypeVar("R")

_LABEL_MAX = 200


class TaskError(PrivauditError):
    """A task run by an :class:`Executor` raised.

    Attributes
    ----------
    desc : str
        What the map was doing (e.g. ``"reference models"``).
    index : int
        Position of the failing item in ``items``.
    label : str
        Human-readable name of the failing item.
    original : BaseException
        The exception the task raised (also chained as ``__cause__``).
    """

    def __init__(self, desc: str, index: int, label: str, original: BaseException) -> None:
        self.desc = desc
        self.index = index
        self.label = label
        self.original = original
        super().__init__(
            f"{desc}: task {index} ({label}) failed with {type(original).__name__}: {original}"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (TaskError, (self.desc, self.index, self.label, self.original))


def _default_label(item: object) -> str:
    for attr in ("label", "name", "model_id"):
        v = getattr(item, attr, None)
        if isinstance(v, str) and v:
            return v
    text = repr(item)
    return text if len(text) <= _LABEL_MAX else text[: _LABEL_MAX - 3] + "..."


def resolve_n_jobs(n_jobs: int) -> int:
    """Number of worker processes: ``n_jobs`` if positive, else ``cpu_count + 1 + n_jobs``.

    As in scikit-learn, ``-1`` means all cores and ``-2`` all but one.
    """
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or n_jobs == 0:
        raise fail("n_jobs", "a non-zero integer (negative counts back from all cores)", n_jobs)
    if n_jobs > 0:
        return n_jobs
    return max(1, available_cores() + 1 + n_jobs)


class Executor(abc.ABC):
    """Runs ``fn`` over ``items`` and returns the results in the order of ``items``.

    Parameters
    ----------
    progress : progress option
        Progress of every map (:func:`privaudit.runtime.progress.progress_bar`: None = a
        bar on a terminal only; ``"auto"``, ``"plain"``, ``"rich"``, ``"none"``, a callback
        or a tqdm-style class).
    """

    def __init__(self, *, progress: ProgressOption = None) -> None:
        self.progress = check_progress(progress)
        #: Tasks this executor was given so far (what ``results.json`` records as run by it).
        self.tasks_run = 0

    @property
    @abc.abstractmethod
    def n_workers(self) -> int:
        """How many tasks may run at the same time."""

    def start(self, preload: object = None) -> None:  # noqa: B027 - optional hook
        """Get the workers ready before the first map, without waiting (default: nothing).

        ``preload``: an object whose pickle references the modules tasks will import
        (see :meth:`LocalExecutor.start`).
        """

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release the workers (default: nothing). The executor stays usable."""

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @abc.abstractmethod
    def map(
        self,
        fn: Callable[[T], R],
        items: Sequence[T],
        *,
        desc: str = "tasks",
        label: Callable[[T], str] | None = None,
    ) -> list[R]:
        """``[fn(item) for item in items]``, possibly in parallel, in input order.

        Parameters
        ----------
        fn : callable
            The task. Must be picklable for process or Ray executors.
        items : sequence
            One item per task.
        desc : str
            What the tasks do; the progress bar's label and part of error messages.
        label : callable, optional
            Names an item in error messages; default: its ``label``/``name``/
            ``model_id`` attribute, else a truncated ``repr``.

        Raises
        ------
        TaskError
            When a task raises; names the failing item and chains the original error.
        """


def run_inline(
    fn: Callable[[T], R],
    items: Sequence[T],
    desc: str,
    label: Callable[[T], str],
    progress: ProgressOption,
) -> list[R]:
    out: list[R] = []
    with progress_bar(desc, len(items), enabled=progress) as bar:
        for i, item in enumerate(items):
            interrupts.check(None, desc)  # in a CLI command after a swallowed signal: stop
            try:
                out.append(fn(item))
            except Exception as exc:
                raise TaskError(desc, i, label(item), exc) from exc
            bar.advance()
    return out


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity; ``os.cpu_count()`` elsewhere)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1
