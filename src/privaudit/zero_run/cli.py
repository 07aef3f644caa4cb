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
(:func:`privaudit.zero_run.report.write_zero_run_report`).

Exit codes: 0 done, 2 bad input (message ``error: ...`` on stderr; nothing written).
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from privaudit.cli_common import mlflow_cli
from privaudit.cli_common.errors import error_line
from privaudit.cli_common.progress_option import no_progress_option, progress_mode, progress_option
from privaudit.cli_common.tables import membership_values, read_table, score_values, table_column
from privaudit.errors import PrivauditError

if TYPE_CHECKING:
    import numpy as np

    from privaudit.zero_run.summary import render_zero_run_summary

# NumPy, pandas, rich and the audit layer are imported inside the functions: `privaudit
# --help` imports this module (start-up time, tests/cli/test_startup.py).

__all__ = ["load_zero_run_table", "render_zero_run_summary", "zero_run_command"]


def __getattr__(name: str) -> Any:
    # ``render_zero_run_summary`` (re-exported for the examples) imports rich: on demand.
    if name == "render_zero_run_summary":
        from privaudit.zero_run.summary import render_zero_run_summary

        return render_zero_run_summary
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _split_list(text: str | None, option: str) -> list[str]:
    """The names of a comma-separated option (none when not given): non-empty, no repeats."""
    from privaudit._validation import fail

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
    """The propensity feature columns: ``features`` when given (checked), else every column
    except the ``reserved`` (score, membership) and ``exclude`` ones."""
    from privaudit._validation import fail

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
    from privaudit._validation import fail

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
        return _load_one_table(file, score_col, member_col, feats, excl)
    if members_file is None or non_members_file is None:  # pragma: no cover - checked above
        raise fail("--members/--non-members", "both files", "only one")
    return _load_two_tables(members_file, non_members_file, score_col, member_col, feats, excl)


def _load_one_table(
    file: Path, score_col: str, member_col: str, feats: list[str], excl: list[str]
) -> tuple[np.ndarray, np.ndarray, Any, list[str]]:
    """One table with feature, score and membership columns (column names as strings)."""
    import pandas as pd

    from privaudit._validation import fail

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


def _read_part(path: Path, option: str, is_member: bool, score_col: str, member_col: str) -> Any:
    """One of the two tables of the two-file mode, its membership column (if any) checked
    against the membership the file implies."""
    import pandas as pd

    from privaudit._validation import fail

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
    return df


def _load_two_tables(
    members_file: Path,
    non_members_file: Path,
    score_col: str,
    member_col: str,
    feats: list[str],
    excl: list[str],
) -> tuple[np.ndarray, np.ndarray, Any, list[str]]:
    """The two-file mode: members then non-members, with the same columns."""
    import numpy as np
    import pandas as pd

    from privaudit._validation import fail

    parts = [
        _read_part(members_file, "--members", True, score_col, member_col),
        _read_part(non_members_file, "--non-members", False, score_col, member_col),
    ]
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


def _payload(result: Any) -> str:
    """The ``--json`` output: the result as ``results.json`` holds it."""
    from privaudit.zero_run.report import zero_run_payload

    return json.dumps(zero_run_payload(result), indent=2, allow_nan=False)


