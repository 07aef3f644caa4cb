"""The persistent worker pool of LocalExecutor: reused across maps, started early,
closed cleanly (no process left), data shipped once per pool, results bit-identical
to an inline run (issue 8, item 5)."""

from __future__ import annotations

import dataclasses
import gc
import multiprocessing
import os
from pathlib import Path

import numpy as np
import pytest
from preload_marker import Marker
from runtime_tasks import ArrayTask, fail_on_three, loaded, slow_reverse, square
from sklearn.linear_model import LogisticRegression
from threadpoolctl import threadpool_limits

from privaudit.data import load_digits
from privaudit.membership.experiment import ExperimentConfig, run_experiment
from privaudit.models import SklearnTrainer
from privaudit.runtime.executor import LocalExecutor, TaskError


def _gone(pids: tuple[int, ...]) -> bool:
    """No process with these ids exists any more (exited and reaped)."""
    alive = {p.pid for p in multiprocessing.active_children()}
    for pid in pids:
        if pid in alive:
            return False
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        return False
    return True


@pytest.mark.parametrize("use_main_process", [False, True])
def test_workers_are_reused_across_maps_and_stop_on_close(use_main_process: bool) -> None:
    ex = LocalExecutor(2, progress=False, use_main_process=use_main_process)
    first = ex.map(slow_reverse, list(range(6)), desc="first")
    pids = ex.worker_pids()
    assert len(pids) == (1 if use_main_process else 2) and os.getpid() not in pids
    second = ex.map(slow_reverse, list(range(6, 12)), desc="second")
    assert ex.worker_pids() == pids  # the same processes ran the second map
    here = {os.getpid()} if use_main_process else set()
    assert {pid for _, pid in first + second} <= set(pids) | here
    assert ex.map(square, [1, 2, 3], desc="another function") == [1, 4, 9]
    assert ex.worker_pids() == pids
    ex.close()
    assert ex.worker_pids() == () and _gone(pids)
    assert ex.map(square, [4, 5], desc="after close") == [16, 25]  # a new pool
    new = ex.worker_pids()
    assert new and not set(new) & set(pids)
    ex.close()
    assert _gone(new)


def test_with_block_and_garbage_collection_close_the_pool() -> None:
    with LocalExecutor(2, progress=False) as ex:
        ex.map(square, [1, 2, 3, 4], desc="sq")
        pids = ex.worker_pids()
        workdir = Path(ex._pool.workdir)  # type: ignore[union-attr]
        assert workdir.is_dir()
    assert pids and _gone(pids) and not workdir.exists()

    ex2 = LocalExecutor(2, progress=False)
    ex2.map(square, [1, 2, 3, 4], desc="sq")
    pids = ex2.worker_pids()
    del ex2
    gc.collect()
    assert _gone(pids)


def test_start_spawns_every_worker_and_preloads_modules() -> None:
    import sys

    assert "preload_marker" in sys.modules  # imported by this test module, not by workers
    with LocalExecutor(2, progress=False, use_main_process=False) as ex:
        ex.start(preload=Marker())
        assert len(ex.worker_pids()) == 2  # started at once, not when tasks arrive
        out = ex.map(loaded, ["preload_marker"] * 6, desc="preloaded?")
        assert all(seen for seen, _ in out)
        assert {pid for _, pid in out} <= set(ex.worker_pids())
        ex.start()  # already started: nothing happens
        assert len(ex.worker_pids()) == 2
    with LocalExecutor(3, progress=False) as ex:
        ex.start()
        assert len(ex.worker_pids()) == 2  # n_jobs - 1 processes next to this one
    LocalExecutor(1).start(preload=Marker())  # inline: nothing to start


def test_large_arrays_are_shipped_once_per_pool() -> None:
    data = np.arange(100_000, dtype=np.float64)  # 800 kB: travels out of band
    with LocalExecutor(2, progress=False, use_main_process=False) as ex:
        a = ex.map(ArrayTask(data), [0, 1, 2], desc="a")
        b = ex.map(ArrayTask(data, offset=0.5), [0, 1, 2], desc="b")
        total = float(data.sum())
        assert [r[0] for r in a] == [total, total + 1, total + 2]
        assert [r[0] for r in b] == [total + 0.5, total + 1.5, total + 2.5]
        assert all(writable for _, writable, _ in a + b)
        pool = ex._pool
        assert pool is not None
        names = sorted(os.listdir(pool.workdir))
        # one buffer file for the shared array, one function file (the last map's)
        assert sum(n.endswith(".buf") for n in names) == 1, names
        assert sum(n.endswith(".fn") for n in names) == 1, names
        c = ex.map(ArrayTask(data + 1), [0, 1], desc="other data")
        assert c[0][0] == total + data.size
        assert sum(n.endswith(".buf") for n in os.listdir(pool.workdir)) == 1


def test_failed_task_closes_the_pool_and_the_next_map_starts_a_new_one() -> None:
    with LocalExecutor(2, progress=False) as ex:
        ex.map(square, [1, 2, 3], desc="sq")
        pids = ex.worker_pids()
        with pytest.raises(TaskError):
            ex.map(fail_on_three, [0, 1, 2, 3, 4], desc="failing")
        assert ex.worker_pids() == () and _gone(pids)
        assert ex.map(square, [2, 3], desc="again") == [4, 9]


CFG = ExperimentConfig(
    n_target_pool=120,
    n_population=120,
    n_reference=4,
    n_shadow=2,
    attacks=("lira-online", "reference"),
    alpha=0.1,
    seed=5,
)


def test_two_workers_give_bit_identical_scores_and_one_pool_serves_two_runs() -> None:
    digits = load_digits()
    trainer = SklearnTrainer(LogisticRegression(C=10.0, max_iter=100), n_classes=10)
    with threadpool_limits(limits=1):  # the workers' BLAS runs one thread: the same here
        inline = run_experiment(digits, trainer, CFG, executor=LocalExecutor(1), progress=False)
    other = dataclasses.replace(CFG, seed=6)
    with LocalExecutor(2, threads_per_worker=1, progress=False) as ex:
        parallel = run_experiment(digits, trainer, CFG, executor=ex, progress=False)
        pids = ex.worker_pids()
        assert len(pids) == 1  # started before the target trained, kept for the next run
        again = run_experiment(digits, trainer, other, executor=ex, progress=False)
        assert ex.worker_pids() == pids
    assert _gone(pids)
    assert set(parallel.scores) == set(CFG.attacks)
    for name in CFG.attacks:
        np.testing.assert_array_equal(inline.scores[name].scores, parallel.scores[name].scores)
    assert not np.array_equal(again.record_ids, parallel.record_ids)
