"""The "train many" step: many models or releases through the executor, cached and resumable.

Every experiment trains many models or generators (reference, shadow, distilled and
leave-one-out models of Ye et al. 2022; the rounds of the record-level games of Krčo
et al. 2025). This module is the one implementation of that step (``DESIGN.md``, section
2.1): an :class:`~privaudit.runtime.executor.Executor` (local processes or Ray) maps the
work, and an optional :class:`~privaudit.runtime.store.ArtifactStore` caches every result
under a key that hashes everything that produced it, written *inside the worker* as soon
as it is done, so a killed run resumes without recomputing what finished. Two
granularities share that machinery (:func:`cached`):

* :func:`train_many` -- one task per item, whose result is a dict of numpy arrays stored
  as one ``.npz`` entry (a task of rounds of the record-level games: the releases are
  made and summarised in the worker, only the summaries are kept);
* :func:`train_models` -- one model per :class:`ModelJob`: the model is stored with the
  trainer's own format (:func:`model_codec`: safetensors for torch, skops for
  scikit-learn), and beside it each of its per-record outputs (e.g. a signal table on an
  evaluation set) as a ``.npy`` entry keyed by the model's key; a model whose outputs are
  all stored is never loaded. A trainer with ``batched = True`` and ``fit_many`` fits a
  chunk of models with one missing from the store together (one batched computation, e.g.
  :func:`privaudit.models.torch_batched.fit_many`; the whole chunk, so that a resumed run
  gives an uninterrupted run's numbers: see :meth:`ModelTask.run_batched`); otherwise the
  executor fits them one by one. What a model is trained on, and what its outputs are, is the experiment's
  business (a :class:`ModelSteps` object); seeds travel inside the jobs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar, cast

import numpy as np
from numpy.typing import NDArray

from privaudit.errors import DesignError
from privaudit.models.base import Model
from privaudit.models.distill import LogitRegressionModel
from privaudit.models.persistence import load_model, save_model
from privaudit.models.precomputed import PrecomputedModel
from privaudit.models.sklearn import SklearnModel
from privaudit.runtime import interrupts
from privaudit.runtime.executor import Executor
from privaudit.runtime.progress import progress_bar
from privaudit.runtime.store import ArtifactStore, hash_key

__all__ = [
    "CachedTask",
    "Codec",
    "ModelJob",
    "ModelOutputs",
    "ModelSteps",
    "ModelTask",
    "cached",
    "fits_many",
    "model_codec",
    "train_many",
    "train_models",
]

T = TypeVar("T")
V = TypeVar("V")
Arrays = dict[str, NDArray[Any]]


# --------------------------------------------------------------------------------------
# how an artifact is written and read
# --------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Codec(Generic[V]):
    """How one kind of artifact is written to and read from the store (no pickle)."""

    suffix: str
    save: Callable[[V, Path], Any]
    load: Callable[[Path], V]


def _save_npz(obj: Arrays, path: Path) -> None:
    with open(path, "wb") as fh:
        np.savez(fh, allow_pickle=False, **obj)


def _load_npz(path: Path) -> Arrays:
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def _save_npy(values: NDArray[np.float64], path: Path) -> None:
    with open(path, "wb") as fh:
        np.save(fh, values, allow_pickle=False)


def _load_npy(path: Path) -> NDArray[np.float64]:
    return np.asarray(np.load(path, allow_pickle=False), dtype=np.float64)


#: A dict of arrays as one ``.npz`` (a task's result).
NPZ: Codec[Arrays] = Codec(".npz", _save_npz, _load_npz)
#: One float64 array as ``.npy`` (a model's output, e.g. a signal table).
NPY: Codec[NDArray[np.float64]] = Codec(".npy", _save_npy, _load_npy)

_SKOPS_TYPES = (SklearnModel, LogitRegressionModel, PrecomputedModel)


class _ModelSaver:
    def __init__(self, trainer_save: Any, label: str) -> None:
        self.trainer_save = trainer_save
        self.label = label

    def __call__(self, m: Model, path: Path) -> None:
        if self.trainer_save is not None and not isinstance(m, _SKOPS_TYPES):
            self.trainer_save(m, path)
            return
        if not isinstance(m, _SKOPS_TYPES):
            raise DesignError(
                f"{self.label}: the artifact store can persist scikit-learn and precomputed "
                f"models only, not {type(m).__name__}"
            )
        save_model(m, path)


class _ModelLoader:
    def __init__(self, trainer_load: Any) -> None:
        self.trainer_load = trainer_load

    def __call__(self, path: Path) -> Model:
        if self.trainer_load is not None:
            return cast(Model, self.trainer_load(path))
        return cast(Model, load_model(path))


def model_codec(trainer: Any, label: str = "model") -> Codec[Model]:
    """How the store keeps ``trainer``'s models.

    A trainer that names its own format (``artifact_suffix``, ``save_model``,
    ``load_model``; e.g. :class:`~privaudit.models.torch_models.TorchTrainer`: safetensors)
    is used for the models it returns; scikit-learn, logit-regression and precomputed
    models go to skops / ``.npz`` (:func:`privaudit.models.persistence.save_model`), never
    pickle. ``label`` names the model in the error raised for a model no format can keep.
    """
    suffix = str(getattr(trainer, "artifact_suffix", ".skops"))
    trainer_load = getattr(trainer, "load_model", None) if suffix != ".skops" else None
    return Codec(
        suffix, _ModelSaver(getattr(trainer, "save_model", None), label), _ModelLoader(trainer_load)
    )


def fits_many(trainer: Any) -> bool:
    """Whether ``trainer`` trains many models as one batched computation: ``batched`` true
    and a ``fit_many(X, y, subsets, seeds, *, n_classes)`` method (as
    :class:`privaudit.models.torch_models.TorchTrainer`)."""
    return bool(getattr(trainer, "batched", False)) and callable(getattr(trainer, "fit_many", None))


def cached(
    store: ArtifactStore | None,
    key_parts: Mapping[str, Any],
    create: Callable[[], V],
    codec: Codec[V],
    *,
    since: int | None = None,
) -> tuple[V, bool]:
    """``create()`` through the store (when given): the value and whether it was created.

    ``since``: :func:`privaudit.runtime.interrupts.mark` when the work behind ``create``
    began, if earlier than the call (a model of a batched fit): a signal since then
    keeps it out of the store.
    """
    if store is None:
        return create(), True
    created: list[bool] = []

    def make() -> V:
        created.append(True)
        return create()

    value = store.get_or_create(
        key_parts, make, codec.save, codec.load, suffix=codec.suffix, since=since
    )
    return value, bool(created)


# --------------------------------------------------------------------------------------
# one cached task per item (arrays)
# --------------------------------------------------------------------------------------


class CachedTask(Generic[T]):
    """``fn(item)`` through the store: returns ``(result, created)``."""

    def __init__(
        self,
        fn: Callable[[T], Arrays],
        store: ArtifactStore | None,
        key_fn: Callable[[T], Mapping[str, Any]],
    ) -> None:
        self.fn = fn
        self.store = store
        self.key_fn = key_fn

    def __call__(self, item: T) -> tuple[Arrays, bool]:
        key = self.key_fn(item) if self.store is not None else {}
        return cached(self.store, key, lambda: self.fn(item), NPZ)


def train_many(
    fn: Callable[[T], Arrays],
    items: Sequence[T],
    *,
    executor: Executor,
    store: ArtifactStore | None,
    key_fn: Callable[[T], Mapping[str, Any]],
    desc: str,
    label: Callable[[T], str] | None = None,
) -> tuple[list[Arrays], list[bool]]:
    """Results of ``fn`` on every item (in order) and, per item, whether it was computed.

    ``fn`` and ``key_fn`` must be picklable for a process or Ray executor.
    """
    task = CachedTask(fn, store, key_fn)
    res = executor.map(task, list(items), desc=desc, label=label)
    return [r for r, _ in res], [bool(c) for _, c in res]


# --------------------------------------------------------------------------------------
# one cached model per job, with cached per-record outputs
# --------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ModelJob:
    """One model of a :func:`train_models` call.

    Attributes
    ----------
    model_id : str
        The model's name in the experiment (a row of its signal tables).
    key_parts : mapping
        Everything that produced the model (dataset fingerprint, training record ids,
        trainer settings, seed, role, ...): its store key is their hash.
    train_ids : array
        Record ids of its training set.
    seed : int
        Its training seed.
    outputs : tuple of str
        The outputs wanted from it (e.g. evaluation sets), computed by
        :meth:`ModelSteps.output`.
    spec : any
        What else the experiment's fit reads (e.g. the role of the model).
    """

    model_id: str
    key_parts: Mapping[str, Any]
    train_ids: NDArray[Any]
    seed: int
    outputs: tuple[str, ...] = ()
    spec: Any = None

    @property
    def key(self) -> str:
        return hash_key(self.key_parts)

    @property
    def label(self) -> str:
        role = self.spec if isinstance(self.spec, str) else "model"
        return f"{role} model {self.model_id!r}"


@dataclasses.dataclass(frozen=True)
class ModelOutputs:
    """What :func:`train_models` returns per job: its outputs, whether the model was
    trained in this call (False: loaded, or not needed), and its store key."""

    values: dict[str, NDArray[np.float64]]
    created: bool
    key: str


class ModelSteps(Protocol):
    """What an experiment tells :func:`train_models` (picklable, run in the workers)."""

    def fit(self, job: ModelJob) -> Model:
        """Train ``job``'s model."""

    def fit_many(self, jobs: Sequence[ModelJob]) -> list[Model] | None:
        """Train several models as one computation, or None when it cannot."""

    def output(self, job: ModelJob, model: Model, name: str) -> NDArray[np.float64]:
        """Output ``name`` of ``job``'s model (float64 array)."""

    def output_key(self, job: ModelJob, name: str) -> Mapping[str, Any]:
        """Key parts of output ``name`` (besides the model's key, ``"model"``)."""


