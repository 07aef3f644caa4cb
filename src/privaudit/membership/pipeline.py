"""The one facade: :func:`run_audit` turns an :class:`~privaudit.membership.config.AuditConfig` into a report.

Steps (each timed; the times go to ``results.json["timings"]``):

1. check that the report directory can be written (before any work);
2. load the dataset (bundled Adult or digits, or a user table); with a provided target,
   read its split from the user's files and check its sizes
   (:func:`privaudit.membership.preflight.check_provided_split`) before any worker starts, then load
   its model;
3. build the trainer (a scikit-learn classifier through
   :class:`~privaudit.models.SklearnTrainer`) and run :func:`privaudit.membership.preflight.preflight`:
   every check that would otherwise fail after training (paths, executor, sizes, memory,
   model parameters by a trial fit, attack settings by a dry run on synthetic data);
   nothing is written when one fails;
4. play the configured membership-inference game (Ye et al. 2022, Def. 3.1-3.4;
   default Def. 3.2, one fixed target) with
   :func:`privaudit.membership.experiment.run_experiment` (one trial) or
   :func:`privaudit.membership.games.run_game` (several): split, train the target and the
   attacker's models (in parallel, cached), compute signals, run every attack;
5. compute every metric of every attack (:mod:`privaudit.metrics.roc`; over a game's
   trials, on its pooled draws) and the agreement matrix of the alpha-threshold attacks
   (Ye et al. Table 2);
6. write ``results.json``, ``scores.npz`` and ``report.html`` atomically.

Its parts: :mod:`privaudit.membership.experiment_config` (the demo's config and the experiment's),
:mod:`privaudit.membership.analysis` (steps 5 and the analysis sections) and
:mod:`privaudit.membership.sections` (the results' settings, target and game sections).
:func:`demo_config` (re-exported here) is the configuration of ``privaudit demo``.
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

from privaudit._validation import fail
from privaudit.data import (
    Dataset,
)
from privaudit.errors import InvalidInputError, PrivauditWarning
from privaudit.membership.analysis import (
    aims_leave_one_out,
    analysis_sections,
    metrics_step,
    vulnerable_leave_one_out,
)
from privaudit.membership.config import (
    AuditConfig,
    build_estimator,
)
from privaudit.membership.experiment import ExperimentConfig, ExperimentResult, run_experiment
from privaudit.membership.experiment_config import demo_config, experiment_config, n_models_behind
from privaudit.membership.games import GameResult, run_game
from privaudit.membership.inputs import (
    GivenInputs,
    build_trainer,
    load_dataset,
    load_provided_target,
    read_provided_split,
)
from privaudit.membership.preflight import check_provided_split, preflight
from privaudit.membership.result import AuditReport
from privaudit.membership.sections import (
    audit_settings,
    executor_settings,
    game_section,
    target_entry,
    target_summary,
)
from privaudit.membership.split_check import check_declared_split
from privaudit.models import SklearnTrainer
from privaudit.models.provided import (
    ProvidedSplit,
    ProvidedTarget,
)
from privaudit.models.torch_models import TorchTrainer
from privaudit.report import (
    build_results,
    check_output_dir,
    write_report,
)
from privaudit.report.bundle import make_manifest
from privaudit.runtime.executor import Executor, resolve_n_jobs
from privaudit.runtime.executor_setting import make_executor
from privaudit.runtime.progress import ProgressOption, check_progress, progress_phase
from privaudit.runtime.timings import timed

__all__ = [
    "AuditReport",
    "build_executor",
    "demo_config",
    "executor_settings",
    "experiment_config",
    "n_models_behind",
    "run_audit",
    "run_given_audit",
]


def build_executor(
    config: AuditConfig, n_jobs: int, *, progress: ProgressOption = True
) -> Executor:
    """The executor the config asks for: local processes, or Ray (imported lazily).

    With ``executor: ray`` every model trains as one Ray task (1 CPU each) on the cluster
    at ``ray_address``, or on a local Ray instance when no address is given; results and
    caching are the same as with local processes.
    """
    return make_executor(
        config.executor,
        n_jobs=n_jobs,
        address=config.ray_address,
        gpus_per_task=config.ray_gpus_per_task,
        progress=progress,
    )


def run_audit(
    config: AuditConfig,
    *,
    overwrite: bool = False,
    progress: ProgressOption = True,
    write: bool = True,
) -> AuditReport:
    """Run a membership-inference audit end to end and write its report directory.

    Parameters
    ----------
    config : AuditConfig
        What to audit (from :func:`privaudit.membership.config.load_config` or :func:`demo_config`).
    overwrite : bool
        Replace an existing ``config.output_dir``; without it an existing directory
        raises :class:`~privaudit.report.ReportExistsError` before any work is done.
    progress : progress option
        Progress of every phase (:mod:`privaudit.runtime.progress`): True or None = a
        bar on a terminal only; ``"auto"`` = plain lines off a terminal, as the command
        line does; ``"plain"``, ``"rich"``, ``"none"``/False; a callback ``fn(event)``
        receiving :class:`~privaudit.runtime.progress.ProgressEvent` s; a tqdm-style
        class (``tqdm.tqdm``).
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
    config.dataset_section()  # data and recipe given in code: run_given_audit
    config.model_section()
    progress = check_progress(progress)
    out_dir = Path(config.output_dir)
    if write:
        check_output_dir(out_dir, overwrite=overwrite)
    split = _read_split(config)

    # worker processes start now: their start-up overlaps loading, checks and the target
    early = _early_executor(config, progress)
    try:
        return _run_audit(
            config, overwrite=overwrite, progress=progress, write=write, early=early, split=split
        )
    except BaseException:
        if early is not None:
            early.close()
        raise


