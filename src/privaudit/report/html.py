"""``report.html``: a self-contained rendering of ``results.json`` and the saved scores.

Plots are drawn with matplotlib's Agg backend on :class:`matplotlib.figure.Figure`
objects (no pyplot global state) and embedded as base64 PNG, so the page needs no
other file and no network. The page is a Jinja2 template shipped as package data
(``report/templates/report.html.j2``); every number in it comes from ``results.json``
except the ROC curves, which are recomputed from the per-record scores.
"""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privaudit.metrics.roc import roc_curve
from privaudit.records import RocCurve
from privaudit.report.analysis_html import analysis_context
from privaudit.report.per_record import record_risk, record_risk_csv
from privaudit.report.results import ScoreTable

#: Rows of the per-record risk table shown in the page (the most exposed records); the
#: downloadable CSV holds every audited record.
RISK_ROWS_SHOWN = 500

__all__ = [
    "ROC_DASHES",
    "ROC_STYLES",
    "fig_to_base64",
    "format_num",
    "format_pct",
    "jinja_environment",
    "render_html",
    "roc_figure",
    "roc_plot_png",
    "roc_polyline",
    "roc_styles",
]


def fig_to_base64(fig: Any) -> str:
    """A matplotlib figure as a base64-encoded PNG (110 dpi), for ``data:`` URLs."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def roc_polyline(roc: RocCurve) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The points to draw for a ROC curve: its exact points, joined by straight segments.

    Consecutive points of :func:`~privaudit.metrics.roc.roc_curve` differ by one block
    of tied scores: only members (a vertical segment), only non-members (horizontal),
    or both (a diagonal: the tied records enter together, and the segment's area is
    the Mann-Whitney one half of the AUC). Joining the points by straight lines draws
    exactly that curve, whose trapezoidal area is the reported AUC; a staircase
    (``step(where="post")``) would under-draw every tie. No point is added, so nothing
    is drawn that no threshold achieves except the chords of the tie blocks.
    """
    return np.asarray(roc.fpr, dtype=np.float64), np.asarray(roc.tpr, dtype=np.float64)


#: Line styles of the ROC curves: solid, dashed, dash-dot, dotted (matplotlib dash tuples).
ROC_DASHES: tuple[tuple[int, tuple[float, ...]], ...] = (
    (0, ()),
    (0, (6, 2)),
    (0, (6, 2, 1.5, 2)),
    (0, (1.5, 1.5)),
)
#: (colour, index into :data:`ROC_DASHES`) of the curves, in the attacks' order: 14
#: distinct colours, and colours of similar hue (blue / navy, red / maroon, green / jade,
#: orange / olive / goldenrod) drawn with different line styles.
ROC_STYLES: tuple[tuple[str, int], ...] = (
    ("#1f77b4", 0),  # blue
    ("#ff7f0e", 0),  # orange
    ("#2ca02c", 0),  # green
    ("#d62728", 0),  # red
    ("#9467bd", 1),  # purple
    ("#8c564b", 1),  # brown
    ("#e377c2", 1),  # pink
    ("#7f7f7f", 1),  # grey
    ("#bcbd22", 2),  # olive
    ("#17becf", 2),  # cyan
    ("#000080", 2),  # navy
    ("#800000", 2),  # maroon
    ("#00a36c", 3),  # jade
    ("#b8860b", 3),  # dark goldenrod
)


