"""``--mlflow [URI]`` of the commands that audit: the audit logged as an MLflow run.

Each command adds :func:`option` to its parameters, calls :func:`check` before any work
(mlflow installed, the tracking URI usable) and :func:`log` once its report is written
(:func:`privaudit.report.mlflow_run.log_to_mlflow`: figures as metrics, settings as
params, the report's files as artifacts). ``--mlflow`` without a URI (as the last
option, or before another option) logs to ``MLFLOW_TRACKING_URI`` or MLflow's default:
:func:`privaudit.cli.main` gives it the empty value.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

#: The option's name.
FLAG = "--mlflow"

HELP = (
    "Log the audit to MLflow: its figures as metrics, its settings as params, its files "
    "as artifacts (needs privaudit's mlflow extra). URI: a tracking server "
    "(http://host:5000) or a folder (file:///path/mlruns); --mlflow alone: "
    "MLFLOW_TRACKING_URI or MLflow's default."
)


def option() -> Any:
    """The ``--mlflow [URI]`` option (None: not asked; ``""``: MLflow's default URI)."""
    return typer.Option(None, FLAG, metavar="[URI]", help=HELP, show_default=False)


def with_bare_values(args: list[str]) -> list[str]:
    """``args`` with ``""`` after a bare ``--mlflow`` (last, or followed by an option)."""
    out: list[str] = []
    for k, a in enumerate(args):
        out.append(a)
        if a == FLAG and (k + 1 == len(args) or args[k + 1].startswith("-")):
            out.append("")
    return out


def check(uri: str | None) -> None:
    """Before any work: nothing when not asked; else mlflow importable and ``uri`` usable
    (:func:`~privaudit.report.mlflow_run.check_tracking_uri`; raises ``InvalidInputError``)."""
    if uri is None:
        return
    from privaudit.report.mlflow_run import check_tracking_uri

    check_tracking_uri(uri or None)


def log(
    uri: str | None,
    result: Any,
    *,
    command: str,
    artifact_dir: Path | None = None,
) -> None:
    """Log ``result`` (a report folder or a results document) and print the run's id; a
    failure is one ``error:`` line and exit code 2 (the report itself is written)."""
    if uri is None:
        return
    from privaudit.errors import PrivauditError
    from privaudit.report.mlflow_run import log_to_mlflow

    name = None if isinstance(result, Path) else f"privaudit {command}"
    try:
        run_id = log_to_mlflow(
            result,
            tracking_uri=uri or None,
            run_name=name,
            tags={"privaudit.command": command},
            artifact_dir=artifact_dir,
        )
    except PrivauditError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    where = uri or "MLflow's default tracking URI"
    typer.echo(f"MLflow: run {run_id} logged to {where} (experiment 'privaudit')", err=True)
