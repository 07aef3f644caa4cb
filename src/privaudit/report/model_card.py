"""A Hugging Face model-card section from an audit's ``results.json``.

Models are published on the Hugging Face Hub with a model card: a ``README.md`` whose
YAML front matter (between ``---`` lines) is the card's metadata and whose markdown is
read by people. :func:`model_card` writes both for the audited model:

* **metadata**: ``tags`` (``privacy-audit``, ``membership-inference``, ``privaudit``), a
  ``model-index`` entry whose ``results`` hold the audit's figures as the Hub's evaluation
  results (each attack's AUC and TPR at the reported FPRs, each differential-privacy
  lower bound; ``verified: false``: computed by the model's owner), and a
  ``privacy_audit`` block (tool and schema versions, date, seed, game, alpha, the
  strongest attack, the largest epsilon lower bound, the sha256 of ``results.json``);
* **markdown**: what was audited (model, records, attacks), a table of the figures, the
  DP lower bounds with their confidence, the threat model (the game, what the adversary
  and each attack know), and the caveats (what a lower bound does and does not say, each
  bound's conditions, the audit's warnings, figures that are n/a and why, how to
  re-check the figures with ``privaudit verify``).

Every figure is copied from ``results.json``, never recomputed or rounded in the
metadata (the markdown shows them rounded).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from privaudit.errors import InvalidInputError

__all__ = ["MODEL_CARD_FILE", "card_metadata", "model_card", "write_model_card"]

#: The card's file name beside ``results.json`` (a section to merge into the model's README.md).
MODEL_CARD_FILE = "model_card.md"


def _finite(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    f = float(v)
    return f if math.isfinite(f) else None


def _pct(v: Any, digits: int = 1) -> str:
    f = _finite(v)
    return "n/a" if f is None else f"{100.0 * f:.{digits}f}%"


def _num(v: Any, digits: int = 3) -> str:
    f = _finite(v)
    return "n/a" if f is None else f"{f:.{digits}f}"


def _rate(key: str) -> str:
    return f"{100.0 * float(key):g}%"


def _dataset_name(results: Mapping[str, Any]) -> str:
    ds = results.get("settings", {}).get("dataset", {}) or {}
    return str(ds.get("name") or Path(str(ds.get("path", "dataset"))).name)


def _model_name(results: Mapping[str, Any]) -> str:
    target = results.get("target", {}) or {}
    if target.get("origin") == "provided" and target.get("path"):
        return Path(str(target["path"])).stem
    kind = (results.get("settings", {}).get("model", {}) or {}).get("kind", "model")
    return f"{kind} on {_dataset_name(results)}"


def _checked(results: Any) -> Mapping[str, Any]:
    if not isinstance(results, Mapping):
        raise InvalidInputError(
            f"results: expected a results.json document (a mapping), found {type(results).__name__}"
        )
    if not isinstance(results.get("attacks"), list) or not results["attacks"]:
        raise InvalidInputError(
            "results: expected the results.json of a membership audit (privaudit run, demo or "
            "panoramia: a non-empty 'attacks' list), found "
            + ("none" if "attacks" not in results else "an empty or malformed one")
        )
    return results


def _strongest(attacks: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
    return max(attacks, key=lambda a: _finite(a.get("auc")) or 0.0)


def _bound(audit: Mapping[str, Any]) -> float | None:
    """An audit entry's finite eps lower bound; None for a refused (not gated) entry,
    whose recorded 0 is no figure to publish."""
    if (audit.get("extra") or {}).get("gated") is False:
        return None
    return _finite(audit.get("epsilon_lower_bound"))


def _max_bound(audits: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    bounded = [a for a in audits if _bound(a) is not None]
    return max(bounded, key=lambda a: float(a["epsilon_lower_bound"])) if bounded else None


def _attack_metrics(a: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One attack's finite AUC, then its finite TPRs by increasing FPR."""
    metrics: list[dict[str, Any]] = []
    auc = _finite(a.get("auc"))
    if auc is not None:
        metrics.append(
            {"type": "auc", "name": f"membership-inference AUC ({a['name']})", "value": auc}
        )
    for key, value in sorted((a.get("tpr_at_fpr") or {}).items(), key=lambda kv: float(kv[0])):
        v = _finite(value)
        if v is not None:
            metrics.append(
                {
                    "type": f"tpr_at_fpr_{key}",
                    "name": f"TPR at {_rate(key)} FPR ({a['name']})",
                    "value": v,
                }
            )
    return metrics


