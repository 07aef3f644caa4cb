"""An eps-DP lower bound from each attack of a membership-inference run.

``privaudit run`` plays one game in which the target's training set is a random half of
the audited pool; each attack gives one score per audited record. Read as a one-run
audit (Steinke, Nasr, Jagielski, NeurIPS 2023, Section 3; audit-math.md section 2),
every attack's scores give a lower bound on the eps of the training algorithm.
Several attacks are tried, so each is audited at level ``beta / K`` (Bonferroni over the
``K`` attacks): the largest of the ``K`` bounds then holds with confidence
``1 - beta`` jointly, and a release gate may compare that maximum with a claimed eps.

Assumption, stated in every result's notes: Steinke et al. assume each record is
included independently with probability 1/2; the pipeline samples exactly half of the
pool without replacement. The bound is reported under the assumption that this makes
no difference to the count of correct guesses (it is exact for eps = 0, where the count
is hypergeometric and thus more concentrated than the binomial).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from privaudit._validation import check_probability, fail
from privaudit.audit.one_run import one_run_audit

__all__ = ["ATTACK_BOUND_PROCEDURE", "SAMPLING_NOTE", "attack_one_run_bounds"]

#: ``procedure`` of the entries :func:`attack_one_run_bounds` returns.
ATTACK_BOUND_PROCEDURE = "one-run"

#: The default ``sampling_assumption``: Ye et al.'s Def. 3.2 game of ``privaudit run``.
SAMPLING_NOTE = (
    "The target's training set is a uniformly random half of the audited pool (sampled "
    "without replacement); Steinke et al. assume independent inclusion with probability "
    "1/2, and the bound is reported under the assumption that this makes no difference."
)


def attack_one_run_bounds(
    columns: Mapping[str, tuple[ArrayLike, ArrayLike]],
    *,
    confidence: float = 0.95,
    delta: float = 0.0,
    sampling_assumption: str = SAMPLING_NOTE,
) -> list[dict[str, Any]]:
    """One-run eps lower bound of each attack, Bonferroni-corrected over the attacks.

    Parameters
    ----------
    columns : mapping
        ``attack name -> (scores, member)`` on the records that attack scored (higher
        score = more likely member).
    confidence : float
        Joint confidence ``1 - beta`` of all the bounds together.
    delta : float
        delta of the audited (eps, delta)-DP hypothesis.
    sampling_assumption : str
        How membership was drawn and what the bound assumes about it (recorded in each
        entry as ``sampling_assumption`` and in its notes); e.g. scores pooled over
        several trials of a game.

    Returns
    -------
    list of dict
        One ``results.json`` audit entry per attack: the fields of
        :class:`~privaudit.records.AuditResult` (guess counts chosen by the union bound,
        at confidence ``1 - beta / K``) plus ``attack`` (its name) and
        ``family_confidence`` (``confidence``) and ``sampling_assumption``.
    """
    beta = 1.0 - check_probability(confidence, "confidence")
    if not columns:
        raise fail("columns", "scores of at least one attack", "none")
    k = len(columns)
    per_attack = 1.0 - beta / k
    out: list[dict[str, Any]] = []
    for name, (scores, member) in columns.items():
        res = one_run_audit(
            np.asarray(scores, dtype=np.float64),
            np.asarray(member, dtype=bool),
            confidence=per_attack,
            delta=delta,
            selection="union-bound",
        )
        d: dict[str, Any] = {f.name: getattr(res, f.name) for f in dataclasses.fields(res)}
        d["attack"] = str(name)
        d["family_confidence"] = float(confidence)
        d["sampling_assumption"] = sampling_assumption
        d["notes"] = [
            *res.notes,
            f"Audited at confidence 1 - beta/{k} (Bonferroni over {k} attacks): the largest "
            f"bound over the attacks holds with confidence {confidence:g}.",
            sampling_assumption,
        ]
        out.append(d)
    return out
