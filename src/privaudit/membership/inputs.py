"""What the membership audit reads before it audits: the dataset, a provided target, the trainer.

The dataset and the trainer of the config's sections come from :mod:`privaudit.config.build`
(shared with PANORAMIA and record-level risk, re-exported here); this module adds a provided
target (``target`` section of ``audit.yaml``) with its split and population, checked before
the model file is opened.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privaudit.config.build import (
    build_trainer,
    load_dataset,
    provided_torch_recipe,
    table_with_member_column,
)
from privaudit.data import (
    Dataset,
    append_records,
    encode_like,
)
from privaudit.data.tables import read_frame
from privaudit.errors import InvalidInputError
from privaudit.membership.config import AuditConfig, TargetConfig
from privaudit.models.provided import (
    ProvidedSplit,
    ProvidedTarget,
    file_sha256,
    load_target_model,
    match_ids,
    read_id_file,
)
from privaudit.runtime.seeds import derive_rng

__all__ = [
    "GivenInputs",
    "build_trainer",
    "check_feature_names",
    "load_dataset",
    "load_dataset_and_target",
    "load_provided_target",
    "provided_torch_recipe",
    "read_provided_split",
    "table_with_member_column",
]


@dataclasses.dataclass(frozen=True)
class GivenInputs:
    """What an audit reads from its config's ``dataset``, ``target`` and ``model`` sections,
    given as Python objects instead (:func:`privaudit.audit_model`).

    :func:`privaudit.membership.pipeline.run_given_audit` runs the pipeline of
    ``privaudit run`` on them, with a config whose ``dataset``, ``model`` and ``target``
    are None.

    Attributes
    ----------
    dataset : Dataset
        Every record: the audited ones and the attacker's population.
    target : ProvidedTarget
        The trained model with its split (members, non-members, population) and where
        the reference models train.
    trainer : Trainer
        The recipe every attacker model is trained with (e.g. a
        :class:`~privaudit.models.SklearnTrainer` of a clone of the target's estimator).
    dataset_description : dict
        ``results.json["settings"]["dataset"]`` (before the counts and fingerprint).
    model_kind : str
        ``results.json["settings"]["model"]["kind"]`` and the model in messages.
    """

    dataset: Dataset
    target: ProvidedTarget
    trainer: Any
    dataset_description: dict[str, Any]
    model_kind: str

    @property
    def split(self) -> ProvidedSplit:
        """The target's split, as :func:`read_provided_split` gives one from files."""
        t = self.target
        return ProvidedSplit(t.member_ids, t.non_member_ids, t.population_ids)


def load_dataset_and_target(config: AuditConfig) -> tuple[Dataset, ProvidedTarget | None]:
    """The dataset and, with a ``target`` section, the provided target and its split.

    :func:`read_provided_split` then :func:`load_provided_target` (the membership
    pipeline checks the split's sizes between the two, before the model file is opened).
    """
    if config.target is None:
        return load_dataset(config), None
    dataset, split = read_provided_split(config)
    return dataset, load_provided_target(config, dataset, split)


def read_provided_split(config: AuditConfig) -> tuple[Dataset, ProvidedSplit]:
    """The dataset and a provided target's split, read from the user's files (no model).

    Steps: the audited ids (id files, or ``target.member_column`` read from the dataset
    table and removed from the features); the population (an id file and/or
    ``target.population_table`` appended to the dataset); every id checked against the
    dataset; the population drawn down to ``sizes.n_population``. Reading ids and rows
    only, it takes about as long as reading the table.
    """
    t = config.target
    if t is None:
        raise InvalidInputError("target: expected a target section (a provided model)")
    dataset, members, non_members = _audited_ids(config, t)
    dataset, population = _population_ids(dataset, t, np.concatenate([members, non_members]))
    for what, ids in (
        ("members", members),
        ("non_members", non_members),
        ("population", population),
    ):
        if ids is not None:
            try:
                dataset.positions(ids)
            except InvalidInputError as exc:
                raise InvalidInputError(f"target.{what}: {exc}") from None
    try:
        split = ProvidedSplit(
            members,
            non_members,
            _sized_population(config, dataset, population, members, non_members),
        )
    except InvalidInputError as exc:
        raise InvalidInputError(f"target ({_membership_source(t)}): {exc}") from None
    return dataset, split


def load_provided_target(
    config: AuditConfig, dataset: Dataset, split: ProvidedSplit
) -> ProvidedTarget:
    """The provided target of ``config.target``: its model loaded safely
    (:func:`~privaudit.models.provided.load_target_model`) with the split of
    :func:`read_provided_split`."""
    t = config.target
    if t is None:
        raise InvalidInputError("target: expected a target section (a provided model)")
    recipe = (
        provided_torch_recipe(t, config.model, config.config_dir) if t.kind == "torch" else None
    )
    model = load_target_model(
        t.kind,
        t.path,
        n_classes=dataset.n_classes,
        recipe=recipe,
        trusted_types=t.trusted_types,
        precomputed_n_classes=t.n_classes,
    )
    check_feature_names(model, dataset, field="target.path")
    return ProvidedTarget(
        model=model,
        member_ids=split.member_ids,
        non_member_ids=split.non_member_ids,
        population_ids=split.population_ids,
        references=t.references,
        accuracy_tolerance=t.accuracy_tolerance,
        fingerprint=file_sha256(t.path),
        description=t.describe(),
        randomised_split=t.randomised_split,
    )


def check_feature_names(model: Any, dataset: Dataset, *, field: str) -> None:
    """A model fitted on a DataFrame (``feature_names_in_``) was fitted on the dataset's
    features, in the dataset's order: privaudit queries it with those columns
    (:class:`~privaudit.models.SklearnModel`), so a model fitted on other columns, or on
    the same in another order, would read the wrong values.

    Raises
    ------
    InvalidInputError
        Naming ``field``, the first differing column and both counts.
    """
    names = getattr(model, "feature_names", None)
    if names is None:
        return
    want = tuple(dataset.feature_names)
    if tuple(names) == want:
        return
    if sorted(names) == sorted(want):
        k = next(i for i, (a, b) in enumerate(zip(names, want, strict=True)) if a != b)
        raise InvalidInputError(
            f"{field}: expected a model fitted on the dataset's columns in the dataset's "
            f"order, found the same {len(want)} columns in another order (column {k + 1}: "
            f"{names[k]!r} in the model, {want[k]!r} in the dataset); refit it on the "
            "columns in the table's order"
        )
    missing = [c for c in want if c not in names]
    extra = [c for c in names if c not in want]
    raise InvalidInputError(
        f"{field}: expected a model fitted on the dataset's {len(want)} feature columns "
        f"(as privaudit encodes the table: numeric columns as they are, categorical ones "
        f"one-hot as 'column=value'), found a model fitted on {len(names)} columns"
        + (f"; not in the model: {missing[:5]}" if missing else "")
        + (f"; not in the dataset: {extra[:5]}" if extra else "")
    )


def _membership_source(t: TargetConfig) -> str:
    if t.member_column is not None:
        return f"member_column {t.member_column!r}"
    return f"members {Path(str(t.members)).name}, non_members {Path(str(t.non_members)).name}"


def _audited_ids(
    config: AuditConfig, t: TargetConfig
) -> tuple[Dataset, NDArray[Any], NDArray[Any]]:
    """The dataset and the provided target's member and non-member ids: from the dataset
    table's ``member_column`` (removed from the features) or from the two id files."""
    if t.member_column is not None:
        return table_with_member_column(
            config.dataset_section(), t.member_column, field="target.member_column"
        )
    dataset = load_dataset(config)
    members = match_ids(read_id_file(t.members, "target.members"), dataset.record_ids)
    non_members = match_ids(read_id_file(t.non_members, "target.non_members"), dataset.record_ids)
    return dataset, members, non_members


def _population_ids(
    dataset: Dataset, t: TargetConfig, audited: NDArray[Any]
) -> tuple[Dataset, NDArray[Any] | None]:
    """The attacker's population as given: ``target.population`` (an id file) and/or
    ``target.population_table`` (appended to the dataset); None when neither is given."""
    population = None
    if t.population is not None:
        population = match_ids(read_id_file(t.population, "target.population"), dataset.record_ids)
    if t.population_table is not None:
        dataset, population = _with_population_table(
            dataset, t.population_table, t.member_column, audited
        )
    return dataset, population


def _sized_population(
    config: AuditConfig,
    dataset: Dataset,
    population: NDArray[Any] | None,
    members: NDArray[Any],
    non_members: NDArray[Any],
) -> NDArray[Any] | None:
    """The population drawn down to ``sizes.n_population`` (seeded) when that size is set
    and no id file fixed it: from the population table, else from the records outside
    the audited set."""
    t = config.target
    n_population = config.sizes.n_population
    if n_population is None or not (
        population is None
        or (t is not None and t.population_table is not None and population.size > n_population)
    ):
        return population
    rest = (
        population
        if population is not None
        else dataset.record_ids[
            ~np.isin(dataset.record_ids, np.concatenate([members, non_members]))
        ]
    )
    k = min(n_population, rest.size)
    rng = derive_rng(config.seed, purpose="provided-population")
    return rest[np.sort(rng.choice(rest.size, size=k, replace=False))]


def _with_population_table(
    dataset: Dataset, path: Path, member_column: str | None, audited: NDArray[Any]
) -> tuple[Dataset, NDArray[Any]]:
    """The dataset with the records of ``target.population_table`` appended (encoded as the
    dataset table was, :func:`privaudit.data.tables.encode_like`), and their ids."""
    try:
        frame = read_frame(path)
        pop = encode_like(
            frame,
            dataset,
            name="population",
            drop=[member_column] if member_column else [],
            source=f"file {Path(path).name}",
        )
    except InvalidInputError as exc:
        text = str(exc).removeprefix("path: ")
        raise InvalidInputError(f"target.population_table: {text}") from None
    clash = np.intersect1d(pop.record_ids, audited)
    if clash.size:
        raise InvalidInputError(
            f"target.population_table: expected ids outside the audited set (members and "
            f"non-members), found {clash.size} audited, e.g. {clash[:5].tolist()}"
        )
    try:
        merged = append_records(dataset, pop)
    except InvalidInputError as exc:
        raise InvalidInputError(
            f"target.population_table: {exc} (population records must be new records)"
        ) from None
    return merged, pop.record_ids