def run_given_audit(
    config: AuditConfig,
    given: GivenInputs,
    *,
    overwrite: bool = False,
    progress: ProgressOption = True,
    write: bool = False,
) -> AuditReport:
    """:func:`run_audit` of a provided target whose data, model and recipe are Python
    objects (:func:`privaudit.audit_model`): the same steps from step 3 on (the split's
    sizes checked, the checks before training, the game, metrics, results), with
    ``given`` in place of what ``config.dataset``, ``config.target`` and ``config.model``
    would load (all three None in ``config``, validated with the context
    ``{GIVEN_IN_CODE: True}``).

    Parameters
    ----------
    config : AuditConfig
        Attacks, numbers of models, alpha, seed, jobs, executor, cache; ``output_dir``
        only when ``write``.
    given : GivenInputs
        The dataset, the provided target (model and split) and the recipe's trainer.
    overwrite, progress : see :func:`run_audit`
    write : bool
        Write the report into ``config.output_dir`` (default: not; the result's
        :meth:`~privaudit.membership.result.AuditReport.save` writes it anywhere).

    Returns
    -------
    AuditReport
    """
    if not isinstance(config, AuditConfig):
        raise fail("config", "an AuditConfig", type(config).__name__)
    if not isinstance(given, GivenInputs):
        raise fail("given", "a GivenInputs", type(given).__name__)
    for name in ("dataset", "model", "target"):
        if getattr(config, name) is not None:
            raise fail(f"config.{name}", f"None (the {name} is given in code)", "a section")
    progress = check_progress(progress)
    if write:
        check_output_dir(Path(config.output_dir), overwrite=overwrite)
    check_provided_split(config, given.dataset, given.split, references=given.target.references)
    early = _early_executor(config, progress, given=given)
    try:
        return _run_audit(
            config,
            overwrite=overwrite,
            progress=progress,
            write=write,
            early=early,
            split=None,
            given=given,
        )
    except BaseException:
        if early is not None:
            early.close()
        raise


