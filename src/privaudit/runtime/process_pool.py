"""The process pool behind :class:`~privaudit.runtime.executor.LocalExecutor`.

Worker side: the initializer that limits BLAS/OpenMP threads before scikit-learn's
OpenMP runtime loads, and the installation of a shipped function (one per worker at a
time). Parent side: :func:`pickle_out_of_band` and :class:`ProcessPool`, which ships a
function as files (its pickle without its large buffers, each large buffer once per pool
by content hash) so that a task carries only its item.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
import signal
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any

from privaudit._validation import fail

__all__ = ["THREAD_ENV_VARS", "ProcessPool", "pickle_out_of_band", "run_limited", "worker_call"]

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

    A worker ignores SIGINT: a Ctrl-C on a terminal reaches every process of the group,
    and a trainer in a worker that swallowed it (scikit-learn's MLP stops early and
    returns) would store a half-trained model. The driver cancels the workers instead
    (:meth:`ProcessPool.terminate`); a task a worker finishes is complete. The worker
    was started with SIGINT blocked (:func:`sigint_blocked`), so none reached it while
    it started; it is unblocked once ignored.
    """
    global _WORKER_DIR, _WORKER_THREADS
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    _WORKER_DIR = workdir
    _WORKER_THREADS = n_threads
    for var in THREAD_ENV_VARS:
        os.environ[var] = str(n_threads)
    # torch reads this (models/torch_recipe.py) and calls torch.set_num_threads with it
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


def worker_call(key: str, index: int, item: Any) -> Any:
    fn = _install(key)
    if _WORKER_DIR is not None:  # which task this process runs, should it die
        with open(os.path.join(_WORKER_DIR, f"run-{os.getpid()}"), "w") as fh:
            fh.write(str(index))
    return fn(item)


def run_limited(fn: Callable[[Any], Any], item: Any, n_threads: int) -> Any:
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


@contextlib.contextmanager
def sigint_blocked() -> Iterator[None]:
    """Block SIGINT in this thread for the block (a worker started inside inherits the
    mask, so a Ctrl-C during its start-up, its imports included, cannot print a
    traceback from it); a SIGINT that arrives meanwhile is delivered when it ends."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


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


def pickle_out_of_band(fn: Any) -> tuple[bytes, list[memoryview]]:
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


class ProcessPool:
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
            self.submit(_worker_ping)

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future[Any]:
        """``fn(*args)`` in a worker; a worker this starts starts with SIGINT blocked."""
        with sigint_blocked():
            return self.pool.submit(fn, *args)

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

    def terminate(self, timeout: float = 10.0) -> None:
        """Stop the workers now (SIGTERM), their running tasks with them, and delete the
        folder: what an interrupt does. A task killed mid-way stores nothing (the store
        renames a finished entry into place, or nothing)."""
        import shutil

        procs = list(self.processes().values())
        try:
            for proc in procs:
                if proc.exitcode is None:
                    proc.terminate()
            self.pool.shutdown(wait=False, cancel_futures=True)
            for proc in procs:
                proc.join(timeout)
                if proc.exitcode is None:  # pragma: no cover - a worker stuck in the kernel
                    proc.kill()
                    proc.join(timeout)
        finally:
            shutil.rmtree(self.workdir, ignore_errors=True)
