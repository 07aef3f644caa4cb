"""The schema of a PANORAMIA audit config (``privaudit panoramia CONFIG.yaml``).

PANORAMIA (Kazmi et al., NeurIPS 2024, Sec. 3) audits a *released* model without retraining
it and without real non-members: a generator trained on part of the auditor's known members
makes the non-members, an MIA on (x, loss of the target) is compared with a baseline on
(x, loss of a helper model trained like the target on synthetic data). Example (tabular)::

    modality: tabular                     # tabular | image | text
    target:                               # the released model
      kind: sklearn                       # sklearn (.skops) | torch (.safetensors/.pt) | huggingface
      path: target.skops
    model:                                # the recipe the target was trained with (helper model h)
      kind: mlp
      params: {hidden_layer_sizes: [64], max_iter: 200}
    data:
      dataset: adult                      # adult | mnist | digits | {path: t.csv, label_column: y, id_column: id}
      members: members.txt                # ids of KNOWN members (a subset of the training data)
      # member_column: member             # or a column of the table: 1 known member, 0 real
      #                                   # non-member, empty = not used
      non_members: non_members.txt        # optional real non-members: the RM;RN and O(1) comparisons
    generator: {kind: cart, n_bins: 8}
    sizes: {generator_fraction: 0.5, synthetic_per_member: 2.0}   # games.panoramia.PanoramiaSizes
    seed: 0
    confidence: 0.95
    output_dir: panoramia-report
    cache_dir: null                       # default <output_dir>/cache: a killed run resumes
    executor: local                       # local | ray: the MIA and baseline classifiers as 2 tasks

``model`` reuses the classifier audit's :class:`~privaudit.membership.config.ModelConfig` (a
scikit-learn kind or ``kind: torch`` with a torch recipe); ``target`` loads the model as a
provided target of ``privaudit run`` does (:func:`privaudit.models.provided.load_target_model`:
skops with a trust list, safetensors, ``torch.load(weights_only=True)``; never pickle).
An image audit takes a ``torch`` target and recipe; a text audit a ``huggingface`` target
(a local directory, or a GGUF file in it), the ``base`` model it was fine-tuned from and the
fine-tuning recipe ``finetune`` (:class:`~privaudit.models.lm_finetune.FineTuneRecipe`
fields). The generator section holds the settings of the chosen modality only (tabular:
``kind``, ``params``, ``n_bins``; image: ``vae``; text: ``top_k``, ``max_new_tokens``,
``prompt_fraction``, ``prompt_chars``, ``min_chars``, ``max_chars``, ``temperature``,
``start_after``). A
modality whose game module is not installed is refused by name (:func:`available_modalities`).

Unknown keys are rejected; every problem is one :class:`~privaudit.membership.config.ConfigError`
naming the field (``generator.n_bins: ...``) so that the CLI exits 2 before any work.
Relative paths resolve against the YAML file's folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from privaudit.config.base import ConfigError, NJobs, StrictModel, read_yaml, validate_mapping
from privaudit.config.executor import (
    ExecutorKind,
    RayAddress,
    RayGpusPerTask,
    check_ray_address,
)
from privaudit.config.sections import (
    GENERATOR_PARAMS,
    DatasetConfig,
    LLMModelConfig,
    ModelConfig,
    check_recipe_fields,
    torch_recipe,
)

__all__ = [
    "MODALITIES",
    "MODALITY_MODULES",
    "ImageGeneratorConfig",
    "PanoramiaConfig",
    "PanoramiaDataConfig",
    "PanoramiaSizesConfig",
    "PanoramiaTargetConfig",
    "TabularGeneratorConfig",
    "TextGeneratorConfig",
    "available_modalities",
    "load_panoramia_config",
    "panoramia_config_from_dict",
]

MODALITIES: tuple[str, ...] = ("tabular", "image", "text")
#: The module of each modality's game (:mod:`privaudit.panoramia.tabular`, ``.image``, ``.text``).
MODALITY_MODULES: dict[str, str] = {
    "tabular": "privaudit.panoramia.tabular",
    "image": "privaudit.panoramia.image",
    "text": "privaudit.panoramia.text",
}


def available_modalities() -> tuple[str, ...]:
    """The modalities whose game is installed (the config refuses the others, naming them)."""
    import importlib.util

    return tuple(m for m in MODALITIES if importlib.util.find_spec(MODALITY_MODULES[m]) is not None)


#: Target kinds each modality accepts.
TARGET_KINDS: dict[str, tuple[str, ...]] = {
    "tabular": ("sklearn", "torch"),
    "image": ("torch",),
    "text": ("huggingface",),
}
#: The bundled text corpus (``data.texts: tiny-shakespeare``).
TINY_SHAKESPEARE = "tiny-shakespeare"


class PanoramiaTargetConfig(StrictModel):
    """The released target model, loaded without running its code."""

    kind: Literal["sklearn", "torch", "huggingface"] = Field(
        description="sklearn (skops file), torch (safetensors / .pt state dict + factory), "
        "huggingface (a local model directory, optionally a GGUF file in it)."
    )
    path: Path = Field(description="The model file (sklearn, torch) or directory (huggingface).")
    factory: str | None = Field(
        default=None,
        description="torch: 'module:function' or 'file.py:function' building the module "
        "(default: the recipe's).",
    )
    factory_kwargs: dict[str, Any] | None = Field(
        default=None, description="torch: factory arguments (default: the recipe's)."
    )
    trusted_types: list[str] = Field(
        default_factory=list, description="sklearn: extra types trusted in the skops file."
    )
    gguf_file: str | None = Field(
        default=None, description="huggingface: a GGUF file inside 'path' (de-quantised on load)."
    )

    @model_validator(mode="after")
    def _fields_of_kind(self) -> PanoramiaTargetConfig:
        if self.kind != "torch" and (self.factory or self.factory_kwargs):
            raise ValueError("'factory' and 'factory_kwargs' apply to kind 'torch' only")
        if self.kind != "sklearn" and self.trusted_types:
            raise ValueError("'trusted_types' applies to kind 'sklearn' only")
        if self.kind != "huggingface" and self.gguf_file is not None:
            raise ValueError("'gguf_file' applies to kind 'huggingface' only")
        return self

    def as_lm(self) -> LLMModelConfig:
        """The huggingface target as an :class:`~privaudit.config.sections.LLMModelConfig`."""
        return LLMModelConfig(path=self.path, gguf_file=self.gguf_file)

    def describe(self) -> dict[str, Any]:
        """JSON-able description for ``results.json``."""
        out: dict[str, Any] = {"kind": self.kind, "path": str(self.path)}
        for k in ("factory", "gguf_file"):
            if getattr(self, k) is not None:
                out[k] = getattr(self, k)
        return out


class PanoramiaDataConfig(StrictModel):
    """The auditor's records: a table (tabular, image) or texts, and who is a known member."""

    dataset: DatasetConfig | None = Field(
        default=None,
        description=(
            "tabular / image: adult | digits | mnist | cifar10, or {path, label_column, id_column}."
        ),
    )
    texts: str | None = Field(
        default=None,
        description="text: 'tiny-shakespeare' (bundled) or a JSONL file (id, text, member, "
        "[document]; member true = known member, false = real non-member).",
    )
    members: Path | None = Field(
        default=None,
        description="File of the ids of KNOWN members (one per line): records the target was "
        "trained on.",
    )
    member_column: str | None = Field(
        default=None,
        description="A column of the dataset table: 1/true known member, 0/false real "
        "non-member, empty not used.",
    )
    non_members: Path | None = Field(
        default=None,
        description="Optional file of ids of real non-members (records the target was not "
        "trained on): enables the RM;RN and O(1) comparisons.",
    )

    @model_validator(mode="after")
    def _one_membership_source(self) -> PanoramiaDataConfig:
        if (self.dataset is None) == (self.texts is None):
            raise ValueError("expected exactly one of 'dataset' (tabular, image) or 'texts'")
        if self.members is not None and self.member_column is not None:
            raise ValueError("expected either 'members' (an id file) or 'member_column', not both")
        if self.member_column is not None and (self.dataset is None or self.dataset.path is None):
            raise ValueError("'member_column' needs a dataset table ('dataset.path')")
        if self.member_column is not None and self.non_members is not None:
            raise ValueError(
                "'non_members': with 'member_column' the real non-members are its 0/false rows"
            )
        jsonl = self.texts is not None and self.texts != TINY_SHAKESPEARE
        if self.dataset is not None or self.texts == TINY_SHAKESPEARE:
            if self.members is None and self.member_column is None:
                raise ValueError(
                    "expected the known members: 'members' (a file of ids) or "
                    "'member_column' (a column of the table)"
                )
        elif jsonl and (self.members is not None or self.non_members is not None):
            raise ValueError(
                "a JSONL of texts names its members in its 'member' field; drop "
                "'members' / 'non_members'"
            )
        return self

    def describe(self) -> dict[str, Any]:
        """JSON-able description for ``results.json`` (``settings.dataset``)."""
        out: dict[str, Any] = (
            self.dataset.describe() if self.dataset is not None else {"texts": self.texts}
        )
        for k in ("members", "member_column", "non_members"):
            v = getattr(self, k)
            if v is not None:
                out[k] = str(v)
        return out


