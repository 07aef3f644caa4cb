"""Progress of long work: a bar on a terminal, plain lines in a log, or a callback.

Library code never prints (docs/architecture.md). The only output it may produce is
progress on **stderr**, chosen by a *progress option*: what every ``progress=`` parameter
of privaudit accepts (:data:`ProgressOption`), and what ``--progress`` sets on the command
line.

=====================  =============================================================
option                 what is shown
=====================  =============================================================
``None``, ``True``     a rich bar when stderr is a terminal, nothing otherwise (the
                       library's default)
``"auto"``             a rich bar on a terminal, plain lines otherwise (a log file,
                       CI, ``nohup``, a notebook); the command line's default
``"rich"``             a rich bar, even when stderr is not a terminal
``"plain"``            plain lines (:class:`PlainProgress` on stderr)
``"none"``, ``False``  nothing
a function             ``fn(event)`` with a :class:`ProgressEvent` at every start, step
                       and end; nothing is drawn (e.g. ``PlainProgress(stream=log)``)
a class                tqdm-style (``tqdm.tqdm``, ``tqdm.auto.tqdm``): per phase
                       ``bar = cls(total=n, desc=what)``, ``bar.update(k)``, ``bar.close()``
=====================  =============================================================

The environment variable ``PRIVAUDIT_NO_PROGRESS`` (non-empty) turns every bar and line
off; a function or class given by the caller is still called.

Two kinds of work report progress: a counted phase (:func:`progress_bar`: ``n`` steps,
e.g. the reference models) and a phase without steps (:func:`progress_phase`: e.g.
loading the data, training the target). Plain lines name the phase when it starts, then
at every 10% of its steps (at most one line per ``min_interval`` seconds: a long phase
gets about ten, a quick one none), and when it ends if it was long enough to have
reported::

    privaudit: reference models 0/16
    privaudit: reference models 2/16 (12%), 4s elapsed, ETA 28s
    privaudit: reference models 16/16 done in 31s

Only one rich bar is drawn at a time (a limit of ``rich``): a bar asked for while another
is live degrades to no output; plain lines and callbacks have no such limit. Phases
without steps draw nothing in rich mode (the bars of their counted steps do).
"""

from __future__ import annotations

import itertools
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TextIO, TypeAlias

__all__ = [
    "PROGRESS_MODES",
    "PlainProgress",
    "ProgressEvent",
    "ProgressHandle",
    "ProgressOption",
    "check_progress",
    "progress_bar",
    "progress_enabled",
    "progress_phase",
    "progress_style",
]

#: The named progress modes (``--progress`` on the command line).
PROGRESS_MODES: tuple[str, ...] = ("auto", "rich", "plain", "none")

#: What a ``progress=`` parameter accepts (see the module's table).
ProgressOption: TypeAlias = bool | str | Callable[..., Any] | None

_LIVE = threading.Lock()
_WRITE = threading.Lock()
_PHASE_IDS = itertools.count(1)


@dataclass(frozen=True)
class ProgressEvent:
    """One report of a phase's progress, given to a progress callback.

    Attributes
    ----------
    desc : str
        What the phase does (``"reference models"``).
    stage : {"start", "advance", "end"}
        The phase began, made ``done`` steps so far, or finished.
    done : int
        Steps finished so far.
    total : int or None
        Steps of the phase; None for a phase without steps (:func:`progress_phase`).
    elapsed : float
        Seconds since the phase began.
    completed : bool
        At ``"end"``: whether the phase finished normally (False when it raised or was
        interrupted); always True before.
    phase : int
        Unique to the phase in this process: tells phases that run at the same time apart.
    """

    desc: str
    stage: Literal["start", "advance", "end"]
    done: int
    total: int | None
    elapsed: float
    completed: bool = True
    phase: int = 0

    @property
    def fraction(self) -> float | None:
        """``done / total`` (None without a positive total)."""
        if not self.total:
            return None
        return min(1.0, self.done / self.total)

    @property
    def eta(self) -> float | None:
        """Seconds left, extrapolated linearly from the steps so far (None before the first)."""
        if not self.total or self.done <= 0:
            return None
        return max(0.0, self.elapsed * (self.total - self.done) / self.done)


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


class _EventHandle:
    """Counts steps and sends :class:`ProgressEvent` s to ``sink``."""

    def __init__(
        self,
        desc: str,
        total: int | None,
        sink: Callable[[ProgressEvent], Any],
        clock: Callable[[], float],
    ) -> None:
        self.desc, self.total, self.sink, self.clock = desc, total, sink, clock
        self.done = 0
        self.phase = next(_PHASE_IDS)
        self.t0 = clock()
        self._emit("start")

    def _emit(self, stage: Literal["start", "advance", "end"], completed: bool = True) -> None:
        elapsed = self.clock() - self.t0
        self.sink(
            ProgressEvent(self.desc, stage, self.done, self.total, elapsed, completed, self.phase)
        )

    def advance(self, n: int = 1) -> None:
        self.done += int(n)
        self._emit("advance")

    def end(self, completed: bool) -> None:
        self._emit("end", completed)


