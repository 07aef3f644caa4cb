"""The experiment engine: train every model an audit needs, compute signals, run attacks.

One call of :func:`run_experiment` plays the membership-inference game for **one fixed
target model** (Ye et al. 2022, "Enhanced Membership Inference Attacks against Machine
Learning Models", CCS'22, Def. 3.2): the dataset and the target's training randomness
are fixed, and every record of the *target pool* is one draw of the target record
(a member ``z_1 in D`` or a non-member ``z_0 in pi \\ D``). The other games of Sec. 3.1
repeat it with some of that randomness resampled (:mod:`privaudit.membership.games`).

Design (all randomness from :mod:`privaudit.runtime.seeds`, split into independent
components so that a game can fix some and resample others):

1. **Split** (``split_seed``): a uniformly random *target pool* of ``n_target_pool``
   records (the audited records) and a disjoint *population* of ``n_population``
   records (the attacker's data: Attack P, RMIA's ``z``, shadow and distillation data).
2. **Membership** (``membership_seed``): each target-pool record is a member of the
   target by its own fair coin (independent coins, as the one-run bounds of Steinke et
   al. 2023 assume; about half of the pool). ``force_membership`` overrides single records (Def. 3.4).
   The **reference models** (Attacks R, LiRA, RMIA; ``attacker_seed``) get their own
   balanced keep matrix over the pool (Carlini et al. 2022, LiRA): every pool record
   is IN for exactly ``n_reference / 2`` of them, *independently of its target bit*.
   (An earlier design made the target one row of a balanced matrix with the reference
   models; a target member was then IN for one reference model fewer than a
   non-member, and the layout alone leaked the bit: AUC 0.35-0.56 under a null.)
3. **Target** (``target_seed``): trained on its members.
4. **Attacker's models** (``attacker_seed``):

   * shadow models (Attack S, Ye et al. Sec. 4.1), which are also Attack R's
     reference models (Sec. 4.3; App. B.2 builds both the same way): each trained on
     a uniformly random subset of the population of half the pool's size (the target's
     expected training-set size, a constant: nothing the attacker builds depends on the
     members' coins),
     drawn from a random half of the population (the other half is never trained on
     and calibrates R), and evaluated on all population records (the OUT pairs form
     the out world of Eq. 6-7) and, for R, on the audited records;
   * distilled models (Attack D, Sec. 4.4, Eq. 14-15): each trained with
     :func:`privaudit.models.distill` on its own uniformly random subset of
     ``distill_size`` population records (default: the size of the target's training
     set), labelled by the target: soft labels for attack ``distillation`` (the
     paper), the target's logits for ``distillation-logits`` (a regression, Ba &
     Caruana 2014), the same subsets and seeds for both; the subsets are drawn from a random
     ``max(distill_size, n_population / 2)`` of the population, the rest being kept
     for the calibration of Attack D's threshold;
   * leave-one-out models (Attack L, Sec. 4.5) for ``leave_one_out_sample`` pool
     records (half members, half non-members, plus ``leave_one_out_include``): for a
     sampled member ``x``, ``n_leave_one_out`` models on ``D \\ {x}``, which serve
     ``x`` only; for any non-member ``x``, ``D \\ {x} = D``, so ``n_leave_one_out``
     models on ``D`` serve all of them (``AttackData.leave_one_out_serves``). Attack L
     is reported on every record it scored: all non-members of the pool and the
     sampled members (its result carries both counts). Leave-one-out model ``r`` of
     every record uses the same seed ``s_r`` (paired randomness).

   Distilled and leave-one-out models (and the reference models) are also evaluated
   on the population, for the population calibration of the alpha thresholds of
   R, D, L and offline LiRA (:mod:`privaudit.attacks.calibration`).

Only the models the requested attacks read are trained (``required_inputs`` of
:mod:`privaudit.attacks.base`). :func:`run_experiment` is a composition of named steps
(``DESIGN.md`` section 2.1):

* **split** -- :func:`privaudit.membership.ye_split.make_split` (by record id; drawn, or taken
  from a provided target);
* **train many** and **signals** -- :class:`privaudit.membership.ye.YeModels`, one method per
  role (target, recipe check of a provided target, reference, shadow, distilled,
  leave-one-out), each on the shared step :func:`privaudit.models.train_many.train_models`
  (executor, artifact store, batched fits); the signals are computed in the workers and
  stored beside each model, so only signal tables come back;
* **attacks** -- every configured attack on the resulting
  :class:`~privaudit.attacks.base.AttackData`; the **metrics** are
  :mod:`privaudit.metrics.roc` on the returned :class:`ExperimentResult`.

When a store is given, a model is cached under a key that hashes the dataset
fingerprint, the training record ids, ``trainer.settings()``, the seed and the role (and,
for a distilled model, the target's key); its signals under the model key and the
evaluated records' fingerprint. A killed run resumes without retraining what finished.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import fail
from privaudit.attacks.base import ATTACKS as _ATTACKS
from privaudit.attacks.base import (
    AttackData,
    run_attack,
)
from privaudit.data.dataset import Dataset
from privaudit.membership.design import DEFAULT_ATTACKS, ExperimentConfig
from privaudit.membership.query_views import requested_views
from privaudit.membership.ye import YeModels
from privaudit.membership.ye_split import YeSplit, draw_pool, make_split
from privaudit.membership.ye_steps import accuracy, needs
from privaudit.models.base import Trainer
from privaudit.models.provided import ProvidedTarget
from privaudit.records import AttackScores, MembershipMatrix
from privaudit.runtime.executor import Executor, LocalExecutor
from privaudit.runtime.progress import ProgressOption, progress_bar, progress_phase
from privaudit.runtime.seeds import derive_seed
from privaudit.runtime.store import ArtifactStore

__all__ = [
    "DEFAULT_ATTACKS",
    "ExperimentConfig",
    "ExperimentResult",
    "GameDescription",
    "run_experiment",
    "target_pool_ids",
]


@dataclasses.dataclass(frozen=True)
class GameDescription:
    """What an inference game fixed and what it resampled (Ye et al. 2022, Sec. 3.1).

    Attributes
    ----------
    name : str
        Stable identifier: ``"average"`` (Def. 3.1), ``"fixed-model"`` (Def. 3.2),
        ``"fixed-record"`` (Def. 3.3), ``"fixed-record-and-dataset"`` (Def. 3.4).
    definition : str
        Where the game is defined.
    fixed : tuple of str
        The random choices held fixed across trials.
    resampled : tuple of str
        The random choices drawn afresh in each trial.
    n_trials : int
        Number of independent trials (target models) played.
    notes : tuple of str
        How the game was approximated, in the auditor's words.
    """

    name: str
    definition: str
    fixed: tuple[str, ...]
    resampled: tuple[str, ...]
    n_trials: int = 1
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-compatible dict."""
        return {
            "name": self.name,
            "definition": self.definition,
            "fixed": list(self.fixed),
            "resampled": list(self.resampled),
            "n_trials": self.n_trials,
            "notes": list(self.notes),
        }