class ModelTask:
    """Trains (or loads) one model and returns its outputs; runs in a worker.

    ``prefit`` maps a job's key to its model already trained in this process (and
    stored), with whether it was trained in this run: e.g. the reference models fitted
    in one batch with the target (:meth:`fit_together`); such a job is neither loaded
    nor refitted.
    """

    def __init__(
        self,
        steps: ModelSteps,
        codec: Codec[Model],
        store: ArtifactStore | None,
        prefit: Mapping[str, tuple[Model, bool]] | None = None,
    ) -> None:
        self.steps = steps
        self.codec = codec
        self.store = store
        self.prefit: dict[str, tuple[Model, bool]] = dict(prefit or {})

    def model(
        self, job: ModelJob, fitted: Model | None = None, since: int | None = None
    ) -> tuple[Model, bool]:
        """``job``'s model: from the store, else ``fitted`` (already trained, e.g. by a
        batched fit that began at ``interrupts.mark() == since``) or a fresh fit; stored
        when a store is given and no signal arrived while it trained."""

        if fitted is None and job.key in self.prefit:
            return self.prefit[job.key]

        def create() -> Model:
            return self.steps.fit(job) if fitted is None else fitted

        codec = self.codec
        if isinstance(codec.save, _ModelSaver):  # name the job in a refusal to save
            codec = dataclasses.replace(codec, save=_ModelSaver(codec.save.trainer_save, job.label))
        return cached(self.store, job.key_parts, create, codec, since=since)

    @property
    def device(self) -> str | None:
        """The device the steps train on (their ``device``: a torch recipe's), None when
        they name none; a Ray executor places the task by it
        (:mod:`privaudit.runtime.task_resources`)."""
        device = getattr(self.steps, "device", None)
        return device if isinstance(device, str) else None

    def on_device(self, device: str) -> ModelTask:
        """The same task with its steps pinned to ``device`` (their ``on_device``); itself
        when the steps cannot be pinned."""
        pin = getattr(self.steps, "on_device", None)
        if not callable(pin):
            return self
        return ModelTask(pin(device), self.codec, self.store, self.prefit)

    def __call__(self, job: ModelJob) -> ModelOutputs:
        return self.run(job)

    def run(self, job: ModelJob, preloaded: tuple[Model, bool] | None = None) -> ModelOutputs:
        """The outputs of ``job``'s model; trains (or loads) it only if one is missing."""
        memo: list[tuple[Model, bool]] = [] if preloaded is None else [preloaded]

        def get_model() -> Model:
            if not memo:
                memo.append(self.model(job))
            return memo[0][0]

        key = job.key
        out: dict[str, NDArray[np.float64]] = {}
        for name in job.outputs:

            def compute(name: str = name) -> NDArray[np.float64]:
                return self.steps.output(job, get_model(), name)

            parts = {**self.steps.output_key(job, name), "model": key}
            out[name], _ = cached(self.store, parts, compute, NPY)
        return ModelOutputs(out, memo[0][1] if memo else False, key)

    def run_batched(self, jobs: Sequence[ModelJob]) -> list[ModelOutputs] | None:
        """Fit the jobs' models as one computation (:meth:`ModelSteps.fit_many`) when
        any of them is not in the store, store the missing ones, then compute every
        job's outputs in this process; None when the steps cannot fit them together.

        The whole chunk is fitted, not only its missing models: a batched fit's weights
        depend in their last bits on which models share the batch (the stacked matrix
        products round differently), so a run resumed after an interrupt, or one asking
        for more models, refits the chunk an uninterrupted run fitted and gives its
        numbers exactly; the models already stored are still read from the store.
        """
        store = self.store
        missing = any(
            j.key not in self.prefit and (store is None or not store.contains(j.key_parts))
            for j in jobs
        )
        todo = list(jobs) if missing else []
        fitted: dict[str, Model] = {}
        with interrupts.watching() as since:  # a signal during fit_many: none is stored
            if todo:
                models = self.steps.fit_many(todo)
                if models is None:
                    return None
                fitted = {j.model_id: m for j, m in zip(todo, models, strict=True)}
            return [
                self.run(
                    j, self.model(j, fitted[j.model_id], since) if j.model_id in fitted else None
                )
                for j in jobs
            ]

    def fit_together(self, jobs: Sequence[ModelJob]) -> dict[str, tuple[Model, bool]] | None:
        """Fit the jobs' models as one computation (:meth:`ModelSteps.fit_many`) when any
        of them is not in the store, and store them: ``{job key: (model, trained in
        this call)}`` for every job (a model already in the store is read from it, as
        in :meth:`run_batched`); ``{}`` when all are stored; None when the steps cannot
        fit them together. The result is the ``prefit`` of later tasks, e.g. the target
        fitted in the batch of its reference models (same recipe, one computation).
        """
        store = self.store
        if not any(store is None or not store.contains(j.key_parts) for j in jobs):
            return {}
        with interrupts.watching() as since:  # a signal during fit_many: none is stored
            models = self.steps.fit_many(list(jobs))
            if models is None:
                return None
            return {j.key: self.model(j, m, since) for j, m in zip(jobs, models, strict=True)}


