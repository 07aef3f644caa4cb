"""``privaudit audit FILE``: DP lower bounds from a table of scores a user brings.

The file (CSV or Parquet) has a score column (higher = more likely member), a
membership column (1/0 or true/false) and, for PANORAMIA, a baseline score column.
For the one-run procedures each row is one audit example; for multi-run each row is one
trial (the score of the challenge record and whether it was included).

Exit codes: 0 done, 1 the bound exceeds ``--claimed-epsilon``, 2 bad input (nothing
written).

PANORAMIA (``--procedure panoramia``) prints ``c_lb``, ``{c+eps}_lb`` and ``eps_tilde``
with its caveat: eps_tilde is a lower bound on eps only if c_lb is tight (Kazmi et al.
2024, Sec. 4.2). The audit certifies no lower bound on eps alone, so its
``epsilon_lower_bound`` is 0 and ``--claimed-epsilon`` gates nothing (exit 0, the claim is
named as not checked); see :func:`privaudit.stats.panoramia.panoramia_audit`.
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from privaudit.cli_common import ci_output, mlflow_cli
from privaudit.cli_common.errors import cli_text, error_line
from privaudit.cli_common.tables import membership_values, read_table, score_values, table_column
from privaudit.errors import PrivauditError

if TYPE_CHECKING:
    from rich.console import Console

    from privaudit.records import AuditResult

# NumPy, pandas, rich and the audit and report layers are imported inside the functions:
# `privaudit --help` imports this module (start-up time, tests/cli/test_startup.py).


def _fmt(x: Any) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return "inf" if math.isinf(x) else f"{x:.6g}"
    return str(x)


def _render(result: AuditResult, claimed: float | None, console: Console) -> None:
    from rich.table import Table

    table = Table(title=f"privaudit audit: {result.procedure}", show_header=True)
    table.add_column("quantity")
    table.add_column("value", justify="right")
    gated = result.extra.get("gated", True) is not False
    rows: list[tuple[str, Any]] = [
        ("confidence", result.confidence),
        ("delta", result.delta),
        (
            "epsilon lower bound",
            result.epsilon_lower_bound if gated else "none certified (0; see the notes)",
        ),
    ]
    if result.mu_lower_bound is not None:
        rows.append(("mu lower bound (GDP)", result.mu_lower_bound))
    for key in (
        "c_lower_bound",
        "c_plus_epsilon_lower_bound",
        "epsilon_tilde",
        "epsilon_fdp",
        "epsilon_if_gaussian",
    ):
        if key in result.extra:
            label = key.replace("_", " ")
            if key == "epsilon_tilde":
                label = "epsilon tilde (see the caveat)"
            rows.append((label, result.extra[key]))
    if claimed is not None:
        rows.append(("claimed epsilon", claimed if gated else f"{_fmt(claimed)} (not checked)"))
    rows.append(("threshold selection", result.threshold_selection))
    for k, v in result.counts.items():
        rows.append((f"count {k}", v))
    for name, value in rows:
        table.add_row(name, _fmt(value))
    console.print(table)
    for note in result.notes:
        console.print(f"note: {note}", highlight=False)


def _compute(
    file: Path,
    procedure: str,
    confidence: float | None,
    delta: float,
    k_pos: int | None,
    k_neg: int | None,
    score_col: str,
    member_col: str,
    baseline_col: str,
    selection: str,
    thresholds: str,
    gaussian_epsilon: bool,
    seed: int,
    beta: float | None = None,
    parametric: str | None = None,
) -> tuple[AuditResult, dict[str, Any]]:
    """The audit of FILE and what a bundle needs to recompute it (arrays and parameters)."""
    from privaudit._validation import fail
    from privaudit.stats.procedures import PROCEDURES, ProcedureParams, run_procedure

    if procedure not in PROCEDURES:
        raise fail("--procedure", "one of " + ", ".join(PROCEDURES), repr(procedure))
    df = read_table(file)
    if len(df) == 0:
        raise fail("FILE", "at least one row", "an empty table")
    scores = score_values(table_column(df, score_col, "--score-col"), score_col)
    member = membership_values(table_column(df, member_col, "--member-col"), member_col)
    baseline = None
    if procedure == "panoramia" and delta == 0.0 and k_pos is None and k_neg is None:
        baseline = score_values(table_column(df, baseline_col, "--baseline-col"), baseline_col)
    params = ProcedureParams(
        beta=beta,
        parametric=parametric,
        confidence=confidence,
        delta=delta,
        k_pos=k_pos,
        k_neg=k_neg,
        selection=selection,
        thresholds=thresholds,
        gaussian_epsilon=gaussian_epsilon,
        seed=seed,
    )
    result = run_procedure(procedure, scores, member, baseline=baseline, params=params)
    inputs = {
        "procedure": procedure,
        "params": dataclasses.asdict(params),
        "scores": scores,
        "member": member,
        "source": file,
    }
    if baseline is not None:
        inputs["baseline"] = baseline
    return result, inputs


def audit_command(
    file: Path = typer.Argument(..., help="CSV or Parquet table of scores and membership."),
    procedure: str = typer.Option(
        "one-run", "--procedure", help="multi-run | one-run | fdp-one-run | panoramia"
    ),
    confidence: float | None = typer.Option(
        None, "--confidence", help="1 - beta (convenience; --beta wins)."
    ),
    beta: float | None = typer.Option(
        None, "--beta", help="Failure probability of the bound (default 0.05), used exactly."
    ),
    parametric: str | None = typer.Option(
        None,
        "--parametric",
        help="one-run / fdp-one-run: add an ASSUMPTION-BASED estimate for a mechanism family "
        "(gaussian | laplace | randomized-response) beside the assumption-free bound.",
    ),
    delta: float = typer.Option(0.0, "--delta", help="delta of the audited (eps, delta)-DP."),
    k_pos: int | None = typer.Option(
        None, "--k-pos", help="One-run: number of 'member' guesses (top scores)."
    ),
    k_neg: int | None = typer.Option(
        None, "--k-neg", help="One-run: number of 'non-member' guesses (bottom scores)."
    ),
    claimed_epsilon: float | None = typer.Option(
        None,
        "--claimed-epsilon",
        help="Exit 1 when the epsilon lower bound exceeds it. panoramia: not checked (exit 0): "
        "eps_tilde is a lower bound only if c_lb is tight, and no figure of PANORAMIA bounds "
        "eps alone.",
    ),
    json_path: Path | None = typer.Option(None, "--json", help="Write the result as JSON."),
    score_col: str = typer.Option("score", "--score-col"),
    member_col: str = typer.Option("member", "--member-col"),
    baseline_col: str = typer.Option("baseline_score", "--baseline-col"),
    selection: str = typer.Option(
        "union-bound",
        "--selection",
        help="How k (one-run) or the threshold (multi-run) is chosen without --k-pos/--k-neg: "
        "union-bound | held-out.",
    ),
    thresholds: str = typer.Option(
        "quantiles",
        "--thresholds",
        help="PANORAMIA thresholds: quantiles (100 score quantiles, any real scores) | code "
        "(the authors' 100-point grid of [0, 1]) | all (every distinct score).",
    ),
    gaussian_epsilon: bool = typer.Option(
        False,
        "--gaussian-epsilon",
        help="fdp-one-run: report eps(mu_lb, delta), valid only for Gaussian trade-off curves.",
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of the held-out split."),
    bundle_dir: Path | None = typer.Option(
        None,
        "--out",
        help="Write a re-verifiable bundle (result.json, inputs.npz, bundle.json) to this new "
        "folder; check it later with `privaudit verify`.",
    ),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing --out folder."),
    fmt: str = typer.Option("text", "--format", help=ci_output.FORMAT_HELP),
    format_file: Path | None = typer.Option(None, "--format-file", help=ci_output.FORMAT_FILE_HELP),
    mlflow: str | None = mlflow_cli.option(),
) -> None:
    """Compute a DP lower bound from scores and membership in FILE."""
    from rich.console import Console

    from privaudit.report.bundle import audit_payload
    from privaudit.report.ci_formats import gates_from_audit

    try:
        fmt = _check_output_options(
            fmt, claimed_epsilon, format_file, mlflow, bundle_dir, overwrite
        )
        result, inputs = _compute(
            file,
            procedure,
            confidence,
            delta,
            k_pos,
            k_neg,
            score_col,
            member_col,
            baseline_col,
            selection,
            thresholds,
            gaussian_epsilon,
            seed,
            beta,
            parametric,
        )
        doc = audit_payload(result)
        payload = json.dumps(doc, indent=2)
    except PrivauditError as exc:
        typer.echo(error_line(exc), err=True)
        raise typer.Exit(2) from None
    if json_path is not None:
        _write_json(json_path, payload)
    if bundle_dir is not None:
        _write_bundle(bundle_dir, doc, inputs, overwrite)
    if ci_output.human_output_wanted(fmt, format_file):
        _render(result, claimed_epsilon, Console(file=sys.stdout, soft_wrap=True))
    mlflow_cli.log(mlflow, doc, command="audit", artifact_dir=bundle_dir)
    code = ci_output.emit(
        fmt,
        "audit",
        gates_from_audit(doc),
        claimed_epsilon,
        doc,
        artifact=file,
        format_file=format_file,
    )
    if code:
        raise typer.Exit(code)


def _check_output_options(
    fmt: str,
    claimed_epsilon: float | None,
    format_file: Path | None,
    mlflow: str | None,
    bundle_dir: Path | None,
    overwrite: bool,
) -> str:
    """Refuse bad output options (``--format``, its file, ``--mlflow``, ``--out``); the format."""
    from privaudit.report.writer import check_output_dir

    fmt = ci_output.check_options(fmt, claimed_epsilon, format_file)
    mlflow_cli.check(mlflow)
    if bundle_dir is not None:
        check_output_dir(bundle_dir, overwrite=overwrite)
    return fmt


def _write_json(json_path: Path, payload: str) -> None:
    """Write ``payload`` to ``--json`` atomically; exit 2 if it cannot be written."""
    tmp = json_path.with_name(json_path.name + ".tmp")
    try:
        tmp.write_text(payload)
        tmp.replace(json_path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        typer.echo(f"error: --json: cannot write {json_path} ({exc})", err=True)
        raise typer.Exit(2) from None


def _write_bundle(
    bundle_dir: Path, doc: dict[str, Any], inputs: dict[str, Any], overwrite: bool
) -> None:
    """Write the re-verifiable bundle to ``--out``; exit 2 if it cannot be written."""
    from privaudit.report.writer import write_audit_bundle

    try:
        write_audit_bundle(bundle_dir, doc, inputs, overwrite=overwrite)
    except (OSError, PrivauditError) as exc:
        typer.echo(
            f"error: --out: cannot write the bundle to {bundle_dir} ({cli_text(exc)})", err=True
        )
        raise typer.Exit(2) from None
