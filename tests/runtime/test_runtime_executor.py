"""Executors: order preserved, errors name the failing item, Ray behind the same interface."""

from __future__ import annotations

import os
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from runtime_tasks import Multiplier, die_on_two, fail_on_three, slow_reverse, square
from thread_tasks import thread_report

from privaudit.errors import InvalidInputError, PrivauditError
from privaudit.runtime.executor import (
    LocalExecutor,
    RayExecutor,
    TaskError,
    available_cores,
    resolve_n_jobs,
)


def test_inline_preserves_order() -> None:
    assert LocalExecutor(1).map(square, range(6), desc="sq") == [0, 1, 4, 9, 16, 25]


def test_empty_items() -> None:
    assert LocalExecutor(2).map(square, [], desc="sq") == []


def test_process_pool_preserves_order_and_uses_processes() -> None:
    import os

    with LocalExecutor(2, use_main_process=False) as ex:
        out = ex.map(slow_reverse, list(range(10)), desc="rev")
        assert [x for x, _ in out] == list(range(10))
        assert all(pid != os.getpid() for _, pid in out)
        assert len(ex.worker_pids()) == 2
    # by default this process runs tasks too, next to n_jobs - 1 worker processes
    with LocalExecutor(2) as ex:
        out = ex.map(slow_reverse, list(range(10)), desc="rev")
        assert [x for x, _ in out] == list(range(10))
        assert len(ex.worker_pids()) == 1
        assert {pid for _, pid in out} <= {os.getpid(), *ex.worker_pids()}


def test_callable_object_sent_once() -> None:
    assert LocalExecutor(2).map(Multiplier(3), [1, 2, 3], desc="mul") == [3, 6, 9]


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_error_names_failing_item(n_jobs: int) -> None:
    with pytest.raises(TaskError) as info:
        LocalExecutor(n_jobs).map(
            fail_on_three, [0, 1, 2, 3, 4], desc="toy models", label=lambda x: f"model-{x}"
        )
    err = info.value
    assert isinstance(err, PrivauditError)
    assert err.index == 3 and err.label == "model-3"
    assert "toy models" in str(err) and "model-3" in str(err) and "bad item 3" in str(err)
    assert isinstance(err.__cause__, ValueError)


def test_dead_worker_is_named() -> None:
    with pytest.raises(TaskError) as info:
        # every task in a worker process (in this process, os._exit would end pytest)
        LocalExecutor(2, use_main_process=False).map(
            die_on_two, [0, 1, 2, 3], desc="dying", label=str
        )
    assert info.value.label == "2"
    assert "worker process died" in str(info.value)


def test_a_pool_broken_at_submit_fails_as_a_dead_worker() -> None:
    """A worker killed between two waits breaks the pool, and the next submit raises
    BrokenProcessPool itself (not through a future): the map fails with a TaskError naming
    a running task, as when a future reports the death (seen once in CI as a traceback
    from submit, exit 1 instead of 2)."""
    from concurrent.futures import Future
    from concurrent.futures.process import BrokenProcessPool

    from privaudit.runtime.executor import _ParallelMap
    from privaudit.runtime.progress import progress_bar

    class BreaksOnSecondSubmit:
        n_workers = 2

        def __init__(self) -> None:
            self.calls = 0
            self.first: Future[Any] = Future()

        def submit(self, *args: Any) -> Future[Any]:
            self.calls += 1
            if self.calls > 1:
                raise BrokenProcessPool("A child process terminated abruptly")
            return self.first

        def processes(self) -> dict[int, Any]:
            return {}

        def died_running(self, processes: dict[int, Any]) -> int | None:
            return None

    pool = BreaksOnSecondSubmit()
    tasks = _ParallelMap(square, [5, 6, 7], pool, "k", None, 1, "squares", str)  # type: ignore[arg-type]
    with progress_bar("squares", 3, enabled=False) as bar, pytest.raises(TaskError) as info:
        tasks.run(bar)
    assert info.value.index == 0 and info.value.label == "5"  # the task that was running
    assert "worker process died" in str(info.value)
    assert pool.first.cancelled()


def test_unpicklable_function_rejected() -> None:
    with pytest.raises(InvalidInputError, match="picklable"):
        LocalExecutor(2).map(lambda x: x, [1, 2], desc="lambda")


def test_resolve_n_jobs() -> None:

    assert resolve_n_jobs(3) == 3
    assert resolve_n_jobs(-1) == available_cores()
    for bad in (0, 1.5, True):
        with pytest.raises(InvalidInputError):
            resolve_n_jobs(bad)  # type: ignore[arg-type]


def test_task_error_pickles() -> None:
    import pickle

    e = TaskError("d", 1, "lab", ValueError("x"))
    e2 = pickle.loads(pickle.dumps(e))
    assert str(e2) == str(e) and e2.label == "lab"


# --- Ray ---------------------------------------------------------------------------


