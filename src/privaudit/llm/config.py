"""The schema of a language-model audit config (``privaudit run`` with a Hugging Face target).

Example::

    target:
      kind: huggingface
      path: models/my-finetuned-lm        # a local Hugging Face model directory
      gguf_file: model.Q4_1.gguf          # optional: a GGUF file inside that directory
    reference: {path: models/reference-lm}   # optional: the reference signals need it
    base: {path: models/pretrained-lm}    # optional: the model the target was fine-tuned
                                          # from (ez-mia, wbc, informia-token need it)
    data: {texts: texts.jsonl}            # one JSON object per line: id, text, member, [document]
                                          # randomised_split: true when the member documents
                                          # were drawn at random (else no eps bound is printed)
    signals: [loss, zlib, min-k, min-k++, reference, reference-ratio, ez-mia, wbc, informia-token]
                                          # default: all that apply
    min_k_fraction: 0.2
    batch_size: 8
    max_length: null                      # context window for scoring (default: the model's)
    stride: null                          # sliding-window stride for longer texts
    device: auto                          # auto | cpu | cuda | cuda:N
    blind_folds: 5                        # cross-fitting folds of the blind baseline (0: none)
    confidence: 0.95
    seed: 0
    output_dir: llm-report
    cache_dir: .privaudit-cache           # token statistics cached here (resume)
    executor: local                       # local (here) | ray: the target's and the reference's scoring passes as 2 tasks

Nothing is downloaded: ``path`` must be a local directory (checked here, before any
work; a missing one is an error naming the field, exit code 2). Relative paths resolve
against the YAML file's folder. ``privaudit run`` reads a YAML and, when
:func:`is_llm_config` says ``target.kind`` is ``huggingface``, audits it here
(:func:`load_llm_config`), else as a classifier audit
(:func:`privaudit.membership.config.load_config`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, field_validator, model_validator

from privaudit.config.base import ConfigError, StrictModel, read_yaml, validate_mapping
from privaudit.config.executor import (
    ExecutorKind,
    RayAddress,
    RayGpusPerTask,
    check_ray_address,
)
from privaudit.config.sections import LLMModelConfig

__all__ = [
    "HF_TARGET_KIND",
    "LLMAuditConfig",
    "LLMDataConfig",
    "LLMModelConfig",
    "is_llm_config",
    "llm_config_from_dict",
    "load_llm_config",
]

#: ``target.kind`` of a language-model audit.
HF_TARGET_KIND = "huggingface"
_BASE_SIGNALS = ("ez-mia", "wbc", "informia-token")
_SIGNALS = ("loss", "zlib", "min-k", "min-k++", "reference", "reference-ratio", *_BASE_SIGNALS)
_REFERENCE_SIGNALS = ("reference", "reference-ratio")


class LLMDataConfig(StrictModel):
    """The audited texts."""

    texts: Path = Field(
        description="JSONL, one object per line: id, text, member (true/false), optional document."
    )
    randomised_split: bool = Field(
        default=False,
        description="true: the member documents were drawn at random from one source, "
        "independently of the texts, before the target was trained; the one-run eps "
        "bounds rest on this declaration (refused without it, and when the blind "
        "baseline finds the member and non-member texts differ).",
    )


class LLMAuditConfig(StrictModel):
    """A membership audit of a causal language model (``target.kind: huggingface``)."""

    target: LLMModelConfig
    reference: LLMModelConfig | None = Field(
        default=None, description="Reference model of the reference signals (optional)."
    )
    base: LLMModelConfig | None = Field(
        default=None,
        description=(
            "The model the target was fine-tuned from (the reference of ez-mia, wbc and "
            "informia-token; same tokenizer as the target). For a PEFT/LoRA adapter target, "
            "the adapter's base model."
        ),
    )
    data: LLMDataConfig
    signals: list[str] | None = Field(
        default=None,
        description=(
            "Signals to compute; default: all, the reference ones only with a reference, "
            "the base ones only with a base."
        ),
    )
    min_k_fraction: Annotated[float, Field(gt=0.0, le=1.0)] = Field(
        default=0.2, description="k of min-k% and min-k%++ (fraction of the lowest tokens)."
    )
    batch_size: Annotated[int, Field(ge=1, le=4096)] = 8
    max_length: Annotated[int, Field(ge=2)] | None = Field(
        default=None, description="Context window for scoring (default: the model's)."
    )
    stride: Annotated[int, Field(ge=1)] | None = Field(
        default=None, description="Sliding-window stride for texts longer than max_length."
    )
    device: str = Field(default="auto", description="auto | cpu | cuda | cuda:N.")
    blind_folds: Annotated[int, Field(ge=0, le=50)] = Field(
        default=5, description="Cross-fitting folds of the blind baseline (0: no baseline)."
    )
    blind_permutations: Annotated[int, Field(ge=0, le=100000)] = Field(
        default=100,
        description="Document-label permutations of the blind baseline's shift test (0: no test).",
    )
    confidence: Annotated[float, Field(gt=0.0, lt=1.0)] = 0.95
    seed: Annotated[int, Field(ge=0, lt=2**32)] = 0
    executor: ExecutorKind = "local"
    ray_address: RayAddress = None
    ray_gpus_per_task: RayGpusPerTask = 1.0
    output_dir: Path = Path("privaudit-llm-report")
    cache_dir: Path | None = None

    @field_validator("signals")
    @classmethod
    def _known_signals(cls, v: list[str] | None) -> list[str] | None:
        if v is None:
            return v
        bad = [s for s in v if s not in _SIGNALS]
        if bad:
            raise ValueError(
                f"expected signal names among {', '.join(_SIGNALS)}; found unknown "
                f"{', '.join(map(repr, bad))}"
            )
        if not v:
            raise ValueError("expected at least one signal")
        if len(set(v)) != len(v):
            raise ValueError("expected each signal once")
        return v

    @model_validator(mode="after")
    def _executor_fields(self) -> LLMAuditConfig:
        check_ray_address(self.executor, self.ray_address)
        return self

    @field_validator("device")
    @classmethod
    def _device(cls, v: str) -> str:
        ok = v in ("auto", "cpu", "cuda") or (v.startswith("cuda:") and v[5:].isdigit())
        if not ok:
            raise ValueError("expected auto, cpu, cuda or cuda:N")
        return v

    @model_validator(mode="after")
    def _reference_needed(self) -> LLMAuditConfig:
        if self.reference is None and self.signals is not None:
            need = [s for s in self.signals if s in _REFERENCE_SIGNALS]
            if need:
                raise ValueError(
                    f"signals: {', '.join(need)} need a reference model; add "
                    "'reference: {path: DIR}' or drop them"
                )

        if (
            self.stride is not None
            and self.max_length is not None
            and self.stride > self.max_length
        ):
            raise ValueError("stride: expected at most max_length")
        return self

    def signal_names(self) -> tuple[str, ...]:
        """The signals to compute (default: all, the reference ones only with a reference,
        the base ones only with a base)."""
        if self.signals is not None:
            return tuple(self.signals)
        return tuple(
            s
            for s in _SIGNALS
            if (self.reference is not None or s not in _REFERENCE_SIGNALS)
            and (self.base is not None or s not in _BASE_SIGNALS)
        )

    def check_paths(self) -> None:
        """Every local path exists (ConfigError naming the field otherwise)."""
        self.target.check_exists("target")
        if self.reference is not None:
            self.reference.check_exists("reference")
        if self.base is not None:
            self.base.check_exists("base")
        need = [s for s in self.signals or () if s in _BASE_SIGNALS]
        if self.base is None and need and not (self.target.path / "adapter_config.json").is_file():
            # a PEFT adapter target brings its base (privaudit.llm.adapter)
            raise ConfigError(
                f"signals: {', '.join(need)} need the model the target was fine-tuned from; "
                "add 'base: {path: DIR}' or drop them"
            )
        if not self.data.texts.is_file():
            raise ConfigError(
                f"data.texts: expected an existing JSONL file, found no file at {self.data.texts}"
            )


def llm_config_from_dict(data: Any, *, source: str = "config") -> LLMAuditConfig:
    """Validate a mapping into an :class:`LLMAuditConfig` (ConfigError naming every bad field)."""
    return validate_mapping(LLMAuditConfig, data, source=source, what="language-model audit config")


def _resolved(cfg: LLMAuditConfig, base: Path) -> LLMAuditConfig:
    def rel(p: Path) -> Path:
        return p if p.is_absolute() else base / p

    updates: dict[str, Any] = {
        "target": cfg.target.model_copy(update={"path": rel(cfg.target.path)}),
        "data": cfg.data.model_copy(update={"texts": rel(cfg.data.texts)}),
        "output_dir": rel(cfg.output_dir),
    }
    if cfg.reference is not None:
        updates["reference"] = cfg.reference.model_copy(update={"path": rel(cfg.reference.path)})
    if cfg.base is not None:
        updates["base"] = cfg.base.model_copy(update={"path": rel(cfg.base.path)})
    if cfg.cache_dir is not None:
        updates["cache_dir"] = rel(cfg.cache_dir)
    return cfg.model_copy(update=updates)


def load_llm_config(path: str | Path) -> LLMAuditConfig:
    """Read, validate and check the paths of a language-model audit YAML."""
    p = Path(path)
    cfg = _resolved(llm_config_from_dict(read_yaml(p), source=str(p)), p.parent)
    cfg.check_paths()
    return cfg


def is_llm_config(data: Any) -> bool:
    """Whether a parsed ``privaudit run`` YAML describes a language-model audit
    (``target.kind: huggingface``)."""
    return (
        isinstance(data, dict)
        and isinstance(data.get("target"), dict)
        and data["target"].get("kind") == HF_TARGET_KIND
    )
