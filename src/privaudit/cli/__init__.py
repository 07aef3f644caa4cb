"""The ``privaudit`` command line: a thin layer over the Python API.

Library code never prints; commands here render results. Exit codes: 0 done, 1 the
audit found a violation of a claimed guarantee, 2 usage or input error (nothing
half-written is left behind), 130 interrupted (Ctrl-C).

Each sub-command lives in its own module and registers itself on :data:`app`.

Start-up: importing this package imports nothing but the standard library; the Typer
:data:`app` is built on first use (``from privaudit.cli import app``, or :func:`main`),
and the command modules import NumPy, pandas, scikit-learn and the audit layers inside
their command functions, so that ``privaudit --help`` and ``--version`` stay fast
(``benchmarks/bench_startup.py``; ``tests/cli/test_startup.py`` checks what is imported).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from privaudit.cli.interrupted import interruptible

if TYPE_CHECKING:
    import typer

    #: The Typer application every command registers on (built by :func:`__getattr__`).
    app: typer.Typer

__all__ = ["EXIT_INTERRUPTED", "app", "cli_text", "error_line", "interrupted", "main"]

#: Exit status of a command ended by Ctrl-C (SIGINT): 128 + 2, as a shell reports it.
EXIT_INTERRUPTED = 130


def __getattr__(name: str) -> Any:
    # ``app`` is built on first use: typer is imported only then, inside ``main``'s guard.
    if name == "app":
        return _app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _app() -> typer.Typer:
    """:data:`app`, built on the first call."""
    built = globals().get("app")
    if built is None:
        built = globals()["app"] = _build_app()
    return built


def _build_app() -> typer.Typer:
    """The Typer app with its root options (``--version``); no command registered yet.

    Every command (and the root) renders its on/off switches (``--json``, ``--overwrite``,
    ``--quick``, ``--help``...) without a value placeholder: typer 0.29's rich help shows
    ``<bool>`` beside a flag, as if it took ``true``/``false``, which it refuses.
    """
    import typer
    from typer.core import TyperCommand, TyperGroup

    def without_flag_metavars(params: list[Any]) -> list[Any]:
        for p in params:
            if getattr(p, "is_flag", False) and getattr(p, "metavar", None) is None:
                p.metavar = ""  # the help's type column shows this instead of ``<bool>``
        return params

    class Command(TyperCommand):
        def get_params(self, ctx: Any) -> list[Any]:
            return without_flag_metavars(super().get_params(ctx))

    class Group(TyperGroup):
        def get_params(self, ctx: Any) -> list[Any]:
            return without_flag_metavars(super().get_params(ctx))

        def list_commands(self, ctx: Any) -> list[str]:
            # commands and command groups (``canaries``) together, alphabetically
            return sorted(super().list_commands(ctx))

    class App(typer.Typer):
        def command(self, *args: Any, cls: Any = None, **kwargs: Any) -> Any:
            return super().command(*args, cls=cls or Command, **kwargs)

    application = App(
        name="privaudit",
        help="Audit how much a trained model leaks about its training records.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        cls=Group,
    )

    def version_callback(value: bool) -> None:
        if value:
            from privaudit._version import __version__

            typer.echo(f"privaudit {__version__}")
            raise typer.Exit(0)

    @application.callback()
    def _root(
        version: bool = typer.Option(
            False, "--version", callback=version_callback, is_eager=True, help="Show the version."
        ),
    ) -> None:
        """privaudit: membership inference, record-level risk and DP auditing."""

    return application


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
    is printed as one ``error:`` line (exit code 2), never as a traceback. Ctrl-C
    (``KeyboardInterrupt``) anywhere -- while typer and the commands are imported, while a
    command runs, or as typer's own ``Exit(130)`` -- ends in :func:`interrupted`: exit
    code 130, no traceback.
    """
    try:
        return _main(argv)
    except KeyboardInterrupt:
        return interrupted()


def _main(argv: list[str] | None) -> int:
    """:func:`main` without its Ctrl-C guard: import, register, run, map the exit status."""
    from privaudit.cli_common.errors import error_line
    from privaudit.cli_common.mlflow_cli import with_bare_values
    from privaudit.errors import PrivauditError

    _register()
    args = with_bare_values(list(sys.argv[1:] if argv is None else argv))
    try:
        _app()(args=args, prog_name="privaudit", standalone_mode=True)
    except SystemExit as exc:
        if _interrupt_caused(exc):  # typer turns KeyboardInterrupt into Exit(130)
            return interrupted()
        return _exit_code(exc.code)
    except PrivauditError as exc:
        print(error_line(exc), file=sys.stderr)
        return 2
    return 0  # pragma: no cover - standalone mode always ends in SystemExit


def interrupted() -> int:
    """The one place where a Ctrl-C ends the command line; returns :data:`EXIT_INTERRUPTED`.

    Called for a ``KeyboardInterrupt`` raised anywhere under :func:`main` (the imports
    included) and for typer's ``Exit(130)``, which is how typer reports one. Nothing is
    printed as a traceback; a message about what was kept and how to resume belongs here.
    """
    return EXIT_INTERRUPTED


def _interrupt_caused(exc: BaseException) -> bool:
    """Whether a ``KeyboardInterrupt`` is in the cause/context chain of ``exc``."""
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        if isinstance(e, KeyboardInterrupt):
            return True
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return False


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
