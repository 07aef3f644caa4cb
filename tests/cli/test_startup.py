"""The command line starts light, ends a Ctrl-C in exit 130, and speaks CLI (issue 29, items 3-4).

* ``privaudit --help`` / ``--version`` / ``<command> --help`` import none of the numeric
  stack (the commands import it inside their functions); the wall time is measured by
  ``benchmarks/bench_startup.py``, not here.
* A ``KeyboardInterrupt`` anywhere under ``main`` -- while typer and the commands are
  imported, or while a command runs -- is exit code 130 without a traceback.
* A switch (``--json``, ``--overwrite``, ``--quick``, ``--trust-pickle``...) shows no value
  placeholder in any help screen, and CLI errors name flags, not Python keywords.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from privaudit.cli import EXIT_INTERRUPTED, main

#: What a start-up must not import: the numeric and plotting stack, and the models' backends.
HEAVY = ("numpy", "pandas", "scipy", "sklearn", "torch", "matplotlib", "transformers", "ray")

COMMANDS = ("audit", "demo", "panoramia", "record-risk", "run", "verify", "zero-run")


def _python(code: str, *argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1", "TERM": "dumb"}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *argv],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
        check=False,
    )


def test_startup_imports_no_numeric_stack() -> None:
    """``--version``, ``--help`` and every ``<command> --help``, one after the other in one
    fresh interpreter: what they import together must hold none of :data:`HEAVY`."""
    done = _python(
        f"""
        import sys
        from privaudit.cli import main
        import privaudit.cli
        assert not [m for m in {HEAVY!r} if m in sys.modules], "import privaudit.cli"
        codes = [main(["--version"]), main(["--help"])]
        codes += [main([command, "--help"]) for command in {COMMANDS!r}]
        print("CODES=" + ",".join(map(str, codes)), file=sys.stderr)
        print("HEAVY=" + ",".join(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)
        """
    )
    assert done.returncode == 0, done.stderr
    assert f"CODES={','.join(['0'] * (2 + len(COMMANDS)))}" in done.stderr, done.stderr
    assert "HEAVY=\n" in done.stderr, done.stderr
    assert done.stdout.startswith("privaudit ")


#: SIGINT delivered to the process while ``module`` is being imported under ``main``.
_SIGINT_DURING_IMPORT = """
    import os, signal, sys
    from importlib.abc import MetaPathFinder

    class Interrupt(MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == sys.argv[1]:
                os.kill(os.getpid(), signal.SIGINT)  # KeyboardInterrupt at the next bytecode
            return None

    sys.meta_path.insert(0, Interrupt())
    from privaudit.cli import main
    sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.parametrize("module", ["typer", "privaudit.zero_run.cli"])
def test_ctrl_c_during_import_is_exit_130_without_traceback(module: str) -> None:
    done = _python(_SIGINT_DURING_IMPORT, module, "--help")
    assert done.returncode == EXIT_INTERRUPTED == 130, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr and "KeyboardInterrupt" not in done.stderr
    assert "Usage" not in done.stdout  # the help never ran


def test_ctrl_c_during_a_command_is_exit_130_without_traceback(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import privaudit.membership.pipeline

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(privaudit.membership.pipeline, "run_audit", interrupted)
    code = main(["demo", "--quick", "--out", str(tmp_path / "rep"), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 130
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert not (tmp_path / "rep").exists()


def test_interrupted_is_the_one_exit(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Both routes (a KeyboardInterrupt reaching ``main``, typer's ``Exit(130)``) go through
    ``privaudit.cli.interrupted``, where a message about what was kept can be added."""
    import privaudit.cli
    import privaudit.membership.pipeline

    calls: list[int] = []

    def hook() -> int:
        calls.append(1)
        return 130

    monkeypatch.setattr(privaudit.cli, "interrupted", hook)

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(privaudit.membership.pipeline, "run_audit", interrupted)
    assert main(["demo", "--quick", "--out", str(tmp_path / "r"), "--no-progress"]) == 130
    monkeypatch.setattr(privaudit.cli, "_register", interrupted)
    assert main(["--help"]) == 130
    assert calls == [1, 1]


@pytest.mark.parametrize("command", ["", *COMMANDS])
def test_switches_show_no_value_placeholder(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*([command] if command else []), "--help"]) == 0
    text = capsys.readouterr().out
    assert "--help" in text
    assert "<bool>" not in text, text
    if command:  # options that take a value still show its type
        assert "<path>" in text or "<text>" in text or "<int>" in text, text


@pytest.mark.parametrize(
    "argv",
    [
        ["demo", "--quick", "true"],
        ["demo", "--overwrite", "true"],
        ["run", "audit.yaml", "--overwrite", "true"],
        ["record-risk", "risk.yaml", "--json", "true"],
        ["zero-run", "table.csv", "--json", "true"],
        ["audit", "scores.csv", "--gaussian-epsilon", "true"],
    ],
    ids=" ".join,
)
def test_a_switch_takes_no_value(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "unexpected extra argument" in err and "(true)" in err
    assert "Traceback" not in err


def test_existing_report_error_names_the_flags(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "rep"
    out.mkdir()
    assert main(["demo", "--quick", "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "--overwrite" in err and "--out" in err
    assert "=True" not in err and "CLI:" not in err


def test_report_exists_error_speaks_the_api(tmp_path: Path) -> None:
    import pickle

    from privaudit.report import ReportExistsError, check_output_dir

    with pytest.raises(ReportExistsError) as info:
        check_output_dir(tmp_path)
    assert "overwrite=True" in str(info.value) and "--" not in str(info.value)
    assert "--overwrite" in info.value.cli_message
    again = pickle.loads(pickle.dumps(info.value))
    assert str(again) == str(info.value) and again.path == tmp_path


def test_only_the_script_changes_the_garbage_collector() -> None:
    # privaudit._process: the script's process ends with the command, so it freezes what
    # exists after torch's import and at the end; main(argv) in a caller's process (these
    # tests, the Python API) leaves the collector as it was
    import gc

    from privaudit._process import command_returned, heavy_import, process_ends_after_command

    frozen, enabled = gc.get_freeze_count(), gc.isenabled()
    assert main(["--version"]) == 0
    with heavy_import():
        junk = [[i] for i in range(1000)]
    command_returned()
    assert not process_ends_after_command()
    assert gc.get_freeze_count() == frozen and gc.isenabled() == enabled and junk

    out = _python(
        """
        import gc, sys
        from privaudit._process import heavy_import
        from privaudit.cli import main
        before = gc.get_freeze_count()
        sys.argv = ["privaudit", "--version"]
        code = main()  # the script's entry point: argv from sys.argv
        print("main froze", gc.get_freeze_count() > before)
        gc.unfreeze()
        with heavy_import():
            import json
        print("import froze", gc.get_freeze_count() > 0, "enabled", gc.isenabled())
        sys.exit(code)
        """
    )
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.strip().splitlines()
    assert lines[-2:] == ["main froze True", "import froze True enabled True"], lines
