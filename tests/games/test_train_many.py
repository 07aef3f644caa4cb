"""The shared "train many" step (games/train_many.py) and Ye et al.'s experiment on it."""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray
from sklearn.linear_model import LogisticRegression

from privaudit.data import load_digits
from privaudit.errors import DesignError
from privaudit.membership.experiment import ExperimentConfig, run_experiment
from privaudit.models import SklearnTrainer
from privaudit.models.base import Model
from privaudit.models.train_many import ModelJob, ModelTask, model_codec, train_models
from privaudit.runtime.executor import LocalExecutor
from privaudit.runtime.store import ArtifactStore, hash_key

X = np.random.default_rng(0).normal(size=(60, 3))
Y = (X[:, 0] > 0).astype(np.int64)
TRAINER = SklearnTrainer(LogisticRegression(max_iter=200), n_classes=2)


class Steps:
    """Fits logistic regressions on subsets; output = the model's logits on X."""

    def __init__(self, batched: bool = True) -> None:
        self.batched = batched
        self.fits: list[str] = []
        self.batches: list[list[str]] = []

    def fit(self, job: ModelJob) -> Model:
        self.fits.append(job.model_id)
        pos = np.asarray(job.train_ids)
        return TRAINER.fit(X[pos], Y[pos], seed=job.seed)

    def fit_many(self, jobs: Sequence[ModelJob]) -> list[Model] | None:
        if not self.batched:
            return None
        self.batches.append([j.model_id for j in jobs])
        return [
            TRAINER.fit(X[np.asarray(j.train_ids)], Y[np.asarray(j.train_ids)], seed=j.seed)
            for j in jobs
        ]

    def output(self, job: ModelJob, model: Model, name: str) -> NDArray[np.float64]:
        scale = 1.0 if name == "a" else 2.0
        return scale * np.asarray(model.logits(X), dtype=np.float64)

    def output_key(self, job: ModelJob, name: str) -> dict[str, Any]:
        return {"artifact": "out", "name": name}


def _jobs(n: int = 4) -> list[ModelJob]:
    rng = np.random.default_rng(1)
    out = []
    for j in range(n):
        ids = np.sort(rng.choice(60, size=30, replace=False))
        out.append(
            ModelJob(
                f"m{j}", {"artifact": "model", "ids": ids, "seed": j}, ids, j, ("a", "b"), "toy"
            )
        )
    return out


def test_models_and_outputs_are_cached_and_resumable(tmp_path: Path) -> None:
    store = ArtifactStore(tmp_path)
    steps = Steps(batched=False)
    task = ModelTask(steps, model_codec(TRAINER), store)
    ex = LocalExecutor(1, progress=False)
    first = train_models(task, _jobs(), executor=ex, desc="toy")
    assert [r.created for r in first] == [True] * 4 and len(steps.fits) == 4
    assert first[0].key == hash_key(_jobs()[0].key_parts)
    np.testing.assert_array_equal(first[1].values["b"], 2 * first[1].values["a"])
    # everything stored: nothing is fitted, and no model is even loaded
    again = train_models(task, _jobs(), executor=ex, desc="toy")
    assert [r.created for r in again] == [False] * 4 and len(steps.fits) == 4
    for r, s in zip(first, again, strict=True):
        for k in ("a", "b"):
            np.testing.assert_array_equal(r.values[k], s.values[k])
    # a lost output is recomputed from the stored model, without refitting it
    out_key = store.key({"artifact": "out", "name": "b", "model": first[2].key})
    shutil.rmtree(store.entry_dir(out_key))
    third = train_models(task, _jobs(), executor=ex, desc="toy")
    assert len(steps.fits) == 4 and not third[2].created
    np.testing.assert_array_equal(third[2].values["b"], first[2].values["b"])
    # a lost model (and its outputs) is refitted alone
    for k in (first[3].key, store.key({"artifact": "out", "name": "a", "model": first[3].key})):
        shutil.rmtree(store.entry_dir(k))
    fourth = train_models(task, _jobs(), executor=ex, desc="toy")
    assert steps.fits[4:] == ["m3"] and [r.created for r in fourth] == [False] * 3 + [True]
    np.testing.assert_array_equal(fourth[3].values["a"], first[3].values["a"])


