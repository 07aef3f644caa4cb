"""Ray behind the executor interface: :class:`RayExecutor` (``ray`` imported lazily).

GPU placement: a task that names a torch device (a torch recipe's ``device``) requests
``gpus_per_task`` GPUs when it computes on CUDA and none on the CPU
(:mod:`privaudit.runtime.task_resources`); a ``cuda`` task on a cluster without such a node
fails before anything is submitted.

Faults (what a cluster run survives):

* a worker **process** or a whole worker **node** that dies while it runs a task (killed,
  out of memory, its raylet gone): Ray resubmits the task elsewhere, up to ``max_retries``
  times (Ray's *system failures*). The tasks of privaudit are deterministic functions of
  their item (seeds travel with the item), so a retried task returns the same numbers;
  one that already wrote its artifact to the shared store finds it there;
* a task that **raises** (a bad setting, a model that fails to fit): no retry
  (``retry_exceptions=False``): such a failure repeats on every node. The map stops at once
  (pending tasks are cancelled) with one :class:`~privaudit.runtime.executor_base.TaskError`
  naming the task;
* the **driver** killed: the cluster's tasks die with it; every task that finished wrote
  its artifact to the store, so running the same command again resumes from it.
"""

from __future__ import annotations

import os
import signal
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from privaudit._validation import fail
from privaudit.runtime.executor_base import Executor, TaskError, _default_label
from privaudit.runtime.progress import ProgressOption, progress_bar
from privaudit.runtime.task_resources import (
    check_gpus_per_task,
    gpu_request,
    pin_device,
    task_device,
)

__all__ = ["RayExecutor", "ray_module"]

T = TypeVar("T")
R = TypeVar("R")

#: ``ray.init`` defaults of a driver: Ray's own log lines stay out of the command's output
#: (library code never prints), and a local instance starts without the dashboard.
_INIT_DEFAULTS: dict[str, Any] = {"log_to_driver": False, "logging_level": "WARNING"}


def _ray_call(fn: Callable[[Any], Any], item: Any, attempts: str | None, index: int) -> Any:
    if attempts is not None:  # one empty file per attempt (a retry leaves two or more)
        Path(attempts, f"{index}.{os.getpid()}.{uuid.uuid4().hex[:8]}").touch()
    return fn(item)


def _owned(value: Any) -> Any:
    """``value`` with every array copied into this process's memory.

    ``ray.get`` returns the NumPy arrays of a large result (one Ray keeps in its shared-memory
    object store, not inline) as read-only views of that store. Measured with Ray 2.60 on a
    two-node cluster: once the map's object references are dropped, the arrays inside a
    fitted scikit-learn forest fetched from another node read freed memory (its ``classes_``
    became garbage, and the record-level games failed or, worse, could have scored with
    it). A deep copy copies every array (``ndarray.__deepcopy__``), so a result is owned by
    the driver as a :class:`LocalExecutor`'s is.
    """
    import copy

    return copy.deepcopy(value)


def _signal_handlers() -> dict[int, Any]:
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {int(sig): signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}


def _restore_signal_handlers(saved: dict[int, Any]) -> None:
    for sig, handler in saved.items():
        if handler is not None and signal.getsignal(sig) is not handler:
            signal.signal(sig, handler)


def _connected_to(ray: Any, address: str) -> bool:
    """Whether the process's Ray connection is to ``address`` (``"auto"``, a ``ray://``
    client address, or a connection whose address cannot be read: taken as yes)."""
    if address == "auto" or "://" in address:
        return True
    try:
        current = str(ray.get_runtime_context().gcs_address)
    except Exception:  # an old Ray, a client connection: keep it
        return True
    return current == address


def ray_module() -> Any:
    """``import ray``, or an :class:`~privaudit.errors.InvalidInputError` saying how to
    install it."""
    try:
        import ray
    except ImportError as exc:
        raise fail("executor", "ray installed (pip install 'privaudit[ray]')", "no ray") from exc
    return ray


