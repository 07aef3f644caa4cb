"""``privaudit demo``: audit an overfit MLP trained on UCI Adult with every attack."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import typer

from privaudit.cli_common import mlflow_cli
from privaudit.cli_common.errors import fail_exit, quiet_warnings
from privaudit.cli_common.progress_option import no_progress_option, progress_mode, progress_option
from privaudit.errors import PrivauditError
from privaudit.membership.summary import _models_line, summary_lines, summary_parts  # noqa: F401

__all__ = ["DEMO_CACHE_DIR", "demo", "new_results_dir", "render_summary", "summary_lines"]


#: The demo's cache folder when no --cache-dir is given (in the working directory).
DEMO_CACHE_DIR = Path(".privaudit-cache")


def render_summary(
    results: dict[str, Any],
    out_dir: Path | None,
    *,
    width: int | None = None,
    cache_note: str | None = None,
) -> None:
    """Print the summary of a ``results.json`` document with rich, readable at 80 columns.

    One row per attack: AUC, TPR at 0.1% and 1% FPR, the achieved FPR of the alpha
    threshold with its 95% Clopper-Pearson interval (green when within sampling error
    of alpha, the calibration sample's error included; red and marked ``^`` / ``v``
    when above / below it beyond that error, so that the mark survives plain text;
    ``*`` when the threshold holds
    alpha only on average over target models, as attack S's; ``~`` when it is smoothed,
    not calibrated), the records the figures rest on
    (members + non-members scored) and the models the attack learned from. Under the
    table: why a TPR is n/a (too few non-members), whether models came from the cache,
    and the audit's warnings, those of each attack included (its name ends in ``!``:
    e.g. a threshold that cannot fire at alpha). The parts come from
    :func:`privaudit.membership.summary.summary_parts`.
    """
    from rich.console import Console

    if width is None:
        width = 80 if not sys.stdout.isatty() else None  # a pipe or file: 80 columns
    console = Console(width=width, highlight=False)
    for part in summary_parts(results, out_dir, cache_note=cache_note):
        console.print(part)


def new_results_dir(root: Path, prefix: str) -> Path:
    """A report folder under ``root`` that does not exist yet: ``<prefix>-<UTC time>[-N]``.

    The folder itself is created later by the report writer; a repeated run therefore
    never overwrites an earlier report.
    """
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    candidate = root / f"{prefix}-{stamp}"
    n = 1
    while candidate.exists():
        n += 1
        candidate = root / f"{prefix}-{stamp}-{n}"
    return candidate


def demo(
    out: Path | None = typer.Option(
        None,
        "--out",
        help="Report directory to create (default: a new privaudit-results/demo-<time> folder).",
    ),
    overwrite: bool = typer.Option(
        False, "--overwrite", help="Replace an existing report directory."
    ),
    seed: int = typer.Option(0, "--seed", help="Root seed of the audit."),
    n_jobs: int = typer.Option(
        -1, "--n-jobs", help="Worker processes for training (-1: all cores)."
    ),
    quick: bool = typer.Option(
        False, "--quick", help="A smaller, faster demo (fewer records and models)."
    ),
    progress: str = progress_option(),
    no_progress: bool = no_progress_option(),
    cache_dir: Path | None = typer.Option(
        DEMO_CACHE_DIR,
        "--cache-dir",
        help="Artifact store for trained models and signals: a killed or repeated run "
        f"resumes from it without retraining (default: the folder {DEMO_CACHE_DIR} in the "
        "working directory).",
    ),
    no_cache: bool = typer.Option(False, "--no-cache", help="Train everything afresh."),
    mlflow: str | None = mlflow_cli.option(),
) -> None:
    """Audit an overfit MLP trained on UCI Adult with every attack, and write a report."""
    from privaudit.membership.pipeline import demo_config, run_audit

    if out is None:
        out = new_results_dir(Path("privaudit-results"), "demo")
    try:
        mlflow_cli.check(mlflow)
        cfg = demo_config(
            seed=seed,
            n_jobs=n_jobs,
            quick=quick,
            output_dir=out,
            cache_dir=None if no_cache else cache_dir,
        )
        with quiet_warnings():  # the summary prints them (results.json records them)
            report = run_audit(
                cfg, overwrite=overwrite, progress=progress_mode(progress, no_progress)
            )
    except PrivauditError as exc:
        raise fail_exit(exc) from None
    note = None
    if no_cache or cache_dir is None:
        note = "--no-cache"
    elif cache_dir == DEMO_CACHE_DIR:
        note = "the demo's default folder, in the working directory; --cache-dir moves it"
    render_summary(report.results, report.out_dir, cache_note=note)
    mlflow_cli.log(mlflow, report.out_dir, command="demo")