class _TqdmHandle:
    """A tqdm-style bar: ``cls(total=, desc=)``, ``update(n)``, ``close()``."""

    def __init__(self, factory: type, desc: str, total: int | None) -> None:
        self.bar = factory(total=total, desc=desc)

    def advance(self, n: int = 1) -> None:
        self.bar.update(n)

    def end(self, completed: bool) -> None:
        self.bar.close()


def _duration(seconds: float) -> str:
    """``12s``, ``3m05s``, ``2h07m``."""
    s = max(0, round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


class PlainProgress:
    """Progress as plain text lines, for logs: a progress callback (``fn(event)``).

    ``"plain"`` (and ``"auto"`` off a terminal) uses one on stderr. A line when a phase
    starts; one when its steps cross the next 10% mark, at most one per ``min_interval``
    seconds (so a quick phase prints only its start); one when it ends, if it printed a
    step line or lasted ``min_interval`` seconds. A phase that raised ends without a line.

    Parameters
    ----------
    stream : text file, optional
        Where the lines go (default: ``sys.stderr`` at the time of writing); flushed
        after each line.
    min_interval : float
        Least seconds between two step lines of one phase (and least length of a phase
        whose end is reported).
    prefix : str
        Start of every line.

    Examples
    --------
    >>> import io
    >>> log = io.StringIO()
    >>> with progress_bar("work", 3, enabled=PlainProgress(stream=log)) as bar:
    ...     for _ in range(3):
    ...         bar.advance()
    >>> log.getvalue()
    'privaudit: work 0/3\\n'
    """

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        min_interval: float = 2.0,
        prefix: str = "privaudit: ",
    ) -> None:
        if not min_interval >= 0:
            from privaudit._validation import fail

            raise fail("min_interval", "a number of seconds >= 0", min_interval)
        self.stream = stream
        self.min_interval = float(min_interval)
        self.prefix = prefix
        self._last: dict[int, tuple[float, int, bool]] = {}  # phase -> (time, decile, stepped)

    def __call__(self, event: ProgressEvent) -> None:
        """Write the line ``event`` calls for, if any."""
        phase = event.phase
        if event.stage == "start":
            self._last[phase] = (event.elapsed, 0, False)
            self._write(self._start_line(event))
            return
        last_t, decile, stepped = self._last.get(phase, (0.0, 0, False))
        if event.stage == "end":
            self._last.pop(phase, None)
            long = stepped or event.elapsed >= self.min_interval
            if event.completed and long:
                self._write(self._end_line(event))
            return
        frac = event.fraction
        if frac is None or frac >= 1.0:
            return  # the end line reports the last step
        now_decile = int(frac * 10 + 1e-9)
        if now_decile > decile and event.elapsed - last_t >= self.min_interval:
            self._last[phase] = (event.elapsed, now_decile, True)
            self._write(self._step_line(event))

    def _start_line(self, e: ProgressEvent) -> str:
        return f"{e.desc} 0/{e.total}" if e.total is not None else f"{e.desc}..."

    def _step_line(self, e: ProgressEvent) -> str:
        eta = e.eta
        tail = "" if eta is None else f", ETA {_duration(eta)}"
        return (
            f"{e.desc} {e.done}/{e.total} ({100 * (e.fraction or 0.0):.0f}%), "
            f"{_duration(e.elapsed)} elapsed{tail}"
        )

    def _end_line(self, e: ProgressEvent) -> str:
        counted = f" {e.done}/{e.total}" if e.total is not None else ""
        return f"{e.desc}{counted} done in {_duration(e.elapsed)}"

    def _write(self, line: str) -> None:
        stream = self.stream if self.stream is not None else sys.stderr
        with _WRITE:
            try:
                stream.write(self.prefix + line + "\n")
                stream.flush()
            except (OSError, ValueError):  # a closed or broken stream never stops the work
                pass


def check_progress(option: object, name: str = "progress") -> ProgressOption:
    """``option`` if it is a valid progress option (see the module), else an error.

    Raises
    ------
    InvalidInputError
        A string other than ``auto``, ``rich``, ``plain``, ``none``, or another type.
    """
    if option is None or isinstance(option, bool) or callable(option):
        return option
    if isinstance(option, str) and option.strip().lower() in PROGRESS_MODES:
        return option.strip().lower()
    from privaudit._validation import fail

    raise fail(
        name,
        "one of " + ", ".join(PROGRESS_MODES) + ", a bool, None, a callback or a tqdm-style class",
        repr(option),
    )


