"""The one facade: :func:`run_audit` turns an :class:`~privaudit.config.AuditConfig` into a report.

Steps (each timed; the times go to ``results.json["timings"]``):

1. check that the report directory can be written (before any work);
2. load the dataset (bundled Adult or digits, or a user table);
3. build the trainer (a scikit-learn classifier through
   :class:`~privaudit.models.SklearnTrainer`) and run :func:`privaudit.preflight.preflight`:
   every check that would otherwise fail after training (paths, executor, sizes, memory,
   model parameters by a trial fit, attack settings by a dry run on synthetic data);
   nothing is written when one fails;
4. play the configured membership-inference game (Ye et al. 2022, Def. 3.1-3.4;
   default Def. 3.2, one fixed target) with
   :func:`privaudit.games.experiment.run_experiment` (one trial) or
   :func:`privaudit.games.games.run_game` (several): split, train the target and the
   attacker's models (in parallel, cached), compute signals, run every attack;
5. compute every metric of every attack (:mod:`privaudit.games.metrics`; over a game's
   trials, on its pooled draws) and the agreement matrix of the alpha-threshold attacks
   (Ye et al. Table 2);
6. write ``results.json``, ``scores.npz`` and ``report.html`` atomically.

:func:`demo_config` is the configuration of ``privaudit demo``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import tempfile
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from privaudit._validation import fail
from privaudit.audit.attack_bounds import SAMPLING_NOTE, attack_one_run_bounds
from privaudit.config import (
    AuditConfig,
    build_estimator,
    config_from_dict,
)
from privaudit.data import (
    Dataset,
)
from privaudit.errors import InvalidInputError, PrivauditWarning
from privaudit.games.experiment import ExperimentConfig, ExperimentResult, run_experiment
from privaudit.games.games import GameResult, game_attack_metrics, pool_game, run_game
from privaudit.games.metrics import (
    AgreementMatrix,
    AttackMetrics,
    agreement_matrix,
    attack_metrics,
)
from privaudit.games.provided import (
    ProvidedTarget,
)
from privaudit.games.threat_model import threat_model
from privaudit.games.vulnerable import ScoredTarget, agreement_at_fpr, vulnerable_records
from privaudit.inputs import build_trainer, load_dataset_and_target
from privaudit.models import SklearnTrainer
from privaudit.models.torch_models import TorchTrainer
from privaudit.pipeline_sections import (
    audit_settings,
    executor_settings,
    game_section,
    target_entry,
    target_summary,
)
from privaudit.preflight import preflight
from privaudit.records import AttackScores
from privaudit.report import (
    ScoreTable,
    attack_entry,
    build_results,
    check_output_dir,
    write_report,
)
from privaudit.report.bundle import make_manifest
from privaudit.report.per_record import attack_score_fields
from privaudit.runtime.executor import Executor, LocalExecutor, RayExecutor, resolve_n_jobs
from privaudit.runtime.seeds import derive_rng

__all__ = [
    "AuditReport",
    "build_executor",
    "demo_config",
    "executor_settings",
    "experiment_config",
    "n_models_behind",
    "run_audit",
]

#: Demo sizes (measured on 2 cores, see benchmarks/bench_demo.py): the target pool is
#: large enough for TPR at 0.1% FPR (>= 1,000 non-members), the MLP wide and trained
#: long enough, without weight decay, to fit its ~1,200 training records exactly.
_DEMO: dict[str, Any] = {
    "sizes": {"n_target_pool": 2400, "n_population": 4800},
    "model": {
        "kind": "mlp",
        "params": {"hidden_layer_sizes": [256], "max_iter": 300, "learning_rate_init": 0.002},
    },
    "models": {
        "n_reference": 16,
        "n_shadow": 8,
        "n_distilled": 8,
        "n_leave_one_out": 4,
        "leave_one_out_sample": 10,
    },
    "alpha": 0.05,
    # Every attack with its defaults: LiRA's shrunk variance and clipping and RMIA's
    # offline a are tuned on the reference models (issue 10; the comparison of the
    # variants on this target is in benchmarks/bench_attack_power.py).
}
_DEMO_QUICK: dict[str, Any] = {
    "sizes": {"n_target_pool": 1200, "n_population": 2400},
    "model": {
        "kind": "mlp",
        "params": {"hidden_layer_sizes": [128], "max_iter": 150, "learning_rate_init": 0.003},
    },
    "models": {
        "n_reference": 8,
        "n_shadow": 2,
        "n_distilled": 2,
        "n_leave_one_out": 2,
        "leave_one_out_sample": 10,
    },
    "alpha": 0.05,
}


def demo_config(
    *,
    seed: int = 0,
    n_jobs: int = -1,
    quick: bool = False,
    output_dir: str | Path = "privaudit-demo",
    cache_dir: str | Path | None = None,
) -> AuditConfig:
    """The configuration of ``privaudit demo``.

    UCI Adult; an MLP target (scikit-learn ``MLPClassifier``, one hidden layer, no
    weight decay, no early stopping) that overfits its training set; 16 reference
    models (LiRA, RMIA), 8 shadow models (S, and R's references trained on population
    data), 8 distilled models of each kind (soft-label students for attack
    ``distillation``, Ye et al.'s D; logit-regression students for
    ``distillation-logits``, Ba & Caruana 2014) and 4 leave-one-out models per sampled
    member; every registered attack at alpha = 0.05 with its default settings (LiRA's
    variance shrinkage and clipping and offline RMIA's a tuned on the reference
    models); the alpha thresholds of R, D, L and offline LiRA calibrated on population
    records (:mod:`privaudit.attacks.calibration`). ``quick`` shrinks the pool, the network and the
    numbers of attacker models (for a smoke run; then TPR at 0.1% FPR is not reported,
    since the pool has fewer than 1,000 non-members).
    """
    from privaudit.attacks import attack_names

    base = _DEMO_QUICK if quick else _DEMO
    data: dict[str, Any] = {
        "dataset": "adult",
        # every registered attack, distillation-logits included (the target is an MLP)
        "attacks": list(attack_names()),
        **base,
        "seed": seed,
        "n_jobs": n_jobs,
        "output_dir": str(output_dir),
        "cache_dir": None if cache_dir is None else str(cache_dir),
    }
    return config_from_dict(data, source="demo config")


def _sizes(config: AuditConfig, n_records: int) -> tuple[int, int]:
    pool = config.sizes.n_target_pool
    pop = config.sizes.n_population
    if pool is None:
        pool = min(2400, n_records // 3)
    if pop is None:
        pop = min(4800, n_records - pool)
    if pool + pop > n_records:
        raise InvalidInputError(
            f"sizes: expected n_target_pool + n_population <= {n_records} (the dataset's records), "
            f"found {pool} + {pop} = {pool + pop}"
        )
    return pool, pop


def experiment_config(
    config: AuditConfig, n_records: int, provided: ProvidedTarget | None = None
) -> ExperimentConfig:
    """The :class:`ExperimentConfig` of an audit config on a dataset of ``n_records`` records
    (with a provided target: its audited set and population sizes)."""
    if provided is None:
        pool, pop = _sizes(config, n_records)
    else:
        pool = provided.audited_ids.size
        pop = n_records - pool if provided.population_ids is None else provided.population_ids.size
    m = config.models
    try:
        return ExperimentConfig(
            attacks=config.attack_names(),
            n_target_pool=pool,
            n_population=pop,
            n_reference=m.n_reference,
            n_shadow=m.n_shadow,
            n_distilled=m.n_distilled,
            distill_size=m.distill_size,
            n_leave_one_out=m.n_leave_one_out,
            leave_one_out_sample=m.leave_one_out_sample,
            alpha=config.alpha,
            seed=config.seed,
            n_jobs=config.n_jobs,
            attack_params=config.attack_params,
            # the target's loss for the vulnerable-record analysis (Ye et al. Fig. 5)
            signals=("loss",),
        )
    except InvalidInputError as exc:
        raise InvalidInputError(f"audit config: {exc}") from None


def n_models_behind(attack: str, config: ExperimentConfig) -> int:
    """How many attacker models the attack learned from (0: it uses the target only).

    Reference models for LiRA and RMIA; shadow models for S and R (R's reference
    models are trained on population data, as the shadow models); distilled for D; the
    leave-one-out models per record for L; 0 for the loss and population attacks.
    """
    from privaudit.attacks import required_inputs

    fields = set(required_inputs(attack).fields)
    if "reference" in fields:
        return config.n_reference
    if "shadow" in fields or "outside_reference" in fields:
        return config.n_shadow
    if "distilled" in fields or "distilled_logits" in fields:
        return config.n_distilled
    if "leave_one_out" in fields:
        return config.n_leave_one_out
    return 0


@dataclasses.dataclass(frozen=True)
class AuditReport:
    """The outcome of :func:`run_audit`.

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
        The report directory (None when not written).
    game : GameResult or None
        Every trial of the game, when ``config.game`` is not Def. 3.2.
    """

    results: dict[str, Any]
    metrics: dict[str, AttackMetrics]
    agreement: AgreementMatrix | None
    scores: ScoreTable
    experiment: ExperimentResult
    out_dir: Path | None
    game: GameResult | None = None


@dataclasses.dataclass(frozen=True)
class _Scored:
    """What the metrics read, for one target (Def. 3.2) or a game's pooled draws.

    ``record_ids``/``member``: every draw (audited record, or ``"t<trial>:<id>"`` over
    several trials); ``decisions``: per attack, its member decisions at alpha.
    """

    scores: dict[str, AttackScores]
    record_ids: np.ndarray
    member: np.ndarray
    metrics: dict[str, AttackMetrics]
    decisions: dict[str, np.ndarray]


def _scored_experiment(exp: ExperimentResult) -> _Scored:
    metrics = {name: attack_metrics(sc, exp.member_of(name)) for name, sc in exp.scores.items()}
    decisions = {n: s.decisions() for n, s in exp.scores.items() if s.threshold is not None}
    return _Scored(dict(exp.scores), exp.record_ids, exp.membership, metrics, decisions)


def _pooled_note(result: GameResult) -> str:
    """The sampling assumption of the one-run bounds on scores pooled over a game's trials."""
    return (
        f"Scores pooled over {len(result.trials)} trials of game {result.game.name} (independent "
        "training runs); the one-run analysis is applied to the pooled draws as if each "
        "draw's membership were an independent fair coin given the others: an assumption "
        "here, not checked for this game."
    )


