"""The garbage-collection policy of the command line's process (a bottom-level module).

A command run as the ``privaudit`` script owns its process, which ends when the command
does. Two costs of Python's cyclic garbage collector are then avoidable, and only then
(a library must not change its caller's collector):

* importing torch creates several hundred thousand long-lived objects; collecting during
  that import (0.1-0.15 s) finds no garbage, and every later full collection walks them
  all again (about 0.05 s each, several an audit). :func:`heavy_import` turns the
  collector off for the import and then freezes what exists (``gc.freeze``: moved to a
  generation no collection scans; reference counting still frees them).
* the interpreter's final collections at exit walk every object left (0.3-0.4 s after
  an audit); :func:`command_returned` freezes them when the command has returned
  (atexit handlers and the modules' teardown still run).

:func:`end_after_command` and :func:`command_returned` are called by the script's entry
point only (:func:`privaudit.cli.interrupted.interruptible`, with no argv): the tests, the
Python API and a user's own process keep the collector as they set it.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = [
    "command_returned",
    "end_after_command",
    "heavy_import",
    "process_ends_after_command",
]

_ends_after_command = False


def end_after_command() -> None:
    """Mark this process as the command line's: it ends when the command returns."""
    global _ends_after_command
    _ends_after_command = True


def command_returned() -> None:
    """The command line's command has returned and its process ends: freeze every object,
    so that the interpreter's last collections do not walk them (nothing elsewhere)."""
    if _ends_after_command:
        gc.freeze()


def process_ends_after_command() -> bool:
    """Whether :func:`end_after_command` was called in this process."""
    return _ends_after_command


@contextmanager
def heavy_import() -> Iterator[None]:
    """Around the first import of a large library: in the command line's process, no
    collection during it and everything that exists after it frozen; elsewhere nothing."""
    if not _ends_after_command:
        yield
        return
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()
