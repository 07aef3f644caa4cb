"""The HTML reports as a person sees them (issue 8, item 7).

In headless Chromium (Debian package ``chromium``): no script error or console error,
every figure decoded and laid out with a non-zero size, no network request, the
per-record risk table sorts when its headers are clicked, and a full-page screenshot
is taken (and is not blank). Without Chromium these tests are skipped with the reason
printed (``-ra``); the checks that need no browser (no external URL, the CSV download)
always run.

The ROC plot (issue 29, item 5) is read off the screenshot itself: every attack's colour
is on screen inside the plot's image, and the legend lies right of the plotting area, not
over its low-FPR corner; with the demo's 14 attacks (slow) and with 14 synthetic ones.

Set ``PRIVAUDIT_SCREENSHOT_DIR`` to keep the screenshots (e.g. as CI artifacts).
"""

from __future__ import annotations

import base64
import csv
import io
import math
import os
import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from chromium_probe import find_chromium, probe_page

from conftest import SMALL_RUN
from privaudit.attacks import attack_names
from privaudit.report import ScoreTable
from privaudit.report.html import roc_plot_svg, roc_styles
from privaudit.zero_run import zero_run_audit
from privaudit.zero_run.report import write_zero_run_report

CHROMIUM = find_chromium()
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None,
    reason="headless browser test skipped: no chromium on PATH "
    "(Debian: apt-get install -y chromium)",
)


@pytest.fixture(scope="module")
def mia_report(small_run: Path) -> Path:
    """The small membership run's report (``conftest.SMALL_RUN``)."""
    return small_run


@pytest.fixture(scope="module")
def zero_run_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = np.random.default_rng(4)
    m = 300
    x = rng.standard_normal(m)
    pi = 1.0 / (1.0 + np.exp(-x))
    member = rng.random(m) < pi
    scores = rng.standard_normal(m) + 1.5 * member + x
    res = zero_run_audit(scores, member, propensity={"oracle": pi})
    out = tmp_path_factory.mktemp("zr") / "report"
    write_zero_run_report(res, out)
    return out


def _keep(shot: Path, name: str) -> None:
    keep = os.environ.get("PRIVAUDIT_SCREENSHOT_DIR")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(keep) / name)


def _check_page(found: dict[str, Any], shot: Path, min_images: int) -> None:
    assert found["errors"] == [], found["errors"]
    assert found["console"] == [], found["console"]
    assert found["chromium_console"] == [], found["chromium_console"]
    assert found["resources"] == [] or all(r.startswith("data:") for r in found["resources"])
    images = found["images"]
    assert len(images) >= min_images
    for im in images:  # decoded, laid out, visible
        assert im["complete"] and im["visible"], im
        assert im["naturalWidth"] > 100 and im["naturalHeight"] > 100, im
        assert im["width"] > 100 and im["height"] > 100, im
    from matplotlib.image import imread

    pixels = imread(shot)
    assert pixels.shape[0] >= 1000 and pixels.shape[1] >= 1000
    assert float(pixels[..., :3].std()) > 0.05  # not a blank page


def _sorted_ok(values: list[str | None], descending: bool) -> bool:
    nums = [math.inf if v in (None, "") else float(v) for v in values]  # blanks sort last
    finite = [v for v in nums if math.isfinite(v)]
    want = sorted(finite, reverse=descending)
    blanks = [v for v in nums if not math.isfinite(v)]
    return nums == (want + blanks if not descending else blanks + want)


@needs_chromium
def test_membership_report_in_chromium(mia_report: Path, tmp_path: Path) -> None:
    assert CHROMIUM is not None
    shot = tmp_path / "report.png"
    found = probe_page(CHROMIUM, mia_report / "report.html", screenshot=shot)
    _keep(shot, "membership-report.png")
    _check_page(found, shot, min_images=2)
    table = ScoreTable.load(mia_report)
    assert found["n_rows"] == table.member.size  # under the 500-row cap: every record
    assert set(found["sorts"]) == {"min flagging FPR", SMALL_RUN["attacks"][-1]}
    for col in found["sorts"].values():
        assert col["aria"] == "descending"  # two clicks: ascending, then descending
        assert _sorted_ok(col["asc"], descending=False), col["asc"][:20]
        assert _sorted_ok(col["desc"], descending=True), col["desc"][:20]
        assert sorted(map(str, col["asc"])) == sorted(map(str, col["desc"]))


