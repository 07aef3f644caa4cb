"""``privaudit verify`` of a PANORAMIA report: its bounds recomputed from the saved test scores.

The generic part (the manifest, the file digests, the attacks' metrics, the comparison with
tolerances) is the report core's (:mod:`privaudit.report.bundle`); the command line registers
:func:`verify_panoramia` for a results.json with a ``panoramia`` section.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from privaudit.errors import InvalidInputError
from privaudit.report.bundle import TOLERANCES, BundleError, Check, compare
from privaudit.report.results import plain

__all__ = ["verify_panoramia"]


def verify_panoramia(
    folder: Path, results: Mapping[str, Any], table: Any
) -> tuple[list[Check], list[Check]]:
    """PANORAMIA's bounds (and RM;RN's) recomputed from the saved test scores."""
    from privaudit.panoramia.report import recompute_panoramia
    from privaudit.report.results import ScoreTable

    rmrn_file = results.get("files", {}).get("rmrn_scores")
    rmrn = None
    if rmrn_file is not None:
        try:
            rmrn = ScoreTable.load(folder / str(rmrn_file))
        except Exception as exc:
            raise BundleError(f"BUNDLE: cannot read {rmrn_file} ({exc})") from None
    try:
        want = recompute_panoramia(results, table, rmrn)
    except InvalidInputError as exc:
        return [Check("panoramia", "mismatch", f"cannot recompute: {exc}")], []
    recorded = results["panoramia"]
    checks: list[Check] = []
    for key, value in want.items():
        c, _ = compare(recorded.get(key), plain(value), f"panoramia.{key}", TOLERANCES["bounds"])
        checks += c
    skipped = [
        Check(f"panoramia.{key}", "not-recomputable", "needs the models and the data")
        for key in ("generator", "helper", "classifiers")
        if recorded.get(key)
    ]
    if (recorded.get("comparisons") or {}).get("o1") is not None:
        skipped.append(
            Check(
                "panoramia.comparisons.o1",
                "not-recomputable",
                "needs the target's losses on the members and real non-members",
            )
        )
    return checks, skipped
