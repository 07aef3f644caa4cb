"""``privaudit demo``: audit an overfit MLP trained on UCI Adult with every attack."""

from __future__ import annotations

import math
import sys
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import typer

from privaudit.cli_common import mlflow_cli
from privaudit.cli_common.errors import fail_exit, quiet_warnings
from privaudit.cli_common.progress_option import no_progress_option, progress_mode, progress_option
from privaudit.errors import PrivauditError


def _pct(x: Any) -> str:
    return "n/a" if x is None else f"{100.0 * float(x):.2f}%"


def _pct1(x: Any) -> str:
    return "n/a" if x is None else f"{100.0 * float(x):.1f}%"


#: The FPRs of the summary's TPR columns (``results.json`` key, column title).
_TPR_COLUMNS: tuple[tuple[str, str], ...] = (("0.001", "TPR@0.1%"), ("0.01", "TPR@1%"))


#: The demo's cache folder when no --cache-dir is given (in the working directory).
DEMO_CACHE_DIR = Path(".privaudit-cache")


def _models_line(
    settings: dict[str, Any],
    target: dict[str, Any] | None = None,
    *,
    cache_note: str | None = None,
) -> str:
    """Which models were trained and which loaded, and from where: the cache's folder
    (with ``cache_note``, e.g. that it is the demo's default one), or that there is none
    (and why: ``cache_note``, else how to keep one); a provided target is read from its
    own file, not from the cache."""
    trained = {k: int(v) for k, v in settings.get("models_trained", {}).items()}
    loaded = {k: int(v) for k, v in settings.get("models_loaded", {}).items()}
    own = ""
    if target is not None and target.get("origin") == "provided":
        loaded.pop("target", None)
        own = f"the target read from {Path(str(target.get('path', '?'))).name}; "
    n_trained, n_loaded = sum(trained.values()), sum(loaded.values())
    cache = settings.get("cache_dir")
    where = f"the cache at {cache}" + (f" ({cache_note})" if cache_note else "")
    executor = settings.get("executor", "local")
    if settings.get("ray_address"):
        executor += f" ({settings['ray_address']})"
    if not cache:
        why = cache_note or "set cache_dir to keep models for a rerun"
        head = f"{n_trained} trained (no cache: {why})"
    elif n_loaded and not n_trained:
        head = f"all {n_loaded} models loaded from {where} (nothing retrained)"
    elif n_loaded:
        head = f"{n_trained} trained, {n_loaded} loaded from {where}"
    else:
        head = f"{n_trained} trained, stored in {where}"
    return f"Models: {own}{head}; executor {executor}"


def _off_alpha(attack: dict[str, Any], alpha: float) -> str:
    """``^`` / ``v`` after an achieved FPR above / below alpha beyond sampling error (the
    report's red cell), so that a plain-text summary marks it too; ``""`` otherwise."""
    if attack.get("achieved_fpr") is None or attack.get("alpha_within_error", True):
        return ""
    return "^" if float(attack["achieved_fpr"]) > alpha else "v"


def _ci(x: float) -> str:
    v = 100.0 * float(x)
    return "100" if v >= 99.95 else f"{v:.1f}"