@needs_chromium
def test_zero_run_report_in_chromium(zero_run_report: Path, tmp_path: Path) -> None:
    assert CHROMIUM is not None
    shot = tmp_path / "zero-run.png"
    found = probe_page(CHROMIUM, zero_run_report / "report.html", screenshot=shot)
    _keep(shot, "zero-run-report.png")
    _check_page(found, shot, min_images=1)


@pytest.mark.parametrize("which", ["mia", "zr"])
def test_reports_reference_nothing_outside_the_page(
    which: str, mia_report: Path, zero_run_report: Path
) -> None:
    page = (mia_report if which == "mia" else zero_run_report) / "report.html"
    text = page.read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", text)
    assert "<link" not in text and "@import" not in text
    for m in re.finditer(r"""src\s*=\s*["']([^"']+)""", text):
        assert m.group(1).startswith("data:"), m.group(1)[:60]


def test_risk_csv_download_holds_every_record(mia_report: Path) -> None:
    text = (mia_report / "report.html").read_text(encoding="utf-8")
    m = re.search(r'id="risk-csv"[^>]*href="data:text/csv;charset=utf-8;base64,([^"]+)"', text)
    assert m is not None
    rows = list(csv.DictReader(io.StringIO(base64.b64decode(m.group(1)).decode("utf-8"))))
    table = ScoreTable.load(mia_report)
    assert len(rows) == table.member.size
    by_id = {r["record_id"]: r for r in rows}
    neg = {a: table.scores[a][~table.member] for a in table.attacks}
    for i, rid in enumerate(table.record_ids.tolist()):
        r = by_id[str(rid)]
        assert r["member"] == ("1" if table.member[i] else "0")
        fprs = []
        for a in table.attacks:
            s = table.scores[a][i]
            assert float(r[f"score:{a}"]) == s
            want = float(np.mean(neg[a] >= s))  # the slow definition
            assert float(r[f"fpr:{a}"]) == pytest.approx(want, abs=1e-12)
            fprs.append(want)
            thr = table.thresholds[a]
            if thr is not None:
                assert r[f"flagged:{a}"] == ("1" if s >= thr else "0")
        assert float(r["min_fpr"]) == pytest.approx(min(fprs), abs=1e-12)
    # most exposed first
    mins = [float(r["min_fpr"]) for r in rows]
    assert mins == sorted(mins)


@needs_chromium
def test_probe_sees_what_breaks_a_page(tmp_path: Path) -> None:
    """The checks above can fail: a script error, a console error, an undecodable and a hidden image."""
    assert CHROMIUM is not None
    png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
    page = tmp_path / "bad.html"
    page.write_text(
        '<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>'
        '<img alt="broken" src="data:image/png;base64,AAAA">'
        f'<img alt="hidden" style="display:none" src="data:image/png;base64,{png}">'
        '<script>console.error("boom"); notDefined();</script></body></html>'
    )
    found = probe_page(CHROMIUM, page)
    assert any("notDefined" in e for e in found["errors"])
    assert any("resource IMG failed" in e for e in found["errors"])
    assert found["console"] == ["boom"] and len(found["chromium_console"]) == 2
    by_alt = {im["alt"]: im for im in found["images"]}
    assert by_alt["broken"]["naturalWidth"] == 0 and not by_alt["hidden"]["visible"]


# ------------------------------------------------------------------ the ROC plot


def _colour_columns(pixels: np.ndarray, colour: str, tol: float) -> np.ndarray:
    """x positions (columns) of the screenshot's pixels of ``colour`` (hex), as drawn."""
    from matplotlib.colors import to_rgb

    rgb = np.asarray(to_rgb(colour))
    hit = np.all(np.abs(pixels[..., :3] - rgb) <= tol, axis=-1)
    return np.nonzero(hit)[1]


