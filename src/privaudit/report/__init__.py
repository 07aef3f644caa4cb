"""Reports of an audit: ``results.json`` (versioned schema), ``scores.npz``, ``report.html``.

This layer never imports torch (an import-linter contract checks it).
"""

from __future__ import annotations

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
