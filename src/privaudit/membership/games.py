"""The four membership-inference games of Ye et al. (2022), Def. 3.1-3.4, as experiments.

Ye et al. ("Enhanced Membership Inference Attacks against Machine Learning Models",
CCS'22, Sec. 3.1) define the privacy loss an attack measures by a game between a
challenger and an adversary, and the games differ only in **which random seeds are
fixed** across trials:

=============================  ======  ===================================================
game (``name``)                 Def.    fixed across trials / resampled in each trial
=============================  ======  ===================================================
``average``                     3.1     fixed: pool pi.  resampled: D (s_D), theta
                                        (s_theta), target record z
``fixed-model``                 3.2     fixed: D, theta.  resampled: z
``fixed-record``                3.3     fixed: z.  resampled: D, theta, the coin b
                                        (theta trained on D or D u {z})
``fixed-record-and-dataset``    3.4     fixed: z, D.  resampled: theta, b
=============================  ======  ===================================================

Each trial is one :func:`~privaudit.membership.experiment.run_experiment` whose component
seeds (split, membership, target, attacker) are fixed or fresh as the table says, so
the store reuses every model a game does not resample (in Def. 3.4 only the target,
and models derived from it, are retrained per trial). A game's *samples* are the
``(theta, z)`` draws it produces, with the true bit ``b``:

* ``average``: every scored record of every trial (a fresh D and theta per trial);
* ``fixed-model``: every scored record of the single target (one trial; each record is
  one draw of ``z``);
* ``fixed-record`` and ``fixed-record-and-dataset``: the fixed records only, one draw
  per trial. In Def. 3.3 the target's membership of ``z`` comes from a fresh draw of
  the pool's membership (one fair coin per record); in Def. 3.4 it is a fair coin drawn per trial and
  forced into the fixed membership, whose other entries (D) do not change. The fixed
  records are always in Attack L's leave-one-out sample.

Approximations, stated in every result's ``notes``: the population pool is the finite
dataset (records are drawn without replacement from it); in Def. 3.3/3.4 ``D`` holds
each target-pool record by its own fair coin (about half of the pool) rather than ``n``
i.i.d. draws; with
several fixed records in Def. 3.4 each one's coin also changes ``D`` for the others
(use one fixed record for the exact game).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privaudit._validation import check_choice, check_positive_int, check_unique_ids, fail
from privaudit.data.dataset import Dataset
from privaudit.errors import InsufficientDataError
from privaudit.membership.experiment import (
    ExperimentConfig,
    ExperimentResult,
    GameDescription,
    run_experiment,
    target_pool_ids,
)
from privaudit.membership.ye_split import draw_membership, draw_pool
from privaudit.metrics.roc import AttackMetrics, attack_metrics
from privaudit.models.base import Trainer
from privaudit.records import AttackScores
from privaudit.runtime.executor import Executor, LocalExecutor
from privaudit.runtime.progress import ProgressOption
from privaudit.runtime.seeds import derive_rng, derive_seed
from privaudit.runtime.store import ArtifactStore

__all__ = [
    "GAMES",
    "GameResult",
    "GameSamples",
    "PooledAttack",
    "describe_game",
    "game_attack_metrics",
    "pool_game",
    "run_game",
    "trial_member_counts",
]

_POOL = "population pool pi (the target pool / population split, split_seed)"
_D = "target training set D (membership_seed)"
_THETA = "target training randomness s_theta (target_seed)"
_ATTACKER = "attacker's reference/shadow/distilled/leave-one-out models (attacker_seed)"
_Z = "target record z"

#: name -> (definition, fixed, resampled)
GAMES: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "average": (
        "Ye et al. 2022 (CCS), Def. 3.1: membership inference game for average model and record",
        (_POOL,),
        (_D, _THETA, f"{_Z} (all pool records of each trial)", _ATTACKER),
    ),
    "fixed-model": (
        "Ye et al. 2022 (CCS), Def. 3.2: membership inference game for a fixed model",
        (_POOL, _D, _THETA, _ATTACKER),
        (f"{_Z}: every pool record is one draw (members z_1 in D, non-members z_0)",),
    ),
    "fixed-record": (
        "Ye et al. 2022 (CCS), Def. 3.3: membership inference game for a fixed record",
        (_POOL, f"{_Z} (the fixed records)"),
        (
            _D,
            _THETA,
            "coin b: z in the target's training set or not (a fresh fair coin per pool record)",
            _ATTACKER,
        ),
    ),
    "fixed-record-and-dataset": (
        "Ye et al. 2022 (CCS), Def. 3.4: membership inference game for a fixed record and dataset",
        (_POOL, f"{_Z} (the fixed records)", f"{_D} except z", _ATTACKER),
        (_THETA, "coin b: the target trains on D u {z} (b=1) or D \\ {z} (b=0)"),
    ),
}

_NOTES: dict[str, tuple[str, ...]] = {
    "average": (
        "the population pool pi is the finite dataset; D holds each target-pool record by a fresh fair coin in each trial",
    ),
    "fixed-model": ("a single trial: the records of the target pool are the draws of z",),
    "fixed-record": (
        "D u {z} or D: D holds each target-pool record by a fresh fair coin (z IN with probability 1/2)",
        "the fixed records are always in Attack L's leave-one-out sample",
    ),
    "fixed-record-and-dataset": (
        "D is fixed as one draw of the target pool (a fair coin per record); each trial forces z IN or OUT with a fair coin and retrains the target with a fresh seed",
        "the fixed records are always in Attack L's leave-one-out sample",
        "reference models stay fixed across trials (the adversary's knowledge does not change with b)",
        "with several fixed records, the coin of each also changes D for the others",
    ),
}


def describe_game(name: str, n_trials: int = 1, extra_notes: Sequence[str] = ()) -> GameDescription:
    """The :class:`GameDescription` of game ``name`` (a key of :data:`GAMES`)."""
    check_choice(name, "game", tuple(GAMES))
    definition, fixed, resampled = GAMES[name]
    return GameDescription(
        name=name,
        definition=definition,
        fixed=fixed,
        resampled=resampled,
        n_trials=n_trials,
        notes=(*_NOTES[name], *extra_notes),
    )


@dataclasses.dataclass(frozen=True)
class GameSamples:
    """The ``(theta, z, b)`` draws of a game for one attack.

    ``scores[k]`` is the attack's score (higher = member) of record ``record_ids[k]``
    against the target model of trial ``trial[k]``; ``member[k]`` is the true bit b.
    """

    attack: str
    scores: NDArray[np.float64]
    member: NDArray[np.bool_]
    record_ids: NDArray[Any]
    trial: NDArray[np.int64]

    @property
    def n(self) -> int:
        """Number of draws."""
        return int(self.scores.size)


@dataclasses.dataclass(frozen=True)
class GameResult:
    """The outcome of :func:`run_game`.

    Attributes
    ----------
    game : GameDescription
        What was fixed and what was resampled.
    trials : tuple of ExperimentResult
        One experiment (target model) per trial.
    samples : dict[str, GameSamples]
        Per attack, the game's draws (see the module docstring).
    fixed_records : array or None
        The fixed target records (Def. 3.3 and 3.4).
    """

    game: GameDescription
    trials: tuple[ExperimentResult, ...]
    samples: Mapping[str, GameSamples]
    fixed_records: NDArray[Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-compatible summary: the game, per-attack draws and per-trial settings."""
        return {
            "game": self.game.to_dict(),
            "fixed_records": None if self.fixed_records is None else self.fixed_records.tolist(),
            "trials": [
                {
                    "seeds": dict(t.seeds),
                    "train_accuracy": t.train_accuracy,
                    "test_accuracy": t.test_accuracy,
                    "models_trained": dict(t.models_trained),
                }
                for t in self.trials
            ],
            "samples": {
                k: {
                    "scores": v.scores.tolist(),
                    "member": v.member.tolist(),
                    "record_ids": v.record_ids.tolist(),
                    "trial": v.trial.tolist(),
                }
                for k, v in self.samples.items()
            },
        }


