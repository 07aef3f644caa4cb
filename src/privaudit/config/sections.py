"""The config sections every command shares: the dataset, the model, the generators' parameters.

:class:`DatasetConfig` (a bundled dataset or a user table) and :class:`ModelConfig` (a
scikit-learn classifier with :data:`MODEL_DEFAULTS`, or a torch recipe through
:func:`torch_recipe`) are read by ``audit.yaml`` (:mod:`privaudit.membership.config`) and by the
PANORAMIA, record-risk and language-model schemas; :data:`GENERATOR_PARAMS` by the two
that train tabular generators; :class:`LLMModelConfig` (a local Hugging Face model
directory) by the language-model and the PANORAMIA schemas. :mod:`privaudit.membership.config`
re-exports the first two.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from privaudit.config._estimator_params import estimator_param_names
from privaudit.config.base import ConfigError, StrictModel
from privaudit.errors import InvalidInputError

__all__ = [
    "BUILTIN_DATASETS",
    "GENERATOR_PARAMS",
    "MODEL_DEFAULTS",
    "MODEL_KINDS",
    "DatasetConfig",
    "LLMModelConfig",
    "ModelConfig",
    "build_estimator",
    "check_recipe_fields",
    "torch_recipe",
]

BUILTIN_DATASETS: tuple[str, ...] = ("adult", "digits", "mnist", "cifar10")
MODEL_KINDS: tuple[str, ...] = ("mlp", "logistic", "gradient_boosting", "random_forest", "torch")

#: Defaults of each model kind (merged under the user's ``params``). The MLP has no
#: weight decay (``alpha=0``) and no early stopping: the target is meant to fit its
#: training set as a typical overfit model does.
MODEL_DEFAULTS: dict[str, dict[str, Any]] = {
    "mlp": {
        "hidden_layer_sizes": (64,),
        "alpha": 0.0,
        "max_iter": 200,
        "early_stopping": False,
        "tol": 0.0,
        "n_iter_no_change": 1_000_000,
    },
    "logistic": {"C": 1.0, "max_iter": 2000},
    "gradient_boosting": {"max_iter": 200},
    "random_forest": {"n_estimators": 100, "n_jobs": 1},
}


class DatasetConfig(StrictModel):
    """Which data to audit on: a bundled dataset by name, or a user table by path."""

    name: Literal["adult", "digits", "mnist", "cifar10"] | None = Field(
        default=None,
        description=(
            "A bundled dataset: 'adult' (UCI Adult), 'digits', 'mnist' (6,000 images) or "
            "'cifar10' (6,102 images)."
        ),
    )
    path: Path | None = Field(default=None, description="A CSV, Parquet or .npz table.")
    label_column: str | None = Field(default=None, description="Column of class labels.")
    id_column: str | None = Field(default=None, description="Column of record ids.")
    standardize: bool = Field(default=False, description="Standardise numeric columns.")

    @model_validator(mode="before")
    @classmethod
    def _from_string(cls, v: Any) -> Any:
        if isinstance(v, str):
            if v in BUILTIN_DATASETS:
                return {"name": v}
            raise ValueError(
                f"expected one of {', '.join(map(repr, BUILTIN_DATASETS))} or a mapping "
                f"{{path: ..., label_column: ...}}, found {v!r}"
            )
        return v

    @model_validator(mode="after")
    def _one_source(self) -> DatasetConfig:
        if (self.name is None) == (self.path is None):
            raise ValueError(
                "expected exactly one of 'name' (adult, digits, mnist, cifar10) or 'path'"
            )
        if self.path is not None and not self.label_column:
            raise ValueError("expected 'label_column' with 'path'")
        if self.name is not None and (self.label_column or self.id_column):
            raise ValueError("'label_column' and 'id_column' apply to 'path' only")
        return self

    def describe(self) -> dict[str, Any]:
        """JSON-able description for ``results.json``."""
        if self.name is not None:
            return {"name": self.name}
        return {
            "path": str(self.path),
            "label_column": self.label_column,
            "id_column": self.id_column,
            "standardize": self.standardize,
        }


class ModelConfig(StrictModel):
    """The target's learning algorithm (reference/shadow models use the same)."""

    kind: Literal["mlp", "logistic", "gradient_boosting", "random_forest", "torch"]
    params: dict[str, Any] = Field(
        default_factory=dict,
        description=(
            "Estimator parameters, over the kind's defaults; for 'torch' the training "
            "recipe (factory 'module:function' or 'file.py:function', factory_kwargs, "
            "optimizer, lr, lr_schedule, momentum, weight_decay, epochs, batch_size, loss, "
            "augmentation, input_shape, max_shift, device)."
        ),
    )

    @field_validator("params")
    @classmethod
    def _params_exist(cls, v: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        kind = info.data.get("kind")
        if kind is None:  # kind itself is invalid; reported there
            return v
        if kind == "torch":
            torch_recipe(v)  # raises ValueError naming the bad field
            return v
        read = estimator_param_names(kind)  # without importing scikit-learn (~1.4 s)
        if read is None:
            cls_ = _estimator_class(kind)
            name, valid = cls_.__name__, set(cls_().get_params(deep=False))
        else:
            name, valid = read[0], set(read[1])
        bad = sorted(set(v) - valid)
        if bad:
            raise ValueError(
                f"expected parameters of {name} ({', '.join(sorted(valid - {'random_state'}))}); "
                f"found unknown {', '.join(map(repr, bad))}"
            )
        if "random_state" in v:
            raise ValueError("expected no 'random_state' (it is derived from the audit's seed)")
        return v

    def estimator_params(self) -> dict[str, Any]:
        """The kind's defaults overridden by ``params`` (lists become tuples)."""
        if self.kind == "torch":
            raise InvalidInputError("model: a torch recipe has no scikit-learn estimator")
        p = {**MODEL_DEFAULTS[self.kind], **self.params}
        return {k: tuple(v) if isinstance(v, list) else v for k, v in p.items()}


def _estimator_class(kind: str) -> Any:
    if kind == "mlp":
        from sklearn.neural_network import MLPClassifier

        return MLPClassifier
    if kind == "logistic":
        from sklearn.linear_model import LogisticRegression

        return LogisticRegression
    if kind == "gradient_boosting":
        from sklearn.ensemble import HistGradientBoostingClassifier

        return HistGradientBoostingClassifier
    if kind == "random_forest":
        from sklearn.ensemble import RandomForestClassifier

        return RandomForestClassifier
    raise InvalidInputError(f"model.kind: expected one of {', '.join(MODEL_KINDS)}, found {kind!r}")


def check_recipe_fields(
    recipe: type, params: Mapping[str, Any], what: str, *, set_elsewhere: Sequence[str] = ()
) -> None:
    """Raise ``ValueError`` naming the keys of ``params`` that are not fields of the
    dataclass ``recipe`` (those in ``set_elsewhere`` come from the audit, not the user)."""
    fields = {f.name for f in dataclasses.fields(recipe)} - set(set_elsewhere)
    bad = sorted(set(params) - fields)
    if bad:
        raise ValueError(
            f"expected {what} fields ({', '.join(sorted(fields))}); found unknown "
            f"{', '.join(map(repr, bad))}"
        )


def torch_recipe(params: dict[str, Any], base_dir: str | Path | None = None) -> Any:
    """The :class:`~privaudit.models.torch_recipe.TorchRecipe` of a ``torch`` model's params.

    Validated without importing torch; raises ``ValueError`` naming the bad field.
    """
    from privaudit.models.torch_recipe import TorchRecipe

    check_recipe_fields(TorchRecipe, params, "torch recipe", set_elsewhere=("base_dir",))
    if "factory" not in params:
        raise ValueError("expected 'factory' ('package.module:function' or 'file.py:function')")
    kw = dict(params)
    if isinstance(kw.get("input_shape"), list):
        kw["input_shape"] = tuple(kw["input_shape"])
    try:
        return TorchRecipe(**kw, base_dir=None if base_dir is None else str(base_dir))
    except InvalidInputError as exc:
        raise ValueError(str(exc)) from None


def build_estimator(model: ModelConfig) -> Any:
    """An unfitted scikit-learn classifier for ``model`` (``gradient_boosting`` is
    ``HistGradientBoostingClassifier``)."""
    return _estimator_class(model.kind)(**model.estimator_params())


#: Parameters each built-in generator accepts (privaudit.generators.make_generator).
GENERATOR_PARAMS: dict[str, tuple[str, ...]] = {
    "baynet": ("degree",),
    "privbayes": ("degree", "epsilon", "beta", "theta"),
    "cart": ("min_samples_leaf",),
}


class LLMModelConfig(StrictModel):
    """A local Hugging Face model directory (optionally one GGUF file inside it)."""

    kind: Literal["huggingface"] = Field(
        default="huggingface", description="huggingface: a local Hugging Face model directory."
    )
    path: Path = Field(description="The model directory (config + weights + tokenizer).")
    gguf_file: str | None = Field(
        default=None, description="Name of a GGUF file inside 'path' (de-quantised on load)."
    )

    @field_validator("gguf_file")
    @classmethod
    def _plain_name(cls, v: str | None) -> str | None:
        if v is not None and (not v or Path(v).name != v):
            raise ValueError("expected a file name inside 'path' (no directories)")
        return v

    def check_exists(self, field: str) -> None:
        """Raise ConfigError naming ``field`` when the directory (or GGUF file) is missing."""
        if not self.path.is_dir():
            raise ConfigError(
                f"{field}.path: expected a local Hugging Face model directory, found "
                f"{'a file' if self.path.exists() else 'nothing'} at {self.path} "
                "(models are never downloaded)"
            )
        if self.gguf_file is not None and not (self.path / self.gguf_file).is_file():
            raise ConfigError(
                f"{field}.gguf_file: expected a file in {self.path}, found no {self.gguf_file}"
            )

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "path": str(self.path)}
        if self.gguf_file is not None:
            out["gguf_file"] = self.gguf_file
        return out