def test_batched_fits_refit_the_whole_chunk_of_a_missing_model(tmp_path: Path) -> None:
    store = ArtifactStore(tmp_path)
    ex = LocalExecutor(1, progress=False)
    one = train_models(
        ModelTask(Steps(batched=False), model_codec(TRAINER), None),
        _jobs(),
        executor=ex,
        desc="toy",
    )
    steps = Steps(batched=True)
    task = ModelTask(steps, model_codec(TRAINER), store)
    train_models(task, _jobs()[:1], executor=ex, desc="toy", batched=True)  # one job: no batch
    assert steps.batches == [] and steps.fits == ["m0"]
    res = train_models(task, _jobs(), executor=ex, desc="toy", batched=True, batch_size=2)
    # m1 is missing: its chunk is fitted whole, as an uninterrupted run fitted it; m0 is
    # still read from the store
    assert steps.batches == [["m0", "m1"], ["m2", "m3"]]
    assert [r.created for r in res] == [False, True, True, True]
    for a, b in zip(one, res, strict=True):
        np.testing.assert_array_equal(a.values["a"], b.values["a"])
    # steps that cannot batch fall back to one-by-one fits through the executor
    fallback = Steps(batched=False)
    res2 = train_models(
        ModelTask(fallback, model_codec(TRAINER), None),
        _jobs(),
        executor=ex,
        desc="toy",
        batched=True,
    )
    assert fallback.fits == ["m0", "m1", "m2", "m3"]
    np.testing.assert_array_equal(res2[3].values["b"], one[3].values["b"])


class TorchSteps(Steps):
    """Batched torch MLPs (:func:`privaudit.models.torch_batched.fit_many`)."""

    def __init__(self) -> None:
        super().__init__(batched=True)
        from privaudit.models.torch_models import TorchRecipe, TorchTrainer

        recipe = TorchRecipe(
            factory="privaudit.models.torch_nets:mlp",
            factory_kwargs={"n_features": 3, "n_classes": 2, "hidden": 16},
            epochs=5,
            batch_size=8,
            device="cpu",
        )
        self.trainer = TorchTrainer(recipe, n_classes=2)

    def fit(self, job: ModelJob) -> Model:  # pragma: no cover - only batches here
        raise AssertionError("batched steps fit one model alone")

    def fit_many(self, jobs: Sequence[ModelJob]) -> list[Model] | None:
        from privaudit.models.torch_batched import fit_many

        self.batches.append([j.model_id for j in jobs])
        subsets = [np.asarray(j.train_ids) for j in jobs]
        return list(fit_many(self.trainer, X, Y, subsets, [j.seed for j in jobs], n_classes=2))


def test_a_resumed_batched_torch_phase_gives_the_uninterrupted_numbers(tmp_path: Path) -> None:
    """An interrupt stored three of four batched models: the resumed run refits the
    batch of four (a model's last bits depend on its batch mates) and every output
    equals the uninterrupted run's bit for bit."""
    pytest.importorskip("torch")
    ex = LocalExecutor(1, progress=False)
    steps = TorchSteps()
    clean = train_models(
        ModelTask(steps, model_codec(steps.trainer), ArtifactStore(tmp_path / "clean")),
        _jobs(),
        executor=ex,
        desc="toy",
        batched=True,
    )
    store = ArtifactStore(tmp_path / "resumed")
    task = ModelTask(steps, model_codec(steps.trainer), store)
    first = train_models(task, _jobs(), executor=ex, desc="toy", batched=True)
    lost = first[2].key  # the model the interrupt kept out, and its outputs
    for k in (lost, *(store.key({"artifact": "out", "name": n, "model": lost}) for n in "ab")):
        shutil.rmtree(store.entry_dir(k))
    steps.batches.clear()
    resumed = train_models(task, _jobs(), executor=ex, desc="toy", batched=True)
    assert steps.batches == [["m0", "m1", "m2", "m3"]]
    assert [r.created for r in resumed] == [False, False, True, False]
    for a, b in zip(clean, resumed, strict=True):
        for name in ("a", "b"):
            np.testing.assert_array_equal(a.values[name], b.values[name])


# --------------------------------------------------------------------------------------
# Ye et al.'s experiment on the shared step
# --------------------------------------------------------------------------------------

CFG = ExperimentConfig(
    attacks=("loss", "reference", "lira-online", "distillation", "leave-one-out", "shadow"),
    n_target_pool=80,
    n_population=160,
    n_reference=4,
    n_shadow=2,
    n_distilled=2,
    n_leave_one_out=2,
    leave_one_out_sample=4,
    alpha=0.1,
    seed=11,
)


def _trainer() -> SklearnTrainer:
    return SklearnTrainer(LogisticRegression(C=10.0, max_iter=100), n_classes=10)


@pytest.fixture(scope="module")
def stored(tmp_path_factory):  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("ye-store")
    return root, run_experiment(load_digits(), _trainer(), CFG, store=root, progress=False)


