"""The schema of an audit configuration (``audit.yaml``), validated with pydantic v2.

Example (every field but ``dataset`` and ``model`` has a default)::

    dataset: adult                 # adult | digits | {path: data.csv, label_column: y, id_column: id}
    model:
      kind: mlp                    # mlp | logistic | gradient_boosting | random_forest
      params: {hidden_layer_sizes: [64], max_iter: 200}
    attacks: [population, shadow, reference, lira-online, rmia-online]   # default: all
    sizes: {n_target_pool: 2000, n_population: 4000}
    models: {n_reference: 8, n_shadow: 4, n_distilled: 4, n_leave_one_out: 4, leave_one_out_sample: 20}
    alpha: 0.05
    game: def-3.2                  # def-3.1 | def-3.2 | def-3.3 | def-3.4, or {name: def-3.3, n_trials: 8, n_fixed_records: 2}
    seed: 0
    n_jobs: 2
    executor: local                # local | ray (ray_address: "ray://host:10001" for a cluster)
    output_dir: privaudit-report
    cache_dir: .privaudit-cache

Unknown keys are rejected (``extra='forbid'``). :func:`load_config` turns every
validation problem into one :class:`ConfigError` whose message names the offending
field by its dotted path (``model.params.hidden_units: ...``), so the CLI can print it
and exit with code 2.

The sections every command shares (dataset, model) are in :mod:`privaudit.config.sections`
(re-exported here). The other commands' schemas build on this one: :mod:`privaudit.llm.config` (language
models), :mod:`privaudit.panoramia.config` (PANORAMIA), :mod:`privaudit.record_risk.config`
(the record-level games of ``privaudit record-risk``).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from privaudit.config.base import (
    ConfigError,
    NJobs,
    StrictModel,
    format_errors,
    read_yaml,
    validate_mapping,
)
from privaudit.config.executor import RayGpusPerTask
from privaudit.config.sections import (
    BUILTIN_DATASETS,
    GENERATOR_PARAMS,
    MODEL_KINDS,
    DatasetConfig,
    ModelConfig,
    build_estimator,
    torch_recipe,
)

__all__ = [
    "BUILTIN_DATASETS",
    "GAME_NAMES",
    "GENERATOR_PARAMS",
    "GIVEN_IN_CODE",
    "MODEL_KINDS",
    "AuditConfig",
    "ConfigError",
    "DatasetConfig",
    "GameConfig",
    "ModelConfig",
    "ModelCounts",
    "SizeConfig",
    "TargetConfig",
    "VulnerableConfig",
    "build_estimator",
    "config_from_dict",
    "load_config",
    "torch_recipe",
    "validate_mapping",
    "with_game",
]


class SizeConfig(StrictModel):
    """How the dataset is split (Ye et al. 2022, Sec. 3: target data and population data).

    ``n_target_pool`` records are audited: about half of them, chosen at random, train
    the target; ``n_population`` disjoint records are the attacker's population data.
    ``None``: a third of the dataset (at most 2,400) for the pool and the rest (at most
    4,800) for the population. TPR at FPR f is reported only with >= 1/f non-members,
    so TPR at 0.1% FPR needs 1,000 non-members: each pool record is a member by its own
    fair coin, so a pool of 2,200 has them for all but about 1 seed in 100,000 (2,000: for
    about every other seed).
    """

    n_target_pool: Annotated[int, Field(ge=4)] | None = None
    n_population: Annotated[int, Field(ge=2)] | None = None


class ModelCounts(StrictModel):
    """Numbers of models the attacks learn from (only those the chosen attacks need are trained).

    The reference models form a balanced keep matrix over the target pool (every record
    IN for exactly half of them, as in LiRA), drawn independently of the target's
    membership, so ``n_reference`` is even; each shadow model trains on a random
    population subset of the target's expected training-set size (half the pool).
    """

    n_reference: Annotated[
        int, Field(ge=4, description="Reference models (R, LiRA, RMIA); even, >= 4.")
    ] = 8
    n_shadow: Annotated[
        int,
        Field(
            ge=1,
            description="Shadow models (S); also attack R's reference models, trained on "
            "population data as in Ye et al. App. B.2 (R needs >= 2).",
        ),
    ] = 4
    n_distilled: Annotated[
        int,
        Field(
            ge=2,
            description="Distilled models per kind of student (attack distillation: soft "
            "labels, Ye et al. eq. 14-15; attack distillation-logits: logit regression, "
            "Ba & Caruana 2014, MLP targets only); >= 2.",
        ),
    ] = 4
    distill_size: Annotated[int, Field(ge=2)] | None = Field(
        default=None,
        description="Population records per distilled model (default: the target's expected "
        "training-set size, half the pool).",
    )
    n_leave_one_out: Annotated[
        int, Field(ge=2, description="Leave-one-out models per audited record (L).")
    ] = 4
    leave_one_out_sample: Annotated[
        int, Field(ge=2, description="Target-pool records audited by L (each retrains models).")
    ] = 20

    @field_validator("n_reference")
    @classmethod
    def _even(cls, v: int) -> int:
        if v % 2:
            raise ValueError(
                "expected an even number (every record is IN for exactly half of the "
                f"reference models), e.g. 8 or 16, found {v}"
            )
        return v


TARGET_KINDS: tuple[str, ...] = ("sklearn", "torch", "precomputed")


class TargetConfig(StrictModel):
    """A target trained outside privaudit, and its split (``privaudit.models.provided``).

    ``model`` is then the *recipe* the target was trained with, used for every
    reference, shadow, distilled and leave-one-out model. Membership: files of member
    and non-member ids (one id per line), or ``member_column`` of the dataset table
    (1/true = member, 0/false = non-member, empty = not audited: population).
    """

    kind: Literal["sklearn", "torch", "precomputed"] = Field(
        description="sklearn (skops file), torch (safetensors / .pt state dict), "
        "precomputed (per-record logits or losses: .npz, .csv, .parquet)."
    )
    path: Path = Field(description="The trained model or per-record outputs.")
    factory: str | None = Field(
        default=None,
        description="torch: 'module:function' building the module (default: the recipe's).",
    )
    factory_kwargs: dict[str, Any] | None = Field(
        default=None, description="torch: factory arguments (default: the recipe's)."
    )
    trusted_types: list[str] = Field(
        default_factory=list, description="sklearn: extra types trusted in the skops file."
    )
    n_classes: Annotated[int, Field(ge=2)] | None = Field(
        default=None, description="precomputed losses: the number of classes."
    )
    members: Path | None = Field(default=None, description="File of member ids.")
    non_members: Path | None = Field(default=None, description="File of non-member ids.")
    member_column: str | None = Field(
        default=None, description="Column of the dataset table marking membership."
    )
    population: Path | None = Field(
        default=None,
        description="File of population ids (default: every record not audited).",
    )
    population_table: Path | None = Field(
        default=None,
        description="A table of population records (CSV or Parquet with the dataset table's "
        "columns, encoded as it is; ids disjoint from the dataset's): the attacker's data "
        "for reference / shadow / distilled models and calibration, instead of the "
        "dataset's records outside the audited set.",
    )
    references: Literal["pool", "population"] = Field(
        default="pool",
        description="Where reference models train: the audited pool (balanced keep layout, "
        "online and offline attacks) or the population (offline attacks only).",
    )
    accuracy_tolerance: Annotated[float, Field(gt=0.0, lt=1.0)] = Field(
        default=0.05,
        description="Largest accepted accuracy gap between the target and a model trained "
        "with the recipe (a warning otherwise).",
    )
    randomised_split: bool = Field(
        default=False,
        description="true: the members were drawn at random, independently of the records, "
        "before the target was trained (each record a member by its own fair coin, as "
        "Steinke et al.'s proof assumes; a uniformly random half of the audited records is "
        "treated as such coins, which their proof does not cover); the one-run eps bounds "
        "rest on this declaration, which privaudit cannot check. false (default): they are "
        "refused.",
    )

    @model_validator(mode="after")
    def _membership_source(self) -> TargetConfig:
        files = self.members is not None or self.non_members is not None
        if files and self.member_column is not None:
            raise ValueError(
                "expected either 'members' and 'non_members' or 'member_column', not both"
            )
        if not files and self.member_column is None:
            raise ValueError("expected 'members' and 'non_members' (id files) or 'member_column'")
        if files and (self.members is None or self.non_members is None):
            raise ValueError("expected both 'members' and 'non_members'")
        if self.kind != "torch" and (self.factory or self.factory_kwargs):
            raise ValueError("'factory' and 'factory_kwargs' apply to kind 'torch' only")
        if self.population is not None and self.population_table is not None:
            raise ValueError(
                "expected either 'population' (ids in the dataset) or 'population_table' "
                "(a table of its own), not both"
            )
        return self

    def describe(self) -> dict[str, Any]:
        """JSON-able description for ``results.json``."""
        out: dict[str, Any] = {"kind": self.kind, "path": str(self.path)}
        for k in (
            "members",
            "non_members",
            "member_column",
            "population",
            "population_table",
            "factory",
        ):
            v = getattr(self, k)
            if v is not None:
                out[k] = str(v)
        out["references"] = self.references
        return out


#: Game identifiers of the config (Ye et al. 2022, Def. 3.1-3.4) -> the engine's game names
#: (:data:`privaudit.membership.games.GAMES`); the engine's names are accepted as well.
GAME_NAMES: dict[str, str] = {
    "def-3.1": "average",
    "def-3.2": "fixed-model",
    "def-3.3": "fixed-record",
    "def-3.4": "fixed-record-and-dataset",
}


class GameConfig(StrictModel):
    """Which membership-inference game of Ye et al. (2022, Sec. 3.1) the audit plays.

    ``def-3.2`` (default): one fixed target model, every audited record a draw.
    ``def-3.1``: ``n_trials`` targets, each on a fresh training set and seed (average
    over models and records). ``def-3.3``: fixed record(s), a fresh dataset and seed per
    trial, the record IN with probability 1/2. ``def-3.4``: fixed record(s) and
    dataset, a fresh training seed and coin per trial. A bare string is the name.
    """

    name: Literal[
        "def-3.1",
        "def-3.2",
        "def-3.3",
        "def-3.4",
        "average",
        "fixed-model",
        "fixed-record",
        "fixed-record-and-dataset",
    ] = "def-3.2"
    n_trials: Annotated[
        int,
        Field(ge=1, description="Trials (target models) of def-3.1/3.3/3.4; def-3.2 plays one."),
    ] = 8
    n_fixed_records: Annotated[
        int, Field(ge=1, description="Fixed records drawn at random (def-3.3/3.4).")
    ] = 1
    fixed_records: list[int | str] | None = Field(
        default=None, description="Record ids of the fixed records (def-3.3/3.4); default: drawn."
    )

    @model_validator(mode="before")
    @classmethod
    def _from_string(cls, v: Any) -> Any:
        if isinstance(v, str):
            return {"name": v}
        return v

    @model_validator(mode="after")
    def _fixed_only_for_fixed_record_games(self) -> GameConfig:
        if self.fixed_records is not None:
            if self.engine_name() not in ("fixed-record", "fixed-record-and-dataset"):
                raise ValueError(
                    f"fixed_records: expected only with def-3.3 or def-3.4, found game {self.name!r}"
                )
            if not self.fixed_records or len(set(self.fixed_records)) != len(self.fixed_records):
                raise ValueError("fixed_records: expected distinct record ids, at least one")
        return self

    def engine_name(self) -> str:
        """The game's name in :data:`privaudit.membership.games.GAMES`."""
        return GAME_NAMES.get(self.name, self.name)

    def definition(self) -> str:
        """``"def-3.x"`` of the game."""
        inverse = {v: k for k, v in GAME_NAMES.items()}
        return inverse.get(self.name, self.name)


