"""The report's plots: matplotlib figures embedded in a page as base64 PNG.

Figures are drawn with matplotlib's Agg backend on :class:`matplotlib.figure.Figure`
objects (no pyplot global state; matplotlib is imported only when a figure is drawn)
and turned into ``data:`` URLs by :func:`fig_to_base64`, which every report section
uses. The membership report's ROC curves (:func:`roc_figure`) are recomputed from the
per-record scores.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privaudit.metrics.roc import roc_curve
from privaudit.records import RocCurve
from privaudit.report.results import ScoreTable

__all__ = [
    "ROC_DASHES",
    "ROC_STYLES",
    "fig_to_base64",
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