def test_experiment_store_keys_are_the_documented_ones(stored) -> None:  # type: ignore[no-untyped-def]
    """Changing a key silently retrains old caches (or worse): keep them as documented
    in games/ye.py."""
    root, res = stored
    manifests = list(ArtifactStore(root).manifests())
    models = [m["key_parts"] for m in manifests if m["key_parts"]["artifact"] == "model"]
    signals = [m["key_parts"] for m in manifests if m["key_parts"]["artifact"] == "signals"]
    base = {"artifact", "role", "dataset", "train_ids", "n_classes", "trainer", "settings", "seed"}
    for kp in models:
        extra = {"teacher", "distill_method"} if kp["role"] == "distilled" else set()
        assert set(kp) == base | extra
    roles = sorted({kp["role"] for kp in models})
    assert roles == ["distilled", "leave-one-out", "reference", "shadow", "target"]
    model_keys = {m["key"] for m in manifests if m["key_parts"]["artifact"] == "model"}
    assert signals and all(set(kp) == {"artifact", "model", "records", "signals"} for kp in signals)
    assert {kp["model"] for kp in signals} == model_keys
    assert len(models) == sum(res.models_trained.values())


def _same_scores(a: Any, b: Any, exact: bool = True) -> None:
    for name in CFG.attacks:
        np.testing.assert_array_equal(a.scores[name].record_ids, b.scores[name].record_ids)
        if exact:
            np.testing.assert_array_equal(a.scores[name].scores, b.scores[name].scores)
        else:  # worker processes run BLAS single-threaded: equal up to the reduction order
            np.testing.assert_allclose(
                a.scores[name].scores, b.scores[name].scores, rtol=1e-9, atol=1e-12
            )


def test_experiment_resumes_from_a_partial_store(stored, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    root, first = stored
    shutil.copytree(root, tmp_path / "s")
    # drop half of the store's entries (models and signal tables): the run resumes
    entries = sorted(p for shard in (tmp_path / "s" / "objects").iterdir() for p in shard.iterdir())
    for p in entries[::2]:
        shutil.rmtree(p)
    resumed = run_experiment(load_digits(), _trainer(), CFG, store=tmp_path / "s", progress=False)
    assert 0 < sum(resumed.models_trained.values()) < sum(first.models_trained.values())
    cached = run_experiment(load_digits(), _trainer(), CFG, store=tmp_path / "s", progress=False)
    assert sum(cached.models_trained.values()) == 0
    assert cached.models_loaded == first.models_trained
    _same_scores(first, resumed)
    _same_scores(first, cached)


@pytest.mark.slow
def test_experiment_fresh_and_two_workers_match_the_stored_run(stored) -> None:  # type: ignore[no-untyped-def]
    _, first = stored
    fresh = run_experiment(load_digits(), _trainer(), CFG, progress=False)
    _same_scores(first, fresh)
    two = run_experiment(
        load_digits(), _trainer(), dataclasses.replace(CFG, n_jobs=2), progress=False
    )
    _same_scores(first, two, exact=False)


def test_unpersistable_model_is_named(tmp_path: Path) -> None:
    class Odd:
        n_classes = 2

        def logits(self, X: NDArray[np.float64]) -> NDArray[np.float64]:
            return np.zeros((len(X), 2))

    codec = model_codec(TRAINER, label="reference model 'ref-000'")
    with pytest.raises(DesignError, match=r"ref-000.*Odd"):
        codec.save(Odd(), tmp_path / "m.skops")  # type: ignore[arg-type]


def test_a_population_too_small_for_the_shadow_models_fails_before_any_training() -> None:
    # attack S's shadow models train on population subsets of the target's training-set
    # size: with 100 members and 90 population records the design cannot be followed, and
    # the run must say so before it spends the reference models' training
    fits: list[int] = []

    class Counting(SklearnTrainer):
        def fit(self, X: Any, y: Any, **kw: Any) -> Any:
            fits.append(len(y))
            return super().fit(X, y, **kw)

    trainer = Counting(LogisticRegression(C=10.0, max_iter=100), n_classes=10)
    cfg = dataclasses.replace(
        CFG, attacks=("loss", "lira-online", "shadow"), n_target_pool=200, n_population=90
    )
    with pytest.raises(DesignError, match="n_population must exceed it, found 90"):
        run_experiment(load_digits(), trainer, cfg, progress=False)
    assert fits == []
    # with the population larger than the target's training set it runs
    ok = dataclasses.replace(cfg, n_population=600)
    assert "shadow" in run_experiment(load_digits(), trainer, ok, progress=False).scores
