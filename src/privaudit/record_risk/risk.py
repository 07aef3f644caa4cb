"""Record-level risk in both games: :func:`run_record_risk`.

Krčo et al. 2025 ("Lost in the Averages", arXiv 2405.15423): a record's risk measured in
the traditional game (datasets resampled) is its risk averaged over datasets; the
model-seeded game (the released dataset fixed, only the training seed varies) measures
the risk of that record in that release. This module plays both, amortised, for a
synthetic-data generator (:mod:`privaudit.generators`) or a classifier
(:class:`privaudit.models.Trainer`), against one per-target attack
(:mod:`privaudit.record_risk.attacks`), as a composition of the shared steps:

1. **split** -- :func:`privaudit.record_risk.rounds.make_plan` (auxiliary / evaluation
   pools, ``D0``, targets: half most vulnerable by distance, half random; how each game's
   datasets differ from the paper's Def. 2-3 -- the model-seeded OUT dataset
   ``D0 - x + z`` with a fresh ``z``, the amortised traditional rounds that hold about
   half of the targets -- is stated there);
2. **train many** -- :func:`privaudit.models.train_many.train_many` runs the releases in
   tasks of a few rounds each through the executor and the artifact store (resumable); a
   release is ``A(D; s)``, re-created from the plan and the round's seed in the worker
   (a batched torch trainer trains a task's rounds as one stacked computation, each
   round with its own training set and seed: :func:`~privaudit.models.train_many.fits_many`);
3. **signals** -- the attack's summary of each release (the synthetic table, or the
   classifier's loss and logit-scaled confidence on the targets) and per-target features
   (query counts, distances, losses);
4. **attacks** -- for a trained attack, a per-target model fitted on ``n_shadow`` shadow
   releases from auxiliary data (each target IN with probability 1/2, drawn from the
   seed: too few releases to give every target 2 IN and 2 OUT are refused before any
   training), then applied to every game round inside the worker (only scores leave it);
5. **metrics** -- per-record AUC per game with its confidence interval at level
   ``1 - rho`` (:func:`privaudit.metrics.auc_ci.auc_confidence_interval`, exact at AUC 0
   or 1) and the Hoeffding width of
   Prop. 1-2 (it needs every target IN and OUT at least once in each game: the
   traditional game draws each target IN with probability 1/2 from the seed, so too few
   rounds for that are refused before any training); miss rates and RMSD between the
   games, their noise floors from an independent replicate of each game, and the test of
   a gap beyond that noise, its spread from a bootstrap over releases (seeded from
   ``seed``) since one release serves many targets
   (:mod:`privaudit.record_risk.metrics`).

Cost: ``n_shadow + 2 (n_rounds + n_rounds/2 + K n_rounds/2)`` releases with replicates
(``K`` targets); with K = 64 and 400 rounds about 27,000 generator fits. With
``traditional="per-target"`` (the paper's plain draws) the traditional term is
``K n_rounds``: about 77,000 fits.
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import check_choice, check_positive_int, check_probability, fail
from privaudit.data.dataset import Dataset
from privaudit.generators.discrete import DiscreteTable, discretise
from privaudit.models.train_many import fits_many, train_many
from privaudit.record_risk.attacks import RecordAttack, check_design, make_record_attack
from privaudit.record_risk.metrics import (
    GAP_BOOTSTRAP_DRAWS,
    THRESHOLDS,
    ScoreBlock,
    bootstrap_auc_deviations,
    compare_risks,
    hoeffding_width,
    record_auc_intervals,
)
from privaudit.record_risk.rounds import (
    PER_TARGET_KINDS,
    RecordRiskPlan,
    game_constructions,
    make_plan,
)
from privaudit.record_risk.worker import AttackFitter, RoundsWorker, release
from privaudit.runtime.executor import Executor, LocalExecutor
from privaudit.runtime.progress import ProgressOption
from privaudit.runtime.seeds import derive_seed
from privaudit.runtime.store import ArtifactStore

__all__ = [
    "GAMES",
    "TRADITIONAL_MODES",
    "RecordRiskConfig",
    "RecordRiskResult",
    "release",
    "run_record_risk",
]

#: How the traditional game's datasets are drawn (``RecordRiskConfig.traditional``).
TRADITIONAL_MODES: tuple[str, ...] = ("amortised", "per-target")

#: Result keys of the games: model-seeded, traditional and their replicates.
GAMES: tuple[str, ...] = ("model-seeded", "traditional", "model-seeded-2", "traditional-2")


@dataclasses.dataclass(frozen=True)
class RecordRiskConfig:
    """Sizes and seeds of a record-risk experiment.

    Parameters
    ----------
    n : int
        |D|, the size of every training set (the paper: 1,000).
    n_targets : int
        Targets K (records of D0); ``vulnerable_fraction`` of them the most vulnerable.
    n_rounds : int
        Rounds per game per target (model-seeded: half IN, shared; half OUT, per target).
        In the traditional game each target is IN a round with probability 1/2, drawn from
        ``seed``, and its per-record AUC needs it IN at least once and OUT at least once
        (in the game and in its replicate), so :func:`run_record_risk` refuses, before any
        training, an ``n_rounds`` below the fewest rounds that give every one of the
        ``n_targets`` targets both with this seed
        (:func:`~privaudit.record_risk.rounds.check_game_rounds`; never below 4).
    n_shadow : int
        Shadow releases the attacker trains on (trained attacks only). Each target is IN a
        shadow release with probability 1/2, drawn from ``seed``; ``tapas-query`` and
        ``lira`` fit each target on at least 2 IN and 2 OUT of them, so
        :func:`run_record_risk` refuses, before any training, an ``n_shadow`` below the
        fewest releases that give every one of the ``n_targets`` targets 2 of each with
        this seed (:func:`~privaudit.record_risk.rounds.shadow_rounds_needed`; never
        below 4).
    n_aux : int
        Auxiliary pool (attacker's data, disjoint from the evaluation pool).
    replicates : bool
        Also play an independent replicate of each game (the noise floors).
    rounds_per_task : int
        Rounds per executor task (each task is cached as one entry). For a batched
        classifier trainer (a torch MLP) a task's rounds are trained as one batched
        computation, so larger tasks (e.g. 64) amortise its per-step overhead.
    rho : float
        Confidence ``1 - rho`` of the Hoeffding width and of each per-record AUC interval.
    traditional : {"amortised", "per-target"}
        How the traditional game's datasets are drawn (:mod:`~privaudit.record_risk.rounds`):
        ``"amortised"`` (default), one release per round serving every target, each target
        IN with probability 1/2 (so a dataset holds about half of the K targets, half of
        which are the most vulnerable records: not plain draws); ``"per-target"``, the
        paper's Def. 2, one target per round in a plain draw from the evaluation pool
        (``K`` times the traditional releases). The attacker's shadow releases are
        amortised either way.
    """

    n: int = 1000
    n_targets: int = 64
    n_rounds: int = 400
    n_shadow: int = 200
    n_aux: int = 10_000
    vulnerable_fraction: float = 0.5
    replicates: bool = True
    seed: int = 0
    rounds_per_task: int = 16
    rho: float = 0.05
    thresholds: tuple[float, ...] = THRESHOLDS
    traditional: str = "amortised"

    def __post_init__(self) -> None:
        check_choice(self.traditional, "traditional", TRADITIONAL_MODES)
        check_positive_int(self.n, "n", minimum=8)
        check_positive_int(self.n_targets, "n_targets")
        check_positive_int(self.n_rounds, "n_rounds", minimum=4)
        check_positive_int(self.n_shadow, "n_shadow", minimum=4)
        check_positive_int(self.n_aux, "n_aux")
        check_positive_int(self.rounds_per_task, "rounds_per_task")
        check_probability(self.rho, "rho")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise fail("seed", "a non-negative integer", repr(self.seed))
        ts = tuple(float(t) for t in self.thresholds)
        if not ts or any(not 0.5 <= t < 1 for t in ts):
            raise fail("thresholds", "risk thresholds in [0.5, 1)", ts)
        object.__setattr__(self, "thresholds", ts)

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["thresholds"] = list(self.thresholds)
        return d


@dataclasses.dataclass(frozen=True)
class RecordRiskResult:
    """Per-record risks in both games, their comparison and provenance.

    ``risks[game]`` has ``auc``, ``auc_lo`` and ``auc_hi`` (its confidence interval at
    ``confidence = 1 - rho``), ``se`` (DeLong's standard error of the AUC), ``n_in``,
    ``n_out`` (arrays over the targets), ``confidence`` and ``hoeffding_width``;
    ``comparison`` is :func:`compare_risks` of the games. ``gap_null[game]`` holds the
    bootstrap errors ``AUC* - AUC`` of every target in that game (``(n_boot, K)``, over
    its releases: :func:`~privaudit.record_risk.metrics.bootstrap_auc_deviations`), the
    null of the gap test in ``comparison``; empty without replicates or with one target.
    Four of them, e.g. two runs' traditional games and their replicates, give
    :func:`~privaudit.record_risk.metrics.rmsd_gap_test` the same null for another pair
    of games (``null_deviations``). Not in :meth:`to_dict`.
    """

    target: Mapping[str, Any]
    attack: Mapping[str, Any]
    config: RecordRiskConfig
    record_ids: NDArray[Any]
    vulnerable: NDArray[np.bool_]
    vulnerability: NDArray[np.float64]
    risks: Mapping[str, Mapping[str, Any]]
    comparison: Mapping[str, Any]
    plan: Mapping[str, Any]
    warnings: tuple[str, ...]
    timings: Mapping[str, float]
    releases: Mapping[str, int]
    gap_null: Mapping[str, NDArray[np.float64]] = dataclasses.field(default_factory=dict)

    def table(self) -> list[dict[str, Any]]:
        """One row per target (record id, selection, and in each game the risk with its
        confidence interval and standard error: ``auc_<game>``, ``auc_lo_<game>``,
        ``auc_hi_<game>``, ``se_<game>``)."""
        rows = []
        for i, rid in enumerate(self.record_ids.tolist()):
            row: dict[str, Any] = {
                "record_id": rid,
                "selected_by": "distance" if self.vulnerable[i] else "random",
                "vulnerability": float(self.vulnerability[i]),
            }
            for g, r in self.risks.items():
                row[f"auc_{g}"] = float(r["auc"][i])
                row[f"auc_lo_{g}"] = float(r["auc_lo"][i])
                row[f"auc_hi_{g}"] = float(r["auc_hi"][i])
                row[f"se_{g}"] = float(r["se"][i])
            rows.append(row)
        return rows

    def summary(self) -> dict[str, Any]:
        """The headline numbers (the benchmark's keys)."""
        main = self.comparison["thresholds"].get("0.8", {})
        return {
            "miss_rate_0.8": main.get("miss_rate"),
            "rmsd": self.comparison["rmsd"],
            "rmsd_noise_ms": self.comparison["rmsd_noise_ms"],
            "rmsd_noise_t": self.comparison["rmsd_noise_t"],
            "mean_auc_ms": float(np.mean(self.risks["model-seeded"]["auc"])),
            "mean_auc_t": float(np.mean(self.risks["traditional"]["auc"])),
            "n_targets": int(self.record_ids.size),
            "n_rounds": self.config.n_rounds,
        }

    def save(
        self,
        folder: str | Path,
        *,
        settings: Mapping[str, Any] | None = None,
        overwrite: bool = False,
    ) -> Path:
        """Write the report folder ``privaudit record-risk`` writes (``results.json``,
        ``records.csv``, ``report.html``), atomically; returns ``folder``.

        ``settings``: what to record as ``results.json["settings"]`` (the command line
        records its validated YAML config).
        """
        from privaudit.record_risk.report import write_record_risk_report

        return write_record_risk_report(self, folder, settings=settings, overwrite=overwrite)["dir"]

    def to_dict(self) -> dict[str, Any]:
        """Everything as JSON-compatible data: the target, attack and config, the plan,
        the summary, the comparison of the games and one row per target record."""
        return {
            "target": dict(self.target),
            "attack": dict(self.attack),
            "config": self.config.to_dict(),
            "plan": dict(self.plan),
            "constructions": game_constructions(self.config.traditional),
            "summary": self.summary(),
            "comparison": dict(self.comparison),
            "hoeffding_width": {g: r["hoeffding_width"] for g, r in self.risks.items()},
            "auc_ci_confidence": 1.0 - self.config.rho,
            "records": self.table(),
            "warnings": list(self.warnings),
            "timings": dict(self.timings),
            "releases": dict(self.releases),
        }


def _tasks(
    keys: list[tuple[str, int, int, int]], per_task: int, *, by_target: bool = True
) -> list[tuple[tuple[str, int, int, int], ...]]:
    """Consecutive chunks of at most ``per_task`` round keys (one executor task and one
    cache entry each); with ``by_target`` a chunk holds the OUT rounds of one target only."""
    out: list[tuple[tuple[str, int, int, int], ...]] = []
    cur: list[tuple[str, int, int, int]] = []
    for k in keys:
        if cur and (len(cur) >= per_task or (by_target and cur[-1][3] != k[3])):
            out.append(tuple(cur))
            cur = []
        cur.append(k)
    if cur:
        out.append(tuple(cur))
    return out


def _plan_digest(plan: RecordRiskPlan) -> str:
    h = hashlib.sha256()
    for a in (plan.aux, plan.d0, plan.targets, plan.background, plan.reference):
        h.update(np.ascontiguousarray(a, dtype=np.int64).tobytes())
    h.update(repr((plan.n, plan.n_rounds, plan.n_shadow, plan.seed)).encode())
    return h.hexdigest()


# --------------------------------------------------------------------------------------
# the experiment
# --------------------------------------------------------------------------------------


def run_record_risk(
    dataset: Dataset,
    target: Any,
    attack: str | RecordAttack,
    config: RecordRiskConfig,
    *,
    table: DiscreteTable | None = None,
    store: ArtifactStore | str | Path | None = None,
    executor: Executor | None = None,
    progress: ProgressOption = None,
) -> RecordRiskResult:
    """Play the traditional and the model-seeded game for ``config.n_targets`` records.

    Parameters
    ----------
    dataset : Dataset
        The universe (features for the distance-based target selection; the training
        data of a classifier target).
    target : Generator or Trainer
        A synthetic-data generator (:class:`privaudit.generators.Generator`: ``fit`` on
        codes, ``randomised``) or a classifier trainer (``fit(X, y, *, seed)``). A
        trainer with ``batched = True`` and ``fit_many`` (a torch
        :class:`~privaudit.models.torch_models.TorchTrainer`) trains each task's rounds
        as one batched computation (:func:`~privaudit.models.train_many.fits_many`).
    attack : str or RecordAttack
        ``"tapas-query"`` or ``"dcr"`` for a generator, ``"loss"`` or ``"lira"`` for a
        classifier (:data:`privaudit.record_risk.attacks.RECORD_ATTACKS`).
    config : RecordRiskConfig
    table : DiscreteTable or None
        The discretised universe of a generator (default :func:`discretise(dataset)`);
        its record ids must be the dataset's.
    store : ArtifactStore, path or None
        Cache of finished tasks (a killed run resumes).
    executor : Executor or None
        Default ``LocalExecutor(1)``.

    Returns
    -------
    RecordRiskResult
    """
    t_start = time.perf_counter()
    kind, att = _check_inputs(dataset, target, attack, config)
    if isinstance(store, str | Path):
        store = ArtifactStore(store)
    if executor is None:
        executor = LocalExecutor(1, progress=progress)
    timings: dict[str, float] = {}
    warnings: list[str] = []

    # 1. split --------------------------------------------------------------------------
    t0 = time.perf_counter()
    setup = _split_step(dataset, target, kind, att, config, table, warnings)
    plan = setup.plan
    timings["split"] = time.perf_counter() - t0
    releases = {"trained": 0, "loaded": 0}

    # 2-4. shadow releases and the per-target attack -------------------------------------
    fitted: list[Any] = [None] * plan.n_targets
    if att.trained:
        fitted = _fit_attacks(target, kind, att, config, setup, executor, store, timings, releases)

    # 2-4. the game rounds, scored in the workers ---------------------------------------
    t0 = time.perf_counter()
    res, spans = _play_games(target, kind, att, config, setup, fitted, executor, store, releases)
    timings["games"] = time.perf_counter() - t0

    # 5. metrics ------------------------------------------------------------------------
    t0 = time.perf_counter()
    risks, comparison, gap_null = _metrics_step(
        res, spans, plan, config, str(target.name), warnings
    )
    timings["metrics"] = time.perf_counter() - t0
    timings["total"] = time.perf_counter() - t_start
    return RecordRiskResult(
        target={"kind": kind, "name": str(target.name), "settings": target.settings()},
        attack=att.settings(),
        config=config,
        record_ids=dataset.record_ids[plan.targets],
        vulnerable=plan.vulnerable,
        vulnerability=plan.vulnerability,
        risks={g: risks[g] for g in GAMES if g in risks},
        comparison=comparison,
        plan=plan.to_dict(dataset.record_ids),
        warnings=tuple(warnings),
        timings=timings,
        releases=releases,
        gap_null=gap_null,
    )


@dataclasses.dataclass(frozen=True)
class _Setup:
    """The split step's output: the universe, the plan, the target records' data (codes of
    a generator, a Dataset of a classifier) and the start of every task's store key."""

    universe: Any
    plan: RecordRiskPlan
    targets_data: Any
    key_base: dict[str, Any]


def _split_step(
    dataset: Dataset,
    target: Any,
    kind: str,
    att: RecordAttack,
    config: RecordRiskConfig,
    table: DiscreteTable | None,
    warnings: list[str],
) -> _Setup:
    """Step 1: the universe and the plan of every round (:func:`make_plan`, from the seed)."""
    universe = _universe(dataset, target, kind, table, warnings)
    plan = make_plan(
        dataset.X,
        n=config.n,
        n_targets=config.n_targets,
        n_rounds=config.n_rounds,
        n_shadow=config.n_shadow,
        n_aux=config.n_aux,
        seed=config.seed,
        vulnerable_fraction=config.vulnerable_fraction,
    )
    targets_data: Any = (
        universe.codes[plan.targets]
        if kind == "generator"
        else dataset.subset(dataset.record_ids[plan.targets])
    )
    key_base = _task_key_base(dataset, universe, kind, target, att, plan)
    return _Setup(universe, plan, targets_data, key_base)


def _play_games(
    target: Any,
    kind: str,
    att: RecordAttack,
    config: RecordRiskConfig,
    setup: _Setup,
    fitted: list[Any],
    executor: Executor,
    store: ArtifactStore | None,
    releases: dict[str, int],
) -> tuple[list[dict[str, NDArray[Any]]], list[tuple[str, str, int, int]]]:
    """Steps 2-4 of the games: every round's release trained and scored in the workers
    (cached per task; the cache key names the fitted attacks); the per-task results and
    which game, replicate and target each span of them belongs to."""
    fit_key = hashlib.sha256(
        repr((setup.key_base, config.n_shadow, att.trained)).encode()
    ).hexdigest()
    worker = RoundsWorker(
        target,
        kind,
        setup.universe,
        setup.plan,
        att,
        setup.targets_data,
        {**setup.key_base, "mode": "scores", "fit": fit_key},
        fitted,
    )
    batched = kind == "classifier" and fits_many(target)
    all_tasks, spans = _game_tasks(setup.plan, config, batched=batched)
    res, created = train_many(
        worker, all_tasks, executor=executor, store=store, key_fn=worker.key, desc="game releases"
    )
    _count(releases, all_tasks, created)
    return res, spans


def _check_inputs(
    dataset: Dataset, target: Any, attack: str | RecordAttack, config: RecordRiskConfig
) -> tuple[str, RecordAttack]:
    """Validate the inputs; the target's kind ("generator" if it has ``randomised``, else
    "classifier") and the attack, built from its name for that kind or checked against it
    (and against the shadow releases and the game rounds:
    :func:`~privaudit.record_risk.attacks.check_design`). All before any training."""
    if not isinstance(dataset, Dataset):
        raise fail("dataset", "a privaudit Dataset", type(dataset).__name__)
    if not isinstance(config, RecordRiskConfig):
        raise fail("config", "a RecordRiskConfig", type(config).__name__)
    if not (callable(getattr(target, "fit", None)) and callable(getattr(target, "settings", None))):
        raise fail(
            "target", "a Generator or a Trainer (name, settings, fit)", type(target).__name__
        )
    kind = "generator" if hasattr(target, "randomised") else "classifier"
    att = make_record_attack(attack, kind) if isinstance(attack, str) else attack
    if att.target_kind != kind:
        raise fail("attack", f"an attack on a {kind}", att.name)
    check_design(
        att,
        n_targets=config.n_targets,
        n_rounds=config.n_rounds,
        n_shadow=config.n_shadow,
        seed=config.seed,
        traditional=config.traditional,
        replicates=config.replicates,
    )
    return kind, att


def _universe(
    dataset: Dataset, target: Any, kind: str, table: DiscreteTable | None, warnings: list[str]
) -> Any:
    """What the releases are drawn from: the discretised table of a generator (checked to
    hold the dataset's records in order; a deterministic generator is warned about), or
    the dataset itself for a classifier."""
    if kind != "generator":
        return dataset
    universe = discretise(dataset) if table is None else table
    if not np.array_equal(universe.record_ids, dataset.record_ids):
        raise fail("table", "the dataset's records in the dataset's order", "other record ids")
    if not getattr(target, "randomised", True):
        warnings.append(
            f"{target.name} is deterministic given its data: the model-seeded game has one "
            "outcome per dataset and its risk estimate degenerates"
        )
    return universe


def _task_key_base(
    dataset: Dataset, universe: Any, kind: str, target: Any, att: RecordAttack, plan: RecordRiskPlan
) -> dict[str, Any]:
    """What every task's store key starts with: the data (and discretisation) fingerprint,
    the target's and the attack's settings and a digest of the plan."""
    fingerprint = dataset.fingerprint() + (universe.fingerprint() if kind == "generator" else "")
    return {
        "artifact": "record-risk/task",
        "universe": fingerprint,
        "target": {"name": str(target.name), "settings": target.settings()},
        "attack": att.settings(),
        "plan": _plan_digest(plan),
    }


def _count(releases: dict[str, int], tasks: list[Any], created: list[bool]) -> None:
    """Add the rounds of the tasks to ``releases``: "trained" now or "loaded" from the store."""
    for t, c in zip(tasks, created, strict=True):
        releases["trained" if c else "loaded"] += len(t)


def _fit_attacks(
    target: Any,
    kind: str,
    att: RecordAttack,
    config: RecordRiskConfig,
    setup: _Setup,
    executor: Executor,
    store: ArtifactStore | None,
    timings: dict[str, float],
    releases: dict[str, int],
) -> list[Any]:
    """A trained attack's shadow phase: summarise the shadow releases (in tasks through
    ``train_many``, cached), then fit the attack once per target on them (``AttackFitter``).

    Returns the fitted attack of each target, in target order.
    """
    plan = setup.plan
    worker = RoundsWorker(
        target,
        kind,
        setup.universe,
        plan,
        att,
        setup.targets_data,
        {**setup.key_base, "mode": "summary"},
    )
    t0 = time.perf_counter()
    tasks = _tasks(plan.rounds("shadow"), config.rounds_per_task)
    res, created = train_many(
        worker, tasks, executor=executor, store=store, key_fn=worker.key, desc="shadow releases"
    )
    _count(releases, tasks, created)
    summaries = np.concatenate([r["summary"] for r in res])
    member = np.concatenate([r["member"] for r in res]).reshape(-1, plan.n_targets)
    timings["shadow"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    fitted = executor.map(
        AttackFitter(worker, summaries, member), list(range(plan.n_targets)), desc="attack fits"
    )
    timings["attack_fit"] = time.perf_counter() - t0
    return fitted


def _game_tasks(
    plan: RecordRiskPlan, config: RecordRiskConfig, *, batched: bool
) -> tuple[list[tuple[tuple[str, int, int, int], ...]], list[tuple[str, str, int, int]]]:
    """The rounds of every game (and replicate) cut into tasks, in one list.

    A batched classifier trains a whole chunk as one computation: chunks of
    ``rounds_per_task`` rounds everywhere (OUT chunks may span targets); otherwise rounds
    scoring all K targets are chunked so that a task scores at most ~512 (round, target).
    Returns the tasks and, per (game, round kind), its span ``(name, kind, start, stop)``
    in that list.
    """
    games: list[tuple[str, str, int]] = []
    trad = "traditional" if config.traditional == "amortised" else "traditional-target"
    for rep in (0, 1) if config.replicates else (0,):
        suffix = "" if rep == 0 else "-2"
        games += [
            (f"traditional{suffix}", trad, rep),
            (f"model-seeded{suffix}", "ms-in", rep),
        ]
        games += [(f"model-seeded{suffix}", "ms-out", rep)]
    per_task_k = (
        config.rounds_per_task
        if batched
        else max(1, min(config.rounds_per_task, 512 // max(1, plan.n_targets)))
    )
    all_tasks: list[tuple[tuple[str, int, int, int], ...]] = []
    spans: list[tuple[str, str, int, int]] = []
    for name, kind_g, rep in games:
        keys = plan.rounds(kind_g, rep)
        per = config.rounds_per_task if kind_g in PER_TARGET_KINDS else per_task_k
        tasks_g = _tasks(keys, per, by_target=not batched)
        spans.append((name, kind_g, len(all_tasks), len(all_tasks) + len(tasks_g)))
        all_tasks += tasks_g
    return all_tasks, spans


def _metrics_step(
    res: list[dict[str, NDArray[Any]]],
    spans: list[tuple[str, str, int, int]],
    plan: RecordRiskPlan,
    config: RecordRiskConfig,
    target_name: str,
    warnings: list[str],
) -> tuple[dict[str, dict[str, Any]], dict[str, Any], dict[str, NDArray[np.float64]]]:
    """Step 5: each game's per-record risks (from the rounds' scores) and their comparison
    (:func:`compare_risks`, with the replicates' noise floors when they were played, and
    the gap test's null spread from a bootstrap over each game's releases, also returned
    per game)."""
    blocks = _game_scores(res, spans, plan.n_targets, target_name, warnings)
    risks = _risks(blocks, config.rho)
    null = _gap_null(blocks, config) if config.replicates and plan.n_targets >= 2 else {}
    comparison = compare_risks(
        risks["model-seeded"]["auc"],
        risks["traditional"]["auc"],
        risks["model-seeded-2"]["auc"] if config.replicates else None,
        risks["traditional-2"]["auc"] if config.replicates else None,
        config.thresholds,
        null_deviations=[null[g] for g in _GAP_GAMES] if null else None,
    )
    return risks, comparison, null


#: The games of the gap test, in the order of
#: :func:`~privaudit.record_risk.metrics.rmsd_gap_test` (MS, T, MS', T').
_GAP_GAMES = ("model-seeded", "traditional", "model-seeded-2", "traditional-2")


def _gap_null(
    blocks: dict[str, list[ScoreBlock]], config: RecordRiskConfig
) -> dict[str, NDArray[np.float64]]:
    """The bootstrap errors of every target's AUC in MS, T, MS' and T' (each game resampled
    on its own, over its releases: :func:`bootstrap_auc_deviations`), seeded from the
    run's seed and the game's name, so a run reproduces its test; a per-target
    traditional game has a stream of its own, so that its null and an amortised run's of
    the same seed are independent draws (the benchmark tests one against the other)."""
    return {
        g: bootstrap_auc_deviations(
            blocks[g],
            GAP_BOOTSTRAP_DRAWS,
            derive_seed(config.seed, purpose=_gap_purpose(g, config)),
        )
        for g in _GAP_GAMES
    }


def _gap_purpose(game: str, config: RecordRiskConfig) -> str:
    """The seed purpose of one game's bootstrap (:func:`_gap_null`)."""
    per_target = game.startswith("traditional") and config.traditional != "amortised"
    return f"record-risk/gap/{game}" + (f"/{config.traditional}" if per_target else "")


def _game_scores(
    res: list[dict[str, NDArray[Any]]],
    spans: list[tuple[str, str, int, int]],
    K: int,
    target_name: str,
    warnings: list[str],
) -> dict[str, list[ScoreBlock]]:
    """The tasks' scores and memberships as (target x round) blocks per game, each marked
    shared (one release per round scored for all K targets) or not.

    Model-seeded OUT and per-target traditional tasks run per target (already K rows, each
    row's rounds the target's own releases); the others score all K targets per round
    (transposed; shared). Identical releases in every model-seeded IN round reveal a
    deterministic target: warned about once.
    """
    blocks: dict[str, list[ScoreBlock]] = {}
    for name, kind_g, a, b in spans:
        part = res[a:b]
        s = np.concatenate([r["scores"] for r in part])
        m = np.concatenate([r["member"] for r in part]).astype(bool)
        shared = kind_g not in PER_TARGET_KINDS
        if not shared:
            s, m = s.reshape(K, -1), m.reshape(K, -1)
        else:
            s, m = s.reshape(-1, K).T, m.reshape(-1, K).T
            if kind_g == "ms-in":
                digests = np.concatenate([r["digest"] for r in part])
                if np.unique(digests).size == 1 and not any("deterministic" in w for w in warnings):
                    warnings.append(
                        f"{target_name} gave the same release in every model-seeded IN round: it is "
                        "deterministic given its data, and the model-seeded game degenerates"
                    )
        blocks.setdefault(name, []).append((np.asarray(s, dtype=np.float64), m, shared))
    return blocks


def _risks(blocks: dict[str, list[ScoreBlock]], rho: float) -> dict[str, dict[str, Any]]:
    """Per game, each target's risk: per-record AUC over its rounds with its confidence
    interval at level ``1 - rho`` and standard error (:func:`record_auc_intervals`), the
    IN/OUT counts and the Hoeffding width at level ``rho`` (Prop. 1-2)."""
    risks: dict[str, dict[str, Any]] = {}
    for name, parts in blocks.items():
        S = np.concatenate([p[0] for p in parts], axis=1)
        M = np.concatenate([p[1] for p in parts], axis=1)
        auc, lo, hi, se = record_auc_intervals(S, M, confidence=1.0 - rho)
        n_in = M.sum(axis=1)
        n_out = M.shape[1] - n_in
        risks[name] = {
            "auc": auc,
            "auc_lo": lo,
            "auc_hi": hi,
            "se": se,
            "confidence": 1.0 - rho,
            "n_in": n_in,
            "n_out": n_out,
            "hoeffding_width": hoeffding_width(M.shape[1], rho),
        }
    return risks
