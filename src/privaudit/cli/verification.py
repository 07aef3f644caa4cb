"""Verify a bundle written by any privaudit command: the report core's verifier with every
procedure's parts (what ``privaudit verify`` runs, without the command line's typer).

The report core (:func:`privaudit.report.bundle.verify_bundle`) cannot import the audit
procedures; the command line, above them all, registers their verifiers here: Zero-Run's
bundles (:func:`privaudit.zero_run.verify.verify_zero_run`), the canary audit's bundles
(:func:`privaudit.canaries.verify.verify_canaries`) and PANORAMIA's section of a
results.json (:func:`privaudit.panoramia.verify.verify_panoramia`). ``privaudit.verify_bundle``
is this function.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from privaudit.report.bundle import VerifyReport

__all__ = ["verify_bundle"]


def verify_bundle(path: str | Path) -> VerifyReport:
    """Recompute every metric and bound of a bundle written by any privaudit command.

    Parameters
    ----------
    path : path
        A report folder holding ``bundle.json`` (``privaudit run``, ``demo``, ``audit
        --out``, ``zero-run --out``, ``panoramia``; a result's ``save(folder)``), or the file.

    Returns
    -------
    VerifyReport
        One check per file digest and per recomputed value (``ok`` / ``mismatch``) and
        the recorded values that need the model or the data (``not-recomputable``);
        ``report.ok`` is True when nothing mismatches.

    Raises
    ------
    BundleError
        When the manifest or a file it needs cannot be read at all.
    """
    from privaudit.canaries.verify import verify_canaries
    from privaudit.panoramia.verify import verify_panoramia
    from privaudit.report.bundle import verify_bundle as verify_with
    from privaudit.zero_run.verify import verify_zero_run

    return verify_with(
        path,
        kinds={"zero-run": verify_zero_run, "canaries": verify_canaries},
        sections={"panoramia": verify_panoramia},
    )
