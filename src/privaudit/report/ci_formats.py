"""Machine formats for release pipelines: JSON, JUnit XML and SARIF 2.1.0.

A model-release pipeline gates on a claimed privacy guarantee: the audit's eps lower
bound must not exceed the eps the model is claimed to satisfy. Each bound is one
:class:`Gate`; a gate *fails* when a claim is given and the bound exceeds it (the CLI
then exits 1). The same gates render as

* ``json``: ``{"tool", "version", "command", "claimed_epsilon", "violation", "gates",
  "result"}`` (``result`` is the audit's own document);
* ``junit``: one ``<testcase>`` per gate, with a ``<failure>`` when it fails and
  ``<skipped>`` when no claim was given (JUnit XML as CI servers read it);
* ``sarif``: SARIF 2.1.0 (OASIS), one ``run`` whose tool is privaudit, with one rule
  (:data:`SARIF_RULE_ID`) and one ``error`` result per failing gate, located at the
  audited input (the scores file of ``audit``, the config of ``run``).

A figure that is not a valid eps lower bound is never a gate: PANORAMIA's
``eps_tilde`` is a lower bound only if ``c_lb`` is tight (Kazmi et al. 2024, Sec. 4.2),
and its audit certifies no lower bound on eps alone. Such an entry (``"gated": false`` in
the audit's document, with ``not_gated_reason``) becomes a :class:`Gate` with
``gated = False`` that never fails: ``json`` lists it with ``"gated": false``, the reason
and the figure reported instead (``eps_tilde`` and its caveat); ``junit`` skips its test
case with the reason; ``sarif`` gives it a ``note`` result (rule
:data:`SARIF_NOT_GATED_RULE_ID`), never an ``error``.
"""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from privaudit._validation import fail
from privaudit._version import __version__

__all__ = [
    "FORMATS",
    "SARIF_NOT_GATED_RULE_ID",
    "SARIF_RULE_ID",
    "SARIF_SCHEMA_URI",
    "Gate",
    "any_violation",
    "gates_from_audit",
    "gates_from_results",
    "render",
    "render_json",
    "render_junit",
    "render_sarif",
]

#: ``--format`` values; ``text`` is the human table (rendered by the CLI).
FORMATS = ("text", "json", "junit", "sarif")
SARIF_RULE_ID = "privaudit/epsilon-lower-bound-exceeds-claim"
SARIF_NOT_GATED_RULE_ID = "privaudit/measurement-not-a-lower-bound"
#: Figures an ungated entry reports in place of a bound, with the key of their caveat.
_REPORTED = (("epsilon_tilde", "epsilon_tilde_caveat"),)
SARIF_SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
_INFO_URI = "https://privaudit.invalid/docs/ci-formats"


@dataclass(frozen=True)
class Gate:
    """One eps lower bound checked against a claimed eps.

    ``name`` identifies the bound (the procedure, and the attack for ``run``).
    ``not_gated_reason`` set (``gated`` False): the entry holds no valid eps lower bound
    to check (PANORAMIA); it is reported, never violated. ``reported`` names the figures
    shown in its place (``eps_tilde``) and ``caveat`` says what they are.
    """

    name: str
    procedure: str
    epsilon_lower_bound: float
    confidence: float
    delta: float
    not_gated_reason: str | None = None
    reported: tuple[tuple[str, float], ...] = ()
    caveat: str | None = None

    @property
    def gated(self) -> bool:
        """Whether the entry's eps lower bound is checked against a claim."""
        return self.not_gated_reason is None

    def violated(self, claimed: float | None) -> bool:
        """True when the entry is gated, ``claimed`` is given and the bound exceeds it."""
        return self.gated and claimed is not None and self.epsilon_lower_bound > claimed

    def describe(self, claimed: float | None) -> str:
        """One sentence: the bound, its confidence and the verdict."""
        if not self.gated:
            figures = ", ".join(f"{k} {_num(v)}" for k, v in self.reported) or "its figures"
            text = (
                f"{self.name}: {figures} at confidence {self.confidence:g} is not an epsilon "
                f"lower bound and is not gated ({self.caveat or self.not_gated_reason})"
            )
            if claimed is None:
                return text + "; no claimed epsilon given"
            return f"{text}; the claimed epsilon {claimed:g} is not checked against it"
        text = (
            f"{self.name}: epsilon lower bound {_num(self.epsilon_lower_bound)} at "
            f"confidence {self.confidence:g} (delta {self.delta:g})"
        )
        if claimed is None:
            return text + "; no claimed epsilon given"
        verb = "exceeds" if self.violated(claimed) else "does not exceed"
        return f"{text} {verb} the claimed epsilon {claimed:g}"