class VulnerableConfig(StrictModel):
    """The vulnerable-record analysis of Ye et al. (2022, Sec. 5.4) in the report.

    ``fprs``: the common FPRs at which attacks are compared (and the agreement matrices
    drawn); ``majority``: the fraction of targets on which a record must be flagged
    (missed) to count as flagged (missed) by an attack; ``leave_one_out_per_set``: with
    Def. 3.2, train Attack L's leave-one-out models for up to this many more members of
    each record type (a second pass that reuses every other model), so that each type's
    L-based vulnerability rests on more than L's random sample; ``top``: length of the
    ranking of the most vulnerable members.
    """

    fprs: list[Annotated[float, Field(gt=0.0, lt=1.0)]] = Field(
        default_factory=lambda: [0.05, 0.3], min_length=1, max_length=4
    )
    majority: Annotated[float, Field(gt=0.5, le=1.0)] = 0.8
    leave_one_out_per_set: Annotated[int, Field(ge=0)] = 0
    top: Annotated[int, Field(ge=1)] = 20


def _registered_attacks() -> tuple[str, ...]:
    from privaudit.attacks import attack_names

    return attack_names()


def _default_attacks() -> tuple[str, ...]:
    from privaudit.attacks import default_attacks

    return default_attacks()


#: Validation context under which :class:`AuditConfig` accepts ``dataset: None`` and
#: ``model: None``: an audit whose data, target and recipe are Python objects
#: (:func:`privaudit.audit_model`, :func:`privaudit.membership.pipeline.run_given_audit`).
GIVEN_IN_CODE = "given_in_code"


