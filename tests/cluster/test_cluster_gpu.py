"""GPU placement on a REAL two-node Ray cluster without a GPU (issue 32, item 5): a task of
a CPU recipe (or of ``device: auto``, which finds no GPU node) requests no GPU and runs on
the CPU; a task that needs CUDA fails at once with an error naming the recipe's device,
instead of waiting forever for a GPU no node has."""

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
    for seen, assigned in got:
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
