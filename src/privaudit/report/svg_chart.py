"""A chart as a standalone SVG document: every figure of privaudit's reports.

The reports' charts (ROC curves, loss and propensity histograms, the record-risk scatter,
PANORAMIA's curves, the Zero-Run bootstrap) are drawn here as SVG text, without
matplotlib: a vector image that stays sharp at any zoom, and a command that does not spend
about a second importing and warming up a plotting library for a few figures. The charts
are embedded in the page as ``data:image/svg+xml`` images (:func:`svg_base64`).

What is drawn: a plotting area framed in black with its title above (one line per line
of the title), axis labels, tick
marks and labels, light grid lines at the ticks (and, on a logarithmic axis, at the
minor ticks 2-9 of each decade), the series clipped to the plotting area, and a legend
to the right of the plotting area (never over a curve; a series with an empty label has
no entry). A series is drawn in one of three styles (``Series.style``): ``"line"``, a
polyline through its points in the order given, with its own colour, width and dash
pattern; ``"points"``, a dot at each point (a scatter plot); ``"area"``, the polygon
between its points and the bottom of the plotting area, filled at ``opacity`` (a
histogram drawn as steps, with a ``"line"`` series for its outline). On a logarithmic
axis a non-positive value is drawn at ``1e-300`` (far outside the area, so the segment
from it enters from the edge, as matplotlib's ``nonpositive="clip"`` draws it). Points
in the same quarter-pixel cell as the point before them are dropped (the drawing moves by at
most that much), so a curve through 100,000 records stays a few thousand points. Text
widths are estimated (0.6 em per character) to size the legend's column; a label is
never cut.
"""

from __future__ import annotations

import base64
import dataclasses
import math
from collections.abc import Sequence
from xml.sax.saxutils import escape

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["STYLES", "Axis", "Series", "line_chart", "stairs", "svg_base64"]

#: Geometry of the chart, in pixels.
_LEFT, _TOP, _BOTTOM, _GAP = 74.5, 34.5, 52.0, 18.0  # half pixels: 1-pixel lines stay sharp
_FONT = 12.0
_LEGEND_ROW = 17.0
_LEGEND_SAMPLE = 38.0
#: Merge points closer than this (pixels) to the last kept one.
_RESOLUTION = 0.25
#: Where a non-positive value goes on a logarithmic axis.
_LOG_FLOOR = 1e-300
_SUPERSCRIPT = str.maketrans(
    "-0123456789", "\u207b\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079"
)


#: How a series is drawn (module docstring).
STYLES = ("line", "points", "area")


@dataclasses.dataclass(frozen=True)
class Series:
    """One series of the chart: its points, legend label (empty: no legend entry) and style:
    ``style`` (:data:`STYLES`), ``width`` (a line's width, a point's radius), ``dash`` (in
    units of the line width, as matplotlib scales its dash patterns; empty for a solid
    line) and ``opacity`` (of the points or the filled area)."""

    x: NDArray[np.float64]
    y: NDArray[np.float64]
    label: str
    colour: str
    width: float = 2.2
    dash: tuple[float, ...] = ()
    style: str = "line"
    opacity: float = 1.0

    def __post_init__(self) -> None:
        if self.style not in STYLES:
            raise ValueError(
                f"series {self.label!r}: expected a style of {STYLES}, found {self.style!r}"
            )


@dataclasses.dataclass(frozen=True)
class Axis:
    """An axis: its range, its label and whether it is logarithmic (base 10)."""

    lo: float
    hi: float
    label: str
    log: bool = False

    def __post_init__(self) -> None:
        ok = math.isfinite(self.lo) and math.isfinite(self.hi) and self.lo < self.hi
        if not ok or (self.log and self.lo <= 0.0):
            raise ValueError(f"axis {self.label!r}: expected lo < hi (> 0 when log), found {self}")

    def fraction(self, v: ArrayLike) -> NDArray[np.float64]:
        """Where values fall on the axis, 0 at ``lo`` and 1 at ``hi`` (outside: beyond)."""
        a = np.asarray(v, dtype=np.float64)
        if self.log:
            a = np.log10(np.maximum(a, _LOG_FLOOR))
            lo, hi = math.log10(self.lo), math.log10(self.hi)
        else:
            lo, hi = self.lo, self.hi
        out: NDArray[np.float64] = (a - lo) / (hi - lo)
        return out

    def ticks(self) -> tuple[list[float], list[str], list[float]]:
        """Major tick values, their labels, and the minor tick values (log axes only)."""
        if self.log:
            first, last = (
                math.ceil(math.log10(self.lo) - 1e-9),
                math.floor(math.log10(self.hi) + 1e-9),
            )
            major = [10.0**k for k in range(first, last + 1)]
            labels = [
                "1" if k == 0 else f"10{str(k).translate(_SUPERSCRIPT)}"
                for k in range(first, last + 1)
            ]
            minor = [
                m * 10.0**k
                for k in range(first - 1, last + 1)
                for m in range(2, 10)
                if self.lo <= m * 10.0**k <= self.hi
            ]
            return major, labels, minor
        step = _nice_step((self.hi - self.lo) / 5.0)
        start = math.ceil(self.lo / step - 1e-9)
        values = [k * step for k in range(start, math.floor(self.hi / step + 1e-9) + 1)]
        power = math.floor(math.log10(step) + 1e-9)  # a 2.5 step needs one digit more
        decimals = max(0, -power + (1 if round(step / 10.0**power, 6) == 2.5 else 0))
        return values, [f"{v:.{decimals}f}" for v in values], []


