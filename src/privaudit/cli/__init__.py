"""The ``privaudit`` command line: a thin layer over the Python API.

Library code never prints; commands here render results. Exit codes: 0 done, 1 the
audit found a violation of a claimed guarantee, 2 usage or input error (nothing
half-written is left behind).

Each sub-command lives in its own module and registers itself on :data:`app`.
"""

from __future__ import annotations

import sys

import typer

from privaudit import __version__
from privaudit.cli.interrupted import interruptible
from privaudit.errors import PrivauditError

app = typer.Typer(
    name="privaudit",
    help="Audit how much a trained model leaks about its training records.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"privaudit {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version_callback, is_eager=True, help="Show the version."
    ),
) -> None:
    """privaudit: membership inference, record-level risk and DP auditing."""


def _register() -> None:
    # Importing a command module registers its commands on ``app``.
    from privaudit.cli import commands  # noqa: F401


@interruptible  # SIGINT/SIGTERM: nothing half-done stored, one line, exit 130/143
def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``privaudit`` script; returns the exit code.

    Typer runs in standalone mode, so a usage error (unknown command or option, missing
    argument, a value of the wrong type) is printed by typer itself, as typer formats it,
    and ends in ``SystemExit(2)``; nothing here imports ``click``, which the newest typer
    no longer installs (typer 0.29 vendors its own copy and raises its own exception
    classes). A :class:`~privaudit.errors.PrivauditError` that a command did not handle
    is printed as one ``error:`` line (exit code 2), never as a traceback.
    """
    _register()
    try:
        app(args=argv, prog_name="privaudit", standalone_mode=True)
    except SystemExit as exc:
        return _exit_code(exc.code)
    except PrivauditError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0  # pragma: no cover - standalone mode always ends in SystemExit


def _exit_code(code: object) -> int:
    """The integer exit status of ``SystemExit(code)`` (as the interpreter computes it)."""
    if code is None:
        return 0
    if isinstance(code, bool):
        return int(code)
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
