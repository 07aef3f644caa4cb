"""Interrupts never corrupt the store: a task a signal interrupted is never stored, even
when its trainer swallows the KeyboardInterrupt (issue 29, item 1)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from privaudit.runtime import interrupts
from privaudit.runtime.executor import LocalExecutor
from privaudit.runtime.store import ArtifactStore, kept_summary, opened_stores

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from interrupt_tasks import _load, _save, sigint_ignored, swallowing_fit  # noqa: E402


def _swallowing_create(signum: int, epochs: int = 6) -> dict[str, int]:
    """A fit that signals this process at its third epoch and swallows the interrupt."""
    done = 0
    try:
        for e in range(epochs):
            if e == 2:
                os.kill(os.getpid(), signum)
                time.sleep(0.05)  # the handler runs at the next instruction
            done += 1
    except KeyboardInterrupt:
        pass
    return {"epochs": done, "of": epochs}


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_swallowed_signal_in_a_cli_command_stores_nothing(tmp_path: Path, signum: int) -> None:
    store = ArtifactStore(tmp_path)
    with interrupts.handled() as session:
        with pytest.raises(interrupts.Interrupted) as info:
            store.get_or_create({"m": 1}, lambda: _swallowing_create(signum), _save, _load)
        assert info.value.signum == signum and info.value.exit_code == 128 + signum
        # sticky: the command stops at its next store access, a cache hit included
        with pytest.raises(interrupts.Interrupted):
            store.get_or_create({"m": 2}, lambda: {"epochs": 1, "of": 1}, _save, _load)
    assert session.signum == signum and session.exit_code == 128 + signum
    assert store.keys() == [] and not list((tmp_path / "tmp").iterdir())
    # the handlers are restored, and the next command starts clean
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    with interrupts.handled() as again:
        assert store.get_or_create({"m": 1}, lambda: {"epochs": 6, "of": 6}, _save, _load)
    assert again.signum is None and len(store.keys()) == 1


def test_a_swallowed_ctrl_c_without_cli_handlers_stores_nothing(tmp_path: Path) -> None:
    """A script or a notebook (Python's own SIGINT handler): the store wraps it while a
    task runs, counts the Ctrl-C and refuses the half-trained result."""
    store = ArtifactStore(tmp_path)
    with pytest.raises(interrupts.Interrupted):
        store.get_or_create({"m": 1}, lambda: _swallowing_create(signal.SIGINT), _save, _load)
    assert store.keys() == []
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    # not sticky outside a command: the next task is stored
    assert store.get_or_create({"m": 1}, lambda: swallowing_fit(2), _save, _load)["epochs"] == 2
    assert len(store.keys()) == 1


def test_an_uncaught_interrupt_propagates_and_stores_nothing(tmp_path: Path) -> None:
    store = ArtifactStore(tmp_path)

    def fit() -> dict[str, int]:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(1.0)
        return {"epochs": 1, "of": 1}

    with interrupts.handled() as session:
        store.get_or_create({"m": 1}, fit, _save, _load)
        pytest.fail("the interrupt did not propagate")  # pragma: no cover
    assert session.signum == signal.SIGINT and store.keys() == []


def test_put_refuses_work_that_began_before_a_signal(tmp_path: Path) -> None:
    store = ArtifactStore(tmp_path)
    since = interrupts.mark()
    interrupts.note(signal.SIGTERM)  # e.g. a batched fit during which a signal came
    with pytest.raises(interrupts.Interrupted, match="SIGTERM"):
        store.put({"m": 1}, {"epochs": 1}, _save, since=since)
    assert store.keys() == []
    assert store.get_or_create({"m": 1}, lambda: {"epochs": 3}, _save, _load) == {"epochs": 3}
    with pytest.raises(interrupts.Interrupted):  # the same, given to get_or_create
        store.get_or_create({"m": 2}, lambda: {"epochs": 3}, _save, _load, since=since)


def test_a_report_is_not_written_after_a_signal_in_a_command(tmp_path: Path) -> None:
    from privaudit.report.writer import write_atomically

    out = tmp_path / "report"
    (out / "cache").mkdir(parents=True)
    (out / "cache" / "entry").write_text("kept")

    def fill(tmp: Path) -> None:
        (tmp / "results.json").write_text("{}")
        os.rename(out / "cache", tmp / "cache")  # PANORAMIA carries its store along

    with interrupts.handled():
        interrupts.note(signal.SIGINT)
        with pytest.raises(interrupts.Interrupted):
            write_atomically(out, fill, overwrite=True, carry=("cache",))
    # no report, and the carried store is back where it was, not deleted with the temp
    assert not (out / "results.json").exists()
    assert (out / "cache" / "entry").read_text() == "kept"
    assert [p.name for p in tmp_path.iterdir()] == ["report"]


def test_workers_ignore_sigint() -> None:
    with LocalExecutor(2, progress=False, use_main_process=False) as ex:
        res = ex.map(sigint_ignored, [0, 1], desc="dispositions")
    assert all(ignored for ignored, _ in res) and os.getpid() not in {p for _, p in res}


def _driver(tmp_path: Path, n: int, epochs: int, n_jobs: int) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(HERE.parents[1] / "src"), "OMP_NUM_THREADS": "1"}
    return subprocess.Popen(
        [
            sys.executable,
            str(HERE / "interrupt_tasks.py"),
            str(tmp_path),
            *map(str, (n, epochs, n_jobs)),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split()[2] == "Z")


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_ctrl_c_to_the_group_cancels_every_task_and_stores_only_finished_ones(
    tmp_path: Path, n_jobs: int
) -> None:
    """A Ctrl-C reaches the driver and its workers: the workers ignore it, the driver
    cancels them and the task in its own thread; every task swallows the interrupt, yet
    each stored entry is a complete fit, and the driver exits at once without a
    traceback."""
    epochs = 60  # 3 s per fit
    proc = _driver(tmp_path, 6, epochs, n_jobs)
    deadline = time.monotonic() + 120
    while not (tmp_path / "started").exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.05)
    time.sleep(1.0)  # mid-fit
    t0 = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    took = time.monotonic() - t0
    assert proc.returncode == 130, err
    assert "exit 130" in out and "Traceback" not in err, err
    assert took < 2.5, took  # no fit ran to its end (3 s) after the Ctrl-C
    store = ArtifactStore(tmp_path)
    stored = [_load(store.entry_dir(k) / "payload.json") for k in store.keys()]
    assert all(s == {"epochs": epochs, "of": epochs} for s in stored), stored
    assert not list((tmp_path / "tmp").iterdir())
    pids = [int(p) for p in out.split("\n")[0].split()[1:]]
    time.sleep(0.2)
    assert not [p for p in pids if _alive(p)], "a worker outlived the driver"


def test_sigterm_behaves_as_sigint(tmp_path: Path) -> None:
    proc = _driver(tmp_path, 4, 60, 2)
    deadline = time.monotonic() + 120
    while not (tmp_path / "started").exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.05)
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)  # to the driver only, as `kill PID` does
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 143 and "exit 143" in out and "Traceback" not in err, err
    assert ArtifactStore(tmp_path).keys() == []


def test_the_line_after_an_interrupt_counts_what_the_caches_kept(tmp_path: Path) -> None:
    from privaudit.cli.interrupted import interrupt_line

    store = ArtifactStore(tmp_path / "cache")
    store.put({"m": 1}, {"epochs": 1}, _save, suffix=".skops")
    store.put({"signals": 1}, {"x": 1}, _save, suffix=".npy")
    assert store.census() == (2, 1)
    assert store.root in opened_stores()
    gone = tmp_path / "temporary"
    ArtifactStore(gone)
    import shutil

    shutil.rmtree(gone)  # a temporary store is gone by the time the line is written
    kept = kept_summary()
    assert f"the cache at {store.root} holds 2 finished artifacts (1 model)" in kept
    assert str(gone) not in kept
    line = interrupt_line(signal.SIGTERM, ["run", "a b.yaml"], kept)
    assert line.startswith("interrupted (SIGTERM): nothing half-done was stored; the cache at ")
    assert line.endswith("resume with: privaudit run 'a b.yaml'") and "\n" not in line


def test_the_executor_cancels_its_thread_task_on_an_interrupt(tmp_path: Path) -> None:
    """The task the driver runs in a thread (use_main_process): an interrupt of the map
    stops it and nothing of it is stored."""
    from interrupt_tasks import SwallowingTask

    marker = tmp_path / "started"
    task = SwallowingTask(str(tmp_path), 200, str(marker))  # 10 s per fit
    timer = threading.Timer(0.0, lambda: None)
    with interrupts.handled() as session:
        with LocalExecutor(2, progress=False) as ex:

            def ctrl_c() -> None:
                while not marker.exists():
                    time.sleep(0.02)
                time.sleep(0.3)
                os.kill(os.getpid(), signal.SIGINT)

            timer = threading.Timer(0.0, ctrl_c)
            timer.start()
            t0 = time.monotonic()
            ex.map(task, [0, 1], desc="fits")
    timer.join()
    assert session.signum == signal.SIGINT
    assert time.monotonic() - t0 < 8.0
    assert ArtifactStore(tmp_path).keys() == []
    assert not [t for t in threading.enumerate() if t.name == "privaudit-task" and t.is_alive()]


def test_census_skips_damaged_entries(tmp_path: Path) -> None:
    store = ArtifactStore(tmp_path)
    store.put({"m": 1}, {"epochs": 1}, _save, suffix=".skops")
    key = store.keys()[0]
    (store.entry_dir(key) / "manifest.json").write_text("{trunc")
    assert store.census() == (0, 0)
    assert json.loads((store.entry_dir(key) / "payload.skops").read_text()) == {"epochs": 1}


class _SignalsInDel:
    def __del__(self) -> None:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.2)  # the handler runs here, where Python cannot raise


def test_an_interrupt_that_lands_in_a_finalizer_is_raised_again(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Python prints "Exception ignored in ..." with a traceback for an exception raised
    in a __del__ or a weakref callback (a pool's finalizer, an import lock's callback),
    and goes on; inside a command the interrupt is raised again in the normal flow."""
    reached = False
    hook = sys.unraisablehook
    with interrupts.handled() as session:
        obj = _SignalsInDel()
        del obj
        time.sleep(1.0)
        reached = True  # pragma: no cover - the interrupt comes first
    assert session.signum == signal.SIGINT and not reached
    err = capsys.readouterr().err
    assert "Exception ignored" not in err and "Traceback" not in err, err
    assert sys.unraisablehook is hook


def test_a_signal_the_process_ignores_stays_ignored() -> None:
    """A job a shell started in the background ignores SIGINT; a command keeps it so."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with interrupts.handled() as session:
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
        assert session.signum is None and signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupt_that_surfaces_as_another_error_is_still_the_interrupt(signum: int) -> None:
    """A signal can end the work as another exception: a C extension whose initialisation
    it interrupted raises "ImportError: initialization failed" (seen: matplotlib's ft2font,
    SIGTERM while the PANORAMIA report was written, exit 1 with a traceback). Under
    :func:`interrupts.handled` that is the interrupt (its exit code); without a signal
    the same error propagates."""

    def failing_after_signal() -> None:
        try:
            os.kill(os.getpid(), signum)
            time.sleep(0.05)  # the handler runs at the next instruction
        except KeyboardInterrupt as exc:
            raise ImportError("initialization failed") from exc

    with interrupts.handled() as session:
        failing_after_signal()
    assert session.exit_code == 128 + signum
    with pytest.raises(ImportError), interrupts.handled() as quiet:
        raise ImportError("a real failure, no signal")
    assert quiet.exit_code == 0
