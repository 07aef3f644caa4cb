"""``results.json`` (schema version 1.0) and the per-record scores beside it.

``results.json`` is the one machine-readable answer of an audit (DESIGN.md section 4);
``report.html`` and the terminal table are renderings of it. Its JSON Schema ships in
the package (``report/schemas/results-1.0.json``) and every document is validated
against it before it is written. Per-record scores (never hard 0/1 decisions) go to
``scores.npz`` beside it, with the record ids and the true membership, so every number
in ``results.json`` can be recomputed (:func:`recompute_attack_metrics`).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import math
from collections.abc import Mapping, Sequence
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from privaudit._validation import fail
from privaudit._version import __version__
from privaudit.metrics.roc import AgreementMatrix, AttackMetrics, attack_metrics
from privaudit.records import SCORES_FILE, AttackScores, AuditResult, ScoreTable

__all__ = [
    "RESULTS_FILE",
    "SCHEMA_VERSION",
    "SCORES_FILE",
    "ScoreTable",
    "attack_entry",
    "build_results",
    "load_results",
    "load_schema",
    "recompute_attack_metrics",
    "validate_results",
]

#: Version of the results.json contract. 1.x adds fields, never removes or retypes one.
SCHEMA_VERSION = "1.0"
RESULTS_FILE = "results.json"


@lru_cache(maxsize=1)
def _schema_text() -> str:
    return (
        resources.files("privaudit.report")
        .joinpath("schemas", f"results-{SCHEMA_VERSION}.json")
        .read_text(encoding="utf-8")
    )


def load_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of ``results.json`` shipped with the package."""
    schema: dict[str, Any] = json.loads(_schema_text())
    return schema


def validate_results(results: Mapping[str, Any]) -> None:
    """Check a results document against the shipped JSON Schema.

    Raises
    ------
    InvalidInputError
        Naming the JSON path of the first offending field, what the schema expects and
        what was found.
    """
    import jsonschema

    validator = jsonschema.Draft202012Validator(
        load_schema(), format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    )
    errors = sorted(validator.iter_errors(results), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        path = "results" + "".join(
            f"[{p}]" if isinstance(p, int) else f".{p}" for p in e.absolute_path
        )
        raise fail(path, f"a value valid under results.json schema {SCHEMA_VERSION}", e.message)


def _json_number(x: float | None) -> float | str | None:
    """A float as JSON allows it: finite, or the strings ``"inf"``/``"-inf"`` (never NaN)."""
    if x is None:
        return None
    v = float(x)
    if math.isnan(v):
        raise fail("threshold", "a number, not NaN", v)
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


def _plain(v: Any) -> Any:
    """Numpy scalars/arrays and tuples to plain JSON types; non-finite floats to strings."""
    if isinstance(v, np.ndarray):
        return [_plain(x) for x in v.tolist()]
    if isinstance(v, np.generic):
        return _plain(v.item())
    if isinstance(v, Mapping):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, tuple | list):
        return [_plain(x) for x in v]
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if isinstance(v, Path):
        return str(v)
    return v


#: Public name of the JSON conversion (used by ``report.bundle`` and ``report.ci_formats``).
plain = _plain


def attack_entry(metrics: AttackMetrics, *, n_reference_models: int | None) -> dict[str, Any]:
    """One element of ``results["attacks"]``.

    ``n_reference_models`` is the number of models the attack learned its threshold or
    distribution from (reference, shadow, distilled or leave-one-out models; 0 for the
    population attack, which uses the target itself). Issues #146 and #151 of
    ml_privacy_meter show that the reported power depends largely on it, so it is
    always written.
    """
    d = metrics.to_dict()
    return _plain(
        {
            "name": d["name"],
            "auc": d["auc"],
            "tpr_at_fpr": d["tpr_at_fpr"],
            "tpr_at_zero_fpr": d["tpr_at_zero_fpr"],
            "fpr_at_tpr": d["fpr_at_tpr"],
            "n_positives": d["n_positives"],
            "n_negatives": d["n_negatives"],
            "alpha": d["alpha"],
            "threshold": _json_number(d["threshold"]),
            "achieved_fpr": d["achieved_fpr"],
            "achieved_fpr_ci": d["achieved_fpr_ci"],
            "achieved_tpr": d["achieved_tpr"],
            "n_false_positives": d["n_false_positives"],
            "alpha_within_error": d["alpha_within_error"],
            "alpha_check": d.get("alpha_check"),
            "alpha_guarantee": d.get("alpha_guarantee"),
            "warnings": list(d.get("warnings") or []),
            "n_reference_models": n_reference_models,
            "params": d["params"],
        }
    )


