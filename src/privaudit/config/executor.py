"""The executor fields every command's config shares: ``executor``, ``ray_address`` and
``ray_gpus_per_task`` (beside ``n_jobs``, :data:`privaudit.config.base.NJobs`).

``executor: local`` runs the independent units of a procedure (models, rounds, bootstrap
refits, classifiers, scoring passes) in ``n_jobs`` local processes; ``executor: ray`` runs
each as a Ray task on the cluster at ``ray_address`` (None: start a local instance;
``auto``: the cluster this machine belongs to). The artifact store (``cache_dir``) must
then be a path every node sees (a network filesystem on a real cluster).
:func:`privaudit.runtime.executor_setting.make_executor` builds the executor.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from privaudit._validation import check_gpus_per_task
from privaudit.errors import InvalidInputError

__all__ = ["ExecutorKind", "RayAddress", "RayGpusPerTask", "check_ray_address"]

#: ``executor``: where a command's independent units run.
ExecutorKind = Annotated[
    Literal["local", "ray"],
    Field(description="Where the independent units run: local processes (n_jobs) or Ray."),
]

#: ``ray_address``: the Ray cluster of ``executor: ray``.
RayAddress = Annotated[
    str | None,
    Field(
        description="Address of a running Ray cluster (executor: ray): 'auto', 'host:port' "
        "or 'ray://host:10001'; None starts a local instance."
    ),
]


def _gpus_per_task(value: float) -> float:
    try:
        return check_gpus_per_task(value)
    except InvalidInputError as err:  # pydantic reports a ValueError under the field's name
        raise ValueError(str(err).removeprefix("gpus_per_task: ")) from None


#: ``ray_gpus_per_task``: the GPUs a task that trains or scores a torch model on CUDA
#: requests from Ray (:mod:`privaudit.runtime.task_resources`).
RayGpusPerTask = Annotated[
    float,
    AfterValidator(_gpus_per_task),
    Field(
        description="GPUs each torch task requests on Ray when its device is cuda (or auto "
        "and a node has that many): 1, a fraction such as 0.25 (four tasks share a GPU) or a "
        "whole number; ignored by executor: local."
    ),
]


def check_ray_address(executor: str, ray_address: str | None) -> None:
    """A model validator's check: ``ray_address`` only with ``executor: ray``."""
    if ray_address is not None and executor != "ray":
        raise ValueError(
            f"ray_address: expected only with 'executor: ray', found executor: {executor}"
        )