def _num(x: float) -> str:
    return "inf" if math.isinf(x) else f"{x:.6g}"


def _float(x: Any) -> float:
    if isinstance(x, str):  # results.json writes non-finite numbers as strings
        return float(x)
    return float(x)


def _gate(entry: Mapping[str, Any], name: str) -> Gate:
    """The gate of one audit entry: its ``gated``/``not_gated_reason`` (top level, as
    ``audit_payload`` lifts them, or in ``extra``) decide whether it is checked."""
    extra = entry.get("extra") or {}

    def get(key: str) -> Any:
        return entry[key] if key in entry else extra.get(key)

    reason: str | None = None
    reported: tuple[tuple[str, float], ...] = ()
    caveat: str | None = None
    if get("gated") is False:
        reason = str(get("not_gated_reason") or "not a lower bound on epsilon").rstrip(".")
        reported = tuple((k, _float(get(k))) for k, _ in _REPORTED if get(k) is not None)
        caveats = [str(get(c)).rstrip(".") for k, c in _REPORTED if get(c) is not None]
        caveat = "; ".join(caveats) or None
    return Gate(
        name=name,
        procedure=str(entry["procedure"]),
        epsilon_lower_bound=_float(entry["epsilon_lower_bound"]),
        confidence=float(entry["confidence"]),
        delta=float(entry["delta"]),
        not_gated_reason=reason,
        reported=reported,
        caveat=caveat,
    )


def gates_from_audit(result: Mapping[str, Any]) -> list[Gate]:
    """The one gate of a ``privaudit audit`` result (an ``AuditResult`` dict); a
    PANORAMIA result's is not gated (see the module docstring)."""
    return [_gate(result, str(result["procedure"]))]


def gates_from_results(results: Mapping[str, Any]) -> list[Gate]:
    """One gate per entry of ``results["audits"]`` (named ``procedure:attack`` when set)."""
    gates = []
    for a in results.get("audits", []):
        name = str(a["procedure"])
        if a.get("attack"):
            name = f"{name}:{a['attack']}"
        gates.append(_gate(a, name))
    return gates


def any_violation(gates: Sequence[Gate], claimed: float | None) -> bool:
    """True when some gate's bound exceeds ``claimed``."""
    return any(g.violated(claimed) for g in gates)


def render_json(
    command: str, gates: Sequence[Gate], claimed: float | None, result: Mapping[str, Any]
) -> str:
    """The JSON document of ``--format json`` (see the module docstring)."""
    doc = {
        "tool": "privaudit",
        "version": __version__,
        "command": command,
        "claimed_epsilon": claimed,
        "violation": any_violation(gates, claimed),
        "gates": [_json_gate(g, claimed) for g in gates],
        "result": _plain(result),
    }
    return json.dumps(doc, indent=2, allow_nan=False)


def _json_gate(g: Gate, claimed: float | None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": g.name,
        "procedure": g.procedure,
        "epsilon_lower_bound": _json_float(g.epsilon_lower_bound),
        "confidence": g.confidence,
        "delta": g.delta,
        "violated": g.violated(claimed),
        "gated": g.gated,
    }
    if not g.gated:
        out["not_gated_reason"] = g.not_gated_reason
        out["reported"] = {k: _json_float(v) for k, v in g.reported}
        out["caveat"] = g.caveat
    return out


def _json_float(x: float) -> float | str:
    return x if math.isfinite(x) else ("inf" if x > 0 else "-inf")


