"""The experiment engine: train every model an audit needs, compute signals, run attacks.

One call of :func:`run_experiment` plays the membership-inference game for **one fixed
target model** (Ye et al. 2022, "Enhanced Membership Inference Attacks against Machine
Learning Models", CCS'22, Def. 3.2): the dataset and the target's training randomness
are fixed, and every record of the *target pool* is one draw of the target record
(a member ``z_1 in D`` or a non-member ``z_0 in pi \\ D``). The other games of Sec. 3.1
repeat it with some of that randomness resampled (:mod:`privaudit.games.games`).

Design (all randomness from :mod:`privaudit.runtime.seeds`, split into independent
components so that a game can fix some and resample others):

1. **Split** (``split_seed``): a uniformly random *target pool* of ``n_target_pool``
   records (the audited records) and a disjoint *population* of ``n_population``
   records (the attacker's data: Attack P, RMIA's ``z``, shadow and distillation data).
2. **Membership** (``membership_seed``): the target's members are a uniformly random
   half of the target pool. ``force_membership`` overrides single records (Def. 3.4).
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
     a uniformly random subset of the population of the target's training-set size,
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
:mod:`privaudit.attacks.base`). Every model goes through the :class:`Executor` (in
parallel, with a progress bar) and, when a store is given, through the
:class:`ArtifactStore`: a model is cached under a key that hashes the dataset
fingerprint, the training record ids, ``trainer.settings()``, the seed and the role
(and, for a distilled model, the target's key); its signals under the model key and the
evaluated records' fingerprint. A killed run resumes without retraining what finished.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import math
import time
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import check_positive_int, check_probability, fail
from privaudit.attacks.base import ATTACKS as _ATTACKS
from privaudit.attacks.base import (
    BUILTIN_ATTACKS,
    TABLE_FIELDS,
    AttackData,
    attack_names,
    default_attacks,
    required_inputs,
    run_attack,
)
from privaudit.data.dataset import Dataset
from privaudit.data.sampling import balanced_keep_matrix, split_target_population
from privaudit.errors import DesignError
from privaudit.games.provided import ProvidedTarget, RecipeMismatchWarning
from privaudit.games.query_views import (
    requested_views,
    view_attack_data,
    view_eval_sets,
    with_views,
)
from privaudit.models.base import Model, Trainer
from privaudit.models.distill import LogitRegressionModel, distill
from privaudit.models.persistence import load_model, save_model
from privaudit.models.precomputed import PrecomputedModel
from privaudit.models.sklearn import SklearnModel
from privaudit.records import AttackScores, MembershipMatrix, SignalTable
from privaudit.runtime.executor import Executor, LocalExecutor
from privaudit.runtime.seeds import derive_rng, derive_seed, spawn_seeds
from privaudit.runtime.store import ArtifactStore, hash_key
from privaudit.signals import ALL_SIGNALS, QUERY_SIGNALS, model_signals

__all__ = [
    "DEFAULT_ATTACKS",
    "ExperimentConfig",
    "ExperimentResult",
    "GameDescription",
    "run_experiment",
    "target_pool_ids",
]

#: The attacks run by default, in report order: every built-in attack except
#: ``distillation-logits``, which needs an MLP target (listed explicitly to run it).
DEFAULT_ATTACKS: tuple[str, ...] = tuple(a for a in BUILTIN_ATTACKS if a in default_attacks())

TARGET_ID = "target"
_POOL = "pool"
_POPULATION = "population"


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
class ExperimentConfig:
    """Everything that defines one experiment (one target model and its attacks).

    Parameters
    ----------
    attacks : tuple of str
        Registered attack names to run (default: :data:`DEFAULT_ATTACKS`).
    n_target_pool : int
        Audited records; about half become the target's members.
    n_population : int
        Attacker's population records, disjoint from the pool.
    n_reference : int
        Reference models; even (every pool record is IN for exactly half of them),
        at least 4 for the reference-based attacks, e.g. 8 or 16.
    n_shadow : int
        Shadow models, each trained on a random population subset of the target's
        training-set size; they are also Attack R's reference models.
    n_distilled : int
        Distilled models.
    distill_size : int or None
        Population records per distilled model (None: the target's training-set size,
        capped at ``n_population``).
    n_leave_one_out : int
        Leave-one-out models per sampled record (>= 2).
    leave_one_out_sample : int
        Number of pool records attacked by Attack L (about half members).
    alpha : float
        Requested false-positive rate of the alpha-threshold attacks.
    seed : int
        Root seed; each component seed below defaults to
        ``derive_seed(seed, purpose=<component>)``.
    split_seed, membership_seed, target_seed, attacker_seed : int or None
        Component seeds (see the module docstring); the games fix or resample them.
    n_jobs : int
        Worker processes of the default :class:`LocalExecutor`.
    signals : tuple of str
        Signals to compute beyond those the attacks read.
    attack_params : mapping
        Per-attack settings passed to ``run_attack`` (e.g. ``{"rmia-offline": {"a": 0.3}}``).
    force_membership : tuple of (record id, bool)
        Overrides of the target's membership (the reference layout is unchanged).
    leave_one_out_include : tuple of record ids
        Pool records always attacked by Attack L (the fixed records of Def. 3.3/3.4);
        they count towards ``leave_one_out_sample``.
    """

    attacks: tuple[str, ...] = DEFAULT_ATTACKS
    n_target_pool: int = 400
    n_population: int = 400
    n_reference: int = 8
    n_shadow: int = 4
    n_distilled: int = 4
    distill_size: int | None = None
    n_leave_one_out: int = 4
    leave_one_out_sample: int = 20
    alpha: float = 0.05
    seed: int = 0
    split_seed: int | None = None
    membership_seed: int | None = None
    target_seed: int | None = None
    attacker_seed: int | None = None
    n_jobs: int = 1
    signals: tuple[str, ...] = ()
    attack_params: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)
    force_membership: tuple[tuple[Any, bool], ...] = ()
    leave_one_out_include: tuple[Any, ...] = ()

    def __post_init__(self) -> None:
        attacks = tuple(self.attacks)
        if not attacks:
            raise fail("attacks", "at least one attack", "none")
        known = attack_names()
        for a in attacks:
            if a not in known:
                raise fail("attacks", "registered attack names (" + ", ".join(known) + ")", repr(a))
        if len(set(attacks)) != len(attacks):
            raise fail("attacks", "distinct attack names", list(attacks))
        object.__setattr__(self, "attacks", attacks)
        check_positive_int(self.n_target_pool, "n_target_pool", minimum=4)
        check_positive_int(self.n_population, "n_population", minimum=2)
        check_positive_int(self.n_reference, "n_reference", minimum=2)
        if self.n_reference % 2:
            raise fail(
                "n_reference",
                "an even number (every pool record is IN for exactly n_reference / 2 "
                "reference models), e.g. 8 or 16",
                self.n_reference,
            )
        uses_reference = any("reference" in required_inputs(a).fields for a in attacks)
        if uses_reference and self.n_reference < 4:
            raise fail(
                "n_reference",
                "at least 4 for reference-based attacks (each record needs >= 2 IN and "
                ">= 2 OUT reference models)",
                self.n_reference,
            )
        check_positive_int(self.n_shadow, "n_shadow", minimum=1)
        check_positive_int(self.n_distilled, "n_distilled")
        if self.distill_size is not None:
            check_positive_int(self.distill_size, "distill_size", minimum=2)
            if self.distill_size > self.n_population:
                raise fail(
                    "distill_size", f"at most n_population={self.n_population}", self.distill_size
                )
        check_positive_int(self.n_leave_one_out, "n_leave_one_out", minimum=2)
        check_positive_int(self.leave_one_out_sample, "leave_one_out_sample", minimum=2)
        check_probability(self.alpha, "alpha")
        for name in ("seed", "split_seed", "membership_seed", "target_seed", "attacker_seed"):
            v = getattr(self, name)
            if v is None and name != "seed":
                continue
            if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 0:
                raise fail(name, "a non-negative integer", repr(v))
        if isinstance(self.n_jobs, bool) or not isinstance(self.n_jobs, int) or self.n_jobs == 0:
            raise fail("n_jobs", "a non-zero integer", repr(self.n_jobs))
        sigs = tuple(self.signals)
        for s in sigs:
            if s not in ALL_SIGNALS:
                raise fail("signals", "signal names (" + ", ".join(ALL_SIGNALS) + ")", repr(s))
        object.__setattr__(self, "signals", sigs)
        params = {str(k): dict(v) for k, v in dict(self.attack_params).items()}
        for k in params:
            if k not in attacks:
                raise fail("attack_params", "settings for attacks that are run", repr(k))
        object.__setattr__(self, "attack_params", params)
        forced = tuple((rid, bool(b)) for rid, b in self.force_membership)
        object.__setattr__(self, "force_membership", forced)
        include = tuple(self.leave_one_out_include)
        if len(set(include)) != len(include):
            raise fail("leave_one_out_include", "distinct record ids", list(include))
        object.__setattr__(self, "leave_one_out_include", include)

    def component_seeds(self) -> dict[str, int]:
        """The effective seed of each random component."""
        out = {}
        for name in ("split", "membership", "target", "attacker"):
            v = getattr(self, f"{name}_seed")
            out[name] = (
                int(v) if v is not None else derive_seed(self.seed, purpose=f"experiment/{name}")
            )
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-compatible dict (record ids in ``force_membership`` as given)."""
        d = dataclasses.asdict(self)
        d["attacks"] = list(self.attacks)
        d["signals"] = list(self.signals)
        d["force_membership"] = [[_jsonable_id(r), b] for r, b in self.force_membership]
        d["leave_one_out_include"] = [_jsonable_id(r) for r in self.leave_one_out_include]
        d["attack_params"] = {k: dict(v) for k, v in self.attack_params.items()}
        return d