def _section_only(schema: dict[str, Any]) -> None:
    """The JSON schema of a ``section | None`` field without its ``null`` branch."""
    branches = schema.pop("anyOf", None)
    if branches:
        schema.update(next(b for b in branches if b.get("type") != "null"))


class AuditConfig(StrictModel):
    """One membership-inference audit: data, model, attacks, numbers of models, alpha, seed.

    ``dataset`` and ``model`` are required; they are None only in the config of an audit
    whose data and recipe are Python objects (:func:`privaudit.audit_model`, validated
    with the context ``{GIVEN_IN_CODE: True}``).
    """

    # None only in code: the JSON schema (the config reference) shows the section alone
    dataset: DatasetConfig | None = Field(json_schema_extra=_section_only)
    model: ModelConfig | None = Field(json_schema_extra=_section_only)
    target: TargetConfig | None = Field(
        default=None,
        description="A target trained outside privaudit and its split (model = its recipe).",
    )
    attacks: list[str] | None = Field(
        default=None, description="Attack names from the registry; default: every attack."
    )
    attack_params: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="Extra parameters per attack name."
    )
    sizes: SizeConfig = Field(default_factory=SizeConfig)
    models: ModelCounts = Field(default_factory=ModelCounts)
    alpha: Annotated[float, Field(gt=0.0, lt=1.0)] = 0.05
    vulnerable: VulnerableConfig = Field(
        default_factory=VulnerableConfig,
        description="Ye et al. Sec. 5.4 analysis: FPRs, majority rule, extra leave-one-out records.",
    )
    game: GameConfig = Field(
        default_factory=GameConfig,
        description="Inference game (Ye et al. 2022 Def. 3.1-3.4): def-3.1 | def-3.2 | def-3.3 | def-3.4.",
    )
    seed: Annotated[int, Field(ge=0, lt=2**32)] = 0
    n_jobs: NJobs = 1
    executor: Literal["local", "ray"] = Field(
        default="local",
        description="Where models train: local processes (n_jobs of them) or a Ray cluster.",
    )
    ray_address: str | None = Field(
        default=None,
        description="Address of a running Ray cluster (executor: ray); None starts a local one.",
    )
    ray_gpus_per_task: RayGpusPerTask = 1.0
    output_dir: Path = Path("privaudit-report")
    cache_dir: Path | None = None
    config_dir: Path | None = Field(
        default=None,
        description="Directory of the YAML file (set by load_config): relative torch "
        "factories ('file.py:function') are resolved against it.",
    )

    @field_validator("attacks")
    @classmethod
    def _known_attacks(cls, v: list[str] | None) -> list[str] | None:
        if v is None:
            return v
        known = _registered_attacks()
        bad = [a for a in v if a not in known]
        if bad:
            raise ValueError(
                f"expected attack names among {', '.join(known)}; found unknown {', '.join(map(repr, bad))}"
            )
        if not v:
            raise ValueError("expected at least one attack")
        if len(set(v)) != len(v):
            raise ValueError(f"expected each attack once, found {v}")
        return v

    @field_validator("dataset", "model")
    @classmethod
    def _given_in_code_only(cls, v: Any, info: ValidationInfo) -> Any:
        if v is None and not (info.context or {}).get(GIVEN_IN_CODE):
            what = {
                "dataset": "a bundled dataset name (adult, digits, mnist, cifar10) or "
                "{path: ..., label_column: ...}",
                "model": "a model section {kind: ..., params: ...}",
            }[str(info.field_name)]
            raise ValueError(f"expected {what}, found null")
        return v

    @field_validator("alpha")
    @classmethod
    def _finite_alpha(cls, v: float) -> float:
        if not math.isfinite(v):
            raise ValueError(f"expected a finite number, found {v}")
        return v

    @model_validator(mode="after")
    def _target_fits(self) -> AuditConfig:
        t = self.target
        if t is None:
            return self
        if self.game.engine_name() != "fixed-model":
            raise ValueError(
                "game: a provided target is one fixed model with a given split; only the "
                "fixed-model game (def-3.2) applies"
            )
        table = None if self.dataset is None else self.dataset.path
        if t.member_column is not None and table is None:
            raise ValueError("target.member_column: needs a dataset table ('dataset.path')")
        if t.population_table is not None and table is None:
            raise ValueError(
                "target.population_table: needs a dataset table ('dataset.path'; its columns "
                "and encoding are the population table's)"
            )
        if (
            t.kind == "torch"
            and (self.model is None or self.model.kind != "torch")
            and not t.factory
        ):
            raise ValueError("target.factory: expected a factory for a torch target")
        if t.references == "population":
            online = [a for a in self.attack_names() if a.endswith("-online")]
            if online:
                raise ValueError(
                    "target.references: 'population' leaves every audited record OUT of all "
                    f"reference models; online attacks need IN models: drop {', '.join(online)} "
                    "or use references: pool"
                )
        if (
            t.references == "population"
            and "rmia-offline" in self.attack_names()
            and not isinstance(self.attack_params.get("rmia-offline", {}).get("a"), int | float)
        ):
            raise ValueError(
                "attack_params.rmia-offline.a: RMIA's a is tuned on reference models that "
                "trained on audited records; with references: population give a number "
                "(e.g. 0.3 for tabular data, Zarifzadeh et al. 2024)"
            )
        distilling = [a for a in self.attack_names() if a.startswith("distillation")]
        if t.kind == "precomputed" and distilling:
            raise ValueError(
                "attacks: the distillation attacks query the target on population records, which "
                f"precomputed outputs cannot answer; drop {', '.join(distilling)}"
            )
        return self

    @model_validator(mode="after")
    def _attack_params_known(self) -> AuditConfig:
        chosen = self.attack_names()
        bad = [a for a in self.attack_params if a not in chosen]
        if bad:
            raise ValueError(
                f"attack_params: parameters given for attack(s) not run: {', '.join(map(repr, bad))}"
            )
        return self

    def attack_names(self) -> tuple[str, ...]:
        """The attacks to run; when not listed, the default ones in registry order."""
        return tuple(self.attacks) if self.attacks is not None else _default_attacks()

    def dataset_section(self) -> DatasetConfig:
        """The ``dataset`` section.

        Raises
        ------
        ConfigError
            When the audit's data were given in code (``dataset`` is None).
        """
        if self.dataset is None:
            raise ConfigError(
                "dataset: expected a dataset section; this audit's data were given in code"
            )
        return self.dataset

    def model_section(self) -> ModelConfig:
        """The ``model`` section (the recipe).

        Raises
        ------
        ConfigError
            When the audit's recipe was given in code (``model`` is None).
        """
        if self.model is None:
            raise ConfigError(
                "model: expected a model section; this audit's recipe was given in code"
            )
        return self.model