def render_junit(command: str, gates: Sequence[Gate], claimed: float | None) -> str:
    """JUnit XML: one test case per gate; ``<failure>`` when its bound exceeds the claim."""
    n_fail = sum(g.violated(claimed) for g in gates)
    n_skip = sum(claimed is None or not g.gated for g in gates)
    counts = {
        "tests": str(len(gates)),
        "failures": str(n_fail),
        "errors": "0",
        "skipped": str(n_skip),
    }
    root = ET.Element("testsuites", {"name": "privaudit", **counts})
    suite = ET.SubElement(root, "testsuite", {"name": f"privaudit {command}", **counts})
    props = ET.SubElement(suite, "properties")
    ET.SubElement(props, "property", {"name": "privaudit_version", "value": __version__})
    ET.SubElement(
        props,
        "property",
        {"name": "claimed_epsilon", "value": "none" if claimed is None else repr(claimed)},
    )
    for g in gates:
        title = (
            f"{g.name}: epsilon lower bound <= claimed epsilon"
            if g.gated
            else f"{g.name}: no epsilon lower bound to check (not gated)"
        )
        case = ET.SubElement(
            suite, "testcase", {"classname": f"privaudit.{command}", "name": title, "time": "0"}
        )
        if not g.gated:
            ET.SubElement(case, "skipped", {"message": f"not gated: {g.not_gated_reason}"})
        elif claimed is None:
            ET.SubElement(case, "skipped", {"message": "no --claimed-epsilon given"})
        elif g.violated(claimed):
            failure = ET.SubElement(
                case,
                "failure",
                {
                    "type": "EpsilonLowerBoundExceedsClaim",
                    "message": g.describe(claimed),
                },
            )
            failure.text = g.describe(claimed)
        out = ET.SubElement(case, "system-out")
        out.text = g.describe(claimed)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode")


def render_sarif(
    command: str,
    gates: Sequence[Gate],
    claimed: float | None,
    *,
    artifact_uri: str,
    exit_code: int,
) -> str:
    """SARIF 2.1.0: an ``error`` result per gate whose bound exceeds the claim."""
    results = [_sarif_error(g, claimed, artifact_uri) for g in gates if g.violated(claimed)]
    ungated = [g for g in gates if not g.gated]
    results += [_sarif_note(g, claimed, artifact_uri) for g in ungated]
    rules = _sarif_rules(not_gated=bool(ungated))
    doc = _sarif_document(
        command,
        gates,
        claimed,
        rules=rules,
        results=results,
        artifact_uri=artifact_uri,
        exit_code=exit_code,
    )
    return json.dumps(doc, indent=2, allow_nan=False)


def _sarif_error(g: Gate, claimed: float | None, artifact_uri: str) -> dict[str, Any]:
    """The ``error`` result of a gate whose bound exceeds the claim (rule
    :data:`SARIF_RULE_ID`), located at the audited input."""
    return {
        "ruleId": SARIF_RULE_ID,
        "ruleIndex": 0,
        "level": "error",
        "kind": "fail",
        "message": {"text": g.describe(claimed)},
        "locations": [{"physicalLocation": {"artifactLocation": {"uri": artifact_uri}}}],
        "properties": {
            "gate": g.name,
            "procedure": g.procedure,
            "epsilonLowerBound": _json_float(g.epsilon_lower_bound),
            "claimedEpsilon": claimed,
            "confidence": g.confidence,
            "delta": g.delta,
        },
    }


def _sarif_note(g: Gate, claimed: float | None, artifact_uri: str) -> dict[str, Any]:
    """The ``note`` result of a gate that is not gated (rule :data:`SARIF_NOT_GATED_RULE_ID`):
    the reason and the figures reported in place of a bound, located at the audited input."""
    return {
        "ruleId": SARIF_NOT_GATED_RULE_ID,
        "ruleIndex": 1,
        "level": "note",
        "kind": "informational",
        "message": {"text": g.describe(claimed)},
        "locations": [{"physicalLocation": {"artifactLocation": {"uri": artifact_uri}}}],
        "properties": {
            "gate": g.name,
            "procedure": g.procedure,
            "gated": False,
            "notGatedReason": g.not_gated_reason,
            "reported": {k: _json_float(v) for k, v in g.reported},
            "claimedEpsilon": claimed,
            "confidence": g.confidence,
        },
    }