@pytest.mark.slow  # a local Ray instance starts in 15-60 s; CI installs ray and runs -m slow
def test_ray_executor_real() -> None:
    import signal

    ray = pytest.importorskip("ray")
    # ray.init installs a SIGTERM handler in this process: the interrupt tests need ours
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    # Workers need this folder (for runtime_tasks) on their path; stay on loopback. A
    # connection an earlier test left (without that path) would be reused: drop it first.
    if ray.is_initialized():
        ray.shutdown()
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        ignore_reinit_error=True,
        _node_ip_address="127.0.0.1",
        # (and the driver's own path: the privaudit under test, not an installed one)
        runtime_env={
            "env_vars": {
                "PYTHONPATH": os.pathsep.join(
                    filter(None, [str(Path(__file__).parent), os.environ.get("PYTHONPATH")])
                )
            }
        },
    )
    try:
        ex = RayExecutor(progress=False)
        assert ex.map(square, [3, 1, 2], desc="sq") == [9, 1, 4]
        with pytest.raises(TaskError) as info:
            ex.map(fail_on_three, [1, 3], desc="ray", label=str)
        assert info.value.label == "3"
    finally:
        ray.shutdown()
        for sig, handler in saved.items():
            signal.signal(sig, handler)


class _FakeRef:
    def __init__(self, value: Any = None, error: BaseException | None = None) -> None:
        self.value, self.error = value, error


class _FakeRayTaskError(Exception):
    def __init__(self, cause: BaseException) -> None:
        super().__init__(f"ray task failed: {cause}")
        self.cause = cause


def _fake_ray() -> types.ModuleType:
    """A minimal stand-in for ray's task API, finishing tasks in reverse order."""
    ray: Any = types.ModuleType("ray")
    state = {"init": False, "cancelled": 0}

    def remote(**_res: Any) -> Callable[[Callable[..., Any]], Any]:
        def wrap(fn: Callable[..., Any]) -> Any:
            class _Remote:
                @staticmethod
                def remote(*args: Any) -> _FakeRef:
                    args = tuple(a.value if isinstance(a, _FakeRef) else a for a in args)
                    try:
                        return _FakeRef(fn(*args))
                    except Exception as exc:
                        return _FakeRef(error=_FakeRayTaskError(exc))

            return _Remote

        return wrap

    def wait(
        pending: list[_FakeRef], num_returns: int = 1
    ) -> tuple[list[_FakeRef], list[_FakeRef]]:
        return pending[-num_returns:], pending[:-num_returns]

    def get(ref: _FakeRef) -> Any:
        if ref.error is not None:
            raise ref.error
        return ref.value

    def cancel(_ref: _FakeRef) -> None:
        state["cancelled"] += 1

    ray.remote = remote
    ray.put = lambda v: _FakeRef(v)
    ray.wait, ray.get, ray.cancel = wait, get, cancel
    ray.is_initialized = lambda: state["init"]
    ray.init = lambda **kw: state.update(init=True)
    ray.cluster_resources = lambda: {"CPU": 4.0}
    ray.state = state
    return ray


def test_ray_executor_logic_with_fake_ray(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _fake_ray()
    monkeypatch.setitem(sys.modules, "ray", fake)
    ex = RayExecutor(progress=False, num_cpus=2)
    assert ex.map(square, [1, 2, 3, 4], desc="sq") == [1, 4, 9, 16]
    assert fake.state["init"] is True  # type: ignore[attr-defined]
    assert ex.n_workers == 2
    with pytest.raises(TaskError) as info:
        ex.map(fail_on_three, [1, 2, 3, 4, 5], desc="fake", label=lambda x: f"m{x}")
    assert info.value.label == "m3" and isinstance(info.value.original, ValueError)


def test_ray_missing_is_clear(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(InvalidInputError, match="ray"):
        RayExecutor().map(square, [1], desc="x")


@pytest.mark.parametrize("use_main_process", [False, True])
def test_worker_thread_limit_reaches_openmp_loaded_by_the_task(use_main_process: bool) -> None:
    """Every BLAS/OpenMP pool of a worker, including scikit-learn's OpenMP runtime (which
    loads while the worker unpickles its function), runs at most ``threads`` threads; so
    do the pools of a task run in this process (limited in the thread that runs it)."""
    import os

    threads = 1
    with LocalExecutor(2, threads_per_worker=threads, use_main_process=use_main_process) as ex:
        reports = ex.map(thread_report, [0, 1, 2, 3], desc="threads")
    assert len({r["pid"] for r in reports}) >= 1
    for r in reports:
        if r["pid"] != os.getpid():
            assert r["OMP_NUM_THREADS"] == str(threads)
        apis = {api for api, _, _ in r["pools"]}
        assert "openmp" in apis, r["pools"]  # scikit-learn's runtime is seen and limited
        assert all(n <= threads for _, _, n in r["pools"]), r["pools"]


def test_default_threads_keep_workers_within_the_cores() -> None:
    for n_jobs in (1, 2, 3, 64):
        ex = LocalExecutor(n_jobs)
        assert ex.threads_per_worker >= 1
        if n_jobs <= available_cores():
            assert ex.n_jobs * ex.threads_per_worker <= available_cores()
        else:
            assert ex.threads_per_worker == 1