def _audit_entry(a: AuditResult | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(a, AuditResult):
        d = {f.name: getattr(a, f.name) for f in dataclasses.fields(a)}
    else:
        d = dict(a)
    return dict(_plain(d))


def build_results(
    *,
    seed: int,
    settings: Mapping[str, Any],
    target: Mapping[str, Any],
    attacks: Sequence[Mapping[str, Any]],
    audits: Sequence[AuditResult | Mapping[str, Any]] = (),
    agreement: AgreementMatrix | None = None,
    agreement_alpha: float | None = None,
    game: Mapping[str, Any] | None = None,
    timings: Mapping[str, float] | None = None,
    created: _dt.datetime | None = None,
    sections: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Assemble and validate a ``results.json`` document (schema 1.0).

    Parameters
    ----------
    seed : int
        The audit's root seed.
    settings : mapping
        Everything needed to re-run (at least ``game``, ``alpha``, ``dataset``, ``model``,
        ``attacks``).
    target : mapping
        ``train_accuracy``, ``test_accuracy``, ``n_members``, ``n_non_members``.
    attacks : sequence of mappings
        Entries from :func:`attack_entry`.
    audits : sequence of AuditResult or mappings
        DP lower bounds, if any.
    agreement : AgreementMatrix, optional
        Ye et al. Table 2 at ``agreement_alpha``.
    game : mapping, optional
        ``name``, ``fixed`` and ``resampled`` of the inference game played.
    timings : mapping, optional
        Seconds per phase.
    created : datetime, optional
        Defaults to now (UTC).
    sections : mapping, optional
        Further top-level sections (e.g. ``threat_model``, ``agreement_at_fpr``,
        ``vulnerable_records``), validated by the schema like the rest.
    """
    when = created or _dt.datetime.now(_dt.UTC)
    doc: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "privaudit_version": __version__,
        "created": when.isoformat(timespec="seconds"),
        "seed": int(seed),
        "settings": _plain(settings),
        "target": _plain(target),
        "attacks": [dict(a) for a in attacks],
        "audits": [_audit_entry(a) for a in audits],
    }
    if game is not None:
        doc["game"] = _plain(game)
    if agreement is not None:
        ag = agreement.to_dict()
        if agreement_alpha is not None:
            ag["alpha"] = float(agreement_alpha)
        doc["agreement"] = _plain(ag)
    if timings is not None:
        doc["timings"] = {str(k): float(v) for k, v in timings.items()}
    for key, value in (sections or {}).items():
        if key in doc:
            raise fail("sections", "names of sections not built in", repr(key))
        doc[str(key)] = _plain(value)
    doc["files"] = {"scores": SCORES_FILE}
    validate_results(doc)
    return doc


def load_results(path: str | Path) -> dict[str, Any]:
    """Read and validate a ``results.json`` (a file, or a report directory holding one)."""
    p = Path(path)
    if p.is_dir():
        p = p / RESULTS_FILE
    try:
        doc: dict[str, Any] = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise fail("path", f"an existing {RESULTS_FILE}", str(p)) from None
    except json.JSONDecodeError as exc:
        raise fail("path", "a JSON document", f"{p}: {exc}") from None
    validate_results(doc)
    return doc


def recompute_attack_metrics(
    table: ScoreTable, results: Mapping[str, Any]
) -> dict[str, AttackMetrics]:
    """Recompute every attack's metrics from the saved per-record scores.

    Uses each attack's ``alpha`` from ``results``; the outcome must equal the numbers
    in ``results["attacks"]`` (a report can be checked without re-running the audit).
    With the table's ``groups`` (the documents of a language-model audit) the support
    rule counts groups, as the audit did (:func:`privaudit.metrics.roc.attack_metrics`).
    """
    alphas = {a["name"]: a.get("alpha") for a in results["attacks"]}
    params = {a["name"]: a.get("params") or {} for a in results["attacks"]}
    out = {}
    for name in table.attacks:
        sc = table.attack_scores(name, alpha=alphas.get(name))
        # the recorded settings (calibration size, warnings) enter the alpha check
        sc = AttackScores(
            sc.attack, sc.record_ids, sc.scores, params.get(name, {}), sc.alpha, sc.threshold
        )
        groups = None if table.groups is None else table.groups[~np.isnan(table.scores[name])]
        out[name] = attack_metrics(sc, table.scored(name)[2], groups=groups)
    return out
