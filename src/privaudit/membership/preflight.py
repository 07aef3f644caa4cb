"""Checks that run before the first model trains, so that a bad audit fails in seconds.

:func:`preflight` is called by :func:`privaudit.membership.pipeline.run_audit` after the dataset is
loaded and before anything is trained or written (no report directory, no cache
directory). It raises :class:`~privaudit.membership.config.ConfigError` naming the config field for
anything that would otherwise fail after an hour of training:

* **paths**: ``output_dir`` and ``cache_dir`` can be created (their nearest existing
  ancestor is a writable directory, not a file), an existing report needs ``overwrite``;
* **executor**: ``executor: ray`` needs Ray importable and, with ``ray_address``, a
  cluster that answers on that address;
* **model**: the estimator is built, its parameters validated (scikit-learn's
  ``_validate_params``), and it is fitted once on a small sample of the data with at most
  3 iterations or trees, or one epoch (some checks happen only in ``fit``; a batching
  trainer fits two models there in one batched computation, the path the audit takes); the distillation
  objective fits the model kind (``logits`` needs a regressor counterpart, soft labels
  an estimator whose ``fit`` takes ``sample_weight``);
* **game**: the fixed records of Def. 3.3/3.4 are records of the target pool;
* **labels**: every class has at least 2 records (a class of one record cannot be split
  between a model's training records and the records it is tested on);
* **sizes**: shadow models need more population records than the target's training
  set; Attack D's population calibration needs ``ceil(1/alpha - 1)`` records no
  distilled model saw; the leave-one-out sample fits in the pool (half members, half
  non-members) instead of being clipped silently. A provided target's split (the
  user's member and non-member files, the population) is checked by
  :func:`check_provided_split` from the files' row counts, before its model file is
  opened, with messages that name those files;
* **memory**: the signals of every model fit in the memory available;
* **attacks**: attack parameter names are checked against each attack's signature,
  and the values by a *dry run*: the whole experiment engine runs with the same attacks,
  parameters, alpha and numbers of models on a small synthetic dataset with a trivial
  trainer (class means), which takes well under a second and exercises every check the
  attacks make on their settings.

It returns warnings (:class:`~privaudit.errors.PrivauditWarning`) for what is legal but
suspicious: a target pool with too few non-members for any TPR at 1% FPR, more worker
processes than cores.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import os
import socket
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privaudit.data import Dataset
from privaudit.errors import PrivauditError, PrivauditWarning
from privaudit.membership.config import AuditConfig, ConfigError
from privaudit.membership.experiment import ExperimentConfig, run_experiment
from privaudit.models.provided import ProvidedSplit
from privaudit.runtime.executor import LocalExecutor, available_cores

__all__ = [
    "check_attack_params",
    "check_executor",
    "check_game",
    "check_labels",
    "check_memory",
    "check_model",
    "check_paths",
    "check_provided_split",
    "check_query_views",
    "check_sizes",
    "dry_run_attacks",
    "member_range",
    "preflight",
]

#: Target pool non-members needed for TPR at 1% FPR (the highest FPR the summary reports).
_MIN_NON_MEMBERS_FOR_TPR = 100
#: Records of the trial fit of the model (per class, at least).
_TRIAL_PER_CLASS = 10
_TRIAL_MIN = 60
#: Sizes of the dry run's synthetic pool (at most) and population (at least).
_DRY_POOL = 200
_DRY_POPULATION = 400


def preflight(
    config: AuditConfig,
    dataset: Dataset,
    experiment: ExperimentConfig,
    trainer: Any,
    *,
    overwrite: bool = False,
    write: bool = True,
    provided: bool | None = None,
    provided_members: int | None = None,
) -> list[str]:
    """Run every check of the module docstring; return the warnings (also emitted).

    ``provided``: the audit has a provided target, whose split
    :func:`check_provided_split` checked (default: whether ``config.target`` is set; True
    for an audit whose target is given in code, :func:`privaudit.audit_model`);
    ``provided_members``: its number of members, when known (else half the pool is
    assumed for the warnings and the dry run).

    Raises
    ------
    ConfigError
        The first problem found, naming the config field.
    """
    if provided is None:
        provided = config.target is not None
    if write:
        check_paths(config, overwrite=overwrite)
    elif config.cache_dir is not None:
        _check_creatable(Path(config.cache_dir), "cache_dir", existing_dir_ok=True)
    check_executor(config)
    check_labels(config, dataset)
    check_game(config, dataset, experiment)
    members = None if provided else member_range(config, dataset, experiment)
    if members is not None:  # a provided split: check_provided_split, before its model loads
        check_sizes(config, experiment, members)
    elif provided_members is not None:
        members = (provided_members, provided_members)
    check_memory(experiment, trials=_trials(config))
    check_attack_params(experiment)
    check_model(config, dataset, trainer)
    check_query_views(experiment, dataset, trainer)
    dry_run_attacks(experiment, dataset.n_classes, members)
    found = _warnings(config, experiment, members, provided=provided)
    if not provided and members is not None:
        found += _shared_training_sets(experiment)
    for w in found:
        warnings.warn(w, PrivauditWarning, stacklevel=2)
    return found


# ------------------------------------------------------------------------------ paths


def _check_creatable(path: Path, field: str, *, existing_dir_ok: bool) -> None:
    p = path.expanduser()
    if p.exists() or p.is_symlink():
        if not p.is_dir():
            raise ConfigError(f"{field}: expected a directory, found an existing file {p}")
        if existing_dir_ok and not os.access(p, os.W_OK | os.X_OK):
            raise ConfigError(f"{field}: expected a writable directory, found {p} read-only")
        return
    parent = p.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise ConfigError(
            f"{field}: expected a path that can be created, found {p} inside the file {parent}"
        )
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ConfigError(
            f"{field}: expected a path that can be created, found {p} under the "
            f"read-only directory {parent}"
        )


def check_paths(config: AuditConfig, *, overwrite: bool) -> None:
    """``output_dir`` is new (or ``overwrite``) and creatable; ``cache_dir`` creatable."""
    from privaudit.report import check_output_dir

    out = Path(config.output_dir)
    check_output_dir(out, overwrite=overwrite)
    _check_creatable(out, "output_dir", existing_dir_ok=True)
    if config.cache_dir is not None:
        cache = Path(config.cache_dir)
        _check_creatable(cache, "cache_dir", existing_dir_ok=True)
        if cache.expanduser().resolve() == out.expanduser().resolve():
            raise ConfigError(
                f"cache_dir: expected a folder other than the report folder, found {cache} "
                "(replacing the report would delete the cache)"
            )


# --------------------------------------------------------------------------- executor


def _ray_host_port(address: str) -> tuple[str, int] | None:
    text = address.strip()
    for prefix in ("ray://", "http://", "https://"):
        if text.startswith(prefix):
            text = text[len(prefix) :]
    text = text.split("/", 1)[0]
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit():
        return None
    return host.strip("[]"), int(port)


def check_executor(config: AuditConfig, *, timeout: float = 5.0) -> None:
    """``executor: ray``: Ray importable and the cluster at ``ray_address`` answering."""
    if config.executor != "ray":
        if config.ray_address is not None:
            raise ConfigError(
                "ray_address: expected only with 'executor: ray', found executor: local"
            )
        return
    try:
        import ray  # noqa: F401
    except ImportError:
        raise ConfigError(
            "executor: expected Ray installed for 'executor: ray' (pip install 'privaudit[ray]'), "
            "found no ray module; use 'executor: local'"
        ) from None
    address = config.ray_address
    if address is None or address in ("auto", "local"):
        return
    hp = _ray_host_port(address)
    if hp is None:
        raise ConfigError(
            f"ray_address: expected 'host:port' or 'ray://host:port', found {address!r}"
        )
    try:
        with socket.create_connection(hp, timeout=timeout):
            pass
    except OSError as exc:
        raise ConfigError(
            f"ray_address: expected a Ray cluster answering at {hp[0]}:{hp[1]}, "
            f"found none ({exc.strerror or exc})"
        ) from None


# ------------------------------------------------------------------------------ sizes


def _default_param(attack: str, name: str) -> Any:
    from privaudit.attacks.base import ATTACKS

    p = inspect.signature(ATTACKS[attack].func).parameters.get(name)
    return None if p is None else p.default


def _setting(exp: ExperimentConfig, attack: str, name: str) -> Any:
    return exp.attack_params.get(attack, {}).get(name, _default_param(attack, name))


def member_range(config: AuditConfig, dataset: Dataset, exp: ExperimentConfig) -> tuple[int, int]:
    """The fewest and the most members a target of this audit gets: the target's
    membership is one fair coin per pool record (:mod:`privaudit.membership.ye_split`), so
    the count varies with the seed and, in a game with trials, from trial to trial; the
    draws are computed here as the run will make them, before anything trains."""
    from privaudit.membership.games import trial_member_counts

    game = getattr(config, "game", None)
    name = "fixed-model" if game is None else game.engine_name()
    counts = trial_member_counts(
        name,
        dataset,
        exp,
        n_trials=_trials(config),
        fixed_records=None if game is None else game.fixed_records,
        n_fixed_records=1 if game is None else game.n_fixed_records,
    )
    return int(counts.min()), int(counts.max())


def check_sizes(config: AuditConfig, exp: ExperimentConfig, members: tuple[int, int]) -> None:
    """Design sizes the engine would otherwise reject (or clip) after training.

    ``members``: the fewest and the most members of the audit's targets
    (:func:`member_range`)."""
    lo, hi = members
    non_members = exp.n_target_pool - hi
    attacks = set(exp.attacks)
    if lo < 2 or non_members < 2:
        raise ConfigError(
            "sizes.n_target_pool: expected at least 2 members and 2 non-members in the pool "
            f"(the target's members, one fair coin per record of the {exp.n_target_pool}-record "
            f"pool: {_count(lo, hi)} with this seed); add records or change the seed"
        )
    # the attacker's shadow and distilled models train on half the pool's size, a
    # constant independent of the members' coins (YeSplit.attacker_size)
    attacker_size = exp.n_target_pool // 2
    if "shadow" in attacks and attacker_size >= exp.n_population:
        raise ConfigError(
            f"sizes.n_population: expected more than {attacker_size} records (each shadow "
            f"model trains on half the pool's size of population records, the target's "
            f"expected training-set size, and needs OUT records), found {exp.n_population}"
        )
    need = math.ceil(1.0 / exp.alpha - 1.0 - 1e-9)
    if (
        "distillation" in attacks
        and _setting(exp, "distillation", "threshold_calibration") == "population"
    ):
        size = exp.distill_size or min(exp.n_population, attacker_size)
        free = exp.n_population - max(size, exp.n_population // 2)
        if free < need:
            raise ConfigError(
                f"sizes.n_population: expected enough population records for the calibration "
                f"of attack 'distillation' at alpha={exp.alpha} ({need} that no distilled model "
                f"trains on), found {free} of {exp.n_population}; add population records, "
                "lower models.distill_size or raise alpha"
            )
    if "leave-one-out" in attacks:
        _check_leave_one_out_sample(
            exp.leave_one_out_sample,
            lo,
            non_members,
            pool=f" of a pool with {_count(lo, hi)} members and "
            f"{_count(exp.n_target_pool - hi, exp.n_target_pool - lo)} non-members",
        )


def _count(lo: int, hi: int) -> str:
    return f"{lo}" if lo == hi else f"{lo} to {hi}"


#: Fewest records of one label class the audit can split.
MIN_RECORDS_PER_CLASS = 2


def _dataset_name(config: AuditConfig) -> str:
    ds = config.dataset
    if ds is None:  # data given in code (privaudit.audit_model)
        return "X"
    return str(ds.name) if ds.name is not None else Path(str(ds.path)).name


def _data_field(config: AuditConfig) -> str:
    """The name of the data in a message: the config section, or the argument in code."""
    return "dataset" if config.dataset is not None else "y"


def _model_kind(config: AuditConfig, trainer: Any) -> str:
    """The model kind in a message: the config's, or the name of a trainer given in code."""
    if config.model is not None:
        return config.model.kind
    return str(getattr(trainer, "name", type(trainer).__name__))


