"""The seed-paired verdicts that ``benchmarks/bench_panoramia.py`` prints for issue 14's claims."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

pytest.importorskip("torch")  # the benchmark module imports the torch trainer


@pytest.fixture(scope="module")
def bench(repo_module: Callable[..., ModuleType]) -> ModuleType:
    return repo_module("benchmarks/bench_panoramia.py")


def _rows(values: dict[tuple[int, int], tuple[float, float]]) -> list[dict[str, Any]]:
    """(seed, epochs) -> (eps_tilde, eps_rmrn) as benchmark rows."""
    return [
        {"modality": "tabular", "epochs": e, "dp_epsilon": None, "seed": s, "c_lb": 0.0,
         "c_plus_eps_lb": t, "eps_tilde": t, "eps_rmrn": r, "eps_o1": r}
        for (s, e), (t, r) in values.items()
    ]  # fmt: skip


def test_claims_accept_growth_below_rmrn(bench: ModuleType) -> None:
    vals = {
        (0, 10): (0.00, 0.02), (0, 200): (0.50, 0.70),
        (1, 10): (0.01, 0.00), (1, 200): (0.55, 0.60),
        (2, 10): (0.00, 0.01), (2, 200): (0.45, 0.65),
    }  # fmt: skip
    below, grows = bench.paired_claims(_rows(vals))
    assert "over 6 targets" in below and "at or below RM;RN within noise" in below
    assert "over 3 seeds" in grows and grows.endswith(": grows")


def test_claims_flag_eps_tilde_above_rmrn_and_no_growth(bench: ModuleType) -> None:
    vals = {
        (0, 10): (0.40, 0.00), (0, 200): (0.41, 0.10),
        (1, 10): (0.50, 0.05), (1, 200): (0.20, 0.02),
        (2, 10): (0.45, 0.00), (2, 200): (0.30, 0.01),
    }  # fmt: skip
    below, grows = bench.paired_claims(_rows(vals))
    assert "EXCEEDS RM;RN" in below
    assert "growth not established" in grows


def test_claims_skip_private_targets_and_missing_comparisons(bench: ModuleType) -> None:
    rows = _rows({(0, 10): (0.0, 0.0), (0, 50): (0.1, 0.2)})
    rows.append({**rows[0], "dp_epsilon": 1.0, "eps_tilde": 9.0})
    rows.append({**rows[0], "modality": "image", "eps_rmrn": None})
    lines = bench.paired_claims(rows)
    assert len(lines) == 2 and all(line.startswith("tabular:") for line in lines)
    assert "over 2 targets" in lines[0] and "over 1 seeds" in lines[1]


def test_combine_reads_runs_of_disjoint_seeds_as_one(
    tmp_path: Path, capsys: Any, bench: ModuleType
) -> None:
    import json

    first = _rows({(0, 10): (0.0, 0.0), (0, 200): (0.5, 0.7), (1, 10): (0.0, 0.0)})
    second = _rows({(1, 200): (0.6, 0.6), (2, 10): (0.0, 0.1), (2, 200): (0.4, 0.5)})
    a, b, out = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "all.json"
    a.write_text(json.dumps(first))
    b.write_text(json.dumps(second))
    assert bench.main(["--combine", str(a), str(b), "--json", str(out)]) == 0
    assert json.loads(out.read_text()) == first + second
    printed = capsys.readouterr().out
    assert "over 6 targets" in printed and "over 3 seeds" in printed


def test_below_rmrn_is_tested_on_the_unclipped_gap(bench: ModuleType) -> None:
    # no leakage anywhere: RM;RN 0, PANORAMIA's gap noisy around -0.1, so eps_tilde =
    # max(0, gap) is > 0 on some targets; the clipped mean is above 0 with a small SE
    gaps = [-0.30, 0.05, -0.20, 0.08, -0.25, 0.06, -0.15, 0.04, -0.35, 0.07, -0.10, 0.05]
    rows = []
    for i, gap in enumerate(gaps):
        rows.append(
            {"modality": "image", "epochs": 2 + 38 * (i % 2), "dp_epsilon": None, "seed": i // 2,
             "c_lb": 1.5, "c_plus_eps_lb": 1.5 + gap, "eps_tilde": max(0.0, gap),
             "eps_rmrn": 0.0, "eps_o1": 0.0}
        )  # fmt: skip
    below = bench.paired_claims(rows)[0]
    assert "at or below RM;RN within noise" in below
    assert "clipped eps_tilde - RM;RN: mean +0.029" in below
    assert bench._mean_se(np.array([max(0.0, g) for g in gaps]))[2] > 0  # clipped would fail


def test_combine_refuses_a_target_counted_twice(tmp_path: Path, bench: ModuleType) -> None:
    import json

    rows = _rows({(0, 10): (0.0, 0.0), (0, 200): (0.5, 0.7)})
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(rows))
    b.write_text(json.dumps(rows[:1]))
    with pytest.raises(SystemExit, match="the same target twice"):
        bench.main(["--combine", str(a), str(b)])
