"""``privaudit canaries make | audit`` end to end, ``privaudit verify`` of its bundle, and exit 2
with the reason on bad input (coins of another set, outputs missing canary ids, a tampered
coin file), exit 1 on a violated claim."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from privaudit.canaries import load_canary_set, load_coins
from privaudit.cli import main


def _pool(path: Path) -> Path:
    rng = np.random.default_rng(0)
    df = pd.DataFrame(rng.normal(size=(400, 4)), columns=["a", "b", "c", "d"])
    df["label"] = rng.integers(0, 2, size=400)
    df.to_csv(path, index=False)
    return path


def _outputs(folder: Path, path: Path, *, leak: float, drop: int = 0) -> Path:
    """A model's losses on every canary: included canaries get a loss lower by ``leak``."""
    cs = load_canary_set(folder / "canary_set.npz")
    coins = load_coins(folder / "coins.json", cs)
    rng = np.random.default_rng(1)
    loss = rng.exponential(1.0, size=cs.m) - leak * coins.included
    df = pd.DataFrame({"id": cs.ids, "loss": loss}).iloc[drop:]
    df.to_csv(path, index=False)
    return path


@pytest.fixture
def made(tmp_path: Path) -> Path:
    out = tmp_path / "canaries"
    code = main(
        [
            "canaries",
            "make",
            str(out),
            "--kind",
            "mislabel",
            "--m",
            "200",
            "--pool",
            str(_pool(tmp_path / "pool.csv")),
            "--coin-seed",
            "3",
        ]
    )
    assert code == 0
    return out


