"""``python examples/panoramia_audit.py --quick --json PATH``: trains an Adult MLP outside
privaudit, writes the ids and the config, runs ``privaudit panoramia`` (~15 s at load 3; marked
slow: the tabular end-to-end test in test_panoramia_run.py covers the same path by default)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "panoramia_audit.py"


@pytest.mark.slow
def test_quick_example_writes_the_figures(tmp_path: Path) -> None:
    out = tmp_path / "figures.json"
    proc = subprocess.run(
        [
            sys.executable,
            str(EXAMPLE),
            "--quick",
            "--json",
            str(out),
            "--out",
            str(tmp_path / "ex"),
        ],
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "eps_tilde" in proc.stdout and "$ privaudit panoramia" in proc.stdout
    fig = json.loads(out.read_text())
    assert set(fig) == {
        "modality",
        "c_lb",
        "c_plus_eps_lb",
        "eps_tilde",
        "m",
        "eps_rmrn",
        "m_rmrn",
        "eps_o1",
        "m_o1",
        "confidence",
    }
    assert fig["modality"] == "tabular" and fig["m"] > 0 and fig["m_rmrn"] > 0
    assert fig["eps_tilde"] == pytest.approx(max(0.0, fig["c_plus_eps_lb"] - fig["c_lb"]))
    assert (tmp_path / "ex" / "report" / "report.html").is_file()
    assert (tmp_path / "ex" / "panoramia.yaml").is_file()
