"""The report of a Zero-Run audit: ``results.json`` and a self-contained ``report.html``.

``results.json`` is :meth:`ZeroRunResult.to_dict` plus ``"privaudit_version"`` (infinite
bounds are written as ``{"__float__": "inf"}``, so the file is strict JSON);
:meth:`ZeroRunResult.load` reads it back. ``report.html`` shows, for each propensity
estimator, the uncorrected, globally corrected (Zero-Run paper, Section 4, Corollary
4.4) and pointwise-corrected (Section 5, Theorem 5.1) bounds side by side, the
propensity-score histograms per class, the bootstrap distribution over propensity fits
(Section 6), the calibration and overlap diagnostics (Appendix F.2), the falsification
tests (Remark C.1) and every warning and note. Every number on the page comes from
``results.json``; the plots are SVG images embedded as base64 (no other file, no
network), drawn by :mod:`privaudit.report.svg_chart`.

Both files are written into a temporary directory and renamed into place, as
:func:`privaudit.report.write_report` does: a failed run leaves the earlier report or
nothing, never half of one.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from privaudit._validation import fail
from privaudit._version import __version__
from privaudit.records import json_number
from privaudit.report.html import jinja_environment
from privaudit.report.svg_chart import Axis, Series, line_chart, stairs, svg_base64
from privaudit.report.writer import HTML_FILE, check_output_dir, move_into_place
from privaudit.zero_run.placebo import PLACEBO_SCORE

__all__ = [
    "ZERO_RUN_RESULTS_FILE",
    "bootstrap_svg",
    "propensity_histogram_svg",
    "read_zero_run_results",
    "render_zero_run_html",
    "write_zero_run_report",
    "zero_run_payload",
]

ZERO_RUN_RESULTS_FILE = "results.json"
"""Name of the JSON file in a Zero-Run report directory."""

_TEMPLATE = "zero_run.html.j2"


def _check_result(result: Any) -> Any:
    """``result`` when it is a :class:`~privaudit.zero_run.result.ZeroRunResult` (told by its
    record kind: the result's ``save`` calls this module, so it is not imported here)."""
    if getattr(result, "kind", None) != "zero_run_result" or not hasattr(result, "headline"):
        raise fail("result", "a ZeroRunResult", type(result).__name__)
    return result


def zero_run_payload(result: Any) -> dict[str, Any]:
    """The ``results.json`` document of ``result``: ``to_dict()`` plus ``privaudit_version``.

    Parameters
    ----------
    result : ZeroRunResult
        What :func:`privaudit.zero_run.zero_run_audit` returned.

    Returns
    -------
    dict
        Strict-JSON-compatible (non-finite floats are encoded as ``{"__float__": ...}``);
        :meth:`ZeroRunResult.from_dict` reads it back (it ignores ``privaudit_version``).
    """
    d = _check_result(result).to_dict()
    d["privaudit_version"] = __version__
    return d


def read_zero_run_results(path: str | Path) -> dict[str, Any]:
    """The document of a ``results.json`` written by :func:`write_zero_run_report` (or of a
    report directory); :meth:`ZeroRunResult.load <privaudit.zero_run.result.ZeroRunResult.load>`
    turns it into the result.

    Raises
    ------
    InvalidInputError
        The file is missing, not JSON, or not a serialised Zero-Run result.
    """
    p = Path(path)
    if p.is_dir():
        p = p / ZERO_RUN_RESULTS_FILE
    try:
        d = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise fail("path", "a readable Zero-Run results.json", f"{p} ({exc})") from None
    if not isinstance(d, dict):
        raise fail("path", "a JSON object", type(d).__name__)
    return d


def propensity_histogram_svg(diagnostics: Mapping[str, Any], *, title: str = "") -> str:
    """Per-class histograms of held-out propensity scores, as an SVG document.

    Drawn from ``diagnostics["histogram"]`` (``edges`` on ``[0, 1]`` and the member and
    non-member counts) of :func:`privaudit.zero_run.propensity_diagnostics`. Each
    class is normalised to a density so that unequal class sizes stay comparable;
    overlap is the area both share (no overlap: the corrected bound collapses to 0,
    Zero-Run paper, Prop. A.3). The y axis is logarithmic when the densities span more than
    two orders of magnitude.
    """
    h = diagnostics["histogram"]
    edges = np.asarray(h["edges"], dtype=float)
    width = np.diff(edges)
    series: list[Series] = []
    peak, low = 0.0, math.inf
    for key, label, colour in (
        ("member", "members", "#d62728"),
        ("non_member", "non-members", "#1f77b4"),
    ):
        counts = np.asarray(h[key], dtype=float)
        total = counts.sum()
        dens = counts / (total * width) if total > 0 else counts
        x, y = stairs(edges, dens)
        series.append(Series(x, y, f"{label} ({int(total)})", colour, style="area", opacity=0.35))
        series.append(Series(x, y, "", colour, 1.2))
        if (dens > 0).any():
            peak = max(peak, float(dens.max()))
            low = min(low, float(dens[dens > 0].min()))
    log = peak > 0 and low < math.inf and peak / low > 100.0
    y_axis = (
        Axis(low / 2.0, peak * 2.0, "density", log=True)
        if log
        else Axis(0.0, max(peak, 1e-12) * 1.05, "density")
    )
    series.append(
        Series(np.array([0.5, 0.5]), np.array([y_axis.lo, y_axis.hi]), "", "#000", 0.6, (1, 2))
    )
    auc = diagnostics.get("auc")
    head = f"{title}: " if title else ""
    return line_chart(
        series,
        x=Axis(0.0, 1.0, "held-out propensity score  P(member | x)"),
        y=y_axis,
        title=f"{head}AUC {auc:.3f}" if auc is not None else head.rstrip(": "),
    )


def bootstrap_svg(
    bootstrap: Mapping[str, Any], *, point_estimate: float | None = None, title: str = ""
) -> str:
    """Histogram of the bootstrap pointwise mu bounds over propensity refits, as an SVG
    document.

    Marks the reported lower quantile (Zero-Run paper, Section 6, "Bootstrapped Privacy
    Lower Bounds": the ``q``-quantile of the bounds over refitted propensity models with
    the audited model's scores held fixed) and the point estimate.
    """
    values = np.asarray(bootstrap["mu_values"], dtype=float)
    finite = values[np.isfinite(values)]
    q = json_number(bootstrap.get("mu_lower_quantile"))
    marks = [v for v in (q, point_estimate) if v is not None and math.isfinite(v)]
    series: list[Series] = []
    peak = 1.0
    span = [*finite.tolist(), *marks]
    lo, hi = (min(span), max(span)) if span else (0.0, 1.0)
    if finite.size:
        n_bins = int(min(40, max(5, round(math.sqrt(finite.size)))))
        counts, edges = np.histogram(finite, bins=n_bins)
        x, y = stairs(edges.astype(float), counts.astype(float))
        label = f"{values.size} refits"
        series.append(Series(x, y, label, "#7f7f7f", style="area", opacity=0.7))
        peak = max(peak, float(counts.max()))
    top = np.array([0.0, peak * 1.05])
    if q is not None and math.isfinite(q):
        label = f"{bootstrap.get('quantile', 0):g}-quantile {q:.3f}"
        series.append(Series(np.array([q, q]), top, label, "#d62728", 1.5))
    if point_estimate is not None and math.isfinite(point_estimate):
        label = f"point estimate {point_estimate:.3f}"
        series.append(Series(np.array([point_estimate] * 2), top, label, "#000000", 1.2, (3, 2)))
    pad = 0.05 * (hi - lo) if hi > lo else max(abs(lo), 1.0) * 0.05
    return line_chart(
        series,
        x=Axis(lo - pad, hi + pad, "pointwise-corrected mu lower bound"),
        y=Axis(0.0, float(top[1]), "refits"),
        title=title or "bootstrap over propensity refits",
    )


def _bound_cells(d: Mapping[str, Any]) -> dict[str, Any]:
    counts = d.get("counts", {}) or {}
    return {
        "mu": json_number(d.get("mu_lower_bound")),
        "eps": json_number(d.get("epsilon_lower_bound")),
        "delta": json_number(d.get("delta")),
        "r": counts.get("r"),
        "v": counts.get("v"),
        "v_retained": counts.get("v_retained"),
        "retention_sum": json_number(counts.get("retention_sum")),
    }


def _estimator_view(e: Mapping[str, Any]) -> dict[str, Any]:
    """What the template shows of one estimator entry: bounds, diagnostics, tests and plots."""
    diag = e.get("diagnostics") or {}
    boot = e.get("bootstrap")
    pointwise = _bound_cells(e["pointwise"])
    glob = _bound_cells(e["global"])
    extra = e["global"].get("extra", {}) or {}
    ess = diag.get("ess", {}) or {}
    support = diag.get("common_support", {}) or {}
    falsified = any(f.get("rejected") for f in e.get("falsification") or [])
    placebo_failed = bool((e.get("placebo") or {}).get("failed"))
    view: dict[str, Any] = {
        "name": e["name"],
        "global": glob,
        "global_refused": e.get("global_refused"),
        "check_mark": "refused"
        if e.get("pointwise_refused")
        else ("failed checks" if falsified or placebo_failed else None),
        "pointwise": pointwise,
        "eta": json_number(extra.get("eta")),
        "eps_bar_ds": json_number(extra.get("eps_bar_ds")),
        "mu_bar_ds": json_number(extra.get("mu_bar_ds")),
        "bootstrap": None,
        "diag": _diagnostic_cells(diag, ess, support),
        "falsification": _falsification_rows(e.get("falsification") or []),
        "placebo": e.get("placebo"),
        "histogram_svg": _histogram_cell(diag, e["name"]),
    }
    if boot:
        view["bootstrap"] = _bootstrap_cells(boot, pointwise["mu"], e["name"])
    return view


def _diagnostic_cells(
    diag: Mapping[str, Any], ess: Mapping[str, Any], support: Mapping[str, Any]
) -> dict[str, Any]:
    """The calibration, overlap and effective-sample-size diagnostics (Appendix F.2)."""
    return {
        "auc": json_number(diag.get("auc")),
        "log_loss": json_number(diag.get("log_loss")),
        "brier": json_number(diag.get("brier")),
        "ece": json_number(diag.get("ece")),
        "calibration_intercept": json_number(diag.get("calibration_intercept")),
        "calibration_slope": json_number(diag.get("calibration_slope")),
        "fraction_extreme": json_number(diag.get("fraction_extreme")),
        "extreme_threshold": json_number(diag.get("extreme_threshold")),
        "support_low": json_number(support.get("low")),
        "support_high": json_number(support.get("high")),
        "support_inside": json_number(support.get("fraction_inside")),
        "retention_mean": json_number(diag.get("retention_mean")),
        "retention_sum": json_number(diag.get("retention_sum")),
        "ess_member": json_number((ess.get("member") or {}).get("ess")),
        "ess_member_fraction": json_number((ess.get("member") or {}).get("fraction")),
        "ess_non_member": json_number((ess.get("non_member") or {}).get("ess")),
        "ess_non_member_fraction": json_number((ess.get("non_member") or {}).get("fraction")),
        "overlap_poor": diag.get("overlap_poor"),
    }


def _falsification_rows(tests: Any) -> list[dict[str, Any]]:
    """One row per falsification test (challenger propensity model, Remark C.1)."""
    return [
        {
            "challenger": f.get("challenger"),
            "p_value": json_number(f.get("p_value")),
            "rejected": bool(f.get("rejected")),
            "r": f.get("r"),
            "v_retained": f.get("v_retained"),
        }
        for f in tests
    ]


def _histogram_cell(diag: Mapping[str, Any], name: Any) -> str | None:
    """The per-class propensity histogram as base64 SVG, or None without histogram data."""
    return (
        svg_base64(propensity_histogram_svg(diag, title=str(name))) if "histogram" in diag else None
    )


def _bootstrap_cells(
    boot: Mapping[str, Any], point_estimate: float | None, name: Any
) -> dict[str, Any]:
    """The bootstrap summary over propensity refits (Section 6) and its plot, if it has values."""
    return {
        "n": boot.get("n"),
        "quantile": json_number(boot.get("quantile")),
        "mu_lower_quantile": json_number(boot.get("mu_lower_quantile")),
        "mu_median": json_number(boot.get("mu_median")),
        "epsilon_lower_quantile": json_number(boot.get("epsilon_lower_quantile")),
        "svg": svg_base64(bootstrap_svg(boot, point_estimate=point_estimate, title=str(name)))
        if boot.get("mu_values")
        else None,
    }


def _setting_text(v: Any) -> str:
    if v is None:
        return "(none)"
    if isinstance(v, list | tuple):
        return ", ".join(map(str, v)) if v else "(none)"
    return str(v)


def _method_notes(r: Any) -> list[tuple[str, str]]:
    """The notes of each correction's :class:`AuditResult`, each note once with its sources."""
    sources: dict[str, list[str]] = {}
    entries = [("uncorrected", r.uncorrected)]
    for e in r.estimators:
        entries += [
            (f"{e['name']} global", e["global"]),
            (f"{e['name']} pointwise", e["pointwise"]),
        ]
    for label, d in entries:
        for note in d.get("notes", ()) or ():
            sources.setdefault(str(note), []).append(label)
    return [(", ".join(labels), note) for note, labels in sources.items()]


def render_zero_run_html(result: Any) -> str:
    """Render ``report.html`` of a Zero-Run audit (template ``zero_run.html.j2``).

    Parameters
    ----------
    result : ZeroRunResult
        The audit to show; every number on the page is taken from it.

    Returns
    -------
    str
        A self-contained HTML page.
    """
    r = _check_result(result)
    env = jinja_environment("privaudit.zero_run")
    template = env.get_template(_TEMPLATE)
    headline = dict(r.headline)
    return str(
        template.render(
            r=r,
            version=__version__,
            headline={
                **headline,
                "mu_lower_bound": json_number(headline.get("mu_lower_bound")),
                "epsilon_lower_bound": json_number(headline.get("epsilon_lower_bound")),
            },
            uncorrected=_bound_cells(r.uncorrected),
            estimators=[_estimator_view(e) for e in r.estimators],
            settings_rows=[(str(k), _setting_text(v)) for k, v in r.settings.items()],
            method_notes=_method_notes(r),
            placebo_score=PLACEBO_SCORE,
        )
    )


def write_zero_run_report(
    result: Any,
    out_dir: str | Path,
    *,
    overwrite: bool = False,
    bundle: Mapping[str, Any] | None = None,
    inputs: Mapping[str, Any] | None = None,
) -> dict[str, Path]:
    """Write ``results.json`` and ``report.html`` of a Zero-Run audit into ``out_dir``, atomically.

    Parameters
    ----------
    result : ZeroRunResult
        The audit.
    out_dir : path
        The report directory (its parent is created if needed).
    overwrite : bool
        Replace an existing ``out_dir``; without it an existing directory raises
        :class:`~privaudit.report.ReportExistsError` and nothing is touched.
    bundle, inputs : mapping, optional
        A manifest (:func:`privaudit.report.bundle.make_manifest`, kind ``zero-run``)
        and the audit's ``scores``, ``member`` and ``features`` (a DataFrame): also write
        ``inputs.npz``, ``features.parquet`` and ``bundle.json`` (``privaudit verify``
        re-runs the audit from them).

    Returns
    -------
    dict
        ``{"dir": out_dir, "results": out_dir/results.json, "html": out_dir/report.html}``.
    """
    r = _check_result(result)
    out = check_output_dir(out_dir, overwrite=overwrite)
    text = json.dumps(zero_run_payload(r), indent=2, allow_nan=False)
    page = render_zero_run_html(r)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        (tmp / ZERO_RUN_RESULTS_FILE).write_text(text + "\n", encoding="utf-8")
        (tmp / HTML_FILE).write_text(page, encoding="utf-8")
        if bundle is not None:
            from privaudit.report.bundle import write_manifest, write_zero_run_inputs

            if inputs is None:
                raise fail("inputs", "the audit's scores, membership and features", "none")
            files = [ZERO_RUN_RESULTS_FILE, HTML_FILE, *write_zero_run_inputs(tmp, inputs)]
            write_manifest(tmp, bundle, files)
        os.chmod(tmp, 0o755)
        move_into_place(tmp, out, overwrite=overwrite)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return {"dir": out, "results": out / ZERO_RUN_RESULTS_FILE, "html": out / HTML_FILE}