def test_make_writes_the_set_the_coins_and_the_rows_to_append(
    made: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cs = load_canary_set(made / "canary_set.npz")
    coins = load_coins(made / "coins.json", cs)
    rows = pd.read_csv(made / "canaries_to_append.csv")
    assert list(rows.columns) == ["id", "a", "b", "c", "d", "label"]
    assert rows["id"].tolist() == cs.ids[coins.included].tolist()
    assert np.allclose(rows[["a", "b", "c", "d"]].to_numpy(), cs.X[coins.included])


def test_audit_writes_a_bundle_that_verify_recomputes(
    made: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outputs = _outputs(made, tmp_path / "out.csv", leak=3.0)
    report = tmp_path / "report"
    code = main(
        [
            "canaries",
            "audit",
            "--set",
            str(made / "canary_set.npz"),
            "--coins",
            str(made / "coins.json"),
            "--outputs",
            str(outputs),
            "--k-pos",
            "30",
            "--out",
            str(report),
            "--accountant-epsilon",
            "8",
        ]
    )
    assert code == 0
    res = json.loads((report / "results.json").read_text())
    assert res["canaries"]["access"] == "black-box" and res["canaries"]["m"] == 200
    assert res["canaries"]["epsilon_lower_bound"] > 1.0  # the leak is found
    assert [a["procedure"] for a in res["audits"]] == ["one-run", "fdp-one-run"]
    assert res["audits"][0]["threshold_selection"] == "fixed"
    assert (report / "report.html").read_text().count("one-run") >= 1
    capsys.readouterr()
    assert main(["verify", str(report)]) == 0
    assert "verify: OK" in capsys.readouterr().out
    # an edited bound no longer follows from the saved scores
    res["audits"][0]["epsilon_lower_bound"] += 0.5
    (report / "results.json").write_text(json.dumps(res))
    assert main(["verify", str(report)]) == 1


def test_a_claim_below_the_bound_exits_1(
    made: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outputs = _outputs(made, tmp_path / "out.csv", leak=3.0)
    argv = [
        "canaries",
        "audit",
        "--set",
        str(made / "canary_set.npz"),
        "--coins",
        str(made / "coins.json"),
        "--outputs",
        str(outputs),
        "--k-pos",
        "30",
    ]
    assert main([*argv, "--claimed-epsilon", "0.5"]) == 1
    assert "violation: one-run" in capsys.readouterr().err
    assert main([*argv, "--claimed-epsilon", "50"]) == 0


def _stderr_of(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    assert main(argv) == 2
    return capsys.readouterr().err


def test_bad_input_exits_2_with_the_reason(
    made: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["canaries", "audit", "--set", str(made / "canary_set.npz")]
    outputs = _outputs(made, tmp_path / "out.csv", leak=1.0)
    # coins of another canary set
    other = tmp_path / "other"
    assert (
        main(
            [
                "canaries",
                "make",
                str(other),
                "--kind",
                "ood",
                "--m",
                "200",
                "--pool",
                str(tmp_path / "pool.csv"),
            ]
        )
        == 0
    )
    err = _stderr_of(
        [*base, "--coins", str(other / "coins.json"), "--outputs", str(outputs)], capsys
    )
    assert "coins of another set" in err
    # the model's outputs miss canary ids
    short = _outputs(made, tmp_path / "short.csv", leak=1.0, drop=5)
    err = _stderr_of([*base, "--coins", str(made / "coins.json"), "--outputs", str(short)], capsys)
    assert "5 missing" in err and "canary-00000" in err
    # a tampered coin file
    doc = json.loads((made / "coins.json").read_text())
    doc["included"] = "".join("1" if b == "0" else "0" for b in doc["included"])
    bad = tmp_path / "tampered.json"
    bad.write_text(json.dumps(doc))
    err = _stderr_of([*base, "--coins", str(bad), "--outputs", str(outputs)], capsys)
    assert "tampered coin file" in err
    # coins not the ones committed to
    err = _stderr_of(
        [
            *base,
            "--coins",
            str(made / "coins.json"),
            "--outputs",
            str(outputs),
            "--coins-fingerprint",
            "ab" * 32,
        ],
        capsys,
    )
    assert "committed" in err
    # gradient canaries: iterates of a smaller model
    grad = tmp_path / "grad"
    assert (
        main(
            ["canaries", "make", str(grad), "--kind", "gradient", "--m", "50", "--n-params", "100"]
        )
        == 0
    )
    np.savez(
        tmp_path / "it.npz",
        params=np.zeros((3, 80)),
        lr=np.array(0.1),
        expected_batch_size=np.array(10.0),
        max_grad_norm=np.array(1.0),
    )
    err = _stderr_of(
        [
            "canaries",
            "audit",
            "--set",
            str(grad / "canary_set.npz"),
            "--coins",
            str(grad / "coins.json"),
            "--iterates",
            str(tmp_path / "it.npz"),
        ],
        capsys,
    )
    assert "missing canary coordinates" in err


def test_gradient_canaries_from_logged_iterates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    grad = tmp_path / "grad"
    assert (
        main(
            [
                "canaries",
                "make",
                str(grad),
                "--kind",
                "gradient",
                "--m",
                "300",
                "--n-params",
                "400",
                "--coin-seed",
                "1",
            ]
        )
        == 0
    )
    capsys.readouterr()
    cs = load_canary_set(grad / "canary_set.npz")
    coins = load_coins(grad / "coins.json", cs)
    rng = np.random.default_rng(0)
    steps, q, sigma = 30, 0.5, 0.7
    x = np.zeros((steps, 400))
    x[:, cs.coords] = (rng.random((steps, cs.m)) < q) * coins.included
    x += sigma * rng.normal(size=x.shape)
    params = np.vstack([np.zeros(400), -0.1 * np.cumsum(x, axis=0) / 8.0])
    it = tmp_path / "it.npz"
    np.savez(
        it,
        params=params,
        lr=np.array(0.1),
        expected_batch_size=np.array(8.0),
        max_grad_norm=np.array(1.0),
        noise_multiplier=np.array(sigma),
        sample_rate=np.array(q),
        accountant_epsilon=np.array(20.0),
        delta=np.array(1e-5),
    )
    report = tmp_path / "report"
    code = main(
        [
            "canaries",
            "audit",
            "--set",
            str(grad / "canary_set.npz"),
            "--coins",
            str(grad / "coins.json"),
            "--iterates",
            str(it),
            "--out",
            str(report),
            "--json",
        ]
    )
    assert code == 0
    res = json.loads(capsys.readouterr().out)
    assert res["canaries"]["access"] == "iterates" and res["canaries"]["accountant_epsilon"] == 20.0
    assert res["settings"]["delta"] == 1e-5 and res["canaries"]["epsilon_lower_bound"] > 1.0
    assert main(["verify", str(report)]) == 0


def test_gradient_canaries_drawn_from_given_coordinates(tmp_path: Path) -> None:
    cand = tmp_path / "quiet.txt"
    cand.write_text("\n".join(str(j) for j in range(100, 160)) + "\n")
    out = tmp_path / "grad"
    argv = ["canaries", "make", str(out), "--kind", "gradient", "--m", "40", "--n-params", "400"]
    assert main([*argv, "--candidates", str(cand)]) == 0
    cs = load_canary_set(out / "canary_set.npz")
    assert cs.coords.min() >= 100 and cs.coords.max() < 160 and np.unique(cs.coords).size == 40
    cand.write_text("12\nnot-a-number\n")
    assert main([*argv, "--candidates", str(cand), "--overwrite"]) == 2


def test_the_help_screens_import_no_numeric_stack() -> None:
    import subprocess
    import sys

    code = (
        "import sys; from privaudit.cli import main\n"
        "codes = [main(['canaries', '--help']), main(['canaries', 'make', '--help']),"
        " main(['canaries', 'audit', '--help'])]\n"
        "heavy = [m for m in ('numpy', 'pandas', 'scipy', 'torch', 'opacus') if m in sys.modules]\n"
        "print('RESULT', codes, heavy, file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "RESULT [0, 0, 0] []" in done.stderr, done.stderr
