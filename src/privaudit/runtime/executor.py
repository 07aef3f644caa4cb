"""Executors: run one function over many items, in order, in parallel when asked.

An audit trains many independent models (reference, shadow, distilled, leave-one-out).
:class:`Executor` is the one interface the experiment engine uses for that:
``map(fn, items, desc=...)`` returns ``[fn(item) for item in items]`` in the order of
``items`` whatever the order in which tasks finish. Implementations:

* :class:`LocalExecutor` -- ``n_jobs == 1`` runs inline (no processes, easiest to
  debug); ``n_jobs > 1`` uses a :class:`concurrent.futures.ProcessPoolExecutor`;
* :class:`RayExecutor` -- the same interface on a Ray cluster (``ray`` is imported
  only when it is used; install the ``ray`` extra).

A task that raises stops the map (pending tasks are cancelled) and is re-raised as a
:class:`TaskError` that names the failing item and chains the original exception, so
that a failure deep in a process pool still says *which* model failed. Results of tasks
that finished are not lost when they were written to the artifact store inside ``fn``
(which is how the experiment engine makes runs resumable).

Functions and items sent to processes must be picklable (module-level functions,
:func:`functools.partial` of them, or instances of module-level classes). The function
is sent once per worker, not once per item, so a function that closes over a large
dataset is cheap to map over many items.
"""

from __future__ import annotations

import abc
import multiprocessing
import os
import pickle
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

from privaudit._validation import check_choice, check_positive_int, fail
from privaudit.errors import PrivauditError
from privaudit.runtime.progress import progress_bar

__all__ = [
    "THREAD_ENV_VARS",
    "Executor",
    "LocalExecutor",
    "RayExecutor",
    "TaskError",
    "available_cores",
    "resolve_n_jobs",
]

T = TypeVar("T")
R = TypeVar("R")

_LABEL_MAX = 200


class TaskError(PrivauditError):
    """A task run by an :class:`Executor` raised.

    Attributes
    ----------
    desc : str
        What the map was doing (e.g. ``"reference models"``).
    index : int
        Position of the failing item in ``items``.
    label : str
        Human-readable name of the failing item.
    original : BaseException
        The exception the task raised (also chained as ``__cause__``).
    """

    def __init__(self, desc: str, index: int, label: str, original: BaseException) -> None:
        self.desc = desc
        self.index = index
        self.label = label
        self.original = original
        super().__init__(
            f"{desc}: task {index} ({label}) failed with {type(original).__name__}: {original}"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (TaskError, (self.desc, self.index, self.label, self.original))


def _default_label(item: object) -> str:
    for attr in ("label", "name", "model_id"):
        v = getattr(item, attr, None)
        if isinstance(v, str) and v:
            return v
    text = repr(item)
    return text if len(text) <= _LABEL_MAX else text[: _LABEL_MAX - 3] + "..."


def resolve_n_jobs(n_jobs: int) -> int:
    """Number of worker processes: ``n_jobs`` if positive, else ``cpu_count + 1 + n_jobs``.

    As in scikit-learn, ``-1`` means all cores and ``-2`` all but one.
    """
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or n_jobs == 0:
        raise fail("n_jobs", "a non-zero integer (negative counts back from all cores)", n_jobs)
    if n_jobs > 0:
        return n_jobs
    return max(1, available_cores() + 1 + n_jobs)


class Executor(abc.ABC):
    """Runs ``fn`` over ``items`` and returns the results in the order of ``items``.

    Parameters
    ----------
    progress : bool or None
        Draw a progress bar per map (see :func:`privaudit.runtime.progress.progress_bar`;
        None = automatic, only on a terminal).
    """

    def __init__(self, *, progress: bool | None = None) -> None:
        self.progress = progress
        #: Tasks this executor was given so far (what ``results.json`` records as run by it).
        self.tasks_run = 0

    @property
    @abc.abstractmethod
    def n_workers(self) -> int:
        """How many tasks may run at the same time."""

    @abc.abstractmethod
    def map(
        self,
        fn: Callable[[T], R],
        items: Sequence[T],
        *,
        desc: str = "tasks",
        label: Callable[[T], str] | None = None,
    ) -> list[R]:
        """``[fn(item) for item in items]``, possibly in parallel, in input order.

        Parameters
        ----------
        fn : callable
            The task. Must be picklable for process or Ray executors.
        items : sequence
            One item per task.
        desc : str
            What the tasks do; the progress bar's label and part of error messages.
        label : callable, optional
            Names an item in error messages; default: its ``label``/``name``/
            ``model_id`` attribute, else a truncated ``repr``.

        Raises
        ------
        TaskError
            When a task raises; names the failing item and chains the original error.
        """


def _run_inline(
    fn: Callable[[T], R],
    items: Sequence[T],
    desc: str,
    label: Callable[[T], str],
    progress: bool | None,
) -> list[R]:
    out: list[R] = []
    with progress_bar(desc, len(items), enabled=progress) as bar:
        for i, item in enumerate(items):
            try:
                out.append(fn(item))
            except Exception as exc:
                raise TaskError(desc, i, label(item), exc) from exc
            bar.advance()
    return out


# --- process-pool workers: the function is installed once per worker ---------------

_WORKER_FN: Callable[[Any], Any] | None = None
_WORKER_LIMITS: Any = None  # keeps threadpoolctl's limits alive in the worker

#: Environment variables that size the thread pools of BLAS and OpenMP runtimes. They are
#: read when a runtime *loads*, so a worker sets them before it unpickles its function
#: (which imports scikit-learn and with it the OpenMP runtime).
THREAD_ENV_VARS: tuple[str, ...] = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity; ``os.cpu_count()`` elsewhere)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def _worker_init(fn_bytes: bytes, n_threads: int) -> None:
    """Limit the worker's BLAS/OpenMP threads, then install its function.

    Two steps, because a thread limit reaches only the runtimes it can see: the
    environment variables size every runtime that loads *after* this point (the OpenMP
    runtime of scikit-learn loads while ``fn_bytes`` is unpickled), and
    ``threadpoolctl`` then caps every runtime loaded by now (NumPy's BLAS, and anything
    the spawned interpreter imported before the initializer ran).
    """
    global _WORKER_FN, _WORKER_LIMITS
    for var in THREAD_ENV_VARS:
        os.environ[var] = str(n_threads)
    _WORKER_FN = pickle.loads(fn_bytes)
    try:
        from threadpoolctl import threadpool_limits

        _WORKER_LIMITS = threadpool_limits(limits=n_threads)
    except ImportError:  # pragma: no cover - threadpoolctl ships with scikit-learn
        pass