def _model_field(config: AuditConfig) -> str:
    """The model's parameters in a message: ``model.params``, or the ``recipe`` argument."""
    return "model.params" if config.model is not None else "recipe"


def check_labels(config: AuditConfig, dataset: Dataset) -> None:
    """Every label class has at least :data:`MIN_RECORDS_PER_CLASS` records.

    One record of a class cannot be both among a model's training records and among the
    records it is tested on: every model the audit trains either has seen all of that
    class or none of it, and its one score decides the class's figures. Refused with the
    count before training (it would otherwise run silently).
    """
    counts = np.bincount(np.asarray(dataset.y, dtype=np.int64), minlength=dataset.n_classes)
    small = [(dataset.class_names[c], int(counts[c])) for c in np.flatnonzero(counts < 2)]
    if not small:
        return
    label = None if config.dataset is None else config.dataset.label_column
    where = f"label column {label!r} of {_dataset_name(config)}" if label else "the labels"
    listed = ", ".join(f"{name!r} ({n} record{'s' if n != 1 else ''})" for name, n in small)
    raise ConfigError(
        f"{_data_field(config)}: expected at least {MIN_RECORDS_PER_CLASS} records of every class in the "
        f"{where} (a class must be split between the records a model trains on and those it "
        f"is tested on), found {listed} of {dataset.n_records} records; drop or relabel "
        f"{'that record' if len(small) == 1 and small[0][1] == 1 else 'those records'}, "
        "or merge the class with another"
    )


