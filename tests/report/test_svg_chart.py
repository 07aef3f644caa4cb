"""The SVG charts of every report (``privaudit.report.svg_chart``): points, filled areas,
legend entries, multi-line titles and the step outline of a histogram, read back from the
SVG document; and the record-risk scatter's dots at the records' two risks."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pytest

from privaudit.report.svg_chart import Axis, Series, line_chart, stairs

NS = {"s": "http://www.w3.org/2000/svg"}
X, Y = Axis(0.0, 10.0, "x"), Axis(0.0, 1.0, "y")


def _frame(root: ET.Element) -> tuple[float, float, float, float]:
    r = next(e for e in root.findall("s:rect", NS) if e.get("stroke") == "#000")
    return tuple(float(r.get(k)) for k in ("x", "y", "width", "height"))  # type: ignore[return-value]


def _pixels(root: ET.Element, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    left, top, w, h = _frame(root)
    return left + X.fraction(x) * w, top + h - Y.fraction(y) * h


def test_points_are_dots_at_their_pixels_and_areas_close_at_the_bottom() -> None:
    x = np.array([1.0, 2.5, 7.0, np.nan])
    y = np.array([0.2, 0.9, 0.5, 0.3])
    ex, ey = stairs([0.0, 5.0, 10.0], [0.4, 0.8])
    svg = line_chart(
        [
            Series(x, y, "dots", "#d62728", 4.0, style="points", opacity=0.75),
            Series(ex, ey, "filled", "#1f77b4", style="area", opacity=0.35),
            Series(ex, ey, "", "#1f77b4", 1.2),
        ],
        x=X,
        y=Y,
        title="t",
    )
    root = ET.fromstring(svg)
    dots = root.findall("s:g/s:circle", NS)
    px, py = _pixels(root, x[:3], y[:3])
    assert len(dots) == 3  # the NaN point is not drawn
    got = np.array([[float(d.get("cx")), float(d.get("cy"))] for d in dots])
    np.testing.assert_allclose(got, np.c_[px, py], atol=0.006)
    assert {(d.get("r"), d.get("fill"), d.get("fill-opacity")) for d in dots} == {
        ("4", "#d62728", "0.75")
    }
    (poly,) = root.findall("s:g/s:polygon", NS)
    pts = np.array([p.split(",") for p in poly.get("points").split()], dtype=float)
    left, top, w, h = _frame(root)
    sx, sy = _pixels(root, ex, ey)
    assert pts[0, 1] == pts[-1, 1] == pytest.approx(top + h)  # down to the bottom edge
    # the outline's points, closed along the bottom edge (a point repeated right after
    # itself drawn once, but for the last)
    want = np.r_[[[sx[0], top + h]], np.c_[sx, sy], [[sx[-1], top + h]]]
    moved = np.any(np.abs(np.diff(want, axis=0)) > 0.25, axis=1)
    want = want[np.r_[True, moved[:-1], True]]
    np.testing.assert_allclose(pts, want, atol=0.006)
    assert poly.get("fill-opacity") == "0.35" and poly.get("stroke") == "none"
    (outline,) = root.findall("s:g/s:polyline", NS)
    assert outline.get("stroke") == "#1f77b4"
    # legend: the two labelled series (a dot, a filled box), not the unlabelled outline
    texts = [t.text for t in root.findall("s:text", NS) if float(t.get("x", 0)) > left + w]
    assert texts == ["dots", "filled"]
    assert len([c for c in root.findall("s:circle", NS)]) == 1
    assert len([r for r in root.findall("s:rect", NS) if r.get("fill") == "#1f77b4"]) == 1


def test_a_title_of_several_lines_moves_the_plot_down_and_widens_the_image() -> None:
    one = ET.fromstring(line_chart([], x=X, y=Y, title="a"))
    long_line = "x" * 150
    three = ET.fromstring(line_chart([], x=X, y=Y, title=f"a\nb\n{long_line}"))
    assert _frame(three)[1] == _frame(one)[1] + 2 * 15.0
    titles = [t.text for t in three.findall("s:text", NS) if t.text in ("a", "b", long_line)]
    assert titles == ["a", "b", long_line]
    assert three.find("s:title", NS).text == f"a b {long_line}"
    assert float(three.get("width")) >= 0.6 * 13 * 150 + 20 > float(one.get("width"))


def test_stairs_is_the_histogram_outline() -> None:
    x, y = stairs([0.0, 1.0, 3.0], [2.0, 5.0])
    assert x.tolist() == [0.0, 0.0, 1.0, 1.0, 3.0, 3.0]
    assert y.tolist() == [0.0, 2.0, 2.0, 5.0, 5.0, 0.0]


def test_an_unknown_style_is_refused() -> None:
    with pytest.raises(ValueError, match="style"):
        Series(np.zeros(1), np.zeros(1), "s", "#000", style="bars")


def test_no_report_imports_a_plotting_library() -> None:
    """Every report's charts (membership, record-risk, Zero-Run, PANORAMIA) render in a fresh
    interpreter without matplotlib (not a dependency of the package) ever being imported."""
    code = """
import sys, types
import numpy as np
sys.path.insert(0, "tests/report")
from privaudit.zero_run import zero_run_audit
from privaudit.zero_run.report import render_zero_run_html
from privaudit.record_risk.report import risk_scatter_svg
from privaudit.panoramia.report import eps_recall_svg, precision_recall_svg
from privaudit.report import ScoreTable
from privaudit.report.html import roc_svg
from panoramia_section import panoramia_fixture
rng = np.random.default_rng(0)
member = rng.random(300) < 0.5
x = rng.standard_normal(300)
res = zero_run_audit(rng.standard_normal(300) + member, member, propensity={"flat": np.full(300, 0.5)})
assert "data:image/svg+xml" in render_zero_run_html(res)
ns = types.SimpleNamespace
rr = ns(risks={"model-seeded": {"auc": np.array([0.6, 0.9])}, "traditional": {"auc": np.array([0.7, 0.5])}},
        vulnerable=np.array([True, False]), config=ns(thresholds=(0.6, 0.8)),
        comparison={}, table=list, to_dict=dict)
assert "<circle" in risk_scatter_svg(rr)
section, _, _ = panoramia_fixture(rmrn=True)
assert precision_recall_svg(section) and eps_recall_svg(section)
assert "<polyline" in roc_svg(ScoreTable(np.arange(300), member, {"loss": x + member}))
loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("matplotlib", "PIL"))
assert not loaded, loaded
print("ok")
"""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]