def roc_styles(names: Sequence[str]) -> dict[str, tuple[str, tuple[int, tuple[float, ...]]]]:
    """The colour and line style of each attack's ROC curve, pairwise distinct.

    The k-th attack gets ``ROC_STYLES[k % 14]``'s colour and, from the 15th on, the next
    line style each round: every (colour, style) pair differs up to 56 attacks, and the
    colours themselves differ up to 14.
    """
    out: dict[str, tuple[str, tuple[int, tuple[float, ...]]]] = {}
    n = len(ROC_STYLES)
    for k, name in enumerate(names):
        colour, dash = ROC_STYLES[k % n]
        out[name] = (colour, ROC_DASHES[(dash + k // n) % len(ROC_DASHES)])
    return out


def roc_figure(table: ScoreTable, *, log_scale: bool = True) -> Any:
    """The ROC curves of every attack in ``table`` (a matplotlib ``Figure``).

    Every attack has its own colour and line style (:func:`roc_styles`); the legend sits
    outside the axes, to their right, so that no curve is hidden under it, the low-FPR
    corner included; an attack whose curve is exactly an earlier one's (the same ranking
    of the records, e.g. loss and population) says so in the legend. On log-log axes (Carlini et al. 2022, section IV: low-FPR behaviour
    is what matters) the x axis starts at ``1 / n_negatives``, the smallest non-zero FPR
    the data can show; the chance diagonal is drawn for reference.
    """
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8.4, 5.2))
    ax = fig.add_subplot()
    n_neg = int((~table.member).sum())
    n_pos = int(table.member.sum())
    lo = min(1.0 / max(n_neg, 1), 0.5)  # one non-member: still a non-empty axis
    styles = roc_styles(table.attacks)
    curves: list[tuple[str, float, str, NDArray[np.float64], NDArray[np.float64]]] = []
    for name in table.attacks:
        _, s, member = table.scored(name)
        roc = roc_curve(s, member)
        subset = "" if s.size == table.member.size else f", {s.size} records"
        x, y = roc_polyline(roc)
        curves.append((name, roc.auc, subset, x, y))

    def same(i: int, j: int) -> bool:
        xi, yi, xj, yj = curves[i][3], curves[i][4], curves[j][3], curves[j][4]
        return xi.shape == xj.shape and np.array_equal(xi, xj) and np.array_equal(yi, yj)

    for i, (name, auc, subset, x, y) in enumerate(curves):
        # an attack that ranks the records as an earlier one does draws on its curve:
        # the earlier one is drawn wider, so that its colour shows on both sides
        first = next((curves[j][0] for j in range(i) if same(i, j)), None)
        n_after = sum(same(i, j) for j in range(i + 1, len(curves)))
        label = f"{name} (AUC {auc:.3f}{subset})" + (f", same curve as {first}" if first else "")
        colour, dash = styles[name]
        ax.plot(x, y, label=label, lw=1.5 + 1.8 * n_after, color=colour, linestyle=dash)
    ax.plot(
        [lo if log_scale else 0.0, 1.0],
        [lo if log_scale else 0.0, 1.0],
        color="black",
        linestyle=(0, (3, 3)),
        lw=0.8,
        label="chance",
    )
    if log_scale:
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(lo, 1.0)
        ax.set_ylim(min(1.0 / max(n_pos, 1), 0.5), 1.0)
    else:
        ax.set_xlim(0.0, 1.0)
        ax.set_ylim(0.0, 1.0)
    ax.set_title("ROC, log-log axes (low FPR)" if log_scale else "ROC, linear axes", fontsize=10)
    ax.set_xlabel(f"false-positive rate ({n_neg} non-members)")
    ax.set_ylabel(f"true-positive rate ({n_pos} members)")
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(
        fontsize=8,
        loc="upper left",
        bbox_to_anchor=(1.02, 1.0),
        borderaxespad=0.0,
        frameon=False,
        handlelength=3.2,
    )
    return fig


def roc_plot_png(table: ScoreTable, *, log_scale: bool = True) -> str:
    """:func:`roc_figure` as a base64-encoded PNG (the legend inside the image)."""
    return fig_to_base64(roc_figure(table, log_scale=log_scale))


def format_pct(x: Any, digits: int = 2) -> str:
    """``x`` as a percentage with ``digits`` decimals; ``None`` -> ``"n/a"``, strings as is."""
    if x is None:
        return "n/a"
    if isinstance(x, str):
        return x
    return f"{100.0 * float(x):.{digits}f}%"


def format_num(x: Any, digits: int = 3) -> str:
    """``x`` with ``digits`` decimals (``inf``/``nan`` as words); ``None`` -> ``"n/a"``."""
    if x is None:
        return "n/a"
    if isinstance(x, str):
        return x
    v = float(x)
    if not math.isfinite(v):
        return str(v)
    return f"{v:.{digits}f}"


def _rate_label(key: str) -> str:
    return format_pct(float(key), digits=(1 if float(key) < 0.01 else 0))


def _flatten(d: Mapping[str, Any], prefix: str = "") -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping) and v:
            rows.extend(_flatten(v, key + "."))
        elif isinstance(v, list):
            rows.append((key, ", ".join(map(str, v)) if v else "(none)"))
        else:
            rows.append((key, "(none)" if v is None else str(v)))
    return rows