FIXED_MODEL_GAME = GameDescription(
    name="fixed-model",
    definition="Ye et al. 2022 (CCS), Def. 3.2: membership inference game for a fixed model",
    fixed=(
        "population pool and target pool (split_seed)",
        "target training set D (membership_seed)",
        "target model training randomness s_theta (target_seed)",
        "attacker's reference/shadow/distilled/leave-one-out models (attacker_seed)",
    ),
    resampled=(
        "target record z_b: every target-pool record is one draw (members z_1 in D, non-members z_0 not in D)",
    ),
)


@dataclasses.dataclass(frozen=True)
class ExperimentResult:
    """The outcome of :func:`run_experiment`.

    Attributes
    ----------
    record_ids : array
        The audited records (the target pool).
    labels : int64 array
        Their class labels.
    membership : bool array
        The target's true membership of each audited record (= row ``"target"`` of
        ``membership_matrix``).
    scores : dict[str, AttackScores]
        Per-attack scores, higher = member. An attack may score a subset of the
        audited records (Attack L: the sampled records); use :meth:`member_of`.
    membership_matrix : MembershipMatrix
        Target (row ``"target"``) and reference models over the audited records.
    train_accuracy, test_accuracy : float
        The target's accuracy on its members and on the pool's non-members.
    timings : dict[str, float]
        Seconds spent in each phase.
    game : GameDescription
        What was fixed and what was resampled.
    config : ExperimentConfig
    seeds : dict[str, int]
        Effective component seeds.
    models_trained, models_loaded : dict[str, int]
        Per role, models trained in this run and models loaded from the store.
    dataset_fingerprint : str
    population_ids : array
        The attacker's population records.
    leave_one_out_ids : array or None
        The records attacked by Attack L.
    target_origin : {"trained", "provided"}
        Whether privaudit trained the target or the auditor provided it (and its split).
    split_randomised : bool
        Whether the membership was drawn at random independently of the records: True
        when privaudit drew it, the auditor's declaration
        (:attr:`~privaudit.models.provided.ProvidedTarget.randomised_split`) otherwise.
    recipe_check : dict or None
        For a provided target: the target's accuracy and that of a model trained with
        the recipe, on the audited non-members, the tolerance and whether it held.
    target_info : dict
        JSON-able ``fit_info`` of the target (e.g. a DP-SGD target's
        ``accountant_epsilon`` and ``delta``).
    attack_data : AttackData or None
        Every signal table and membership matrix the attacks read (to re-run an
        attack with other settings without retraining, or to analyse records).
    target_signals : dict[str, float64 array] or None
        The target's signals on the audited records (``record_ids`` order), e.g. its
        loss for the vulnerable-record analysis (:mod:`privaudit.membership.vulnerable`).
    """

    record_ids: NDArray[Any]
    labels: NDArray[np.int64]
    membership: NDArray[np.bool_]
    scores: Mapping[str, AttackScores]
    membership_matrix: MembershipMatrix
    train_accuracy: float
    test_accuracy: float
    timings: Mapping[str, float]
    game: GameDescription
    config: ExperimentConfig
    seeds: Mapping[str, int]
    models_trained: Mapping[str, int]
    models_loaded: Mapping[str, int]
    dataset_fingerprint: str
    population_ids: NDArray[Any]
    leave_one_out_ids: NDArray[Any] | None = None
    target_origin: str = "trained"
    split_randomised: bool = True
    recipe_check: Mapping[str, Any] | None = None
    target_info: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    attack_data: AttackData | None = dataclasses.field(default=None, repr=False, compare=False)
    target_signals: Mapping[str, NDArray[np.float64]] | None = None

    def member_of(self, attack: str) -> NDArray[np.bool_]:
        """True membership aligned with ``scores[attack].record_ids``."""
        if attack not in self.scores:
            raise fail("attack", "one of " + ", ".join(self.scores), repr(attack))
        ids = self.scores[attack].record_ids
        pos = {rid: i for i, rid in enumerate(self.record_ids.tolist())}
        return np.asarray([self.membership[pos[r]] for r in ids.tolist()], dtype=bool)

    def to_dict(self) -> dict[str, Any]:
        """JSON-compatible summary (scores and matrices as nested record dicts)."""
        return {
            "dataset_fingerprint": self.dataset_fingerprint,
            "game": self.game.to_dict(),
            "config": self.config.to_dict(),
            "seeds": dict(self.seeds),
            "target": {
                "train_accuracy": self.train_accuracy,
                "test_accuracy": self.test_accuracy,
                "n_members": int(self.membership.sum()),
                "n_non_members": int((~self.membership).sum()),
            },
            "timings": dict(self.timings),
            "models_trained": dict(self.models_trained),
            "models_loaded": dict(self.models_loaded),
            "membership_matrix": self.membership_matrix.to_dict(),
            "scores": {k: v.to_dict() for k, v in self.scores.items()},
        }