class TabularGeneratorConfig(StrictModel):
    """The tabular generator (:mod:`privaudit.generators`), fitted on discretised codes."""

    kind: Literal["baynet", "privbayes", "cart"] = Field(
        default="cart",
        description="cart (default: its records are not detected through the target, "
        "bench_panoramia.py --null-check) | baynet | privbayes.",
    )
    params: dict[str, Any] = Field(default_factory=dict, description="Generator parameters.")
    n_bins: Annotated[int, Field(ge=2, le=256)] | None = Field(
        default=None, description="Bins of each numeric column (default: the modality's)."
    )

    @model_validator(mode="after")
    def _params_of_kind(self) -> TabularGeneratorConfig:
        bad = sorted(set(self.params) - set(GENERATOR_PARAMS[self.kind]))
        if bad:
            raise ValueError(
                f"params: expected parameters of {self.kind} "
                f"({', '.join(GENERATOR_PARAMS[self.kind])}); found unknown "
                f"{', '.join(map(repr, bad))}"
            )
        if self.kind == "privbayes" and "epsilon" not in self.params:
            raise ValueError("params: expected 'epsilon' for privbayes")
        return self


class ImageGeneratorConfig(StrictModel):
    """The class-conditional convolutional VAE of the image modality."""

    vae: dict[str, Any] | None = Field(
        default=None,
        description="VAE settings (latent size, epochs, ...; default: the modality's).",
    )