def _described(n: int, what: str) -> str:
    return f"{n:,} {what}{'' if n == 1 else 's'}"


def _split_names(
    config: AuditConfig, dataset: Dataset, split: ProvidedSplit
) -> tuple[str, str, str]:
    """How the user gave the members, the non-members and the population, in their words."""
    t = config.target
    n_m, n_n = split.member_ids.size, split.non_member_ids.size
    data = _dataset_name(config)
    if t is None and config.dataset is None:  # given in code (privaudit.audit_model)
        n_p = _population_size(dataset, split)
        source = (
            "the rows of X in neither members nor non_members"
            if split.population_ids is None
            else "the population argument"
        )
        return (
            f"{_described(n_m, 'member')} (the members argument)",
            f"{_described(n_n, 'non-member')} (the non_members argument)",
            f"{_described(n_p, 'population record')} ({source})",
        )
    if t is None or t.member_column is not None:
        col = None if t is None else t.member_column
        members = f"{_described(n_m, 'member')} (rows of {data} marked 1 in column {col!r})"
        non_members = f"{_described(n_n, 'non-member')} (rows of {data} marked 0 in column {col!r})"
        audited = f"the rows marked 0 or 1 in column {col!r}"
    else:
        mf, nf = Path(str(t.members)).name, Path(str(t.non_members)).name
        members = f"{_described(n_m, 'member')} (the members file {mf})"
        non_members = f"{_described(n_n, 'non-member')} (the non-members file {nf})"
        audited = f"neither {mf} nor {nf}"
    n_p = _population_size(dataset, split)
    if t is not None and t.population is not None:
        source = f"the population file {Path(str(t.population)).name}"
    elif t is not None and t.population_table is not None:
        source = f"the population table {Path(str(t.population_table)).name}"
    else:
        source = f"the rest of {data}: the records in {audited}"
    drawn = config.sizes.n_population
    if (
        drawn is not None
        and split.population_ids is not None
        and (t is None or t.population is None)
    ):
        source += f", drawn down to sizes.n_population = {drawn}"
    population = f"{_described(n_p, 'population record')} ({source})"
    return members, non_members, population


