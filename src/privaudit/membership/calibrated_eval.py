r"""Pooled and per-record calibrated TPR at FPR from the reference models (``results.json["calibrated_evaluation"]``).

Jälkö, Pradhan, Räisä and Honkela (arXiv 2605.25819, 2026) evaluate an attack the
*efficient* way: every one of many models trained on random halves of the data plays the
target in turn, attacked with the others, and each record is scored by the models that
trained on it (IN) and the models that did not (OUT). The TPR at FPR of the scores pooled
over records is then not calibrated per record (one threshold gives each record its own
FPR), and the per-record Gaussian thresholds fitted on finitely many models are biased
upwards; :func:`privaudit.metrics.calibrated.calibrated_tprs_at_fprs` computes the pooled
figure (with the between-record spread of the per-record FPRs at its threshold), the
per-record calibrated one, the TPR of a per-record threshold fitted from the record's OUT
scores, the check of that threshold's FPR on the scores and the plug-in TPR
(:mod:`privaudit.metrics.calibrated`).

Why these figures. With an audit's 16 to 64 reference models a record has 4 to 16 OUT
scores, too few to fit its FPR-alpha threshold: a threshold fitted from them (the
Student-t prediction quantile, exact FPR alpha) is so noisy that its TPR is far below the
record's TPR at FPR alpha (0.24 against 0.75 at 1% with 4 OUT scores), and a per-record
Gaussian fit of the IN and OUT scores is biased upwards at 0.1% and assumes Gaussian IN
scores. The calibrated figure therefore deconvolves: the fitted OUT Gaussian's noise has a
known law, so the law of the IN scores standardised by the *true* OUT Gaussian is fitted
over all records, and the mean per-record TPR at FPR alpha read from it; it assumes
Gaussian OUT scores per record only, as the per-record threshold does, and needs 4 OUT
scores per record. The fitted-threshold and plug-in figures stay beside it, labelled with
what they are (a feasible attack's TPR at FPR alpha; the efficient LiRA evaluation's
figure, at a per-record FPR above alpha, returned with it).

**One attack, fitted once: half the reference models fit it, the other half are the
targets.** :func:`calibrated_section` runs the evaluation on an audit's reference models:
the first half of them (``n_map_references``) are the attack's references, and each of the
others (up to :data:`MAX_PSEUDO_TARGETS`) plays the target in turn, attacked with that same
half and the attack's configured settings; the real target's membership is never read.
Every pseudo-target is scored by one fitted attack, so a record's scores by the
pseudo-targets are independent draws given that fit (independent training runs): what the
per-record figures assume. Attacking each reference model with *all the others* (leave one
out, the efficient evaluation) breaks that: the fit that scores pseudo-target j is made of
the record's other pseudo-targets' signals, so a record's OUT scores are centred on each
other (online LiRA's score of model j is then about its deviation from the record's other
OUT signals). On records whose per-record truth is known (the tests' simulated world, 8
reference models, 6,000 records), that evaluation read a record FPR spread of 0 where the
attack's true spread at 1% was 1.2%, and a calibrated TPR of 0.78 [0.75, 0.80] at 1%, an
interval that missed the truth, 0.84; with the halves, the interval holds the truth. The
figures are those of the attack with half the audit's reference models, weaker than the
audit's attack with all of them; the section says how many (``n_map_references``). Only the records IN for
some and OUT for others of the attack's references are scored (an online attack needs both;
nearly all with 16 reference models); a record has about half the pseudo-targets as OUT
models (hypergeometric: 4 or more of 8 for about 69% of the records with 16 reference
models), and its calibrated figure needs 4 of them, so 16 reference models at least for
most records.

Only the reference-model attacks of the likelihood-ratio family are evaluated
(:data:`CALIBRATED_ATTACKS`, those of the audit that ran): they read nothing but the
reference models and the population, which each pseudo-target has too. The pseudo-target's
own population signals are its reference row on the population records (a non-member of
every population record unless ``reference_population_membership`` says otherwise; then
RMIA's population is not all non-members of that pseudo-target, as noted in the section).
A record enters an attack's figures when the pseudo-targets give it at least 2 OUT and 1
IN score, and its calibrated figure with at least 4 OUT scores.

Each (attack, pseudo-target) run is independent of the others, so an audit sends them as
the tasks of one map through its executor (its worker processes, or its Ray cluster): the
evaluation is the heaviest step of an audit after training (with 32 reference models on
10,000 records, LiRA's leave-one-model-out tuning runs inside every pseudo-target's
attack), and it no longer runs on the driver alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import special

from privaudit.attacks import AttackData, run_attack
from privaudit.errors import DesignError
from privaudit.membership.experiment import ExperimentResult
from privaudit.metrics.calibrated import (
    CALIBRATED_CI_METHOD,
    CALIBRATED_CI_REPLICATES,
    MIN_OUT_DECONVOLVED,
    calibrated_tprs_at_fprs,
)
from privaudit.records import MembershipMatrix, SignalTable
from privaudit.runtime.executor_base import Executor

__all__ = [
    "CALIBRATED_ATTACKS",
    "CALIBRATED_FPRS",
    "MAX_PSEUDO_TARGETS",
    "calibrated_evaluation",
    "calibrated_section",
    "gaussian_scale",
    "pseudo_target_data",
]

#: The attacks evaluated (in this order), when the audit ran them.
CALIBRATED_ATTACKS: tuple[str, ...] = (
    "lira-online",
    "lira-offline",
    "rmia-online",
    "rmia-offline",
    "bavaria-online",
    "bavaria-offline",
    "informia-online",
    "informia-offline",
)

#: The false-positive rates of the figures.
CALIBRATED_FPRS: tuple[float, ...] = (0.01, 0.001)

#: At most this many reference models play the target (of the second half; the first half
#: are the attack's references): the cost is one attack run per pseudo-target, and the
#: attacks' own tuning (LiRA's clip and shrinkage, RMIA's offline a, BaVarIA's clip) runs in
#: each. The calibrated figure needs 4 OUT scores per record and is the more precise the
#: more it has.
MAX_PSEUDO_TARGETS = 64

_METHOD = (
    "The first half of the reference models are the attack's references; each of the "
    "others in turn plays the target, attacked with that same half (the real target is not "
    "used), so that a record's scores are independent given the one fitted attack; each "
    "record is scored by the pseudo-targets that trained on it (IN) and those that did not "
    "(OUT). The figures are those of the attack with half the reference models. "
    "Pooled: one threshold over all (pseudo-target, record) scores at pooled FPR alpha, "
    "with the between-record SD of the per-record FPRs there (binomial noise removed). "
    "Calibrated (Jalko et al. 2026): the mean over records of the TPR at the record's own "
    "FPR-alpha threshold, each record's OUT scores Gaussian: the law of the IN scores "
    "standardised by their record's OUT Gaussian is fitted over all records by "
    f"deconvolving the known noise of the fitted OUT Gaussians (records with >= "
    f"{MIN_OUT_DECONVOLVED} OUT scores), with a 95% interval ({CALIBRATED_CI_METHOD}). "
    "Fitted threshold: the TPR of a threshold fitted from "
    "each record's OUT scores at per-record FPR alpha exactly (the Student-t prediction "
    "quantile), below the calibrated TPR by its noise. Plug-in: the fitted Gaussian used as "
    "exact (the efficient LiRA evaluation), at the per-record FPR given with it, above alpha."
)


def _rows(
    tables: Mapping[str, SignalTable],
    rows: Sequence[int],
    records: NDArray[np.bool_] | None = None,
) -> dict[str, SignalTable]:
    """The tables' rows ``rows`` (models), and their columns ``records`` (all: None)."""
    idx = list(rows)
    cols = slice(None) if records is None else records
    return {
        n: SignalTable(
            n, t.record_ids[cols], tuple(t.model_ids[i] for i in idx), t.values[idx][:, cols]
        )
        for n, t in tables.items()
    }


