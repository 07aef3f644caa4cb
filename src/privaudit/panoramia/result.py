"""What a PANORAMIA audit returns: :class:`PanoramiaReport`, its ``results.json`` document."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from privaudit.records import ScoreTable

__all__ = ["PanoramiaReport", "panoramia_summary"]


class PanoramiaReport(dict[str, Any]):
    """The ``results.json`` document of a PANORAMIA audit (:func:`privaudit.run_panoramia_audit`),
    with what :meth:`save` needs to write its report folder.

    It is the document itself (a ``dict``: ``report["panoramia"]["bounds"]["eps_tilde"]``),
    plus :meth:`summary` (the headline figures: c_lb, {c+eps}_lb, eps_tilde, the RM;RN and
    O(1) comparisons), :meth:`to_dict` / :meth:`to_json` and :meth:`save`.

    Attributes
    ----------
    scores : ScoreTable
        The MIA's and the baseline's scores of the test records (``panoramia_scores.npz``).
    rmrn_scores : ScoreTable or None
        The scores of the RM;RN comparison, when real non-members were given.
    bundle : mapping or None
        The manifest of ``bundle.json``.
    out_dir : Path or None
        The report folder (None while none was written; :meth:`save` sets it).
    """

    def __init__(
        self,
        results: Mapping[str, Any],
        *,
        scores: ScoreTable,
        rmrn_scores: ScoreTable | None = None,
        bundle: Mapping[str, Any] | None = None,
        out_dir: Path | None = None,
    ) -> None:
        super().__init__(results)
        self.scores = scores
        self.rmrn_scores = rmrn_scores
        self.bundle = bundle
        self.out_dir = out_dir

    @property
    def report_path(self) -> Path | None:
        """``report.html`` of the report folder, or None when none was written."""
        return None if self.out_dir is None else Path(self.out_dir) / "report.html"

    def summary(self) -> dict[str, Any]:
        """The headline figures (:func:`panoramia_summary`)."""
        return panoramia_summary(self)

    def to_dict(self) -> dict[str, Any]:
        """The ``results.json`` document as a plain ``dict`` (a deep copy)."""
        return copy.deepcopy(dict(self))

    def to_json(self, *, indent: int | None = 2) -> str:
        """``results.json``'s text (the file holds this and a newline)."""
        return json.dumps(self, indent=indent, allow_nan=False)

    def save(self, folder: str | Path, *, overwrite: bool = False) -> Path:
        """Write the report folder the command line writes (``results.json``,
        ``panoramia_scores.npz``, ``rmrn_scores.npz`` when RM;RN ran, ``report.html``,
        ``bundle.json``), atomically; returns ``folder`` (:attr:`out_dir` afterwards)."""
        from privaudit.panoramia.report import write_panoramia_report

        out = write_panoramia_report(
            Path(folder),
            self.to_dict(),
            self.scores,
            rmrn_table=self.rmrn_scores,
            overwrite=overwrite,
            bundle=self.bundle,
        )
        self.out_dir = out
        return out


def panoramia_summary(results: Mapping[str, Any]) -> dict[str, Any]:
    """The headline figures of a PANORAMIA results document (the example's ``--json``):
    ``c_lb``, ``c_plus_eps_lb``, ``eps_tilde``, ``m``, ``eps_rmrn`` / ``m_rmrn``,
    ``eps_o1`` / ``m_o1`` (None when not run), ``confidence``."""
    p = results["panoramia"]
    b = p["bounds"]
    rm = p["comparisons"]["rmrn"]
    o1 = p["comparisons"]["o1"]
    return {
        "modality": p["modality"],
        "c_lb": b["c_lb"],
        "c_plus_eps_lb": b["c_plus_eps_lb"],
        "eps_tilde": b["eps_tilde"],
        "m": p["sizes"]["m"],
        "eps_rmrn": None if rm is None else rm["eps_lb"],
        "m_rmrn": None if rm is None else rm["m"],
        "eps_o1": None if o1 is None else o1["eps_lb"],
        "m_o1": None if o1 is None else o1["m"],
        "confidence": p["confidence"],
    }