def _check_roc_on_screen(shot: Path, image: dict[str, Any], names: list[str]) -> dict[str, int]:
    """Each attack's colour is on screen inside the ROC image: on its curve, left of the
    axes' right spine, and on its legend line, right of it (the legend is outside the
    plotting area). Returns the curve pixels counted per attack."""
    from matplotlib.image import imread

    pixels = imread(shot)
    top, left = int(image["top"]), int(image["left"])
    h, w = int(image["height"]), int(image["width"])
    assert top + h <= pixels.shape[0], "the ROC plot is below the screenshot"
    crop = pixels[top : top + h, left : left + w, :3]
    # shown at its own size the colours are exact; scaled, lines blend with the white
    scaled = int(image["naturalWidth"]) != w
    tol = 0.16 if scaled else 10 / 255
    dark = np.all(crop < (0.55 if scaled else 0.25), axis=-1).sum(axis=0)  # the axes' frame
    spines = np.nonzero(dark > 0.6 * h)[0]
    assert spines.size >= 2, "no axes frame found in the ROC image"
    right = int(spines.max())
    assert right < 0.85 * w  # room for the legend beside the axes
    seen: dict[str, int] = {}
    styles = roc_styles(names)
    for name in names:
        cols = _colour_columns(crop, styles[name][0], tol)
        curve, legend = cols[cols < right - 1], cols[cols > right + 4]
        assert curve.size > 20, (name, "curve not on screen")
        assert legend.size > 5, (name, "legend line not on screen")
        seen[name] = int(curve.size)
    return seen


@needs_chromium
def test_roc_of_fourteen_attacks_reads_in_chromium(tmp_path: Path) -> None:
    """14 synthetic attacks: 14 colours on screen, legend outside the plotting area."""
    assert CHROMIUM is not None
    names = [f"attack-{k:02d}" for k in range(14)]
    rng = np.random.default_rng(1)
    member = np.arange(600) % 2 == 0
    scores = {n: rng.standard_normal(600) + 0.08 * (k + 1) * member for k, n in enumerate(names)}
    svg = roc_plot_svg(ScoreTable(np.arange(600), member, scores), log_scale=True)
    page = tmp_path / "roc.html"
    page.write_text(
        '<!DOCTYPE html><html><head><meta charset="utf-8"></head><body style="margin:0">'
        f'<img alt="ROC" src="data:image/svg+xml;base64,{svg}"></body></html>'
    )
    shot = tmp_path / "roc.png"
    found = probe_page(CHROMIUM, page, screenshot=shot, window=(1280, 800))
    _keep(shot, "roc-14-attacks.png")
    assert found["errors"] == [] and len(found["images"]) == 1
    (im,) = found["images"]
    assert im["width"] == im["naturalWidth"]  # shown at its own size: colours exact
    seen = _check_roc_on_screen(shot, im, names)
    assert len(seen) == 14


@pytest.mark.slow
@needs_chromium
def test_demo_report_roc_has_fourteen_distinguishable_curves(
    quick_demo: Path, tmp_path: Path
) -> None:
    """``privaudit demo --quick``'s report, as a person sees it: every one of its attacks
    (every registered one) has its colour on screen in the log-log ROC plot (14 colours;
    from the 15th on they repeat with another line style)."""
    assert CHROMIUM is not None
    shot = tmp_path / "demo-report.png"
    found = probe_page(CHROMIUM, quick_demo / "report.html", screenshot=shot, window=(1280, 6000))
    _keep(shot, "demo-report.png")
    _check_page(found, shot, min_images=2)
    roc = next(im for im in found["images"] if im["alt"] == "ROC curves, log-log axes")
    names = list(ScoreTable.load(quick_demo).attacks)
    assert names == list(attack_names())  # 18: with BaVarIA and InfoRMIA (issue 34)
    assert len(_check_roc_on_screen(shot, roc, names)) == len(names)