def jinja_environment(*packages: str) -> Any:
    """The Jinja2 environment of the report templates (autoescaped, filters ``pct``, ``num``).

    Templates are looked up in the ``templates`` folder of each of ``packages`` (a
    procedure's own pages, e.g. ``"privaudit.zero_run"``), then in the report core's.
    """
    from jinja2 import ChoiceLoader, Environment, PackageLoader, select_autoescape

    env = Environment(
        loader=ChoiceLoader(
            [PackageLoader(p, "templates") for p in (*packages, "privaudit.report")]
        ),
        autoescape=select_autoescape(["html", "j2"]),
        keep_trailing_newline=True,
    )
    env.filters["pct"] = format_pct
    env.filters["num"] = format_num
    return env


def render_html(
    results: Mapping[str, Any], table: ScoreTable, *, context: Mapping[str, Any] | None = None
) -> str:
    """Render the report page for one audit.

    Parameters
    ----------
    results : mapping
        A validated ``results.json`` document.
    table : ScoreTable
        The per-record scores it was computed from (for the ROC curves).
    context : mapping, optional
        Template variables of a procedure's own section (PANORAMIA's ``panoramia``, from
        :func:`privaudit.panoramia.report.panoramia_context`); a section without its
        variables is not shown.
    """
    env = jinja_environment()
    env.filters["rate_label"] = _rate_label

    attacks = list(results["attacks"])
    fpr_keys = sorted({k for a in attacks for k in a.get("tpr_at_fpr", {})}, key=float)
    tpr_keys = sorted({k for a in attacks for k in a.get("fpr_at_tpr", {})}, key=float)
    agreement = results.get("agreement")
    ag_rows: list[dict[str, Any]] = []
    if agreement:
        names = agreement["names"]
        train = np.asarray(agreement["train"], dtype=float)
        test = np.asarray(agreement["test"], dtype=float)
        for i, n in enumerate(names):
            cells: list[dict[str, Any]] = []
            for j in range(len(names)):
                if i == j:
                    cells.append({"value": None, "kind": "diag"})
                elif j > i:
                    cells.append({"value": float(train[i, j]), "kind": "train"})
                else:
                    cells.append({"value": float(test[i, j]), "kind": "test"})
            ag_rows.append({"name": n, "cells": cells})

    risk = record_risk(table)
    csv_text = record_risk_csv(risk)
    shown = [risk.row(int(i)) for i in risk.order[:RISK_ROWS_SHOWN]]
    template = env.get_template("report.html.j2")
    return template.render(
        risk_attacks=list(risk.attacks),
        risk_rows=shown,
        risk_n=int(risk.record_ids.size),
        risk_csv_b64=base64.b64encode(csv_text.encode("utf-8")).decode("ascii"),
        r=results,
        attacks=attacks,
        fpr_keys=fpr_keys,
        tpr_keys=tpr_keys,
        roc_loglog=roc_plot_png(table, log_scale=True),
        roc_linear=roc_plot_png(table, log_scale=False),
        agreement=agreement,
        agreement_rows=ag_rows,
        settings_rows=_flatten(results["settings"]),
        game=results.get("game"),
        timings=results.get("timings") or {},
        **analysis_context(results),
        **(context or {}),
    )
