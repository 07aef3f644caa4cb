"""The membership report's ROC plots, embedded in a page as ``data:`` URLs.

The ROC curves (:func:`roc_svg`) are recomputed from the per-record scores and drawn as
SVG (:mod:`privaudit.report.svg_chart`, which draws every report's charts), without
matplotlib.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from privaudit.metrics.roc import roc_curve
from privaudit.records import RocCurve
from privaudit.report.results import ScoreTable
from privaudit.report.svg_chart import Axis, Series, line_chart, svg_base64

__all__ = [
    "ROC_DASHES",
    "ROC_STYLES",
    "roc_plot_svg",
    "roc_polyline",
    "roc_styles",
    "roc_svg",
]


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


#: Line styles of the ROC curves: solid, dashed, dash-dot, dotted ((offset, on-off pattern),
#: the pattern in units of the line width, as matplotlib's dash tuples).
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


def roc_svg(table: ScoreTable, *, log_scale: bool = True) -> str:
    """The ROC curves of every attack in ``table``, as an SVG document (:mod:`.svg_chart`).

    Every attack has its own colour and line style (:func:`roc_styles`); the legend sits
    outside the axes, to their right, so that no curve is hidden under it, the low-FPR
    corner included; an attack whose curve is exactly an earlier one's (the same ranking
    of the records, e.g. loss and population) says so in the legend and the earlier one
    is drawn wider, so that its colour shows on both sides. On log-log axes (Carlini et
    al. 2022, section IV: low-FPR behaviour is what matters) the x axis starts at
    ``1 / n_negatives``, the smallest non-zero FPR the data can show, and the y axis at
    ``1 / n_positives``; the chance diagonal is drawn for reference.
    """
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

    series = []
    for i, (name, auc, subset, x, y) in enumerate(curves):
        first = next((curves[j][0] for j in range(i) if same(i, j)), None)
        n_after = sum(same(i, j) for j in range(i + 1, len(curves)))
        label = f"{name} (AUC {auc:.3f}{subset})" + (f", same curve as {first}" if first else "")
        colour, dash = styles[name]
        series.append(Series(x, y, label, colour, width=2.2 + 2.6 * n_after, dash=dash[1]))
    start = lo if log_scale else 0.0
    series.append(
        Series(np.array([start, 1.0]), np.array([start, 1.0]), "chance", "#000000", 1.1, (3, 3))
    )
    y_lo = min(1.0 / max(n_pos, 1), 0.5) if log_scale else 0.0
    return line_chart(
        series,
        x=Axis(
            lo if log_scale else 0.0, 1.0, f"false-positive rate ({n_neg} non-members)", log_scale
        ),
        y=Axis(y_lo, 1.0, f"true-positive rate ({n_pos} members)", log_scale),
        title="ROC, log-log axes (low FPR)" if log_scale else "ROC, linear axes",
    )


def roc_plot_svg(table: ScoreTable, *, log_scale: bool = True) -> str:
    """:func:`roc_svg` base64-encoded, for a ``data:image/svg+xml;base64,`` URL."""
    return svg_base64(roc_svg(table, log_scale=log_scale))
