"""The schema of ``privaudit record-risk CONFIG.yaml``: the record-level games (Krčo et al. 2025).

Validated with pydantic v2 like the audit config (:mod:`privaudit.membership.config`: unknown keys
rejected, every problem named by its dotted path in one :class:`~privaudit.membership.config.ConfigError`).
Example::

    dataset: adult
    target: {kind: generator, generator: baynet, params: {degree: 2}}
    # target: {kind: classifier, model: {kind: mlp, params: {hidden_layer_sizes: [32]}}}
    attack: tapas-query            # tapas-query | dcr (generators); loss | lira (classifiers)
    n: 1000                        # |D|
    n_targets: 64                  # half most vulnerable (distance score), half random
    n_rounds: 400                  # per game per target
    n_shadow: 200
    seed: 0
    n_jobs: 2
    executor: local                # local | ray (ray_address: "auto" or "host:port")
    cache_dir: .record-risk-cache  # resumable
    output_dir: record-risk-report
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from privaudit.config.base import NJobs, StrictModel, read_yaml, validate_mapping
from privaudit.config.executor import (
    ExecutorKind,
    RayAddress,
    RayGpusPerTask,
    check_ray_address,
)
from privaudit.config.sections import GENERATOR_PARAMS, DatasetConfig, ModelConfig

__all__ = [
    "RECORD_ATTACKS_BY_KIND",
    "RecordRiskFileConfig",
    "RecordRiskTargetConfig",
    "load_record_risk_config",
]

#: Per-target attacks by target kind (privaudit.record_risk.attacks.RECORD_ATTACKS).
RECORD_ATTACKS_BY_KIND: dict[str, tuple[str, ...]] = {
    "generator": ("tapas-query", "dcr"),
    "classifier": ("loss", "lira"),
}


class RecordRiskTargetConfig(StrictModel):
    """What is released: a synthetic-data generator, or a classifier."""

    kind: Literal["generator", "classifier"]
    generator: Literal["baynet", "privbayes", "cart"] | None = Field(
        default=None, description="Built-in generator (kind: generator)."
    )
    params: dict[str, Any] = Field(default_factory=dict, description="Generator parameters.")
    model: ModelConfig | None = Field(default=None, description="Classifier (kind: classifier).")

    @model_validator(mode="after")
    def _consistent(self) -> RecordRiskTargetConfig:
        if self.kind == "generator":
            if self.generator is None or self.model is not None:
                raise ValueError(
                    "target: expected 'generator' (baynet, privbayes, cart) and no 'model'"
                )
            bad = sorted(set(self.params) - set(GENERATOR_PARAMS[self.generator]))
            if bad:
                raise ValueError(
                    f"target.params: expected parameters of {self.generator} "
                    f"({', '.join(GENERATOR_PARAMS[self.generator])}); found unknown {', '.join(map(repr, bad))}"
                )
            if self.generator == "privbayes" and "epsilon" not in self.params:
                raise ValueError("target.params: expected 'epsilon' for privbayes")
        elif self.model is None or self.generator is not None or self.params:
            raise ValueError(
                "target: expected 'model' (kind, params) and no 'generator' or 'params'"
            )
        return self


class RecordRiskFileConfig(StrictModel):
    """A ``privaudit record-risk`` run: data, target, attack, sizes, seeds, executor, cache."""

    dataset: DatasetConfig
    target: RecordRiskTargetConfig
    attack: Literal["tapas-query", "dcr", "loss", "lira"] | None = Field(
        default=None, description="Default: tapas-query (generator), lira (classifier)."
    )
    attack_params: dict[str, Any] = Field(default_factory=dict)
    n: Annotated[int, Field(ge=8)] = 1000
    n_targets: Annotated[int, Field(ge=1)] = 64
    n_rounds: Annotated[int, Field(ge=4)] = Field(
        default=400,
        description="Rounds per game per target (model-seeded: half IN, half OUT). In the "
        "traditional game each target is IN a round with probability 1/2, drawn from the "
        "seed; its per-record AUC needs every target IN at least once and OUT at least once "
        "(in the game and in its replicate), so fewer rounds than give every target that "
        "with this seed and n_targets are refused (the message names the minimum).",
    )
    n_shadow: Annotated[int, Field(ge=4)] = Field(
        default=200,
        description="Shadow releases the attacker trains on (tapas-query, lira). Each target "
        "is IN a shadow release with probability 1/2, drawn from the seed; the attack fits "
        "each target on at least 2 IN and 2 OUT, so fewer releases than give every target "
        "that with this seed and n_targets are refused (the message names the minimum).",
    )
    n_aux: Annotated[int, Field(ge=8)] = 10_000
    vulnerable_fraction: Annotated[float, Field(ge=0.0, le=1.0)] = 0.5
    replicates: bool = True
    traditional: Literal["amortised", "per-target"] = Field(
        default="amortised",
        description="How the traditional game draws its datasets: amortised (one release "
        "serves every target, each IN with probability 1/2) or per-target (the paper's plain "
        "draws, K times the traditional releases).",
    )
    n_bins: Annotated[int, Field(ge=2)] = 8
    seed: Annotated[int, Field(ge=0, lt=2**32)] = 0
    n_jobs: NJobs = 1
    executor: ExecutorKind = "local"
    ray_address: RayAddress = None
    ray_gpus_per_task: RayGpusPerTask = 1.0
    rounds_per_task: int = Field(
        default=16,
        ge=1,
        description="Rounds per executor task and cache entry; a torch classifier trains "
        "a task's rounds as one batched computation (64 amortises it well).",
    )
    output_dir: Path = Path("record-risk-report")
    cache_dir: Path | None = None
    config_dir: Path | None = Field(
        default=None,
        description="Directory of the YAML file (set by load_record_risk_config): a "
        "relative torch factory ('file.py:function') is resolved against it.",
    )

    @model_validator(mode="after")
    def _attack_fits(self) -> RecordRiskFileConfig:
        ok = RECORD_ATTACKS_BY_KIND[self.target.kind]
        if self.attack is not None and self.attack not in ok:
            raise ValueError(
                f"attack: expected an attack on a {self.target.kind} ({', '.join(ok)}), found {self.attack!r}"
            )
        if self.n_aux < self.n:
            raise ValueError(f"n_aux: expected at least n={self.n}, found {self.n_aux}")
        if self.n_targets > self.n:
            raise ValueError(f"n_targets: expected at most n={self.n} (targets are records of D0)")
        check_ray_address(self.executor, self.ray_address)
        self._design_suffices()
        return self

    def _design_suffices(self) -> None:
        """Refuse too few shadow releases for a trained attack, or too few rounds for every
        target to be IN and OUT of the traditional game (and of its replicate), before any
        training: :func:`~privaudit.record_risk.attacks.check_design`, the check
        :func:`~privaudit.record_risk.risk.run_record_risk` runs, with its message."""
        from privaudit.record_risk.attacks import check_design, make_record_attack

        check_design(
            make_record_attack(self.attack_name(), self.target.kind),
            n_targets=self.n_targets,
            n_rounds=self.n_rounds,
            n_shadow=self.n_shadow,
            seed=self.seed,
            traditional=self.traditional,
            replicates=self.replicates,
        )

    def attack_name(self) -> str:
        """The attack, or the default for the target kind."""
        return self.attack or ("tapas-query" if self.target.kind == "generator" else "lira")


def load_record_risk_config(path: str | Path) -> RecordRiskFileConfig:
    """Read and validate a ``privaudit record-risk`` YAML (relative paths: from its folder).

    Raises
    ------
    ConfigError
        Naming every bad field.
    """
    p = Path(path)
    cfg = validate_mapping(
        RecordRiskFileConfig, read_yaml(p), source=str(p), what="record-risk config"
    )
    updates: dict[str, Any] = {}
    if cfg.dataset.path is not None and not cfg.dataset.path.is_absolute():
        updates["dataset"] = cfg.dataset.model_copy(update={"path": p.parent / cfg.dataset.path})
    if not cfg.output_dir.is_absolute():
        updates["output_dir"] = p.parent / cfg.output_dir
    if cfg.cache_dir is not None and not cfg.cache_dir.is_absolute():
        updates["cache_dir"] = p.parent / cfg.cache_dir
    if cfg.target.model is not None and cfg.target.model.kind == "torch":
        updates["config_dir"] = p.parent.resolve()
    return cfg.model_copy(update=updates) if updates else cfg
