"""Ctrl-C or SIGTERM during a ``privaudit`` command: one line, exit 128 + signal, no traceback.

:func:`interruptible` wraps :func:`privaudit.cli.main`: the command runs under
:func:`privaudit.runtime.interrupts.handled` (a signal cancels the running tasks and
nothing of them is stored); afterwards one line on stderr says what the cache kept and
the command that resumes (the same command line), and the exit status is 130 (SIGINT) or
143 (SIGTERM).
"""

from __future__ import annotations

import functools
import sys
from typing import Protocol

__all__ = ["interruptible"]


class Main(Protocol):
    def __call__(self, argv: list[str] | None = None) -> int: ...


def interruptible(main: Main) -> Main:
    """``main`` under SIGINT/SIGTERM handlers; an interrupt ends in one line and 128 + signal."""

    @functools.wraps(main)
    def run(argv: list[str] | None = None) -> int:
        from privaudit.runtime import interrupts

        code = 1
        # called by the script (no argv): the process ends next, signals are ignored after
        with interrupts.handled(last=argv is None) as session:
            code = main(argv)
        if session.signum is None:
            return code
        args = sys.argv[1:] if argv is None else list(argv)
        print(interrupts.interrupt_line(session, args), file=sys.stderr, flush=True)
        return session.exit_code

    return run
