"""The report of ``privaudit record-risk``: ``results.json``, ``records.csv``, ``report.html``.

``results.json`` carries the usual header (``schema_version``, ``privaudit_version``,
``created``, ``seed``, ``settings``) and a ``record_risk`` section:
:meth:`privaudit.record_risk.risk.RecordRiskResult.to_dict` (summary, comparison with
noise floors, Hoeffding widths, the per-record table, warnings, timings). ``records.csv``
is the per-record table; ``report.html`` (self-contained) shows the scatter of R_MS vs R_T
with the risk thresholds t (an SVG image), the miss rates and RMSD beside their noise floors, the
gap test (its spread from a bootstrap over releases), and the per-record table (each game's AUC
with its confidence interval at ``1 - rho``) with a CSV download. Written atomically, as the
other reports.
"""

from __future__ import annotations

import base64
import csv
import datetime
import io
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from privaudit._validation import fail
from privaudit._version import __version__
from privaudit.report.html import jinja_environment
from privaudit.report.svg_chart import Axis, Series, line_chart, svg_base64
from privaudit.report.writer import HTML_FILE, check_output_dir, write_text_files

__all__ = [
    "RECORDS_FILE",
    "record_risk_payload",
    "records_csv",
    "render_record_risk_html",
    "risk_scatter_svg",
    "write_record_risk_report",
]

RESULTS = "results.json"
RECORDS_FILE = "records.csv"
SCHEMA_VERSION = "1.0"


def _check(result: Any) -> Any:
    # duck-typed: importing games.record_risk would pull runtime.executor (and, for
    # import-linter, ray) into report/, which the forbidden-import contract excludes
    if not all(hasattr(result, a) for a in ("risks", "comparison", "table", "to_dict", "config")):
        raise fail("result", "a RecordRiskResult", type(result).__name__)
    return result


def record_risk_payload(result: Any, settings: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The ``results.json`` document (strict JSON)."""
    r = _check(result)
    return {
        "schema_version": SCHEMA_VERSION,
        "privaudit_version": __version__,
        "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "seed": r.config.seed,
        "settings": dict(settings or {}),
        "record_risk": r.to_dict(),
    }


def records_csv(result: Any) -> str:
    """The per-record table as CSV text."""
    rows = _check(result).table()
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(rows[0]))
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue()


def risk_scatter_svg(result: Any) -> str:
    """R_MS (x) vs R_T (y) per record, with the diagonal and the thresholds t (0.8 solid,
    the others dotted), as an SVG document (:mod:`privaudit.report.svg_chart`)."""
    r = _check(result)
    ms = np.asarray(r.risks["model-seeded"]["auc"], dtype=np.float64)
    tr = np.asarray(r.risks["traditional"]["auc"], dtype=np.float64)
    lo = float(min(0.3, ms.min(), tr.min()))
    series: list[Series] = []
    for sel, colour, label in ((True, "#d62728", "most vulnerable"), (False, "#1f77b4", "random")):
        m = r.vulnerable == sel
        if m.any():
            label = f"{label} ({int(m.sum())})"
            series.append(Series(ms[m], tr[m], label, colour, 4.0, style="points", opacity=0.75))
    ends = np.array([lo, 1.0])
    series.append(Series(ends, ends, "R_T = R_MS", "#000000", 0.9))
    for t in r.config.thresholds:
        main = abs(t - 0.8) < 1e-9
        width, dash = (1.2, ()) if main else (1.0, (1.0, 2.0))
        label = f"t = {t:g}" if main else ""
        series.append(Series(np.array([t, t]), ends, label, "#808080", width, dash))
        series.append(Series(ends, np.array([t, t]), "", "#808080", width, dash))
    return line_chart(
        series,
        x=Axis(lo, 1.0, "R_MS: AUC in the model-seeded game (this release)"),
        y=Axis(lo, 1.0, "R_T: AUC in the traditional game (averaged)"),
        title="lower right of t = 0.8: high risk missed by the traditional game",
        size=(420.0, 400.0),
    )


def render_record_risk_html(result: Any) -> str:
    """The self-contained ``report.html``."""
    r = _check(result)
    d = r.to_dict()
    return str(
        jinja_environment("privaudit.record_risk")
        .get_template("record_risk.html.j2")
        .render(
            r=d,
            version=__version__,
            games=list(r.risks),
            scatter=svg_base64(risk_scatter_svg(r)),
            csv=base64.b64encode(records_csv(r).encode("utf-8")).decode("ascii"),
        )
    )


def write_record_risk_report(
    result: Any,
    out_dir: str | Path,
    *,
    settings: Mapping[str, Any] | None = None,
    overwrite: bool = False,
) -> dict[str, Path]:
    """Write ``results.json``, ``records.csv`` and ``report.html`` into ``out_dir`` atomically."""
    r = _check(result)
    check_output_dir(out_dir, overwrite=overwrite)
    text = json.dumps(record_risk_payload(r, settings), indent=2, allow_nan=False)
    files = {
        RESULTS: text + "\n",
        RECORDS_FILE: records_csv(r),
        HTML_FILE: render_record_risk_html(r),
    }
    out = write_text_files(out_dir, files, overwrite=overwrite)
    return {
        "dir": out,
        "results": out / RESULTS,
        "records": out / RECORDS_FILE,
        "html": out / HTML_FILE,
    }
