"""``privaudit zero-run``: a Zero-Run audit of known members vs (shifted) known non-members.

Input: one CSV/Parquet table with feature columns, an attack-score column (higher = more
likely member) and a membership column (1/0, true/false); or two tables with the same
feature and score columns, ``--members`` and ``--non-members`` (membership implied).
The propensity models P(member | x) see the feature columns only (Zero-Run paper, App.
F.2): by default every column except the score and membership columns and those given to
``--exclude``. The features must describe the record x alone -- never the audited
model's score, loss, logits or prediction, nor the task label -- or the correction would
explain away real leakage. That cannot be detected from the table, so the columns used
are always printed (and recorded in ``settings.features`` of the JSON).

Output: a readable summary (headline, uncorrected vs global vs pointwise bounds per
propensity estimator, diagnostics, falsification tests, warnings), or the JSON with
``--json``; ``--out DIR`` also writes ``results.json`` and ``report.html``
(:func:`privaudit.report.zero_run.write_zero_run_report`).

Exit codes: 0 done, 2 bad input (message ``error: ...`` on stderr; nothing written).
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from privaudit._validation import fail
from privaudit.cli import app
from privaudit.cli.audit_cmd import membership_values, read_table, score_values, table_column
from privaudit.errors import PrivauditError
from privaudit.records import json_number

__all__ = ["load_zero_run_table", "render_zero_run_summary", "zero_run_command"]


def _split_list(text: str | None, option: str) -> list[str]:
    if text is None:
        return []
    items = [t.strip() for t in text.split(",")]
    if not items or any(not t for t in items):
        raise fail(option, "a comma-separated list of non-empty names", repr(text))
    if len(set(items)) != len(items):
        raise fail(option, "names without repeats", repr(text))
    return items


def _feature_columns(
    columns: Sequence[str],
    *,
    reserved: Sequence[str],
    features: list[str],
    exclude: list[str],
) -> list[str]:
    for name in exclude:
        if name not in columns:
            raise fail(
                "--exclude", f"columns of the file (one of: {', '.join(columns)})", repr(name)
            )
    if features:
        for name in features:
            if name not in columns:
                raise fail(
                    "--features", f"columns of the file (one of: {', '.join(columns)})", repr(name)
                )
            if name in reserved:
                raise fail(
                    "--features",
                    "feature columns only (not the score or membership column)",
                    repr(name),
                )
            if name in exclude:
                raise fail("--features", "columns not also given to --exclude", repr(name))
        return features
    chosen = [c for c in columns if c not in reserved and c not in exclude]
    if not chosen:
        raise fail(
            "FILE",
            "at least one feature column besides the score and membership columns",
            f"columns {list(columns)}",
        )
    return chosen


def load_zero_run_table(
    file: Path | None,
    *,
    members_file: Path | None = None,
    non_members_file: Path | None = None,
    score_col: str = "score",
    member_col: str = "member",
    features: str | None = None,
    exclude: str | None = None,
) -> tuple[np.ndarray, np.ndarray, Any, list[str]]:
    """Read the audit table(s) of ``privaudit zero-run``.

    Parameters
    ----------
    file : path, optional
        One table with feature, score and membership columns.
    members_file, non_members_file : path, optional
        Instead of ``file``: two tables with the same feature and score columns. A
        membership column, if present, is not a feature and must agree with the file
        (all members / all non-members).
    score_col, member_col : str
        Column names of the attack score and of the membership.
    features, exclude : str, optional
        Comma-separated feature columns (default: every other column) and columns to
        leave out of the default.

    Returns
    -------
    scores : float64 array
    member : bool array
    frame : pandas.DataFrame
        The feature columns, in order, rows aligned with ``scores``.
    columns : list of str
        The feature column names.

    Raises
    ------
    InvalidInputError
        Missing or unreadable files, an unknown column, non-numeric or missing scores,
        unreadable membership values, or both/neither of ``file`` and the two-file mode.
    """
    import pandas as pd

    feats = _split_list(features, "--features")
    excl = _split_list(exclude, "--exclude")
    two_files = members_file is not None or non_members_file is not None
    if file is not None and two_files:
        raise fail("FILE", "either FILE or --members/--non-members, not both", "both")
    if file is None and not two_files:
        raise fail("FILE", "a table, or --members FILE --non-members FILE", "neither")
    if two_files and (members_file is None or non_members_file is None):
        raise fail("--members/--non-members", "both files", "only one")

    if file is not None:
        df = read_table(file)
        if len(df) == 0:
            raise fail("FILE", "at least one row", "an empty table")
        columns = [str(c) for c in df.columns]
        df.columns = pd.Index(columns, dtype=object)
        scores = score_values(table_column(df, score_col, "--score-col"), score_col)
        member = membership_values(table_column(df, member_col, "--member-col"), member_col)
        names = _feature_columns(
            columns, reserved=(score_col, member_col), features=feats, exclude=excl
        )
        return scores, member, df[names].reset_index(drop=True), names

    if members_file is None or non_members_file is None:  # pragma: no cover - checked above
        raise fail("--members/--non-members", "both files", "only one")
    parts: list[Any] = []
    for path, option, is_member in (
        (members_file, "--members", True),
        (non_members_file, "--non-members", False),
    ):
        df = read_table(path)
        if len(df) == 0:
            raise fail(option, "at least one row", f"an empty table {path}")
        df.columns = pd.Index([str(c) for c in df.columns], dtype=object)
        table_column(df, score_col, "--score-col")
        if member_col in df.columns:
            given = membership_values(df[member_col], member_col)
            if not (given == is_member).all():
                raise fail(
                    f"{option} column {member_col!r}",
                    f"{'all members' if is_member else 'no members'} (membership is implied "
                    "by the file)",
                    f"{int((given != is_member).sum())} row(s) saying otherwise",
                )
        parts.append(df)
    cols_m = [c for c in parts[0].columns if c != member_col]
    cols_n = [c for c in parts[1].columns if c != member_col]
    if set(cols_m) != set(cols_n):
        raise fail(
            "--non-members",
            f"the same columns as --members ({', '.join(cols_m)})",
            ", ".join(cols_n),
        )
    names = _feature_columns(cols_m, reserved=(score_col, member_col), features=feats, exclude=excl)
    score_parts = [score_values(p[score_col], score_col) for p in parts]
    scores = np.concatenate(score_parts)
    member = np.concatenate(
        [np.ones(score_parts[0].size, bool), np.zeros(score_parts[1].size, bool)]
    )
    frame = pd.concat([p[names] for p in parts], ignore_index=True)
    return scores, member, frame, names


def _rule_text(h: dict[str, Any]) -> str:
    if h.get("rule") == "max":
        return (
            f"largest over the admitted estimators, each at beta = "
            f"{float(h.get('beta_per_estimator', 0.0)):.3g}"
        )
    return "smallest over the estimators"


def _fmt(v: Any, digits: int = 3) -> str:
    if isinstance(v, str):
        return v
    x = json_number(v)
    if x is None:
        return "n/a"
    if not math.isfinite(x):
        return str(x)
    return f"{x:.{digits}f}"


def _pct(v: Any) -> str:
    x = json_number(v)
    return "n/a" if x is None else f"{100.0 * x:.1f}%"


def render_zero_run_summary(
    result: Any, console: Console, *, features: Sequence[str] | None = None
) -> None:
    """Print a readable summary of a :class:`~privaudit.audit.zero_run.ZeroRunResult`.

    The headline bound, one row per propensity estimator with the uncorrected, global and
    pointwise mu and eps bounds side by side (plus the bootstrap lower quantile when
    present), the diagnostics, the falsification tests, then warnings (bold) and notes.
    """
    settings = result.settings
    used = list(features) if features is not None else settings.get("features")
    console.print(
        f"[bold]privaudit zero-run[/bold]: {result.n_members} known members, "
        f"{result.n_non_members} known non-members, confidence {result.confidence:g}",
        highlight=False,
    )
    if used:
        console.print(
            escape(f"propensity features ({len(used)}): {', '.join(map(str, used))}"),
            highlight=False,
        )
    console.print(
        "(propensity features must describe the record x only: never the model's score, "
        "loss, prediction or the task label)",
        style="dim",
        highlight=False,
    )
    h = result.headline
    console.print(
        f"[bold]headline[/bold]: mu >= [bold]{_fmt(h.get('mu_lower_bound'))}[/bold] (mu-GDP), "
        f"eps >= [bold]{_fmt(h.get('epsilon_lower_bound'))}[/bold] (pure eps-DP); "
        + escape(
            f"{h.get('correction')} correction, estimator {h.get('estimator')} "
            f"({_rule_text(h)}), {h.get('basis')}"
        ),
        highlight=False,
    )

    unc = result.uncorrected
    has_boot = any(e.get("bootstrap") for e in result.estimators)
    bounds = Table(title="Bounds: uncorrected (not valid under shift) vs corrected")
    bounds.add_column("estimator")
    for col in ("mu uncorr.", "mu global", "mu pointwise"):
        bounds.add_column(col, justify="right")
    if has_boot:
        bounds.add_column("mu pw. boot. q", justify="right")
    for col in ("eps uncorr.", "eps global", "eps pointwise", "r/v uncorr.", "r/v pw."):
        bounds.add_column(col, justify="right")
    for e in result.estimators:
        g, p = e["global"], e["pointwise"]
        row = [
            escape(str(e["name"])),
            _fmt(unc.get("mu_lower_bound")),
            _fmt(g.get("mu_lower_bound")),
            _fmt(p.get("mu_lower_bound")),
        ]
        if has_boot:
            b = e.get("bootstrap")
            row.append(
                f"{_fmt(b['mu_lower_quantile'])} (q={b['quantile']:g}, n={b['n']})" if b else "n/a"
            )
        uc, pc = unc.get("counts", {}), p.get("counts", {})
        row += [
            _fmt(unc.get("epsilon_lower_bound")),
            _fmt(g.get("epsilon_lower_bound")),
            _fmt(p.get("epsilon_lower_bound")),
            f"{uc.get('r', '?')}/{uc.get('v', '?')}",
            f"{pc.get('r', '?')}/{pc.get('v', '?')}",
        ]
        bounds.add_row(*row)
    console.print(bounds)

    diag = Table(title="Propensity diagnostics (held-out, cross-fitted)")
    diag.add_column("estimator")
    for col in (
        "AUC",
        "ECE",
        "cal. slope",
        "cal. intercept",
        "extreme",
        "common support",
        "retention mean",
        "ESS members",
        "ESS non-members",
        "overlap",
    ):
        diag.add_column(col, justify="right")
    for e in result.estimators:
        d = e.get("diagnostics") or {}
        cs = d.get("common_support") or {}
        ess = d.get("ess") or {}
        em, en = ess.get("member") or {}, ess.get("non_member") or {}
        poor = d.get("overlap_poor")
        diag.add_row(
            escape(str(e["name"])),
            _fmt(d.get("auc")),
            _fmt(d.get("ece")),
            _fmt(d.get("calibration_slope")),
            _fmt(d.get("calibration_intercept")),
            _pct(d.get("fraction_extreme")),
            f"[{_fmt(cs.get('low'))}, {_fmt(cs.get('high'))}] {_pct(cs.get('fraction_inside'))}",
            _fmt(d.get("retention_mean")),
            f"{_fmt(em.get('ess'), 1)} ({_pct(em.get('fraction'))})",
            f"{_fmt(en.get('ess'), 1)} ({_pct(en.get('fraction'))})",
            "n/a" if poor is None else ("[red]poor[/red]" if poor else "[green]ok[/green]"),
        )
    console.print(diag)

    fals = Table(title="Falsification tests (features-only challengers)")
    for col in ("propensity model", "challenger", "p-value", "verdict"):
        fals.add_column(col, justify="left" if col != "p-value" else "right")
    for e in result.estimators:
        for f in e.get("falsification") or []:
            fals.add_row(
                escape(str(e["name"])),
                escape(str(f.get("challenger"))),
                _fmt(f.get("p_value"), 4),
                "[red]rejected[/red]" if f.get("rejected") else "not rejected",
            )
    console.print(fals)
    for w in result.warnings:
        console.print(f"[bold]warning: {escape(w)}[/bold]", highlight=False)
    for n in result.notes:
        console.print(f"note: {escape(n)}", highlight=False)


def _payload(result: Any) -> str:
    from privaudit.report.zero_run import zero_run_payload

    return json.dumps(zero_run_payload(result), indent=2, allow_nan=False)


def _propensity_values(col: Any, name: str) -> np.ndarray:
    """The given propensities: numeric, finite and strictly inside (0, 1)."""
    import pandas as pd

    values = pd.to_numeric(col, errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(values) | (values <= 0.0) | (values >= 1.0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise fail(
            f"--propensity-col {name!r}",
            "probabilities strictly between 0 and 1",
            f"{int(bad.sum())} bad value(s), e.g. {col.iloc[i]!r} in row {i + 1}",
        )
    return values


@app.command("zero-run")
def zero_run_command(
    file: Path | None = typer.Argument(
        None,
        help="CSV or Parquet table: feature columns, an attack-score column and a "
        "membership column. Omit it when using --members and --non-members.",
    ),
    members: Path | None = typer.Option(
        None, "--members", help="Table of the known members (features + score)."
    ),
    non_members: Path | None = typer.Option(
        None, "--non-members", help="Table of the known non-members (features + score)."
    ),
    score_col: str = typer.Option(
        "score", "--score-col", help="Attack score column (higher = more likely member)."
    ),
    member_col: str = typer.Option(
        "member", "--member-col", help="Membership column (1/0, true/false)."
    ),
    features: str | None = typer.Option(
        None,
        "--features",
        help="Comma-separated propensity feature columns (default: every column except the "
        "score, membership and --exclude columns). Features must describe the record x only: "
        "never the model's score, loss, prediction or the task label.",
    ),
    exclude: str | None = typer.Option(
        None, "--exclude", help="Comma-separated columns to leave out of the default features."
    ),
    estimators: str | None = typer.Option(
        None,
        "--estimators",
        help="Comma-separated propensity estimators (default: logistic,hist-gb). "
        "Choices: logistic-sigmoid, logistic-isotonic, linear-svm, random-forest, "
        "extra-trees, hist-gb (the paper's six), logistic (uncalibrated MLE, split "
        "correction); or all.",
    ),
    bootstrap: int = typer.Option(
        0, "--bootstrap", help="Bootstrap refits of the propensity models (paper: 600)."
    ),
    beta: float | None = typer.Option(
        None, "--beta", help="Failure probability of every bound (default 0.05), used exactly."
    ),
    confidence: float | None = typer.Option(
        None, "--confidence", help="1 - beta (convenience; --beta wins)."
    ),
    propensity_col: str | None = typer.Option(
        None,
        "--propensity-col",
        help="Column of given propensities P(member | x) in (0, 1) (oracle or externally "
        "estimated): no propensity model is fitted and no margin is added.",
    ),
    margin_z: float = typer.Option(
        2.0,
        "--margin-z",
        help="Estimated propensities: standard errors added to |logit| before the pointwise "
        "correction (0 = the paper's plug-in, not valid under estimation error).",
    ),
    headline: str = typer.Option(
        "max",
        "--headline",
        help="How estimators combine: 'max' (each at beta/J, the largest; valid by the union "
        "bound) or 'min' (each at beta, the most conservative).",
    ),
    delta: float = typer.Option(
        0.0, "--delta", help="delta of the uncorrected and global (eps, delta) bounds."
    ),
    delta_ds: float = typer.Option(
        0.0, "--delta-ds", help="delta_DS of the overlap assumption (global correction)."
    ),
    pca: int | None = typer.Option(
        None, "--pca", help="Principal components of the features (fitted inside the folds)."
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of folds, models, bootstrap and coins."),
    jobs: int = typer.Option(1, "--jobs", help="Processes for the bootstrap (-1: all cores)."),
    ray_address: str | None = typer.Option(
        None,
        "--ray",
        help="Run the bootstrap replicates as Ray tasks on the cluster at this address "
        "('auto' for a running one, 'local' to start one here; needs `pip install ray`).",
    ),
    cache_dir: Path | None = typer.Option(
        None,
        "--cache-dir",
        help="Keep every finished bootstrap replicate here, so that an interrupted run resumes.",
    ),
    out: Path | None = typer.Option(
        None, "--out", help="Write results.json and report.html into this directory."
    ),
    as_json: bool = typer.Option(
        False, "--json", help="Print the result as JSON to stdout instead of the summary."
    ),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing --out."),
) -> None:
    """Zero-Run audit: DP lower bounds from known members vs shifted known non-members."""
    from privaudit.audit.zero_run import DEFAULT_ESTIMATORS, ESTIMATORS, zero_run_audit
    from privaudit.report.writer import check_output_dir
    from privaudit.report.zero_run import write_zero_run_report
    from privaudit.runtime.executor import Executor, LocalExecutor, RayExecutor
    from privaudit.runtime.store import ArtifactStore

    try:
        if out is not None:
            check_output_dir(out, overwrite=overwrite)  # fail before any work
        if propensity_col is not None and (features is not None or estimators is not None):
            raise fail(
                "--propensity-col",
                "no --features or --estimators with given propensities",
                "--features" if features is not None else "--estimators",
            )
        names = _split_list(estimators, "--estimators") or list(DEFAULT_ESTIMATORS)
        if names == ["all"]:
            names = list(ESTIMATORS)
        unknown = [n for n in names if n not in ESTIMATORS]
        if unknown:
            raise fail("--estimators", "names from " + ", ".join(ESTIMATORS), ", ".join(unknown))
        scores, member, frame, columns = load_zero_run_table(
            file,
            members_file=members,
            non_members_file=non_members,
            score_col=score_col,
            member_col=member_col,
            features=propensity_col if propensity_col is not None else features,
            exclude=exclude,
        )
        given = None
        saved_frame = frame  # what a bundle keeps (the propensity column when given)
        if propensity_col is not None:
            given = {propensity_col: _propensity_values(frame[propensity_col], propensity_col)}
            frame, columns = None, []
        progress = False if as_json else None
        executor: Executor | None = None
        if bootstrap and ray_address is not None:
            address = None if ray_address == "local" else ray_address
            executor = RayExecutor(address=address, progress=progress)
        elif bootstrap:
            executor = LocalExecutor(jobs, progress=progress)
        store = ArtifactStore(cache_dir) if cache_dir is not None else None
        result = zero_run_audit(
            scores,
            member,
            features=frame,
            propensity=given,
            estimators=tuple(names),
            beta=beta,
            confidence=confidence,
            margin_z=margin_z,
            headline_rule=headline,
            delta=delta,
            delta_ds=delta_ds,
            n_bootstrap=bootstrap,
            pca_components=pca,
            seed=seed,
            executor=executor,
            store=store,
            progress=progress,
        )
        payload = _payload(result) if as_json else None
        if out is not None:
            from privaudit.report.bundle import make_manifest, sources_fingerprint

            manifest = make_manifest(
                kind="zero-run",
                command="zero-run",
                config={
                    "estimators": list(names),
                    "confidence": confidence,
                    "beta": beta,
                    "margin_z": margin_z,
                    "headline_rule": headline,
                    "propensity_col": propensity_col,
                    "delta": delta,
                    "delta_ds": delta_ds,
                    "n_bootstrap": bootstrap,
                    "pca_components": pca,
                    "seed": seed,
                    "features": list(columns),
                },
                seeds={"root": seed},
                dataset_fingerprint=sources_fingerprint([file, members, non_members]),
            )
            inputs = {"scores": scores, "member": member, "features": saved_frame}
            write_zero_run_report(result, out, overwrite=overwrite, bundle=manifest, inputs=inputs)
    except PrivauditError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    except OSError as exc:
        typer.echo(f"error: cannot write the report to {out} ({exc})", err=True)
        raise typer.Exit(2) from None
    if payload is not None:
        typer.echo(payload)
    else:
        console = Console(file=sys.stdout, soft_wrap=True) if sys.stdout.isatty() else None
        render_zero_run_summary(
            result, console or Console(file=sys.stdout, width=180), features=columns
        )
        if out is not None:
            typer.echo(
                f"report written to {out} (results.json, report.html; bundle.json with "
                "inputs.npz and features.parquet: re-check it with `privaudit verify`)"
            )
