"""What one Ray task asks the cluster for: the GPU placement of torch tasks.

A task (the function an :class:`~privaudit.runtime.executor_base.Executor` maps) may say
on which device it computes: a ``device`` attribute, ``"auto"``, ``"cpu"`` or ``"cuda"``
(a torch recipe's :attr:`~privaudit.models.torch_recipe.TorchRecipe.device`, passed up
by :class:`~privaudit.models.train_many.ModelTask`), and an ``on_device(device)`` method
returning the same task pinned to one device. :class:`~privaudit.runtime.ray_executor.RayExecutor`
reads it before a map (:func:`gpu_request`):

* ``"cpu"``: no GPU;
* ``"cuda"``: ``gpus_per_task`` GPUs (1, or a fraction that packs several tasks on one
  GPU); a cluster where no alive node has that many fails at once with an error that
  names the recipe's device, instead of a task Ray can never schedule (which would wait
  forever);
* ``"auto"``: ``gpus_per_task`` GPUs when some alive node has them, else none; the task is
  then pinned to ``"cuda"`` or ``"cpu"`` accordingly (:func:`pin_device`), so that a task
  without a GPU reservation never trains on a GPU it happens to see;
* no device (scikit-learn models, generators, statistics): the executor's ``num_gpus``.

Ray gives a task that reserved GPUs its own ``CUDA_VISIBLE_DEVICES``, so ``cuda`` in
the task is the GPU it reserved. The numbers do not depend on the placement beyond
floating-point noise (a recipe's device is not part of its cache key).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from privaudit._validation import check_gpus_per_task, fail

__all__ = ["DEVICES", "check_gpus_per_task", "gpu_request", "pin_device", "task_device"]

#: The devices a task may name (those of a torch recipe).
DEVICES: tuple[str, ...] = ("auto", "cpu", "cuda")


def task_device(fn: Any) -> str | None:
    """The device ``fn`` computes on: ``"auto"``, ``"cpu"`` or ``"cuda"`` (``"cuda:N"``
    counts as ``"cuda"``), from its ``device`` attribute; None when it names none of them."""
    device = getattr(fn, "device", None)
    if not isinstance(device, str):
        return None
    if device.startswith("cuda:"):
        return "cuda"
    return device if device in DEVICES else None


def gpu_request(
    device: str | None,
    node_gpus: Sequence[float],
    *,
    gpus_per_task: float = 1.0,
    default: float = 0.0,
) -> float:
    """GPUs a task on ``device`` requests on a cluster whose alive nodes have ``node_gpus``.

    Parameters
    ----------
    device : {"auto", "cpu", "cuda"} or None
        The task's device (:func:`task_device`); None: a task that names none.
    node_gpus : sequence of float
        The ``GPU`` resource of every alive node of the cluster.
    gpus_per_task : float
        What a task that computes on CUDA requests (a fraction in (0, 1] or a whole number).
    default : float
        What a task that names no device requests (the executor's ``num_gpus``).

    Returns
    -------
    float
        The task's ``num_gpus``.

    Raises
    ------
    InvalidInputError
        ``device="cuda"`` and no alive node has ``gpus_per_task`` GPUs: Ray could never
        schedule the task.

    Examples
    --------
    >>> gpu_request("auto", [0.0, 1.0]), gpu_request("auto", [0.0]), gpu_request("cpu", [8.0])
    (1.0, 0.0, 0.0)
    """
    if device is None:
        return float(default)
    if device not in DEVICES:
        raise fail("device", "'auto', 'cpu' or 'cuda'", repr(device))
    if device == "cpu":
        return 0.0
    need = check_gpus_per_task(gpus_per_task)
    fits = any(float(g) >= need for g in node_gpus)
    if device == "auto":
        return need if fits else 0.0
    if not fits:
        largest = max((float(g) for g in node_gpus), default=0.0)
        raise fail(
            "device",
            f"a Ray node with {need:g} GPU for a torch recipe with device 'cuda' "
            "(or device: cpu / auto to train on the CPU)",
            f"{len(node_gpus)} alive node(s), at most {largest:g} GPU on one",
        )
    return need


def pin_device(fn: Any, gpus: float) -> Any:
    """``fn`` pinned to ``"cuda"`` (``gpus > 0``) or ``"cpu"`` when its device is ``"auto"``
    and it has ``on_device``; otherwise ``fn`` itself."""
    if getattr(fn, "device", None) != "auto" or not callable(getattr(fn, "on_device", None)):
        return fn
    return fn.on_device("cuda" if gpus > 0 else "cpu")