def _collect(
    trials: Sequence[ExperimentResult], attacks: Sequence[str], only: NDArray[Any] | None
) -> dict[str, GameSamples]:
    out: dict[str, GameSamples] = {}
    wanted = None if only is None else set(only.tolist())
    for a in attacks:
        scores, member, ids, trial = [], [], [], []
        for t, res in enumerate(trials):
            s = res.scores[a]
            m = res.member_of(a)
            mask = (
                np.ones(s.record_ids.size, dtype=bool)
                if wanted is None
                else np.array([r in wanted for r in s.record_ids.tolist()], dtype=bool)
            )
            scores.append(s.scores[mask])
            member.append(m[mask])
            ids.append(s.record_ids[mask])
            trial.append(np.full(int(mask.sum()), t, dtype=np.int64))
        out[a] = GameSamples(
            attack=a,
            scores=np.concatenate(scores).astype(np.float64),
            member=np.concatenate(member).astype(bool),
            record_ids=np.concatenate(ids),
            trial=np.concatenate(trial),
        )
    return out


def _fixed_records(
    name: str,
    dataset: Dataset,
    fixed_cfg: ExperimentConfig,
    fixed_records: ArrayLike | None,
    n_fixed_records: int,
    *,
    seed: int,
) -> NDArray[Any] | None:
    """The fixed target records of Def. 3.3/3.4 (``None`` for the other games): the
    given ids, checked to lie in the target pool, or ``n_fixed_records`` drawn from it."""
    if name not in ("fixed-record", "fixed-record-and-dataset"):
        return None
    pool = target_pool_ids(dataset, fixed_cfg)
    if fixed_records is None:
        k = check_positive_int(n_fixed_records, "n_fixed_records")
        if k > pool.size:
            raise fail("n_fixed_records", f"at most the {pool.size} pool records", k)
        rng = derive_rng(seed, purpose=f"game/{name}/fixed-records")
        return np.sort(pool[rng.choice(pool.size, size=k, replace=False)])
    fixed = check_unique_ids(fixed_records, "fixed_records")
    fixed = fixed.astype(pool.dtype) if pool.dtype.kind in "iu" else fixed.astype(str)
    missing = [r for r in fixed.tolist() if r not in set(pool.tolist())]
    if missing:
        raise fail("fixed_records", "records of the target pool", f"{missing[:5]} not in it")
    return fixed


