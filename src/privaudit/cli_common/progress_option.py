"""``--progress {auto,rich,plain,none}``: the option of every command that does long work.

``auto`` (the default) draws rich bars when stderr is a terminal and writes plain lines
otherwise (a log file, CI, ``nohup``): ``privaudit demo > log.txt 2>&1`` shows what runs
while it runs. ``--no-progress`` is ``--progress none``. The modes are those of
:mod:`privaudit.runtime.progress`; this module only parses them (typer imports nothing
heavy here: ``privaudit --help`` imports it).
"""

from __future__ import annotations

from typing import Any

import typer

__all__ = ["MODES", "no_progress_option", "progress_mode", "progress_option"]

#: The values of ``--progress`` (as :data:`privaudit.runtime.progress.PROGRESS_MODES`).
MODES: tuple[str, ...] = ("auto", "rich", "plain", "none")

_HELP = (
    "Progress on stderr: auto (bars on a terminal, plain lines in a log or pipe), rich, "
    "plain (one line per phase and every ~10% of a long one) or none."
)


def _check(value: str) -> str:
    mode = value.strip().lower()
    if mode not in MODES:
        raise typer.BadParameter(f"expected one of {', '.join(MODES)}, found {value!r}")
    return mode


def progress_option(help_suffix: str = "") -> Any:
    """The ``--progress MODE`` option (default ``auto``), checked while parsing."""
    return typer.Option(
        "auto",
        "--progress",
        metavar="[" + "|".join(MODES) + "]",
        callback=_check,
        help=_HELP + help_suffix,
    )


def no_progress_option() -> Any:
    """The ``--no-progress`` switch (the same as ``--progress none``)."""
    return typer.Option(False, "--no-progress", help="Same as --progress none.")


def progress_mode(progress: str, no_progress: bool, *, quiet_default: bool = False) -> str:
    """The mode the two options ask for: ``none`` with ``--no-progress``; with
    ``quiet_default`` (a ``--json`` run), ``auto`` becomes ``none`` (ask for ``plain`` or
    ``rich`` to see progress then)."""
    if no_progress:
        return "none"
    mode = _check(progress)
    return "none" if quiet_default and mode == "auto" else mode
