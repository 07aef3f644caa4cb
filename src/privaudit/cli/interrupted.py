"""Ctrl-C or SIGTERM during a ``privaudit`` command: one line, exit 128 + signal, no traceback.

:func:`interruptible` wraps :func:`privaudit.cli.main`: the command runs under
:func:`privaudit.runtime.interrupts.handled` (a signal cancels the running tasks and
nothing of them is stored); afterwards one line on stderr says what the cache kept and
the command that resumes (the same command line), and the exit status is 130 (SIGINT) or
143 (SIGTERM). A signal while ``privaudit.runtime`` is still being imported (before those
handlers exist) ends the same way, with nothing run.
"""

from __future__ import annotations

import functools
import os
import shlex
import shutil
import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType
from typing import Any, Protocol

from privaudit._process import command_returned, end_after_command

__all__ = ["interrupt_line", "interruptible", "resume_command"]

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Main(Protocol):
    def __call__(self, argv: list[str] | None = None) -> int: ...


def resume_command(args: Sequence[str]) -> str:
    """The command line that reruns this one: the program as it was called, then ``args``."""
    argv0 = sys.argv[0] if sys.argv else ""
    base = os.path.basename(argv0)
    if base == "privaudit":
        found = shutil.which("privaudit")
        prog = "privaudit" if found and os.path.samefile(found, argv0) else argv0
    else:  # called in-process (tests, a script) or through ``python -c``
        prog = "privaudit"
    return " ".join([prog, shlex.join(list(args))]) if args else prog


def interrupt_line(signum: int, args: Sequence[str], kept: str) -> str:
    """The one line printed after an interrupt: the signal, what the cache holds, how to resume."""
    name = signal.Signals(signum).name
    return (
        f"interrupted ({name}): nothing half-done was stored; {kept}; "
        f"resume with: {resume_command(args)}"
    )


class _FirstSignal:
    """Until :func:`privaudit.runtime.interrupts.handled` takes over: remember the signal
    and raise KeyboardInterrupt (SIGTERM too)."""

    def __init__(self) -> None:
        self.signum: int | None = None

    def __call__(self, signum: int, frame: FrameType | None) -> None:
        self.signum = signum
        raise KeyboardInterrupt


def interruptible(main: Main) -> Main:
    """``main`` under SIGINT/SIGTERM handlers; an interrupt ends in one line and 128 + signal."""

    @functools.wraps(main)
    def run(argv: list[str] | None = None) -> int:
        script = argv is None  # the process ends after main: signals are ignored then
        if script:
            end_after_command()
        args = sys.argv[1:] if argv is None else list(argv)
        first = _FirstSignal()
        saved: dict[int, Any] = {}
        if threading.current_thread() is threading.main_thread():
            ignored = {s for s in _SIGNALS if signal.getsignal(s) is signal.SIG_IGN}
            saved = {s: signal.signal(s, first) for s in _SIGNALS if s not in ignored}
        try:
            try:
                from privaudit.runtime import interrupts
            except KeyboardInterrupt:
                signum = first.signum or signal.SIGINT
                print(interrupt_line(signum, args, "nothing was run"), file=sys.stderr, flush=True)
                return 128 + signum
            code = 1
            with interrupts.handled(last=script) as session:
                code = main(argv)
            if session.signum is None:
                return code
            from privaudit.runtime.store import kept_summary

            line = interrupt_line(session.signum, args, kept_summary())
            print(line, file=sys.stderr, flush=True)
            return session.exit_code
        finally:
            for s, h in saved.items():
                signal.signal(s, signal.SIG_IGN if script else h)
            if script:
                command_returned()  # the process ends now (privaudit._process)

    return run