def _scored_game(result: GameResult) -> _Scored:
    pooled = pool_game(result)
    member_of: dict[Any, bool] = {}
    for p in pooled.values():
        member_of.update(zip(p.scores.record_ids.tolist(), p.member.tolist(), strict=True))
    ids = np.asarray(list(member_of))
    return _Scored(
        scores={n: p.scores for n, p in pooled.items()},
        record_ids=ids,
        member=np.asarray([member_of[i] for i in ids.tolist()], dtype=bool),
        metrics={n: game_attack_metrics(p) for n, p in pooled.items()},
        decisions={n: p.decisions for n, p in pooled.items() if p.decisions is not None},
    )


def _agreement(scored: _Scored) -> tuple[AgreementMatrix | None, list[str]]:
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


def build_executor(config: AuditConfig, n_jobs: int, *, progress: bool | None = True) -> Executor:
    """The executor the config asks for: local processes, or Ray (imported lazily).

    With ``executor: ray`` every model trains as one Ray task (1 CPU each) on the cluster
    at ``ray_address``, or on a local Ray instance when no address is given; results and
    caching are the same as with local processes.
    """
    if config.executor == "ray":
        return RayExecutor(address=config.ray_address, progress=progress)
    return LocalExecutor(n_jobs, progress=progress)