class RayExecutor(Executor):
    """Run tasks as Ray tasks, behind the same interface as :class:`LocalExecutor`.

    ``ray`` is imported when the first map runs; if Ray is not initialised yet,
    ``ray.init(address=address, **init_kwargs)`` is called (``address=None`` or
    ``"local"`` starts a local instance; ``"auto"`` joins the cluster this machine is part
    of; ``"host:port"`` or ``"ray://host:10001"`` a given one). The function is put in the
    object store once and shared by all tasks. See the module docstring for what happens
    when a worker, a node or the driver dies.

    Parameters
    ----------
    address : str or None
        Ray cluster address.
    num_cpus : float
        CPUs each task requests.
    num_gpus : float
        GPUs each task that names no device requests (scikit-learn models, generators...).
    gpus_per_task : float
        GPUs a torch task requests when it computes on CUDA: its recipe's ``device`` is
        ``"cuda"``, or ``"auto"`` on a cluster with a node that has that many GPUs (1, or a
        fraction in (0, 1) that packs several tasks on one GPU). A ``"cpu"`` recipe
        requests none. See :mod:`privaudit.runtime.task_resources`.
    max_retries : int
        Resubmissions of a task whose worker process or node died (Ray's
        ``max_retries``); a task that raises is never retried.
    attempts_dir : str or Path, optional
        A folder every worker can write (one machine, or a shared filesystem): each task
        attempt leaves an empty file there, so :attr:`retried` counts the resubmissions.
    init_kwargs : dict, optional
        Extra arguments to ``ray.init``.
    progress : progress option
        See :class:`Executor`.
    """

    def __init__(
        self,
        *,
        address: str | None = None,
        num_cpus: float = 1.0,
        num_gpus: float = 0.0,
        gpus_per_task: float = 1.0,
        max_retries: int = 3,
        attempts_dir: str | Path | None = None,
        init_kwargs: dict[str, Any] | None = None,
        progress: ProgressOption = None,
    ) -> None:
        super().__init__(progress=progress)
        if not num_cpus >= 0 or not num_gpus >= 0:
            raise fail("num_cpus/num_gpus", "non-negative resources", (num_cpus, num_gpus))
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise fail("max_retries", "a non-negative integer", repr(max_retries))
        self.address = None if address == "local" else address
        self.num_cpus = float(num_cpus)
        self.num_gpus = float(num_gpus)
        self.gpus_per_task = check_gpus_per_task(gpus_per_task)
        self.max_retries = max_retries
        self.attempts_dir = None if attempts_dir is None else Path(attempts_dir)
        self.init_kwargs = dict(init_kwargs or {})
        #: Task attempts beyond the first, summed over the maps (with ``attempts_dir``).
        self.retried = 0

    @staticmethod
    def _ray() -> Any:
        return ray_module()

    @property
    def n_workers(self) -> int:
        ray = self._ray()
        if not ray.is_initialized():
            return 1
        cpus = float(ray.cluster_resources().get("CPU", 1.0))
        return max(1, int(cpus // max(self.num_cpus, 1e-9)))

    def __repr__(self) -> str:
        return f"RayExecutor(address={self.address!r}, num_cpus={self.num_cpus}, num_gpus={self.num_gpus})"

    def task_gpus(self, fn: Callable[..., Any]) -> float:
        """The ``num_gpus`` the tasks of ``fn`` request on the cluster Ray is connected to
        (:func:`~privaudit.runtime.task_resources.gpu_request` over its alive nodes)."""
        device = task_device(fn)
        if device is None:
            return self.num_gpus
        nodes = [
            float(n.get("Resources", {}).get("GPU", 0.0))
            for n in self._ray().nodes()
            if n.get("Alive")
        ]
        return gpu_request(device, nodes, gpus_per_task=self.gpus_per_task, default=self.num_gpus)

    def _init(self, ray: Any) -> None:
        if ray.is_initialized():
            if self.address is None or _connected_to(ray, self.address):
                return
            # connected elsewhere (e.g. an earlier run's cluster in the same process, which may
            # be gone: its objects' owner is then dead): join the cluster this executor names
            ray.shutdown()
        kwargs = {**_INIT_DEFAULTS, **self.init_kwargs}
        if self.address is None:
            kwargs.setdefault("include_dashboard", False)
        elif self.address.rsplit(":", 1)[0] in ("127.0.0.1", "localhost"):
            # a cluster on the loopback address: the driver joins it there too (else Ray may
            # register the driver at an address it cached from an earlier connection in this
            # process, and the workers cannot fetch the driver's objects: OwnerDiedError)
            kwargs.setdefault("_node_ip_address", "127.0.0.1")
        # ``ray.init`` installs its own SIGTERM handler in the driver; privaudit's (a CLI
        # command's: :mod:`privaudit.runtime.interrupts`) stays in charge
        saved = _signal_handlers()
        try:
            ray.init(address=self.address, **kwargs)
        finally:
            _restore_signal_handlers(saved)

    def map(
        self,
        fn: Callable[[T], R],
        items: Sequence[T],
        *,
        desc: str = "tasks",
        label: Callable[[T], str] | None = None,
    ) -> list[R]:
        items = list(items)
        name = label or _default_label
        if not items:
            return []
        ray = self._ray()
        self._init(ray)
        num_gpus = self.task_gpus(fn)  # before any task: a GPU no node has fails here
        fn = pin_device(fn, num_gpus)
        self.tasks_run += len(items)
        attempts = None
        if self.attempts_dir is not None:
            folder = self.attempts_dir / uuid.uuid4().hex
            folder.mkdir(parents=True)
            attempts = str(folder)
        remote = ray.remote(
            num_cpus=self.num_cpus,
            num_gpus=num_gpus,
            max_retries=self.max_retries,
            retry_exceptions=False,
        )(_ray_call)
        fn_ref = ray.put(fn)
        pending = [remote.remote(fn_ref, item, attempts, i) for i, item in enumerate(items)]
        # the map holds a task's object reference only until its result is copied out, so
        # that the object store can free each result as the map goes, not when it returns
        index = {ref: i for i, ref in enumerate(pending)}
        results: list[Any] = [None] * len(items)
        try:
            with progress_bar(desc, len(items), enabled=self.progress) as bar:
                while pending:
                    done, pending = ray.wait(pending, num_returns=1)
                    for ref in done:
                        i = index.pop(ref)
                        try:
                            results[i] = _owned(ray.get(ref))
                        except Exception as exc:
                            for other in pending:
                                try:
                                    ray.cancel(other)
                                except Exception:  # pragma: no cover - best effort
                                    pass
                            cause = getattr(exc, "cause", None)
                            original = cause if isinstance(cause, BaseException) else exc
                            raise TaskError(desc, i, name(items[i]), original) from exc
                        bar.advance()
        finally:
            if attempts is not None:
                starts = Counter(p.name.split(".")[0] for p in Path(attempts).iterdir())
                self.retried += sum(n - 1 for n in starts.values())
        return results
