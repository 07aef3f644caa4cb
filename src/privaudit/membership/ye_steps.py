"""What Ye et al.'s attacks read, and how one of their models is fitted and read.

The worker side of :mod:`privaudit.membership.ye` (:class:`YeSteps` is what the executor's
processes run and preload): :class:`Needs` (the AttackData fields and signals the
configured attacks read), :func:`tables` (signal tables from stacked outputs),
:func:`accuracy`, and :class:`YeSteps`, the
:class:`~privaudit.models.train_many.ModelSteps` of every role (Ye et al. 2022, CCS'22,
Sec. 4: fit a model, a distilled one from the target; its signals on the evaluation sets).

Store keys (unchanged since the engine's first version, so existing caches stay valid):
a model is keyed by ``{"artifact": "model", "role", "dataset" (fingerprint),
"train_ids", "n_classes", "trainer", "settings", "seed"}`` (a distilled model adds the
target's key and the distillation method; a provided target is keyed by its
fingerprint), its signals by ``{"artifact": "signals", "model" (the model's key),
"records" (fingerprint of the evaluated set), "signals"}``.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from privaudit.attacks.base import TABLE_FIELDS, required_inputs
from privaudit.data.dataset import Dataset
from privaudit.errors import DesignError
from privaudit.models.base import Model, Trainer
from privaudit.models.distill import distill
from privaudit.models.precomputed import PrecomputedModel
from privaudit.models.train_many import ModelJob, fits_many
from privaudit.records import SignalTable
from privaudit.signals import ALL_SIGNALS, QUERY_SIGNALS, model_signals

if TYPE_CHECKING:
    from privaudit.membership.design import ExperimentConfig

__all__ = [
    "ATTACKER_MODEL_FIELDS",
    "Needs",
    "YeSteps",
    "accuracy",
    "attack_needs",
    "needs",
    "tables",
]

#: Fields whose models train through the executor (each role is one map).
ATTACKER_MODEL_FIELDS = frozenset(
    {
        "reference",
        "reference_membership",
        "reference_population",
        "shadow",
        "outside_reference",
        "distilled",
        "distilled_logits",
        "leave_one_out",
    }
)


# --------------------------------------------------------------------------------------
# what the attacks read
# --------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Needs:
    """The AttackData fields and signals the configured attacks read."""

    fields: frozenset[str]
    signals: tuple[str, ...]
    query_fields: frozenset[str]  # fields read with a query (label-only) signal

    def role_signals(self, *role_fields: str) -> tuple[str, ...]:
        """Signals to compute for the models of ``role_fields`` (the query signals only
        for models whose fields an attack reads with one: they are slow)."""
        if self.query_fields & set(role_fields):
            return self.signals
        return tuple(s for s in self.signals if s not in QUERY_SIGNALS)

    @property
    def trains_attacker_models(self) -> bool:
        """Whether an attack reads models that train through the executor."""
        return bool(self.fields & ATTACKER_MODEL_FIELDS)


def needs(config: ExperimentConfig) -> Needs:
    """What the attacks of ``config`` read (``required_inputs``) plus ``config.signals``."""
    return attack_needs(config.attacks, config.attack_params, config.signals)


def attack_needs(
    attacks: Sequence[str],
    attack_params: Mapping[str, Mapping[str, Any]],
    signals: Sequence[str] = (),
) -> Needs:
    """What ``attacks`` (with their settings) read, plus the extra ``signals``."""
    fields: set[str] = set()
    sigs: list[str] = []
    query_fields: set[str] = set()
    for a in attacks:
        params = attack_params.get(a, {})
        req = required_inputs(a, signal=params.get("signal"))
        fields.update(req.fields)
        fields.update(req.optional_fields)
        sigs.extend(req.signals)
        if set(req.signals) & set(QUERY_SIGNALS):
            query_fields.update(req.fields)
            query_fields.update(req.optional_fields)
    sigs.extend(signals)
    ordered = tuple(s for s in ALL_SIGNALS if s in set(sigs))
    if set(signals) & set(QUERY_SIGNALS):
        query_fields.update(TABLE_FIELDS)
    return Needs(frozenset(fields), ordered, frozenset(query_fields))


def tables(
    model_ids: Sequence[str],
    record_ids: NDArray[Any],
    stacked: NDArray[np.float64],
    signals: Sequence[str],
) -> dict[str, SignalTable]:
    """One :class:`SignalTable` per signal from ``stacked`` (models, signals, records)."""
    return {
        s: SignalTable(s, record_ids, tuple(model_ids), stacked[:, k, :])
        for k, s in enumerate(signals)
    }


def accuracy(model: Model | PrecomputedModel, data: Dataset) -> float:
    """Accuracy on ``data``; NaN when unknown (no records, or losses-only outputs)."""
    if data.n_records == 0:
        return float("nan")
    if isinstance(model, PrecomputedModel):
        if not model.has_logits:
            return float("nan")
        z = model.logits_for(data.record_ids)
    else:
        z = np.asarray(model.logits(data.X), dtype=np.float64)
    return float(np.mean(np.argmax(z, axis=1) == data.y))


# --------------------------------------------------------------------------------------
# how a model of a role is fitted and what it gives (runs in the workers)
# --------------------------------------------------------------------------------------


def _fit_accepts(trainer: Trainer, name: str) -> bool:
    try:
        return name in inspect.signature(trainer.fit).parameters
    except (TypeError, ValueError):  # pragma: no cover
        return False


class YeSteps:
    """The :class:`~privaudit.models.train_many.ModelSteps` of Ye et al.'s models: fit a
    model of a role (a distilled one from the target, the teacher), and its signals on
    the evaluation sets (the audited records, the population)."""

    def __init__(
        self,
        dataset: Dataset,
        trainer: Trainer,
        signals: tuple[str, ...],
        eval_sets: Mapping[str, Dataset],
        teacher: Model | None = None,
        teacher_key: str | None = None,
        distill_method: str = "soft-labels",
    ) -> None:
        self.dataset = dataset
        self.trainer = trainer
        self.signals = signals
        self.eval_sets = dict(eval_sets)
        self.teacher = teacher
        self.teacher_key = teacher_key
        self.distill_method = distill_method

    def key_parts(
        self, role: str, train_ids: NDArray[Any], seed: int, fixed_key: str | None = None
    ) -> dict[str, Any]:
        """The store key parts of a model (``fixed_key``: a provided target's)."""
        if fixed_key is not None:
            return {"artifact": "model", "role": role, "provided": fixed_key}
        parts: dict[str, Any] = {
            "artifact": "model",
            "role": role,
            "dataset": self.dataset.fingerprint(),
            "train_ids": np.asarray(train_ids),
            "n_classes": self.dataset.n_classes,
            "trainer": self.trainer.name,
            "settings": self.trainer.settings(),
            "seed": int(seed),
        }
        if role == "distilled":
            parts["teacher"] = self.teacher_key
            parts["distill_method"] = self.distill_method
        return parts

    def job(
        self,
        role: str,
        model_id: str,
        train_ids: NDArray[Any],
        seed: int,
        eval_sets: tuple[str, ...],
        fixed_key: str | None = None,
    ) -> ModelJob:
        """A model of ``role`` on ``train_ids`` with ``seed``, evaluated on ``eval_sets``."""
        return ModelJob(
            model_id,
            self.key_parts(role, train_ids, seed, fixed_key),
            np.asarray(train_ids),
            int(seed),
            tuple(eval_sets),
            role,
        )

    def fit(self, job: ModelJob) -> Model:
        train = self.dataset.subset(np.asarray(job.train_ids))
        if job.spec == "distilled":
            if self.teacher is None:  # pragma: no cover - the engine always sets it
                raise DesignError("distilled models need the target model as teacher")
            return distill(
                self.trainer, self.teacher, train.X, seed=int(job.seed), method=self.distill_method
            )
        kwargs: dict[str, Any] = {}
        if _fit_accepts(self.trainer, "n_classes"):
            kwargs["n_classes"] = self.dataset.n_classes
        model = self.trainer.fit(train.X, train.y, seed=int(job.seed), **kwargs)
        if model.n_classes != self.dataset.n_classes:
            raise DesignError(
                f"{job.label}: the trained model has {model.n_classes} classes, "
                f"the dataset {self.dataset.n_classes}; give the trainer n_classes"
            )
        return model

    @property
    def device(self) -> str | None:
        """The trainer's device (a torch recipe's), None for a trainer that names none."""
        device = getattr(self.trainer, "device", None)
        return device if isinstance(device, str) else None

    def on_device(self, device: str) -> YeSteps:
        """The same steps with the trainer pinned to ``device`` (its ``on_device``)."""
        pinned = copy.copy(self)
        pinned.trainer = self.trainer.on_device(device)  # type: ignore[attr-defined]
        return pinned

    @property
    def batched(self) -> bool:
        """Whether the trainer fits many models as one computation (not students)."""
        return fits_many(self.trainer) and self.teacher is None

    def fit_many(self, jobs: Sequence[ModelJob]) -> list[Model] | None:
        if not self.batched:
            return None
        ds = self.dataset
        return list(
            self.trainer.fit_many(  # type: ignore[attr-defined]
                ds.X,
                ds.y,
                [ds.positions(np.asarray(j.train_ids)) for j in jobs],
                [int(j.seed) for j in jobs],
                n_classes=ds.n_classes,
            )
        )

    @functools.cached_property
    def scale(self) -> NDArray[np.float64]:
        """The whole dataset's spread per feature, in whose units label-only signals perturb
        (computed once: every model's signals use it)."""
        out: NDArray[np.float64] = self.dataset.X.std(axis=0)
        return out

    def output(self, job: ModelJob, model: Model, name: str) -> NDArray[np.float64]:
        """The model's signals on evaluation set ``name``: (n_signals, n_records)."""
        data = self.eval_sets[name]
        sig = model_signals(job.model_id, model, data, self.signals, feature_scale=self.scale)
        return np.stack([np.asarray(sig[s], dtype=np.float64) for s in self.signals])

    def output_key(self, job: ModelJob, name: str) -> dict[str, Any]:
        return {
            "artifact": "signals",
            "records": self.eval_sets[name].fingerprint(),
            "signals": list(self.signals),
        }

    def with_signals(self, signals: tuple[str, ...]) -> YeSteps:
        """The same steps computing ``signals``."""
        return YeSteps(
            self.dataset,
            self.trainer,
            signals,
            self.eval_sets,
            self.teacher,
            self.teacher_key,
            self.distill_method,
        )