def run_audit(
    config: AuditConfig,
    *,
    overwrite: bool = False,
    progress: bool | None = True,
    write: bool = True,
) -> AuditReport:
    """Run a membership-inference audit end to end and write its report directory.

    Parameters
    ----------
    config : AuditConfig
        What to audit (from :func:`privaudit.config.load_config` or :func:`demo_config`).
    overwrite : bool
        Replace an existing ``config.output_dir``; without it an existing directory
        raises :class:`~privaudit.report.ReportExistsError` before any work is done.
    progress : bool or None
        Progress bars while models train (None: only on a terminal).
    write : bool
        Write the report directory (``results.json``, ``scores.npz``, ``report.html``).

    Returns
    -------
    AuditReport

    Raises
    ------
    PrivauditError
        Bad configuration or data (the message names the field), or a design that
        cannot support an attack.
    """
    if not isinstance(config, AuditConfig):
        raise fail("config", "an AuditConfig", type(config).__name__)
    out_dir = Path(config.output_dir)
    if write:
        check_output_dir(out_dir, overwrite=overwrite)

    # worker processes start now: their start-up overlaps loading, checks and the target
    early = _early_executor(config, progress)
    try:
        return _run_audit(config, overwrite=overwrite, progress=progress, write=write, early=early)
    except BaseException:
        if early is not None:
            early.close()
        raise


