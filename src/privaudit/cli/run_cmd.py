"""``privaudit run audit.yaml``: the audit pipeline driven by a config file.

A config whose ``target.kind`` is ``huggingface`` is a language-model audit
(:mod:`privaudit.llm.config`, :func:`privaudit.llm.pipeline.run_llm_audit`); any other is
a classifier audit (:func:`privaudit.membership.pipeline.run_audit`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from privaudit.cli_common import ci_output, mlflow_cli
from privaudit.cli_common.errors import fail_exit, quiet_warnings
from privaudit.cli_common.progress_option import no_progress_option, progress_mode, progress_option
from privaudit.cli_common.ray_option import ray_address_of, ray_option
from privaudit.errors import PrivauditError
from privaudit.membership.cli import render_summary


def run(
    config: Path = typer.Argument(..., help="The audit config (YAML).", show_default=False),
    out: Path | None = typer.Option(None, "--out", help="Report directory (overrides output_dir)."),
    overwrite: bool = typer.Option(
        False, "--overwrite", help="Replace an existing report directory."
    ),
    progress: str = progress_option(),
    no_progress: bool = no_progress_option(),
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
    mlflow: str | None = mlflow_cli.option(),
    ray: str | None = ray_option(),
) -> None:
    """Run the audit described by CONFIG; write report.html, results.json, scores.npz, bundle.json.

    An invalid config is reported with the name of the bad field (exit code 2) and
    nothing is written.
    """
    from privaudit.llm.config import LLMAuditConfig
    from privaudit.llm.summary import render_llm_summary
    from privaudit.membership.config import ConfigError, with_game

    shown = progress_mode(progress, no_progress)
    render: Callable[[dict[str, Any], Path | None], None]
    try:
        fmt = ci_output.check_options(fmt, claimed_epsilon, format_file)
        mlflow_cli.check(mlflow)
        cfg = load_run_config(config)
        if out is not None:
            cfg = cfg.model_copy(update={"output_dir": out})
        if ray is not None:  # --ray ADDRESS: the config's executor, on that cluster
            cfg = cfg.model_copy(update={"executor": "ray", "ray_address": ray_address_of(ray)})
        with quiet_warnings():  # the summary prints them (results.json records them)
            if isinstance(cfg, LLMAuditConfig):  # target.kind: huggingface
                from privaudit.llm.pipeline import run_llm_audit

                if game is not None or game_trials is not None:
                    raise ConfigError(
                        "--game/--game-trials: a language-model audit (target.kind: "
                        "huggingface) plays one fixed-model game only"
                    )
                llm_report = run_llm_audit(cfg, overwrite=overwrite, progress=shown)
                results, out_dir, render = (
                    llm_report.results,
                    llm_report.out_dir,
                    render_llm_summary,
                )
            else:
                from privaudit.membership.pipeline import run_audit

                if game is not None or game_trials is not None:
                    cfg = with_game(cfg, game, n_trials=game_trials)
                report = run_audit(cfg, overwrite=overwrite, progress=shown)
                results, out_dir, render = report.results, report.out_dir, render_summary
    except PrivauditError as exc:
        raise fail_exit(exc) from None
    if ci_output.human_output_wanted(fmt, format_file):
        render(results, out_dir)
    mlflow_cli.log(mlflow, out_dir, command="run")
    if claimed_epsilon is None:
        # a DP-SGD target claims its accountant's epsilon: a lower bound above it is a
        # violation (exit code 1), as with --claimed-epsilon
        claimed_epsilon = results.get("target", {}).get("accountant_epsilon")
    from privaudit.report.ci_formats import gates_from_results  # after the work: start-up

    code = ci_output.emit(
        fmt,
        "run",
        gates_from_results(results),
        claimed_epsilon,
        results,
        artifact=config,
        format_file=format_file,
    )
    if code:
        raise typer.Exit(code)


def load_run_config(path: str | Path) -> Any:
    """The config of ``privaudit run``: a language-model audit
    (:class:`~privaudit.llm.config.LLMAuditConfig`) when ``target.kind`` is ``huggingface``,
    else a classifier audit (:class:`~privaudit.membership.config.AuditConfig`)."""
    from privaudit.config.base import read_yaml
    from privaudit.llm.config import is_llm_config, load_llm_config
    from privaudit.membership.config import load_config

    p = Path(path)
    return load_llm_config(p) if is_llm_config(read_yaml(p)) else load_config(p)
