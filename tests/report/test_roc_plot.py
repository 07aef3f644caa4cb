"""The report's ROC plot a person can read (issue 29, item 5), drawn as SVG (issue 32).

Every attack's curve has its own colour and line style (pairwise distinct, read from the
SVG document), the legend sits outside the axes (the low-FPR corner stays visible),
the log-log x axis starts at 1 / n_non_members, two attacks with the same curve say so,
and the drawn polylines are the exact ROC curves within the chart's resolution.
"""

from __future__ import annotations

import base64
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from privaudit.attacks.base import BUILTIN_ATTACKS
from privaudit.metrics.roc import roc_curve
from privaudit.report import ScoreTable
from privaudit.report.html import ROC_STYLES, roc_plot_svg, roc_styles, roc_svg
from privaudit.report.svg_chart import Axis, Series, line_chart

DEMO_ATTACKS = BUILTIN_ATTACKS  # the demo runs every built-in attack
NS = {"s": "http://www.w3.org/2000/svg"}


def _table(names: tuple[str, ...] = DEMO_ATTACKS, n: int = 400) -> ScoreTable:
    rng = np.random.default_rng(0)
    member = np.arange(n) % 2 == 0
    scores = {
        name: rng.standard_normal(n) + (0.1 + 0.05 * k) * member for k, name in enumerate(names)
    }
    return ScoreTable(np.arange(n), member, scores)


def _parts(svg: str) -> tuple[ET.Element, list[ET.Element], list[ET.Element], list[str]]:
    """The document, its curves (clipped polylines), its legend lines and legend texts."""
    root = ET.fromstring(svg)
    curves = root.findall("s:g/s:polyline", NS)
    frame = _frame(root)
    right = float(frame.get("x", 0)) + float(frame.get("width", 0))
    legend = [ln for ln in root.findall("s:line", NS) if float(ln.get("x1", 0)) > right]
    texts = [t.text or "" for t in root.findall("s:text", NS) if float(t.get("x", 0)) > right]
    return root, curves, legend, texts


def _frame(root: ET.Element) -> ET.Element:
    return next(r for r in root.findall("s:rect", NS) if r.get("stroke") == "#000")


@pytest.mark.parametrize("log_scale", [True, False])
def test_every_curve_has_its_own_colour_and_line_style(log_scale: bool) -> None:
    _, curves, legend, texts = _parts(roc_svg(_table(), log_scale=log_scale))
    n = len(DEMO_ATTACKS)  # 18 since BaVarIA and InfoRMIA joined (issue 34)
    assert len(curves) == n + 1 and curves[-1].get("stroke") == "#000000"  # and chance
    colours = [c.get("stroke") for c in curves[:n]]
    assert len(set(colours)) == min(n, len(ROC_STYLES)) == 14  # 14 colours, no cycle of 10
    table = roc_styles(DEMO_ATTACKS)  # the style each curve was drawn with
    assert [table[a][0] for a in DEMO_ATTACKS] == colours
    assert [t.split(" ")[0] for t in texts] == [*DEMO_ATTACKS, "chance"]
    assert [ln.get("stroke") for ln in legend] == [c.get("stroke") for c in curves]
    drawn = [(c.get("stroke"), c.get("stroke-dasharray")) for c in curves[:n]]
    assert len(set(drawn)) == n  # (colour, line style) pairwise distinct in the document
    assert len(set(table.values())) == n
    dashes = [dash for _, dash in table.values()]
    assert len(set(dashes)) == 4 and min(dashes.count(d) for d in set(dashes)) >= 2


def test_styles_stay_distinct_past_the_palette() -> None:
    names = [f"attack-{k}" for k in range(3 * len(ROC_STYLES))]
    styles = roc_styles(names)
    assert len(set(styles.values())) == len(names)


def test_legend_is_outside_the_axes_and_the_low_fpr_corner_shows() -> None:
    table = _table()
    root, _, legend, texts = _parts(roc_svg(table, log_scale=True))
    frame = _frame(root)
    right = float(frame.get("x", 0)) + float(frame.get("width", 0))
    assert all(float(ln.get("x1", 0)) > right for ln in legend)  # right of the plotting area
    assert len(texts) == len(DEMO_ATTACKS) + 1  # every attack and chance
    assert float(root.get("width", 0)) > right + max(0.6 * 11 * len(t) for t in texts)
    ticks = [t.text for t in root.findall("s:text", NS) if t.text and t.text.startswith("10")]
    n_neg = int((~table.member).sum())
    # x from 1/200 = 5e-3: the decades 10^-2 .. 10^-1 labelled (and 1); y from 1/200 too
    assert "10\u207b\u00b2" in ticks and "10\u207b\u00b3" not in ticks and n_neg == 200


def test_an_identical_curve_says_so_in_the_legend() -> None:
    base = _table(("loss", "reference"))
    scores = {**base.scores, "population": 2.0 * base.scores["loss"] + 1.0}  # same ranking
    table = ScoreTable(base.record_ids, base.member, scores)
    _, curves, _, texts = _parts(roc_svg(table, log_scale=True))
    assert any(t.startswith("population") and "same curve as loss" in t for t in texts)
    assert not any("same curve" in t for t in texts if t.startswith("reference"))
    widths = [float(c.get("stroke-width", 0)) for c in curves[:3]]  # loss, reference, population
    assert widths[0] > widths[2] == widths[1]  # loss shows beside population


