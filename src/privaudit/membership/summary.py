"""The readable summary of a membership audit's ``results.json`` (``privaudit run`` / ``demo``).

:func:`summary_parts` builds what the command line prints (:func:`privaudit.membership.cli.render_summary`
prints each part on a rich console) and :func:`summary_text` renders the same parts to a
string (``str(result)`` of :class:`~privaudit.membership.result.AuditReport`);
:func:`summary_lines` gives the notes under the table and the audit's warnings. Nothing here
imports typer; rich is imported when a summary is built.
"""

from __future__ import annotations

import io
import math
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.table import Table
    from rich.text import Text

__all__ = ["IN_MEMORY", "summary_lines", "summary_parts", "summary_text"]

#: ``source`` of a dataset or target given as Python objects (:func:`privaudit.audit_model`),
#: in ``results.json["settings"]["dataset"]`` and ``results.json["target"]``.
IN_MEMORY = "in-memory"


def _pct(x: Any) -> str:
    return "n/a" if x is None else f"{100.0 * float(x):.2f}%"


def _pct1(x: Any) -> str:
    return "n/a" if x is None else f"{100.0 * float(x):.1f}%"


#: The FPRs of the summary's TPR columns (``results.json`` key, column title).
_TPR_COLUMNS: tuple[tuple[str, str], ...] = (("0.001", "TPR@0.1%"), ("0.01", "TPR@1%"))


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
        if target.get("source") == IN_MEMORY:
            own = "the target given in memory; "
        else:
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
    if attack.get("achieved_fpr") is None:
        return ""
    within = attack.get("alpha_within_error", True)
    if within is None:
        return "?"
    if within:
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
    checked = [
        a
        for a in attacks
        if a["achieved_fpr"] is not None and a.get("alpha_within_error", True) is not None
    ]
    off = [a for a in checked if not a.get("alpha_within_error", True)]
    if off:
        alpha = float(results["settings"]["alpha"])
        notes.append(
            "^ / v: achieved FPR above / below alpha = "
            f"{100 * alpha:g}% beyond sampling error (its 95% interval excludes alpha; red "
            "in report.html): "
            + ", ".join(a["name"] for a in off)
            + f" (each of the {len(checked)} checks at 95%: about "
            f"{0.05 * len(checked):.1f} such flags are expected on average by chance alone)"
        )
    unchecked = [
        a
        for a in attacks
        if a["achieved_fpr"] is not None and a.get("alpha_within_error", True) is None
    ]
    if unchecked:
        notes.append(
            "?: achieved FPR not checked against alpha: "
            + "; ".join(f"{a['name']} ({a.get('alpha_check') or 'no check'})" for a in unchecked)
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


def summary_parts(
    results: dict[str, Any], out_dir: Path | None, *, cache_note: str | None = None
) -> list[Any]:
    """What the summary of a ``results.json`` document prints, in order: rich markup
    strings and the table (:func:`privaudit.membership.cli.render_summary` documents the
    columns and marks)."""
    out: list[Any] = [*_headline(results), _attacks_table(results)]
    calibrated = _calibrated_table(results)
    if calibrated is not None:
        out.extend(calibrated)
    notes, warns = summary_lines(results)
    out.append("records: members + non-members scored; models: attacker models used")
    out.extend(notes)
    out.append(_models_line(results["settings"], results["target"], cache_note=cache_note))
    out.extend(f"[yellow]warning[/yellow]: {w}" for w in warns)
    if out_dir is not None:
        out.append(
            f"Report written to [bold]{out_dir}[/bold] (report.html, results.json, scores.npz, "
            "bundle.json: re-check it with `privaudit verify`)"
        )
    return out


def _headline(results: dict[str, Any]) -> list[str]:
    """The lines above the table: the target (model, data, accuracies, the audited
    records) and, when the audit played a game, the game and its trials."""
    t = results["target"]
    s = results["settings"]
    data = s["dataset"].get("name") or Path(str(s["dataset"].get("path"))).name
    lines = [
        f"[bold]Target[/bold]: {s['model'].get('kind', '?')} on {data}; accuracy "
        f"{_pct1(t['train_accuracy'])} train, {_pct1(t['test_accuracy'])} test; "
        f"{t['n_members']} members + {t['n_non_members']} non-members audited"
    ]
    game = results.get("game")
    if game:
        lines.append(
            f"[bold]Game[/bold]: {game.get('id', game.get('name'))} ({game.get('name')}), "
            f"{game.get('n_trials', 1)} trial(s); see the report's threat-model card"
        )
    return lines


def _attacks_table(results: dict[str, Any]) -> Table:
    """The summary's table: one row per attack with its AUC, TPRs at low FPRs, achieved
    FPR at alpha (:func:`_achieved_fpr_cell`), records scored and attacker models."""
    from rich import box
    from rich.table import Table

    alpha = float(results["settings"]["alpha"])
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
        achieved = _achieved_fpr_cell(a, alpha)
        table.add_row(
            a["name"] + ("!" if a.get("warnings") else ""),
            f"{a['auc']:.3f}",
            *(_pct(a["tpr_at_fpr"].get(key)) for key, _ in _TPR_COLUMNS),
            achieved,
            f"{a['n_positives']}+{a['n_negatives']}",
            "-" if a["n_reference_models"] is None else str(a["n_reference_models"]),
        )
    return table


def _achieved_fpr_cell(attack: dict[str, Any], alpha: float) -> Text:
    """An attack's achieved FPR at alpha with its 95% interval: green within sampling
    error of alpha, red and marked (:func:`_off_alpha`) beyond it, ``*`` or ``~`` after a
    threshold that holds alpha only on average over targets or is smoothed; ``n/a``
    without a threshold."""
    from rich.text import Text

    if attack["achieved_fpr"] is None:
        return Text("n/a")
    lo, hi = attack["achieved_fpr_ci"]
    within = attack["alpha_within_error"]
    colour = "default" if within is None else "green" if within else "red"
    mark = {"average-over-targets": "*", "approximate": "~"}.get(
        attack.get("alpha_guarantee") or "", ""
    )
    return Text.assemble(
        (_pct1(attack["achieved_fpr"]) + _off_alpha(attack, alpha), colour),
        mark,
        f" [{_ci(lo)}, {_ci(hi)}]",
    )


def _calibrated_table(results: dict[str, Any]) -> list[Any] | None:
    """The pooled vs per-record calibrated TPRs of ``results["calibrated_evaluation"]``
    (Jälkö et al. 2026): a line on the evaluation, one table per FPR (so that the intervals
    fit in 80 columns untruncated) and their legend; None when the audit has none."""
    from rich import box
    from rich.table import Table

    ce = results.get("calibrated_evaluation")
    if not ce or not ce.get("attacks"):
        return None
    out: list[Any] = [
        f"[bold]Pooled vs per-record TPR[/bold]: {ce['n_pseudo_targets']} reference models "
        f"as targets, attack fitted on {ce.get('n_map_references', '?')}"
    ]
    for f in (float(x) for x in ce["fprs"]):
        table = Table(
            title=f"TPR at {100 * f:g}% FPR",
            box=box.SIMPLE_HEAD,
            padding=(0, 0),
            pad_edge=False,
        )
        table.add_column("attack", justify="left", no_wrap=True)
        for title in ("pool", "cal [95% CI]", "fit"):
            table.add_column(title, justify="right", no_wrap=True)
        for a in ce["attacks"]:
            fig = next((g for g in a["figures"] if float(g["fpr"]) == f), None)
            if fig is None:
                table.add_row(a["name"], "n/a", "n/a", "n/a")
                continue
            off = fig["calibrated"]["tpr"] is not None and not fig.get("fpr_check", {}).get(
                "consistent", True
            )
            ci = fig["calibrated"].get("ci")
            table.add_row(
                a["name"],
                _pct1(fig["pooled"]["tpr"]),
                _pct1(fig["calibrated"]["tpr"])
                + ("!" if off else "")
                + ("" if not ci else f" [{_ci(ci[0])}, {_ci(ci[1])}]"),
                _pct1(fig.get("fitted_threshold", {}).get("tpr")),
            )
        out.append(table)
    n_out = next(
        (f.get("n_out_median") for a in ce["attacks"] for f in a["figures"]),
        None,
    )
    legend = (
        "pool: pooled TPR, one threshold over all records (not a per-record FPR); cal: "
        "per-record calibrated TPR, the mean over records of the TPR at the record's own "
        "FPR threshold (Jalko et al. 2026; OUT scores Gaussian per record, the fitted "
        "Gaussians' noise deconvolved), with its 95% interval (records and evaluation models "
        "resampled); fit: the TPR of a threshold fitted from each record's OUT scores"
        + ("" if n_out is None else f" (median {n_out:g})")
        + " at that FPR exactly, lower by the threshold's noise; !: OUT scores not Gaussian "
        "per record (an OUT score exceeds the threshold fitted from its record's others far "
        "more or less often than the FPR): the calibrated figure may be biased and its "
        "interval, which carries the sampling noise only, need not hold it"
    )
    return [*out, legend]


def summary_text(
    results: dict[str, Any],
    out_dir: Path | None = None,
    *,
    width: int = 80,
    cache_note: str | None = None,
) -> str:
    """The summary the command line prints to a pipe (``width`` columns, no colour), as text."""
    from rich.console import Console

    buf = io.StringIO()
    console = Console(file=buf, width=width, highlight=False, color_system=None)
    for part in summary_parts(results, out_dir, cache_note=cache_note):
        console.print(part)
    return buf.getvalue()