def check_provided_split(
    config: AuditConfig,
    dataset: Dataset,
    split: ProvidedSplit,
    *,
    references: str | None = None,
) -> None:
    """The sizes a provided target's split needs, from the counts of the user's files.

    Run by :func:`privaudit.membership.pipeline.run_audit` as soon as the dataset table and the id
    files are read, before the model file is opened and before any worker starts, so a
    split too small for the chosen attacks fails in the time it takes to read the files.
    Each message names what the user gave (the members file, the non-members file, the
    population: a file, a table, or the rest of the dataset table), what is needed and why.

    ``references``: where the reference models train (default ``config.target.references``;
    given for a target given in code, :func:`privaudit.audit_model`).

    Raises
    ------
    ConfigError
        The first requirement the split does not meet.
    """
    if references is None:
        references = "pool" if config.target is None else config.target.references
    check_labels(config, dataset)
    members, non_members, population = _split_names(config, dataset, split)
    n_m, n_n = int(split.member_ids.size), int(split.non_member_ids.size)
    n_p = _population_size(dataset, split)
    more = _more_population(config)
    _check_some_population(n_p, population=population, more=more)
    from privaudit.membership.experiment_config import experiment_config

    exp = experiment_config(config, dataset.n_records, split)
    attacks = set(exp.attacks)
    if "shadow" in attacks:
        _check_shadow_population(n_m, n_p, members=members, population=population, more=more)
    _check_calibration_population(exp, n_m, n_p, members=members, population=population, more=more)
    if "leave-one-out" in attacks:
        _check_leave_one_out_sample(
            exp.leave_one_out_sample, n_m, n_n, found=f" for {members} and {non_members}"
        )
    if references == "population":
        _check_reference_population(config, n_m, n_p, population=population, more=more)
    if "population" in attacks:
        _check_population_classes(dataset, split, population=population, more=more)


def _population_size(dataset: Dataset, split: ProvidedSplit) -> int:
    """Number of population records of the split: its ids, or every record not audited."""
    if split.population_ids is None:
        return dataset.n_records - split.member_ids.size - split.non_member_ids.size
    return int(split.population_ids.size)


def _more_population(config: AuditConfig) -> str:
    """The remedy for too small a population: more records, where the user gives them."""
    if config.dataset is not None:
        return (
            "add records to the dataset table or give a population table (target.population_table)"
        )
    return "give more rows in X outside the audited ones, or a larger population"


def _check_some_population(n_p: int, *, population: str, more: str) -> None:
    """At least 2 population records: every attack calibrates or trains on them."""
    if n_p < 2:
        raise ConfigError(
            f"target: expected at least 2 population records (the attacker's records, "
            f"outside the audited ones: every attack calibrates or trains on them), found "
            f"{population}; {more}"
        )


def _check_shadow_population(
    n_m: int, n_p: int, *, members: str, population: str, more: str
) -> None:
    """Attack 'shadow': more population records than members (each shadow model trains on
    as many as the target's members and needs population records it did not train on)."""
    if n_m >= n_p:
        raise ConfigError(
            f"target: expected more population records than members for attack 'shadow' "
            f"(each shadow model trains on as many population records as the target's "
            f"training set and needs population records it did not train on), found "
            f"{population} for {members}; {more}, list fewer members, or leave 'shadow' "
            "out of attacks"
        )


