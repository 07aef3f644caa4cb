"""The one executor setting of every command: ``executor: local | ray``, ``ray_address``,
``ray_gpus_per_task``, ``n_jobs`` (:func:`make_executor`).

Every procedure reads the same three fields from its config (``privaudit run``,
``record-risk``, ``panoramia``, the language-model audit) and the same ``--ray ADDRESS``
flag where a command takes flags (``zero-run`` too), and sends its independent units
through the :class:`~privaudit.runtime.executor_base.Executor` this function returns.
"""

from __future__ import annotations

from privaudit._validation import check_choice, fail
from privaudit.runtime.executor import LocalExecutor, RayExecutor
from privaudit.runtime.executor_base import Executor
from privaudit.runtime.progress import ProgressOption

__all__ = ["EXECUTOR_KINDS", "make_executor"]

#: The values of a config's ``executor`` field.
EXECUTOR_KINDS = ("local", "ray")


def make_executor(
    kind: str = "local",
    *,
    n_jobs: int = 1,
    address: str | None = None,
    gpus_per_task: float = 1.0,
    progress: ProgressOption = None,
) -> Executor:
    """The executor a command's setting asks for.

    Parameters
    ----------
    kind : {"local", "ray"}
        ``local``: :class:`~privaudit.runtime.executor.LocalExecutor` with ``n_jobs``
        processes; ``ray``: :class:`~privaudit.runtime.ray_executor.RayExecutor`, one task
        per unit (1 CPU each) on the cluster at ``address``.
    n_jobs : int
        Worker processes of the local executor (ignored by Ray: the cluster's CPUs decide).
    address : str or None
        Ray cluster address (None or ``"local"``: start a local instance; ``"auto"``: the
        cluster this machine is part of). Only with ``kind="ray"``.
    gpus_per_task : float
        GPUs a torch task on CUDA requests from Ray (the config's ``ray_gpus_per_task``;
        :mod:`privaudit.runtime.task_resources`); ignored by the local executor.
    progress : progress option
        See :class:`~privaudit.runtime.executor_base.Executor`.

    Examples
    --------
    >>> make_executor("local", n_jobs=1, progress=False)
    LocalExecutor(n_jobs=1, start_method='spawn', use_main_process=True)
    """
    kind = check_choice(kind, "executor", EXECUTOR_KINDS)
    if kind == "ray":
        return RayExecutor(address=address, gpus_per_task=gpus_per_task, progress=progress)
    if address is not None:
        raise fail("ray_address", "no address with 'executor: local'", repr(address))
    return LocalExecutor(n_jobs, progress=progress)
