"""The readable summary of ``privaudit zero-run``: headline, bounds, diagnostics, tests.

:func:`render_zero_run_summary` prints a :class:`~privaudit.zero_run.ZeroRunResult`
(or the result an example computed) on a rich console; re-exported by
:mod:`privaudit.zero_run.cli`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from privaudit.records import json_number

__all__ = ["render_zero_run_summary"]


def _eps_estimator_text(h: Mapping[str, Any]) -> str:
    """ ", eps from E" when the headline's eps comes from another estimator than its mu."""
    e = h.get("epsilon_estimator")
    return "" if e is None or e == h.get("estimator") else f" (eps from {e})"


def _rule_text(h: dict[str, Any]) -> str:
    """How the headline combined the estimators, in words."""
    if h.get("rule") == "max":
        return (
            f"largest over the admitted estimators, each at beta = "
            f"{float(h.get('beta_per_estimator', 0.0)):.3g}"
        )
    return "smallest over the estimators"


def _fmt(v: Any, digits: int = 3) -> str:
    """A bound or statistic with ``digits`` decimals ("n/a" for None, "inf" kept as is)."""
    if isinstance(v, str):
        return v
    x = json_number(v)
    if x is None:
        return "n/a"
    if not math.isfinite(x):
        return str(x)
    return f"{x:.{digits}f}"


def _pct(v: Any) -> str:
    """A fraction as a percentage with one decimal ("n/a" for None)."""
    x = json_number(v)
    return "n/a" if x is None else f"{100.0 * x:.1f}%"


def render_zero_run_summary(
    result: Any, console: Console, *, features: Sequence[str] | None = None
) -> None:
    """Print a readable summary of a :class:`~privaudit.zero_run.ZeroRunResult`.

    The headline bound (or that it was refused), one row per propensity estimator with the
    uncorrected, global and pointwise mu and eps bounds side by side (plus the bootstrap lower
    quantile when present), the diagnostics, the falsification tests, the placebo checks,
    then warnings (bold) and notes.
    """
    _print_header(result, console, features)
    console.print(_bounds_table(result))
    console.print(_diagnostics_table(result))
    console.print(_falsification_table(result))
    if any(e.get("placebo") for e in result.estimators):
        console.print(_placebo_table(result))
    for w in result.warnings:
        console.print(f"[bold]warning: {escape(w)}[/bold]", highlight=False)
    for n in result.notes:
        console.print(f"note: {escape(n)}", highlight=False)


def _print_header(result: Any, console: Console, features: Sequence[str] | None) -> None:
    """The counts, the feature columns used (always shown: only the user can tell whether
    they describe x alone) and the headline bound."""
    used = list(features) if features is not None else result.settings.get("features")
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
    if h.get("refused"):
        console.print(
            "[bold]headline: REFUSED[/bold] -- no bound is printed: " + escape(str(h.get("basis"))),
            highlight=False,
        )
        return
    console.print(
        f"[bold]headline[/bold]: mu >= [bold]{_fmt(h.get('mu_lower_bound'))}[/bold] (mu-GDP), "
        f"eps >= [bold]{_fmt(h.get('epsilon_lower_bound'))}[/bold] (pure eps-DP); "
        + escape(
            f"{h.get('correction')} correction, estimator {h.get('estimator')}"
            + _eps_estimator_text(h)
            + f" ({_rule_text(h)}), {h.get('basis')}"
        ),
        highlight=False,
    )


def _bounds_table(result: Any) -> Table:
    """One row per estimator: uncorrected, global and pointwise mu and eps side by side
    (plus the bootstrap lower quantile when there is one) and the (r, v) counts."""
    unc = result.uncorrected
    has_boot = any(e.get("bootstrap") for e in result.estimators)
    bounds = Table(
        title="Bounds: uncorrected (not valid under shift) vs corrected; an estimator marked "
        "(failed checks) or (refused) is not a valid corrected bound"
    )
    bounds.add_column("estimator")
    for col in ("mu uncorr.", "mu global", "mu pointwise"):
        bounds.add_column(col, justify="right")
    if has_boot:
        bounds.add_column("mu pw. boot. q", justify="right")
    for col in ("eps uncorr.", "eps global", "eps pointwise", "r/v uncorr.", "r/v pw."):
        bounds.add_column(col, justify="right")
    for e in result.estimators:
        g, p = e["global"], e["pointwise"]
        g_refused = bool(e.get("global_refused"))
        row = [
            escape(str(e["name"]) + _check_mark(e)),
            _fmt(unc.get("mu_lower_bound")),
            "refused" if g_refused else _fmt(g.get("mu_lower_bound")),
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
            "refused" if g_refused else _fmt(g.get("epsilon_lower_bound")),
            _fmt(p.get("epsilon_lower_bound")),
            f"{uc.get('r', '?')}/{uc.get('v', '?')}",
            f"{pc.get('r', '?')}/{pc.get('v', '?')}",
        ]
        bounds.add_row(*row)
    return bounds


def _check_mark(e: Any) -> str:
    """`` (refused)`` for a refused family, `` (failed checks)`` for an estimator that was
    falsified or failed the placebo check, else empty: its corrected bounds are not valid."""
    if e.get("pointwise_refused"):
        return " (refused)"
    falsified = any(f.get("rejected") for f in e.get("falsification") or [])
    if falsified or (e.get("placebo") or {}).get("failed"):
        return " (failed checks)"
    return ""


_DIAGNOSTIC_COLUMNS = (
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
)


def _diagnostics_table(result: Any) -> Table:
    """One row per estimator: calibration and overlap diagnostics (overlap ok / poor)."""
    diag = Table(title="Propensity diagnostics (held-out, cross-fitted)")
    diag.add_column("estimator")
    for col in _DIAGNOSTIC_COLUMNS:
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
    return diag


def _placebo_table(result: Any) -> Table:
    """One row per estimator: its pointwise audit of the placebo score (truth 0) and verdict."""
    table = Table(title="Placebo check (the same audit of a features-only score: truth 0)")
    for col in ("propensity model", "mu placebo", "eps placebo", "beta", "verdict"):
        table.add_column(col, justify="left" if col in ("propensity model", "verdict") else "right")
    for e in result.estimators:
        p = e.get("placebo")
        if not p:
            continue
        table.add_row(
            escape(str(e["name"])),
            _fmt(p.get("mu_lower_bound")),
            _fmt(p.get("epsilon_lower_bound")),
            _fmt(p.get("beta"), 4),
            "[red]failed (left out of the headline)[/red]" if p.get("failed") else "passed",
        )
    return table


def _falsification_table(result: Any) -> Table:
    """One row per (estimator, challenger) pair: the falsification test's p-value and verdict."""
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
    return fals