def _membership_rows(
    mm: MembershipMatrix, rows: Sequence[int], records: NDArray[np.bool_] | None = None
) -> MembershipMatrix:
    idx = list(rows)
    cols = slice(None) if records is None else records
    return MembershipMatrix(
        mm.record_ids[cols], tuple(mm.model_ids[i] for i in idx), np.asarray(mm.keep)[idx][:, cols]
    )


def pseudo_target_data(
    data: AttackData,
    j: int,
    references: Sequence[int] | None = None,
    records: NDArray[np.bool_] | None = None,
) -> AttackData:
    """``data`` with reference model ``j`` as the target and the reference models
    ``references`` (default: all the others) as its references, on the audited records
    ``records`` (a mask; default: all).

    Keeps what the reference-model attacks read: the audited records and labels, the
    reference tables and membership, and the population tables (``population_target``
    from model j's row of ``reference_population``).
    """
    if data.reference is None or data.reference_membership is None:
        raise DesignError("reference: expected reference models to evaluate, found none")
    k = data.reference_membership.n_models
    others = [i for i in range(k) if i != j] if references is None else list(references)
    if j in others or not others or not all(0 <= i < k for i in others):
        raise DesignError(
            f"references: expected reference models other than the pseudo-target {j} among "
            f"the {k}, found {others}"
        )
    pop, pop_mm = data.reference_population, data.reference_population_membership
    cols = slice(None) if records is None else np.asarray(records, dtype=bool)
    return AttackData(
        record_ids=data.record_ids[cols],
        labels=data.labels[cols],
        target=_rows(data.reference, [j], records),
        population_target=None if pop is None else _rows(pop, [j]),
        population_labels=None if pop is None else data.population_labels,
        reference=_rows(data.reference, others, records),
        reference_membership=_membership_rows(data.reference_membership, others, records),
        reference_population=None if pop is None else _rows(pop, others),
        reference_population_membership=None
        if pop_mm is None
        else _membership_rows(pop_mm, others),
    )