class TextGeneratorConfig(StrictModel):
    """The text generator: the base LM fine-tuned on D_G, sampled top-k from held-out prompts."""

    top_k: Annotated[int, Field(ge=1)] | None = None
    max_new_tokens: Annotated[int, Field(ge=1)] | None = None
    prompt_fraction: Annotated[float, Field(gt=0.0, lt=1.0)] | None = None
    prompt_chars: Annotated[int, Field(ge=1)] | None = None
    min_chars: Annotated[int, Field(ge=1)] | None = None
    max_chars: Annotated[int, Field(ge=1)] | None = None
    temperature: Annotated[float, Field(gt=0.0)] | None = None
    start_after: Annotated[str, Field(min_length=1)] | None = Field(
        default=None,
        description="A synthetic text starts after the first occurrence of this string in its "
        "continuation (e.g. a blank line, when every real text opens a paragraph or a speech).",
    )

    @model_validator(mode="after")
    def _lengths(self) -> TextGeneratorConfig:
        if (
            self.min_chars is not None
            and self.max_chars is not None
            and self.min_chars > self.max_chars
        ):
            raise ValueError("max_chars: expected at least min_chars")
        return self


_GENERATOR_CONFIGS: dict[str, type[BaseModel]] = {
    "tabular": TabularGeneratorConfig,
    "image": ImageGeneratorConfig,
    "text": TextGeneratorConfig,
}


