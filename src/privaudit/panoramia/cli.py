"""``privaudit panoramia CONFIG.yaml``: audit a released model without retraining (PANORAMIA).

Kazmi et al. (NeurIPS 2024): generated non-members, an MIA on (x, target loss) against a
baseline on (x, helper-model loss); c_lb, {c+eps}_lb, eps_tilde, and the RM;RN and O(1)
comparisons when real non-members are given. Exit codes: 0 done, 2 an invalid config or
input (named in one ``error:`` line; nothing is written).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import typer

from privaudit.cli_common import mlflow_cli
from privaudit.cli_common.errors import fail_exit, quiet_warnings
from privaudit.cli_common.progress_option import no_progress_option, progress_mode, progress_option
from privaudit.cli_common.ray_option import ray_address_of, ray_option
from privaudit.errors import PrivauditError

__all__ = ["render_panoramia_summary"]


def _num(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def render_panoramia_summary(
    results: Mapping[str, Any], out_dir: Path | None, *, width: int | None = None
) -> None:
    """The bounds with m, the comparisons, the eps_tilde caveat and where the report is."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    from privaudit.panoramia.report import cap_warning, classifier_inputs, size_warning

    if width is None:
        width = 80 if not sys.stdout.isatty() else None
    console = Console(width=width, highlight=False)
    p = results["panoramia"]
    s, b = p["sizes"], p["bounds"]
    console.print(
        f"[bold]PANORAMIA[/bold] ({p['modality']}): {s['n_known_members']} known members "
        f"({s['n_generator_train']} train the generator), {s['n_synthetic']} generated records "
        f"({s['n_helper_pool']} train the helper model); m = {s['m']} test slots "
        f"({s['n_test_members']} members, {s['n_test_synthetic']} generated)"
        + (
            f", one chunk of each of {s['n_test_documents']} documents"
            if "n_test_documents" in s
            else ""
        )
    )
    table = Table(
        title=(
            f"Bounds at confidence {p['confidence']}, three guarantees held separately: "
            "c_lb with {c+eps}_lb (jointly), RM;RN, O(1)"
        ),
        box=box.SIMPLE_HEAD,
        padding=(0, 1),
        pad_edge=False,
    )
    for col in ("quantity", "value", "m", "from"):
        table.add_column(col, justify="left" if col in ("quantity", "from") else "right")
    for name, bound, role in (("c_lb", "c_lb", "baseline"), ("{c+eps}_lb", "c_plus_eps_lb", "mia")):
        inputs = f"{'MIA' if role == 'mia' else role}: {classifier_inputs(p, role)}"
        table.add_row(name, _num(b[bound]), str(s["m"]), inputs)
    table.add_row("eps_tilde", _num(b["eps_tilde"]), str(s["m"]), "max(0, {c+eps}_lb - c_lb)")
    if "cap" in b:
        table.add_row("cap", _num(b["cap"]), str(s["m"]), "perfect scores: eps_tilde <= cap - c_lb")
    rm, o1 = p["comparisons"]["rmrn"], p["comparisons"]["o1"]
    none = "not run (needs real non-members: data.non_members)"
    table.add_row(
        "RM;RN eps_lb",
        "-" if rm is None else _num(rm["eps_lb"]),
        "" if rm is None else str(rm["m"]),
        none if rm is None else "same MIA, real non-members",
    )
    table.add_row(
        "O(1) eps_lb",
        "-" if o1 is None else _num(o1["eps_lb"]),
        "" if o1 is None else str(o1["m"]),
        none if o1 is None else "loss threshold, two-sided",
    )
    console.print(table)
    for warning in (size_warning(p), cap_warning(b, int(s["m"]))):
        if warning is not None:
            console.print(f"[bold red]warning[/bold red]: {warning}")
    console.print(
        "[yellow]note[/yellow]: eps_tilde is a lower bound on the target's eps only if c_lb is "
        "tight (no detector of generated records beats the baseline; Kazmi et al. 2024, "
        "Sec. 4.2). RM;RN and O(1) use real non-members: eps lower bounds when members "
        "and non-members were split at random."
    )
    if out_dir is not None:
        console.print(
            f"Report written to [bold]{out_dir}[/bold] (report.html, results.json, "
            "panoramia_scores.npz, bundle.json: re-check it with `privaudit verify`)"
        )


def panoramia(
    config: Path = typer.Argument(..., help="The PANORAMIA config (YAML).", show_default=False),
    out: Path | None = typer.Option(None, "--out", help="Report directory (overrides output_dir)."),
    overwrite: bool = typer.Option(
        False, "--overwrite", help="Replace an existing report directory."
    ),
    progress: str = progress_option(),
    no_progress: bool = no_progress_option(),
    json_out: Path | None = typer.Option(
        None, "--json", help="Also write the headline figures as JSON to this file."
    ),
    mlflow: str | None = mlflow_cli.option(),
    ray: str | None = ray_option(),
) -> None:
    """Audit the released model of CONFIG without retraining it (PANORAMIA, Kazmi et al. 2024).

    Writes report.html, results.json, panoramia_scores.npz (rmrn_scores.npz) and bundle.json.
    An invalid config is reported with the name of the bad field (exit code 2) and nothing
    is written.
    """
    from contextlib import nullcontext

    from rich.console import Console

    from privaudit.panoramia.config import load_panoramia_config
    from privaudit.panoramia.pipeline import run_panoramia_audit
    from privaudit.panoramia.result import panoramia_summary
    from privaudit.runtime.progress import progress_style

    shown = progress_mode(progress, no_progress)
    err = Console(stderr=True, highlight=False, force_terminal=True if shown == "rich" else None)
    try:
        mlflow_cli.check(mlflow)
        cfg = load_panoramia_config(config)
        if out is not None:
            cfg = cfg.model_copy(update={"output_dir": out})
        if ray is not None:  # --ray ADDRESS: the config's executor, on that cluster
            cfg = cfg.model_copy(update={"executor": "ray", "ray_address": ray_address_of(ray)})
        # rich: a spinner (the steps have no counted bars); plain: a line per step
        status = (
            err.status(
                f"PANORAMIA ({cfg.modality}): training the generator, the helper model and "
                "the classifiers"
            )
            if progress_style(shown) == "rich"
            else nullcontext()
        )
        with quiet_warnings(), status:
            results = run_panoramia_audit(cfg, overwrite=overwrite, progress=shown)
    except PrivauditError as exc:
        raise fail_exit(exc) from None
    render_panoramia_summary(results, Path(cfg.output_dir))
    mlflow_cli.log(mlflow, Path(cfg.output_dir), command="panoramia")
    if json_out is not None:
        json_out.write_text(json.dumps(panoramia_summary(results), indent=2) + "\n")
