"""What every pipeline reads before it audits: the dataset, a provided target and the trainer.

Shared by the membership audit (:mod:`privaudit.pipeline`), PANORAMIA
(:mod:`privaudit.panoramia_pipeline`) and ``privaudit record-risk``: the dataset named by a
config (bundled Adult, digits, MNIST, or a user table), a table's membership column, a
provided target with its split and population (``target`` section), and the trainer of
a model section (scikit-learn, or a torch recipe).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import fail
from privaudit.config import (
    AuditConfig,
    DatasetConfig,
    ModelConfig,
    TargetConfig,
    build_estimator,
    torch_recipe,
)
from privaudit.data import (
    Dataset,
    append_records,
    encode_like,
    load_adult,
    load_digits,
    load_table,
    table_from_frame,
)
from privaudit.data.mnist import load_mnist
from privaudit.data.tables import read_frame
from privaudit.errors import InvalidInputError
from privaudit.games.provided import (
    ProvidedTarget,
    file_sha256,
    load_target_model,
    match_ids,
    membership_from_column,
    read_id_file,
)
from privaudit.models import SklearnTrainer
from privaudit.models.torch_models import TorchTrainer
from privaudit.runtime.seeds import derive_rng

__all__ = [
    "build_trainer",
    "load_dataset",
    "load_dataset_and_target",
    "provided_torch_recipe",
    "table_with_member_column",
]


def load_dataset(config: AuditConfig | DatasetConfig) -> Dataset:
    """The dataset named by ``config.dataset`` (or by a :class:`DatasetConfig` itself)."""
    ds = config if isinstance(config, DatasetConfig) else config.dataset
    if ds.name == "adult":
        return load_adult()
    if ds.name == "digits":
        return load_digits()
    if ds.name == "mnist":
        return load_mnist()
    if ds.path is None or ds.label_column is None:  # DatasetConfig already ensures it
        raise InvalidInputError("dataset: expected 'name' or 'path' with 'label_column'")
    try:
        return load_table(
            ds.path, ds.label_column, id_column=ds.id_column, standardize=ds.standardize
        )
    except InvalidInputError as exc:  # name the config section the problem is in
        text = str(exc)
        if text.startswith("path: "):
            text = "dataset.path: " + text[len("path: ") :]
        elif text.startswith(("label_column: ", "id_column: ")):
            text = "dataset." + text
        else:
            text = f"dataset ({ds.path.name}): {text}"
        raise InvalidInputError(text) from None


def build_trainer(
    model: ModelConfig, n_classes: int, *, config_dir: Path | None = None
) -> SklearnTrainer | TorchTrainer:
    """The trainer of the target and of every attacker model (same algorithm, Ye et al. Sec. 4).

    ``kind: torch`` gives a :class:`~privaudit.models.torch_models.TorchTrainer` of the
    recipe in ``params`` (a relative ``file.py`` factory resolved against ``config_dir``).
    """
    if model.kind == "torch":
        return TorchTrainer(torch_recipe(model.params, config_dir), n_classes=n_classes)
    return SklearnTrainer(build_estimator(model), name=model.kind, n_classes=n_classes)


def provided_torch_recipe(target: Any, model: ModelConfig | None, config_dir: Path | None) -> Any:
    """The recipe that builds a provided torch target's module: the ``factory`` (and
    ``factory_kwargs``) of the target section, else the torch recipe's, with its
    ``input_shape`` and ``device`` (``target`` is a ``TargetConfig`` or a PANORAMIA target)."""
    params = dict(model.params) if model is not None and model.kind == "torch" else {}
    if target.factory:
        params["factory"] = target.factory
    if target.factory_kwargs is not None:
        params["factory_kwargs"] = target.factory_kwargs
    params = {
        k: v
        for k, v in params.items()
        if k in ("factory", "factory_kwargs", "input_shape", "device")
    }
    return torch_recipe(params, config_dir)


def table_with_member_column(
    ds_cfg: DatasetConfig, column: str, *, field: str
) -> tuple[Dataset, NDArray[Any], NDArray[Any]]:
    """The dataset table without its membership ``column``, and the member and non-member
    ids the column marks (1/true, 0/false; empty: neither)."""
    if ds_cfg.path is None or ds_cfg.label_column is None:  # checked by the configs
        raise InvalidInputError(f"{field}: needs a dataset table")
    frame = read_frame(ds_cfg.path)
    if column not in frame.columns:
        raise fail(field, "a column of the dataset table", repr(column))
    marks = frame[column].to_numpy()
    dataset = table_from_frame(
        frame.drop(columns=[column]),
        ds_cfg.label_column,
        name=Path(ds_cfg.path).name.split(".")[0],
        id_column=ds_cfg.id_column,
        standardize=ds_cfg.standardize,
        source=f"file {Path(ds_cfg.path).name}",
    )
    members, non_members = membership_from_column(marks, dataset.record_ids)
    return dataset, members, non_members


def load_dataset_and_target(config: AuditConfig) -> tuple[Dataset, ProvidedTarget | None]:
    """The dataset and, with a ``target`` section, the provided target and its split.

    Steps: the audited ids (id files, or ``target.member_column`` read from the dataset
    table and removed from the features); the population (an id file and/or
    ``target.population_table`` appended to the dataset); every id checked against the
    dataset; the population drawn down to ``sizes.n_population``; the model loaded
    safely (:func:`~privaudit.games.provided.load_target_model`).
    """
    t = config.target
    if t is None:
        return load_dataset(config), None
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
    provided = ProvidedTarget(
        model=model,
        member_ids=members,
        non_member_ids=non_members,
        population_ids=_sized_population(config, dataset, population, members, non_members),
        references=t.references,
        accuracy_tolerance=t.accuracy_tolerance,
        fingerprint=file_sha256(t.path),
        description=t.describe(),
    )
    return dataset, provided


def _audited_ids(
    config: AuditConfig, t: TargetConfig
) -> tuple[Dataset, NDArray[Any], NDArray[Any]]:
    """The dataset and the provided target's member and non-member ids: from the dataset
    table's ``member_column`` (removed from the features) or from the two id files."""
    if t.member_column is not None:
        return table_with_member_column(
            config.dataset, t.member_column, field="target.member_column"
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
