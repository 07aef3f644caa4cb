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
"""

from __future__ import annotations

import abc
import multiprocessing
import os
import pickle
import weakref
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
    "UnguardedMainError",
    "available_cores",
    "check_main_guard",
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

    def start(self, preload: object = None) -> None:  # noqa: B027 - optional hook
        """Get the workers ready before the first map, without waiting (default: nothing).

        ``preload``: an object whose pickle references the modules tasks will import
        (see :meth:`LocalExecutor.start`).
        """

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release the workers (default: nothing). The executor stays usable."""

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

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


# --- process-pool workers ------------------------------------------------------------

# worker-side state (each worker process has its own copy of these globals)
_WORKER_DIR: str | None = None  # the pool's folder of shipped functions and buffers
_WORKER_THREADS = 1
_WORKER_KEY: str | None = None  # key of the installed function
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


class UnguardedMainError(PrivauditError):
    """Worker processes would re-run the caller's script (no ``__main__`` guard)."""


def _main_script() -> str | None:
    """The file a spawned worker would re-import as ``__mp_main__`` (None: nothing)."""
    import sys

    main = sys.modules.get("__main__")
    if main is None:
        return None
    spec = getattr(main, "__spec__", None)
    if spec is not None and getattr(spec, "origin", None):
        return str(spec.origin)
    path = getattr(main, "__file__", None)
    return None if not path or not str(path).endswith(".py") else str(path)


def _has_main_guard(source: str) -> bool:
    """Whether a module's top level has ``if __name__ == "__main__":``."""
    import ast

    try:
        tree = ast.parse(source)
    except SyntaxError:  # pragma: no cover - a running script parses
        return True
    for node in tree.body:
        if not isinstance(node, ast.If) or not isinstance(node.test, ast.Compare):
            continue
        parts = [node.test.left, *node.test.comparators]
        names = any(isinstance(p, ast.Name) and p.id == "__name__" for p in parts)
        main = any(isinstance(p, ast.Constant) and p.value == "__main__" for p in parts)
        if names and main:
            return True
    return False


def check_main_guard(start_method: str) -> None:
    """Refuse to start ``spawn`` / ``forkserver`` workers from an unguarded script.

    Such workers import the caller's main script again (as ``__mp_main__``); without an
    ``if __name__ == "__main__":`` guard its top level (loading data, training the
    target, starting the audit) runs again in every worker, which then tries to start
    workers of its own: the parent waits for ever. Checked in the parent before any
    process starts (by parsing the script), and in a worker that is still importing it.

    Raises
    ------
    UnguardedMainError
        With the script's path and the two ways out.
    """
    if start_method == "fork":
        return
    import multiprocessing

    if multiprocessing.parent_process() is not None and multiprocessing.current_process().name != "MainProcess":
        import sys

        mp_main = sys.modules.get("__mp_main__")
        if mp_main is not None and sys.modules.get("__main__") is mp_main:
            raise UnguardedMainError(
                "a worker process is re-running the caller's script and reached a parallel "
                "map: put the script's code under if __name__ == \"__main__\":"
            )
    path = _main_script()
    if path is None:
        return
    try:
        with open(path, encoding="utf-8") as fh:
            source = fh.read()
    except (OSError, UnicodeDecodeError):
        return
    if not _has_main_guard(source):
        raise UnguardedMainError(
            f"n_jobs > 1 starts worker processes ({start_method!r}) that re-import the "
            f"running script {path}, whose top level has no "
            "'if __name__ == \"__main__\":' guard: every worker would run the script again "
            "and the audit would never return. Put the script's code under that guard "
            "(or use n_jobs=1)."
        )


def _limit_threads() -> None:
    """Cap every BLAS/OpenMP runtime loaded by now at the worker's thread count."""
    global _WORKER_LIMITS
    try:
        from threadpoolctl import threadpool_limits

        _WORKER_LIMITS = threadpool_limits(limits=_WORKER_THREADS)
    except ImportError:  # pragma: no cover - threadpoolctl ships with scikit-learn
        pass


