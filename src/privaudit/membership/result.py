"""What a membership audit returns: :class:`AuditReport`.

The result of :func:`privaudit.run_audit` (``privaudit run`` / ``demo``) and of
:func:`privaudit.audit_model`. Its figures are read from its ``results.json`` document
(:class:`~privaudit.report.figures.ResultsFigures`: ``attacks``, ``target``, ``bounds``,
``strongest_attack()``, ``to_dict()``, ``to_json()``); :meth:`AuditReport.save` writes the
folder the command line writes (``results.json``, ``scores.npz``, ``report.html``,
``bundle.json``: ``privaudit verify`` re-checks it); ``str(result)`` is the summary the
command line prints.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from privaudit.membership.experiment import ExperimentResult
from privaudit.membership.games import GameResult
from privaudit.metrics.roc import AgreementMatrix, AttackMetrics
from privaudit.records import ScoreTable
from privaudit.report.figures import ResultsFigures

__all__ = ["AuditReport"]


@dataclasses.dataclass(frozen=True)
class AuditReport(ResultsFigures):
    """The outcome of a membership-inference audit (:func:`privaudit.run_audit`,
    :func:`privaudit.audit_model`).

    Figures (read from ``results``): :attr:`attacks` (per attack: ``name``, ``auc``,
    ``auc_ci``, ``tpr_at_fpr`` / ``tpr(fpr)``, ``n_members``, ``n_non_members``,
    ``alpha``, ``achieved_fpr``...), :attr:`target` (accuracies, counts), :attr:`bounds`
    (the one-run DP lower bounds, one per attack), :meth:`strongest_attack`,
    :meth:`attack`; :meth:`to_dict` / :meth:`to_json` give ``results.json``;
    :meth:`save` writes the report folder; ``str(report)`` is the command line's summary.

    Attributes
    ----------
    results : dict
        The ``results.json`` document (validated).
    metrics : dict[str, AttackMetrics]
        Every metric of every attack, with its ROC curve.
    agreement : AgreementMatrix or None
        Agreement of the alpha-threshold attacks' decisions (None with fewer than two).
    scores : ScoreTable
        Per-record scores with record ids and membership.
    experiment : ExperimentResult
        Everything the experiment produced (for a game of several trials: the first).
    out_dir : Path or None
        The report folder (None while none was written; :meth:`save` sets it).
    game : GameResult or None
        Every trial of the game, when ``config.game`` is not Def. 3.2.
    bundle : mapping or None
        The manifest of ``bundle.json`` (config, seeds, versions), written by :meth:`save`.
    """

    results: dict[str, Any]
    metrics: dict[str, AttackMetrics]
    agreement: AgreementMatrix | None
    scores: ScoreTable
    experiment: ExperimentResult
    out_dir: Path | None
    game: GameResult | None = None
    bundle: Mapping[str, Any] | None = None

    def save(self, folder: str | Path, *, overwrite: bool = False) -> Path:
        """Write the report folder the command line writes, atomically: ``results.json``,
        ``scores.npz``, ``report.html`` and ``bundle.json`` (``privaudit verify folder``
        recomputes every figure from it).

        Parameters
        ----------
        folder : path
            The report folder to create (its parent is created if needed).
        overwrite : bool
            Replace an existing folder; without it an existing one raises
            :class:`~privaudit.report.ReportExistsError` and nothing is touched.

        Returns
        -------
        Path
            ``folder``; :attr:`out_dir` and :attr:`report_path` point to it afterwards.
        """
        from privaudit.report.writer import write_report

        out = write_report(
            Path(folder), self.results, self.scores, overwrite=overwrite, bundle=self.bundle
        )
        object.__setattr__(self, "out_dir", out)  # the report now lives there
        return out

    def summary(self, *, width: int = 80) -> str:
        """The summary ``privaudit run`` prints (to a pipe: ``width`` columns, no colour):
        the target, the game, one row per attack (AUC, TPR at 0.1% and 1% FPR, the FPR
        achieved at alpha with its 95% interval, records, models), notes and warnings."""
        from privaudit.membership.summary import summary_text

        return summary_text(self.results, self.out_dir, width=width)

    def __str__(self) -> str:
        return self.summary().rstrip("\n")

    def __repr__(self) -> str:
        names = ", ".join(a.name for a in self.attacks)
        return f"AuditReport(attacks=[{names}], out_dir={self.out_dir!r})"