def _nice_step(raw: float) -> float:
    """The step of 1, 2, 2.5 or 5 times a power of ten nearest above ``raw``."""
    power = 10.0 ** math.floor(math.log10(raw))
    return next(m * power for m in (1.0, 2.0, 2.5, 5.0, 10.0) if m * power >= raw - 1e-12 * power)


def _text_width(text: str, size: float) -> float:
    return 0.6 * size * len(text)


def _points(px: NDArray[np.float64], py: NDArray[np.float64]) -> str:
    """The ``points`` attribute of a polyline: of each run of consecutive points in the same
    cell of a :data:`_RESOLUTION`-pixel grid only the first is kept (and the last point), so
    every point lies within that distance of a kept one along each axis, and a curve through
    many records costs a point per cell it crosses, not per record."""
    cx, cy = np.floor(px / _RESOLUTION), np.floor(py / _RESOLUTION)
    keep = np.ones(px.size, dtype=bool)
    keep[1:] = (cx[1:] != cx[:-1]) | (cy[1:] != cy[:-1])
    keep[-1:] = True
    return " ".join(
        f"{x:.2f},{y:.2f}" for x, y in zip(px[keep].tolist(), py[keep].tolist(), strict=True)
    )


def line_chart(
    series: Sequence[Series],
    *,
    x: Axis,
    y: Axis,
    title: str,
    size: tuple[float, float] = (560.0, 380.0),
) -> str:
    """An SVG document of ``series`` on the axes ``x`` and ``y``, with ``title`` above (a
    line per ``\\n``) and the legend to the right of the plotting area (``size``: its width
    and height in pixels)."""
    w, h = size
    titles = title.split("\n")
    top = _TOP + (len(titles) - 1) * (_FONT + 3.0)
    listed = [s for s in series if s.label]
    legend_w = max((_text_width(s.label, _FONT - 1) for s in listed), default=0.0)
    legend_w += _LEGEND_SAMPLE + 8.0 if listed else 0.0
    total_w = _LEFT + w + (_GAP + legend_w if listed else 0.0) + 10.0
    title_w = max(_text_width(line, _FONT + 1) for line in titles)
    total_w = max(total_w, title_w + 20.0)  # a title wider than the plot: centred on the image
    title_x = _LEFT + w / 2 if title_w <= w else total_w / 2
    total_h = max(top + h + _BOTTOM, top + len(listed) * _LEGEND_ROW + 10.0)
    right, bottom = _LEFT + w, top + h
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{total_w:.0f}" height="{total_h:.0f}" '
        f'viewBox="0 0 {total_w:.0f} {total_h:.0f}" font-family="DejaVu Sans, Liberation Sans, '
        f'Arial, sans-serif" font-size="{_FONT:g}">',
        f"<title>{escape(' '.join(titles))}</title>",
        f'<rect width="{total_w:.0f}" height="{total_h:.0f}" fill="#ffffff"/>',
        f'<clipPath id="area"><rect x="{_LEFT}" y="{top}" width="{w}" height="{h}"/></clipPath>',
    ]
    grid, marks = _axis_svg(x, True, top, w, h)
    grid_y, marks_y = _axis_svg(y, False, top, w, h)
    out += grid + grid_y
    out.append('<g clip-path="url(#area)" fill="none" stroke-linejoin="round">')
    for s in series:
        px = _LEFT + x.fraction(s.x) * w
        py = bottom - y.fraction(s.y) * h
        out += _drawn(s, px, py, bottom)
    out.append("</g>")
    out += marks + marks_y
    out.append(
        f'<rect x="{_LEFT}" y="{top}" width="{w}" height="{h}" fill="none" stroke="#000" stroke-width="1"/>'
    )
    for i, line in enumerate(titles):
        ty = _TOP - 12 + i * (_FONT + 3.0)
        out.append(
            f'<text x="{title_x:.1f}" y="{ty:.1f}" text-anchor="middle" font-size="{_FONT + 1:g}">{escape(line)}</text>'
        )
    out.append(
        f'<text x="{_LEFT + w / 2:.1f}" y="{bottom + 40}" text-anchor="middle">{escape(x.label)}</text>'
    )
    out.append(
        f'<text transform="translate({_LEFT - 52},{top + h / 2:.1f}) rotate(-90)" text-anchor="middle">{escape(y.label)}</text>'
    )
    lx = right + _GAP
    for i, s in enumerate(listed):
        ly = round(top + 8.0 + i * _LEGEND_ROW)  # whole pixels: the sample's colour is exact
        out.append(_legend_sample(s, lx, ly))
        out.append(
            f'<text x="{lx + _LEGEND_SAMPLE + 6}" y="{ly + 4}" font-size="{_FONT - 1:g}">{escape(s.label)}</text>'
        )
    out.append("</svg>")
    return "\n".join(out)