def _fixed_design(
    name: str,
    dataset: Dataset,
    config: ExperimentConfig,
    fixed_records: ArrayLike | None,
    n_fixed_records: int,
) -> tuple[ExperimentConfig, NDArray[Any] | None]:
    """What every trial of the game shares: ``config`` with its component seeds pinned,
    and the fixed records of Def. 3.3/3.4 (always in Attack L's sample)."""
    base = config.component_seeds()
    fixed_cfg = dataclasses.replace(
        config,
        split_seed=base["split"],
        membership_seed=base["membership"],
        target_seed=base["target"],
        attacker_seed=base["attacker"],
    )
    fixed = _fixed_records(
        name, dataset, fixed_cfg, fixed_records, n_fixed_records, seed=config.seed
    )
    if fixed is not None:
        # Attack L trains models per record: the fixed records are always in its sample.
        include = tuple(dict.fromkeys((*fixed.tolist(), *fixed_cfg.leave_one_out_include)))
        fixed_cfg = dataclasses.replace(fixed_cfg, leave_one_out_include=include)
    return fixed_cfg, fixed


def trial_member_counts(
    name: str,
    dataset: Dataset,
    config: ExperimentConfig,
    *,
    n_trials: int = 4,
    fixed_records: ArrayLike | None = None,
    n_fixed_records: int = 1,
) -> NDArray[np.int64]:
    """The number of the target's members in each trial of :func:`run_game`, drawn as
    it draws them, without training anything.

    The target's membership is one fair coin per pool record, so the number of members
    varies from trial to trial (Binomial); the checks before training
    (:mod:`privaudit.membership.preflight`) hold every size the run needs against every
    trial's count. Arguments as for :func:`run_game`.
    """
    check_choice(name, "game", tuple(GAMES))
    n_trials = 1 if name == "fixed-model" else check_positive_int(n_trials, "n_trials")
    fixed_cfg, fixed = _fixed_design(name, dataset, config, fixed_records, n_fixed_records)
    pool, _ = draw_pool(dataset, fixed_cfg, fixed_cfg.component_seeds())
    counts = []
    for t in range(n_trials):
        cfg = _trial_config(name, fixed_cfg, fixed, seed=config.seed, trial=t)
        counts.append(int(draw_membership(pool, cfg, cfg.component_seeds()).sum()))
    return np.asarray(counts, dtype=np.int64)


