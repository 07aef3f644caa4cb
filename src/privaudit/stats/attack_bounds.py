"""An eps-DP lower bound from each attack of a membership-inference run.

``privaudit run`` plays one game in which each audited record joins the target's
training set by its own fair coin; each attack gives one score per audited record. Read
as a one-run audit (Steinke, Nasr, Jagielski, NeurIPS 2023, Section 3; audit-math.md
section 2), every attack's scores give a lower bound on the eps of the training
algorithm. Several attacks are tried, so each is audited at level ``beta / K``
(Bonferroni over the ``K`` attacks): the largest of the ``K`` bounds then holds with
confidence ``1 - beta`` jointly, and a release gate may compare that maximum with a
claimed eps.

Sampling, stated in every result's notes: Steinke et al. assume each record is included
independently with probability 1/2, and ``privaudit run`` draws exactly that (one coin
per record, :mod:`privaudit.membership.ye_split`). A uniformly random half drawn without
replacement is *not* covered by their proof: at eps = 0 the count of correct guesses
among ``k`` positive and ``k`` negative guesses is then twice a hypergeometric count,
less concentrated than the binomial (variance ``m^2/(4(m-1))`` against ``m/4``), and at
a fixed guess count its tail at the binomial's critical value can exceed beta (by up to
1.8x in a scratch computation on pools of 200 to 1,000). Earlier versions drew such a
half; a provided target whose auditor declares a random half (``randomised_split``) is
still treated as independent coins, and its notes say the proof does not cover it.

The membership must have been drawn at random, independently of the records, before the
model was trained: Steinke et al.'s guarantee is over that draw. A split the auditor
chose (e.g. the first rows, or the records a model fits well) carries no such guarantee:
a model that never saw the audited records, with members chosen as the records it fits
best, gets a "bound" of eps >= 5.5 at 95% from the loss attack (scratch check on the
digits data). Where nothing vouches for the draw (``refused``), every entry's bound is
the trivial 0 and it is marked not gated (``extra["gated"]`` False, with the reason),
so no claimed eps is checked against it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from privaudit._stats import pure_groups
from privaudit._validation import check_probability, fail
from privaudit.stats.one_run import one_run_audit

__all__ = [
    "ATTACK_BOUND_PROCEDURE",
    "DECLARED_SPLIT_NOTE",
    "MEMBER_CHOSEN_GAMES",
    "MEMBER_CHOSEN_SAMPLE",
    "SAMPLING_NOTE",
    "SPLIT_NOT_RANDOMISED",
    "attack_one_run_bounds",
    "group_scores",
    "grouped_one_run_bounds",
    "member_chosen_refusals",
]

#: ``procedure`` of the entries :func:`attack_one_run_bounds` returns.
ATTACK_BOUND_PROCEDURE = "one-run"

#: The default ``sampling_assumption``: Ye et al.'s Def. 3.2 game of ``privaudit run``.
SAMPLING_NOTE = (
    "Each audited record joined the target's training set by its own fair coin, drawn "
    "independently (the number of members is Binomial(n, 1/2)), as Steinke et al.'s "
    "one-run bound assumes."
)


#: The sampling assumption of a provided target's bounds when its split is declared random.
DECLARED_SPLIT_NOTE = (
    "The auditor declared that the target's members were drawn at random, independently "
    "of the records, before it was trained (randomised_split); privaudit cannot check "
    "it, and the bound holds only if it is true. Steinke et al. assume independent "
    "inclusion with probability 1/2 (one fair coin per record); a uniformly random half "
    "of the audited records is treated as such coins, which their proof does not cover."
)


#: Why the bound of Attack L (leave-one-out) is refused where its draws are all its scored
#: records (the fixed-model and average games): they are chosen by their membership (every
#: non-member and a fixed number of members, Ye et al. 2022, Sec. 4.5), so their bits are
#: no independent fair coins. In the fixed-record games its draws are the fixed records,
#: each with its own coin, and the bound stands.
MEMBER_CHOSEN_SAMPLE = (
    "refused: Attack L (leave-one-out) scores every non-member and a fixed number of "
    "members, a sample chosen by membership, so the bits of its records are not the "
    "independent fair coins Steinke et al.'s bound needs"
)

#: The games in which Attack L's draws are the records it chose by membership.
MEMBER_CHOSEN_GAMES = ("fixed-model", "average")


def member_chosen_refusals(attacks: Sequence[str], game: str) -> dict[str, str]:
    """``refused_attacks`` for :func:`attack_one_run_bounds`: Attack L where its draws are
    a sample chosen by membership (:data:`MEMBER_CHOSEN_SAMPLE`), for the game ``game``."""
    if game not in MEMBER_CHOSEN_GAMES:
        return {}
    return {a: MEMBER_CHOSEN_SAMPLE for a in attacks if a == "leave-one-out"}


#: Why the bounds of a split privaudit did not draw are refused (``not_gated_reason``).
SPLIT_NOT_RANDOMISED = (
    "refused: the auditor chose the members, and nothing says they were drawn at random "
    "independently of the records before training, which the one-run bound needs "
    "(Steinke et al. 2023, Sec. 3): a chosen split can make a model that never saw the "
    "audited records look leaky. Declare randomised_split if the members were so drawn, "
    "or audit with 'privaudit zero-run', made for splits that were not randomised"
)


def attack_one_run_bounds(
    columns: Mapping[str, tuple[ArrayLike, ArrayLike]],
    *,
    confidence: float = 0.95,
    delta: float = 0.0,
    sampling_assumption: str = SAMPLING_NOTE,
    refused: str | None = None,
    refused_attacks: Mapping[str, str] | None = None,
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
    refused : str, optional
        Why no bound may be printed (e.g. :data:`SPLIT_NOT_RANDOMISED`): every entry's
        ``epsilon_lower_bound`` is then the trivial 0 (``mu_lower_bound`` None), its
        ``extra`` holds ``gated`` False and ``not_gated_reason``, and its notes say why;
        the guess counts stay, to show what the attack did.
    refused_attacks : mapping, optional
        ``attack name -> reason``: the entries of those attacks only are refused as with
        ``refused`` (e.g. an attack that scored a sample of records chosen by their
        membership, whose bits are then no independent coins); ``refused`` wins.

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
    out: list[dict[str, Any]] = []
    for name, (scores, member) in columns.items():
        res = one_run_audit(
            np.asarray(scores, dtype=np.float64),
            np.asarray(member, dtype=bool),
            beta=beta / k,  # exact: not rebuilt from 1 - (1 - beta / k)
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
        reason = refused if refused is not None else (refused_attacks or {}).get(str(name))
        if reason is not None:
            _refuse(d, reason)
        out.append(d)
    return out


def _refuse(entry: dict[str, Any], reason: str) -> None:
    """Set an entry's bound to the trivial 0, not gated, with ``reason`` (``refused``); the
    candidate guess counts' bounds go too (each is as unfounded as the bound)."""
    entry["epsilon_lower_bound"] = 0.0
    entry["mu_lower_bound"] = None
    extra = {k: v for k, v in dict(entry.get("extra") or {}).items() if k != "candidate_bounds"}
    entry["extra"] = {**extra, "gated": False, "not_gated_reason": reason}
    entry["notes"] = [f"REFUSED (bound set to 0): {reason}.", *entry["notes"]]