def _drawn(s: Series, px: NDArray[np.float64], py: NDArray[np.float64], bottom: float) -> list[str]:
    """The SVG elements of one series at pixel positions ``(px, py)`` (module docstring)."""
    if s.style == "points":
        fill = f'fill="{s.colour}" fill-opacity="{s.opacity:g}" stroke="none"'
        return [
            f'<circle cx="{cx:.2f}" cy="{cy:.2f}" r="{s.width:g}" {fill}/>'
            for cx, cy in zip(px.tolist(), py.tolist(), strict=True)
            if math.isfinite(cx) and math.isfinite(cy)
        ]
    if s.style == "area":
        ax = np.concatenate([px[:1], px, px[-1:]])
        ay = np.concatenate([[bottom], py, [bottom]])
        fill = f'fill="{s.colour}" fill-opacity="{s.opacity:g}" stroke="none"'
        return [f'<polygon points="{_points(ax, ay)}" {fill}/>']
    return [f'<polyline points="{_points(px, py)}" {_stroke(s)}/>']


def _legend_sample(s: Series, lx: float, ly: float) -> str:
    """A series' sample in the legend: its line, a dot or a filled box."""
    if s.style == "points":
        return (
            f'<circle cx="{lx + _LEGEND_SAMPLE / 2:g}" cy="{ly}" r="{s.width:g}" fill="{s.colour}" '
            f'fill-opacity="{s.opacity:g}"/>'
        )
    if s.style == "area":
        return (
            f'<rect x="{lx}" y="{ly - 5}" width="{_LEGEND_SAMPLE}" height="10" fill="{s.colour}" '
            f'fill-opacity="{s.opacity:g}"/>'
        )
    return f'<line x1="{lx}" y1="{ly}" x2="{lx + _LEGEND_SAMPLE}" y2="{ly}" {_stroke(s)}/>'


def _axis_svg(
    axis: Axis, horizontal: bool, top: float, w: float, h: float
) -> tuple[list[str], list[str]]:
    """An axis' grid lines (major and minor ticks) and its tick marks and labels: the x axis
    along the bottom of the plotting area (its top edge at ``top``) when ``horizontal``,
    else the y axis on its left."""
    bottom = top + h
    major, labels, minor = axis.ticks()
    grid: list[str] = []
    marks: list[str] = []
    for values, faint in ((minor, True), (major, False)):
        colour, length = ("#e6e6e6", 2.5) if faint else ("#cccccc", 5.0)
        for v in values:
            f = float(axis.fraction(v))
            if horizontal:
                p = _LEFT + f * w
                line = f'x1="{p:.2f}" y1="{top}" x2="{p:.2f}" y2="{bottom}"'
                mark = f'x1="{p:.2f}" y1="{bottom}" x2="{p:.2f}" y2="{bottom + length}"'
            else:
                p = bottom - f * h
                line = f'x1="{_LEFT}" y1="{p:.2f}" x2="{_LEFT + w}" y2="{p:.2f}"'
                mark = f'x1="{_LEFT - length}" y1="{p:.2f}" x2="{_LEFT}" y2="{p:.2f}"'
            grid.append(f'<line {line} stroke="{colour}"/>')
            marks.append(f'<line {mark} stroke="#000"/>')
    for v, text in zip(major, labels, strict=True):
        f = float(axis.fraction(v))
        if horizontal:
            where = f'x="{_LEFT + f * w:.2f}" y="{bottom + 19}" text-anchor="middle"'
        else:
            where = f'x="{_LEFT - 8}" y="{bottom - f * h + 4:.2f}" text-anchor="end"'
        marks.append(f"<text {where}>{escape(text)}</text>")
    return grid, marks


def _stroke(s: Series) -> str:
    dash = ""
    if s.dash:
        dash = f' stroke-dasharray="{",".join(f"{d * s.width:.2f}" for d in s.dash)}"'
    return f'fill="none" stroke="{s.colour}" stroke-width="{s.width:g}"{dash}'


def stairs(edges: ArrayLike, heights: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The points of a histogram's outline, for a :class:`Series`: up from 0 at the first
    edge, across each bin at its height, down to 0 at the last edge (matplotlib's
    ``stairs``): ``(e0, 0), (e0, h0), (e1, h0), (e1, h1), ..., (en, hn-1), (en, 0)``."""
    x = np.repeat(np.asarray(edges, dtype=np.float64), 2)
    y = np.concatenate([[0.0], np.repeat(np.asarray(heights, dtype=np.float64), 2), [0.0]])
    return x, y


def svg_base64(svg: str) -> str:
    """An SVG document base64-encoded, for a ``data:image/svg+xml;base64,`` URL."""
    return base64.b64encode(svg.encode("utf-8")).decode("ascii")
