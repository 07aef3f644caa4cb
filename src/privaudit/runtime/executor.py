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
is sent once per worker and map, not once per item, and its large NumPy buffers (a
dataset it closes over) once per pool: a function that closes over a large dataset is
cheap to map over many items, and maps after the first reuse the workers and the data.

:class:`LocalExecutor` keeps its worker processes from one map to the next (the phases
of an experiment, the experiments of a game or of a script); close it with
:meth:`Executor.close` or a ``with`` block (it is closed at garbage collection or exit
otherwise). :meth:`Executor.start` starts the workers early, so that their start-up
overlaps work in this process.

Modules: :mod:`.executor_base` (the interface, :class:`TaskError`), :mod:`.process_pool`
(the workers and the shipping of functions), :mod:`.main_guard` (the unguarded-script
check), :mod:`.ray_executor`; everything is re-exported here.
"""

from __future__ import annotations

import pickle
import threading
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any, NoReturn, TypeVar

from privaudit._validation import check_choice, check_positive_int, fail
from privaudit.runtime import interrupts
from privaudit.runtime.executor_base import (
    Executor,
    TaskError,
    _default_label,
    available_cores,
    resolve_n_jobs,
    run_inline,
)
from privaudit.runtime.main_guard import UnguardedMainError, check_main_guard
from privaudit.runtime.process_pool import (
    THREAD_ENV_VARS,
    ProcessPool,
    pickle_out_of_band,
    run_limited,
    worker_call,
)
from privaudit.runtime.progress import ProgressHandle, ProgressOption, progress_bar
from privaudit.runtime.ray_executor import RayExecutor

__all__ = [
    "THREAD_ENV_VARS",
    "Executor",
    "LocalExecutor",
    "RayExecutor",
    "TaskError",
    "UnguardedMainError",
    "available_cores",
    "check_main_guard",
    "resolve_n_jobs",
]

T = TypeVar("T")
R = TypeVar("R")


class _ThisProcess:
    """The task slot in this process (``use_main_process``): one task at a time, each in
    a daemon thread, so that an interrupt can cancel it (:meth:`cancel`) and never waits
    for it at exit."""

    def __init__(self) -> None:
        self.thread: threading.Thread | None = None

    def submit(self, fn: Callable[[Any], Any], item: Any, n_threads: int) -> Future[Any]:
        fut: Future[Any] = Future()
        fut.set_running_or_notify_cancel()
        self.thread = threading.Thread(
            target=_run_here, args=(fut, fn, item, n_threads), name="privaudit-task", daemon=True
        )
        self.thread.start()
        return fut

    def wait(self) -> None:
        """Wait for the running task (a map that failed otherwise: its task completes)."""
        if self.thread is not None:
            self.thread.join()

    def cancel(self, timeout: float = 5.0) -> None:
        """Interrupt the running task (its result cannot be stored: :func:`interrupts.note`
        was called) and wait a little for it; a task stuck in native code is left to
        end with the process."""
        t = self.thread
        if t is not None and interrupts.raise_in_thread(t):
            t.join(timeout)


def _run_here(fut: Future[Any], fn: Callable[[Any], Any], item: Any, n_threads: int) -> None:
    try:
        try:
            value = run_limited(fn, item, n_threads)
        except BaseException as exc:  # the driver reads it from the future
            fut.set_exception(exc)
        else:
            fut.set_result(value)
    except BaseException:  # a cancellation that arrived after the task: nothing to do
        pass


class LocalExecutor(Executor):
    """Run tasks on this machine: inline (``n_jobs=1``) or in a pool of processes.

    With ``n_jobs > 1``, ``n_jobs`` tasks run at once: by default one in this process
    (in a thread) and the others in ``n_jobs - 1`` worker processes; each task is handed
    to the first slot that frees up. The worker processes are started by the first parallel :meth:`map` (or earlier, by
    :meth:`start`) and kept for the next maps, until :meth:`close` (or the end of a
    ``with`` block; as a last resort when the executor is garbage-collected or the
    interpreter exits). A map's function is sent to the workers once per pool through
    files in a private temporary folder, its large NumPy buffers (the dataset) once per
    pool whatever the number of maps and tasks (see :class:`ProcessPool`); each task
    then carries only its item. A task that fails, or a worker that dies, closes the
    pool (after the running tasks finish); a SIGINT or SIGTERM stops the workers at once
    and cancels the task in this process (workers ignore SIGINT: the driver cancels them;
    nothing of a cancelled task is stored); the next map starts a new one.

    Parameters
    ----------
    n_jobs : int
        Number of worker processes; 1 runs inline, -1 uses every core.
    progress : progress option
        See :class:`Executor`.
    start_method : {"spawn", "forkserver", "fork"}
        How worker processes start. ``"spawn"`` (default) is safe with threaded
        BLAS libraries and behaves the same on every platform.
    threads_per_worker : int or None
        BLAS/OpenMP threads per worker; default ``max(1, cores // n_jobs)``, so that
        ``n_jobs x threads`` never exceeds the cores (:func:`available_cores`). Set in each
        worker before scikit-learn's OpenMP runtime loads (see :func:`.process_pool._worker_init`).
    use_main_process : bool
        With ``n_jobs > 1``, run tasks in this process too (in a thread, under the same
        thread limits), next to ``n_jobs - 1`` worker processes: this process waits for
        the workers anyway, and one process fewer to start saves seconds per run. False:
        ``n_jobs`` worker processes (a task that crashes the interpreter then cannot
        take this process with it).

    Examples
    --------
    >>> LocalExecutor(1).map(abs, [-1, 2, -3], desc="abs")
    [1, 2, 3]
    >>> with LocalExecutor(2) as ex:  # doctest: +SKIP
    ...     first = ex.map(fn, items)   # starts the workers
    ...     second = ex.map(fn, more)   # the same workers
    """

    def __init__(
        self,
        n_jobs: int = 1,
        *,
        progress: ProgressOption = None,
        start_method: str = "spawn",
        threads_per_worker: int | None = None,
        use_main_process: bool = True,
    ) -> None:
        super().__init__(progress=progress)
        self.n_jobs = resolve_n_jobs(n_jobs)
        self.use_main_process = bool(use_main_process)
        self.start_method = check_choice(
            start_method, "start_method", ("spawn", "forkserver", "fork")
        )
        if threads_per_worker is None:
            threads_per_worker = max(1, available_cores() // self.n_jobs)
        self.threads_per_worker = check_positive_int(threads_per_worker, "threads_per_worker")
        self._pool: ProcessPool | None = None
        self._pool_mark = 0  # interrupts.mark() when the pool started
        self._finalizer: weakref.finalize | None = None

    @property
    def n_workers(self) -> int:
        return self.n_jobs

    def __repr__(self) -> str:
        return (
            f"LocalExecutor(n_jobs={self.n_jobs}, start_method={self.start_method!r}, "
            f"use_main_process={self.use_main_process})"
        )

    def _ensure_pool(self, preload: bytes | None = None) -> ProcessPool:
        if self._pool is None:
            check_main_guard(self.start_method)
            n_processes = self.n_jobs - 1 if self.use_main_process else self.n_jobs
            pool = ProcessPool(n_processes, self.start_method, self.threads_per_worker, preload)
            self._pool = pool
            self._pool_mark = interrupts.mark()
            # the pool, not the executor, is what the finalizer holds
            self._finalizer = weakref.finalize(self, pool.close)
        return self._pool

    def start(self, preload: object = None) -> None:
        """Start the worker processes now, without waiting for them (``n_jobs > 1``).

        Spawning a worker and importing NumPy, scikit-learn and privaudit in it takes
        seconds; started before the first map (e.g. while the target model trains in
        this process), that time overlaps useful work. ``preload``, when given, is
        pickled and loaded in each worker as it starts, so the modules its pickle
        references are imported before the first task: pass something small that
        needs the same modules as the tasks (the trainer), not the data. Does nothing
        when the workers are already started or ``n_jobs == 1``.
        """
        if self.n_jobs == 1 or self._pool is not None:
            return
        blob = None
        if preload is not None:
            try:
                blob = pickle.dumps(preload, protocol=pickle.HIGHEST_PROTOCOL)
            except Exception as exc:
                raise fail("preload", "a picklable object", f"{preload!r} ({exc})") from exc
        self._ensure_pool(blob).spawn_all()

    def worker_pids(self) -> tuple[int, ...]:
        """Process ids of the live worker processes (empty when no pool is open)."""
        return () if self._pool is None else self._pool.pids()

    def close(self) -> None:
        """Stop the worker processes (waits for running tasks) and delete their files.

        After a SIGINT or SIGTERM (since the pool started) the workers are stopped at
        once instead, their running tasks with them (nothing of those is stored). The
        executor stays usable: a later parallel map starts new workers.
        """
        pool = self._pool
        self._close(terminate=pool is not None and interrupts.received(self._pool_mark))

    def _close(self, *, terminate: bool) -> None:
        pool, finalizer = self._pool, self._finalizer
        self._finalizer, self._pool = None, None
        if finalizer is None:
            return
        if terminate and pool is not None:
            finalizer.detach()
            pool.terminate()
        else:
            finalizer()

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
            return run_inline(fn, items, desc, name, self.progress)
        check_main_guard(self.start_method)
        head, buffers = pickle_out_of_band(fn)
        pool = self._ensure_pool()
        here = _ThisProcess() if self.use_main_process else None
        finished = cancelled = False
        try:
            key = pool.ship(head, buffers)
            with progress_bar(desc, len(items), enabled=self.progress) as bar:
                tasks = _ParallelMap(
                    fn, items, pool, key, here, self.threads_per_worker, desc, name
                )
                results = tasks.run(bar)
            pool.prune()
            finished = True
        except BaseException as exc:
            if not isinstance(exc, Exception):  # Ctrl-C, SIGTERM, exit: cancel every task
                cancelled = True
                if not isinstance(exc, interrupts.Interrupted):
                    interrupts.note()  # not counted by a handler: the running tasks fail
            raise
        finally:
            if here is not None:
                if cancelled:
                    here.cancel()
                else:
                    here.wait()
            if not finished:  # a failed task, a dead worker or an interrupt: a fresh pool next time
                self._close(terminate=cancelled)
        return results


class _ParallelMap:
    """One parallel map's tasks: which item runs in which slot (a worker process, or this
    process), and the results so far, in the order of the items."""

    def __init__(
        self,
        fn: Callable[[Any], Any],
        items: list[Any],
        pool: ProcessPool,
        key: str,
        here: _ThisProcess | None,
        threads_per_worker: int,
        desc: str,
        name: Callable[[Any], str],
    ) -> None:
        self.fn, self.items, self.pool, self.key, self.here = fn, items, pool, key, here
        self.threads_per_worker, self.desc, self.name = threads_per_worker, desc, name
        self.results: list[Any] = [None] * len(items)
        self.running: dict[Future[Any], tuple[int, bool]] = {}  # -> (index, here?)
        self.processes: dict[int, Any] = {}
        self.submitted = 0  # items[:submitted] were submitted

    def run(self, bar: ProgressHandle) -> list[Any]:
        """Every item's result, in item order; the first failed task (in item order among
        those that finish together) raises."""
        while self.submitted < len(self.items) or self.running:
            self._submit_to_free_slots()
            self.processes.update(self.pool.processes())  # started on demand by submit
            done, _ = wait(self.running, return_when=FIRST_COMPLETED)
            for fut in sorted(done, key=lambda f: self.running[f][0]):
                i, _ = self.running.pop(fut)
                error = fut.exception()
                if error is not None:
                    self._fail(i, error)
                self.results[i] = fut.result()
                bar.advance()
        return self.results

    def _submit_to_free_slots(self) -> None:
        """Submit the next items while a slot is free, worker processes first."""
        # a task goes to a free slot (a worker process, or this process) when one
        # frees up, so no slot waits behind a task queued for another
        here, pool = self.here, self.pool
        busy_here = any(h for _, h in self.running.values())
        busy_pool = len(self.running) - busy_here
        while self.submitted < len(self.items) and (
            busy_pool < pool.n_workers or (here is not None and not busy_here)
        ):
            interrupts.check(None, self.desc)  # a CLI command after a swallowed signal
            nxt = self.submitted
            if busy_pool < pool.n_workers:
                try:
                    fut = pool.submit(worker_call, self.key, nxt, self.items[nxt])
                except BrokenProcessPool as error:
                    # a worker died since the last wait (killed, out of memory): the pool
                    # refuses new tasks; fail as the running tasks' futures would
                    running = sorted(i for i, h in self.running.values() if not h)
                    self._fail(running[0] if running else nxt, error)
                self.running[fut] = (nxt, False)
                busy_pool += 1
            elif here is not None:
                fut = here.submit(self.fn, self.items[nxt], self.threads_per_worker)
                self.running[fut] = (nxt, True)
                busy_here = True
            self.submitted += 1

    def _fail(self, i: int, error: BaseException) -> NoReturn:
        """Cancel the pending tasks and raise task ``i``'s error (an interrupt as itself,
        an exception as a :class:`TaskError` naming the item)."""
        for other in self.running:
            other.cancel()
        if not isinstance(error, Exception):  # an interrupt in the task
            raise error
        if isinstance(error, BrokenProcessPool):
            # every pending task fails; name the one whose worker died
            dead = self.pool.died_running(self.processes)
            i = i if dead is None else dead
            error = BrokenProcessPool(f"a worker process died (killed or out of memory): {error}")
        raise TaskError(self.desc, i, self.name(self.items[i]), error) from error