def _eval_metrics(
    attacks: Sequence[Mapping[str, Any]], audits: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """The Hub's evaluation results: each attack's AUC and TPR at each reported FPR, then
    each finite epsilon lower bound, all ``verified: false`` (computed by the model's owner).
    Non-finite figures are left out."""
    metrics = [m for a in attacks for m in _attack_metrics(a)]
    for b in audits:
        eps = _bound(b)
        if eps is not None:
            who = f", {b['attack']}" if b.get("attack") else ""
            metrics.append(
                {
                    "type": "epsilon_lower_bound",
                    "name": f"epsilon lower bound ({b.get('procedure')}{who}, confidence "
                    f"{_num(b.get('confidence'), 4)})",
                    "value": eps,
                }
            )
    for m in metrics:
        m["verified"] = False
    return metrics


def _privacy_audit(
    results: Mapping[str, Any],
    attacks: Sequence[Mapping[str, Any]],
    audits: Sequence[Mapping[str, Any]],
    results_sha256: str | None,
) -> dict[str, Any]:
    """The ``privacy_audit`` block: tool and schema versions, date, seed, game, alpha, the
    numbers of members and non-members, the attacks, the strongest one, the largest epsilon
    lower bound and, when given, the sha256 of ``results.json``."""
    strongest = _strongest(attacks)
    top = _max_bound(audits)
    game = results.get("game") or {}
    settings = results.get("settings", {}) or {}
    audit: dict[str, Any] = {
        "tool": "privaudit",
        "tool_version": results.get("privaudit_version"),
        "schema_version": results.get("schema_version"),
        "created": results.get("created"),
        "seed": results.get("seed"),
        "game": game.get("id") or settings.get("game"),
        "alpha": _finite(settings.get("alpha")),
        "n_members": results.get("target", {}).get("n_members"),
        "n_non_members": results.get("target", {}).get("n_non_members"),
        "attacks": [a["name"] for a in attacks],
        "strongest_attack": {"name": strongest["name"], "auc": _finite(strongest.get("auc"))},
        "max_epsilon_lower_bound": None
        if top is None
        else {
            "value": float(top["epsilon_lower_bound"]),
            "procedure": top.get("procedure"),
            "attack": top.get("attack"),
            "confidence": _finite(top.get("confidence")),
            "delta": _finite(top.get("delta")),
        },
    }
    if results_sha256:
        audit["results_sha256"] = results_sha256
    return audit


def card_metadata(
    results: Mapping[str, Any], *, model_name: str | None = None, results_sha256: str | None = None
) -> dict[str, Any]:
    """The card's YAML metadata (module docstring) as a mapping."""
    results = _checked(results)
    attacks = list(results["attacks"])
    audits = list(results.get("audits") or [])
    name = model_name or _model_name(results)
    dataset = _dataset_name(results)
    metrics = _eval_metrics(attacks, audits)
    audit = _privacy_audit(results, attacks, audits, results_sha256)
    return {
        "tags": ["privacy-audit", "membership-inference", "privaudit"],
        "model-index": [
            {
                "name": name,
                "results": [
                    {
                        "task": {
                            "type": "membership-inference",
                            "name": "Membership-inference privacy audit",
                        },
                        "dataset": {"type": dataset, "name": f"{dataset} (audited records)"},
                        "metrics": metrics,
                    }
                ],
            }
        ],
        "privacy_audit": audit,
    }


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


def _attack_rows(results: Mapping[str, Any], fprs: Sequence[str]) -> list[list[str]]:
    rows = []
    for a in results["attacks"]:
        ci = a.get("auc_ci")
        auc = _num(a.get("auc")) + (
            f" [{_num(ci[0])}, {_num(ci[1])}]" if isinstance(ci, list) and len(ci) == 2 else ""
        )
        if a.get("achieved_fpr") is None:
            achieved = "n/a"
        else:
            off = {False: " (off alpha)", None: " (not checked)"}.get(
                a.get("alpha_within_error", True), ""
            )
            achieved = _pct(a["achieved_fpr"]) + off
        rows.append(
            [
                f"`{a['name']}`",
                auc,
                *(_pct((a.get("tpr_at_fpr") or {}).get(k), 2) for k in fprs),
                achieved,
                f"{a.get('n_positives')} / {a.get('n_negatives')}",
            ]
        )
    return rows


def _threat_lines(results: Mapping[str, Any]) -> list[str]:
    tm = results.get("threat_model") or {}
    game = tm.get("game") or results.get("game") or {}
    lines: list[str] = []
    if game:
        lines.append(
            f"- **Game**: {game.get('id', '')} {game.get('name', '')}: "
            f"{game.get('definition', '')}".rstrip(": ")
        )
        if game.get("fixed"):
            lines.append("  - fixed: " + "; ".join(map(str, game["fixed"])))
        if game.get("resampled"):
            lines.append("  - resampled: " + "; ".join(map(str, game["resampled"])))
    adversary = tm.get("adversary") or {}
    if adversary:
        if adversary.get("goal"):
            lines.append(f"- **Adversary's goal**: {adversary['goal']}")
        if adversary.get("access"):
            lines.append(f"- **Access**: {adversary['access']}")
        for k in adversary.get("shared_knowledge") or []:
            lines.append(f"- **Knows**: {k}")
    for a in tm.get("attacks") or []:
        knows = "; ".join(map(str, a.get("knows") or []))
        lines.append(
            f"- `{a.get('name')}`: {a.get('access', '')}" + (f" (knows: {knows})" if knows else "")
        )
    if not lines:
        lines.append("- Not recorded in results.json.")
    return lines


def _caveats(results: Mapping[str, Any], fprs: Sequence[str]) -> list[str]:
    attacks = results["attacks"]
    out = [
        "- The attacks give lower bounds on what an adversary can learn: a strong result shows "
        "leakage, a weak one does not prove privacy (a stronger attack, or another threat "
        "model, may do better).",
        "- AUC intervals are over draws of the audited records for this one trained model, "
        "not over retrainings.",
    ]
    for key in fprs:
        need = math.ceil(1.0 / float(key) - 1e-9)
        short = [a["name"] for a in attacks if (a.get("tpr_at_fpr") or {}).get(key) is None]
        if short:
            out.append(
                f"- TPR at {_rate(key)} FPR is n/a for {', '.join(short)}: it needs at least "
                f"{need:,} non-members (one false positive)."
            )
    if any(a.get("alpha_guarantee") == "average-over-targets" for a in attacks):
        out.append(
            "- Attack `shadow`'s threshold holds alpha on average over target models "
            "(Ye et al. 2022, Def. 3.1), not for this model."
        )
    off = [
        a["name"]
        for a in attacks
        if a.get("achieved_fpr") is not None and a.get("alpha_within_error", True) is False
    ]
    if off:
        out.append("- Achieved FPR off alpha beyond sampling error for: " + ", ".join(off) + ".")
    notes = sorted({str(n) for b in results.get("audits") or [] for n in b.get("notes") or []})
    out += [f"- DP bounds: {n}" for n in notes]
    warns = [str(w) for w in (results.get("settings", {}) or {}).get("warnings") or []]
    warns += [f"{a['name']}: {w}" for a in attacks for w in a.get("warnings") or []]
    out += [f"- Warning: {w}" for w in warns]
    out.append(
        "- Every figure can be recomputed from the audit's saved scores: "
        "`privaudit verify <report folder>` (bundle.json)."
    )
    return out


def _summary_lines(results: Mapping[str, Any], name: str, fprs: Sequence[str]) -> list[str]:
    """The card's heading and summary: what was audited, by which privaudit, when, and the
    headline figures (the strongest attack and the largest epsilon lower bound, if any)."""
    target = results.get("target", {}) or {}
    strongest = _strongest(results["attacks"])
    top = _max_bound(results.get("audits") or [])
    lines = [
        f"## Privacy audit: {name}",
        "",
        f"Audited with privaudit {results.get('privaudit_version', '')} on "
        f"{str(results.get('created', ''))[:10]} (seed {results.get('seed')}): "
        f"membership-inference attacks against this model on "
        f"{target.get('n_members')} members and {target.get('n_non_members')} non-members "
        f"of {_dataset_name(results)}.",
        "",
        f"- **Strongest attack**: `{strongest['name']}`, AUC {_num(strongest.get('auc'))}"
        + "".join(
            f", TPR at {_rate(k)} FPR {_pct((strongest.get('tpr_at_fpr') or {}).get(k), 2)}"
            for k in fprs
        ),
    ]
    if top is not None:
        lines.append(
            f"- **Largest epsilon lower bound**: {_num(top['epsilon_lower_bound'])} "
            f"({top.get('procedure')}"
            + (f", {top['attack']}" if top.get("attack") else "")
            + f", confidence {_num(top.get('confidence'), 4)}, delta {top.get('delta')})"
        )
    refused = [
        b for b in results.get("audits") or [] if (b.get("extra") or {}).get("gated") is False
    ]
    if top is None and refused:
        reason = str(refused[0]["extra"].get("not_gated_reason", "")).rstrip(".")
        lines.append(f"- **Epsilon lower bound**: {reason}.")
    return lines


def _audited_lines(results: Mapping[str, Any], alpha: float | None) -> list[str]:
    """The "What was audited" list: the model and its accuracy, the records, the attacks."""
    target = results.get("target", {}) or {}
    model = (results.get("settings", {}) or {}).get("model", {}) or {}
    return [
        f"- Model: {model.get('kind', '?')}"
        + (f" ({model.get('estimator')})" if model.get("estimator") else "")
        + f"; accuracy {_pct(target.get('train_accuracy'))} on its training records, "
        f"{_pct(target.get('test_accuracy'))} on held-out records",
        f"- Records: {target.get('n_members')} members, {target.get('n_non_members')} "
        f"non-members ({_dataset_name(results)})",
        f"- Attacks: {', '.join(a['name'] for a in results['attacks'])}"
        + ("" if alpha is None else f"; alpha = {alpha:g}"),
    ]


def _results_table(
    results: Mapping[str, Any], fprs: Sequence[str], alpha: float | None
) -> list[str]:
    """The figures table: one row per attack (:func:`_attack_rows`)."""
    header = [
        "attack",
        "AUC [95% CI]",
        *(f"TPR @ {_rate(k)} FPR" for k in fprs),
        "achieved FPR at alpha" if alpha is not None else "achieved FPR",
        "members / non-members",
    ]
    return _table(header, _attack_rows(results, fprs))


def _bounds_section(results: Mapping[str, Any]) -> list[str]:
    """The "Differential-privacy lower bounds" section, a table of the finite bounds; no
    lines when there is none."""
    audits = [b for b in results.get("audits") or [] if _bound(b) is not None]
    if not audits:
        return []
    return [
        "",
        "### Differential-privacy lower bounds",
        "",
        *_table(
            ["procedure", "attack", "confidence", "delta", "epsilon lower bound"],
            [
                [
                    str(b.get("procedure")),
                    f"`{b['attack']}`" if b.get("attack") else "",
                    _num(b.get("confidence"), 4),
                    str(b.get("delta")),
                    _num(b.get("epsilon_lower_bound")),
                ]
                for b in audits
            ],
        ),
    ]


def model_card(
    results: Mapping[str, Any], *, model_name: str | None = None, results_sha256: str | None = None
) -> str:
    """The model-card section (YAML front matter + markdown) of an audit's results.

    Parameters
    ----------
    results : mapping
        A ``results.json`` document of a membership audit (``privaudit run`` / ``demo`` /
        ``panoramia``).
    model_name : str, optional
        The audited model's name in the card (default: the provided model file's name,
        else ``"<model kind> on <dataset>"``).
    results_sha256 : str, optional
        The sha256 of the ``results.json`` file, recorded for provenance.
    """
    import yaml

    results = _checked(results)
    meta = card_metadata(results, model_name=model_name, results_sha256=results_sha256)
    fprs = sorted({k for a in results["attacks"] for k in a.get("tpr_at_fpr") or {}}, key=float)
    alpha = _finite((results.get("settings", {}) or {}).get("alpha"))
    lines = [
        "---",
        yaml.safe_dump(meta, sort_keys=False, allow_unicode=True).rstrip(),
        "---",
        "",
        *_summary_lines(results, meta["model-index"][0]["name"], fprs),
        "",
        "### What was audited",
        "",
        *_audited_lines(results, alpha),
        "",
        "### Results",
        "",
        *_results_table(results, fprs, alpha),
        *_bounds_section(results),
        "",
        "### Threat model",
        "",
        *_threat_lines(results),
        "",
        "### Caveats",
        "",
        *_caveats(results, fprs),
        "",
    ]
    return "\n".join(lines)


def write_model_card(
    results_path: str | Path, out: str | Path | None = None, *, model_name: str | None = None
) -> Path:
    """Write :func:`model_card` of a ``results.json`` file (or of the report folder holding
    it) to ``out`` (default: :data:`MODEL_CARD_FILE` beside it); return the path written."""
    from privaudit.report.results import RESULTS_FILE

    p = Path(results_path)
    file = p / RESULTS_FILE if p.is_dir() else p
    if not file.is_file():
        raise InvalidInputError(
            f"results: expected a results.json file or a report folder holding one, found {p}"
        )
    raw = file.read_bytes()
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise InvalidInputError(
            f"results: expected a JSON document, found {file} ({exc})"
        ) from None
    text = model_card(doc, model_name=model_name, results_sha256=hashlib.sha256(raw).hexdigest())
    dest = Path(out) if out is not None else file.parent / MODEL_CARD_FILE
    tmp = dest.with_name(dest.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(dest)
    return dest