def _worker_init(workdir: str, n_threads: int, preload: bytes | None) -> None:
    """Start a pool worker: limit its BLAS/OpenMP threads, then import what tasks need.

    Two steps, because a thread limit reaches only the runtimes it can see: the
    environment variables size every runtime that loads *after* this point (the OpenMP
    runtime of scikit-learn loads when the first function or ``preload`` object that
    needs scikit-learn is unpickled), and ``threadpoolctl`` then caps every runtime
    loaded by now (NumPy's BLAS, and anything the spawned interpreter imported before
    the initializer ran); it is applied again after each function is installed.
    ``preload`` is a pickle that is loaded and dropped: its only effect is importing
    the modules it references (e.g. the trainer's) while the worker waits for work.
    """
    global _WORKER_DIR, _WORKER_THREADS
    _WORKER_DIR = workdir
    _WORKER_THREADS = n_threads
    for var in THREAD_ENV_VARS:
        os.environ[var] = str(n_threads)
    # torch reads this (models/torch_models.py) and calls torch.set_num_threads with it
    os.environ["PRIVAUDIT_THREADS_PER_WORKER"] = str(n_threads)
    if preload is not None:
        pickle.loads(preload)
    _limit_threads()


def _read_file(path: str) -> bytearray:
    """The file's bytes in a fresh, writable buffer (arrays rebuilt on it are writable)."""
    with open(path, "rb") as fh:
        buf = bytearray(os.fstat(fh.fileno()).st_size)
        fh.readinto(buf)
    return buf


def _install(key: str) -> Callable[[Any], Any]:
    """The worker's function for ``key``: the installed one, else read from the pool's
    folder (its pickle, then its large buffers) and installed in place of the last one."""
    global _WORKER_KEY, _WORKER_FN
    if _WORKER_KEY == key and _WORKER_FN is not None:
        return _WORKER_FN
    if _WORKER_DIR is None:  # pragma: no cover - the initializer always runs first
        raise RuntimeError("worker not initialised")
    _WORKER_KEY, _WORKER_FN = None, None  # free the previous function's data first
    head, buffer_keys = pickle.loads(_read_file(os.path.join(_WORKER_DIR, key + ".fn")))
    buffers = [_read_file(os.path.join(_WORKER_DIR, k + ".buf")) for k in buffer_keys]
    fn = pickle.loads(head, buffers=buffers)
    _limit_threads()  # anything the function's modules loaded
    _WORKER_KEY, _WORKER_FN = key, fn
    return fn


def _worker_call(key: str, index: int, item: Any) -> Any:
    fn = _install(key)
    if _WORKER_DIR is not None:  # which task this process runs, should it die
        with open(os.path.join(_WORKER_DIR, f"run-{os.getpid()}"), "w") as fh:
            fh.write(str(index))
    return fn(item)


def _run_limited(fn: Callable[[Any], Any], item: Any, n_threads: int) -> Any:
    """``fn(item)`` in a thread of the calling process, its BLAS/OpenMP pools limited like a
    worker's (OpenMP's limit is per thread, so it is set in the thread that runs the task)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl ships with scikit-learn
        return fn(item)
    with threadpool_limits(limits=n_threads):
        return fn(item)


def _worker_ping() -> int:
    return os.getpid()


#: Buffers (NumPy arrays' data) of at least this many bytes travel out of band: written
#: once per pool to a file named by their content hash, read once per worker and function.
_OUT_OF_BAND_BYTES = 1 << 18


def _digest(data: Any) -> str:
    """Content key of a buffer (SHA-1 as a fast checksum: ~1 GB/s, no secret involved)."""
    import hashlib

    return hashlib.sha1(data, usedforsecurity=False).hexdigest()


def _write_atomic(path: str, data: Any) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)


def _pickle_out_of_band(fn: Any) -> tuple[bytes, list[memoryview]]:
    """``fn``'s pickle (protocol 5) without its large buffers, and those buffers."""
    large: list[memoryview] = []

    def keep_large(buf: pickle.PickleBuffer) -> bool:
        try:
            raw = buf.raw()
        except BufferError:  # pragma: no cover - NumPy sends only contiguous buffers
            return True
        if raw.nbytes < _OUT_OF_BAND_BYTES:
            return True  # in band
        large.append(raw)
        return False

    try:
        head = pickle.dumps(fn, protocol=5, buffer_callback=keep_large)
    except Exception as exc:
        raise fail("fn", "a picklable function for a process pool", f"{fn!r} ({exc})") from exc
    return head, large


