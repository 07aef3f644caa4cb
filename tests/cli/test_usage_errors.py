"""Usage errors end in typer's own message and exit code 2, never a traceback (issue 8, item 1).

The newest typer (0.29) vendors click and raises its own exception classes; the dev extras
happen to install click (import-linter needs it), so these tests run the CLI in a
subprocess where ``import click`` fails, as it does with only the runtime dependencies
installed. ``test_installed_entry_point_in_runtime_only_venv`` (slow) builds such a venv.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from importlib.metadata import requires
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

#: Runs privaudit's entry point with ``click`` unimportable (a meta-path finder refuses it).
_NO_CLICK = textwrap.dedent(
    """
    import sys
    from importlib.abc import MetaPathFinder

    class NoClick(MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == "click" or name.startswith("click."):
                raise ModuleNotFoundError(f"No module named {name!r} (blocked by the test)")
            return None

    sys.meta_path.insert(0, NoClick())
    for mod in [m for m in sys.modules if m == "click" or m.startswith("click.")]:
        del sys.modules[mod]
    from privaudit.cli import main
    code = main(sys.argv[1:])
    assert "click" not in sys.modules
    sys.exit(code)
    """
)


def _typer_needs_click() -> bool:
    return any(r.split(";")[0].strip().lower().startswith("click") for r in requires("typer") or [])


needs_clickless_typer = pytest.mark.skipif(
    _typer_needs_click(), reason="the installed typer depends on click (typer < 0.29)"
)


def _run_without_click(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-c", _NO_CLICK, *argv],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
    )


@needs_clickless_typer
@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "Usage: privaudit"),
        (["bogus"], "No such command 'bogus'"),
        (["run"], "Missing argument"),
        (["audit", "scores.csv", "--confidence", "abc"], "Invalid value for '--confidence'"),
        (["demo", "--seed", "x"], "Invalid value for '--seed'"),
    ],
    ids=["no-arguments", "unknown-command", "run-without-config", "audit-confidence", "demo-seed"],
)
def test_usage_error_without_click(argv: list[str], message: str, tmp_path: Path) -> None:
    proc = _run_without_click(*argv, cwd=tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out
    assert message in out
    assert "Traceback" not in out
    assert list(tmp_path.iterdir()) == []


@needs_clickless_typer
def test_help_and_version_without_click(tmp_path: Path) -> None:
    for argv in (["--help"], ["--version"], ["run", "--help"]):
        proc = _run_without_click(*argv, cwd=tmp_path)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "Traceback" not in proc.stderr


@pytest.mark.slow
def test_installed_entry_point_in_runtime_only_venv(tmp_path: Path) -> None:
    """``pip install .`` (runtime dependencies only) into a fresh venv, then usage errors.

    Needs the package index (or a pip cache/wheelhouse); skipped when pip cannot install.
    """
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    py = venv / "bin" / "python"
    pip = subprocess.run(
        [str(py), "-m", "pip", "install", "-q", str(REPO)],
        capture_output=True,
        text=True,
        timeout=1500,
    )
    if pip.returncode != 0:
        pytest.skip(f"pip could not install the runtime dependencies: {pip.stderr[-500:]}")
    has_click = subprocess.run([str(py), "-c", "import click"], capture_output=True).returncode
    entry = venv / "bin" / "privaudit"
    for argv, message in (
        ([], "Usage: privaudit"),
        (["bogus"], "No such command"),
        (["run"], "Missing argument"),
        (["audit", "x.csv", "--confidence", "abc"], "--confidence"),
    ):
        proc = subprocess.run(
            [str(entry), *argv],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env={**os.environ, "COLUMNS": "200"},
            timeout=120,
        )
        out = proc.stdout + proc.stderr
        assert proc.returncode == 2, out
        assert message in out and "Traceback" not in out
    if has_click == 0:  # an older typer pulled click in: the test above still held
        pytest.skip("click is installed in the runtime-only venv (typer < 0.29)")
