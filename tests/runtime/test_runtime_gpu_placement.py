"""GPU placement of torch tasks on Ray (issue 32, item 5), without a GPU: the decision
(:func:`privaudit.runtime.task_resources.gpu_request`) and the ``num_gpus`` that
:class:`RayExecutor` passes to ``ray.remote``, on a stand-in for ray's task API."""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from privaudit.errors import InvalidInputError
from privaudit.runtime.executor import RayExecutor
from privaudit.runtime.task_resources import (
    check_gpus_per_task,
    gpu_request,
    pin_device,
    task_device,
)


@pytest.mark.parametrize(
    ("device", "nodes", "per_task", "expected"),
    [
        ("cpu", [], 1.0, 0.0),
        ("cpu", [8.0], 1.0, 0.0),  # a CPU recipe never holds a GPU, even where there is one
        ("auto", [], 1.0, 0.0),
        ("auto", [0.0, 0.0], 1.0, 0.0),
        ("auto", [0.0, 1.0], 1.0, 1.0),  # one GPU node is enough
        ("auto", [0.0, 1.0], 0.25, 0.25),
        ("auto", [1.0], 2.0, 0.0),  # no node has 2 GPUs: CPU
        ("cuda", [0.0, 1.0], 1.0, 1.0),
        ("cuda", [1.0], 0.5, 0.5),
        ("cuda", [4.0], 2.0, 2.0),
        (None, [1.0], 1.0, 0.0),  # a task without a device: the executor's num_gpus
    ],
)
def test_gpu_request_decision(
    device: str | None, nodes: list[float], per_task: float, expected: float
) -> None:
    assert gpu_request(device, nodes, gpus_per_task=per_task) == expected


def test_task_without_device_gets_the_default() -> None:
    assert gpu_request(None, [], default=0.5) == 0.5


@pytest.mark.parametrize(("nodes", "per_task"), [([], 1.0), ([0.0, 0.0], 1.0), ([1.0], 2.0)])
def test_cuda_without_a_fitting_node_fails_naming_the_device(
    nodes: list[float], per_task: float
) -> None:
    with pytest.raises(InvalidInputError, match="device: expected a Ray node with") as info:
        gpu_request("cuda", nodes, gpus_per_task=per_task)
    assert "device 'cuda'" in str(info.value)
    assert f"{len(nodes)} alive node(s)" in str(info.value)


@pytest.mark.parametrize("bad", [0, -1, 1.5, float("nan"), True, "1"])
def test_gpus_per_task_validated(bad: Any) -> None:
    with pytest.raises(InvalidInputError, match="gpus_per_task"):
        check_gpus_per_task(bad)
    with pytest.raises(InvalidInputError, match="gpus_per_task"):
        RayExecutor(gpus_per_task=bad)


class _Probe:
    def __init__(self, device: Any) -> None:
        self.device = device

    def on_device(self, device: str) -> _Probe:
        return _Probe(device)

    def __call__(self, x: int) -> tuple[Any, int]:
        return self.device, x


def test_task_device_and_pinning() -> None:
    assert task_device(_Probe("cuda:1")) == "cuda"
    assert task_device(_Probe("tpu")) is None and task_device(_Probe(None)) is None
    assert task_device(lambda x: x) is None
    assert pin_device(_Probe("auto"), 1.0).device == "cuda"
    assert pin_device(_Probe("auto"), 0.0).device == "cpu"
    probe = _Probe("cuda")
    assert pin_device(probe, 1.0) is probe  # only "auto" is pinned


def _recording_ray(node_gpus: list[tuple[float, bool]]) -> Any:
    """ray's task API, tasks run in this process; records the options of ``ray.remote``."""
    ray: Any = types.ModuleType("ray")
    ray.options = []

    class _Ref:
        def __init__(self, value: Any) -> None:
            self.value = value

    def remote(**opts: Any) -> Callable[[Callable[..., Any]], Any]:
        ray.options.append(opts)

        def wrap(fn: Callable[..., Any]) -> Any:
            class _Remote:
                @staticmethod
                def remote(*args: Any) -> _Ref:
                    return _Ref(fn(*(a.value if isinstance(a, _Ref) else a for a in args)))

            return _Remote

        return wrap

    ray.remote = remote
    ray.put = _Ref
    ray.wait = lambda pending, num_returns=1: (pending[:1], pending[1:])
    ray.get = lambda ref: ref.value
    ray.cancel = lambda ref: None
    ray.is_initialized = lambda: True
    ray.nodes = lambda: [
        {"Alive": alive, "Resources": {"CPU": 1.0, **({"GPU": g} if g else {})}}
        for g, alive in node_gpus
    ]
    return ray