class _ProcessPool:
    """A :class:`ProcessPoolExecutor` kept across maps, and its folder of shipped functions.

    A function is shipped as files in a private temporary folder: its pickle without
    its large buffers (``KEY.fn``), and each large buffer (``HASH.buf``, named by a
    content hash, so the dataset shared by the functions of several maps is written
    once per pool). A task carries only the key; a worker reads the files when its
    installed function is not that key's (once per worker and map at most).
    """

    def __init__(
        self, n_workers: int, start_method: str, n_threads: int, preload: bytes | None
    ) -> None:
        import tempfile

        self.n_workers = n_workers
        self.workdir = tempfile.mkdtemp(prefix="privaudit-pool-")
        self.pool = ProcessPoolExecutor(
            max_workers=n_workers,
            mp_context=multiprocessing.get_context(start_method),
            initializer=_worker_init,
            initargs=(self.workdir, n_threads, preload),
        )
        self.files: set[str] = set()  # names of the files in workdir
        self.keep: set[str] = set()  # the files of the last function shipped

    def spawn_all(self) -> None:
        """Start every worker now (the pool otherwise starts them as tasks arrive)."""
        for _ in range(self.n_workers):
            self.pool.submit(_worker_ping)

    def ship(self, head: bytes, buffers: Sequence[memoryview]) -> str:
        """Write a function's files (those not written yet); its key."""
        keys = [_digest(b) for b in buffers]
        for k, b in zip(keys, buffers, strict=True):
            if k + ".buf" not in self.files:
                _write_atomic(os.path.join(self.workdir, k + ".buf"), b)
                self.files.add(k + ".buf")
        package = pickle.dumps((head, keys), protocol=pickle.HIGHEST_PROTOCOL)
        key = _digest(package)
        if key + ".fn" not in self.files:
            _write_atomic(os.path.join(self.workdir, key + ".fn"), package)
            self.files.add(key + ".fn")
        self.keep = {key + ".fn", *(k + ".buf" for k in keys)}
        return key

    def prune(self) -> None:
        """Delete the files of every function but the last shipped (after a map finished)."""
        for name in sorted(self.files - self.keep):
            try:
                os.remove(os.path.join(self.workdir, name))
            except FileNotFoundError:  # pragma: no cover
                pass
            self.files.discard(name)

    def processes(self) -> dict[int, Any]:
        """The live workers' :class:`multiprocessing.Process` objects, by pid."""
        return dict(getattr(self.pool, "_processes", None) or {})

    def pids(self) -> tuple[int, ...]:
        return tuple(sorted(self.processes()))

    def died_running(self, processes: dict[int, Any]) -> int | None:
        """Index of the task a worker that died (not stopped by the broken pool) ran."""
        import signal

        found: list[int] = []
        for pid, proc in processes.items():
            proc.join(timeout=5)
            if proc.exitcode is None or proc.exitcode == -signal.SIGTERM:
                continue
            try:
                with open(os.path.join(self.workdir, f"run-{pid}")) as fh:
                    found.append(int(fh.read()))
            except (OSError, ValueError):
                continue
        return min(found) if found else None

    def close(self) -> None:
        """Cancel what has not started, wait for the workers to exit, delete the folder."""
        import shutil

        try:
            self.pool.shutdown(wait=True, cancel_futures=True)
        finally:
            shutil.rmtree(self.workdir, ignore_errors=True)