def _worker_call(item: Any) -> Any:
    if _WORKER_FN is None:  # pragma: no cover - the initializer always runs first
        raise RuntimeError("worker function not initialised")
    return _WORKER_FN(item)


class LocalExecutor(Executor):
    """Run tasks on this machine: inline (``n_jobs=1``) or in a pool of processes.

    Parameters
    ----------
    n_jobs : int
        Number of worker processes; 1 runs inline, -1 uses every core.
    progress : bool or None
        See :class:`Executor`.
    start_method : {"spawn", "forkserver", "fork"}
        How worker processes start. ``"spawn"`` (default) is safe with threaded
        BLAS libraries and behaves the same on every platform.
    threads_per_worker : int or None
        BLAS/OpenMP threads per worker; default ``max(1, cores // n_jobs)``, so that
        ``n_jobs x threads`` never exceeds the cores (:func:`available_cores`). Set in each
        worker before scikit-learn's OpenMP runtime loads (see :func:`_worker_init`).

    Examples
    --------
    >>> LocalExecutor(1).map(abs, [-1, 2, -3], desc="abs")
    [1, 2, 3]
    """

    def __init__(
        self,
        n_jobs: int = 1,
        *,
        progress: bool | None = None,
        start_method: str = "spawn",
        threads_per_worker: int | None = None,
    ) -> None:
        super().__init__(progress=progress)
        self.n_jobs = resolve_n_jobs(n_jobs)
        self.start_method = check_choice(
            start_method, "start_method", ("spawn", "forkserver", "fork")
        )
        if threads_per_worker is None:
            threads_per_worker = max(1, available_cores() // self.n_jobs)
        self.threads_per_worker = check_positive_int(threads_per_worker, "threads_per_worker")

    @property
    def n_workers(self) -> int:
        return self.n_jobs

    def __repr__(self) -> str:
        return f"LocalExecutor(n_jobs={self.n_jobs}, start_method={self.start_method!r})"

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
        self.tasks_run += len(items)
        if self.n_jobs == 1 or len(items) == 1:
            return _run_inline(fn, items, desc, name, self.progress)
        try:
            fn_bytes = pickle.dumps(fn, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:
            raise fail("fn", "a picklable function for a process pool", f"{fn!r} ({exc})") from exc
        results: list[Any] = [None] * len(items)
        pool = ProcessPoolExecutor(
            max_workers=min(self.n_jobs, len(items)),
            mp_context=multiprocessing.get_context(self.start_method),
            initializer=_worker_init,
            initargs=(fn_bytes, self.threads_per_worker),
        )
        try:
            with progress_bar(desc, len(items), enabled=self.progress) as bar:
                futures: dict[Future[Any], int] = {
                    pool.submit(_worker_call, item): i for i, item in enumerate(items)
                }
                pending = set(futures)
                while pending:
                    done, pending = wait(pending, return_when=FIRST_COMPLETED)
                    for fut in sorted(done, key=futures.__getitem__):
                        i = futures[fut]
                        error = fut.exception()
                        if error is not None:
                            for other in pending:
                                other.cancel()
                            if isinstance(error, BrokenProcessPool):
                                error = BrokenProcessPool(
                                    f"a worker process died (killed or out of memory): {error}"
                                )
                            raise TaskError(desc, i, name(items[i]), error) from error
                        results[i] = fut.result()
                        bar.advance()
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        return results


def _ray_call(fn: Callable[[Any], Any], item: Any) -> Any:
    return fn(item)


class RayExecutor(Executor):
    """Run tasks as Ray tasks, behind the same interface as :class:`LocalExecutor`.

    ``ray`` is imported when the first map runs; if Ray is not initialised yet,
    ``ray.init(address=address, **init_kwargs)`` is called (``address=None`` starts a
    local cluster). The function is put in the object store once and shared by all
    tasks.

    Parameters
    ----------
    address : str or None
        Ray cluster address (``"auto"`` to join a running one).
    num_cpus, num_gpus : float
        Resources each task requests.
    init_kwargs : dict, optional
        Extra arguments to ``ray.init``.
    progress : bool or None
        See :class:`Executor`.
    """

    def __init__(
        self,
        *,
        address: str | None = None,
        num_cpus: float = 1.0,
        num_gpus: float = 0.0,
        init_kwargs: dict[str, Any] | None = None,
        progress: bool | None = None,
    ) -> None:
        super().__init__(progress=progress)
        if not num_cpus >= 0 or not num_gpus >= 0:
            raise fail("num_cpus/num_gpus", "non-negative resources", (num_cpus, num_gpus))
        self.address = address
        self.num_cpus = float(num_cpus)
        self.num_gpus = float(num_gpus)
        self.init_kwargs = dict(init_kwargs or {})

    @staticmethod
    def _ray() -> Any:
        try:
            import ray
        except ImportError as exc:
            raise fail(
                "executor", "ray installed (pip install 'privaudit[ray]')", "no ray"
            ) from exc
        return ray

    @property
    def n_workers(self) -> int:
        ray = self._ray()
        if not ray.is_initialized():
            return 1
        cpus = float(ray.cluster_resources().get("CPU", 1.0))
        return max(1, int(cpus // max(self.num_cpus, 1e-9)))

    def __repr__(self) -> str:
        return f"RayExecutor(address={self.address!r}, num_cpus={self.num_cpus}, num_gpus={self.num_gpus})"

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
        if not ray.is_initialized():
            ray.init(address=self.address, **self.init_kwargs)
        self.tasks_run += len(items)
        remote = ray.remote(num_cpus=self.num_cpus, num_gpus=self.num_gpus)(_ray_call)
        fn_ref = ray.put(fn)
        refs = [remote.remote(fn_ref, item) for item in items]
        index = {ref: i for i, ref in enumerate(refs)}
        results: list[Any] = [None] * len(items)
        pending = list(refs)
        with progress_bar(desc, len(items), enabled=self.progress) as bar:
            while pending:
                done, pending = ray.wait(pending, num_returns=1)
                for ref in done:
                    i = index[ref]
                    try:
                        results[i] = ray.get(ref)
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
        return results