# --------------------------------------------------------------------------------------
# The experiment: a composition of named steps
# --------------------------------------------------------------------------------------


def target_pool_ids(dataset: Dataset, config: ExperimentConfig) -> NDArray[Any]:
    """The audited records (target pool) :func:`run_experiment` uses for ``config``."""
    pool, _ = draw_pool(dataset, config, config.component_seeds())
    return pool.record_ids


def _run_attacks(
    config: ExperimentConfig,
    data: AttackData,
    attacker_seed: int,
    *,
    progress: ProgressOption = None,
) -> dict[str, AttackScores]:
    """The attacks step: every configured attack on the signal tables, in order."""
    scores: dict[str, AttackScores] = {}
    with progress_bar("attacks", len(config.attacks), enabled=progress) as bar:
        for i, name in enumerate(config.attacks):
            params = dict(config.attack_params.get(name, {}))
            alpha = config.alpha if _ATTACKS[name].alpha_threshold else None
            scores[name] = run_attack(
                name,
                data,
                alpha=alpha,
                seed=derive_seed(attacker_seed, purpose=f"attack/{i}/{name}"),
                **params,
            )
            bar.advance()
    return scores


def run_experiment(
    dataset: Dataset,
    trainer: Trainer,
    config: ExperimentConfig,
    *,
    store: ArtifactStore | str | Path | None = None,
    executor: Executor | None = None,
    progress: ProgressOption = None,
    game: GameDescription | None = None,
    provided: ProvidedTarget | None = None,
) -> ExperimentResult:
    """Train the target and every attacker model the attacks need, then run the attacks.

    Parameters
    ----------
    dataset : Dataset
        The data universe; ``n_target_pool + n_population`` of its records are used.
    trainer : Trainer
        Training algorithm of the target, also used for every attacker model (the
        attacker knows the training algorithm, Ye et al. 2022 Sec. 4, assumption 3).
    config : ExperimentConfig
    store : ArtifactStore, path or None
        Cache of trained models and signals (resumable runs); None trains everything.
    executor : Executor or None
        Runs the model trainings; default ``LocalExecutor(config.n_jobs)``.
    progress : progress option
        Progress of the default executor (:mod:`privaudit.runtime.progress`; None = a bar
        on a terminal only).
    game : GameDescription or None
        Description recorded in the result (default: the fixed-model game, Def. 3.2).
    provided : ProvidedTarget or None
        A target trained outside privaudit with the auditor's split
        (:mod:`privaudit.models.provided`): nothing is drawn for the split or trained for
        the target; ``n_target_pool`` / ``n_population`` must equal the sizes of the
        audited set and of the population, and ``force_membership`` is refused.

    Returns
    -------
    ExperimentResult

    Raises
    ------
    InvalidInputError
        Bad configuration (names the field), or a dataset too small for it.
    DesignError
        The design cannot support an attack (e.g. too few members for Attack L).
    """
    _check_experiment_inputs(dataset, trainer, config)
    if isinstance(store, str | Path):
        store = ArtifactStore(store)
    if executor is None:  # our own workers: closed when the experiment ends
        with LocalExecutor(config.n_jobs, progress=progress) as own:
            return run_experiment(
                dataset,
                trainer,
                config,
                store=store,
                executor=own,
                progress=progress,
                game=game,
                provided=provided,
            )
    seeds = config.component_seeds()
    timings: dict[str, float] = {}

    # 1. split (by record id): pool, population, the target's members, reference layout
    t0 = time.perf_counter()
    split = make_split(dataset, config, seeds, provided)
    # LiRA's augmented queries: the target and reference models also on each view
    views = requested_views(config.attacks, config.attack_params, trainer)
    timings["split"] = time.perf_counter() - t0

    # 2-3. train many (store + executor + seeds) and signals, role by role
    models = YeModels(
        dataset, trainer, split, needs(config), seeds, store=store, executor=executor, views=views
    )
    shown = executor.progress
    with progress_phase(
        "target model" if provided is None else "target model (given)", enabled=shown
    ):
        target = _target_step(models, split, provided, config)
    data_kw, loo_ids = _attacker_models_step(models, config, target.signals)

    # 4. attacks
    t0 = time.perf_counter()
    data = AttackData(**data_kw)
    scores = _run_attacks(config, data, seeds["attacker"], progress=shown)
    timings.update(models.timings)
    timings["attacks"] = time.perf_counter() - t0

    return ExperimentResult(
        record_ids=split.pool.record_ids,
        labels=split.pool.y,
        membership=split.member,
        scores=scores,
        membership_matrix=split.matrix,
        train_accuracy=target.train_accuracy,
        test_accuracy=target.test_accuracy,
        timings=timings,
        game=game or FIXED_MODEL_GAME,
        config=config,
        seeds=seeds,
        models_trained=models.trained,
        models_loaded=models.loaded,
        dataset_fingerprint=dataset.fingerprint(),
        population_ids=split.population.record_ids,
        leave_one_out_ids=loo_ids,
        target_origin="trained" if provided is None else "provided",
        split_randomised=provided is None or provided.randomised_split,
        recipe_check=target.recipe_check,
        target_info=target.info,
        attack_data=data,
        target_signals={k: np.asarray(v.values[0]) for k, v in data_kw["target"].items()},
    )


