"""The record a Zero-Run audit returns."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from privaudit._validation import fail
from privaudit.records import AuditResult, Record

__all__ = ["ZeroRunResult"]


@dataclasses.dataclass(frozen=True)
class ZeroRunResult(Record):
    """Everything a Zero-Run audit found, as plain JSON-compatible data.

    Attributes
    ----------
    confidence : float
        ``1 - beta`` of every bound.
    n_members, n_non_members : int
        Sizes of the two known populations.
    headline : dict
        The number to quote: ``{"mu_lower_bound", "epsilon_lower_bound", "estimator",
        "correction", "rule", "beta_per_estimator", "basis", "refused",
        "refused_estimators", "falsified_estimators", "placebo_failed_estimators",
        "mu_range_across_estimators"}`` -- the pointwise-corrected bound combined over the
        propensity estimators by ``rule``: ``"max"`` (each estimator at ``beta / J``, the
        largest over the admitted ones that pass the falsification test and the placebo
        check; valid by the union bound) or ``"min"`` (each at ``beta``, the most
        conservative, the paper's advice in Appendix I.3). ``basis`` says whether it is the
        bootstrap lower quantile or the point estimate, or why the headline was
        **refused** (``refused`` true: no estimator passed; the bounds are then the trivial
        0, and no bound should be quoted).
    uncorrected : dict
        ``AuditResult.to_dict()`` of the audit that ignores the shift (not a valid bound
        under shift; shown for comparison).
    estimators : list of dict
        One entry per propensity estimator: ``{"name", "global": AuditResult dict,
        "pointwise": AuditResult dict, "global_refused": str | None, "diagnostics": dict, "bootstrap": dict | None,
        "falsification": list of dict, "placebo": dict | None}`` (``placebo``: the
        estimator's pointwise audit of the placebo score, :func:`.placebo.placebo_check`;
        None when the check did not run).
    warnings : tuple of str
        Problems an auditor must read (poor overlap, failed falsification test, ...).
    notes : tuple of str
        Assumptions behind the numbers.
    settings : dict
        The arguments of the run (seed, estimators, delta, delta_ds, n_bootstrap, ...), so
        that it can be reproduced.
    """

    kind: ClassVar[str] = "zero_run_result"
    confidence: float
    n_members: int
    n_non_members: int
    headline: dict[str, Any]
    uncorrected: dict[str, Any]
    estimators: tuple[dict[str, Any], ...]
    warnings: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    settings: dict[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        if not 0.0 < float(self.confidence) < 1.0:
            raise fail("confidence", "a value in (0, 1)", self.confidence)
        if not self.estimators:
            raise fail("estimators", "at least one propensity estimator", 0)
        object.__setattr__(self, "headline", dict(self.headline))
        object.__setattr__(self, "uncorrected", dict(self.uncorrected))
        object.__setattr__(self, "estimators", tuple(dict(e) for e in self.estimators))
        object.__setattr__(self, "warnings", tuple(self.warnings))
        object.__setattr__(self, "notes", tuple(self.notes))
        object.__setattr__(self, "settings", dict(self.settings))

    def save(self, folder: str | Path, *, overwrite: bool = False) -> Path:
        """Write the report folder, ``results.json`` and ``report.html``, atomically
        (:func:`privaudit.zero_run.report.write_zero_run_report`; the command line's
        ``--out`` also bundles the audit's inputs for ``privaudit verify``).

        Returns
        -------
        Path
            ``folder``.

        Raises
        ------
        ReportExistsError
            When ``folder`` exists and ``overwrite`` is False (nothing is touched).
        """
        from privaudit.zero_run.report import write_zero_run_report

        return write_zero_run_report(self, folder, overwrite=overwrite)["dir"]

    @classmethod
    def load(cls, path: str | Path) -> ZeroRunResult:
        """The result in a report folder written by :meth:`save` (or its ``results.json``)."""
        from privaudit.zero_run.report import read_zero_run_results

        return cls.from_dict(read_zero_run_results(path))

    def to_json(self, *, indent: int | None = 2) -> str:
        """``results.json``'s text as :meth:`save` writes it (without its newline)."""
        import json

        from privaudit.zero_run.report import zero_run_payload

        return json.dumps(zero_run_payload(self), indent=indent, allow_nan=False)

    def summary(self, *, features: Sequence[str] | None = None, width: int = 100) -> str:
        """The summary ``privaudit zero-run`` prints (``width`` columns, no colour): the
        headline, the bounds per propensity estimator, diagnostics, tests, warnings, notes.

        ``features``: the propensity feature columns to list (default: ``settings``'s).
        """
        import io

        from rich.console import Console

        from privaudit.zero_run.summary import render_zero_run_summary

        buf = io.StringIO()
        render_zero_run_summary(
            self, Console(file=buf, width=width, color_system=None), features=features
        )
        return buf.getvalue()

    def __str__(self) -> str:
        return self.summary().rstrip("\n")

    def bound(self, estimator: str, correction: str) -> AuditResult:
        """The :class:`AuditResult` of one estimator and correction (``"global"``/``"pointwise"``)."""
        for e in self.estimators:
            if e["name"] == estimator:
                if correction not in ("global", "pointwise"):
                    raise fail("correction", "'global' or 'pointwise'", correction)
                return AuditResult.from_dict(e[correction])
        names = [e["name"] for e in self.estimators]
        raise fail("estimator", f"one of {names}", estimator)