def _early_executor(config: AuditConfig, progress: bool | None) -> Executor | None:
    """Local worker processes started before the data loads, when the attacks train
    attacker models through the executor (None otherwise).

    Spawning a worker and importing NumPy, SciPy, pandas, scikit-learn and privaudit in it
    costs about 1.5 CPU-seconds; started here, that overlaps loading the data, the checks
    before training and the target's training, instead of delaying the first attacker
    models. Nothing is written; an invalid config gets no early workers (the checks
    before training report it). Torch trainers batch their models in this process.
    """
    if config.executor != "local" or config.model.kind == "torch":
        return None
    if resolve_n_jobs(config.n_jobs) < 2:
        return None
    from privaudit.games.train_many import ModelTask
    from privaudit.games.ye_steps import YeSteps, attack_needs

    try:
        need = attack_needs(config.attack_names(), config.attack_params)
        preload = (build_estimator(config.model), ModelTask, YeSteps)
    except Exception:  # reported by the checks before training
        return None
    if not need.trains_attacker_models:
        return None
    executor = build_executor(config, config.n_jobs, progress=progress)
    executor.start(preload=preload)
    return executor


def _run_audit(
    config: AuditConfig,
    *,
    overwrite: bool,
    progress: bool | None,
    write: bool,
    early: Executor | None,
) -> AuditReport:
    out_dir = Path(config.output_dir)
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    dataset, provided, data_warnings = _load_inputs(config)
    timings["data"] = time.perf_counter() - t0

    exp_cfg = experiment_config(config, dataset.n_records, provided)
    trainer = build_trainer(config.model, dataset.n_classes, config_dir=config.config_dir)
    t0 = time.perf_counter()
    checks = preflight(config, dataset, exp_cfg, trainer, overwrite=overwrite, write=write)
    timings["preflight"] = time.perf_counter() - t0
    executor = (
        early if early is not None else build_executor(config, exp_cfg.n_jobs, progress=progress)
    )
    t0 = time.perf_counter()
    exp, game_result, n_aimed = _train_and_attack(
        config, dataset, provided, trainer, exp_cfg, executor, progress
    )
    executor.close()  # the worker processes (on an error: when the executor is collected)
    timings["experiment"] = time.perf_counter() - t0
    for phase, sec in exp.timings.items():
        timings[f"experiment.{phase}"] = float(sec)

    t0 = time.perf_counter()
    m = _metrics_step(exp, game_result, exp_cfg)
    timings["metrics"] = time.perf_counter() - t0

    settings = audit_settings(config, exp, dataset, trainer, game_result)
    settings.update(executor_settings(config, executor))
    if data_warnings or checks:
        settings["warnings"] = [*data_warnings, *checks]
    if m.excluded:
        settings["agreement_excludes"] = m.excluded
    game_doc = game_section(exp, game_result, m.scored.metrics)
    t0 = time.perf_counter()
    sections = _analysis_sections(config, exp, game_result, dataset, m, game_doc, n_aimed)
    timings["analysis"] = time.perf_counter() - t0
    results = build_results(
        seed=config.seed,
        settings=settings,
        target=target_entry(target_summary(exp, game_result, m.scored.member), exp, provided),
        attacks=m.entries,
        audits=m.audits,
        agreement=m.agreement,
        agreement_alpha=config.alpha if m.agreement is not None else None,
        game=game_doc,
        timings=timings,
        sections=sections,
    )
    if write:
        manifest = make_manifest(
            kind="membership-inference",
            command="run_audit",
            config=config.model_dump(mode="json"),
            seeds=settings["seeds"],
            dataset_fingerprint=exp.dataset_fingerprint,
        )
        write_report(out_dir, results, m.table, overwrite=overwrite, bundle=manifest)
    return AuditReport(
        results=results,
        metrics=m.scored.metrics,
        agreement=m.agreement,
        scores=m.table,
        experiment=exp,
        out_dir=out_dir if write else None,
        game=game_result,
    )