@pytest.mark.parametrize(
    ("device", "nodes", "per_task", "gpus", "runs_on"),
    [
        ("cpu", [(1.0, True)], 1.0, 0.0, "cpu"),
        ("auto", [(0.0, True)], 1.0, 0.0, "cpu"),
        ("auto", [(0.0, True), (1.0, True)], 1.0, 1.0, "cuda"),
        ("auto", [(1.0, False)], 1.0, 0.0, "cpu"),  # a dead node's GPU does not count
        ("cuda", [(1.0, True)], 0.25, 0.25, "cuda"),
    ],
)
def test_ray_executor_passes_num_gpus(
    monkeypatch: pytest.MonkeyPatch,
    device: str,
    nodes: list[tuple[float, bool]],
    per_task: float,
    gpus: float,
    runs_on: str,
) -> None:
    fake = _recording_ray(nodes)
    monkeypatch.setitem(sys.modules, "ray", fake)
    ex = RayExecutor(progress=False, gpus_per_task=per_task)
    assert ex.map(_Probe(device), [1, 2], desc="probe") == [(runs_on, 1), (runs_on, 2)]
    assert [o["num_gpus"] for o in fake.options] == [gpus]
    assert fake.options[0]["num_cpus"] == 1.0


def test_ray_executor_plain_task_keeps_num_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _recording_ray([(1.0, True)])
    monkeypatch.setitem(sys.modules, "ray", fake)
    RayExecutor(progress=False).map(abs, [-1], desc="abs")
    RayExecutor(progress=False, num_gpus=0.5).map(abs, [-1], desc="abs")
    assert [o["num_gpus"] for o in fake.options] == [0.0, 0.5]


def test_cuda_task_on_a_cluster_without_gpu_submits_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = _recording_ray([(0.0, True), (1.0, False)])
    monkeypatch.setitem(sys.modules, "ray", fake)
    ex = RayExecutor(progress=False)
    with pytest.raises(InvalidInputError, match="device 'cuda'"):
        ex.map(_Probe("cuda"), [1, 2], desc="probe")
    assert fake.options == [] and ex.tasks_run == 0


def _model_task(device: str, trainer_kind: str = "torch") -> Any:
    from sklearn.linear_model import LogisticRegression

    from privaudit.data.dataset import Dataset
    from privaudit.membership.ye_steps import YeSteps
    from privaudit.models.sklearn import SklearnTrainer
    from privaudit.models.torch_models import TorchTrainer
    from privaudit.models.torch_recipe import TorchRecipe
    from privaudit.models.train_many import ModelTask, model_codec

    rng = np.random.default_rng(0)
    ds = Dataset(
        "toy", np.arange(20), rng.normal(size=(20, 3)), rng.integers(0, 2, size=20),
        ("a", "b", "c"), ("no", "yes"),
    )  # fmt: skip
    recipe = TorchRecipe(
        "privaudit.models.torch_nets:mlp", {"n_features": 3, "n_classes": 2}, device=device
    )
    trainer: Any = (
        TorchTrainer(recipe) if trainer_kind == "torch" else SklearnTrainer(LogisticRegression())
    )
    steps = YeSteps(ds, trainer, ("loss",), {"audit": ds})
    return ModelTask(steps, model_codec(trainer), None), steps


def test_model_task_carries_the_recipe_device() -> None:
    """The task that trains a torch recipe's model names its device and pins "auto" with
    the same cache keys (the device is not part of a recipe's settings)."""
    task, steps = _model_task("auto")
    assert task_device(task) == "auto"
    pinned = pin_device(task, 1.0)
    assert pinned.device == "cuda" and pinned.steps.trainer.recipe.device == "cuda"
    assert task.steps.trainer.recipe.device == "auto"  # the original is left alone
    ids = np.arange(10)
    assert pinned.steps.key_parts("reference", ids, 3) == steps.key_parts("reference", ids, 3)
    assert pin_device(task, 0.0).device == "cpu"
    assert task_device(_model_task("cpu")[0]) == "cpu"
    assert task_device(_model_task("cuda")[0]) == "cuda"
    assert task_device(_model_task("auto", "sklearn")[0]) is None  # no GPU question


