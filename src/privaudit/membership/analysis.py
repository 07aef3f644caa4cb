"""Steps 5 and 6 of :func:`privaudit.membership.pipeline.run_audit`: what the report says of the scores.

:func:`metrics_step`: every metric of every attack (on a game's pooled draws over its
trials), the agreement matrix of the alpha-threshold attacks (Ye et al. 2022, Table 2), the
per-record score table and Steinke et al.'s one-run bound of every attack;
:func:`analysis_sections`: the threat model, the attacks' agreement at fixed FPRs and the
vulnerable records (Ye et al. Sec. 5.4), whose leave-one-out sample
:func:`vulnerable_leave_one_out` extends before the second training pass.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from privaudit.data import Dataset
from privaudit.membership.calibrated_eval import calibrated_section
from privaudit.membership.config import AuditConfig
from privaudit.membership.experiment import ExperimentConfig, ExperimentResult
from privaudit.membership.experiment_config import n_models_behind
from privaudit.membership.games import GameResult, game_attack_metrics, pool_game
from privaudit.membership.split_check import split_check_refusal
from privaudit.membership.threat_model import threat_model
from privaudit.membership.vulnerable import ScoredTarget, agreement_at_fpr, vulnerable_records
from privaudit.metrics.roc import AgreementMatrix, AttackMetrics, agreement_matrix, attack_metrics
from privaudit.records import AttackScores
from privaudit.report import ScoreTable, attack_entry
from privaudit.report.per_record import attack_score_fields
from privaudit.runtime.executor_base import Executor
from privaudit.runtime.seeds import derive_rng

__all__ = [
    "Metrics",
    "Scored",
    "aims_leave_one_out",
    "analysis_sections",
    "metrics_step",
    "vulnerable_leave_one_out",
]


@dataclasses.dataclass(frozen=True)
class Scored:
    """What the metrics read, for one target (Def. 3.2) or a game's pooled draws.

    ``record_ids``/``member``: every draw (audited record, or ``"t<trial>:<id>"`` over
    several trials); ``decisions``: per attack, its member decisions at alpha.
    """

    scores: dict[str, AttackScores]
    record_ids: np.ndarray
    member: np.ndarray
    metrics: dict[str, AttackMetrics]
    decisions: dict[str, np.ndarray]


def _scored_experiment(exp: ExperimentResult) -> Scored:
    metrics = {name: attack_metrics(sc, exp.member_of(name)) for name, sc in exp.scores.items()}
    decisions = {n: s.decisions() for n, s in exp.scores.items() if s.threshold is not None}
    return Scored(dict(exp.scores), exp.record_ids, exp.membership, metrics, decisions)


def _pooled_note(result: GameResult) -> str:
    """The sampling assumption of the one-run bounds on scores pooled over a game's trials."""
    return (
        f"Scores pooled over {len(result.trials)} trials of game {result.game.name} (independent "
        "training runs); the one-run analysis is applied to the pooled draws as if each "
        "draw's membership were an independent fair coin given the others: an assumption "
        "here, not checked for this game."
    )


def _scored_game(result: GameResult) -> Scored:
    pooled = pool_game(result)
    member_of: dict[Any, bool] = {}
    for p in pooled.values():
        member_of.update(zip(p.scores.record_ids.tolist(), p.member.tolist(), strict=True))
    ids = np.asarray(list(member_of))
    return Scored(
        scores={n: p.scores for n, p in pooled.items()},
        record_ids=ids,
        member=np.asarray([member_of[i] for i in ids.tolist()], dtype=bool),
        metrics={n: game_attack_metrics(p) for n, p in pooled.items()},
        decisions={n: p.decisions for n, p in pooled.items() if p.decisions is not None},
    )


def _agreement(scored: Scored) -> tuple[AgreementMatrix | None, list[str]]:
    """Agreement of the alpha-threshold attacks' decisions (Ye et al. 2022, Table 2).

    An attack that scored only some records (leave-one-out: every non-member, the
    sampled members) is compared with each other attack on the records both scored;
    the per-pair counts go with the matrix. The second value lists attacks left out
    (none today; kept for the results' ``agreement_excludes``).
    """
    index = {r: i for i, r in enumerate(scored.record_ids.tolist())}
    n = scored.record_ids.size
    decisions: dict[str, np.ndarray] = {}
    masks: dict[str, np.ndarray] = {}
    for name, d in scored.decisions.items():
        s = scored.scores[name]
        pos = np.asarray([index[r] for r in s.record_ids.tolist()], dtype=np.intp)
        full = np.zeros(n, dtype=bool)
        full[pos] = d
        mask = np.zeros(n, dtype=bool)
        mask[pos] = True
        decisions[name] = full
        masks[name] = mask
    if len(decisions) < 2:
        return None, []
    return agreement_matrix(decisions, scored.member, scored=masks), []


