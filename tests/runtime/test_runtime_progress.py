"""Progress bars: silent off a terminal or when disabled, drawn on a terminal."""

from __future__ import annotations

import io

import pytest

from privaudit.runtime import progress as progress_mod
from privaudit.runtime.executor import LocalExecutor
from privaudit.runtime.progress import progress_bar, progress_enabled


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