def _sarif_rules(*, not_gated: bool) -> list[dict[str, Any]]:
    """The driver's rules: :data:`SARIF_RULE_ID` (index 0), then
    :data:`SARIF_NOT_GATED_RULE_ID` (index 1) when some gate is not gated."""
    rules: list[dict[str, Any]] = [
        {
            "id": SARIF_RULE_ID,
            "name": "EpsilonLowerBoundExceedsClaim",
            "shortDescription": {
                "text": "The audited epsilon lower bound exceeds the claimed epsilon."
            },
            "fullDescription": {
                "text": "A differential-privacy lower bound computed by privaudit, at the "
                "stated confidence, is larger than the epsilon the model is claimed to "
                "satisfy: the claim is refuted at that confidence."
            },
            "defaultConfiguration": {"level": "error"},
        }
    ]
    if not_gated:
        rules.append(
            {
                "id": SARIF_NOT_GATED_RULE_ID,
                "name": "MeasurementNotALowerBound",
                "shortDescription": {
                    "text": "A privacy measurement that is not an epsilon lower bound; not gated."
                },
                "fullDescription": {
                    "text": "The audit reports a figure (PANORAMIA's eps_tilde) that is a "
                    "lower bound on epsilon only under an assumption the audit cannot check "
                    "(c_lb tight, Kazmi et al. 2024, Sec. 4.2), so no claimed epsilon is "
                    "checked against it."
                },
                "defaultConfiguration": {"level": "note"},
            }
        )
    return rules


def _sarif_document(
    command: str,
    gates: Sequence[Gate],
    claimed: float | None,
    *,
    rules: list[dict[str, Any]],
    results: list[dict[str, Any]],
    artifact_uri: str,
    exit_code: int,
) -> dict[str, Any]:
    """The SARIF log: one run whose tool is privaudit, with its invocation, the audited
    input as its one artifact, the results, and every gate (gated or not) in its
    properties."""
    return {
        "$schema": SARIF_SCHEMA_URI,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "privaudit",
                        "version": __version__,
                        "informationUri": _INFO_URI,
                        "rules": rules,
                    }
                },
                "invocations": [
                    {
                        "commandLine": f"privaudit {command}",
                        "executionSuccessful": True,
                        "exitCode": exit_code,
                    }
                ],
                "artifacts": [{"location": {"uri": artifact_uri}}],
                "results": results,
                "properties": {
                    "claimedEpsilon": claimed,
                    "gates": [
                        {
                            "name": g.name,
                            "epsilonLowerBound": _json_float(g.epsilon_lower_bound),
                            "confidence": g.confidence,
                            "delta": g.delta,
                            "gated": g.gated,
                        }
                        for g in gates
                    ],
                },
            }
        ],
    }


def render(
    fmt: str,
    command: str,
    gates: Sequence[Gate],
    claimed: float | None,
    result: Mapping[str, Any],
    *,
    artifact_uri: str,
) -> str:
    """The document of ``--format fmt`` (``json``, ``junit`` or ``sarif``)."""
    if fmt == "json":
        return render_json(command, gates, claimed, result)
    if fmt == "junit":
        return render_junit(command, gates, claimed)
    if fmt == "sarif":
        code = 1 if any_violation(gates, claimed) else 0
        return render_sarif(command, gates, claimed, artifact_uri=artifact_uri, exit_code=code)
    raise fail("--format", "one of " + ", ".join(FORMATS), repr(fmt))


def _plain(obj: Any) -> Any:
    """:func:`privaudit.report.results.plain` (imported here, not at start-up: ``--format``
    is checked against :data:`FORMATS` before any work)."""
    from privaudit.report.results import plain

    return plain(obj)
