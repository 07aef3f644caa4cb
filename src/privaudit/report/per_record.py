"""What the saved per-record scores say beyond the ROC: AUC intervals and per-record risk.

* :func:`attack_score_fields`: the fields of an attack's ``results.json`` entry computed
  from its scores (the AUC interval of :mod:`privaudit.metrics.auc_ci`); ``run``
  writes them and ``verify`` recomputes them with the same function.
* :func:`record_risk`: one row per audited record: its score under each attack, the
  *flagging FPR* of that score (the fraction of audited non-members scoring at least as
  high: the false-positive rate an auditor accepts to call this record a member; small =
  exposed) and whether the attack's alpha threshold flags it. Records are ranked by
  their smallest flagging FPR over the attacks. :func:`record_risk_csv` writes the table
  as CSV (the report embeds it as a ``data:`` URI).
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privaudit.metrics.auc_ci import auc_ci_fields
from privaudit.report.results import ScoreTable

__all__ = ["RecordRisk", "attack_score_fields", "flagging_fpr", "record_risk", "record_risk_csv"]


def attack_score_fields(
    table: ScoreTable, name: str, *, confidence: float = 0.95
) -> dict[str, Any]:
    """Fields of attack ``name``'s results entry computed from its scores (AUC interval;
    clustered by ``table.groups`` when the table has them)."""
    _, s, member = table.scored(name)
    groups = None
    if table.groups is not None:
        groups = table.groups[~np.isnan(table.scores[name])]
    return auc_ci_fields(s, member, confidence=confidence, groups=groups)


def flagging_fpr(scores: NDArray[np.float64], member: NDArray[np.bool_]) -> NDArray[np.float64]:
    """For each score: the fraction of non-members scoring at least as high (NaN stays NaN).

    ``fpr_i = #{j non-member scored: s_j >= s_i} / #{non-members scored}``; the empirical
    false-positive rate of the threshold ``s_i`` (Ye et al. 2022's alpha, per record).
    """
    out = np.full(scores.shape, np.nan)
    ok = ~np.isnan(scores)
    neg = np.sort(scores[ok & ~member])
    if neg.size == 0:
        return out
    # number of negatives >= s = n - (number < s)
    below = np.searchsorted(neg, scores[ok], side="left")
    out[ok] = (neg.size - below) / neg.size
    return out


@dataclass(frozen=True)
class RecordRisk:
    """Per-record risk of every attack, ranked (most exposed first).

    ``order`` ranks records by their smallest flagging FPR (ties: more attacks flagging
    first, then record id); arrays are in the table's record order.
    """

    attacks: tuple[str, ...]
    record_ids: NDArray[Any]
    member: NDArray[np.bool_]
    scores: dict[str, NDArray[np.float64]]
    fpr: dict[str, NDArray[np.float64]]
    flagged: dict[str, NDArray[np.bool_] | None]
    min_fpr: NDArray[np.float64]
    n_flagged: NDArray[np.int64]
    order: NDArray[np.int64]

    def row(self, i: int) -> dict[str, Any]:
        """Record ``i`` as a dict (NaN as None)."""
        d: dict[str, Any] = {
            "record_id": self.record_ids[i].item(),
            "member": bool(self.member[i]),
            "min_fpr": _none(self.min_fpr[i]),
            "n_flagged": int(self.n_flagged[i]),
        }
        for a in self.attacks:
            d[f"score:{a}"] = _none(self.scores[a][i])
            d[f"fpr:{a}"] = _none(self.fpr[a][i])
            fl = self.flagged[a]
            d[f"flagged:{a}"] = None if fl is None or math.isnan(self.scores[a][i]) else bool(fl[i])
        return d


def _none(x: float) -> float | None:
    return None if math.isnan(float(x)) else float(x)


def record_risk(table: ScoreTable) -> RecordRisk:
    """The per-record risk table of every attack in ``table``."""
    member = table.member
    fpr: dict[str, NDArray[np.float64]] = {}
    flagged: dict[str, NDArray[np.bool_] | None] = {}
    for a in table.attacks:
        s = table.scores[a]
        fpr[a] = flagging_fpr(s, member)
        thr = table.thresholds.get(a)
        flagged[a] = None if thr is None else np.where(np.isnan(s), False, s >= thr)
    stack = np.vstack([fpr[a] for a in table.attacks])
    all_nan = np.isnan(stack).all(axis=0)
    min_fpr = np.where(all_nan, np.nan, np.nanmin(np.where(np.isnan(stack), np.inf, stack), axis=0))
    n_flagged = np.zeros(member.size, dtype=np.int64)
    for f in flagged.values():
        if f is not None:
            n_flagged += f
    ids = table.record_ids
    key_fpr = np.where(np.isnan(min_fpr), np.inf, min_fpr)
    order = np.lexsort((np.arange(ids.size), -n_flagged, key_fpr)).astype(np.int64)
    return RecordRisk(
        attacks=table.attacks,
        record_ids=ids,
        member=member,
        scores=dict(table.scores),
        fpr=fpr,
        flagged=flagged,
        min_fpr=min_fpr,
        n_flagged=n_flagged,
        order=order,
    )


def record_risk_csv(risk: RecordRisk) -> str:
    """The whole table as CSV, most exposed first; empty cells where an attack did not score.

    The cells of :meth:`RecordRisk.row` (floats as ``repr``, booleans as ``1`` / ``0``,
    NaN and None empty), built a column at a time."""
    order = np.asarray(risk.order, dtype=np.intp)
    cols = ["record_id", "member", "min_fpr", "n_flagged"]
    cells: list[list[str]] = [
        [str(r) for r in risk.record_ids[order].tolist()],
        _bool_cells(risk.member[order]),
        _float_cells(risk.min_fpr[order]),
        [str(v) for v in risk.n_flagged[order].tolist()],
    ]
    for a in risk.attacks:
        cols += [f"score:{a}", f"fpr:{a}", f"flagged:{a}"]
        scored = ~np.isnan(risk.scores[a][order])
        fl = risk.flagged[a]
        cells += [
            _float_cells(risk.scores[a][order]),
            _float_cells(risk.fpr[a][order]),
            [""] * order.size if fl is None else _bool_cells(fl[order], scored),
        ]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(cols)
    w.writerows(zip(*cells, strict=True))
    return buf.getvalue()


def _float_cells(v: NDArray[np.float64]) -> list[str]:
    return ["" if x != x else repr(x) for x in np.asarray(v, dtype=np.float64).tolist()]


def _bool_cells(v: NDArray[np.bool_], present: NDArray[np.bool_] | None = None) -> list[str]:
    out = ["1" if x else "0" for x in np.asarray(v, dtype=bool).tolist()]
    if present is not None:
        out = [c if p else "" for c, p in zip(out, present.tolist(), strict=True)]
    return out