def group_scores(
    scores: ArrayLike, member: ArrayLike, groups: ArrayLike
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One score per group (the mean of its records' scores) and its membership.

    A group is a unit of randomisation: all its records were included or excluded
    together (e.g. the chunks of one document). Returns ``(scores, member, sizes)`` of
    the groups, in order of first appearance. Raises when a group mixes members and
    non-members (then it was not one unit of randomisation).
    """
    s = np.asarray(scores, dtype=np.float64)
    m = np.asarray(member, dtype=bool)
    g = np.asarray(groups, dtype=object)
    if not (s.shape == m.shape == g.shape) or s.ndim != 1:
        raise fail(
            "scores/member/groups",
            "three 1-d arrays of one length",
            f"{s.shape}, {m.shape}, {g.shape}",
        )
    idx, sizes, group_member = pure_groups(g, m)
    sums = np.bincount(idx, weights=s, minlength=sizes.size)
    return sums / sizes, group_member, sizes


def grouped_one_run_bounds(
    columns: Mapping[str, tuple[ArrayLike, ArrayLike]],
    groups: ArrayLike,
    *,
    unit: str = "group",
    confidence: float = 0.95,
    sampling_assumption: str = SAMPLING_NOTE,
    refused: str | None = None,
    refused_attacks: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """One-run eps lower bounds when membership was randomised by groups of records.

    Steinke et al.'s analysis needs one independent inclusion coin per audited example.
    When whole groups were included or excluded together (the chunks of a document), the
    examples are the groups: each group is scored by the mean of its records' scores
    (:func:`group_scores`) and :func:`attack_one_run_bounds` audits the groups. That bounds
    eps for adding or removing one whole group; by group privacy (a record-level eps-DP
    algorithm is ``k * eps``-DP for a group of ``k`` records; ``mu``-GDP gives ``k * mu``,
    Dong, Roth, Su 2022, Thm. 2.14) the record-level bound is the group bound divided by
    ``k_max``, the largest number of audited records in one group. Pure DP only
    (``delta = 0``): group privacy of (eps, delta) also inflates delta.

    With one record per group this is :func:`attack_one_run_bounds` on the records,
    unchanged. Each entry's ``extra`` holds ``unit``, ``n_units``, ``max_records_per_unit``
    and, when ``k_max > 1``, ``unit_epsilon_lower_bound`` / ``unit_mu_lower_bound`` (the
    bounds for one whole group). ``refused``, ``refused_attacks``: as
    :func:`attack_one_run_bounds`'s.
    """
    if not columns:
        raise fail("columns", "scores of at least one attack", "none")
    grouped: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    k_max = 1
    n_units = 0
    for name, (scores, member) in columns.items():
        gs, gm, sizes = group_scores(scores, member, groups)
        grouped[name] = (gs, gm)
        k_max, n_units = int(sizes.max()), int(sizes.size)
    entries = attack_one_run_bounds(
        grouped,
        confidence=confidence,
        sampling_assumption=sampling_assumption,
        refused=refused,
        refused_attacks=refused_attacks,
    )
    for e in entries:
        extra: dict[str, Any] = dict(e.get("extra") or {})
        extra.update(unit=unit, n_units=n_units, max_records_per_unit=k_max)
        if k_max > 1:
            extra["unit_epsilon_lower_bound"] = e["epsilon_lower_bound"]
            extra["unit_mu_lower_bound"] = e.get("mu_lower_bound")
            e["epsilon_lower_bound"] = e["epsilon_lower_bound"] / k_max
            if e.get("mu_lower_bound") is not None:
                e["mu_lower_bound"] = e["mu_lower_bound"] / k_max
            e["notes"] = [
                *e["notes"],
                f"Membership was randomised by {unit} ({n_units} {unit}s, up to {k_max} "
                f"records each): the {unit}s were audited (score = mean of their records' "
                f"scores), and the record-level bound is the {unit} bound divided by {k_max} "
                "(group privacy).",
            ]
        e["extra"] = extra
    return entries