class PanoramiaSizesConfig(StrictModel):
    """How the known members and the synthetic pool are split
    (:class:`privaudit.panoramia.game.PanoramiaSizes`; an unset field keeps its default)."""

    generator_fraction: Annotated[float, Field(gt=0.0, lt=1.0)] | None = Field(
        default=None, description="Known members that train the generator (D_G); the rest: D_in."
    )
    synthetic_per_member: Annotated[float, Field(gt=0.0, le=100.0)] | None = Field(
        default=None, description="Synthetic pool size, as a multiple of |D_in|."
    )
    helper_fraction: Annotated[float, Field(gt=0.0, lt=1.0)] | None = Field(
        default=None, description="Synthetic pool that trains the helper model h."
    )
    test_fraction: Annotated[float, Field(gt=0.0, lt=1.0)] | None = Field(
        default=None, description="Of D_in (and of D_out, paired): the coin-flip test slots."
    )
    val_fraction: Annotated[float, Field(gt=0.0, lt=1.0)] | None = Field(
        default=None, description="Of the classifiers' training part: validation (selection)."
    )

    def to_sizes(self) -> Any:
        """The :class:`~privaudit.panoramia.game.PanoramiaSizes` (defaults where unset)."""
        from privaudit.panoramia.game import PanoramiaSizes

        return PanoramiaSizes(**self.model_dump(exclude_none=True))