class _PseudoTargetRun:
    """One task of the evaluation: attack ``name`` with reference model ``j`` as the
    target and the map's reference models as its references (:func:`pseudo_target_data`),
    run with ``seed=j`` and the audit's settings.

    Picklable, and holding only the tables a pseudo-target reads, so that an executor
    ships it to its workers once per map. A :class:`DesignError` (the pseudo-target's
    references cannot support the attack) comes back as its message, so that the driver
    lists the attack as skipped, as a run in this process does.
    """

    def __init__(
        self,
        data: AttackData,
        params: Mapping[str, Mapping[str, Any]],
        references: Sequence[int],
        records: NDArray[np.bool_],
    ) -> None:
        self.data = AttackData(  # the target's own rows are kept (required) but never read
            record_ids=data.record_ids,
            labels=data.labels,
            target=data.target,
            population_target=data.population_target,
            population_labels=data.population_labels,
            reference=data.reference,
            reference_membership=data.reference_membership,
            reference_population=data.reference_population,
            reference_population_membership=data.reference_population_membership,
        )
        self.params = {name: dict(p) for name, p in params.items()}
        self.references = list(references)
        self.records = np.asarray(records, dtype=bool)

    def __call__(self, item: tuple[str, int]) -> _Run | str:
        name, j = item
        try:
            res = run_attack(
                name,
                pseudo_target_data(self.data, j, self.references, self.records),
                seed=j,
                **self.params.get(name, {}),
            )
        except DesignError as err:
            return str(err)
        return res.record_ids, np.asarray(res.scores, dtype=np.float64), dict(res.params)


#: One pseudo-target's run: record ids, scores, the attack's params.
_Run = tuple[NDArray[Any], NDArray[np.float64], dict[str, Any]]


def gaussian_scale(name: str, params: Mapping[str, Any]) -> tuple[Any, str] | None:
    r"""The map of attack ``name``'s score to the scale on which a record's OUT scores are
    about Gaussian, and its description; None where the score is on that scale already.

    The calibrated figure fits a Gaussian to each record's OUT scores, so it holds its
    per-record FPR only where they are about Gaussian. A likelihood-ratio score (LiRA and
    BaVarIA online, RMIA, InfoRMIA) is used as it is. The offline attacks whose score is
    minus the log of a one-sided p-value :math:`p` of a record's OUT fit (offline LiRA,
    Carlini et al. 2022, Sec. IV-C, and offline BaVarIA) are not: :math:`-\log p` is about
    exponential (offline BaVarIA's calibrated FPR was about twice alpha at 1%; offline
    LiRA's score :math:`-p`, before it took the log, was bounded in [-1, 0] and its
    calibrated TPR about 0). Both are mapped to :math:`z = \Phi^{-1}(1 - p)` from
    :math:`\log p = -\text{score}`, the standardised signal, Gaussian when the signal is
    (exactly so for offline LiRA and BaVarIA-n; for BaVarIA-t the Student-t predictive's
    p-value, near Gaussian). Strictly increasing, so the pooled figure is unchanged.
    Offline LiRA's two-sided score (the reference code's :math:`-\log` OUT density) has no
    such map: ``"unsupported"`` is returned as the description and the attack is skipped.
    """
    if name == "lira-offline" and params.get("offline_test", "one-sided") != "one-sided":
        return None, "unsupported"
    if name in ("lira-offline", "bavaria-offline"):
        return (
            lambda s: _z_of_p(np.exp(-s), -s),
            "z = Phi^-1(1 - p) of the one-sided p-value p = exp(-score)",
        )
    return None


