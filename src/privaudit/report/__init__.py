"""Reports of an audit: ``results.json`` (versioned schema), ``scores.npz``, ``report.html``.

This layer never imports torch (an import-linter contract checks it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from privaudit._lazy import lazy_exports

if TYPE_CHECKING:  # what a type checker sees; at run time each name is imported on first use
    from privaudit.report.results import (
        RESULTS_FILE,
        SCHEMA_VERSION,
        SCORES_FILE,
        ScoreTable,
        attack_entry,
        build_results,
        load_results,
        load_schema,
        recompute_attack_metrics,
        validate_results,
    )
    from privaudit.report.writer import HTML_FILE, ReportExistsError, check_output_dir, write_report

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "RESULTS_FILE": "privaudit.report.results",
        "SCHEMA_VERSION": "privaudit.report.results",
        "SCORES_FILE": "privaudit.report.results",
        "ScoreTable": "privaudit.report.results",
        "attack_entry": "privaudit.report.results",
        "build_results": "privaudit.report.results",
        "load_results": "privaudit.report.results",
        "load_schema": "privaudit.report.results",
        "recompute_attack_metrics": "privaudit.report.results",
        "validate_results": "privaudit.report.results",
        "HTML_FILE": "privaudit.report.writer",
        "ReportExistsError": "privaudit.report.writer",
        "check_output_dir": "privaudit.report.writer",
        "write_report": "privaudit.report.writer",
    },
)

__all__ = [
    "HTML_FILE",
    "RESULTS_FILE",
    "SCHEMA_VERSION",
    "SCORES_FILE",
    "ReportExistsError",
    "ScoreTable",
    "attack_entry",
    "build_results",
    "check_output_dir",
    "load_results",
    "load_schema",
    "recompute_attack_metrics",
    "validate_results",
    "write_report",
]
