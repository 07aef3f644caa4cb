"""``privaudit record-risk CONFIG.yaml``: per-record risk in the traditional and the
model-seeded game (Krčo et al. 2025), for a synthetic-data generator or a classifier.

The YAML (:class:`privaudit.record_risk.config.RecordRiskFileConfig`) names the data, the target
(``generator: baynet | privbayes | cart`` or a classifier ``model``: a scikit-learn kind,
or ``kind: torch`` with a recipe, trained ``rounds_per_task`` rounds at a time as one
batched computation; the built-in ``privaudit.models.torch_nets:mlp`` gets its input and
output sizes from the data), the attack, the
numbers of targets, rounds and shadow releases, the seed, ``n_jobs`` and ``cache_dir``
(an interrupted run resumes from it). Output: a summary (MR(t) and RMSD beside their
noise floors, the records missed at t = 0.8) and ``output_dir`` (or ``--out``) with
``results.json``, ``records.csv`` and ``report.html``.

Exit codes: 0 done, 2 bad input (``error: ...`` on stderr; nothing written).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from privaudit.cli_common import mlflow_cli
from privaudit.cli_common.errors import error_line
from privaudit.cli_common.progress_option import no_progress_option, progress_mode, progress_option
from privaudit.cli_common.ray_option import ray_address_of, ray_option
from privaudit.errors import PrivauditError

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["build_record_risk", "record_risk_command"]


def build_record_risk(cfg: Any) -> dict[str, Any]:
    """Dataset, table, target, attack and :class:`RecordRiskConfig` of a validated config."""
    from privaudit.config.build import build_trainer, load_dataset
    from privaudit.generators import discretise, make_generator
    from privaudit.record_risk.attacks import make_record_attack
    from privaudit.record_risk.risk import RecordRiskConfig

    ds = load_dataset(cfg.dataset)
    need = cfg.n_aux + 2 * cfg.n
    if ds.n_records < need:
        raise PrivauditError(
            f"n, n_aux: expected a dataset of at least n_aux + 2 n = {need} records, "
            f"found {ds.n_records}"
        )
    t = cfg.target
    if t.kind == "generator":
        target: Any = make_generator(t.generator, **t.params)
        table = discretise(ds, n_bins=cfg.n_bins)
    else:
        model = t.model
        if model.kind == "torch":
            from privaudit.models.torch_recipe import require_torch

            require_torch()  # a clear error (exit 2) before any work when torch is missing
            model = _fill_mlp_shape(model, ds)
        target = build_trainer(model, ds.n_classes, config_dir=cfg.config_dir)
        table = None
    attack = make_record_attack(cfg.attack_name(), t.kind, **cfg.attack_params)
    config = RecordRiskConfig(
        n=cfg.n,
        n_targets=cfg.n_targets,
        n_rounds=cfg.n_rounds,
        n_shadow=cfg.n_shadow,
        n_aux=cfg.n_aux,
        vulnerable_fraction=cfg.vulnerable_fraction,
        replicates=cfg.replicates,
        traditional=cfg.traditional,
        seed=cfg.seed,
        rounds_per_task=cfg.rounds_per_task,
    )
    return {"dataset": ds, "table": table, "target": target, "attack": attack, "config": config}


#: The built-in torch MLP factory, whose input and output sizes follow the dataset.
_MLP_FACTORY = "privaudit.models.torch_nets:mlp"


def _fill_mlp_shape(model: Any, ds: Any) -> Any:
    """The built-in torch MLP's ``n_features`` / ``n_classes`` from the dataset when the
    config leaves them out; a stated size that differs from the data is an error."""
    if model.params.get("factory") != _MLP_FACTORY:
        return model
    kw = dict(model.params.get("factory_kwargs") or {})
    for key, value in (("n_features", int(ds.X.shape[1])), ("n_classes", int(ds.n_classes))):
        if key in kw and kw[key] != value:
            raise PrivauditError(
                f"target.model.params.factory_kwargs.{key}: expected {value} (the dataset's), "
                f"found {kw[key]!r}"
            )
        kw[key] = value
    return model.model_copy(update={"params": {**model.params, "factory_kwargs": kw}})


def _fmt(v: Any) -> str:
    return "n/a" if v is None else f"{v:.3f}"


def render_record_risk_summary(result: Any, console: Console) -> None:
    """The terminal summary of a :class:`RecordRiskResult`."""
    from rich.table import Table

    s = result.summary()
    c = result.comparison
    console.print(
        f"record-level risk of [bold]{result.target['name']}[/] under attack "
        f"[bold]{result.attack['attack']}[/]: {s['n_targets']} targets, {s['n_rounds']} rounds "
        f"per game per target"
    )
    console.print(
        f"mean AUC: model-seeded {s['mean_auc_ms']:.3f}, traditional {s['mean_auc_t']:.3f}"
    )
    how = result.to_dict().get("constructions") or {}
    for game in ("model-seeded", "traditional"):
        if game in how:
            console.print(f"{game} datasets: {how[game]}", highlight=False)
    tab = Table("statistic", "MS vs T", "floor MS vs MS'", "floor T vs T'", "R_MS >= t")
    tab.add_row("RMSD", _fmt(c["rmsd"]), _fmt(c["rmsd_noise_ms"]), _fmt(c["rmsd_noise_t"]), "")
    for t, row in c["thresholds"].items():
        tab.add_row(
            f"MR({t})",
            _fmt(row["miss_rate"]),
            _fmt(row["miss_rate_noise_ms"]),
            _fmt(row["miss_rate_noise_t"]),
            str(row["n_high_ms"]),
        )
    console.print(tab)
    g = c.get("gap_test")
    if g is not None:
        console.print(
            f"gap beyond replicate noise: excess RMSD {g['excess_rmsd']:.3f} "
            f"(z = {g['z']:.2f}, one-sided p = {g['p']:.3g}"
            + (
                f", bootstrap over shared releases, {g['n_bootstrap']} draws"
                if g.get("method") == "release-bootstrap"
                else ", records treated as independent"
            )
            + "; "
            + ("a real gap" if g["p"] < 0.05 else "within noise")
            + ")"
        )
    for w in result.warnings:
        console.print(f"[bold yellow]warning:[/] {w}")


def record_risk_command(
    config: Path = typer.Argument(..., help="YAML config of the record-risk experiment."),
    out: Path | None = typer.Option(None, "--out", help="Report directory (default: output_dir)."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing report."),
    as_json: bool = typer.Option(False, "--json", help="Print the results as JSON."),
    progress: str = progress_option(" With --json: none unless plain or rich."),
    no_progress: bool = no_progress_option(),
    mlflow: str | None = mlflow_cli.option(),
    ray: str | None = ray_option(),
) -> None:
    """Record-level risk: traditional vs model-seeded game (generators and classifiers)."""
    from rich.console import Console

    from privaudit.record_risk.config import load_record_risk_config
    from privaudit.record_risk.report import record_risk_payload, write_record_risk_report
    from privaudit.record_risk.risk import run_record_risk
    from privaudit.report.writer import check_output_dir
    from privaudit.runtime.executor_setting import make_executor

    shown = progress_mode(progress, no_progress, quiet_default=as_json)
    try:
        mlflow_cli.check(mlflow)
        cfg = load_record_risk_config(config)
        if ray is not None:  # --ray ADDRESS: the config's executor, on that cluster
            cfg = cfg.model_copy(update={"executor": "ray", "ray_address": ray_address_of(ray)})
        out_dir = out if out is not None else cfg.output_dir
        check_output_dir(out_dir, overwrite=overwrite)  # fail before any work
        parts = build_record_risk(cfg)
        result = run_record_risk(
            parts["dataset"],
            parts["target"],
            parts["attack"],
            parts["config"],
            table=parts["table"],
            store=cfg.cache_dir,
            executor=make_executor(
                cfg.executor,
                n_jobs=cfg.n_jobs,
                address=cfg.ray_address,
                gpus_per_task=cfg.ray_gpus_per_task,
                progress=shown,
            ),
        )
        settings = json.loads(cfg.model_dump_json())
        write_record_risk_report(result, out_dir, settings=settings, overwrite=overwrite)
    except PrivauditError as exc:
        typer.echo(error_line(exc), err=True)
        raise typer.Exit(2) from None
    except OSError as exc:
        typer.echo(error_line(exc), err=True)
        raise typer.Exit(2) from None
    mlflow_cli.log(mlflow, Path(out_dir), command="record-risk")
    if as_json:
        typer.echo(json.dumps(record_risk_payload(result, settings), indent=2))
        return
    console = Console(file=sys.stdout, soft_wrap=True) if sys.stdout.isatty() else None
    render_record_risk_summary(result, console or Console(file=sys.stdout, width=160))
    typer.echo(f"report written to {out_dir} (results.json, records.csv, report.html)")
