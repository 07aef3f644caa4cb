"""Progress: rich bars on a terminal, plain lines in a log (their cadence, with an injected
clock), callbacks and tqdm-style classes, the modes and the environment switch."""

from __future__ import annotations

import io
from typing import Any

import pytest

from privaudit.runtime import progress as progress_mod
from privaudit.runtime.executor import LocalExecutor
from privaudit.runtime.progress import progress_bar, progress_enabled, progress_phase


class _FakeTty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_quiet_when_not_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    assert not progress_enabled(None)  # pytest captures stderr: not a terminal
    with progress_bar("work", 3) as bar:
        for _ in range(3):
            bar.advance()
    LocalExecutor(1).map(abs, [-1, 2], desc="abs")
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""


def test_drawn_on_a_terminal_unless_disabled(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _FakeTty()
    monkeypatch.setattr(progress_mod.sys, "stderr", fake)
    monkeypatch.delenv("PRIVAUDIT_NO_PROGRESS", raising=False)
    assert progress_enabled(None) and progress_enabled(True)
    assert not progress_enabled(False)
    with progress_bar("reference models", 2) as bar:
        bar.advance()
        bar.advance()
    assert "reference models" in fake.getvalue()

    monkeypatch.setenv("PRIVAUDIT_NO_PROGRESS", "1")
    assert not progress_enabled(True)


def test_nested_bar_degrades_to_noop(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _FakeTty()
    monkeypatch.setattr(progress_mod.sys, "stderr", fake)
    monkeypatch.delenv("PRIVAUDIT_NO_PROGRESS", raising=False)
    with progress_bar("outer", 1) as outer, progress_bar("inner", 1) as inner:
        inner.advance()
        outer.advance()
    assert "outer" in fake.getvalue() and "inner" not in fake.getvalue()
    # the lock is released: a later bar draws again
    with progress_bar("later", 1) as bar:
        bar.advance()
    assert "later" in fake.getvalue()


# --------------------------------------------------------------------------- plain lines, callbacks


class _Clock:
    """An injected clock: ``tick(s)`` moves it on."""

    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t

    def tick(self, s: float) -> None:
        self.t += s


def _plain_run(steps: int, dt: float, *, min_interval: float = 2.0) -> list[str]:
    """The plain lines of a phase of ``steps`` steps of ``dt`` seconds each."""
    log = io.StringIO()
    clock = _Clock()
    sink = progress_mod.PlainProgress(stream=log, min_interval=min_interval)
    with progress_bar("models", steps, enabled=sink, clock=clock) as bar:
        for _ in range(steps):
            clock.tick(dt)
            bar.advance()
    return log.getvalue().splitlines()


def test_plain_long_phase_reports_every_tenth() -> None:
    lines = _plain_run(100, 1.0)
    assert lines[0] == "privaudit: models 0/100"
    assert lines[1] == "privaudit: models 10/100 (10%), 10s elapsed, ETA 1m30s"
    assert [line.split()[2] for line in lines[1:-1]] == [f"{10 * k}/100" for k in range(1, 10)]
    assert lines[-1] == "privaudit: models 100/100 done in 1m40s"
    assert len(lines) == 11


def test_plain_quick_phase_is_one_line() -> None:
    assert _plain_run(100, 0.01) == ["privaudit: models 0/100"]


def test_plain_lines_are_throttled_to_min_interval() -> None:
    # 12.5 s in steps of 1/8 s: a line at the first step past the next 10% mark once 2 s
    # have passed since the last line (the 10% mark, after 1.25 s, is too soon)
    lines = _plain_run(100, 0.125, min_interval=2.0)
    steps = [line.split()[2] for line in lines]
    assert steps == ["0/100", "16/100", "32/100", "48/100", "64/100", "80/100", "96/100", "100/100"]


def test_plain_few_slow_steps() -> None:
    lines = _plain_run(3, 10.0)
    assert lines == [
        "privaudit: models 0/3",
        "privaudit: models 1/3 (33%), 10s elapsed, ETA 20s",
        "privaudit: models 2/3 (67%), 20s elapsed, ETA 10s",
        "privaudit: models 3/3 done in 30s",
    ]


def test_plain_phase_that_raises_has_no_end_line() -> None:
    log, clock = io.StringIO(), _Clock()
    sink = progress_mod.PlainProgress(stream=log, min_interval=0.0)
    with pytest.raises(RuntimeError), progress_bar("models", 4, enabled=sink, clock=clock) as bar:
        clock.tick(5.0)
        bar.advance()
        raise RuntimeError("boom")
    assert log.getvalue().splitlines() == [
        "privaudit: models 0/4",
        "privaudit: models 1/4 (25%), 5s elapsed, ETA 15s",
    ]


def test_plain_phase_without_steps_and_interleaved_phases() -> None:
    log, clock = io.StringIO(), _Clock()
    sink = progress_mod.PlainProgress(stream=log)
    with progress_phase("loading the data", enabled=sink, clock=clock):
        clock.tick(0.5)
    with progress_phase("target model", enabled=sink, clock=clock):
        with (
            progress_bar("models", 2, enabled=sink, clock=clock) as a,
            progress_bar("models", 2, enabled=sink, clock=clock) as b,
        ):  # two phases of one name at once: each keeps its own count
            clock.tick(3.0)
            a.advance()
            b.advance()
            b.advance()
        clock.tick(1.0)
    assert log.getvalue().splitlines() == [
        "privaudit: loading the data...",  # quick: no end line
        "privaudit: target model...",
        "privaudit: models 0/2",
        "privaudit: models 0/2",
        "privaudit: models 1/2 (50%), 3s elapsed, ETA 3s",  # a
        "privaudit: models 1/2 (50%), 3s elapsed, ETA 3s",  # b
        "privaudit: models 2/2 done in 3s",  # b ends first
        "privaudit: models 1/2 done in 3s",  # a ended with 1 of its 2 steps
        "privaudit: target model done in 4s",
    ]


def test_plain_mode_writes_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    LocalExecutor(1, progress="plain").map(abs, [-1, 2, -3], desc="abs")
    assert capsys.readouterr().err.splitlines() == ["privaudit: abs 0/3"]
    with progress_phase("phase", enabled="auto"):  # stderr is not a terminal: plain lines
        pass
    assert capsys.readouterr().err == "privaudit: phase...\n"
    with progress_phase("phase"), progress_bar("bar", 2) as bar:  # default: quiet off a tty
        bar.advance()
    assert capsys.readouterr().err == ""


def test_callback_gets_every_event() -> None:
    events: list[progress_mod.ProgressEvent] = []
    clock = _Clock()
    with progress_bar("work", 2, enabled=events.append, clock=clock) as bar:
        clock.tick(2.0)
        bar.advance()
        clock.tick(2.0)
        bar.advance()
    assert [(e.stage, e.done, e.total, e.elapsed) for e in events] == [
        ("start", 0, 2, 0.0),
        ("advance", 1, 2, 2.0),
        ("advance", 2, 2, 4.0),
        ("end", 2, 2, 4.0),
    ]
    assert events[1].eta == 2.0 and events[1].fraction == 0.5 and events[-1].completed
    assert len({e.phase for e in events}) == 1


def test_tqdm_style_class(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[Any] = []

    class FakeTqdm:
        def __init__(self, *, total: int | None, desc: str) -> None:
            self.total, self.desc, self.n, self.closed = total, desc, 0, False
            made.append(self)

        def update(self, n: int = 1) -> None:
            self.n += n

        def close(self) -> None:
            self.closed = True

    monkeypatch.setenv("PRIVAUDIT_NO_PROGRESS", "1")  # the caller's own hook is still used
    LocalExecutor(1, progress=FakeTqdm).map(abs, [-1, 2, -3], desc="abs")
    with progress_phase("loading", enabled=FakeTqdm):
        pass
    assert [(b.desc, b.total, b.n, b.closed) for b in made] == [
        ("abs", 3, 3, True),
        ("loading", None, 0, True),
    ]


def test_real_tqdm_is_accepted() -> None:
    tqdm = pytest.importorskip("tqdm")
    out = io.StringIO()

    class Bar(tqdm.tqdm):  # a tqdm writing to ``out``
        def __init__(self, **kw: Any) -> None:
            super().__init__(file=out, **kw)

    with progress_bar("tqdm work", 2, enabled=Bar) as b:
        b.advance()
        b.advance()
    assert "tqdm work" in out.getvalue() and "2/2" in out.getvalue()


def test_modes_and_environment(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("PRIVAUDIT_NO_PROGRESS", raising=False)
    assert progress_mod.progress_style(None) == "none"  # pytest's stderr is not a terminal
    assert progress_mod.progress_style("auto") == "plain"
    assert progress_mod.progress_style("PLAIN") == "plain"
    assert progress_mod.progress_style("none") == "none"
    assert progress_mod.progress_style(False) == "none"
    assert progress_mod.progress_style(print) == "custom"
    with progress_bar("forced", 1, enabled="rich") as bar:  # rich even off a terminal
        bar.advance()
    assert "forced" in capsys.readouterr().err
    fake = _FakeTty()
    monkeypatch.setattr(progress_mod.sys, "stderr", fake)
    assert progress_mod.progress_style("auto") == "rich"
    assert progress_mod.progress_style(True) == "rich"
    monkeypatch.setenv("PRIVAUDIT_NO_PROGRESS", "1")
    assert progress_mod.progress_style("plain") == "none"
    assert progress_mod.progress_style("rich") == "none"


@pytest.mark.parametrize("bad", ["verbose", "", 3, 1.5])
def test_bad_option_is_named(bad: object) -> None:
    from privaudit.errors import InvalidInputError

    with pytest.raises(InvalidInputError, match="progress: expected one of auto, rich, plain"):
        progress_mod.check_progress(bad)
    with pytest.raises(InvalidInputError, match="progress"):
        LocalExecutor(1, progress=bad)  # type: ignore[arg-type]
