"""What a config section builds: the dataset it names and the trainer of a model section.

Shared by every procedure that reads ``dataset:`` and ``model:`` sections (the membership
audit, PANORAMIA, record-level risk): the bundled Adult, digits, MNIST or CIFAR-10, or a user table;
a table's membership column; the scikit-learn or torch trainer of a model section; the
recipe that builds a provided torch target's module.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from numpy.typing import NDArray

from privaudit._validation import fail
from privaudit.config.sections import DatasetConfig, ModelConfig, build_estimator, torch_recipe
from privaudit.data import Dataset, load_adult, load_digits, load_table, table_from_frame
from privaudit.data.cifar10 import load_cifar10
from privaudit.data.mnist import load_mnist
from privaudit.data.tables import read_frame
from privaudit.errors import InvalidInputError
from privaudit.models import SklearnTrainer
from privaudit.models.provided import membership_from_column
from privaudit.models.torch_models import TorchTrainer

__all__ = ["build_trainer", "load_dataset", "provided_torch_recipe", "table_with_member_column"]


def load_dataset(config: Any) -> Dataset:
    """The dataset named by a :class:`DatasetConfig`, or by the ``dataset`` section of a
    config (e.g. :class:`~privaudit.membership.config.AuditConfig`)."""
    ds = config if isinstance(config, DatasetConfig) else config.dataset
    if ds.name == "adult":
        return load_adult()
    if ds.name == "digits":
        return load_digits()
    if ds.name == "mnist":
        return load_mnist()
    if ds.name == "cifar10":
        return load_cifar10()
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