def _on_terminal() -> bool:
    try:
        return bool(sys.stderr.isatty())
    except (AttributeError, ValueError):  # closed or replaced stderr
        return False


def _resolve(option: ProgressOption) -> str | Callable[..., Any]:
    """``"rich"``, ``"plain"``, ``"none"``, or the caller's callable, for this moment."""
    option = check_progress(option)
    if callable(option):
        return option
    if option is False or option == "none" or os.environ.get("PRIVAUDIT_NO_PROGRESS"):
        return "none"
    if option == "rich":
        return "rich"
    if option == "plain":
        return "plain"
    if _on_terminal():
        return "rich"
    return "plain" if option == "auto" else "none"


def progress_style(enabled: ProgressOption = None) -> Literal["rich", "plain", "none", "custom"]:
    """How ``enabled`` shows progress now: ``"rich"`` bars, ``"plain"`` lines, ``"none"``,
    or ``"custom"`` (the caller's callback or tqdm-style class)."""
    how = _resolve(enabled)
    if callable(how):
        return "custom"
    return "rich" if how == "rich" else "plain" if how == "plain" else "none"


def progress_enabled(enabled: ProgressOption = None) -> bool:
    """Whether anything would be drawn or called for ``enabled`` now.

    Parameters
    ----------
    enabled : progress option
        See the module's table (None: a bar on a terminal only).
    """
    return _resolve(enabled) != "none"


@contextmanager
def _rich_bar(desc: str, total: int, force: bool) -> Iterator[ProgressHandle]:
    if not _LIVE.acquire(blocking=False):
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
            console=Console(stderr=True, force_terminal=True if force else None),
            transient=False,
        )
        with progress:
            task_id = progress.add_task(desc, total=max(int(total), 0))
            yield _RichHandle(progress, task_id)
    finally:
        _LIVE.release()


@contextmanager
def _tracked(
    desc: str,
    total: int | None,
    how: str | Callable[..., Any],
    clock: Callable[[], float],
) -> Iterator[ProgressHandle]:
    """A phase reported to a callable, a tqdm-style class or the plain renderer."""
    handle: _EventHandle | _TqdmHandle
    if isinstance(how, type):
        handle = _TqdmHandle(how, desc, total)
    elif callable(how):
        handle = _EventHandle(desc, total, how, clock)
    else:  # "plain"
        handle = _EventHandle(desc, total, PlainProgress(), clock)
    completed = False
    try:
        yield handle
        completed = True
    finally:
        handle.end(completed)


@contextmanager
def progress_bar(
    desc: str,
    total: int,
    *,
    enabled: ProgressOption = None,
    clock: Callable[[], float] = time.monotonic,
) -> Iterator[ProgressHandle]:
    """Progress over ``total`` steps, shown as ``enabled`` says (see the module's table).

    Parameters
    ----------
    desc : str
        What the steps do (e.g. ``"reference models"``).
    total : int
        Number of steps.
    enabled : progress option
        None (default): a rich bar on a terminal, nothing otherwise; ``"auto"``,
        ``"rich"``, ``"plain"``, ``"none"``, a bool, a callback or a tqdm-style class.
    clock : callable
        Seconds, for the events' ``elapsed`` (tests inject one).

    Yields
    ------
    ProgressHandle
        Call ``advance()`` after each finished step.

    Examples
    --------
    >>> events = []
    >>> with progress_bar("work", 2, enabled=events.append) as bar:
    ...     bar.advance()
    ...     bar.advance()
    >>> [(e.stage, e.done) for e in events]
    [('start', 0), ('advance', 1), ('advance', 2), ('end', 2)]
    """
    how = _resolve(enabled)
    if how == "none":
        yield _NullHandle()
    elif how == "rich":
        forced = isinstance(enabled, str) and enabled.strip().lower() == "rich"
        with _rich_bar(desc, total, force=forced) as bar:
            yield bar
    else:
        with _tracked(desc, max(int(total), 0), how, clock) as bar:
            yield bar


@contextmanager
def progress_phase(
    desc: str,
    *,
    enabled: ProgressOption = None,
    clock: Callable[[], float] = time.monotonic,
) -> Iterator[None]:
    """A phase of work without counted steps (loading data, training one model).

    Reported to plain lines, callbacks and tqdm-style classes (``total=None``); nothing
    is drawn in rich mode (a terminal shows the bars of the counted phases).

    Parameters
    ----------
    desc : str
        What the phase does.
    enabled : progress option
        See :func:`progress_bar`.
    clock : callable
        Seconds, for the events' ``elapsed``.

    Examples
    --------
    >>> events = []
    >>> with progress_phase("loading data", enabled=events.append):
    ...     pass
    >>> [(e.stage, e.total) for e in events]
    [('start', None), ('end', None)]
    """
    how = _resolve(enabled)
    if how in ("none", "rich"):
        yield
        return
    with _tracked(desc, None, how, clock):
        yield