def _trial_config(
    name: str,
    fixed_cfg: ExperimentConfig,
    fixed: NDArray[Any] | None,
    *,
    seed: int,
    trial: int,
) -> ExperimentConfig:
    """Trial ``trial``'s experiment: what the game fixes keeps ``fixed_cfg``'s seeds,
    what it resamples gets fresh seeds of its own (Def. 3.1-3.4); Def. 3.4 flips one
    coin per fixed record for its membership."""

    def fresh(component: str) -> int:
        return derive_seed(seed, purpose=f"game/{name}/trial/{trial}/{component}")

    if name == "fixed-model":
        return fixed_cfg
    if name in ("average", "fixed-record"):
        return dataclasses.replace(
            fixed_cfg,
            membership_seed=fresh("membership"),
            target_seed=fresh("target"),
            attacker_seed=fresh("attacker"),
        )
    fixed_ids = fixed if fixed is not None else np.asarray([])  # fixed-record-and-dataset
    coins = derive_rng(seed, purpose=f"game/{name}/trial/{trial}/coin").integers(
        0, 2, size=fixed_ids.size
    )
    return dataclasses.replace(
        fixed_cfg,
        target_seed=fresh("target"),
        force_membership=tuple(
            (r, bool(b)) for r, b in zip(fixed_ids.tolist(), coins.tolist(), strict=True)
        ),
    )


def run_game(
    name: str,
    dataset: Dataset,
    trainer: Trainer,
    config: ExperimentConfig,
    *,
    n_trials: int = 4,
    fixed_records: ArrayLike | None = None,
    n_fixed_records: int = 1,
    store: ArtifactStore | str | Path | None = None,
    executor: Executor | None = None,
    progress: ProgressOption = None,
) -> GameResult:
    """Play one of the inference games of Ye et al. (2022), Def. 3.1-3.4.

    Parameters
    ----------
    name : {"average", "fixed-model", "fixed-record", "fixed-record-and-dataset"}
        The game (Def. 3.1, 3.2, 3.3, 3.4).
    dataset, trainer, config
        As for :func:`~privaudit.membership.experiment.run_experiment`; ``config.seed``
        is the game's root seed and its component seeds are the fixed ones.
    n_trials : int
        Independent trials (target models). ``fixed-model`` plays one trial.
    fixed_records : array of record ids, optional
        The fixed target records of Def. 3.3/3.4; must lie in the target pool. Default:
        ``n_fixed_records`` records drawn from the pool with the game's seed.
    n_fixed_records : int
        How many fixed records to draw when ``fixed_records`` is not given.
    store, executor, progress
        As for :func:`run_experiment` (one executor is shared by all trials).

    Returns
    -------
    GameResult
        The per-trial experiments, the game's draws per attack, and what was fixed
        and resampled.

    Examples
    --------
    A fixed-record game with two trials (kept tiny)::

        res = run_game("fixed-record", ds, trainer, cfg, n_trials=2)
        res.game.fixed, res.samples["reference"].member
    """
    check_choice(name, "game", tuple(GAMES))
    if not isinstance(config, ExperimentConfig):
        raise fail("config", "an ExperimentConfig", type(config).__name__)
    n_trials = check_positive_int(n_trials, "n_trials")
    if name == "fixed-model":
        n_trials = 1
    if isinstance(store, str | Path):
        store = ArtifactStore(store)
    if executor is None:  # one pool of workers for every trial, closed at the end
        with LocalExecutor(config.n_jobs, progress=progress) as own:
            return run_game(
                name,
                dataset,
                trainer,
                config,
                n_trials=n_trials,
                fixed_records=fixed_records,
                n_fixed_records=n_fixed_records,
                store=store,
                executor=own,
                progress=progress,
            )
    fixed_cfg, fixed = _fixed_design(name, dataset, config, fixed_records, n_fixed_records)
    desc = describe_game(name, n_trials)
    trials: list[ExperimentResult] = []
    for t in range(n_trials):
        cfg = _trial_config(name, fixed_cfg, fixed, seed=config.seed, trial=t)
        trials.append(
            run_experiment(dataset, trainer, cfg, store=store, executor=executor, game=desc)
        )
    samples = _collect(trials, config.attacks, fixed)
    return GameResult(game=desc, trials=tuple(trials), samples=samples, fixed_records=fixed)


