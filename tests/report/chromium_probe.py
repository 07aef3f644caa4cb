"""Open a report in headless Chromium and report what a person would see go wrong.

A small script is injected at the top of a copy of the page. It records every script
error, failed resource load and ``console.error`` call; after ``load`` it checks every
``<img>`` (decoded, non-zero natural and laid-out size), lists every resource the page
fetched (all must be ``data:`` URIs: no network, no CDN) and, when the page has a
``table.sortable``, clicks a header twice and records the column's values. The findings
go into a ``<pre id="privaudit-probe">`` element that ``--dump-dom`` prints. Chromium's
own console log (``--enable-logging=stderr``) is collected too.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")

PROBE = r"""
<script>
window.__probe = {errors: [], console: []};
window.addEventListener("error", function (e) {
  var t = e.target && e.target !== window ? ("resource " + (e.target.tagName || "?") + " failed") : String(e.message);
  window.__probe.errors.push(t);
}, true);
window.addEventListener("unhandledrejection", function (e) { window.__probe.errors.push("rejection " + e.reason); });
(function () {
  var orig = console.error;
  console.error = function () { window.__probe.console.push(Array.prototype.join.call(arguments, " ")); return orig.apply(console, arguments); };
})();
window.addEventListener("load", function () {
  var p = window.__probe;
  p.images = Array.prototype.map.call(document.images, function (im) {
    var r = im.getBoundingClientRect();
    return {alt: im.alt, complete: im.complete, naturalWidth: im.naturalWidth, naturalHeight: im.naturalHeight,
            width: r.width, height: r.height, top: r.top + window.scrollY, left: r.left + window.scrollX, visible: getComputedStyle(im).visibility !== "hidden" && getComputedStyle(im).display !== "none"};
  });
  p.resources = performance.getEntriesByType("resource").map(function (e) { return e.name; });
  var t = document.querySelector("table.sortable");
  if (t) {
    var col = function (c) { return Array.prototype.map.call(t.tBodies[0].rows, function (r) { return r.cells[c].getAttribute("data-v"); }); };
    var sorts = {};
    var heads = t.tHead.rows[0].cells;
    [2, heads.length - 1].forEach(function (c) {
      heads[c].click(); var asc = col(c);
      heads[c].click(); var desc = col(c);
      sorts[heads[c].textContent.trim()] = {asc: asc, desc: desc, aria: heads[c].getAttribute("aria-sort")};
    });
    p.sorts = sorts;
    p.n_rows = t.tBodies[0].rows.length;
  }
  var pre = document.createElement("pre");
  pre.id = "privaudit-probe";
  pre.textContent = JSON.stringify(p);
  document.body.appendChild(pre);
});
</script>
"""


def find_chromium() -> str | None:
    """The path of a Chromium/Chrome binary on PATH, or None."""
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


def _base_args(binary: str, profile: Path) -> list[str]:
    return [
        binary,
        "--headless",
        "--no-sandbox",  # CI runs as root
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--disable-extensions",
        "--disable-background-networking",
        f"--user-data-dir={profile}",
        "--enable-logging=stderr",
        "--v=0",
    ]


def probe_page(
    binary: str,
    page: Path,
    *,
    screenshot: Path | None = None,
    timeout: float = 180,
    window: tuple[int, int] = (1280, 2600),
) -> dict[str, Any]:
    """Load ``page`` in headless Chromium; return the probe's findings (and take a screenshot).

    Keys: ``errors``, ``console`` (from the page), ``chromium_console`` (Chromium's log
    lines of console messages), ``images`` (each with its ``top`` / ``left`` in the page),
    ``resources``, ``sorts``, ``n_rows``. The screenshot is ``window`` pixels (width,
    height) of the page's top.
    """
    text = page.read_text(encoding="utf-8")
    head = re.search(r"<head[^>]*>", text)
    if head is None:
        raise AssertionError(f"{page}: no <head>")
    with tempfile.TemporaryDirectory(prefix="privaudit-chromium-") as tmp:
        tmpdir = Path(tmp)
        probed = tmpdir / "probed.html"
        probed.write_text(text[: head.end()] + PROBE + text[head.end() :], encoding="utf-8")
        args = [
            *_base_args(binary, tmpdir / "profile"),
            "--virtual-time-budget=15000",
            "--hide-scrollbars",
            f"--window-size={window[0]},{window[1]}",  # the screenshot's layout
            "--dump-dom",
            probed.as_uri(),
        ]
        run = subprocess.run(args, capture_output=True, text=True, timeout=timeout, check=False)
        m = re.search(r'<pre id="privaudit-probe">(.*?)</pre>', run.stdout, re.S)
        if m is None:
            raise AssertionError(
                f"chromium printed no probe (exit {run.returncode}); stderr tail:\n{run.stderr[-3000:]}"
            )
        found: dict[str, Any] = json.loads(html.unescape(m.group(1)))
        found["chromium_console"] = [ln for ln in run.stderr.splitlines() if ":CONSOLE" in ln]
        if screenshot is not None:
            shot = [
                *_base_args(binary, tmpdir / "profile2"),
                "--hide-scrollbars",
                f"--window-size={window[0]},{window[1]}",
                f"--screenshot={screenshot}",
                page.as_uri(),
            ]
            s = subprocess.run(shot, capture_output=True, text=True, timeout=timeout, check=False)
            if not screenshot.is_file():
                raise AssertionError(f"no screenshot (exit {s.returncode}):\n{s.stderr[-3000:]}")
    return found
