"""The report's ROC plot a person can read (issue 29, item 5).

Every attack's curve has its own colour and line style (pairwise distinct, read from the
matplotlib figure), the legend sits outside the axes (the low-FPR corner stays visible),
the log-log x axis starts at 1 / n_non_members, and two attacks with the same curve say so.
"""

from __future__ import annotations

import numpy as np
import pytest

from privaudit.attacks.base import BUILTIN_ATTACKS
from privaudit.report import ScoreTable
from privaudit.report.html import ROC_STYLES, roc_figure, roc_styles

DEMO_ATTACKS = BUILTIN_ATTACKS  # the demo runs every built-in attack


def _table(names: tuple[str, ...] = DEMO_ATTACKS, n: int = 400) -> ScoreTable:
    rng = np.random.default_rng(0)
    member = np.arange(n) % 2 == 0
    scores = {
        name: rng.standard_normal(n) + (0.1 + 0.05 * k) * member for k, name in enumerate(names)
    }
    return ScoreTable(np.arange(n), member, scores)


@pytest.mark.parametrize("log_scale", [True, False])
def test_every_curve_has_its_own_colour_and_line_style(log_scale: bool) -> None:
    from matplotlib.colors import to_hex

    fig = roc_figure(_table(), log_scale=log_scale)
    (ax,) = fig.axes
    lines = [ln for ln in ax.get_lines() if not ln.get_label().startswith("chance")]
    n = len(DEMO_ATTACKS)  # 16 since BaVarIA online and offline joined (issue 34)
    assert len(lines) == n
    colours = [to_hex(ln.get_color()) for ln in lines]
    assert len(set(colours)) == min(n, len(ROC_STYLES)) == 14  # 14 colours, no cycle of 10
    table = roc_styles(DEMO_ATTACKS)  # the style each curve was drawn with
    assert [to_hex(table[n][0]) for n in DEMO_ATTACKS] == colours
    assert [ln.get_label().split(" ")[0] for ln in lines] == list(DEMO_ATTACKS)
    assert len(set(table.values())) == n  # (colour, line style) pairwise distinct
    dashes = [dash for _, dash in table.values()]
    assert len(set(dashes)) == 4 and min(dashes.count(d) for d in set(dashes)) >= 2


def test_styles_stay_distinct_past_the_palette() -> None:
    names = [f"attack-{k}" for k in range(3 * len(ROC_STYLES))]
    styles = roc_styles(names)
    assert len(set(styles.values())) == len(names)


def test_legend_is_outside_the_axes_and_the_low_fpr_corner_shows() -> None:
    table = _table()
    fig = roc_figure(table, log_scale=True)
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    (ax,) = fig.axes
    legend = ax.get_legend()
    box_ax = ax.get_window_extent(renderer)
    box_leg = legend.get_window_extent(renderer)
    assert box_leg.x0 >= box_ax.x1  # entirely to the right of the plotting area
    assert not box_ax.overlaps(box_leg)
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    n_neg = int((~table.member).sum())
    assert ax.get_xlim()[0] == pytest.approx(1.0 / n_neg)  # the smallest FPR the data shows
    assert len(legend.get_texts()) == len(DEMO_ATTACKS) + 1  # every attack and chance


def test_an_identical_curve_says_so_in_the_legend() -> None:
    base = _table(("loss", "reference"))
    scores = {**base.scores, "population": 2.0 * base.scores["loss"] + 1.0}  # same ranking
    table = ScoreTable(base.record_ids, base.member, scores)
    fig = roc_figure(table, log_scale=True)
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert any(lbl.startswith("population") and "same curve as loss" in lbl for lbl in labels)
    assert not any("same curve" in lbl for lbl in labels if lbl.startswith("reference"))
    widths = {ln.get_label().split(" ")[0]: ln.get_linewidth() for ln in fig.axes[0].get_lines()}
    assert widths["loss"] > widths["population"] == widths["reference"]  # loss shows beside it
