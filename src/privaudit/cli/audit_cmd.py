"""``privaudit audit FILE``: DP lower bounds from a table of scores a user brings.

The file (CSV or Parquet) has a score column (higher = more likely member), a
membership column (1/0 or true/false) and, for PANORAMIA, a baseline score column.
For the one-run procedures each row is one audit example; for multi-run each row is one
trial (the score of the challenge record and whether it was included).

Exit codes: 0 done, 1 the bound exceeds ``--claimed-epsilon``, 2 bad input (nothing
written).
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
import typer
from rich.console import Console
from rich.table import Table

from privaudit._validation import fail
from privaudit.cli import app
from privaudit.errors import PrivauditError
from privaudit.records import AuditResult

_TRUE = {"1", "true", "t", "yes", "y", "1.0"}
_FALSE = {"0", "false", "f", "no", "n", "0.0"}


def read_table(path: Path) -> Any:
    """Read a CSV (``.csv``/``.txt``, ``.tsv``) or Parquet (``.parquet``/``.pq``) table.

    Raises :class:`~privaudit.errors.InvalidInputError` (named ``FILE``) when the file is
    missing, unreadable or of another type.
    """
    import pandas as pd

    if not path.is_file():
        raise fail("FILE", "an existing CSV or Parquet file", str(path))
    suffix = path.suffix.lower()
    try:
        if suffix in (".parquet", ".pq"):
            return pd.read_parquet(path)
        if suffix in (".csv", ".txt", ".tsv"):
            return pd.read_csv(path, sep="\t" if suffix == ".tsv" else ",")
    except Exception as exc:
        raise fail("FILE", "a readable CSV or Parquet file", f"{path} ({exc})") from None
    raise fail("FILE", "a .csv or .parquet file", path.name)


def table_column(df: Any, name: str, option: str) -> Any:
    """Column ``name`` of ``df``; an unknown name is an error naming ``option`` and the columns."""
    if name not in df.columns:
        cols = ", ".join(map(str, df.columns))
        raise fail(option, f"a column of the file (one of: {cols})", repr(name))
    return df[name]


def score_values(col: Any, name: str) -> np.ndarray:
    """A column as float64 scores: every value numeric, none missing or NaN."""
    import pandas as pd

    values = pd.to_numeric(col, errors="coerce")
    bad = values.isna() & col.notna()
    if bad.any():
        first = col[bad].iloc[0]
        raise fail(
            f"column {name!r}", "numeric scores", f"{int(bad.sum())} non-numeric, e.g. {first!r}"
        )
    arr = values.to_numpy(dtype=np.float64)
    n_nan = int(np.isnan(arr).sum())
    if n_nan:
        raise fail(f"column {name!r}", "no missing or NaN scores", f"{n_nan} missing/NaN value(s)")
    return arr


def membership_values(col: Any, name: str) -> np.ndarray:
    """A column of 1/0, true/false, yes/no (any case) or booleans as a bool array."""
    out = np.empty(len(col), dtype=bool)
    for i, x in enumerate(col.tolist()):
        key = str(x).strip().lower()
        if isinstance(x, bool | np.bool_):
            out[i] = bool(x)
        elif key in _TRUE:
            out[i] = True
        elif key in _FALSE:
            out[i] = False
        else:
            raise fail(f"column {name!r}", "1/0 or true/false membership", f"{x!r} in row {i + 1}")
    return out


def _json_payload(result: AuditResult) -> dict[str, Any]:
    d = result.to_dict()
    for key in ("c_lower_bound", "c_plus_epsilon_lower_bound", "epsilon_tilde"):
        if key in result.extra:
            d[key] = result.extra[key]
    return d


def _fmt(x: Any) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return "inf" if math.isinf(x) else f"{x:.6g}"
    return str(x)


def _render(result: AuditResult, claimed: float | None, console: Console) -> None:
    table = Table(title=f"privaudit audit: {result.procedure}", show_header=True)
    table.add_column("quantity")
    table.add_column("value", justify="right")
    rows: list[tuple[str, Any]] = [
        ("confidence", result.confidence),
        ("delta", result.delta),
        ("epsilon lower bound", result.epsilon_lower_bound),
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
            rows.append((key.replace("_", " "), result.extra[key]))
    if claimed is not None:
        rows.append(("claimed epsilon", claimed))
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
    parametric: str | None = None,
    beta: float | None = None,
) -> AuditResult:
    from privaudit import audit

    if procedure not in audit.PROCEDURES:
        raise fail("--procedure", "one of " + ", ".join(audit.PROCEDURES), repr(procedure))
    df = read_table(file)
    if len(df) == 0:
        raise fail("FILE", "at least one row", "an empty table")
    scores = score_values(table_column(df, score_col, "--score-col"), score_col)
    member = membership_values(table_column(df, member_col, "--member-col"), member_col)
    if parametric is not None and procedure not in ("one-run", "fdp-one-run"):
        raise fail("--parametric", "one-run or fdp-one-run procedures only", procedure)
    if procedure == "multi-run":
        if k_pos is not None or k_neg is not None:
            raise fail("--k-pos/--k-neg", "no guess counts for multi-run", "given")
        return audit.multi_run_audit(
            scores,
            member,
            beta=beta,
            confidence=confidence,
            delta=delta,
            selection=selection,
            rng=seed,
        )
    if procedure == "one-run":
        return audit.one_run_audit(
            scores,
            member,
            k_pos=k_pos,
            k_neg=k_neg,
            beta=beta,
            confidence=confidence,
            delta=delta,
            parametric=parametric,
            selection=selection,
            rng=seed,
        )
    if procedure == "fdp-one-run":
        return audit.fdp_one_run_audit(
            scores,
            member,
            k_pos=k_pos,
            k_neg=k_neg,
            beta=beta,
            confidence=confidence,
            delta=delta,
            parametric=parametric,
            epsilon="gaussian" if gaussian_epsilon else "fdp",
            selection=selection,
            rng=seed,
        )
    if delta != 0.0:
        raise fail("--delta", "0 for panoramia (pure-DP tests only)", delta)
    if k_pos is not None or k_neg is not None:
        raise fail("--k-pos/--k-neg", "no guess counts for panoramia", "given")
    baseline = score_values(table_column(df, baseline_col, "--baseline-col"), baseline_col)
    if thresholds == "code":
        for name, vals in ((score_col, scores), (baseline_col, baseline)):
            if vals.min() < 0.0 or vals.max() > 1.0:
                raise fail(
                    "--thresholds code",
                    f"scores in [0, 1] in column {name!r} (use --thresholds quantiles "
                    "or --thresholds all for other scores)",
                    f"range [{vals.min():.4g}, {vals.max():.4g}]",
                )
    return audit.panoramia_audit(
        scores, baseline, member, beta=beta, confidence=confidence, thresholds=thresholds
    )


@app.command("audit")
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
        None, "--claimed-epsilon", help="Exit 1 when the epsilon lower bound exceeds it."
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
) -> None:
    """Compute a DP lower bound from scores and membership in FILE."""
    try:
        result = _compute(
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
            parametric,
            beta,
        )
        payload = json.dumps(_json_payload(result), indent=2)
    except PrivauditError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    if json_path is not None:
        tmp = json_path.with_name(json_path.name + ".tmp")
        try:
            tmp.write_text(payload)
            tmp.replace(json_path)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            typer.echo(f"error: --json: cannot write {json_path} ({exc})", err=True)
            raise typer.Exit(2) from None
    _render(result, claimed_epsilon, Console(file=sys.stdout, soft_wrap=True))
    if claimed_epsilon is not None and result.epsilon_lower_bound > claimed_epsilon:
        typer.echo(
            f"violation: epsilon lower bound {result.epsilon_lower_bound:.6g} exceeds the "
            f"claimed epsilon {claimed_epsilon:g}",
            err=True,
        )
        raise typer.Exit(1)