@dataclasses.dataclass(frozen=True)
class PooledAttack:
    """One attack's draws over every trial of a game, as one scored set.

    ``scores`` carries one score per draw under a draw id (the record id for a single
    trial, ``"t<trial>:<record id>"`` otherwise, so that ids stay unique). When the
    trials decided at different thresholds (each target calibrates its own), a draw's
    score is its *margin* over its trial's threshold (``score - threshold_t``) and the
    pooled threshold is 0: "member iff margin >= 0" is each trial's own decision, and
    sweeping a common offset over the margins gives the game's ROC (the decision rules
    "threshold_t + c"). Otherwise the raw scores and the common threshold (if any).
    ``decisions`` are the member decisions at the requested alpha (None without one).
    """

    scores: AttackScores
    member: NDArray[np.bool_]
    trial: NDArray[np.int64]
    record_ids: NDArray[Any]
    decisions: NDArray[np.bool_] | None
    thresholds: tuple[float | None, ...]


def _draw_ids(samples: GameSamples, n_trials: int) -> NDArray[Any]:
    if n_trials == 1:
        return samples.record_ids
    return np.asarray(
        [
            f"t{t}:{r}"
            for t, r in zip(samples.trial.tolist(), samples.record_ids.tolist(), strict=True)
        ]
    )


def _per_trial_check_params(
    per_trial: Sequence[AttackScores], smp: GameSamples, n_trials: int
) -> dict[str, Any]:
    """What the achieved-FPR check of a game's pooled draws needs from each trial.

    Each trial's target calibrates its own threshold (``threshold_sample_size``
    non-member scores), so the pooled false-positive count is a sum of one beta-binomial
    per trial (:func:`~privaudit.metrics.roc.pooled_alpha_acceptance_region`): records
    every trial's calibration size and its number of non-member draws
    (``trial_threshold_sample_sizes``, ``trial_n_negatives``; the caller drops trial 0's
    ``threshold_sample_size``, which would check the pooled count as if every draw shared
    one threshold). When a trial records its audited records' OUT reference-model counts
    (``n_out_per_record``, recorded when they differ), they are pooled per draw."""
    out: dict[str, Any] = {}
    sizes = [s.params.get("threshold_sample_size") for s in per_trial]
    if all(isinstance(v, int | np.integer) and v > 0 for v in sizes):
        negatives = np.bincount(smp.trial[~smp.member], minlength=n_trials)
        out["trial_threshold_sample_sizes"] = [int(v) for v in sizes if v is not None]
        out["trial_n_negatives"] = [int(v) for v in negatives]
    if any("n_out_per_record" in s.params for s in per_trial):
        counts = np.empty(smp.n, dtype=np.int64)
        for t, s in enumerate(per_trial):
            here = np.flatnonzero(smp.trial == t)
            n_out = s.params.get("n_out_per_record")
            if n_out is None:  # this trial's counts were all equal: its minimum
                low = s.params.get("min_out_models", s.params.get("n_out_min"))
                if low is None:
                    return out
                counts[here] = int(low)
                continue
            index = {r: i for i, r in enumerate(s.record_ids.tolist())}
            n_out = np.asarray(n_out, dtype=np.int64)
            counts[here] = n_out[[index[r] for r in smp.record_ids[here].tolist()]]
        out["n_out_per_record"] = counts.tolist()
    return out