def _propensity_values(col: Any, name: str) -> np.ndarray:
    """The given propensities: numeric, finite and strictly inside (0, 1)."""
    import numpy as np
    import pandas as pd

    from privaudit._validation import fail

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
        help="Comma-separated propensity estimators whose bounds may make the headline "
        "(default: logistic,logistic-quadratic). Choices: logistic-sigmoid, "
        "logistic-isotonic, linear-svm, random-forest, extra-trees, hist-gb (the paper's "
        "six), logistic, logistic-quadratic (uncalibrated MLEs, linear and quadratic logit, "
        "split correction); or all.",
    ),
    challengers: str | None = typer.Option(
        None,
        "--challengers",
        help="Comma-separated estimators fitted only to challenge the estimators in the "
        "falsification test, never in the headline (default: hist-gb; 'none' for none).",
    ),
    placebo: bool = typer.Option(
        True,
        "--placebo/--no-placebo",
        help="Placebo check: re-run each estimator's pointwise audit on the score projected "
        "on the features (which leaks nothing); an estimator above 0 leaves the headline.",
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
    progress: str = progress_option(" With --json: none unless plain or rich."),
    no_progress: bool = no_progress_option(),
    mlflow: str | None = mlflow_cli.option(),
) -> None:
    """Zero-Run audit: DP lower bounds from known members vs shifted known non-members."""
    try:
        _check_before_work(mlflow, out, overwrite)
        settings = _AuditSettings(
            estimators=_estimator_names(estimators, features, propensity_col),
            challengers=_challenger_names(challengers, propensity_col),
            placebo=placebo and propensity_col is None,
            confidence=confidence,
            beta=beta,
            margin_z=margin_z,
            headline_rule=headline,
            propensity_col=propensity_col,
            delta=delta,
            delta_ds=delta_ds,
            n_bootstrap=bootstrap,
            pca_components=pca,
            seed=seed,
        )
        inputs = _read_inputs(
            file,
            members,
            non_members,
            score_col=score_col,
            member_col=member_col,
            features=features,
            exclude=exclude,
            propensity_col=propensity_col,
        )
        shown = progress_mode(progress, no_progress, quiet_default=as_json)
        executor = _bootstrap_executor(bootstrap, ray_address, jobs, shown)
        result = _run_audit(inputs, settings, executor, cache_dir, shown)
        payload = _payload(result) if as_json else None
        if out is not None:
            _write_report(result, out, settings, inputs, [file, members, non_members], overwrite)
    except PrivauditError as exc:
        typer.echo(error_line(exc), err=True)
        raise typer.Exit(2) from None
    except OSError as exc:
        typer.echo(f"error: cannot write the report to {out} ({exc})", err=True)
        raise typer.Exit(2) from None
    _print_result(result, payload, inputs.columns, out)
    mlflow_cli.log(mlflow, out if out is not None else result.to_dict(), command="zero-run")


def _check_before_work(mlflow: str | None, out: Path | None, overwrite: bool) -> None:
    """What can be refused before any work: the ``--mlflow`` target, then an ``--out`` that
    exists without ``--overwrite`` (or is a file)."""
    from privaudit.report.writer import check_output_dir

    mlflow_cli.check(mlflow)
    if out is not None:
        check_output_dir(out, overwrite=overwrite)


@dataclasses.dataclass(frozen=True)
class _AuditSettings:
    """The audit's settings as given on the command line (None: the API's default).

    The fields are in the order of ``bundle.json``'s ``config`` (:meth:`bundle_config`).
    """

    estimators: list[str]
    challengers: list[str]
    placebo: bool
    confidence: float | None
    beta: float | None
    margin_z: float
    headline_rule: str
    propensity_col: str | None
    delta: float
    delta_ds: float
    n_bootstrap: int
    pca_components: int | None
    seed: int

    def bundle_config(self, columns: list[str]) -> dict[str, Any]:
        """The ``config`` of the bundle manifest: these settings and the feature columns."""
        return {**dataclasses.asdict(self), "features": list(columns)}


@dataclasses.dataclass(frozen=True)
class _Inputs:
    """What the table(s) gave the audit."""

    scores: np.ndarray
    member: np.ndarray
    features: Any
    """The propensity feature columns (a DataFrame); None with ``--propensity-col``."""
    columns: list[str]
    """Their names (none with ``--propensity-col``)."""
    given: dict[str, np.ndarray] | None
    """``{column: propensities}`` with ``--propensity-col``, else None."""
    saved: Any
    """The frame a bundle keeps: the features, or the given propensity column."""


def _read_inputs(
    file: Path | None,
    members: Path | None,
    non_members: Path | None,
    *,
    score_col: str,
    member_col: str,
    features: str | None,
    exclude: str | None,
    propensity_col: str | None,
) -> _Inputs:
    """Read the table(s) (:func:`load_zero_run_table`): scores, membership and features.

    With ``--propensity-col`` that column is read as the only "feature" and becomes the
    given propensities (checked by :func:`_propensity_values`); no features are passed on.
    """
    scores, member, frame, columns = load_zero_run_table(
        file,
        members_file=members,
        non_members_file=non_members,
        score_col=score_col,
        member_col=member_col,
        features=propensity_col if propensity_col is not None else features,
        exclude=exclude,
    )
    if propensity_col is None:
        return _Inputs(scores, member, frame, columns, given=None, saved=frame)
    given = {propensity_col: _propensity_values(frame[propensity_col], propensity_col)}
    return _Inputs(scores, member, None, [], given=given, saved=frame)


