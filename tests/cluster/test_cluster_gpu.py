"""GPU placement on a REAL Ray cluster (issue 32, item 5). Without a GPU node: a task of a
CPU recipe (or of ``device: auto``, which finds no GPU node) requests no GPU and runs on
the CPU; a task that needs CUDA fails at once with an error naming the recipe's device,
instead of waiting forever for a GPU no node has. With a worker node that declares a GPU
(``ray start --num-gpus 1``: Ray does not check the hardware, so this machine can stand in
for a GPU node as long as the task does not initialise CUDA): a ``cuda`` or ``auto`` task
reserves the GPU and is placed on that node with its own ``CUDA_VISIBLE_DEVICES``, and the
config's ``ray_gpus_per_task`` sets the fraction it reserves."""

from __future__ import annotations

import time
from typing import Any

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


@pytest.mark.parametrize("device", ["cpu", "auto"])
def test_cpu_recipe_requests_no_gpu(two_nodes: Any, device: str) -> None:
    import cluster_tasks

    from privaudit.runtime.executor import RayExecutor

    ex = RayExecutor(address=two_nodes.address, progress=False)
    got = ex.map(cluster_tasks.DeviceProbe(device), [0, 1], desc="probe", label=str)
    assert ex.task_gpus(cluster_tasks.DeviceProbe(device)) == 0.0
    for seen, assigned, _ in got:
        assert seen == "cpu"  # "auto" is pinned to the CPU: no GPU was reserved for it
        assert assigned.get("CPU") == 1.0
        assert assigned.get("GPU", 0.0) == 0.0


def test_cuda_recipe_without_gpu_fails_fast(two_nodes: Any) -> None:
    import cluster_tasks

    from privaudit.errors import InvalidInputError
    from privaudit.runtime.executor import RayExecutor

    ex = RayExecutor(address=two_nodes.address, progress=False)
    start = time.monotonic()
    with pytest.raises(InvalidInputError, match="device 'cuda'") as info:
        ex.map(cluster_tasks.DeviceProbe("cuda"), [0, 1], desc="probe", label=str)
    assert time.monotonic() - start < 30  # not a task waiting for a GPU forever
    assert "0 GPU" in str(info.value)
    assert ex.tasks_run == 0  # nothing was submitted


@pytest.fixture
def gpu_node(two_nodes: Any) -> Any:
    """The cluster with one more worker node that declares 1 GPU; ended after the test
    (and no longer listed as alive), so that the tests without a GPU node see none."""
    proc = two_nodes.add_worker(num_gpus=1)
    try:
        yield two_nodes
    finally:
        two_nodes.remove_worker(proc)


@pytest.mark.parametrize("device", ["cuda", "auto"])
def test_gpu_task_is_placed_on_the_gpu_node(gpu_node: Any, device: str) -> None:
    import cluster_tasks

    from privaudit.runtime.executor import RayExecutor

    ex = RayExecutor(address=gpu_node.address, progress=False)
    probe = cluster_tasks.DeviceProbe(device)
    assert ex.task_gpus(probe) == 1.0
    got = ex.map(probe, [0, 1, 2], desc="probe", label=str)
    for seen, assigned, visible in got:
        assert seen == "cuda"  # "auto" is pinned to the GPU it reserved
        assert assigned.get("GPU") == 1.0
        assert visible == "0"  # Ray gave the task the node's one GPU


def test_config_gpus_per_task_reserves_a_fraction(gpu_node: Any) -> None:
    """``ray_gpus_per_task: 0.5`` of a config, through the executor every command builds."""
    import cluster_tasks

    from privaudit.membership.config import AuditConfig
    from privaudit.membership.pipeline import build_executor
    from privaudit.runtime.executor_setting import make_executor

    cfg = AuditConfig.model_validate(
        {
            "dataset": "adult",
            "model": {"kind": "logistic"},
            "executor": "ray",
            "ray_address": gpu_node.address,
            "ray_gpus_per_task": 0.5,
        }
    )
    for ex in (
        build_executor(cfg, 1, progress=False),
        make_executor("ray", address=gpu_node.address, gpus_per_task=0.5, progress=False),
    ):
        got = ex.map(cluster_tasks.DeviceProbe("cuda"), [0, 1], desc="probe", label=str)
        for seen, assigned, visible in got:
            assert (seen, assigned.get("GPU"), visible) == ("cuda", 0.5, "0")