def config_from_dict(data: Any, *, source: str = "config") -> AuditConfig:
    """Validate a mapping (as read from YAML) into an :class:`AuditConfig`.

    Raises
    ------
    ConfigError
        Naming every bad field by its dotted path.
    """
    return validate_mapping(AuditConfig, data, source=source)


def with_game(
    config: AuditConfig, name: str | None = None, *, n_trials: int | None = None
) -> AuditConfig:
    """``config`` with its game (and number of trials) replaced, validated.

    Raises
    ------
    ConfigError
        When the game name or the number of trials is invalid.
    """
    data = config.game.model_dump()
    if name is not None:
        data["name"] = name
        if GAME_NAMES.get(name, name) not in ("fixed-record", "fixed-record-and-dataset"):
            data["fixed_records"] = None
    if n_trials is not None:
        data["n_trials"] = n_trials
    try:
        game = GameConfig.model_validate(data)
    except ValidationError as exc:
        raise format_errors(exc, "command line (--game, --game-trials)", ("game",)) from None
    return config.model_copy(update={"game": game})


def load_config(path: str | Path) -> AuditConfig:
    """Read and validate an ``audit.yaml``.

    A relative ``dataset.path``, ``output_dir`` or ``cache_dir`` is resolved against the
    directory of the YAML file.

    Raises
    ------
    ConfigError
        When the file is missing, is not UTF-8 YAML, repeats a key, or any field is
        invalid (the message names the field).
    """
    p = Path(path)
    cfg = config_from_dict(read_yaml(p), source=str(p))
    base = p.parent
    updates: dict[str, Any] = {}
    if (
        cfg.dataset is not None
        and cfg.dataset.path is not None
        and not cfg.dataset.path.is_absolute()
    ):
        updates["dataset"] = cfg.dataset.model_copy(update={"path": base / cfg.dataset.path})
    if not cfg.output_dir.is_absolute():
        updates["output_dir"] = base / cfg.output_dir
    if cfg.cache_dir is not None and not cfg.cache_dir.is_absolute():
        updates["cache_dir"] = base / cfg.cache_dir
    if cfg.target is not None:
        t_up = {
            k: base / v
            for k in ("path", "members", "non_members", "population", "population_table")
            if isinstance(v := getattr(cfg.target, k), Path) and not v.is_absolute()
        }
        if t_up:
            updates["target"] = cfg.target.model_copy(update=t_up)
    if (cfg.model is not None and cfg.model.kind == "torch") or (
        cfg.target is not None and cfg.target.factory
    ):
        # a relative 'file.py:function' factory is resolved against the config's directory
        updates["config_dir"] = base.resolve()
    return cfg.model_copy(update=updates) if updates else cfg