def _run_audit(
    inputs: _Inputs,
    settings: _AuditSettings,
    executor: Any,
    cache_dir: Path | None,
    progress: str,
) -> Any:
    """:func:`privaudit.zero_run.zero_run_audit` on the inputs with the settings.

    ``executor`` runs the bootstrap replicates (:func:`_bootstrap_executor`); ``cache_dir``
    keeps each finished replicate (an artifact store).
    """
    from privaudit.runtime.store import ArtifactStore
    from privaudit.zero_run import zero_run_audit

    return zero_run_audit(
        inputs.scores,
        inputs.member,
        features=inputs.features,
        propensity=inputs.given,
        estimators=tuple(settings.estimators),
        challengers=tuple(settings.challengers),
        placebo=settings.placebo,
        beta=settings.beta,
        confidence=settings.confidence,
        margin_z=settings.margin_z,
        headline_rule=settings.headline_rule,
        delta=settings.delta,
        delta_ds=settings.delta_ds,
        n_bootstrap=settings.n_bootstrap,
        pca_components=settings.pca_components,
        seed=settings.seed,
        executor=executor,
        store=ArtifactStore(cache_dir) if cache_dir is not None else None,
        progress=progress,
    )


def _write_report(
    result: Any,
    out: Path,
    settings: _AuditSettings,
    inputs: _Inputs,
    sources: list[Path | None],
    overwrite: bool,
) -> None:
    """``--out``: results.json, report.html and the bundle (manifest, inputs, features)."""
    from privaudit.zero_run.report import write_zero_run_report

    manifest = _manifest(settings.bundle_config(inputs.columns), settings.seed, sources)
    saved = {"scores": inputs.scores, "member": inputs.member, "features": inputs.saved}
    write_zero_run_report(result, out, overwrite=overwrite, bundle=manifest, inputs=saved)


def _estimator_names(
    estimators: str | None, features: str | None, propensity_col: str | None
) -> list[str]:
    """The ``--estimators`` names (default :data:`DEFAULT_ESTIMATORS`; ``all``: every family),
    checked; none may be asked for together with ``--propensity-col``."""
    from privaudit._validation import fail
    from privaudit.zero_run import DEFAULT_ESTIMATORS, ESTIMATORS

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
    return names


def _challenger_names(challengers: str | None, propensity_col: str | None) -> list[str]:
    """The ``--challengers`` names (default :data:`DEFAULT_CHALLENGERS`; ``none``: none),
    checked; none with ``--propensity-col`` (nothing is fitted then)."""
    from privaudit._validation import fail
    from privaudit.zero_run import DEFAULT_CHALLENGERS, ESTIMATORS

    if propensity_col is not None:
        if challengers is not None:
            raise fail(
                "--propensity-col", "no --challengers with given propensities", "--challengers"
            )
        return []
    names = _split_list(challengers, "--challengers") or list(DEFAULT_CHALLENGERS)
    if names == ["none"]:
        return []
    unknown = [n for n in names if n not in ESTIMATORS]
    if unknown:
        raise fail("--challengers", "names from " + ", ".join(ESTIMATORS), ", ".join(unknown))
    return names


def _bootstrap_executor(bootstrap: int, ray_address: str | None, jobs: int, progress: str) -> Any:
    """Where the bootstrap replicates run: Ray (``--ray``), local processes, or inline
    (None) when there is no bootstrap."""
    from privaudit.runtime.executor import LocalExecutor, RayExecutor

    if bootstrap and ray_address is not None:
        address = None if ray_address == "local" else ray_address
        return RayExecutor(address=address, progress=progress)
    if bootstrap:
        return LocalExecutor(jobs, progress=progress)
    return None


def _manifest(config: dict[str, Any], seed: int, sources: list[Path | None]) -> Any:
    """The ``bundle.json`` manifest of an ``--out`` report (what ``privaudit verify`` re-checks)."""
    from privaudit.report.bundle import make_manifest, sources_fingerprint

    return make_manifest(
        kind="zero-run",
        command="zero-run",
        config=config,
        seeds={"root": seed},
        dataset_fingerprint=sources_fingerprint(sources),
    )


def _print_result(result: Any, payload: str | None, columns: list[str], out: Path | None) -> None:
    """The JSON (``--json``) or the readable summary, and where the report went."""
    from rich.console import Console

    from privaudit.zero_run.summary import render_zero_run_summary

    if payload is not None:
        typer.echo(payload)
        return
    console = Console(file=sys.stdout, soft_wrap=True) if sys.stdout.isatty() else None
    render_zero_run_summary(
        result, console or Console(file=sys.stdout, width=180), features=columns
    )
    if out is not None:
        typer.echo(
            f"report written to {out} (results.json, report.html; bundle.json with "
            "inputs.npz and features.parquet: re-check it with `privaudit verify`)"
        )