def _check_experiment_inputs(dataset: Any, trainer: Any, config: Any) -> None:
    """Refuse what :func:`run_experiment` cannot run, naming the argument."""
    if not isinstance(dataset, Dataset):
        raise fail("dataset", "a privaudit Dataset", type(dataset).__name__)
    if not isinstance(config, ExperimentConfig):
        raise fail("config", "an ExperimentConfig", type(config).__name__)
    for attr in ("fit", "settings", "name"):
        if not hasattr(trainer, attr):
            raise fail("trainer", "a Trainer (name, fit, settings)", type(trainer).__name__)


@dataclasses.dataclass(frozen=True)
class _TargetStep:
    """The target of step 2-3: its signal tables and what the result reports about it."""

    signals: dict[str, Any]
    train_accuracy: float
    test_accuracy: float
    recipe_check: Mapping[str, Any] | None
    info: dict[str, Any]


def _target_step(
    models: YeModels,
    split: YeSplit,
    provided: ProvidedTarget | None,
    config: ExperimentConfig | None = None,
) -> _TargetStep:
    """Train (or take) the target and compute its signals; its accuracy on its members and
    on the pool's non-members; for a provided target, the recipe check (a model trained
    with the recipe must reach about the same accuracy); its JSON-able ``fit_info``. With
    ``config``, a batching trainer fits the target with its reference models."""
    target_model, signals = models.target(provided, config)
    train_acc = accuracy(target_model, split.pool.subset(split.member))
    test_acc = accuracy(target_model, split.pool.subset(~split.member))
    return _TargetStep(
        signals=signals,
        train_accuracy=train_acc,
        test_accuracy=test_acc,
        recipe_check=None if provided is None else models.recipe_check(provided, test_acc),
        info={
            str(k): v
            for k, v in dict(getattr(target_model, "fit_info", {}) or {}).items()
            if isinstance(v, bool | int | float | str)
        },
    )


def _attacker_models_step(
    models: YeModels, config: ExperimentConfig, target_signals: dict[str, Any]
) -> tuple[dict[str, Any], NDArray[Any] | None]:
    """The attacker's models, role by role (reference, shadow, distilled, leave-one-out,
    then the query views of the target and reference models): the keyword arguments of
    :class:`~privaudit.attacks.base.AttackData` and the records Attack L scores."""
    data_kw = dict(target_signals)
    data_kw.update(models.reference(config))
    data_kw.update(models.shadow(config))
    data_kw.update(models.distilled(config))
    loo, loo_ids = models.leave_one_out(config)
    data_kw.update(loo)
    data_kw.update(models.views(data_kw))
    return data_kw, loo_ids