#: |z| at most Phi^-1(1 - tiny) (37.5): p = 0 or p = 1 (a score at its bound) stays finite.
_Z_MAX = float(-special.ndtri(np.finfo(np.float64).tiny))


def _z_of_p(
    p: NDArray[np.float64], log_p: NDArray[np.float64] | None = None
) -> NDArray[np.float64]:
    """``Phi^-1(1 - p)``, from ``log p`` where ``p`` is small (no rounding of ``1 - p``) and
    from ``1 - p`` otherwise (``-expm1(log p)`` when ``log_p`` is given: exact where ``p``
    rounds to 1), clipped to ``[-_Z_MAX, _Z_MAX]``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        if log_p is None:
            log_p = np.log(p)
            q = 1.0 - p
        else:
            q = -np.expm1(log_p)
        small = -special.ndtri_exp(np.minimum(log_p, np.log(0.5)))
        large = special.ndtri(np.clip(q, 0.0, 0.5))
    z = np.where(p < 0.5, small, large)
    return np.asarray(np.clip(z, -_Z_MAX, _Z_MAX), dtype=np.float64)


def _evaluate(
    name: str,
    runs: Sequence[_Run | str],
    record_ids: NDArray[Any],
    keep: np.ndarray,
    fprs: Sequence[float],
) -> dict[str, Any]:
    """The figures of attack ``name`` from its runs on the pseudo-targets (in order)."""
    scores = np.empty(keep.shape, dtype=np.float64)
    pos = {r: i for i, r in enumerate(record_ids.tolist())}
    scale = None
    for j, run in enumerate(runs):
        if isinstance(run, str):  # the first pseudo-target that cannot support the attack
            raise DesignError(run)
        ids, sc, params = run
        scale = gaussian_scale(name, params)
        col = np.asarray([pos[r] for r in ids.tolist()], dtype=np.intp)
        if col.size != keep.shape[1]:
            raise DesignError(f"{name} scored {col.size} of {keep.shape[1]} records")
        scores[j, col] = sc
    usable = ((~keep).sum(axis=0) >= 2) & (keep.sum(axis=0) >= 1)
    if not usable.any():
        raise DesignError(
            "reference_membership: expected records with at least 2 OUT and 1 IN reference "
            "models among the pseudo-targets, found none"
        )
    if scale is not None and scale[1] == "unsupported":
        raise DesignError(
            f"{name}: its two-sided score has no per-record Gaussian scale to calibrate on"
        )
    s, m = scores[:, usable], keep[:, usable]
    z = s if scale is None else scale[0](s)
    figures = []
    # the pooled figure from the attack's own scores (z is a strictly increasing map of them);
    # the calibrated figure's interval seeded by 0: a function of the scores
    for res in calibrated_tprs_at_fprs(
        z,
        m,
        fprs,
        pooled_scores=None if scale is None else s,
        n_boot=CALIBRATED_CI_REPLICATES,
        seed=0,
    ):
        doc, f = res.to_dict(), res.fpr
        n_out_pairs = int((~m).sum())
        if n_out_pairs * f < 1.0:  # as the attacks table: no pooled TPR below one FP
            doc["pooled"].update(
                tpr=None, threshold=None, record_fpr_sd=None, record_fpr_sd_ci=None
            )
            doc["pooled"]["note"] = (
                f"n/a: a pooled TPR at FPR {f:g} needs >= {int(np.ceil(1.0 / f - 1e-9))} "
                f"non-member scores, found {n_out_pairs}"
            )
        figures.append(doc)
    return {
        "name": name,
        "calibration_scale": "the score" if scale is None else scale[1],
        "n_records": int(usable.sum()),
        "n_records_left_out": int((~usable).sum()),
        "figures": figures,
    }


def calibrated_evaluation(
    data: AttackData,
    names: Sequence[str],
    attack_params: Mapping[str, Mapping[str, Any]] | None = None,
    *,
    fprs: Sequence[float] = CALIBRATED_FPRS,
    max_pseudo_targets: int = MAX_PSEUDO_TARGETS,
    executor: Executor | None = None,
) -> dict[str, Any]:
    """The calibrated evaluation of the attacks ``names`` on ``data``'s reference models.

    The first half of the reference models (``k // 2`` of ``k``) are the attack's
    references; the others, at most ``max_pseudo_targets`` of them, play the target once
    each against that half (:func:`pseudo_target_data`), on the records IN for some and OUT
    for others of that half; the target's own tables are not read. Returns the
    ``calibrated_evaluation`` document (module docstring); an attack the pseudo-targets
    cannot support is listed under ``skipped`` with the reason. Needs 6 reference models (3
    pseudo-targets, so that a record can have 2 OUT and 1 IN score), and plays at least 3.

    ``executor``: each (attack, pseudo-target) run is one task of one map on it (the
    audit's worker processes or Ray cluster; None: one after the other in this process).
    The runs are independent and seeded by the pseudo-target's index, so the figures do
    not depend on where they ran.
    """
    if data.reference_membership is None or data.reference_membership.n_models < 6:
        raise DesignError(
            "reference_membership: expected at least 6 reference models for the calibrated "
            "evaluation (half fit the attack, half play the target: a record needs 2 OUT and "
            "1 IN score among the targets), found "
            f"{0 if data.reference_membership is None else data.reference_membership.n_models}"
        )
    params = attack_params or {}
    n_models = data.reference_membership.n_models
    n_map = n_models // 2
    targets = list(range(n_map, min(n_models, n_map + max(int(max_pseudo_targets), 3))))
    keep_all = np.asarray(data.reference_membership.keep, dtype=bool)
    # the records the map's references can score online too (IN and OUT for some of them)
    scored: NDArray[np.bool_] = np.asarray(
        keep_all[:n_map].any(axis=0) & ~keep_all[:n_map].all(axis=0), dtype=bool
    )
    if not scored.any():
        raise DesignError(
            f"reference_membership: expected records IN for some and OUT for others of the "
            f"first {n_map} reference models (the attack's references in the calibrated "
            "evaluation), found none"
        )
    keep = keep_all[targets][:, scored]
    task = _PseudoTargetRun(
        data,
        {name: params.get(name, {}) for name in names},
        references=range(n_map),
        records=scored,
    )
    k = len(targets)
    items = [(name, j) for name in names for j in targets]
    if executor is None:
        runs = [task(item) for item in items]
    else:
        runs = executor.map(
            task,
            items,
            desc="calibrated evaluation",
            label=lambda it: f"{it[0]} with reference model {it[1]} as the target",
        )
    attacks, skipped = [], []
    for a, name in enumerate(names):
        try:
            doc = _evaluate(name, runs[a * k : (a + 1) * k], data.record_ids[scored], keep, fprs)
            doc["n_records_left_out"] += int((~scored).sum())
            attacks.append(doc)
        except DesignError as err:
            skipped.append({"name": name, "reason": str(err)})
    notes = []
    if data.reference_population_membership is not None:
        notes.append(
            "some reference models trained on population records: a pseudo-target's "
            "population (RMIA's z) then holds some of its members"
        )
    return {
        "method": _METHOD,
        "source": "Jalko, Pradhan, Raisa, Honkela: On Reliability of Efficient Membership "
        "Inference Vulnerability Evaluation (arXiv 2605.25819, 2026)",
        "n_pseudo_targets": k,
        "n_map_references": n_map,
        "n_reference_models": n_models,
        "fprs": [float(f) for f in fprs],
        "attacks": attacks,
        "skipped": skipped,
        "notes": notes,
    }


def calibrated_section(
    exp: ExperimentResult,
    *,
    fprs: Sequence[float] = CALIBRATED_FPRS,
    executor: Executor | None = None,
) -> dict[str, Any] | None:
    """``results.json["calibrated_evaluation"]`` of one experiment (module docstring):
    :func:`calibrated_evaluation` of the audit's attacks among :data:`CALIBRATED_ATTACKS`,
    with their configured settings, its runs on ``executor`` when given. None when the
    audit ran none of them or had fewer than 6 reference models.
    """
    data = exp.attack_data
    names = [n for n in CALIBRATED_ATTACKS if n in exp.scores]
    if not names or data is None or data.reference_membership is None:
        return None
    if data.reference_membership.n_models < 6:
        return None
    return calibrated_evaluation(
        data, names, exp.config.attack_params, fprs=fprs, executor=executor
    )
