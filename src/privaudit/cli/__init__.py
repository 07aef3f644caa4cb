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


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``privaudit`` script; returns the exit code."""
    _register()
    try:
        # With standalone_mode=False click *returns* the code of a typer.Exit.
        rc = app(args=argv, standalone_mode=False)
    except typer.Exit as exc:
        return int(exc.exit_code or 0)
    except SystemExit as exc:  # pragma: no cover - click may raise it directly
        return int(exc.code or 0) if not isinstance(exc.code, str) else 2
    except Exception as exc:  # click usage errors
        import click

        if isinstance(exc, click.exceptions.Abort):
            return 130
        if isinstance(exc, click.ClickException):
            exc.show()
            return 2
        raise
    return rc if isinstance(rc, int) else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