def _early_executor(
    config: AuditConfig, progress: ProgressOption, *, given: GivenInputs | None = None
) -> Executor | None:
    """Local worker processes started before the data loads, when the attacks train
    attacker models through the executor (None otherwise).

    Spawning a worker and importing NumPy, SciPy, pandas, scikit-learn and privaudit in it
    costs about 1.5 CPU-seconds; started here, that overlaps loading the data, the checks
    before training and the target's training, instead of delaying the first attacker
    models. Nothing is written; an invalid config gets no early workers (the checks
    before training report it). Torch trainers batch their models in this process.
    """
    if config.executor != "local":
        return None
    if given is None and config.model_section().kind == "torch":
        return None
    if given is not None and not isinstance(given.trainer, SklearnTrainer):
        return None
    if resolve_n_jobs(config.n_jobs) < 2:
        return None
    from privaudit.membership.ye_steps import YeSteps, attack_needs
    from privaudit.models.train_many import ModelTask

    try:
        need = attack_needs(config.attack_names(), config.attack_params)
        estimator = (
            build_estimator(config.model_section()) if given is None else given.trainer.estimator
        )
        preload = (estimator, ModelTask, YeSteps)
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
    progress: ProgressOption,
    write: bool,
    early: Executor | None,
    split: _Split | None,
    given: GivenInputs | None = None,
) -> AuditReport:
    """Steps 2-6 of :func:`run_audit` and :func:`run_given_audit` (the module docstring):
    the inputs, the checks before training, the experiment, the metrics and the analysis
    sections, each timed into ``results.json["timings"]``; then the results, their bundle
    manifest and the report directory. ``early`` is the executor whose workers already
    started (:func:`_early_executor`); without one it is built after the checks."""
    out_dir = Path(config.output_dir)
    timings: dict[str, float] = {}
    dataset, provided, data_warnings, trainer = _audit_inputs(
        config, split, given, progress, timings
    )

    exp_cfg = experiment_config(config, dataset.n_records, provided)
    with timed(timings, "preflight"), progress_phase("checks before training", enabled=progress):
        checks = preflight(
            config,
            dataset,
            exp_cfg,
            trainer,
            overwrite=overwrite,
            write=write,
            provided=provided is not None,
            provided_members=None if provided is None else int(provided.member_ids.size),
        )
    split_check = None
    if provided is not None and provided.randomised_split:
        with (
            timed(timings, "split_check"),
            progress_phase("checking the declared random split", enabled=progress),
        ):
            split_check = check_declared_split(dataset, provided, seed=config.seed)
    executor = (
        early if early is not None else build_executor(config, exp_cfg.n_jobs, progress=progress)
    )
    with timed(timings, "experiment"):
        exp, game_result, n_aimed, exp_aimed = _train_and_attack(
            config, dataset, provided, trainer, exp_cfg, executor, progress
        )
    for phase, sec in exp.timings.items():
        timings[f"experiment.{phase}"] = float(sec)

    with timed(timings, "metrics"), progress_phase("metrics", enabled=progress):
        m = metrics_step(exp, game_result, exp_cfg, split_check=split_check)
    game_doc = game_section(exp, game_result, m.scored.metrics)
    with timed(timings, "analysis"):
        with progress_phase("analysis", enabled=progress):
            # the calibrated evaluation's runs go to the audit's workers (or Ray cluster) too
            sections = analysis_sections(
                config,
                exp,
                game_result,
                dataset,
                m,
                game_doc,
                n_aimed,
                executor=executor,
                exp_vulnerable=exp_aimed,
            )
        executor.close()  # the worker processes (on an error: when the executor is collected)

    settings = audit_settings(config, exp, dataset, trainer, game_result, given=given)
    if exp_aimed is not None:  # the aimed pass trained Attack L's models for its records
        for role, n in exp_aimed.models_trained.items():
            settings["models_trained"][role] = settings["models_trained"].get(role, 0) + int(n)
    settings.update(executor_settings(config, executor))
    if data_warnings or checks:
        settings["warnings"] = [*data_warnings, *checks]
    if m.excluded:
        settings["agreement_excludes"] = m.excluded
    results = build_results(
        seed=config.seed,
        settings=settings,
        target=target_entry(
            target_summary(exp, game_result, m.scored.member), exp, provided, split_check
        ),
        attacks=m.entries,
        audits=m.audits,
        agreement=m.agreement,
        agreement_alpha=config.alpha if m.agreement is not None else None,
        game=game_doc,
        timings=timings,
        sections=sections,
    )
    manifest = _bundle_manifest(config, given, settings, exp)
    if write:
        with progress_phase("writing the report", enabled=progress):
            write_report(out_dir, results, m.table, overwrite=overwrite, bundle=manifest)
    return AuditReport(
        results=results,
        metrics=m.scored.metrics,
        agreement=m.agreement,
        scores=m.table,
        experiment=exp,
        out_dir=out_dir if write else None,
        game=game_result,
        bundle=manifest,
    )


def _audit_inputs(
    config: AuditConfig,
    split: _Split | None,
    given: GivenInputs | None,
    progress: ProgressOption,
    timings: dict[str, float],
) -> tuple[Dataset, ProvidedTarget | None, list[str], Any]:
    """Step 2: the dataset, the provided target (None without one), the warnings loading
    raised and the recipe's trainer, from the config's files; given in code, those of
    ``given``, which took no time to load. Records ``timings["data"]``: loading, with the
    time step 2a took to read a provided split, not building the trainer."""
    if given is not None:
        timings["data"] = 0.0
        return given.dataset, given.target, [], given.trainer
    t0 = time.perf_counter()
    with progress_phase("loading the data", enabled=progress):
        dataset, provided, data_warnings = _load_inputs(config, split)
    timings["data"] = time.perf_counter() - t0 + (0.0 if split is None else split.seconds)
    trainer = build_trainer(config.model_section(), dataset.n_classes, config_dir=config.config_dir)
    return dataset, provided, data_warnings, trainer


def _bundle_manifest(
    config: AuditConfig,
    given: GivenInputs | None,
    settings: dict[str, Any],
    exp: ExperimentResult,
) -> dict[str, Any]:
    """The manifest of ``bundle.json`` (:func:`privaudit.report.bundle.make_manifest`): the
    command that ran, its config (:func:`_manifest_config`), the seeds of ``settings`` and
    the dataset's fingerprint."""
    return make_manifest(
        kind="membership-inference",
        command="run_audit" if given is None else "audit_model",
        config=_manifest_config(config, given, settings),
        seeds=settings["seeds"],
        dataset_fingerprint=exp.dataset_fingerprint,
    )


