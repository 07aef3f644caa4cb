"""``privaudit run audit.yaml``: the audit pipeline driven by a config file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from privaudit.cli import app, ci_output
from privaudit.cli.demo_cmd import fail_exit, quiet_warnings, render_summary
from privaudit.errors import PrivauditError


@app.command("run")
def run(
    config: Path = typer.Argument(..., help="The audit config (YAML).", show_default=False),
    out: Path | None = typer.Option(None, "--out", help="Report directory (overrides output_dir)."),
    overwrite: bool = typer.Option(
        False, "--overwrite", help="Replace an existing report directory."
    ),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show progress bars."),
    game: str | None = typer.Option(
        None,
        "--game",
        help="Inference game (Ye et al. 2022): def-3.1, def-3.2, def-3.3 or def-3.4 (overrides game).",
    ),
    game_trials: int | None = typer.Option(
        None,
        "--game-trials",
        help="Trials (target models) of def-3.1/3.3/3.4 (overrides game.n_trials).",
    ),
    claimed_epsilon: float | None = typer.Option(
        None,
        "--claimed-epsilon",
        help="Exit 1 when an attack's one-run epsilon lower bound exceeds it.",
    ),
    fmt: str = typer.Option("text", "--format", help=ci_output.FORMAT_HELP),
    format_file: Path | None = typer.Option(None, "--format-file", help=ci_output.FORMAT_FILE_HELP),
) -> None:
    """Run the audit described by CONFIG; write report.html, results.json, scores.npz, bundle.json.

    An invalid config is reported with the name of the bad field (exit code 2) and
    nothing is written.
    """
    from privaudit.config import ConfigError, with_game
    from privaudit.llm_config import LLMAuditConfig, load_run_config
    from privaudit.pipeline import run_audit
    from privaudit.report.ci_formats import gates_from_results

    try:
        fmt = ci_output.check_options(fmt, claimed_epsilon, format_file)
        any_cfg = load_run_config(config)
        if isinstance(any_cfg, LLMAuditConfig):  # target.kind: huggingface
            if game is not None or game_trials is not None:
                raise ConfigError(
                    "--game/--game-trials: a language-model audit (target.kind: huggingface) "
                    "plays one fixed-model game only"
                )
            _run_llm(any_cfg, config, out, overwrite, progress, claimed_epsilon, fmt, format_file)
            return
        cfg = any_cfg
        if out is not None:
            cfg = cfg.model_copy(update={"output_dir": out})
        if game is not None or game_trials is not None:
            cfg = with_game(cfg, game, n_trials=game_trials)
        with quiet_warnings():  # the summary prints them (results.json records them)
            report = run_audit(cfg, overwrite=overwrite, progress=progress)
    except PrivauditError as exc:
        raise fail_exit(exc) from None
    if ci_output.human_output_wanted(fmt, format_file):
        render_summary(report.results, report.out_dir)
    if claimed_epsilon is None:
        # a DP-SGD target claims its accountant's epsilon: a lower bound above it is a
        # violation (exit code 1), as with --claimed-epsilon
        claimed_epsilon = report.results.get("target", {}).get("accountant_epsilon")
    code = ci_output.emit(
        fmt,
        "run",
        gates_from_results(report.results),
        claimed_epsilon,
        report.results,
        artifact=config,
        format_file=format_file,
    )
    if code:
        raise typer.Exit(code)


def _run_llm(
    cfg: Any,
    config: Path,
    out: Path | None,
    overwrite: bool,
    progress: bool,
    claimed_epsilon: float | None,
    fmt: str,
    format_file: Path | None,
) -> None:
    """``privaudit run`` of a language-model config (:func:`privaudit.llm_pipeline.run_llm_audit`)."""
    from privaudit.cli.llm_summary import render_llm_summary
    from privaudit.llm_pipeline import run_llm_audit
    from privaudit.report.ci_formats import gates_from_results

    if out is not None:
        cfg = cfg.model_copy(update={"output_dir": out})
    try:
        with quiet_warnings():
            report = run_llm_audit(cfg, overwrite=overwrite, progress=progress)
    except PrivauditError as exc:
        raise fail_exit(exc) from None
    if ci_output.human_output_wanted(fmt, format_file):
        render_llm_summary(report.results, report.out_dir)
    code = ci_output.emit(
        fmt,
        "run",
        gates_from_results(report.results),
        claimed_epsilon,
        report.results,
        artifact=config,
        format_file=format_file,
    )
    if code:
        raise typer.Exit(code)