def summary_lines(results: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The notes under the summary table (why a figure is n/a) and the audit's warnings."""
    notes: list[str] = []
    attacks = results["attacks"]
    for key, title in _TPR_COLUMNS:
        f = float(key)
        need = math.ceil(1.0 / f - 1e-9)
        short = [a for a in attacks if a["tpr_at_fpr"].get(key) is None and a["n_negatives"] < need]
        if not short:
            continue
        counts = Counter(int(a["n_negatives"]) for a in short)
        common = counts.most_common(1)[0][0]
        others = [f"{a['name']}: {a['n_negatives']}" for a in short if a["n_negatives"] != common]
        who = "the attacks" if len(short) == len(attacks) else ", ".join(a["name"] for a in short)
        notes.append(
            f"{title} n/a: a TPR at {100 * f:g}% FPR needs >= {need:,} non-members (one "
            f"false positive); {who} scored {common:,}"
            + (f" ({', '.join(others)})" if others else "")
        )
    no_alpha = [a["name"] for a in attacks if a["achieved_fpr"] is None]
    if no_alpha:
        notes.append(
            "FPR@alpha n/a for " + ", ".join(no_alpha) + ": no threshold calibrated at "
            "alpha (the score only ranks records)"
        )
    off = [
        a
        for a in attacks
        if a["achieved_fpr"] is not None and not a.get("alpha_within_error", True)
    ]
    if off:
        alpha = float(results["settings"]["alpha"])
        notes.append(
            "^ / v: achieved FPR above / below alpha = "
            f"{100 * alpha:g}% beyond sampling error (its 95% interval excludes alpha; red "
            "in report.html): " + ", ".join(a["name"] for a in off)
        )
    guarantees = {a.get("alpha_guarantee") for a in attacks}
    if "average-over-targets" in guarantees:
        notes.append(
            "*: the alpha threshold holds on average over target models (Ye et al. "
            "Def. 3.1), not for this target"
        )
    if "approximate" in guarantees:
        notes.append("~: smoothed threshold, not calibrated on population records")
    named = [a for a in attacks if (a.get("params") or {}).get("score_name")]
    if named:  # RMIA's score form (issue 28): the default is not the paper's score
        notes.append(
            "score: "
            + ", ".join(f"{a['name']} = {a['params']['score_name']}" for a in named)
            + " (log likelihood ratio: log Pr(x|theta) - log Pr(x), privaudit's default; "
            "the paper's pairwise-comparison score is score: fraction)"
        )
    warns = [str(w) for w in results["settings"].get("warnings", [])]
    warns += [f"{a['name']}: {w}" for a in attacks for w in a.get("warnings") or []]
    return notes, warns


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
    e.g. a threshold that cannot fire at alpha).
    """
    from rich import box
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    if width is None:
        width = 80 if not sys.stdout.isatty() else None  # a pipe or file: 80 columns
    console = Console(width=width, highlight=False)
    t = results["target"]
    s = results["settings"]
    data = s["dataset"].get("name") or Path(str(s["dataset"].get("path"))).name
    console.print(
        f"[bold]Target[/bold]: {s['model'].get('kind', '?')} on {data}; accuracy "
        f"{_pct1(t['train_accuracy'])} train, {_pct1(t['test_accuracy'])} test; "
        f"{t['n_members']} members + {t['n_non_members']} non-members audited"
    )
    game = results.get("game")
    if game:
        console.print(
            f"[bold]Game[/bold]: {game.get('id', game.get('name'))} ({game.get('name')}), "
            f"{game.get('n_trials', 1)} trial(s); see the report's threat-model card"
        )
    alpha = float(s["alpha"])
    table = Table(
        title=f"Membership inference (alpha = {alpha:g})",
        box=box.SIMPLE_HEAD,
        # The box's blank column divider already separates the cells: no padding, so
        # the longest attack name and every header fit in 80 columns untruncated.
        padding=(0, 0),
        pad_edge=False,
    )
    for col, justify in [
        ("attack", "left"),
        ("AUC", "right"),
        (_TPR_COLUMNS[0][1], "right"),
        (_TPR_COLUMNS[1][1], "right"),
        (f"FPR@{100 * alpha:g}% [95% CI]", "right"),
        ("records", "right"),
        ("models", "right"),
    ]:
        table.add_column(col, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for a in results["attacks"]:
        if a["achieved_fpr"] is None:
            ach = Text("n/a")
        else:
            lo, hi = a["achieved_fpr_ci"]
            colour = "green" if a["alpha_within_error"] else "red"
            mark = {"average-over-targets": "*", "approximate": "~"}.get(
                a.get("alpha_guarantee") or "", ""
            )
            ach = Text.assemble(
                (_pct1(a["achieved_fpr"]) + _off_alpha(a, alpha), colour),
                mark,
                f" [{_ci(lo)}, {_ci(hi)}]",
            )
        table.add_row(
            a["name"] + ("!" if a.get("warnings") else ""),
            f"{a['auc']:.3f}",
            *(_pct(a["tpr_at_fpr"].get(key)) for key, _ in _TPR_COLUMNS),
            ach,
            f"{a['n_positives']}+{a['n_negatives']}",
            "-" if a["n_reference_models"] is None else str(a["n_reference_models"]),
        )
    console.print(table)
    notes, warns = summary_lines(results)
    console.print("records: members + non-members scored; models: attacker models used")
    for line in notes:
        console.print(line)
    console.print(_models_line(s, t, cache_note=cache_note))
    for w in warns:
        console.print(f"[yellow]warning[/yellow]: {w}")
    if out_dir is not None:
        console.print(
            f"Report written to [bold]{out_dir}[/bold] (report.html, results.json, scores.npz, "
            "bundle.json: re-check it with `privaudit verify`)"
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