@dataclasses.dataclass(frozen=True)
class Metrics:
    """Step 5's output: the scored draws, every attack's entry, the agreement matrix (and
    the attacks it leaves out), the per-record score table and the one-run bounds."""

    scored: Scored
    entries: list[dict[str, Any]]
    agreement: AgreementMatrix | None
    excluded: list[str]
    table: ScoreTable
    audits: list[dict[str, Any]]


def metrics_step(
    exp: ExperimentResult,
    game_result: GameResult | None,
    exp_cfg: ExperimentConfig,
    *,
    split_check: Mapping[str, Any] | None = None,
) -> Metrics:
    """Step 5: every metric of every attack (over a game's trials, on its pooled draws),
    the agreement matrix, the per-record scores with their AUC intervals, and the
    one-run bounds (refused when ``split_check`` refutes a provided target's declared
    random split: :mod:`privaudit.membership.split_check`)."""
    scored = _scored_experiment(exp) if game_result is None else _scored_game(game_result)
    entries = [
        attack_entry(scored.metrics[name], n_reference_models=n_models_behind(name, exp_cfg))
        for name in scored.scores
    ]
    agreement, excluded = _agreement(scored)
    table = ScoreTable.from_attack_scores(
        list(scored.scores.values()), scored.record_ids, scored.member
    )
    for entry in entries:  # the AUC interval, from the saved scores
        entry.update(attack_score_fields(table, entry["name"]))
    audits = _one_run_audits(exp, table, game_result, split_check)
    return Metrics(scored, entries, agreement, excluded, table, audits)


def analysis_sections(
    config: AuditConfig,
    exp: ExperimentResult,
    game_result: GameResult | None,
    dataset: Dataset,
    m: Metrics,
    game_doc: dict[str, Any],
    n_aimed: int,
    executor: Executor | None = None,
    exp_vulnerable: ExperimentResult | None = None,
) -> dict[str, Any]:
    """The results' analysis sections: the threat model, the attacks' agreement at fixed
    FPRs, the vulnerable records (with the leave-one-out sample behind them; from
    ``exp_vulnerable``, the pass whose Attack L also scored records aimed at the record
    types, when given) and the pooled vs per-record calibrated TPR of the reference-model
    attacks (:mod:`privaudit.membership.calibrated_eval`, its runs on ``executor`` when
    given)."""
    scored = m.scored
    vexp = exp if exp_vulnerable is None else exp_vulnerable
    sections: dict[str, Any] = {
        "threat_model": threat_model(game_doc, m.entries, audits=m.audits),
        "agreement_at_fpr": agreement_at_fpr(
            ScoredTarget(
                scores={n: (s.record_ids, s.scores) for n, s in scored.scores.items()},
                member=dict(zip(scored.record_ids.tolist(), scored.member.tolist(), strict=True)),
            ),
            fprs=config.vulnerable.fprs,
        ),
        "vulnerable_records": _vulnerable(config, vexp, game_result, dataset),
    }
    sections["vulnerable_records"]["leave_one_out_sample"] = {
        "n_records": 0 if vexp.leave_one_out_ids is None else int(vexp.leave_one_out_ids.size),
        "n_aimed_at_record_types": n_aimed,
    }
    calibrated = calibrated_section(exp, executor=executor)
    if calibrated is not None:
        if game_result is not None and len(game_result.trials) > 1:
            calibrated["notes"].append("the reference models of the game's first trial")
        sections["calibrated_evaluation"] = calibrated
    return sections