class PanoramiaConfig(StrictModel):
    """A PANORAMIA audit of a released model (module docstring)."""

    modality: Literal["tabular", "image", "text"]
    target: PanoramiaTargetConfig
    model: ModelConfig | None = Field(
        default=None,
        description="tabular / image: the recipe the target was trained with (the helper "
        "model h is trained with it on synthetic data).",
    )
    base: LLMModelConfig | None = Field(
        default=None, description="text: the base model the target was fine-tuned from."
    )
    finetune: dict[str, Any] | None = Field(
        default=None,
        description="text: the fine-tuning recipe of the target (FineTuneRecipe fields: "
        "steps, batch_size, learning_rate, weight_decay, warmup_steps, max_length, "
        "lora_rank, lora_alpha, stop_after).",
    )
    data: PanoramiaDataConfig
    generator: dict[str, Any] = Field(
        default_factory=dict, description="The generator settings of the chosen modality."
    )
    scorer: dict[str, Any] | None = Field(
        default=None,
        description="Settings of the MIA and baseline classifiers (tabular: "
        "HistGradientBoostingClassifier arguments; image / text: the networks'); default: the "
        "modality's.",
    )
    mia_reads_helper: bool = Field(
        default=False,
        description="The MIA also reads the helper's loss (after the target's), and so does "
        "RM;RN's classifier: its inputs then hold all of the baseline's. Default: the paper's "
        "MIA (x and the target's loss).",
    )
    sizes: PanoramiaSizesConfig = Field(default_factory=PanoramiaSizesConfig)
    seed: Annotated[int, Field(ge=0, lt=2**32)] = 0
    n_jobs: NJobs = 1
    executor: ExecutorKind = "local"
    ray_address: RayAddress = None
    ray_gpus_per_task: RayGpusPerTask = 1.0
    confidence: Annotated[float, Field(gt=0.0, lt=1.0)] = 0.95
    device: str = Field(default="auto", description="text: auto | cpu | cuda | cuda:N.")
    output_dir: Path = Path("privaudit-panoramia-report")
    cache_dir: Path | None = Field(
        default=None,
        description="Artifact store of the game (generated records, the helper's loss "
        "features, the classifiers' outputs): a killed run resumes. Default: <output_dir>/cache.",
    )
    config_dir: Path | None = Field(
        default=None,
        description="Directory of the YAML file (set by load_panoramia_config): a relative "
        "torch factory ('file.py:function') is resolved against it.",
    )

    @model_validator(mode="after")
    def _executor_fields(self) -> PanoramiaConfig:
        check_ray_address(self.executor, self.ray_address)
        return self

    @field_validator("device")
    @classmethod
    def _device(cls, v: str) -> str:
        if not (v in ("auto", "cpu", "cuda") or (v.startswith("cuda:") and v[5:].isdigit())):
            raise ValueError("expected auto, cpu, cuda or cuda:N")
        return v

    @field_validator("finetune")
    @classmethod
    def _finetune_fields(cls, v: dict[str, Any] | None) -> dict[str, Any] | None:
        if v is not None:
            finetune_recipe(v, seed=0)
        return v

    @model_validator(mode="after")
    def _fits_modality(self) -> PanoramiaConfig:
        m = self.modality
        available = available_modalities()
        if m not in available:
            raise ValueError(
                f"modality: {m!r} is not available in this version of privaudit (available: "
                f"{', '.join(available)})"
            )
        kinds = TARGET_KINDS[m]
        if self.target.kind not in kinds:
            raise ValueError(
                f"target.kind: expected {' or '.join(kinds)} for modality {m!r}, "
                f"found {self.target.kind!r}"
            )
        if m == "text":
            if self.data.texts is None:
                raise ValueError("data.texts: expected the texts for modality 'text'")
            if self.base is None:
                raise ValueError(
                    "base: expected the base model the target was fine-tuned from "
                    "({path: DIR}); the generator and the helper model are fine-tuned from it"
                )
            if self.model is not None:
                raise ValueError("model: a text audit takes 'finetune' (the recipe), not 'model'")
        else:
            if self.data.dataset is None:
                raise ValueError(f"data.dataset: expected a table for modality {m!r}")
            if self.model is None:
                raise ValueError(
                    "model: expected the recipe the target was trained with (the helper model "
                    "is trained with it), e.g. {kind: mlp, params: {...}}"
                )
            for k in ("base", "finetune"):
                if getattr(self, k) is not None:
                    raise ValueError(f"{k}: applies to modality 'text' only")
            if m == "image" and self.model.kind != "torch":
                raise ValueError("model.kind: expected torch (a TorchRecipe) for modality 'image'")
            if (
                self.target.kind == "torch"
                and self.model.kind != "torch"
                and not self.target.factory
            ):
                raise ValueError("target.factory: expected a factory for a torch target")
        try:
            _GENERATOR_CONFIGS[m].model_validate(self.generator)
        except ValidationError as exc:
            raise ValueError(_nested(exc, "generator", m)) from None
        return self

    def generator_config(self) -> Any:
        """The generator section as the modality's model (``TabularGeneratorConfig``, ...)."""
        return _GENERATOR_CONFIGS[self.modality].model_validate(self.generator)

    def finetune_recipe(self) -> Any:
        """text: the :class:`~privaudit.models.lm_finetune.FineTuneRecipe` (seed: the audit's)."""
        return finetune_recipe(self.finetune or {}, seed=self.seed)

    def check_paths(self) -> None:
        """Every local input exists (ConfigError naming the field otherwise)."""
        t = self.target
        if t.kind == "huggingface":
            t.as_lm().check_exists("target")
        elif not t.path.is_file():
            raise ConfigError(
                f"target.path: expected an existing model file, found no file at {t.path}"
            )
        if self.base is not None:
            self.base.check_exists("base")
        d = self.data
        for k in ("members", "non_members"):
            p = getattr(d, k)
            if p is not None and not p.is_file():
                raise ConfigError(
                    f"data.{k}: expected an existing file of record ids, found no file at {p}"
                )
        if d.texts is not None and d.texts != TINY_SHAKESPEARE and not Path(d.texts).is_file():
            raise ConfigError(
                f"data.texts: expected '{TINY_SHAKESPEARE}' or an existing JSONL file, found no "
                f"file at {d.texts}"
            )
        if d.dataset is not None and d.dataset.path is not None and not d.dataset.path.is_file():
            raise ConfigError(
                f"data.dataset.path: expected an existing table file, found no file at {d.dataset.path}"
            )


