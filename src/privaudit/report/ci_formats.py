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
"""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from privaudit import __version__
from privaudit._validation import fail
from privaudit.report.results import plain

__all__ = [
    "FORMATS",
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
SARIF_SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
_INFO_URI = "https://privaudit.invalid/docs/ci-formats"


@dataclass(frozen=True)
class Gate:
    """One eps lower bound checked against a claimed eps.

    ``name`` identifies the bound (the procedure, and the attack for ``run``).
    """

    name: str
    procedure: str
    epsilon_lower_bound: float
    confidence: float
    delta: float

    def violated(self, claimed: float | None) -> bool:
        """True when ``claimed`` is given and the bound exceeds it."""
        return claimed is not None and self.epsilon_lower_bound > claimed

    def describe(self, claimed: float | None) -> str:
        """One sentence: the bound, its confidence and the verdict."""
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


def gates_from_audit(result: Mapping[str, Any]) -> list[Gate]:
    """The one gate of a ``privaudit audit`` result (an ``AuditResult`` dict)."""
    return [
        Gate(
            name=str(result["procedure"]),
            procedure=str(result["procedure"]),
            epsilon_lower_bound=_float(result["epsilon_lower_bound"]),
            confidence=float(result["confidence"]),
            delta=float(result["delta"]),
        )
    ]


def gates_from_results(results: Mapping[str, Any]) -> list[Gate]:
    """One gate per entry of ``results["audits"]`` (named ``procedure:attack`` when set)."""
    gates = []
    for a in results.get("audits", []):
        name = str(a["procedure"])
        if a.get("attack"):
            name = f"{name}:{a['attack']}"
        gates.append(
            Gate(
                name=name,
                procedure=str(a["procedure"]),
                epsilon_lower_bound=_float(a["epsilon_lower_bound"]),
                confidence=float(a["confidence"]),
                delta=float(a["delta"]),
            )
        )
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
        "gates": [
            {
                "name": g.name,
                "procedure": g.procedure,
                "epsilon_lower_bound": _json_float(g.epsilon_lower_bound),
                "confidence": g.confidence,
                "delta": g.delta,
                "violated": g.violated(claimed),
            }
            for g in gates
        ],
        "result": plain(result),
    }
    return json.dumps(doc, indent=2, allow_nan=False)


def _json_float(x: float) -> float | str:
    return x if math.isfinite(x) else ("inf" if x > 0 else "-inf")


def render_junit(command: str, gates: Sequence[Gate], claimed: float | None) -> str:
    """JUnit XML: one test case per gate; ``<failure>`` when its bound exceeds the claim."""
    n_fail = sum(g.violated(claimed) for g in gates)
    n_skip = len(gates) if claimed is None else 0
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
        case = ET.SubElement(
            suite,
            "testcase",
            {
                "classname": f"privaudit.{command}",
                "name": f"{g.name}: epsilon lower bound <= claimed epsilon",
                "time": "0",
            },
        )
        if claimed is None:
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
    results = [
        {
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
        for g in gates
        if g.violated(claimed)
    ]
    doc = {
        "$schema": SARIF_SCHEMA_URI,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "privaudit",
                        "version": __version__,
                        "informationUri": _INFO_URI,
                        "rules": [
                            {
                                "id": SARIF_RULE_ID,
                                "name": "EpsilonLowerBoundExceedsClaim",
                                "shortDescription": {
                                    "text": "The audited epsilon lower bound exceeds the "
                                    "claimed epsilon."
                                },
                                "fullDescription": {
                                    "text": "A differential-privacy lower bound computed by "
                                    "privaudit, at the stated confidence, is larger than the "
                                    "epsilon the model is claimed to satisfy: the claim is "
                                    "refuted at that confidence."
                                },
                                "defaultConfiguration": {"level": "error"},
                            }
                        ],
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
                        }
                        for g in gates
                    ],
                },
            }
        ],
    }
    return json.dumps(doc, indent=2, allow_nan=False)


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