@pytest.mark.parametrize("log_scale", [True, False])
def test_the_drawn_polyline_is_the_exact_roc_curve(log_scale: bool) -> None:
    """Every point of the exact ROC curve lies within the chart's resolution of the drawn
    polyline's vertices (merging only drops points within a quarter pixel of a kept one),
    and the vertices are points of the curve."""
    table = _table(("loss", "reference"), n=3000)
    root, curves, _, _ = _parts(roc_svg(table, log_scale=log_scale))
    frame = _frame(root)
    x0, y0 = float(frame.get("x", 0)), float(frame.get("y", 0))
    w, h = float(frame.get("width", 0)), float(frame.get("height", 0))
    n_neg, n_pos = int((~table.member).sum()), int(table.member.sum())
    x_axis = Axis(1 / n_neg if log_scale else 0.0, 1.0, "x", log_scale)
    y_axis = Axis(1 / n_pos if log_scale else 0.0, 1.0, "y", log_scale)
    for name, poly in zip(("loss", "reference"), curves, strict=False):
        roc = roc_curve(table.scores[name], table.member)
        px = x0 + x_axis.fraction(roc.fpr) * w
        py = y0 + h - y_axis.fraction(roc.tpr) * h
        drawn = np.array([p.split(",") for p in (poly.get("points") or "").split()], float)
        exact = np.column_stack([px, py])
        assert 1 < len(drawn) <= len(exact)
        d = np.abs(exact[:, None, :] - drawn[None, :, :]).max(axis=2)
        assert d.min(axis=1).max() <= 0.25 + 0.006  # each exact point near a drawn vertex
        assert d.min(axis=0).max() <= 0.006  # each vertex is an exact point (2 decimals)


def test_chart_is_a_valid_image_for_a_data_url() -> None:
    svg = base64.b64decode(roc_plot_svg(_table(("loss",)), log_scale=True)).decode("utf-8")
    root = ET.fromstring(svg)
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert float(root.get("width", 0)) > 100 and float(root.get("height", 0)) > 100
    with pytest.raises(ValueError, match="expected lo < hi"):
        line_chart(
            [Series(np.ones(2), np.ones(2), "a", "#000")],
            x=Axis(1, 1, "x"),
            y=Axis(0, 1, "y"),
            title="t",
        )
    with pytest.raises(ValueError, match="> 0 when log"):
        Axis(0.0, 1.0, "x", log=True)


def test_labels_are_escaped() -> None:
    svg = line_chart(
        [Series(np.array([0.0, 1.0]), np.array([0.0, 1.0]), "a<b & c", "#123456")],
        x=Axis(0.0, 1.0, "x <1>"),
        y=Axis(0.0, 1.0, "y"),
        title="t & u",
    )
    root = ET.fromstring(svg)  # parses: every label escaped
    assert "a<b & c" in [t.text for t in root.findall("s:text", NS)]


@pytest.mark.parametrize(
    ("lo", "hi", "labels"),
    [
        (0.0, 1.0, ["0.0", "0.2", "0.4", "0.6", "0.8", "1.0"]),
        (0.0, 1.05, ["0.00", "0.25", "0.50", "0.75", "1.00"]),
        (0.0, 12.0, ["0.0", "2.5", "5.0", "7.5", "10.0"]),
        (-3.0, 40.0, ["0", "10", "20", "30", "40"]),
    ],
)
def test_linear_tick_labels_show_every_digit_of_the_ticks(
    lo: float, hi: float, labels: list[str]
) -> None:
    values, shown, minor = Axis(lo, hi, "x").ticks()
    assert shown == labels and minor == []
    assert [float(t) for t in shown] == pytest.approx(values)


def test_loss_histogram_is_the_step_outline_of_each_sets_fractions() -> None:
    from privaudit.report.analysis_html import loss_histogram_svg

    def entry(name: str, counts: list[int]) -> dict[str, object]:
        hist = {"edges": [0.0, 1.0, 2.0, 4.0], "counts": counts}
        return {"fpr": 0.05, "name": name, "n_records": sum(counts), "loss": {"histogram": hist}}

    sets = [entry("a", [2, 1, 1]), entry("b", [0, 3, 1]), {**entry("c", [1, 0, 0]), "fpr": 0.3}]
    root = ET.fromstring(base64.b64decode(loss_histogram_svg(sets, 0.05) or "").decode())
    frame = _frame(root)
    x0, y0 = float(frame.get("x", 0)), float(frame.get("y", 0))
    w, h = float(frame.get("width", 0)), float(frame.get("height", 0))
    curves = root.findall("s:g/s:polyline", NS)
    assert len(curves) == 2  # the sets at FPR 0.05 only
    for poly, fracs in zip(curves, ([0.5, 0.25, 0.25], [0.0, 0.75, 0.25]), strict=True):
        drawn = np.array([p.split(",") for p in (poly.get("points") or "").split()], float)
        data_x = (drawn[:, 0] - x0) / w * 4.0  # the x axis spans the edges 0 .. 4
        data_y = (y0 + h - drawn[:, 1]) / h * (1.05 * 0.75)  # 0 .. 1.05 x the largest fraction
        outline = zip(
            [0, 0, 1, 1, 2, 2, 4, 4],
            [0, fracs[0], fracs[0], fracs[1], fracs[1], fracs[2], fracs[2], 0],
            strict=True,
        )
        want: list[tuple[float, float]] = []
        for pt in outline:  # a repeated point is drawn once
            if not want or want[-1] != pt:
                want.append(pt)
        np.testing.assert_allclose(np.column_stack([data_x, data_y]), want, atol=0.01)
    assert loss_histogram_svg(sets, 0.5) is None  # no set at that FPR