def _load_inputs(config: AuditConfig) -> tuple[Dataset, ProvidedTarget | None, list[str]]:
    """Step 2: the dataset and a provided target (:func:`~privaudit.inputs.load_dataset_and_target`),
    with the warnings (:class:`PrivauditWarning`) loading raised: passed on, and returned
    to be recorded in ``results.json``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PrivauditWarning)
        dataset, provided = load_dataset_and_target(config)
    data_warnings = [str(w.message) for w in caught if issubclass(w.category, PrivauditWarning)]
    for w in caught:  # pass the warnings on (they are recorded in results.json too)
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return dataset, provided, data_warnings


@dataclasses.dataclass(frozen=True)
class _Metrics:
    """Step 5's output: the scored draws, every attack's entry, the agreement matrix (and
    the attacks it leaves out), the per-record score table and the one-run bounds."""

    scored: _Scored
    entries: list[dict[str, Any]]
    agreement: AgreementMatrix | None
    excluded: list[str]
    table: ScoreTable
    audits: list[dict[str, Any]]


def _metrics_step(
    exp: ExperimentResult, game_result: GameResult | None, exp_cfg: ExperimentConfig
) -> _Metrics:
    """Step 5: every metric of every attack (over a game's trials, on its pooled draws),
    the agreement matrix, the per-record scores with their DeLong AUC intervals, and the
    one-run bounds."""
    scored = _scored_experiment(exp) if game_result is None else _scored_game(game_result)
    entries = [
        attack_entry(scored.metrics[name], n_reference_models=n_models_behind(name, exp_cfg))
        for name in scored.scores
    ]
    agreement, excluded = _agreement(scored)
    table = ScoreTable.from_attack_scores(
        list(scored.scores.values()), scored.record_ids, scored.member
    )
    for entry in entries:  # the DeLong AUC interval, from the saved scores
        entry.update(attack_score_fields(table, entry["name"]))
    audits = _one_run_audits(exp, table, game_result)
    return _Metrics(scored, entries, agreement, excluded, table, audits)


def _analysis_sections(
    config: AuditConfig,
    exp: ExperimentResult,
    game_result: GameResult | None,
    dataset: Dataset,
    m: _Metrics,
    game_doc: dict[str, Any],
    n_aimed: int,
) -> dict[str, Any]:
    """The results' analysis sections: the threat model, the attacks' agreement at fixed
    FPRs, and the vulnerable records (with the leave-one-out sample behind them)."""
    scored = m.scored
    sections: dict[str, Any] = {
        "threat_model": threat_model(game_doc, m.entries, audits=m.audits),
        "agreement_at_fpr": agreement_at_fpr(
            ScoredTarget(
                scores={n: (s.record_ids, s.scores) for n, s in scored.scores.items()},
                member=dict(zip(scored.record_ids.tolist(), scored.member.tolist(), strict=True)),
            ),
            fprs=config.vulnerable.fprs,
        ),
        "vulnerable_records": _vulnerable(config, exp, game_result, dataset),
    }
    sections["vulnerable_records"]["leave_one_out_sample"] = {
        "n_records": 0 if exp.leave_one_out_ids is None else int(exp.leave_one_out_ids.size),
        "n_aimed_at_record_types": n_aimed,
    }
    return sections


def _train_and_attack(
    config: AuditConfig,
    dataset: Dataset,
    provided: ProvidedTarget | None,
    trainer: SklearnTrainer | TorchTrainer,
    exp_cfg: ExperimentConfig,
    executor: Executor,
    progress: bool | None,
) -> tuple[ExperimentResult, GameResult | None, int]:
    """The experiment of the config's game: the fixed-model experiment (with the
    vulnerable-record leave-one-out pass when asked) or the game's trials. Returns the
    (first) experiment, the game result (None for the fixed-model game) and the number of
    leave-one-out records aimed at record types."""
    game_result: GameResult | None = None
    n_aimed = 0
    if config.game.engine_name() == "fixed-model":
        with _store(config, temporary=_aims_leave_one_out(config)) as store:
            exp = run_experiment(
                dataset,
                trainer,
                exp_cfg,
                store=store,
                executor=executor,
                progress=progress,
                provided=provided,
            )
            extra = _vulnerable_leave_one_out(config, exp, dataset)
            if extra:
                first = exp.leave_one_out_ids
                n_aimed = len(extra) - (0 if first is None else int(first.size))
                # second pass: every model is in the store; only L's new models train
                exp = run_experiment(
                    dataset,
                    trainer,
                    dataclasses.replace(
                        exp_cfg, leave_one_out_include=extra, leave_one_out_sample=len(extra)
                    ),
                    store=store,
                    executor=executor,
                    progress=progress,
                    provided=provided,
                )
    else:
        if provided is not None:  # the config refuses it; a programmatic config may not
            raise InvalidInputError(
                "game: a provided target is one fixed model with a given split: only the "
                "fixed-model game (def-3.2) applies"
            )
        game_result = _play_game(config, dataset, trainer, exp_cfg, executor, progress)
        exp = game_result.trials[0]
    return exp, game_result, n_aimed


def _one_run_audits(
    exp: ExperimentResult, table: ScoreTable, game_result: GameResult | None
) -> list[dict[str, Any]]:
    """Steinke et al.'s one-run bound of every attack; for a DP-SGD target at the
    accountant's delta, with the accountant's epsilon beside each bound."""
    eps_acc = exp.target_info.get("accountant_epsilon")
    # a DP-SGD target: audit its (eps, delta) claim at the accountant's delta, and record
    # the accountant's epsilon beside every empirical lower bound
    audit_delta = float(exp.target_info.get("delta", 0.0)) if eps_acc is not None else 0.0
    audits: list[dict[str, Any]] = attack_one_run_bounds(
        {n: table.scored(n)[1:] for n in table.attacks},
        sampling_assumption=SAMPLING_NOTE if game_result is None else _pooled_note(game_result),
        delta=audit_delta,
    )
    if eps_acc is not None:
        for a in audits:
            dp_extra: dict[str, Any] = dict(a.get("extra") or {})
            dp_extra["accountant_epsilon"] = float(eps_acc)
            dp_extra["exceeds_accountant_epsilon"] = bool(a["epsilon_lower_bound"] > float(eps_acc))
            a["extra"] = dp_extra
    return audits


def _aims_leave_one_out(config: AuditConfig) -> bool:
    return (
        config.vulnerable.leave_one_out_per_set > 0
        and "leave-one-out" in config.attack_names()
        and config.game.engine_name() == "fixed-model"
    )


@contextlib.contextmanager
def _store(config: AuditConfig, *, temporary: bool) -> Iterator[Path | None]:
    """The artifact store: ``cache_dir``, else a temporary one when asked, else none."""
    if config.cache_dir is not None:
        yield Path(config.cache_dir)
    elif temporary:
        with tempfile.TemporaryDirectory(prefix="privaudit-store-") as tmp:
            yield Path(tmp)
    else:
        yield None


def _vulnerable_leave_one_out(
    config: AuditConfig, exp: ExperimentResult, dataset: Dataset
) -> tuple[Any, ...]:
    """Attack L's sample for a second pass: its first sample plus up to
    ``vulnerable.leave_one_out_per_set`` more members of each record type (Ye et al. Sec.
    5.4), drawn at random (seeded); empty when nothing is to add."""
    if not _aims_leave_one_out(config) or exp.leave_one_out_ids is None:
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
    """Ye et al. Sec. 5.4 over the target(s) (:mod:`privaudit.games.vulnerable`)."""
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


def _play_game(
    config: AuditConfig,
    dataset: Dataset,
    trainer: SklearnTrainer | TorchTrainer,
    exp_cfg: ExperimentConfig,
    executor: Executor,
    progress: bool | None,
) -> GameResult:
    """Play Def. 3.1, 3.3 or 3.4 (:func:`privaudit.games.games.run_game`).

    Without a ``cache_dir`` the trials share a temporary artifact store, so that the
    models a game holds fixed (e.g. the reference models of Def. 3.4) train once.
    """
    g = config.game
    kw: dict[str, Any] = {
        "n_trials": g.n_trials,
        "n_fixed_records": g.n_fixed_records,
        "fixed_records": g.fixed_records,
        "executor": executor,
        "progress": progress,
    }
    if config.cache_dir is not None:
        return run_game(
            g.engine_name(), dataset, trainer, exp_cfg, store=Path(config.cache_dir), **kw
        )
    with tempfile.TemporaryDirectory(prefix="privaudit-game-") as tmp:
        return run_game(g.engine_name(), dataset, trainer, exp_cfg, store=Path(tmp), **kw)
