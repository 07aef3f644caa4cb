"""How every command reports a failed run: one ``error:`` line in the command line's words.

Library errors (:class:`~privaudit.errors.PrivauditError`) are printed as one line, never as a
traceback; an error whose message speaks the Python API carries a CLI version of it
(``cli_message``, e.g. :class:`~privaudit.report.ReportExistsError` names ``--overwrite``).
Imports nothing heavy: every command module imports it at start-up.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from privaudit.errors import PrivauditError

__all__ = ["cli_text", "error_line", "fail_exit", "quiet_warnings"]


def error_line(exc: BaseException) -> str:
    """The ``error: ...`` line of a failed command: ``"error: " +`` :func:`cli_text`."""
    return f"error: {cli_text(exc)}"


def cli_text(exc: BaseException) -> str:
    """The message of ``exc`` in the command line's words.

    An error whose message speaks the Python API (``overwrite=True``) carries the same in
    CLI words as ``cli_message`` (``--overwrite``; e.g.
    :class:`~privaudit.report.ReportExistsError`): that one is used.
    """
    message = getattr(exc, "cli_message", None)
    return message if isinstance(message, str) and message else str(exc)


@contextlib.contextmanager
def quiet_warnings() -> Iterator[None]:
    """Hide :class:`~privaudit.errors.PrivauditWarning` (the summary lists them)."""
    import warnings

    from privaudit.errors import PrivauditWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivauditWarning)
        yield


def fail_exit(exc: PrivauditError) -> typer.Exit:
    """Print an error to stderr and return the exit (code 2: usage or input error)."""
    print(error_line(exc), file=sys.stderr)
    return typer.Exit(2)
