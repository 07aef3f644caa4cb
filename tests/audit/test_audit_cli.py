"""``privaudit audit FILE`` (issue 3, item 6)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privaudit.cli import main
from privaudit.stats import one_run_audit


@pytest.fixture
def table(tmp_path: Path) -> tuple[Path, pd.DataFrame]:
    rng = np.random.default_rng(0)
    m = 1000
    mem = rng.random(m) < 0.5
    df = pd.DataFrame(
        {
            "score": rng.standard_normal(m) + 2.5 * mem,
            "member": np.where(mem, "true", "false"),
            "baseline_score": rng.random(m),
        }
    )
    df["mia"] = 1 / (1 + np.exp(-df["score"]))
    path = tmp_path / "scores.csv"
    df.to_csv(path, index=False)
    return path, df


def test_one_run_json_and_exit_codes(
    table: tuple[Path, pd.DataFrame], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, df = table
    out = tmp_path / "r.json"
    assert main(["audit", str(path), "--k-pos", "100", "--k-neg", "100", "--json", str(out)]) == 0
    d = json.loads(out.read_text())
    want = one_run_audit(df["score"].to_numpy(), df["member"] == "true", k_pos=100, k_neg=100)
    assert d["procedure"] == "one-run" and d["confidence"] == 0.95 and d["delta"] == 0.0
    assert d["epsilon_lower_bound"] == pytest.approx(want.epsilon_lower_bound)
    assert d["counts"]["r"] == 200
    assert "epsilon lower bound" in capsys.readouterr().out
    bound = d["epsilon_lower_bound"]
    assert (
        main(
            [
                "audit",
                str(path),
                "--k-pos",
                "100",
                "--k-neg",
                "100",
                "--claimed-epsilon",
                str(bound / 2),
            ]
        )
        == 1
    )
    assert (
        main(
            [
                "audit",
                str(path),
                "--k-pos",
                "100",
                "--k-neg",
                "100",
                "--claimed-epsilon",
                str(bound * 2),
            ]
        )
        == 0
    )


def test_parquet_and_other_procedures(table: tuple[Path, pd.DataFrame], tmp_path: Path) -> None:
    _, df = table
    pq = tmp_path / "s.parquet"
    df.assign(member=(df["member"] == "true").astype(int)).to_parquet(pq)
    for proc, extra in [
        ("multi-run", []),
        ("fdp-one-run", ["--delta", "1e-5"]),
        ("panoramia", ["--score-col", "mia"]),
        ("one-run", ["--selection", "held-out", "--seed", "3"]),
    ]:
        out = tmp_path / f"{proc}.json"
        assert main(["audit", str(pq), "--procedure", proc, "--json", str(out), *extra]) == 0
        d = json.loads(out.read_text())
        assert d["procedure"] == proc
        if proc in ("multi-run", "fdp-one-run"):
            assert d["mu_lower_bound"] > 0
        if proc == "panoramia":
            for key in ("c_lower_bound", "c_plus_epsilon_lower_bound", "epsilon_tilde"):
                assert key in d
            assert d["epsilon_lower_bound"] == 0.0 and d["gated"] is False
            assert "only if c_lb is tight" in d["epsilon_tilde_caveat"]


@pytest.mark.parametrize(
    ("mutate", "args", "msg"),
    [
        (lambda df: df.assign(score=df["score"].where(df.index != 3)), [], "NaN"),
        (lambda df: df.assign(member="true"), [], "non-member"),
        (lambda df: df, ["--score-col", "nope"], "--score-col"),
        (lambda df: df, ["--k-pos", "900", "--k-neg", "200"], "at most the number"),
        (lambda df: df.assign(member="maybe"), [], "1/0 or true/false"),
        (lambda df: df, ["--procedure", "two-run"], "--procedure"),
        (lambda df: df, ["--procedure", "panoramia", "--thresholds", "code"], "--thresholds all"),
    ],
)
def test_bad_input_exits_2_without_json(
    table: tuple[Path, pd.DataFrame],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    mutate,
    args,
    msg,
) -> None:
    _, df = table
    bad = tmp_path / "bad.csv"
    mutate(df).to_csv(bad, index=False)
    out = tmp_path / "never.json"
    assert main(["audit", str(bad), "--json", str(out), *args]) == 2
    assert msg in capsys.readouterr().err
    assert not out.exists() and not list(tmp_path.glob("*.tmp"))


def test_missing_file_exits_2(tmp_path: Path) -> None:
    assert main(["audit", str(tmp_path / "absent.csv")]) == 2


def test_panoramia_default_grid_takes_any_real_scores(
    table: tuple[Path, pd.DataFrame], tmp_path: Path
) -> None:
    """Issue 9, item 4: logits / log-likelihood ratios need no --thresholds option."""
    _, df = table
    path = tmp_path / "logits.csv"
    df.assign(score=df["score"] * 3.0 - 1.0).to_csv(path, index=False)
    out = tmp_path / "p.json"
    assert main(["audit", str(path), "--procedure", "panoramia", "--json", str(out)]) == 0
    d = json.loads(out.read_text())
    assert "score-quantile" in d["threshold_selection"]


def test_beta_and_parametric_options(table: tuple[Path, pd.DataFrame], tmp_path: Path) -> None:
    path, _ = table
    out = tmp_path / "f.json"
    argv = ["audit", str(path), "--procedure", "fdp-one-run", "--k-pos", "40", "--k-neg", "40"]
    assert main([*argv, "--beta", "0.01", "--parametric", "gaussian", "--json", str(out)]) == 0
    d = json.loads(out.read_text())
    assert d["extra"]["beta"] == 0.01
    assert "ASSUMPTION-BASED" in d["extra"]["parametric"]["assumption"]
    multi = ["audit", str(path), "--procedure", "multi-run", "--parametric", "gaussian"]
    assert main(multi) == 2