def _one_run_audits(
    exp: ExperimentResult,
    table: ScoreTable,
    game_result: GameResult | None,
    split_check: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Steinke et al.'s one-run bound of every attack; for a DP-SGD target at the
    accountant's delta, with the accountant's epsilon beside each bound. A provided
    target's split was chosen by the auditor: its bounds are refused unless the auditor
    declared it drawn at random (:data:`~privaudit.stats.attack_bounds.SPLIT_NOT_RANDOMISED`)
    and the records alone do not refute that (``split_check``), and then rest on that
    declaration."""
    eps_acc = exp.target_info.get("accountant_epsilon")
    # a DP-SGD target: audit its (eps, delta) claim at the accountant's delta, and record
    # the accountant's epsilon beside every empirical lower bound
    audit_delta = float(exp.target_info.get("delta", 0.0)) if eps_acc is not None else 0.0
    # imported here, at its first use: a run that stops at its input checks never needs it
    from privaudit.stats.attack_bounds import (
        DECLARED_SPLIT_NOTE,
        SAMPLING_NOTE,
        SPLIT_NOT_RANDOMISED,
        attack_one_run_bounds,
        member_chosen_refusals,
    )

    note = SAMPLING_NOTE if game_result is None else _pooled_note(game_result)
    if exp.target_origin == "provided":
        note = DECLARED_SPLIT_NOTE if exp.split_randomised else "The auditor chose the split."
    audits: list[dict[str, Any]] = attack_one_run_bounds(
        {n: table.scored(n)[1:] for n in table.attacks},
        sampling_assumption=note,
        delta=audit_delta,
        refused=SPLIT_NOT_RANDOMISED
        if not exp.split_randomised
        else split_check_refusal(None if split_check is None else dict(split_check)),
        refused_attacks=member_chosen_refusals(
            table.attacks, "fixed-model" if game_result is None else game_result.game.name
        ),
    )
    if eps_acc is not None:
        for a in audits:
            dp_extra: dict[str, Any] = dict(a.get("extra") or {})
            dp_extra["accountant_epsilon"] = float(eps_acc)
            dp_extra["exceeds_accountant_epsilon"] = bool(a["epsilon_lower_bound"] > float(eps_acc))
            a["extra"] = dp_extra
    return audits


def aims_leave_one_out(config: AuditConfig) -> bool:
    return (
        config.vulnerable.leave_one_out_per_set > 0
        and "leave-one-out" in config.attack_names()
        and config.game.engine_name() == "fixed-model"
    )


def vulnerable_leave_one_out(
    config: AuditConfig, exp: ExperimentResult, dataset: Dataset
) -> tuple[Any, ...]:
    """Attack L's sample for a second pass: its first sample plus up to
    ``vulnerable.leave_one_out_per_set`` more members of each record type (Ye et al. Sec.
    5.4), drawn at random (seeded); empty when nothing is to add."""
    if not aims_leave_one_out(config) or exp.leave_one_out_ids is None:
        return ()
    first = _vulnerable(config, exp, None, dataset)
    have = set(exp.leave_one_out_ids.tolist())
    rng = derive_rng(config.seed, purpose="vulnerable/leave-one-out")
    extra: list[Any] = []
    for s in first["sets"]:
        if s["name"] == "random":
            continue
        pool = [r for r in s["record_ids"] if r not in have and r not in extra]
        k = min(config.vulnerable.leave_one_out_per_set, len(pool))
        extra += [pool[i] for i in sorted(rng.choice(len(pool), size=k, replace=False))]
    if not extra:
        return ()
    return (*exp.leave_one_out_ids.tolist(), *extra)


def _vulnerable(
    config: AuditConfig, exp: ExperimentResult, game: GameResult | None, dataset: Dataset
) -> dict[str, Any]:
    """Ye et al. Sec. 5.4 over the target(s) (:mod:`privaudit.membership.vulnerable`)."""
    trials = [exp] if game is None else list(game.trials)
    targets = []
    for t in trials:
        loss = None
        if t.target_signals is not None and "loss" in t.target_signals:
            loss = dict(zip(t.record_ids.tolist(), t.target_signals["loss"].tolist(), strict=True))
        targets.append(
            ScoredTarget(
                scores={n: (s.record_ids, s.scores) for n, s in t.scores.items()},
                member=dict(zip(t.record_ids.tolist(), t.membership.tolist(), strict=True)),
                loss=loss,
            )
        )
    X = dataset.subset(exp.record_ids).X
    v = config.vulnerable
    return vulnerable_records(
        targets, fprs=v.fprs, majority=v.majority, top=v.top, features=(exp.record_ids, X)
    )