def pool_game(result: GameResult) -> dict[str, PooledAttack]:
    """Every attack's draws over the game's trials (Ye et al. 2022 Sec. 3.1: the game's
    success is averaged over its repetitions), see :class:`PooledAttack`.

    Raises
    ------
    InsufficientDataError
        When an attack's draws hold only members or only non-members (e.g. a
        fixed-record game with few trials whose coins all fell the same way).
    """
    n_trials = len(result.trials)
    out: dict[str, PooledAttack] = {}
    for name, smp in result.samples.items():
        n_pos, n_neg = int(smp.member.sum()), int((~smp.member).sum())
        if n_pos == 0 or n_neg == 0:
            raise InsufficientDataError(
                f"game {result.game.name!r}: attack {name!r} has {n_pos} member and {n_neg} "
                f"non-member draw(s) over {n_trials} trial(s); the metrics need both: "
                "play more trials (game.n_trials) or fix more records (game.n_fixed_records)"
            )
        per_trial = [res.scores[name] for res in result.trials]
        thresholds = tuple(s.threshold for s in per_trial)
        alphas = {s.alpha for s in per_trial}
        scores = smp.scores
        common: float | None = None
        margins = False
        if all(t is not None for t in thresholds):
            if len(set(thresholds)) == 1:
                common = thresholds[0]
            else:
                thr = np.asarray([float(t) for t in thresholds if t is not None])[smp.trial]
                scores = smp.scores - thr
                common, margins = 0.0, True
        params = dict(per_trial[0].params)
        params.update(
            {
                "game": result.game.name,
                "n_trials": n_trials,
                "trial_thresholds": [None if t is None else float(t) for t in thresholds],
                "pooled_scores": (
                    "margin over the trial's threshold" if margins else "the attack's scores"
                ),
            }
        )
        if n_trials > 1:
            params.pop("threshold_sample_size", None)
            params.pop("n_out_per_record", None)
            params.update(_per_trial_check_params(per_trial, smp, n_trials))
        sc = AttackScores(
            attack=name,
            record_ids=_draw_ids(smp, n_trials),
            scores=scores,
            params=params,
            alpha=next(iter(alphas)) if len(alphas) == 1 else None,
            threshold=common,
        )
        out[name] = PooledAttack(
            scores=sc,
            member=smp.member,
            trial=smp.trial,
            record_ids=smp.record_ids,
            decisions=None if common is None else sc.decisions(),
            thresholds=thresholds,
        )
    return out


def game_attack_metrics(pooled: PooledAttack, *, confidence: float = 0.95) -> AttackMetrics:
    """:func:`~privaudit.metrics.roc.attack_metrics` of a game's pooled draws.

    The ROC, AUC and TPR at each FPR are those of the pooled scores (margins when the
    trials' thresholds differ, see :class:`PooledAttack`); the achieved FPR and TPR
    count each draw's decision at its own trial's threshold, with a Clopper-Pearson
    interval over all non-member draws.
    """
    return attack_metrics(pooled.scores, pooled.member, confidence=confidence)
