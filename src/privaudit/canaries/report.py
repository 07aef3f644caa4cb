"""``results.json``, ``report.html`` and the re-verifiable bundle of a canary audit.

The bundle (kind ``canaries``) holds ``inputs.npz`` (canary ids, scores, coins) beside the
results: ``privaudit verify`` recomputes both one-run bounds from it
(:func:`privaudit.canaries.verify.verify_canaries`) without the model or the data.
"""

from __future__ import annotations

import html
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "CANARY_INPUTS_FILE",
    "CANARY_RESULTS_FILE",
    "canary_manifest_config",
    "render_canary_html",
    "write_canary_report",
]

CANARY_RESULTS_FILE = "results.json"
CANARY_INPUTS_FILE = "inputs.npz"
_HTML_FILE = "report.html"


def _num(x: Any) -> str:
    if x is None:
        return "-"
    if isinstance(x, str):
        return html.escape(x)
    return f"{float(x):.4g}"


def render_canary_html(result: Any) -> str:
    """A self-contained page of a :class:`~privaudit.canaries.result.CanaryAuditResult` (this
    module does not import it: the result imports this one to save itself): the headline
    beside the accountant's eps, both audits' counts."""
    doc = result.to_dict()
    c = doc["canaries"]
    rows = []
    for a in doc["audits"]:
        counts = ", ".join(f"{k}={v}" for k, v in a["counts"].items())
        rows.append(
            "<tr>"
            + "".join(
                f"<td>{html.escape(str(v))}</td>"
                for v in (
                    a["procedure"],
                    _num(a["epsilon_lower_bound"]),
                    _num(a["mu_lower_bound"]),
                    a["confidence"],
                    a["delta"],
                    a["threshold_selection"],
                    counts,
                )
            )
            + "</tr>"
        )
    notes = "".join(
        f"<li>{html.escape(str(n))}</li>" for a in doc["audits"] for n in a.get("notes", ())
    )
    settings = "".join(
        f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(json.dumps(v))}</td></tr>"
        for k, v in doc["settings"].items()
    )
    group = _group_html(c)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>privaudit canary audit</title>
<style>body{{font-family:sans-serif;margin:2em;max-width:70em}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:.3em .6em;text-align:left}}</style></head><body>
<h1>Canary audit (one run)</h1>
<p>{c["m"]} {html.escape(c["kind"])} canaries, {c["n_included"]} included by their secret coins;
access: <b>{html.escape(c["access"])}</b>. Guesses: {html.escape(c["guesses"])}.</p>{group}
<table><tr><th>one-run eps lower bound</th><td>{_num(c["epsilon_lower_bound"])}</td></tr>
<tr><th>f-DP mu-GDP lower bound</th><td>{_num(c["mu_lower_bound"])}</td></tr>
<tr><th>accountant's eps (upper bound)</th><td>{_num(c["accountant_epsilon"])}</td></tr>
<tr><th>fraction of the accountant</th><td>{_num(c["fraction_of_accountant"])}</td></tr>
<tr><th>canary set fingerprint</th><td><code>{c["set_fingerprint"]}</code></td></tr>
<tr><th>coins fingerprint</th><td><code>{c["coins_fingerprint"]}</code></td></tr></table>
<h2>Bounds</h2><table><tr><th>procedure</th><th>eps lb</th><th>mu lb</th><th>confidence</th>
<th>delta</th><th>guesses</th><th>counts</th></tr>{"".join(rows)}</table>
<h2>Settings</h2><table>{settings}</table>
<h2>Notes</h2><ul>{notes}</ul>
<p>privaudit {html.escape(doc["privaudit_version"])}; Steinke, Nasr, Jagielski (2023),
Mahloujifar, Melis, Chaudhuri (2024).</p></body></html>
"""


def _group_html(c: dict[str, Any]) -> str:
    """The paragraph saying the bounds are per training record when each canary was
    trained on several times, with the bounds of one canary (the group)."""
    g = c.get("group_bounds")
    if not g:
        return ""
    k = int(g["records_per_canary"])
    return (
        f"\n<p>Each included canary was trained on <b>{k} times</b>: the audit tests one "
        f"canary, a group of {k} training records, and the bounds below are <b>per training "
        "record</b>, by group privacy (divided by k at delta = 0; with delta &gt; 0 the "
        "largest eps whose group guarantee (k eps, delta sum<sub>i&lt;k</sub> e<sup>i "
        f"eps</sup>) is rejected). For one canary: eps {_num(g['epsilon_lower_bound'])} "
        f"(one-run), {_num(g['fdp_epsilon_lower_bound'])} (f-DP), mu-GDP "
        f"{_num(g['mu_lower_bound'])}.</p>"
    )


def canary_manifest_config(result: Any) -> dict[str, Any]:
    """The ``config`` of the bundle manifest: what :func:`verify_canaries` re-runs with."""
    return {
        "canary_kind": result.canary_kind,
        "access": result.access,
        "k_pos": result.k_pos,
        "k_neg": result.k_neg,
        "confidence": result.confidence,
        "delta": result.delta,
        "repetitions": result.repetitions,
        "accountant_epsilon": result.accountant_epsilon,
        "set_fingerprint": result.set_fingerprint,
        "coins_fingerprint": result.coins_fingerprint,
        "settings": result.settings,
    }


def write_canary_report(
    result: Any,
    out_dir: str | Path,
    *,
    overwrite: bool = False,
    dataset_fingerprint: str | None = None,
) -> Path:
    """Write ``results.json``, ``report.html``, ``inputs.npz`` and ``bundle.json``, atomically.

    Raises
    ------
    ReportExistsError
        ``out_dir`` exists and ``overwrite`` is False (nothing is touched).
    """
    from privaudit.report.bundle import make_manifest, write_manifest
    from privaudit.report.writer import check_output_dir, move_into_place

    out = check_output_dir(out_dir, overwrite=overwrite)
    text = json.dumps(result.to_dict(), indent=2, allow_nan=False)
    page = render_canary_html(result)
    manifest = make_manifest(
        kind="canaries",
        command="canaries audit",
        config=canary_manifest_config(result),
        seeds={},
        dataset_fingerprint=dataset_fingerprint,
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        (tmp / CANARY_RESULTS_FILE).write_text(text + "\n", encoding="utf-8")
        (tmp / _HTML_FILE).write_text(page, encoding="utf-8")
        with (tmp / CANARY_INPUTS_FILE).open("wb") as fh:
            np.savez_compressed(
                fh,
                ids=np.asarray(result.ids).astype(str),
                scores=np.asarray(result.scores, dtype=np.float64),
                included=np.asarray(result.included, dtype=bool),
            )
        write_manifest(tmp, manifest, [CANARY_RESULTS_FILE, _HTML_FILE, CANARY_INPUTS_FILE])
        os.chmod(tmp, 0o755)
        move_into_place(tmp, out, overwrite=overwrite)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out