def test_pinned_task_trains_the_same_model() -> None:
    """Pinning "auto" to the device it resolves to here (the CPU) changes no number."""
    task, steps = _model_task("auto")
    job = steps.job("reference", "r0", np.arange(12), 7, ("audit",))
    a = task.run(job).values["audit"]
    b = pin_device(task, 0.0).run(job).values["audit"]
    assert a.shape == (1, 20) and np.isfinite(a).all()  # one signal over the 20 records
    np.testing.assert_array_equal(a, b)


def test_language_model_scoring_passes_are_placed_by_the_requested_device(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A language-model audit's scoring passes name the device the models were asked for
    (``auto`` here), so that Ray reserves a GPU for them where a node has one and none
    where no node has; pinned to the CPU they score the model where it is, with the same
    statistics as the local pass."""
    pytest.importorskip("transformers")
    from privaudit.data.text import TextRecords
    from privaudit.llm.audit import _ScoringPass
    from privaudit.models.lm_builders import tiny_gpt

    lm = tiny_gpt(seed=1, n_embd=16, max_length=64)
    lm.requested_device = "auto"  # as CausalLM.from_directory(device="auto") records it
    texts = ("To be, or not to be.", "that is the question", "Whether 'tis nobler")
    records = TextRecords(
        ids=("a", "b", "c"), texts=texts, documents=("a", "b", "c"), member=np.array([1, 0, 1]) > 0
    )
    task = _ScoringPass(records, lm.requested_device, batch_size=2, stride=None, store=None)
    assert task_device(task) == "auto"
    for nodes, gpus in (([(0.0, True), (1.0, True)], 1.0), ([(0.0, True)], 0.0)):
        fake = _recording_ray(nodes)
        monkeypatch.setitem(sys.modules, "ray", fake)
        ex = RayExecutor(progress=False)
        assert ex.task_gpus(task) == gpus
    pinned = pin_device(task, 0.0)
    assert isinstance(pinned, _ScoringPass) and pinned.pinned == "cpu"
    here = task((lm, False))
    there = pinned((lm, False))
    for a, b in zip(here, there, strict=True):
        np.testing.assert_array_equal(a.logprobs, b.logprobs)


def test_scoring_passes_name_auto_only_for_models_that_may_move() -> None:
    """The language-model audit's passes name ``auto`` (a GPU where the cluster has one)
    only when every model was asked for ``auto`` and sits on the CPU; an explicit device,
    or models the driver put on a GPU (their CUDA weights load only where that GPU is),
    name none and reserve no GPU. Pinned, a pass moves its model before scoring."""
    pytest.importorskip("transformers")
    from privaudit.data.text import TextRecords
    from privaudit.llm.audit import LLMAuditSettings, _placement_device, _scoring_passes
    from privaudit.models.lm_builders import tiny_gpt

    def fake(requested: str, device: str) -> Any:
        return types.SimpleNamespace(requested_device=requested, device=device)

    assert _placement_device([fake("auto", "cpu"), fake("auto", "cpu")]) == "auto"
    assert _placement_device([fake("auto", "cpu"), fake("auto", "cuda:0")]) is None
    assert _placement_device([fake("cuda:1", "cuda:1")]) is None
    assert _placement_device([fake("cpu", "cpu")]) is None
    assert _placement_device([types.SimpleNamespace()]) is None  # a model naming no device

    lm = tiny_gpt(seed=1, n_embd=16, max_length=64)
    lm.requested_device = "auto"
    texts = ("To be, or not to be.", "that is the question")
    records = TextRecords(
        ids=("a", "b"), texts=texts, documents=("a", "b"), member=np.array([True, False])
    )
    seen: list[Any] = []

    class _Mapper:  # records the task the audit sends, runs it pinned to the CPU
        def map(self, fn: Any, items: Any, **_: Any) -> list[Any]:
            seen.append(fn)
            return [pin_device(fn, 0.0)(i) for i in items]

    _scoring_passes(
        lm, None, records, LLMAuditSettings(), store=None, progress=None, executor=_Mapper()
    )
    assert task_device(seen[0]) == "auto"

    calls: list[str] = []

    class _Movable:
        def on_device(self, device: str) -> Any:
            calls.append(device)
            return lm

    seen[0].on_device("cuda")((_Movable(), False))
    assert calls == ["cuda"]
