"""``report.html``: a self-contained rendering of ``results.json`` and the saved scores.

Plots (:mod:`privaudit.report.plots`, re-exported here) are embedded as base64 PNG, so
the page needs no other file and no network. The page is a Jinja2 template shipped as package data
(``report/templates/report.html.j2``); every number in it comes from ``results.json``
except the ROC curves, which are recomputed from the per-record scores.
"""

from __future__ import annotations

import base64
import functools
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from privaudit.report.analysis_html import analysis_context
from privaudit.report.per_record import record_risk, record_risk_csv
from privaudit.report.plots import (
    ROC_DASHES,
    ROC_STYLES,
    roc_plot_svg,
    roc_polyline,
    roc_styles,
    roc_svg,
)
from privaudit.report.results import ScoreTable

#: Rows of the per-record risk table shown in the page (the most exposed records); the
#: downloadable CSV holds every audited record.
RISK_ROWS_SHOWN = 500

__all__ = [
    "ROC_DASHES",
    "ROC_STYLES",
    "format_num",
    "format_pct",
    "jinja_environment",
    "render_html",
    "roc_plot_svg",
    "roc_polyline",
    "roc_styles",
    "roc_svg",
]


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


@functools.cache
def _bytecode_cache() -> Any:
    """The compiled templates kept between runs: Jinja2's ``FileSystemBytecodeCache`` in its
    default directory (per user, mode 0700, in the system's temp folder; entries keyed by
    the template's name and source checksum, checked against the Python version), so that
    a report does not compile its templates again (about 0.1 s of every report). Only our
    own templates are stored, no audit data; a folder that cannot be made or written
    costs that time, never the report (None, or a failed write ignored)."""
    from jinja2 import FileSystemBytecodeCache

    class _BestEffort(FileSystemBytecodeCache):
        def dump_bytecode(self, bucket: Any) -> None:
            try:
                super().dump_bytecode(bucket)
            except OSError:
                pass

    try:
        return _BestEffort()
    except (OSError, RuntimeError):  # no safe per-user folder in the temp folder
        return None


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
        bytecode_cache=_bytecode_cache(),
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
        roc_loglog=roc_plot_svg(table, log_scale=True),
        roc_linear=roc_plot_svg(table, log_scale=False),
        agreement=agreement,
        agreement_rows=ag_rows,
        settings_rows=_flatten(results["settings"]),
        game=results.get("game"),
        timings=results.get("timings") or {},
        **analysis_context(results),
        **(context or {}),
    )