def _jsonable_id(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v


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
        loss for the vulnerable-record analysis (:mod:`privaudit.games.vulnerable`).
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
# Model jobs (run in worker processes)
# --------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Job:
    role: str
    model_id: str
    train_ids: NDArray[Any]
    seed: int
    eval_sets: tuple[str, ...]
    fixed_key: str | None = None  # a provided target: its cache key (no training)

    @property
    def label(self) -> str:
        return f"{self.role} model {self.model_id!r}"


@dataclasses.dataclass(frozen=True)
class _JobResult:
    signals: dict[str, NDArray[np.float64]]  # eval set -> (n_signals, n_eval)
    model_created: bool
    model_key: str


def _fit_accepts(trainer: Trainer, name: str) -> bool:
    try:
        return name in inspect.signature(trainer.fit).parameters
    except (TypeError, ValueError):  # pragma: no cover
        return False


def _save_signals(values: NDArray[np.float64], path: Path) -> None:
    with open(path, "wb") as fh:
        np.save(fh, values, allow_pickle=False)


def _load_signals(path: Path) -> NDArray[np.float64]:
    return np.asarray(np.load(path, allow_pickle=False), dtype=np.float64)


class _ModelWorker:
    """Trains (or loads) one model and returns its signals on the requested sets."""

    def __init__(
        self,
        dataset: Dataset,
        trainer: Trainer,
        store: ArtifactStore | None,
        signals: tuple[str, ...],
        eval_sets: Mapping[str, Dataset],
        teacher: Model | None = None,
        teacher_key: str | None = None,
        distill_method: str = "soft-labels",
    ) -> None:
        self.dataset = dataset
        self.trainer = trainer
        self.store = store
        self.signals = signals
        self.eval_sets = dict(eval_sets)
        self.teacher = teacher
        self.teacher_key = teacher_key
        self.distill_method = distill_method

    def with_signals(self, signals: tuple[str, ...]) -> _ModelWorker:
        """The same worker computing ``signals``."""
        other = copy.copy(self)
        other.signals = signals
        return other

    def model_key_parts(self, job: _Job) -> dict[str, Any]:
        if job.fixed_key is not None:
            return {"artifact": "model", "role": job.role, "provided": job.fixed_key}
        parts: dict[str, Any] = {
            "artifact": "model",
            "role": job.role,
            "dataset": self.dataset.fingerprint(),
            "train_ids": np.asarray(job.train_ids),
            "n_classes": self.dataset.n_classes,
            "trainer": self.trainer.name,
            "settings": self.trainer.settings(),
            "seed": int(job.seed),
        }
        if job.role == "distilled":
            parts["teacher"] = self.teacher_key
            parts["distill_method"] = self.distill_method
        return parts

    def _train(self, job: _Job) -> Model:
        train = self.dataset.subset(np.asarray(job.train_ids))
        if job.role == "distilled":
            if self.teacher is None:  # pragma: no cover - the engine always sets it
                raise DesignError("distilled models need the target model as teacher")
            return distill(
                self.trainer,
                self.teacher,
                train.X,
                seed=int(job.seed),
                method=self.distill_method,
            )
        kwargs: dict[str, Any] = {}
        if _fit_accepts(self.trainer, "n_classes"):
            kwargs["n_classes"] = self.dataset.n_classes
        model = self.trainer.fit(train.X, train.y, seed=int(job.seed), **kwargs)
        if model.n_classes != self.dataset.n_classes:
            raise DesignError(
                f"{job.label}: the trained model has {model.n_classes} classes, "
                f"the dataset {self.dataset.n_classes}; give the trainer n_classes"
            )
        return model

    def model(self, job: _Job, trained: Model | None = None) -> tuple[Model, bool, str]:
        """The job's model: from the store, else ``trained`` (already fitted, e.g. by a
        batched fit) or a fresh fit; stored when a store is given."""
        parts = self.model_key_parts(job)
        key = hash_key(parts)
        if self.store is None:
            return (self._train(job) if trained is None else trained), True, key
        created: list[bool] = []

        def create() -> Model:
            created.append(True)
            return self._train(job) if trained is None else trained

        trainer_save = getattr(self.trainer, "save_model", None)
        trainer_load = getattr(self.trainer, "load_model", None)
        suffix = str(getattr(self.trainer, "artifact_suffix", ".skops"))

        def save(m: Model, path: Path) -> None:
            if trainer_save is not None and not isinstance(
                m, SklearnModel | LogitRegressionModel | PrecomputedModel
            ):
                trainer_save(m, path)
                return
            if not isinstance(m, SklearnModel | LogitRegressionModel | PrecomputedModel):
                raise DesignError(
                    f"{job.label}: the artifact store can persist scikit-learn and precomputed "
                    f"models only, not {type(m).__name__}"
                )
            save_model(m, path)

        def load(path: Path) -> Model:
            if trainer_load is not None and suffix != ".skops":
                return cast(Model, trainer_load(path))
            return cast(Model, load_model(path))

        model = self.store.get_or_create(parts, create, save, load, suffix=suffix)
        return model, bool(created), key

    def __call__(self, job: _Job) -> _JobResult:
        return self.run(job)

    def run(self, job: _Job, preloaded: tuple[Model, bool, str] | None = None) -> _JobResult:
        """Signals of ``job``'s model on its evaluation sets; trains it only if needed."""
        memo: list[tuple[Model, bool, str]] = [] if preloaded is None else [preloaded]

        def get_model() -> tuple[Model, bool, str]:
            if not memo:
                memo.append(self.model(job))
            return memo[0]

        model_key = hash_key(self.model_key_parts(job))
        out: dict[str, NDArray[np.float64]] = {}
        for name in job.eval_sets:
            data = self.eval_sets[name]

            def compute(data: Dataset = data) -> NDArray[np.float64]:
                model = get_model()[0]
                # label-only signals perturb in units of the whole dataset's spread
                scale = self.dataset.X.std(axis=0)
                sig = model_signals(job.model_id, model, data, self.signals, feature_scale=scale)
                return np.stack([np.asarray(sig[s], dtype=np.float64) for s in self.signals])

            if self.store is None:
                out[name] = compute()
                continue
            parts = {
                "artifact": "signals",
                "model": model_key,
                "records": data.fingerprint(),
                "signals": list(self.signals),
            }
            values: NDArray[np.float64] = self.store.get_or_create(
                parts, compute, _save_signals, _load_signals, suffix=".npy"
            )
            out[name] = values
        created = memo[0][1] if memo else False
        return _JobResult(out, created, model_key)


# --------------------------------------------------------------------------------------
# The engine
# --------------------------------------------------------------------------------------


def target_pool_ids(dataset: Dataset, config: ExperimentConfig) -> NDArray[Any]:
    """The audited records (target pool) :func:`run_experiment` uses for ``config``."""
    seeds = config.component_seeds()
    pool, _ = split_target_population(
        dataset,
        config.n_target_pool,
        config.n_population,
        derive_rng(seeds["split"], purpose="split"),
    )
    return pool.record_ids


def _run_batched(worker: _ModelWorker, jobs: list[_Job], fit_many: Any) -> list[_JobResult]:
    """Train the jobs' models not in the store as one batched computation
    (``trainer.fit_many``, e.g. :func:`privaudit.models.torch_batched.fit_many`), then
    store them and compute their signals in this process."""
    store = worker.store
    todo = [j for j in jobs if store is None or not store.contains(worker.model_key_parts(j))]
    fitted: dict[str, Model] = {}
    if todo:
        ds = worker.dataset
        models = fit_many(
            ds.X,
            ds.y,
            [ds.positions(np.asarray(j.train_ids)) for j in todo],
            [int(j.seed) for j in todo],
            n_classes=ds.n_classes,
        )
        fitted = {j.model_id: m for j, m in zip(todo, models, strict=True)}
    out = []
    for j in jobs:
        pre = worker.model(j, trained=fitted.get(j.model_id)) if j.model_id in fitted else None
        out.append(worker.run(j, preloaded=pre))
    return out


#: Fields whose models train through the executor (each phase is one map).
_ATTACKER_MODEL_FIELDS = frozenset(
    {
        "reference",
        "reference_membership",
        "reference_population",
        "shadow",
        "outside_reference",
        "distilled",
        "distilled_logits",
        "leave_one_out",
    }
)


def _needed(config: ExperimentConfig) -> tuple[set[str], tuple[str, ...], set[str]]:
    """Fields and signals the attacks read, and the fields read with a query signal
    (label-only signals are computed only for the models of those fields)."""
    fields: set[str] = set()
    sigs: list[str] = []
    query_fields: set[str] = set()
    for a in config.attacks:
        params = config.attack_params.get(a, {})
        req = required_inputs(a, signal=params.get("signal"))
        fields.update(req.fields)
        fields.update(req.optional_fields)
        sigs.extend(req.signals)
        if set(req.signals) & set(QUERY_SIGNALS):
            query_fields.update(req.fields)
            query_fields.update(req.optional_fields)
    sigs.extend(config.signals)
    ordered = tuple(s for s in ALL_SIGNALS if s in set(sigs))
    if set(config.signals) & set(QUERY_SIGNALS):
        query_fields.update(TABLE_FIELDS)
    return fields, ordered, query_fields


def _tables(
    model_ids: Sequence[str],
    record_ids: NDArray[Any],
    stacked: NDArray[np.float64],
    signals: Sequence[str],
) -> dict[str, SignalTable]:
    # stacked: (n_models, n_signals, n_records)
    return {
        s: SignalTable(s, record_ids, tuple(model_ids), stacked[:, k, :])
        for k, s in enumerate(signals)
    }


def _accuracy(model: Model | PrecomputedModel, data: Dataset) -> float:
    """Accuracy on ``data``; NaN when unknown (no records, or losses-only outputs)."""
    if data.n_records == 0:
        return float("nan")
    if isinstance(model, PrecomputedModel):
        if not model.has_logits:
            return float("nan")
        z = model.logits_for(data.record_ids)
    else:
        z = np.asarray(model.logits(data.X), dtype=np.float64)
    return float(np.mean(np.argmax(z, axis=1) == data.y))


def _provided_split(
    dataset: Dataset, provided: ProvidedTarget, config: ExperimentConfig, seeds: Mapping[str, int]
) -> tuple[Dataset, Dataset, NDArray[np.bool_], Dataset | None]:
    """Pool, population, membership and reference source of a provided target."""
    if config.force_membership:
        raise fail("force_membership", "none with a provided target (its split is given)", "overrides")
    pool = dataset.subset(provided.audited_ids)
    member = np.zeros(pool.n_records, dtype=bool)
    member[: provided.member_ids.size] = True
    if provided.population_ids is not None:
        population = dataset.subset(provided.population_ids)
    else:
        rest = ~np.isin(dataset.record_ids, pool.record_ids)
        if not rest.any():
            raise DesignError("a provided target needs population records (none left)")
        population = dataset.subset(rest)
    if pool.n_records != config.n_target_pool:
        raise fail("n_target_pool", f"the {pool.n_records} audited records", config.n_target_pool)
    if population.n_records != config.n_population:
        raise fail("n_population", f"the {population.n_records} population records", config.n_population)
    ref_source = None
    if provided.references == "population":
        # set aside half of the population (at least the target's training-set size when
        # possible) for the reference models; the rest stays the attacker's population
        n_src = max(population.n_records // 2, min(int(member.sum()), population.n_records - 2))
        if n_src < 2 or population.n_records - n_src < 2:
            raise DesignError(
                f"references: 'population' needs population records for the reference models "
                f"and for the attacker's population; found {population.n_records}"
            )
        perm = derive_rng(seeds["split"], purpose="reference-source").permutation(
            population.n_records
        )
        src = np.zeros(population.n_records, dtype=bool)
        src[perm[:n_src]] = True
        ref_source, population = population.subset(src), population.subset(~src)
    return pool, population, member, ref_source


def _population_subsets(
    source: Dataset, size: int, n_models: int, seed: int
) -> list[NDArray[Any]]:
    """``n_models`` uniformly random subsets of ``min(size, n)`` records of ``source``."""
    rng = derive_rng(seed, purpose="reference-population-subsets")
    k = min(size, source.n_records)
    return [
        source.record_ids[np.sort(rng.choice(source.n_records, size=k, replace=False))]
        for _ in range(n_models)
    ]


def _recipe_check(
    worker: _ModelWorker,
    pool: Dataset,
    member: NDArray[np.bool_],
    population: Dataset,
    ref_source: Dataset | None,
    provided: ProvidedTarget,
    target_test_acc: float,
    seeds: Mapping[str, int],
) -> dict[str, Any]:
    """Train one model with the recipe on population records (the target's training-set
    size) and compare its accuracy on the audited non-members with the target's; warn
    (:class:`RecipeMismatchWarning`) when they differ by more than the tolerance."""
    source = ref_source if ref_source is not None else population
    (ids,) = _population_subsets(source, int(member.sum()), 1, seeds["attacker"])
    job = _Job("recipe-check", "recipe-check", ids, derive_seed(seeds["attacker"], purpose="recipe-check"), ())
    model, _, _ = worker.model(job)
    ref_acc = _accuracy(model, pool.subset(~member))
    tol = float(provided.accuracy_tolerance)
    out: dict[str, Any] = {
        "target_test_accuracy": None if math.isnan(target_test_acc) else target_test_acc,
        "recipe_test_accuracy": ref_acc,
        "recipe_train_size": int(ids.size),
        "evaluated_on": "audited non-members",
        "tolerance": tol,
    }
    if math.isnan(target_test_acc):
        out["ok"] = None
        out["note"] = "target accuracy unknown (per-record losses only): not compared"
        return out
    out["ok"] = bool(abs(ref_acc - target_test_acc) <= tol)
    if not out["ok"]:
        warnings.warn(
            RecipeMismatchWarning(
                f"a model trained with the recipe reaches {ref_acc:.3f} accuracy on the audited "
                f"non-members, the target {target_test_acc:.3f} (gap "
                f"{abs(ref_acc - target_test_acc):.3f} > tolerance {tol}): the reference models "
                "may not resemble the target, and reference-based attacks may be weak; check "
                "that the recipe is the one the target was trained with"
            ),
            stacklevel=3,
        )
    return out


def run_experiment(
    dataset: Dataset,
    trainer: Trainer,
    config: ExperimentConfig,
    *,
    store: ArtifactStore | str | Path | None = None,
    executor: Executor | None = None,
    progress: bool | None = None,
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
    progress : bool or None
        Progress bars of the default executor (None: only on a terminal).
    game : GameDescription or None
        Description recorded in the result (default: the fixed-model game, Def. 3.2).
    provided : ProvidedTarget or None
        A target trained outside privaudit with the auditor's split
        (:mod:`privaudit.games.provided`): nothing is drawn for the split or trained for
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
    if not isinstance(dataset, Dataset):
        raise fail("dataset", "a privaudit Dataset", type(dataset).__name__)
    if not isinstance(config, ExperimentConfig):
        raise fail("config", "an ExperimentConfig", type(config).__name__)
    for attr in ("fit", "settings", "name"):
        if not hasattr(trainer, attr):
            raise fail("trainer", "a Trainer (name, fit, settings)", type(trainer).__name__)
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
    fields, signals, query_fields = _needed(config)

    def role_signals(*role_fields: str) -> tuple[str, ...]:
        if query_fields & set(role_fields):
            return signals
        return tuple(s for s in signals if s not in QUERY_SIGNALS)

    timings: dict[str, float] = {}
    trained: dict[str, int] = {}
    loaded: dict[str, int] = {}

    # 1. split ------------------------------------------------------------------------
    t0 = time.perf_counter()
    ref_source: Dataset | None = None
    if provided is None:
        pool, population = split_target_population(
            dataset,
            config.n_target_pool,
            config.n_population,
            derive_rng(seeds["split"], purpose="split"),
        )
        # The target's members: a uniformly random half of the pool, drawn independently
        # of the reference models' layout (so the layout carries no information on the bit).
        member = np.zeros(pool.n_records, dtype=bool)
        m_rng = derive_rng(seeds["membership"], purpose="target-membership")
        member[m_rng.permutation(pool.n_records)[: pool.n_records // 2]] = True
        if config.force_membership:
            pos = pool.positions(np.asarray([r for r, _ in config.force_membership]))
            member[pos] = [b for _, b in config.force_membership]
    else:
        pool, population, member, ref_source = _provided_split(dataset, provided, config, seeds)
    if provided is not None and provided.references == "population":
        # Reference models train on the part of the population set aside for them (every
        # audited record OUT for all of them: offline attacks only).
        ref_keep = MembershipMatrix(
            pool.record_ids,
            tuple(f"ref-{j:03d}" for j in range(config.n_reference)),
            np.zeros((config.n_reference, pool.n_records), dtype=bool),
        )
    else:
        # Reference models: a balanced keep matrix over the reference models only (every
        # pool record IN for exactly n_reference / 2 of them, whatever its target bit).
        ref_keep = balanced_keep_matrix(
            pool.record_ids,
            config.n_reference,
            derive_rng(seeds["attacker"], purpose="reference-keep-matrix"),
            model_prefix="ref",
        )
    ref_ids = ref_keep.model_ids
    matrix = MembershipMatrix(
        pool.record_ids, (TARGET_ID, *ref_ids), np.vstack([member[None, :], ref_keep.keep])
    )
    if member.sum() < 2 or (~member).sum() < 2:
        raise DesignError("the target needs at least 2 members and 2 non-members in the pool")
    eval_sets = {_POOL: pool, _POPULATION: population}
    # LiRA's augmented queries: the target and reference models also on each view
    views = requested_views(config.attacks, config.attack_params, trainer)
    view_sets = {} if views is None else view_eval_sets(views, eval_sets)
    timings["split"] = time.perf_counter() - t0

    def run_jobs(role: str, jobs: list[_Job], worker: _ModelWorker, desc: str) -> list[_JobResult]:
        t = time.perf_counter()
        many = getattr(trainer, "fit_many", None) if getattr(trainer, "batched", False) else None
        if many is not None and worker.teacher is None and len(jobs) > 1:
            results = _run_batched(worker, jobs, many)
        else:
            results = executor.map(worker, jobs, desc=desc, label=lambda j: j.label)
        timings[role] = timings.get(role, 0.0) + time.perf_counter() - t
        trained[role] = trained.get(role, 0) + sum(r.model_created for r in results)
        loaded[role] = loaded.get(role, 0) + sum(not r.model_created for r in results)
        return results

    base_worker = _ModelWorker(dataset, trainer, store, signals, eval_sets)
    # the target and reference models are also queried on the views (only they carry them)
    query_worker = _ModelWorker(dataset, trainer, store, signals, {**eval_sets, **view_sets})
    if fields & _ATTACKER_MODEL_FIELDS and not getattr(trainer, "batched", False):
        # worker processes start (and import the trainer's modules) while the target trains
        executor.start(preload=(trainer, _ModelWorker))

    # 2. target -----------------------------------------------------------------------
    t0 = time.perf_counter()
    target_sets = with_views(
        views, (_POOL, _POPULATION) if "population_target" in fields else (_POOL,)
    )
    if provided is None:
        target_job = _Job(
            "target", TARGET_ID, pool.record_ids[member], seeds["target"], target_sets
        )
        target_loaded = base_worker.model(target_job)
    else:
        fixed = hash_key({"provided-target": provided.fingerprint or repr(provided.model)})
        target_job = _Job(
            "target", TARGET_ID, pool.record_ids[member], seeds["target"], target_sets, fixed
        )
        target_loaded = (provided.model, False, hash_key(base_worker.model_key_parts(target_job)))
    target_model, created, target_key = target_loaded
    target_res = query_worker.run(target_job, preloaded=target_loaded)
    trained["target"] = int(created)
    loaded["target"] = int(not created)
    train_acc = _accuracy(target_model, pool.subset(member))
    test_acc = _accuracy(target_model, pool.subset(~member))
    timings["target"] = time.perf_counter() - t0
    recipe_check: dict[str, Any] | None = None
    if provided is not None:
        t0 = time.perf_counter()
        recipe_check = _recipe_check(
            base_worker, pool, member, population, ref_source, provided, test_acc, seeds
        )
        trained["recipe_check"] = 1
        timings["recipe_check"] = time.perf_counter() - t0

    def single(res: _JobResult, name: str, data: Dataset) -> dict[str, SignalTable]:
        return _tables((TARGET_ID,), data.record_ids, res.signals[name][None], signals)

    data_kw: dict[str, Any] = {
        "record_ids": pool.record_ids,
        "labels": pool.y,
        "target": single(target_res, _POOL, pool),
    }
    if "population_target" in fields:
        data_kw["population_target"] = single(target_res, _POPULATION, population)
        data_kw["population_labels"] = population.y

    # 3. reference models -------------------------------------------------------------
    if fields & {"reference", "reference_membership", "reference_population"}:
        ref_sets = with_views(
            views, (_POOL, _POPULATION) if "reference_population" in fields else (_POOL,)
        )
        ref_seeds = spawn_seeds(seeds["attacker"], config.n_reference, purpose="reference-models")
        if ref_source is None:
            ref_train = [pool.record_ids[matrix.row(rid)] for rid in ref_ids]
        else:
            ref_train = _population_subsets(
                ref_source, int(member.sum()), config.n_reference, seeds["attacker"]
            )
        jobs = [
            _Job("reference", rid, ids, s, ref_sets)
            for rid, ids, s in zip(ref_ids, ref_train, ref_seeds, strict=True)
        ]
        sigs = role_signals("reference", "reference_population")
        res = run_jobs("reference", jobs, query_worker.with_signals(sigs), "reference models")
        ref_res = (res, sigs)
        data_kw["reference"] = _tables(
            ref_ids, pool.record_ids, np.stack([r.signals[_POOL] for r in res]), sigs
        )
        data_kw["reference_membership"] = ref_keep
        if _POPULATION in ref_sets:
            data_kw["reference_population"] = _tables(
                ref_ids,
                population.record_ids,
                np.stack([r.signals[_POPULATION] for r in res]),
                sigs,
            )

    # 4. shadow models ----------------------------------------------------------------
    # Shadow models (attack S) and attack R's reference models are built the same way
    # in Ye et al. (App. B.2: models on random population subsets of the target's
    # training-set size), so one set serves both: S reads them on the population, R on
    # the audited records (none of which they trained on).
    if fields & {"shadow", "outside_reference"}:
        n_train = int(member.sum())
        if n_train >= population.n_records:
            raise DesignError(
                f"shadow models train on {n_train} population records (the target's "
                f"training-set size) and need OUT records: n_population must exceed it, "
                f"found {population.n_records}"
            )
        # The subsets are drawn from a random max(n_train, n_population / 2) of the
        # population; the rest is never trained on, so attack R's calibration has at
        # least n_population / 2 records that none of these models saw.
        sh_rng = derive_rng(seeds["attacker"], purpose="shadow-subsets")
        n_source = max(n_train, population.n_records // 2)
        source = np.sort(sh_rng.permutation(population.n_records)[:n_source])
        sh_keep = np.zeros((config.n_shadow, population.n_records), dtype=bool)
        for j in range(config.n_shadow):
            sh_keep[j, sh_rng.choice(source, size=n_train, replace=False)] = True
        shadow_keep = MembershipMatrix(
            population.record_ids,
            tuple(f"shadow-{j:03d}" for j in range(config.n_shadow)),
            sh_keep,
        )
        shadow_seeds = spawn_seeds(seeds["attacker"], config.n_shadow, purpose="shadow-models")
        sh_sets = (_POPULATION, _POOL) if "outside_reference" in fields else (_POPULATION,)
        jobs = [
            _Job("shadow", sid, population.record_ids[shadow_keep.row(sid)], s, sh_sets)
            for sid, s in zip(shadow_keep.model_ids, shadow_seeds, strict=True)
        ]
        sigs = role_signals("shadow", "outside_reference", "outside_reference_population")
        res = run_jobs("shadow", jobs, base_worker.with_signals(sigs), "shadow models")
        on_population = _tables(
            shadow_keep.model_ids,
            population.record_ids,
            np.stack([r.signals[_POPULATION] for r in res]),
            sigs,
        )
        if "shadow" in fields:
            data_kw["shadow"] = on_population
            data_kw["shadow_membership"] = shadow_keep
            data_kw["shadow_labels"] = population.y
        if "outside_reference" in fields:
            data_kw["outside_reference"] = _tables(
                shadow_keep.model_ids,
                pool.record_ids,
                np.stack([r.signals[_POOL] for r in res]),
                sigs,
            )
            data_kw["outside_reference_population"] = on_population
            data_kw["outside_reference_population_membership"] = shadow_keep

    # 5. distilled models -------------------------------------------------------------
    # Two kinds of students, one per attack: soft labels (Ye et al. eq. 14-15, attack
    # "distillation") and logit regression (attack "distillation-logits"); the same
    # subsets and seeds for both, so the two attacks differ only in the objective.
    students = [
        (field, method)
        for field, method in (("distilled", "soft-labels"), ("distilled_logits", "logits"))
        if field in fields
    ]
    if students and not callable(getattr(target_model, "logits", None)):
        raise DesignError(
            "distilled models (attacks D) query the target on population records; a "
            "target given as precomputed outputs cannot be queried: drop the distillation attacks"
        )
    if students:
        size = config.distill_size or min(population.n_records, int(member.sum()))
        rng = derive_rng(seeds["attacker"], purpose="distillation-subsets")
        d_seeds = spawn_seeds(seeds["attacker"], config.n_distilled, purpose="distilled-models")
        d_keep = np.zeros((config.n_distilled, population.n_records), dtype=bool)
        # The subsets are drawn from a random part of the population of size
        # max(distill_size, n_population / 2); the rest is never distilled on, so the
        # calibration of attack D has at least n_population / 2 records that no
        # distilled model saw (with independent subsets of the whole population, only
        # a fraction (1 - size / n_population) ** n_distilled of it would be).
        n_source = max(size, population.n_records // 2)
        source = np.sort(rng.permutation(population.n_records)[:n_source])
        picks = []
        for j in range(config.n_distilled):
            pick = np.sort(rng.choice(source, size=size, replace=False))
            d_keep[j, pick] = True
            picks.append(pick)
        for field, method in students:
            prefix = "distilled" if method == "soft-labels" else "distilled-logits"
            d_ids = tuple(f"{prefix}-{j:03d}" for j in range(config.n_distilled))
            d_sets = (_POOL, _POPULATION) if f"{field}_population" in fields else (_POOL,)
            jobs = [
                _Job("distilled", did, population.record_ids[pick], s, d_sets)
                for did, s, pick in zip(d_ids, d_seeds, picks, strict=True)
            ]
            sigs = role_signals(field, f"{field}_population")
            worker = _ModelWorker(
                dataset,
                trainer,
                store,
                sigs,
                eval_sets,
                teacher=target_model,
                teacher_key=target_key,
                distill_method=method,
            )
            res = run_jobs(prefix.replace("-", "_"), jobs, worker, f"{prefix} models")
            data_kw[field] = _tables(
                d_ids, pool.record_ids, np.stack([r.signals[_POOL] for r in res]), sigs
            )
            if _POPULATION in d_sets:
                data_kw[f"{field}_population"] = _tables(
                    d_ids,
                    population.record_ids,
                    np.stack([r.signals[_POPULATION] for r in res]),
                    sigs,
                )
                data_kw[f"{field}_population_membership"] = MembershipMatrix(
                    population.record_ids, d_ids, d_keep
                )

    # 6. leave-one-out models ---------------------------------------------------------
    loo_ids: NDArray[Any] | None = None
    if "leave_one_out" in fields:
        rng = derive_rng(seeds["attacker"], purpose="leave-one-out-sample")
        include = np.zeros(pool.n_records, dtype=bool)
        if config.leave_one_out_include:
            include[pool.positions(np.asarray(config.leave_one_out_include))] = True
        members = np.flatnonzero(member & ~include)
        non_members = np.flatnonzero(~member & ~include)
        n_rest = max(0, config.leave_one_out_sample - int(include.sum()))
        k_m = min(math.ceil(n_rest / 2), members.size)
        k_n = min(n_rest - k_m, non_members.size)
        pick_m = np.sort(rng.choice(members, size=k_m, replace=False))
        pick_n = np.sort(rng.choice(non_members, size=k_n, replace=False))
        forced = np.flatnonzero(include)
        pick_m = np.sort(np.concatenate([pick_m, forced[member[forced]]])).astype(np.intp)
        pick_n = np.sort(np.concatenate([pick_n, forced[~member[forced]]])).astype(np.intp)
        loo_sets = (_POOL, _POPULATION) if "leave_one_out_population" in fields else (_POOL,)
        loo_seeds = spawn_seeds(
            seeds["attacker"], config.n_leave_one_out, purpose="leave-one-out-models"
        )
        jobs, rows, serve_rows, model_ids = [], [], [], []
        for r, s in enumerate(loo_seeds):
            mid = f"loo-all-{r:02d}"
            jobs.append(_Job("leave-one-out", mid, pool.record_ids[member], s, loo_sets))
            rows.append(member.copy())
            serve_rows.append(~member)  # D \ {x} = D for a non-member x
            model_ids.append(mid)
        for p in pick_m:
            row = member.copy()
            row[p] = False
            serves = np.zeros(pool.n_records, dtype=bool)
            serves[p] = True  # a model on D \ {x} is x's out world only
            for r, s in enumerate(loo_seeds):
                mid = f"loo-{pool.record_ids[p]}-{r:02d}"
                jobs.append(_Job("leave-one-out", mid, pool.record_ids[row], s, loo_sets))
                rows.append(row)
                serve_rows.append(serves)
                model_ids.append(mid)
        sigs = role_signals("leave_one_out", "leave_one_out_population")
        res = run_jobs(
            "leave_one_out", jobs, base_worker.with_signals(sigs), "leave-one-out models"
        )
        data_kw["leave_one_out"] = _tables(
            model_ids, pool.record_ids, np.stack([r.signals[_POOL] for r in res]), sigs
        )
        data_kw["leave_one_out_membership"] = MembershipMatrix(
            pool.record_ids, tuple(model_ids), np.stack(rows)
        )
        data_kw["leave_one_out_serves"] = np.stack(serve_rows)
        if _POPULATION in loo_sets:
            data_kw["leave_one_out_population"] = _tables(
                model_ids,
                population.record_ids,
                np.stack([r.signals[_POPULATION] for r in res]),
                sigs,
            )
            # population records are non-members: served by the models trained on D
            pop_serves = np.zeros((len(model_ids), population.n_records), dtype=bool)
            pop_serves[: config.n_leave_one_out] = True
            data_kw["leave_one_out_population_serves"] = pop_serves
        loo_ids = pool.record_ids[np.sort(np.concatenate([pick_m, pick_n]))]

    if views is not None:

        def view_tables(field: str, set_name: str) -> dict[str, SignalTable]:
            ids = view_sets[set_name].record_ids
            if field in ("target", "population_target"):
                return _tables((TARGET_ID,), ids, target_res.signals[set_name][None], signals)
            rs, rsigs = ref_res
            return _tables(ref_ids, ids, np.stack([r.signals[set_name] for r in rs]), rsigs)

        fields_sets = {"target": _POOL, "population_target": _POPULATION}
        fields_sets.update(reference=_POOL, reference_population=_POPULATION)
        data_kw["views"] = view_attack_data(views, data_kw, view_tables, fields_sets)

    # 7. attacks ----------------------------------------------------------------------
    t0 = time.perf_counter()
    data = AttackData(**data_kw)
    scores: dict[str, AttackScores] = {}
    for i, name in enumerate(config.attacks):
        params = dict(config.attack_params.get(name, {}))
        alpha = config.alpha if _ATTACKS[name].alpha_threshold else None
        result = run_attack(
            name,
            data,
            alpha=alpha,
            seed=derive_seed(seeds["attacker"], purpose=f"attack/{i}/{name}"),
            **params,
        )
        scores[name] = result
    timings["attacks"] = time.perf_counter() - t0

    return ExperimentResult(
        record_ids=pool.record_ids,
        labels=pool.y,
        membership=member,
        scores=scores,
        membership_matrix=matrix,
        train_accuracy=train_acc,
        test_accuracy=test_acc,
        timings=timings,
        game=game or FIXED_MODEL_GAME,
        config=config,
        seeds=seeds,
        models_trained=trained,
        models_loaded=loaded,
        dataset_fingerprint=dataset.fingerprint(),
        population_ids=population.record_ids,
        leave_one_out_ids=loo_ids,
        target_origin="trained" if provided is None else "provided",
        recipe_check=recipe_check,
        target_info={
            str(k): v
            for k, v in dict(getattr(target_model, "fit_info", {}) or {}).items()
            if isinstance(v, bool | int | float | str)
        },
        attack_data=data,
        target_signals={k: np.asarray(v.values[0]) for k, v in data_kw["target"].items()},
    )