def _manifest_config(
    config: AuditConfig, given: GivenInputs | None, settings: dict[str, Any]
) -> dict[str, Any]:
    """The ``config`` of the bundle manifest: the audit config; with data given in code,
    its dataset, model and target sections are their descriptions in ``results.json``."""
    doc: dict[str, Any] = config.model_dump(mode="json")
    if given is not None:
        doc["dataset"] = settings["dataset"]
        doc["model"] = settings["model"]
        doc["target"] = dict(given.target.description)
        doc.pop("output_dir", None)  # where the report goes is the caller's: save(folder)
    return doc


@dataclasses.dataclass(frozen=True)
class _Split:
    """A provided target's split, read and checked before the model file is opened."""

    dataset: Dataset
    split: ProvidedSplit
    warnings: list[str]
    seconds: float


def _recording(fn: Any) -> tuple[Any, list[str]]:
    """``fn()`` and the :class:`PrivauditWarning` messages it raised: passed on, and
    returned to be recorded in ``results.json``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PrivauditWarning)
        value = fn()
    found = [str(w.message) for w in caught if issubclass(w.category, PrivauditWarning)]
    for w in caught:  # pass the warnings on (they are recorded in results.json too)
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return value, found


def _read_split(config: AuditConfig) -> _Split | None:
    """Step 2a, a provided target only: the dataset and the split from the user's files
    (:func:`~privaudit.membership.inputs.read_provided_split`), their sizes checked
    (:func:`~privaudit.membership.preflight.check_provided_split`) before the model file is opened
    (importing its loader alone takes seconds) and before any worker starts."""
    if config.target is None:
        return None
    t0 = time.perf_counter()
    (dataset, split), found = _recording(lambda: read_provided_split(config))
    check_provided_split(config, dataset, split)
    return _Split(dataset, split, found, time.perf_counter() - t0)


def _load_inputs(
    config: AuditConfig, split: _Split | None
) -> tuple[Dataset, ProvidedTarget | None, list[str]]:
    """Step 2b: the dataset, and a provided target's model
    (:func:`~privaudit.membership.inputs.load_provided_target`) with the split of step 2a; with the
    warnings (:class:`PrivauditWarning`) loading raised."""
    if split is None and config.target is not None:  # pragma: no cover - read by run_audit
        split = _read_split(config)
    if split is None:
        dataset, found = _recording(lambda: load_dataset(config))
        return dataset, None, found
    read = split
    provided, found = _recording(lambda: load_provided_target(config, read.dataset, read.split))
    return read.dataset, provided, [*read.warnings, *found]


def _train_and_attack(
    config: AuditConfig,
    dataset: Dataset,
    provided: ProvidedTarget | None,
    trainer: SklearnTrainer | TorchTrainer,
    exp_cfg: ExperimentConfig,
    executor: Executor,
    progress: ProgressOption,
) -> tuple[ExperimentResult, GameResult | None, int, ExperimentResult | None]:
    """The experiment of the config's game: the fixed-model experiment (with the
    vulnerable-record leave-one-out pass when asked) or the game's trials. Returns the
    (first) experiment, the game result (None for the fixed-model game), the number of
    leave-one-out records aimed at record types and the second pass that aimed them (None
    without one).

    The second pass is for the vulnerable-record analysis only: its extra records are
    members chosen by their membership and by the other attacks' decisions on this target
    (Ye et al. Sec. 5.4's record types), so Attack L's figures and bound on them would be
    selected, not a random sample's (on a target that never saw the audited records, L's
    AUC rose from about 0.52 to 0.64); every metric and bound stays on the first pass."""
    game_result: GameResult | None = None
    n_aimed = 0
    exp_aimed: ExperimentResult | None = None
    if config.game.engine_name() == "fixed-model":
        with _store(config, temporary=aims_leave_one_out(config)) as store:
            exp = run_experiment(
                dataset,
                trainer,
                exp_cfg,
                store=store,
                executor=executor,
                progress=progress,
                provided=provided,
            )
            extra = vulnerable_leave_one_out(config, exp, dataset)
            if extra:
                first = exp.leave_one_out_ids
                n_aimed = len(extra) - (0 if first is None else int(first.size))
                # second pass: every model is in the store; only L's new models train
                exp_aimed = run_experiment(
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
    return exp, game_result, n_aimed, exp_aimed


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


def _play_game(
    config: AuditConfig,
    dataset: Dataset,
    trainer: SklearnTrainer | TorchTrainer,
    exp_cfg: ExperimentConfig,
    executor: Executor,
    progress: ProgressOption,
) -> GameResult:
    """Play Def. 3.1, 3.3 or 3.4 (:func:`privaudit.membership.games.run_game`).

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