def train_models(
    task: ModelTask,
    jobs: Sequence[ModelJob],
    *,
    executor: Executor,
    desc: str,
    batched: bool = False,
    batch_size: int | None = None,
) -> list[ModelOutputs]:
    """Train (or load) every job's model and return its outputs, in order.

    With ``batched`` (and more than one job) the missing models are fitted together in
    chunks of ``batch_size`` jobs (None: all at once) by the steps' ``fit_many`` in this
    process, typically on one accelerator; otherwise, or when the steps cannot batch,
    the executor fits them one by one (in parallel). Either way each model and each
    output is cached in the task's store and a finished job is never redone.
    """
    jobs = list(jobs)
    if batched and len(jobs) > 1:
        step = len(jobs) if batch_size is None else max(1, int(batch_size))
        out: list[ModelOutputs] = []
        # a batched chunk trains in this process: its progress is counted in models
        with progress_bar(f"{desc} (batched)", len(jobs), enabled=executor.progress) as bar:
            for start in range(0, len(jobs), step):
                chunk = jobs[start : start + step]
                res = task.run_batched(chunk) if len(chunk) > 1 else None
                if res is None:
                    res = executor.map(task, chunk, desc=desc, label=lambda j: j.label)
                out += res
                bar.advance(len(chunk))
        return out
    return executor.map(task, jobs, desc=desc, label=lambda j: j.label)
