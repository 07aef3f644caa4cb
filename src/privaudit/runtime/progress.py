"""Progress bars for long loops: visible on a terminal, silent everywhere else.

Library code never prints (docs/architecture.md). The only output it may produce is a
progress bar drawn by :func:`progress_bar` on **stderr**, and only when

* the caller did not disable it (``enabled=False``), and
* stderr is an interactive terminal, and
* the environment variable ``PRIVAUDIT_NO_PROGRESS`` is unset or empty.

Otherwise the context yields a no-op handle, so that callers never branch on whether
progress is shown. Only one live bar can be drawn at a time (a limit of ``rich``); a
bar requested while another is live degrades to the no-op handle instead of failing.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

__all__ = ["ProgressHandle", "progress_bar", "progress_enabled"]

_LIVE = threading.Lock()


class ProgressHandle(Protocol):
    """What a progress context yields: a counter of finished steps."""

    def advance(self, n: int = 1) -> None:
        """Mark ``n`` more steps as done."""


class _NullHandle:
    def advance(self, n: int = 1) -> None:
        return None


class _RichHandle:
    def __init__(self, progress: object, task_id: object) -> None:
        self._progress = progress
        self._task = task_id

    def advance(self, n: int = 1) -> None:
        self._progress.advance(self._task, n)  # type: ignore[attr-defined]


def progress_enabled(enabled: bool | None = None) -> bool:
    """Whether a bar would be drawn: ``enabled`` (None = automatic) and a terminal.

    Parameters
    ----------
    enabled : bool or None
        ``False`` never draws; ``True`` or ``None`` draw only when stderr is a
        terminal and ``PRIVAUDIT_NO_PROGRESS`` is unset.
    """
    if enabled is False:
        return False
    if os.environ.get("PRIVAUDIT_NO_PROGRESS"):
        return False
    try:
        return bool(sys.stderr.isatty())
    except (AttributeError, ValueError):  # closed or replaced stderr
        return False


@contextmanager
def progress_bar(desc: str, total: int, *, enabled: bool | None = None) -> Iterator[ProgressHandle]:
    """A progress bar over ``total`` steps, drawn with ``rich`` on stderr when allowed.

    Parameters
    ----------
    desc : str
        Label shown left of the bar (e.g. ``"reference models"``).
    total : int
        Number of steps.
    enabled : bool or None
        See :func:`progress_enabled`.

    Yields
    ------
    ProgressHandle
        Call ``advance()`` after each finished step.

    Examples
    --------
    >>> with progress_bar("work", 3, enabled=False) as bar:
    ...     for _ in range(3):
    ...         bar.advance()
    """
    if not progress_enabled(enabled) or not _LIVE.acquire(blocking=False):
        yield _NullHandle()
        return
    try:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=False,
        )
        with progress:
            task_id = progress.add_task(desc, total=max(int(total), 0))
            yield _RichHandle(progress, task_id)
    finally:
        _LIVE.release()