def _nested(exc: ValidationError, field: str, modality: str) -> str:
    """One line per problem of a nested model, each naming its dotted field."""
    lines = []
    for err in exc.errors(include_url=False):
        where = ".".join([field, *(str(p) for p in err["loc"])])
        msg = str(err["msg"]).removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = f"unknown field (not a {modality} generator setting)"
        found = err.get("input")
        shown = (
            ""
            if err["type"] == "extra_forbidden" or isinstance(found, dict | list)
            else f" (found {found!r})"
        )
        lines.append(f"{where}: {msg}{shown}")
    return "\n  ".join(lines)


def finetune_recipe(params: dict[str, Any], *, seed: int) -> Any:
    """The :class:`~privaudit.models.lm_finetune.FineTuneRecipe` of ``params`` (its fields but
    ``seed``, which comes from the audit); raises ``ValueError`` naming the bad field."""
    from privaudit.errors import InvalidInputError
    from privaudit.models.lm_finetune import FineTuneRecipe

    check_recipe_fields(FineTuneRecipe, params, "fine-tuning recipe", set_elsewhere=("seed",))
    try:
        return FineTuneRecipe(**params, seed=seed)
    except (InvalidInputError, TypeError) as exc:
        raise ValueError(str(exc)) from None


def panoramia_config_from_dict(data: Any, *, source: str = "config") -> PanoramiaConfig:
    """Validate a mapping (as read from YAML) into a :class:`PanoramiaConfig`.

    Raises
    ------
    ConfigError
        Naming every bad field by its dotted path.
    """
    return validate_mapping(PanoramiaConfig, data, source=source, what="PANORAMIA audit config")


def _resolved(cfg: PanoramiaConfig, base: Path) -> PanoramiaConfig:
    def rel(p: Path) -> Path:
        return p if p.is_absolute() else base / p

    t = cfg.target
    d = cfg.data
    data_up: dict[str, Any] = {
        k: rel(v) for k in ("members", "non_members") if (v := getattr(d, k)) is not None
    }
    if d.dataset is not None and d.dataset.path is not None:
        data_up["dataset"] = d.dataset.model_copy(update={"path": rel(d.dataset.path)})
    if d.texts is not None and d.texts != TINY_SHAKESPEARE:
        data_up["texts"] = str(rel(Path(d.texts)))
    updates: dict[str, Any] = {
        "target": t.model_copy(update={"path": rel(t.path)}),
        "data": d.model_copy(update=data_up),
        "output_dir": rel(cfg.output_dir),
        "config_dir": base.resolve(),
    }
    if cfg.base is not None:
        updates["base"] = cfg.base.model_copy(update={"path": rel(cfg.base.path)})
    if cfg.cache_dir is not None:
        updates["cache_dir"] = rel(cfg.cache_dir)
    return cfg.model_copy(update=updates)


def load_panoramia_config(path: str | Path) -> PanoramiaConfig:
    """Read, validate and check the paths of a PANORAMIA audit YAML.

    Relative paths resolve against the YAML file's folder. The torch recipe of ``model``
    (``kind: torch``) is checked here too (fields, factory), before any work.

    Raises
    ------
    ConfigError
        When the file is missing, is not UTF-8 YAML, repeats a key, a field is invalid or a
        path does not exist (the message names the field).
    """
    p = Path(path)
    cfg = _resolved(panoramia_config_from_dict(read_yaml(p), source=str(p)), p.parent)
    cfg.check_paths()
    if cfg.model is not None and cfg.model.kind == "torch":
        try:
            torch_recipe(cfg.model.params, cfg.config_dir)
        except ValueError as exc:
            raise ConfigError(f"model.params: {exc}") from None
    return cfg