class LocalExecutor(Executor):
    """Run tasks on this machine: inline (``n_jobs=1``) or in a pool of processes.

    With ``n_jobs > 1``, ``n_jobs`` tasks run at once: by default one in this process
    (in a thread) and the others in ``n_jobs - 1`` worker processes; each task is handed
    to the first slot that frees up. The worker processes are started by the first parallel :meth:`map` (or earlier, by
    :meth:`start`) and kept for the next maps, until :meth:`close` (or the end of a
    ``with`` block; as a last resort when the executor is garbage-collected or the
    interpreter exits). A map's function is sent to the workers once per pool through
    files in a private temporary folder, its large NumPy buffers (the dataset) once per
    pool whatever the number of maps and tasks (see :class:`_ProcessPool`); each task
    then carries only its item. A task that fails, or a worker that dies, closes the
    pool (after the running tasks finish); the next map starts a new one.

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
        progress: bool | None = None,
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
        self._pool: _ProcessPool | None = None
        self._finalizer: weakref.finalize | None = None

    @property
    def n_workers(self) -> int:
        return self.n_jobs

    def __repr__(self) -> str:
        return (
            f"LocalExecutor(n_jobs={self.n_jobs}, start_method={self.start_method!r}, "
            f"use_main_process={self.use_main_process})"
        )

    def _ensure_pool(self, preload: bytes | None = None) -> _ProcessPool:
        if self._pool is None:
            check_main_guard(self.start_method)
            n_processes = self.n_jobs - 1 if self.use_main_process else self.n_jobs
            pool = _ProcessPool(n_processes, self.start_method, self.threads_per_worker, preload)
            self._pool = pool
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

        The executor stays usable: a later parallel map starts new workers.
        """
        finalizer, self._finalizer, self._pool = self._finalizer, None, None
        if finalizer is not None:
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
            return _run_inline(fn, items, desc, name, self.progress)
        check_main_guard(self.start_method)
        head, buffers = _pickle_out_of_band(fn)
        pool = self._ensure_pool()
        here = None
        if self.use_main_process:  # one task at a time in a thread of this process
            from concurrent.futures import ThreadPoolExecutor

            here = ThreadPoolExecutor(max_workers=1, thread_name_prefix="privaudit-task")
        results: list[Any] = [None] * len(items)
        finished = False
        try:
            key = pool.ship(head, buffers)
            with progress_bar(desc, len(items), enabled=self.progress) as bar:
                # a task goes to a free slot (a worker process, or this process) when one
                # frees up, so no slot waits behind a task queued for another
                running: dict[Future[Any], tuple[int, bool]] = {}  # -> (index, here?)
                processes: dict[int, Any] = {}
                nxt = 0
                while nxt < len(items) or running:
                    busy_here = any(h for _, h in running.values())
                    busy_pool = len(running) - busy_here
                    while nxt < len(items) and (
                        busy_pool < pool.n_workers or (here is not None and not busy_here)
                    ):
                        if busy_pool < pool.n_workers:
                            fut = pool.pool.submit(_worker_call, key, nxt, items[nxt])
                            running[fut] = (nxt, False)
                            busy_pool += 1
                        elif here is not None:
                            fut = here.submit(_run_limited, fn, items[nxt], self.threads_per_worker)
                            running[fut] = (nxt, True)
                            busy_here = True
                        nxt += 1
                    processes.update(pool.processes())  # started on demand by submit
                    done, _ = wait(running, return_when=FIRST_COMPLETED)
                    for fut in sorted(done, key=lambda f: running[f][0]):
                        i, _ = running.pop(fut)
                        error = fut.exception()
                        if error is not None:
                            for other in running:
                                other.cancel()
                            if isinstance(error, BrokenProcessPool):
                                # every pending task fails; name the one whose worker died
                                dead = pool.died_running(processes)
                                i = i if dead is None else dead
                                error = BrokenProcessPool(
                                    f"a worker process died (killed or out of memory): {error}"
                                )
                            raise TaskError(desc, i, name(items[i]), error) from error
                        results[i] = fut.result()
                        bar.advance()
            pool.prune()
            finished = True
        finally:
            if here is not None:
                here.shutdown(wait=True, cancel_futures=True)
            if not finished:  # a failed task, a dead worker or an interrupt: a fresh pool next time
                self.close()
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
