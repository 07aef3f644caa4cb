"""Parallel workers and a caller's script without ``if __name__ == "__main__":``.

Spawned workers re-import the main script; unguarded, its top level would start the
audit again in every worker and the parent would never return. The executor refuses
with a clear error before starting any process (issue 11, item 6).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from privaudit.runtime.main_guard import _has_main_guard

BODY = """
from privaudit.runtime.executor import LocalExecutor
print(LocalExecutor(2, progress=False).map(abs, [-1, -2, -3], desc="abs"))
"""


def _run(tmp_path: Path, source: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "script.py"
    script.write_text(source)
    return subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )


def test_unguarded_script_fails_fast_with_a_clear_error(tmp_path: Path) -> None:
    out = _run(tmp_path, BODY)
    assert out.returncode != 0
    assert "UnguardedMainError" in out.stderr
    assert "if __name__ ==" in out.stderr and "script.py" in out.stderr


def test_guarded_script_runs_in_parallel(tmp_path: Path) -> None:
    guarded = "def main():\n" + "".join(f"    {ln}\n" for ln in BODY.strip().splitlines())
    guarded += 'if __name__ == "__main__":\n    main()\n'
    out = _run(tmp_path, guarded)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[1, 2, 3]"


def test_guard_detection() -> None:
    assert _has_main_guard('if __name__ == "__main__":\n    pass\n')
    assert _has_main_guard("if '__main__' == __name__:\n    pass\n")
    assert not _has_main_guard("x = 1\nif x == 1:\n    pass\n")
    assert not _has_main_guard("def f():\n    if __name__ == '__main__':\n        pass\n")