def _check_calibration_population(
    exp: ExperimentConfig, n_m: int, n_p: int, *, members: str, population: str, more: str
) -> None:
    """Attacks 'reference' and 'distillation' calibrating on the population
    (``threshold_calibration: population``): ``ceil(1/alpha - 1)`` population records that
    none of their shadow or distilled models trains on."""
    need = math.ceil(1.0 / exp.alpha - 1.0 - 1e-9)
    for attack, size, trained in (
        ("reference", n_m, "shadow"),
        ("distillation", exp.distill_size or min(n_p, n_m), "distilled"),
    ):
        if (
            attack not in exp.attacks
            or _setting(exp, attack, "threshold_calibration") != "population"
        ):
            continue
        free = n_p - max(size, n_p // 2)
        if free < need:
            raise ConfigError(
                f"target: expected enough population records for attack {attack!r} to "
                f"calibrate its threshold at alpha = {exp.alpha:g} ({need} records that no "
                f"{trained} model trains on; those models train on {size} of them, as many "
                f"as the target's members, drawn from at least half), found {population} "
                f"for {members}; {more}, raise alpha, or set attack_params.{attack}."
                "threshold_calibration: smoothed"
            )


def _check_leave_one_out_sample(
    s: int, n_m: int, n_n: int, *, pool: str = "", found: str = ""
) -> None:
    """Attack 'leave-one-out': its sample of ``s`` records, half members (rounded up) and
    half non-members, fits in ``n_m`` members and ``n_n`` non-members; ``pool`` and
    ``found`` describe them in the message."""
    want_m = math.ceil(s / 2)
    if want_m > n_m or s - want_m > n_n:
        raise ConfigError(
            f"models.leave_one_out_sample: expected at most {min(2 * n_m, 2 * n_n + 1)} "
            f"records (half members, half non-members{pool}), found {s}{found}"
        )


def _check_reference_population(
    config: AuditConfig, n_m: int, n_p: int, *, population: str, more: str
) -> None:
    """``references: population``: the part of the population set aside for the reference
    models and the rest, kept for the attacks, have at least 2 records each."""
    n_src = max(n_p // 2, min(n_m, n_p - 2))
    if n_src < 2 or n_p - n_src < 2:
        field = "target.references" if config.target is not None else "references"
        raise ConfigError(
            f"{field}: 'population' sets part of the population aside for the "
            f"reference models and keeps the rest for the attacks (at least 2 records "
            f"each), found {population}; {more} or use references: pool"
        )


def _check_population_classes(
    dataset: Dataset, split: ProvidedSplit, *, population: str, more: str
) -> None:
    """Attack 'population': at least 2 population records of every class of the audited
    records (it compares a record's loss with those of population records of its class)."""
    y_p = dataset.y[
        dataset.positions(split.population_ids)
        if split.population_ids is not None
        else ~np.isin(dataset.record_ids, split.audited_ids)
    ]
    y_a = dataset.y[dataset.positions(split.audited_ids)]
    per_class = np.bincount(y_p, minlength=dataset.n_classes)
    short = [int(c) for c in np.unique(y_a) if per_class[c] < 2]
    if short:
        listed = ", ".join(f"{dataset.class_names[c]!r} ({int(per_class[c])})" for c in short)
        raise ConfigError(
            f"target: expected at least 2 population records of every class of the "
            f"audited records (attack 'population' compares a record's loss with those "
            f"of population records of its class), found {listed} among {population}; "
            f"{more}, or leave 'population' out of attacks"
        )


def check_game(config: AuditConfig, dataset: Dataset, exp: ExperimentConfig) -> None:
    """The fixed records of a fixed-record game (Def. 3.3/3.4) are records of the pool.

    :func:`privaudit.membership.games.run_game` checks the same after it opened the artifact
    store; here nothing is created yet.
    """
    game = getattr(config, "game", None)
    if game is None or game.engine_name() not in ("fixed-record", "fixed-record-and-dataset"):
        return
    from privaudit.membership.experiment import target_pool_ids

    pool = target_pool_ids(dataset, exp)
    if game.fixed_records is None:
        if game.n_fixed_records > pool.size:
            raise ConfigError(
                f"game.n_fixed_records: expected at most the {pool.size} pool records, "
                f"found {game.n_fixed_records}"
            )
        return
    wanted = np.asarray(game.fixed_records)
    wanted = wanted.astype(pool.dtype) if pool.dtype.kind in "iu" else wanted.astype(str)
    known = set(pool.tolist())
    missing = [r for r in wanted.tolist() if r not in known]
    if missing:
        raise ConfigError(
            f"game.fixed_records: expected record ids of the target pool "
            f"(e.g. {pool[:3].tolist()}), found {missing[:5]} not in it"
        )


def _model_count(exp: ExperimentConfig) -> int:
    from privaudit.attacks import required_inputs

    fields: set[str] = set()
    for a in exp.attacks:
        req = required_inputs(a)
        fields.update(req.fields)
        fields.update(req.optional_fields)
    n = 1
    if fields & {"reference", "reference_membership", "reference_population"}:
        n += exp.n_reference
    if "shadow" in fields:
        n += exp.n_shadow
    if "distilled" in fields:
        n += exp.n_distilled
    if "leave_one_out" in fields:
        n += exp.n_leave_one_out * (1 + math.ceil(exp.leave_one_out_sample / 2))
    return n


def _available_memory() -> int | None:
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        return None


def _trials(config: AuditConfig) -> int:
    """Target models the audit's game trains (each with its own attacker models)."""
    game = getattr(config, "game", None)
    if game is None or game.engine_name() == "fixed-model":
        return 1
    return int(game.n_trials)


def check_memory(exp: ExperimentConfig, *, trials: int = 1, available: int | None = None) -> None:
    """The signals of every model (kept until the attacks run) fit in memory.

    Estimate: models x signals x (pool + population) float64 values, times 3 for the
    per-model arrays, their stacked copy and the attacks' working arrays; a game with
    several trials keeps every trial's experiment.
    """
    from privaudit.signals import SIGNALS

    n_models = _model_count(exp) * trials
    per_model = len(SIGNALS) * (exp.n_target_pool + exp.n_population) * 8 * 3
    # the reference keep matrix (bool and its float draws) is built whatever the attacks
    need = n_models * per_model + trials * exp.n_reference * exp.n_target_pool * 9
    avail = _available_memory() if available is None else available
    if avail is None or need <= 0.8 * avail:
        return
    raise ConfigError(
        f"models: expected numbers of models whose arrays fit in the {avail / 2**30:.1f} GiB "
        f"of memory available, found {n_models} models to train and n_reference="
        f"{exp.n_reference} (about {need / 2**30:.1f} GiB); lower the numbers of models "
        "or the sizes"
    )


# ---------------------------------------------------------------------------- attacks


def check_attack_params(exp: ExperimentConfig) -> None:
    """Every ``attack_params`` key is a setting of its attack (its signature)."""
    from privaudit.attacks.base import ATTACKS, attack_names

    attack_names()  # registers the built-in attacks
    for attack, params in exp.attack_params.items():
        func_params = inspect.signature(ATTACKS[attack].func).parameters
        accepted = [p for p in func_params if p not in ("data", "rng", "alpha")]
        unknown = sorted(set(params) - set(accepted))
        if unknown:
            raise ConfigError(
                f"attack_params.{attack}: expected settings of attack {attack!r} "
                f"({', '.join(accepted)}), found unknown {', '.join(map(repr, unknown))}"
            )


def check_query_views(exp: ExperimentConfig, dataset: Dataset, trainer: Any) -> None:
    """``augmented_queries`` (LiRA) needs image models trained with an augmentation, and
    records that are images of the recipe's ``input_shape``."""
    from privaudit.membership.query_views import augmented_query_attacks
    from privaudit.signals.views import query_views_of

    asking = [a for a in augmented_query_attacks(exp.attack_params) if a in exp.attacks]
    if not asking:
        return
    field = f"attack_params.{asking[0]}.augmented_queries"
    views = query_views_of(trainer)
    if views is None:
        raise ConfigError(
            f"{field}: expected a model whose training augmentation the queries can mirror "
            f"(model kind torch with input_shape and augmentation shift, flip or "
            f"flip-shift), found model kind {getattr(trainer, 'name', type(trainer).__name__)!r} "
            "without one; drop augmented_queries or train with an augmentation"
        )
    width = int(np.prod(views.input_shape))
    if dataset.n_features != width:
        raise ConfigError(
            f"{field}: expected records that are images of shape {list(views.input_shape)} "
            f"({width} features, model.params.input_shape), found {dataset.n_features} features"
        )


class _DryModel:
    """Logits of a Gaussian class-means classifier (the dry run's trivial model)."""

    def __init__(self, means: NDArray[np.float64]) -> None:
        self.means = means

    @property
    def n_classes(self) -> int:
        return int(self.means.shape[0])

    def logits(self, X: NDArray[np.float64]) -> NDArray[np.float64]:
        X = np.asarray(X, dtype=np.float64)
        return np.asarray(
            X @ self.means.T - 0.5 * np.sum(self.means**2, axis=1)[None, :], dtype=np.float64
        )


class _DryTrainer:
    """Trains :class:`_DryModel` in microseconds: weighted class means plus seeded noise."""

    name = "preflight-dry-run"

    def settings(self) -> dict[str, Any]:
        return {"trainer": "preflight-dry-run"}

    def accepts_sample_weight(self) -> bool:
        return True

    def query_augmentation(self) -> dict[str, Any]:
        """Views of the 4 dry features as a 2 x 2 image (LiRA's augmented queries)."""
        return {"input_shape": (1, 2, 2), "shift": 1, "flip": True}

    def fit(
        self,
        X: NDArray[np.float64],
        y: NDArray[np.int64],
        *,
        seed: int,
        n_classes: int | None = None,
        sample_weight: NDArray[np.float64] | None = None,
    ) -> _DryModel:
        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.int64)
        C = int(n_classes if n_classes is not None else y.max() + 1)
        w = np.ones(y.size) if sample_weight is None else np.asarray(sample_weight, dtype=float)
        means = np.zeros((C, X.shape[1]))
        for c in range(C):
            m = y == c
            if w[m].sum() > 0:
                means[c] = np.average(X[m], axis=0, weights=w[m])
        noise = np.random.default_rng(seed).normal(0.0, 0.05, size=means.shape)
        return _DryModel(means + noise)


def _dry_dataset(n_pool: int, n_population: int, n_classes: int) -> Dataset:
    rng = np.random.default_rng(0)
    n = n_pool + n_population
    y = rng.permutation(np.arange(n) % n_classes).astype(np.int64)
    centres = rng.normal(0.0, 1.5, size=(n_classes, 4))
    X = centres[y] + rng.normal(size=(n, 4))
    ids = np.array([f"dry-{k:06d}" for k in range(n)])
    return Dataset(
        "preflight-dry-run",
        ids,
        X,
        y,
        tuple(f"x{j}" for j in range(4)),
        tuple(str(c) for c in range(n_classes)),
    )


def _dry_config(exp: ExperimentConfig, attacks: Sequence[str]) -> ExperimentConfig:
    """``exp`` on the dry run's sizes (every other setting kept, including future ones)."""
    pool = min(exp.n_target_pool, _DRY_POOL)
    floor = max(_DRY_POPULATION, 4 * math.ceil(1.0 / exp.alpha))
    population = min(exp.n_population, floor)
    attacks = list(attacks)
    params = {a: dict(v) for a, v in exp.attack_params.items() if a in attacks}
    if "distillation-logits" in attacks:
        # The dry trainer cannot regress logits (whether the real model can is checked
        # with its estimator before); the attack's settings are D's, so they are checked
        # on soft-label students, under D's name when D itself is not run.
        attacks.remove("distillation-logits")
        logit_params = params.pop("distillation-logits", None)
        if "distillation" not in attacks:
            attacks.append("distillation")
            if logit_params is not None:
                params["distillation"] = logit_params
    return dataclasses.replace(
        exp,
        attacks=tuple(attacks),
        n_target_pool=pool,
        n_population=population,
        distill_size=None,
        leave_one_out_sample=min(exp.leave_one_out_sample, 2 * (pool // 2)),
        n_jobs=1,
        attack_params=params,
        force_membership=(),
        leave_one_out_include=(),
    )


def _dry_once(exp: ExperimentConfig, data: Dataset, n_members: int) -> None:
    """Run the engine on the dry data, its target's members the first ``n_members`` of its
    pool (the dry run's own seed would draw a count no trial of the real run draws)."""
    from privaudit.membership.experiment import target_pool_ids

    pool = target_pool_ids(data, exp).tolist()
    forced = tuple((r, i < n_members) for i, r in enumerate(pool))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run_experiment(
            data,
            _DryTrainer(),
            dataclasses.replace(exp, force_membership=forced),
            store=None,
            executor=LocalExecutor(1, progress=False),
        )


def dry_run_attacks(
    exp: ExperimentConfig, n_classes: int, members: tuple[int, int] | None = None
) -> None:
    """Run the experiment engine on synthetic data with the config's attacks and settings.

    ``members``: the fewest and the most members of the run's targets
    (:func:`member_range`); the dry target gets the most, scaled to the dry pool (half
    of the pool when not given).

    Raises
    ------
    ConfigError
        Naming ``attack_params.<attack>`` (or ``attacks``) and the attack's own message.
    """
    dry = _dry_config(exp, exp.attacks)
    data = _dry_dataset(dry.n_target_pool, dry.n_population, n_classes)
    # the most members a target of the run gets (member_range), scaled to the dry pool;
    # half of it when unknown
    most = exp.n_target_pool // 2 if members is None else members[1]
    n_members = min(
        max(round(most * dry.n_target_pool / exp.n_target_pool), 2), dry.n_target_pool - 2
    )
    try:
        _dry_once(dry, data, n_members)
        return
    except PrivauditError as exc:
        first: PrivauditError = exc
    for attack in exp.attacks:  # which attack failed?
        try:
            _dry_once(_dry_config(exp, [attack]), data, n_members)
        except PrivauditError as exc:
            field = f"attack_params.{attack}" if attack in exp.attack_params else "attacks"
            raise ConfigError(
                f"{field}: attack {attack!r} cannot run with these settings "
                f"(checked on synthetic data before training): {_cause(exc)}"
            ) from None
    raise ConfigError(  # pragma: no cover - fails jointly but not alone
        f"attacks: the attacks cannot run together (checked before training): {_cause(first)}"
    )


def _cause(exc: BaseException) -> str:
    original = getattr(exc, "original", None)
    return str(original) if isinstance(original, BaseException) else str(exc)


# ------------------------------------------------------------------------------ model


def _trial_sample(dataset: Dataset) -> NDArray[np.intp]:
    rng = np.random.default_rng(0)
    per = max(_TRIAL_PER_CLASS, math.ceil(_TRIAL_MIN / dataset.n_classes))
    picks = [
        rng.permutation(np.flatnonzero(dataset.y == c))[:per] for c in range(dataset.n_classes)
    ]
    return np.sort(np.concatenate(picks)).astype(np.intp)


#: Training-budget parameters capped for the trial fit (their values are validated by
#: ``_validate_params`` first; the trial fit checks what only ``fit`` checks, not convergence).
_BUDGET_PARAMS: dict[str, int] = {"max_iter": 3, "n_estimators": 3}


def _trial_trainer(trainer: Any) -> Any:
    """``trainer`` with a scikit-learn estimator's iterations / trees capped (a fast fit)."""
    from privaudit.models import SklearnTrainer
    from privaudit.models.torch_models import TorchTrainer

    if isinstance(trainer, TorchTrainer):  # one epoch of the recipe
        import dataclasses

        recipe = dataclasses.replace(trainer.recipe, epochs=1)
        return TorchTrainer(
            recipe, n_classes=trainer.n_classes, name=trainer.name, batched=trainer.batched
        )
    if not isinstance(trainer, SklearnTrainer):
        return trainer
    from sklearn.base import clone

    est = clone(trainer.estimator)
    params = est.get_params(deep=True)
    capped = {
        k: min(int(params[k]), cap)
        for name, cap in _BUDGET_PARAMS.items()
        for k in params
        if (k == name or k.endswith(f"__{name}")) and isinstance(params[k], int)
    }
    if capped:
        est.set_params(**capped)
    return SklearnTrainer(est, name=trainer.name, n_classes=trainer.n_classes)


def _trial_fit(trial: Any, dataset: Dataset, rows: NDArray[np.intp]) -> Any:
    """The trial fit on ``rows``, by the path the audit trains its models on: a batching
    trainer (:func:`~privaudit.models.train_many.fits_many`) fits two models on them in one
    batched computation (so that a torch MLP is checked in the batched kernel, and the
    first ``torch.optim`` optimizer, whose construction imports ``torch._dynamo``, about 2 s,
    is not built for nothing); any other trainer fits one. Returns the first model."""
    from privaudit.models.train_many import fits_many

    X, y = dataset.X[rows], dataset.y[rows]
    if fits_many(trial):
        every = np.arange(rows.size, dtype=np.int64)
        return trial.fit_many(X, y, [every, every], [0, 1], n_classes=dataset.n_classes)[0]
    return trial.fit(X, y, seed=0, n_classes=dataset.n_classes)


def check_model(config: AuditConfig, dataset: Dataset, trainer: Any) -> None:
    """Validate the estimator's parameters, fit it once on a small sample, and check the
    distillation objective against the model kind."""
    from privaudit.models import SklearnTrainer

    estimator = trainer.estimator if isinstance(trainer, SklearnTrainer) else None
    validate = getattr(estimator, "_validate_params", None)
    if callable(validate):  # scikit-learn >= 1.2: the parameter constraints, without fitting
        try:
            validate()
        except Exception as exc:
            raise ConfigError(
                f"{_model_field(config)}: expected parameters {_model_kind(config, trainer)} "
                "accepts, found "
                f"{type(exc).__name__}: {exc}"
            ) from None
    rows = _trial_sample(dataset)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = _trial_fit(_trial_trainer(trainer), dataset, rows)
            model.logits(dataset.X[rows[:2]])
    except Exception as exc:
        raise ConfigError(
            f"{_model_field(config)}: expected a model that trains, found that a trial fit on "
            f"{rows.size} records failed: {type(exc).__name__}: {exc}"
        ) from None
    names = config.attack_names()
    if "distillation-logits" in names and estimator is not None:
        from privaudit.models.distill import logit_regressor_for

        try:
            logit_regressor_for(estimator)
        except PrivauditError:
            raise ConfigError(
                f"attacks: expected no 'distillation-logits' for model kind "
                f"{_model_kind(config, trainer)!r} (its logit-matching students need a regressor of "
                f"the same architecture, known for mlp only), found it listed; use "
                f"'distillation' (soft labels)"
            ) from None
    if "distillation" in names:
        accepts = getattr(trainer, "accepts_sample_weight", None)
        if not callable(accepts) or not accepts():
            raise ConfigError(
                f"attacks: expected a model whose fit() takes sample_weight for "
                f"'distillation' (soft-label students), found {_model_kind(config, trainer)!r}"
            )


# ---------------------------------------------------------------------------- warnings


def _shared_training_sets(exp: ExperimentConfig) -> list[str]:
    """Warnings for shadow and distilled models that would all train on the same records:
    each draws its training set (as many records as the target's members, or
    ``distill_size``) from ``max(size, n_population // 2)`` population records
    (:class:`privaudit.membership.ye.YeModels`), the whole source when it is no larger, so
    the models differ only by their seeds where Ye et al. (App. B.2) draw each from the
    population at random."""
    members = exp.n_target_pool // 2  # YeSplit.attacker_size
    out = []
    roles = []
    if "shadow" in exp.attacks and exp.n_population // 2 <= members:
        roles.append(("shadow", members))
    if "distillation" in exp.attacks:
        size = exp.distill_size or min(exp.n_population, members)
        if exp.n_population // 2 <= size:
            roles.append(("distilled", size))
    for role, size in roles:
        out.append(
            f"sizes.n_population: every {role} model trains on the same {size} population "
            f"records (the {role} models draw {size} from max({size}, n_population // 2 = "
            f"{exp.n_population // 2}) records), so they differ only by seed where Ye et al. "
            f"draw each from the population at random; give at least {4 * size} population "
            "records for distinct training sets"
        )
    return out


def _warnings(
    config: AuditConfig,
    exp: ExperimentConfig,
    members: tuple[int, int] | None,
    *,
    provided: bool = False,
) -> list[str]:
    out: list[str] = []
    hi = exp.n_target_pool // 2 if members is None else members[1]
    non_members = exp.n_target_pool - hi
    if provided:  # the auditor's split: the non-members file (or argument) says how many
        where = (
            "target.non_members: the split"
            if config.target is not None
            else "non_members: the split"
        )
    else:
        where = "sizes.n_target_pool: the pool"
    if non_members < _MIN_NON_MEMBERS_FOR_TPR:
        out.append(
            f"{where} has {non_members} non-members, too few for any "
            f"TPR at a low FPR (TPR at 1% FPR needs >= {_MIN_NON_MEMBERS_FOR_TPR}, at 0.1% "
            f">= 1000); the summary shows only AUC and the alpha-threshold FPR"
        )
    cores = available_cores()
    if config.executor == "local" and config.n_jobs > cores:
        out.append(
            f"n_jobs: {config.n_jobs} worker processes on {cores} cores; each gets one "
            "thread, but the processes still share the cores (use n_jobs <= cores)"
        )
    return out
