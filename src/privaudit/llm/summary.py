"""The terminal summary of a language-model audit (``privaudit run`` with a Hugging Face target)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

__all__ = ["render_llm_summary"]


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _tpr(a: dict[str, Any], key: str) -> str:
    """The TPR at FPR ``key`` with its interval when results.json has one: ``6.0% [2.0,11]``."""
    x = a["tpr_at_fpr"].get(key)
    ci = (a.get("tpr_at_fpr_ci") or {}).get(key)
    if x is None or ci is None:
        return _pct(x)
    return f"{100 * x:.1f}% [{_end(ci[0])},{_end(ci[1])}]"


def _end(p: float) -> str:
    """An interval's end in percent, short: ``0.3``, ``9.5``, ``28``."""
    return f"{100 * p:.1f}" if 100 * p < 9.95 else f"{100 * p:.0f}"


def _units_note(c: dict[str, Any], attacks: list[dict[str, Any]]) -> str:
    """What the TPR columns rest on: the support rule in documents and the intervals."""
    chunks = c["n_member_chunks"] != c["n_member_documents"] or (
        c["n_non_member_chunks"] != c["n_non_member_documents"]
    )
    n_neg = c["n_non_member_documents"]
    units = (
        f"{n_neg} non-member documents ({c['n_non_member_chunks']} chunks; the chunks of "
        "a document are not independent)"
        if chunks
        else f"{n_neg} non-members"
    )
    note = f"TPR@f: TPR at FPR f, n/a with fewer than 1/f non-member documents (here {units})"
    a = next((x for x in attacks if x.get("tpr_at_fpr_ci_method")), None)
    if a is not None:
        level = 100 * float(a.get("tpr_at_fpr_ci_confidence", 0.95))
        note += (
            f"; [{level:g}% CI]: {a['tpr_at_fpr_ci_resamples']} bootstrap samples of "
            "whole documents"
        )
    return note


def render_llm_summary(
    results: dict[str, Any],
    out_dir: Path | None,
    *,
    width: int | None = None,
    console: Any = None,
) -> None:
    """The blind baseline's verdict first (the shift warning stays in front of every
    figure), then one row per signal and the blind baseline: AUC [95% CI], TPR at 1% and
    0.1% FPR [95% CI, documents resampled], the one-run eps lower bound; then what the
    TPRs rest on (non-member documents and chunks) and where the report is.

    ``console``: the rich console to print on (default: stdout, ``width`` columns, 80 off a
    terminal)."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    if console is None:
        if width is None:
            width = 80 if not sys.stdout.isatty() else None
        console = Console(width=width, highlight=False)
    llm = results["llm"]
    c = llm["counts"]
    names = ", ".join(f"{role}: {str(m['name'])[:20]}" for role, m in llm["models"].items())
    console.print(
        f"[bold]Language model[/bold] ({names}); {c['n_member_chunks']} member chunks "
        f"({c['n_member_documents']} documents) + {c['n_non_member_chunks']} non-member "
        f"chunks ({c['n_non_member_documents']} documents)"
    )
    blind = llm.get("blind_baseline")
    if blind and blind.get("warning"):
        console.print(f"[yellow]warning[/yellow]: {blind['warning']}")
    elif blind and blind.get("shift_test"):
        t = blind["shift_test"]
        console.print(
            "blind baseline (text only, no model access): no distribution shift detected "
            f"between member and non-member texts (permutation p = {t['p_value']:.3f} over "
            f"{t['n_permutations']} {t['unit']} permutations)"
        )
    elif blind:
        console.print("blind baseline (text only, no model access): no shift test was run")
    eps = {a["attack"]: a["epsilon_lower_bound"] for a in results["audits"] if "attack" in a}
    table = Table(title="Membership signals", box=box.SIMPLE_HEAD, padding=(0, 1), pad_edge=False)
    ci = any(a.get("tpr_at_fpr_ci") for a in results["attacks"])
    tpr_cols = ("TPR@1% [CI]", "TPR@0.1%") if ci else ("TPR@1%FPR", "TPR@0.1%FPR")
    for col in ("signal", "AUC [95% CI]", *tpr_cols, "eps lb"):
        table.add_column(col, justify="left" if col == "signal" else "right", no_wrap=True)
    for a in results["attacks"]:
        ci = a.get("auc_ci")
        auc = f"{a['auc']:.3f}" + (f" [{ci[0]:.3f},{ci[1]:.3f}]" if ci else "")
        e = eps.get(a["name"])
        table.add_row(
            a["name"],
            auc,
            _tpr(a, "0.01"),
            _tpr(a, "0.001"),
            "-" if e is None else f"{e:.3f}",
        )
    console.print(table)
    console.print(_units_note(c, results["attacks"]))
    by = (
        "record by record (each record its own document)"
        if c["n_member_chunks"] == c["n_member_documents"]
        and c["n_non_member_chunks"] == c["n_non_member_documents"]
        else "by document"
    )
    console.print(
        "eps lower bound: one-run audit per signal (Bonferroni over the signals); "
        f"members were chosen {by} (see the report)"
    )
    if out_dir is not None:
        console.print(
            f"Report written to [bold]{out_dir}[/bold] (report.html, results.json, scores.npz, "
            "bundle.json: re-check it with `privaudit verify`)"
        )
