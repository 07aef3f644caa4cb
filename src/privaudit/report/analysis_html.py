"""Report pieces for the attack-comparison sections (Ye et al. 2022, Sec. 5.3-5.4).

Kept apart from :mod:`privaudit.report.html`: :func:`analysis_context` turns the
``agreement_at_fpr`` and ``vulnerable_records`` sections of ``results.json`` into what
the templates ``_agreement_fpr.html.j2`` and ``_vulnerable.html.j2`` show (table cells
and the loss-histogram plots, base64 SVG). Every number comes from ``results.json``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from privaudit.report.plots import ROC_STYLES
from privaudit.report.svg_chart import Axis, Series, line_chart, stairs, svg_base64

__all__ = ["analysis_context", "loss_histogram_svg"]


def _cells(block: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Table cells; a cell's record count is kept only where it is below the full count
    (a pair involving an attack that scored a sample, e.g. Attack L)."""
    names = block["names"]
    full_train = max((max(r) for r in block["n_train"]), default=0)
    full_test = max((max(r) for r in block["n_test"]), default=0)
    rows = []
    for i, n in enumerate(names):
        cells = []
        for j in range(len(names)):
            if i == j:
                cells.append({"kind": "diag", "value": None, "n": None})
            elif j > i:
                n = block["n_train"][i][j]
                cells.append(
                    {
                        "kind": "train",
                        "value": block["train"][i][j],
                        "n": n if n < full_train else None,
                    }
                )
            else:
                n = block["n_test"][i][j]
                cells.append(
                    {
                        "kind": "test",
                        "value": block["test"][i][j],
                        "n": n if n < full_test else None,
                    }
                )
        rows.append({"name": n, "cells": cells})
    return rows


def loss_histogram_svg(sets: list[Mapping[str, Any]], fpr: float) -> str | None:
    """Loss histograms of the record types at one FPR (Ye et al. Fig. 5), as base64 SVG:
    each set's fraction of records per loss bin, drawn as a step outline down to zero at
    both ends (matplotlib's ``stairs``)."""
    chosen = [s for s in sets if s["fpr"] == fpr and s["n_records"] > 0]
    if not chosen:
        return None
    series: list[Series] = []
    lo, hi, top = np.inf, -np.inf, 0.0
    for s in chosen:
        h = s["loss"]["histogram"]
        counts = np.asarray(h["counts"], dtype=float)
        if counts.sum() == 0:
            continue
        edges = np.asarray(h["edges"], dtype=float)
        frac = counts / counts.sum()
        x, y = stairs(edges, frac)
        colour = ROC_STYLES[len(series) % len(ROC_STYLES)][0]
        series.append(Series(x, y, f"{s['name']} ({s['n_records']})", colour))
        lo, hi, top = min(lo, edges[0]), max(hi, edges[-1]), max(top, float(frac.max()))
    if not series:
        return None
    if not hi > lo:  # one value: a bin of width one around it
        lo, hi = lo - 0.5, hi + 0.5
    svg = line_chart(
        series,
        x=Axis(float(lo), float(hi), "target loss"),
        y=Axis(0.0, 1.05 * top, "fraction of the set's records"),
        title=f"loss of each record type at FPR {fpr:g}",
        size=(460.0, 260.0),
    )
    return svg_base64(svg)


def analysis_context(results: Mapping[str, Any]) -> dict[str, Any]:
    """Template variables ``agreement_fpr`` and ``vulnerable`` (None when absent)."""
    ag = results.get("agreement_at_fpr") or []
    agreement_fpr = [
        {
            "fpr": b["fpr"],
            "rows": _cells(b),
            "n_train": max((max(r) for r in b["n_train"]), default=0),
            "n_test": max((max(r) for r in b["n_test"]), default=0),
        }
        for b in ag
    ]
    vr = results.get("vulnerable_records")
    vulnerable = None
    if vr:
        sets = list(vr.get("sets", []))
        vulnerable = {
            "doc": vr,
            "by_fpr": [
                {
                    "fpr": f,
                    "sets": [s for s in sets if s["fpr"] == f],
                    "plot": loss_histogram_svg(sets, f),
                }
                for f in vr.get("fprs", [])
            ],
        }
    return {"agreement_fpr": agreement_fpr, "vulnerable": vulnerable}
