"""``privaudit demo``: audit an overfit MLP trained on UCI Adult with every attack."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import typer

from privaudit.cli import app
from privaudit.errors import PrivauditError


def _pct(x: Any) -> str:
    return "n/a" if x is None else f"{100.0 * float(x):.2f}%"


def render_summary(results: dict[str, Any], out_dir: Path | None) -> None:
    """Print the attack table of a ``results.json`` document with rich."""
    from rich.console import Console
    from rich.table import Table

    # a pipe or file gets the full table (rich would wrap it at 80 columns)
    console = Console() if sys.stdout.isatty() else Console(width=160)
    t = results["target"]
    s = results["settings"]
    console.print(
        f"[bold]Target[/bold]: {s['model'].get('kind', '?')} on {s['dataset'].get('name') or s['dataset'].get('path')}, "
        f"train accuracy {_pct(t['train_accuracy'])}, test accuracy {_pct(t['test_accuracy'])}, "
        f"{t['n_members']} members / {t['n_non_members']} non-members audited"
    )
    table = Table(title=f"Membership inference (alpha = {s['alpha']})", show_lines=False)
    for col, justify in [
        ("attack", "left"),
        ("AUC", "right"),
        ("TPR@0.1%FPR", "right"),
        ("TPR@1%FPR", "right"),
        ("FPR@50%TPR", "right"),
        ("achieved FPR [95% CI]", "right"),
        ("scored (m / n)", "right"),
        ("models", "right"),
    ]:
        table.add_column(col, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    marks = {"average-over-targets": " (avg)", "approximate": " (~)"}
    notes: list[str] = []
    for a in results["attacks"]:
        if a["achieved_fpr"] is None:
            ach = "n/a"
        else:
            lo, hi = a["achieved_fpr_ci"]
            colour = "green" if a["alpha_within_error"] else "red"
            mark = marks.get(a.get("alpha_guarantee") or "", "")
            ach = f"[{colour}]{_pct(a['achieved_fpr'])}[/{colour}] [{_pct(lo)}, {_pct(hi)}]{mark}"
        name = a["name"] + (" [yellow]![/yellow]" if a.get("warnings") else "")
        table.add_row(
            name,
            f"{a['auc']:.3f}",
            _pct(a["tpr_at_fpr"].get("0.001")),
            _pct(a["tpr_at_fpr"].get("0.01")),
            _pct(a.get("fpr_at_tpr", {}).get("0.5")),
            ach,
            f"{a['n_positives']} / {a['n_negatives']}",
            "n/a" if a["n_reference_models"] is None else str(a["n_reference_models"]),
        )
        notes.extend(f"[yellow]![/yellow] {a['name']}: {w}" for w in a.get("warnings") or [])
    console.print(table)
    guarantees = {a.get("alpha_guarantee") for a in results["attacks"]}
    if guarantees & {"average-over-targets", "approximate"}:
        console.print(
            "(avg): the alpha threshold holds on average over target models (Ye et al. "
            "Def. 3.1), not for this target; (~): smoothed, not calibrated. Green: the "
            "achieved FPR is within sampling error of alpha."
        )
    for line in notes:
        console.print(line)
    if out_dir is not None:
        console.print(
            f"Report written to [bold]{out_dir}[/bold] (report.html, results.json, scores.npz)"
        )


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


def fail_exit(exc: PrivauditError) -> typer.Exit:
    """Print an error to stderr and return the exit (code 2: usage or input error)."""
    print(f"error: {exc}", file=sys.stderr)
    return typer.Exit(2)


@app.command("demo")
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
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show progress bars."),
    cache_dir: Path | None = typer.Option(
        Path(".privaudit-cache"),
        "--cache-dir",
        help="Artifact store for trained models and signals: a killed or repeated run "
        "resumes from it without retraining.",
    ),
    no_cache: bool = typer.Option(False, "--no-cache", help="Train everything afresh."),
) -> None:
    """Audit an overfit MLP trained on UCI Adult with every attack, and write a report."""
    from privaudit.pipeline import demo_config, run_audit

    if out is None:
        out = new_results_dir(Path("privaudit-results"), "demo")
    try:
        cfg = demo_config(
            seed=seed,
            n_jobs=n_jobs,
            quick=quick,
            output_dir=out,
            cache_dir=None if no_cache else cache_dir,
        )
        report = run_audit(cfg, overwrite=overwrite, progress=progress)
    except PrivauditError as exc:
        raise fail_exit(exc) from None
    render_summary(report.results, report.out_dir)
