"""The figures of a ``results.json`` document as typed objects.

An audit's one machine-readable answer is its ``results.json`` (DESIGN.md section 4);
the result objects of the Python API (:class:`privaudit.AuditReport`, the language-model
audit's report) keep that document and read their figures out of it, so that an
attribute and the file can never disagree:

* :class:`AttackFigures` -- one attack: AUC and its interval, TPR at each FPR, the
  members and non-members it scored, the alpha threshold and the FPR it achieved;
* :class:`TargetFigures` -- the audited model: accuracies, counts, origin, a DP-SGD
  target's accountant epsilon;
* :class:`BoundFigures` -- one DP lower bound (epsilon, mu) with its confidence, delta
  and the counts it came from;
* :class:`ResultsFigures` -- the accessors shared by every result object (``attacks``,
  ``target``, ``bounds``, ``attack(name)``, ``strongest_attack()``, ``to_dict()``,
  ``to_json()``, ``report_path``), and :class:`AuditResults`, a results document read
  back (:meth:`AuditResults.load`).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from privaudit._validation import fail

__all__ = ["AttackFigures", "AuditResults", "BoundFigures", "ResultsFigures", "TargetFigures"]


def _num(v: Any) -> float | None:
    """A JSON number (or ``"inf"``/``"-inf"``) as a float; None stays None."""
    if v is None:
        return None
    if isinstance(v, str):
        return float(v)  # "inf", "-inf", "nan" as results.json writes them
    return float(v)


def _pair(v: Any) -> tuple[float, float] | None:
    if v is None:
        return None
    lo, hi = v
    return (float(lo), float(hi))


@dataclasses.dataclass(frozen=True)
class AttackFigures:
    """One attack's figures (an element of ``results.json["attacks"]``).

    Attributes
    ----------
    name : str
        The attack's stable identifier (``"lira-online"``, ``"population"``, ...).
    auc : float
        Area under the ROC curve of its scores (higher score = more likely member).
    auc_ci : (float, float) or None
        The AUC's confidence interval (``auc_ci_confidence``; :mod:`privaudit.metrics.auc_ci`).
    tpr_at_fpr : dict of float to float or None
        TPR at each reported FPR (``{0.001: ..., 0.01: ...}``); None where the
        non-members are too few for that FPR (fewer than ``1 / fpr``).
    n_members, n_non_members : int
        Members and non-members the attack scored (``n_positives`` / ``n_negatives``).
    alpha : float or None
        The FPR its threshold aims at (None: the attack only ranks records).
    threshold : float or None
        Its decision threshold at ``alpha``.
    achieved_fpr : float or None
        The FPR the threshold achieved on the audited non-members, with
        ``achieved_fpr_ci`` its 95% Clopper-Pearson interval.
    achieved_tpr : float or None
        The TPR at that threshold.
    n_reference_models : int or None
        Attacker models the attack learned from (0: the target alone).
    warnings : tuple of str
        What a reader must know about this attack's figures.
    """

    name: str
    auc: float
    auc_ci: tuple[float, float] | None
    tpr_at_fpr: dict[float, float | None]
    n_members: int
    n_non_members: int
    alpha: float | None = None
    threshold: float | None = None
    achieved_fpr: float | None = None
    achieved_fpr_ci: tuple[float, float] | None = None
    achieved_tpr: float | None = None
    auc_ci_confidence: float | None = None
    n_reference_models: int | None = None
    warnings: tuple[str, ...] = ()

    @classmethod
    def from_dict(cls, entry: Mapping[str, Any]) -> AttackFigures:
        """The figures of one ``results.json["attacks"]`` entry."""
        try:
            return cls(
                name=str(entry["name"]),
                auc=float(entry["auc"]),
                auc_ci=_pair(entry.get("auc_ci")),
                tpr_at_fpr={float(k): _num(v) for k, v in entry["tpr_at_fpr"].items()},
                n_members=int(entry["n_positives"]),
                n_non_members=int(entry["n_negatives"]),
                alpha=_num(entry.get("alpha")),
                threshold=_num(entry.get("threshold")),
                achieved_fpr=_num(entry.get("achieved_fpr")),
                achieved_fpr_ci=_pair(entry.get("achieved_fpr_ci")),
                achieved_tpr=_num(entry.get("achieved_tpr")),
                auc_ci_confidence=_num(entry.get("auc_ci_confidence")),
                n_reference_models=(
                    None
                    if entry.get("n_reference_models") is None
                    else int(entry["n_reference_models"])
                ),
                warnings=tuple(str(w) for w in entry.get("warnings") or ()),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise fail("attacks entry", "an attack of a results.json document", repr(exc)) from None

    def tpr(self, fpr: float) -> float | None:
        """The TPR at ``fpr`` (one of the reported FPRs, e.g. ``0.01``); None when the
        non-members are too few for it.

        Raises
        ------
        InvalidInputError
            When ``fpr`` is not one of the reported FPRs (:attr:`tpr_at_fpr`).
        """
        for k, v in self.tpr_at_fpr.items():
            if math.isclose(k, float(fpr), rel_tol=1e-9, abs_tol=0.0):
                return v
        raise fail("fpr", f"one of the reported FPRs {sorted(self.tpr_at_fpr)}", fpr)


@dataclasses.dataclass(frozen=True)
class TargetFigures:
    """The audited model's figures (``results.json["target"]``).

    Attributes
    ----------
    train_accuracy, test_accuracy : float or None
        Accuracy on its members and on the audited non-members (None when unknown,
        e.g. precomputed losses).
    n_members, n_non_members : int
        Audited members and non-members.
    origin : str or None
        ``"trained"`` (privaudit trained it) or ``"provided"`` (trained outside privaudit).
    accountant_epsilon, delta : float or None
        A DP-SGD target's epsilon from its accountant (an upper bound) at ``delta``.
    """

    train_accuracy: float | None
    test_accuracy: float | None
    n_members: int
    n_non_members: int
    origin: str | None = None
    accountant_epsilon: float | None = None
    delta: float | None = None

    @classmethod
    def from_dict(cls, target: Mapping[str, Any]) -> TargetFigures:
        """The figures of a ``results.json["target"]`` section."""
        return cls(
            train_accuracy=_num(target.get("train_accuracy")),
            test_accuracy=_num(target.get("test_accuracy")),
            n_members=int(target.get("n_members", 0)),
            n_non_members=int(target.get("n_non_members", 0)),
            origin=None if target.get("origin") is None else str(target["origin"]),
            accountant_epsilon=_num(target.get("accountant_epsilon")),
            delta=_num(target.get("delta")),
        )


@dataclasses.dataclass(frozen=True)
class BoundFigures:
    """One DP lower bound (an element of ``results.json["audits"]``).

    Attributes
    ----------
    procedure : str
        The statistical procedure (``"one-run"``, ``"fdp-one-run"``, ``"multi-run"``,
        ``"panoramia"``, ...).
    attack : str or None
        The attack whose scores it audits (None for a bound of the whole audit).
    epsilon_lower_bound : float
        epsilon >= this, with probability ``confidence``, at ``delta``.
    mu_lower_bound : float or None
        The mu-GDP lower bound, for the f-DP procedures.
    confidence : float
        ``1 - beta`` of this bound (with several attacks: after the Bonferroni split;
        ``family_confidence`` is that of the largest bound over them).
    family_confidence : float or None
    delta : float
    threshold_selection : str
        How thresholds or guess counts were chosen (held-out, union bound, fixed).
    counts : dict
        The numbers the bound was computed from.
    refused : str or None
        Why no bound is printed (``epsilon_lower_bound`` is then the trivial 0 and no
        claimed epsilon is checked against it), e.g. a split the auditor chose; None for
        a bound.
    """

    procedure: str
    attack: str | None
    epsilon_lower_bound: float
    mu_lower_bound: float | None
    confidence: float
    delta: float
    threshold_selection: str = "fixed"
    family_confidence: float | None = None
    counts: dict[str, Any] = dataclasses.field(default_factory=dict)
    refused: str | None = None

    @classmethod
    def from_dict(cls, audit: Mapping[str, Any]) -> BoundFigures:
        """The figures of one ``results.json["audits"]`` entry."""
        eps = _num(audit.get("epsilon_lower_bound"))
        extra = audit.get("extra") or {}
        gated = audit.get("gated", extra.get("gated"))
        reason = audit.get("not_gated_reason", extra.get("not_gated_reason"))
        return cls(
            procedure=str(audit["procedure"]),
            attack=None if audit.get("attack") is None else str(audit["attack"]),
            epsilon_lower_bound=0.0 if eps is None else eps,
            mu_lower_bound=_num(audit.get("mu_lower_bound")),
            confidence=float(audit["confidence"]),
            delta=float(audit.get("delta", 0.0)),
            threshold_selection=str(audit.get("threshold_selection", "fixed")),
            family_confidence=_num(audit.get("family_confidence")),
            counts=dict(audit.get("counts") or {}),
            refused=None if gated is not False else str(reason or "not a lower bound"),
        )


class ResultsFigures:
    """The accessors every result object of the Python API shares.

    A subclass holds ``results`` (the ``results.json`` document) and ``out_dir`` (the
    report folder, or None when none was written); every figure is read from
    ``results``.
    """

    results: dict[str, Any]
    out_dir: Path | None

    @property
    def attacks(self) -> tuple[AttackFigures, ...]:
        """Every attack's figures, in the order of ``results.json``."""
        return tuple(AttackFigures.from_dict(a) for a in self.results.get("attacks", ()))

    @property
    def target(self) -> TargetFigures:
        """The audited model's figures."""
        return TargetFigures.from_dict(self.results.get("target", {}))

    @property
    def bounds(self) -> tuple[BoundFigures, ...]:
        """Every DP lower bound (one per attack for the one-run audit)."""
        return tuple(BoundFigures.from_dict(a) for a in self.results.get("audits", ()))

    @property
    def settings(self) -> dict[str, Any]:
        """What ran (``results.json["settings"]``): data, model, attacks, sizes, seeds."""
        return dict(self.results.get("settings", {}))

    @property
    def report_path(self) -> Path | None:
        """``report.html`` of the report folder, or None when no report was written."""
        if self.out_dir is None:
            return None
        return Path(self.out_dir) / "report.html"

    def attack(self, name: str) -> AttackFigures:
        """The figures of the attack called ``name``.

        Raises
        ------
        InvalidInputError
            When no attack of that name ran.
        """
        for a in self.attacks:
            if a.name == name:
                return a
        raise fail("name", f"one of the attacks {[a.name for a in self.attacks]}", repr(name))

    def strongest_attack(self, *, fpr: float | None = None) -> AttackFigures:
        """The attack with the highest AUC, or with ``fpr`` the highest TPR at that FPR
        (attacks without a TPR there come last; ties keep the results' order).

        Raises
        ------
        InvalidInputError
            When no attack ran, or ``fpr`` is not a reported FPR.
        """
        attacks = self.attacks
        if not attacks:
            raise fail("attacks", "at least one attack in the results", 0)
        if fpr is None:
            return max(attacks, key=lambda a: a.auc)

        def key(a: AttackFigures) -> float:
            t = a.tpr(fpr)
            return -1.0 if t is None else t

        return max(attacks, key=key)

    def to_dict(self) -> dict[str, Any]:
        """The ``results.json`` document (a deep copy: editing it changes nothing here)."""
        return copy.deepcopy(self.results)

    def to_json(self, *, indent: int | None = 2) -> str:
        """``results.json``'s text (the file holds this and a newline)."""
        return json.dumps(self.results, indent=indent, allow_nan=False)


@dataclasses.dataclass(frozen=True)
class AuditResults(ResultsFigures):
    """A ``results.json`` document read back, with the figures of :class:`ResultsFigures`.

    Parameters
    ----------
    results : dict
        The document (validated against the shipped schema).
    out_dir : Path, optional
        The report folder it came from.
    """

    results: dict[str, Any]
    out_dir: Path | None = None

    def __post_init__(self) -> None:
        from privaudit.report.results import validate_results

        validate_results(self.results)
        object.__setattr__(self, "results", copy.deepcopy(dict(self.results)))

    @classmethod
    def from_dict(cls, results: Mapping[str, Any]) -> AuditResults:
        """The figures of a ``results.json`` document (e.g. a result's :meth:`to_dict`)."""
        return cls(dict(results))

    @classmethod
    def load(cls, path: str | Path) -> AuditResults:
        """The ``results.json`` of a report folder (or the file itself)."""
        from privaudit.report.results import load_results

        p = Path(path)
        return cls(load_results(p), out_dir=p if p.is_dir() else p.parent)
