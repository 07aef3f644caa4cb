"""``privaudit record-risk CONFIG.yaml``: a short end-to-end run and bad input (exit 2)."""

from __future__ import annotations

import base64
import csv
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
import yaml

from privaudit.cli import main

SMOKE = {
    "dataset": "adult",
    "target": {"kind": "generator", "generator": "baynet", "params": {"degree": 1}},
    "attack": "tapas-query",
    "attack_params": {"n_trees": 20},
    "n": 100,
    "n_targets": 4,
    "n_rounds": 8,
    "n_shadow": 8,
    "n_aux": 400,
    "seed": 0,
    "cache_dir": "cache",
    "output_dir": "report",
}


def write(tmp_path: Path, cfg: dict) -> Path:
    p = tmp_path / "rr.yaml"
    p.write_text(yaml.safe_dump(cfg))
    return p


def test_record_risk_end_to_end_and_resume(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, SMOKE)
    assert main(["record-risk", str(path)]) == 0
    text = capsys.readouterr().out
    assert "MR(0.8)" in text and "RMSD" in text
    out = tmp_path / "report"
    d = json.loads((out / "results.json").read_text())
    rr = d["record_risk"]
    assert d["settings"]["target"]["generator"] == "baynet" and d["seed"] == 0
    assert set(rr["summary"]) >= {"miss_rate_0.8", "rmsd", "rmsd_noise_ms", "rmsd_noise_t"}
    assert len(rr["records"]) == 4 and rr["releases"]["trained"] > 0
    rows = list(csv.DictReader((out / "records.csv").open()))
    assert [r["record_id"] for r in rows] == [r["record_id"] for r in rr["records"]]
    html = (out / "report.html").read_text()
    assert "data:image/svg+xml;base64," in html and 'download="records.csv"' in html
    assert "data:image/png" not in html
    # the scatter: one dot per record, at (R_MS, R_T) on axes from min(0.3, risks) to 1
    svg = ET.fromstring(base64.b64decode(html.split("data:image/svg+xml;base64,")[1].split('"')[0]))
    ns = "{http://www.w3.org/2000/svg}"
    dots = svg.findall(f"{ns}g/{ns}circle")
    frame = next(r for r in svg.findall(f"{ns}rect") if r.get("stroke") == "#000")
    left, top, w, h = (float(frame.get(k)) for k in ("x", "y", "width", "height"))
    risks = [(r["auc_model-seeded"], r["auc_traditional"]) for r in rr["records"]]
    lo = min(0.3, *(v for pair in risks for v in pair))
    drawn = [
        (
            (float(d.get("cx")) - left) / w * (1 - lo) + lo,
            (top + h - float(d.get("cy"))) / h * (1 - lo) + lo,
        )
        for d in dots
    ]
    assert len(dots) == 4
    np.testing.assert_allclose(sorted(drawn), sorted(risks), atol=1e-4)
    # issue 28: how each game drew its datasets, where R_MS and R_T are shown
    how = rr["constructions"]
    assert "D0 - x + z with a fresh reference record z" in how["model-seeded"]
    assert "Def. 3 trains OUT rounds on D0 - x" in how["model-seeded"]
    assert how["traditional"].startswith("amortised") and "not plain draws" in how["traditional"]
    for shown in (html, " ".join(text.split())):
        assert "D0 - x + z" in shown and "not plain draws" in shown
    # resumable: a second run (new report) trains nothing
    assert main(["record-risk", str(path), "--out", str(tmp_path / "again"), "--json"]) == 0
    again = json.loads(capsys.readouterr().out)["record_risk"]
    assert again["releases"]["trained"] == 0
    assert again["records"] == rr["records"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"attack": "lira"}, "attack"),
        ({"target": {"kind": "generator", "generator": "privbayes"}}, "epsilon"),
        ({"target": {"kind": "generator", "generator": "baynet", "params": {"k": 2}}}, "params"),
        ({"n_targets": 500}, "n_targets"),
        ({"n_rounds": 1}, "n_rounds"),
        ({"bogus": 1}, "bogus"),
        ({"n_aux": 50000}, "records"),
        ({"traditional": "paired"}, "traditional"),
    ],
)
def test_bad_config_exits_2_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: dict, message: str
) -> None:
    path = write(tmp_path, {**SMOKE, **change})
    assert main(["record-risk", str(path)]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "report").exists()


def test_example_record_risk_config_is_valid() -> None:
    from privaudit.record_risk.config import load_record_risk_config

    cfg = load_record_risk_config(
        Path(__file__).resolve().parents[2] / "examples" / "record_risk.yaml"
    )
    assert cfg.target.generator == "baynet" and cfg.attack_name() == "tapas-query"


TORCH_MLP = {
    "kind": "classifier",
    "model": {
        "kind": "torch",
        "params": {
            "factory": "privaudit.models.torch_nets:mlp",
            "factory_kwargs": {"hidden": 8},
            "epochs": 2,
            "batch_size": 50,
            "device": "cpu",
        },
    },
}
TORCH_SMOKE = {
    **SMOKE,
    "target": TORCH_MLP,
    "attack": "loss",
    "attack_params": {},
    "n_targets": 2,
    "n_rounds": 4,
    "rounds_per_task": 4,
}


def test_record_risk_torch_mlp_trains_batched_tasks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("torch")
    monkeypatch.setenv("PRIVAUDIT_THREADS_PER_WORKER", "1")
    path = write(tmp_path, TORCH_SMOKE)
    assert main(["record-risk", str(path), "--json"]) == 0
    rr = json.loads(capsys.readouterr().out)["record_risk"]
    assert rr["target"]["kind"] == "classifier"
    # the built-in MLP got the data's sizes (Adult: 105 features, 2 classes)
    kw = rr["target"]["settings"]["recipe"]["factory_kwargs"]
    assert kw == {"hidden": 8, "n_classes": 2, "n_features": 105}
    # traditional 4 + model-seeded IN 2 + OUT 2 x 2, and the replicates
    assert rr["releases"]["trained"] == 2 * (4 + 2 + 4)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"params": {"factory": "privaudit.models.torch_nets:mlp", "optimizer": "lbfgs"}},
            "optimizer",
        ),
        (
            {
                "params": {
                    "factory": "privaudit.models.torch_nets:mlp",
                    "factory_kwargs": {"n_features": 3},
                }
            },
            "n_features: expected 105",
        ),
    ],
)
def test_record_risk_torch_config_errors_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: dict, message: str
) -> None:
    pytest.importorskip("torch")
    target = {"kind": "classifier", "model": {"kind": "torch", **change}}
    path = write(tmp_path, {**TORCH_SMOKE, "target": target})
    assert main(["record-risk", str(path)]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "report").exists()


def test_record_risk_torch_without_torch_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import builtins

    real_import = builtins.__import__

    def no_torch(name: str, *args: object, **kwargs: object) -> object:
        if name == "torch" or name.startswith("torch."):
            raise ImportError("No module named 'torch'")
        return real_import(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", no_torch)
    path = write(tmp_path, TORCH_SMOKE)
    assert main(["record-risk", str(path)]) == 2
    err = capsys.readouterr().err
    assert "expected PyTorch installed" in err and "privaudit[torch]" in err
    assert not (tmp_path / "report").exists()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        # seed 0, 4 targets: the shadow releases give every target 2 IN and 2 OUT from 7 on
        ({"n_shadow": 6}, "n_shadow: expected at least 7 shadow releases for attack 'tapas-query'"),
        (
            {
                "target": {"kind": "classifier", "model": {"kind": "logistic"}},
                "attack": "lira",
                "attack_params": {},
                "n_shadow": 4,
            },
            "n_shadow: expected at least 7 shadow releases for attack 'lira'",
        ),
    ],
)
def test_too_few_shadow_releases_exit_2_before_any_training(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: dict, message: str
) -> None:
    path = write(tmp_path, {**SMOKE, **change})
    assert main(["record-risk", str(path)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert message in err and "found" in err
    assert not (tmp_path / "report").exists()
    assert not (tmp_path / "cache").exists()  # nothing trained, nothing cached
    # the minimum itself runs (validated, not trained here)
    from privaudit.record_risk.config import load_record_risk_config

    assert (
        load_record_risk_config(write(tmp_path, {**SMOKE, **change, "n_shadow": 7})).n_shadow == 7
    )


@pytest.mark.parametrize(
    ("change", "need"),
    [
        # seed 3, 4 targets: the amortised game's replicate has every target IN and OUT
        # only from round 6 on
        ({"seed": 3, "n_rounds": 5}, 6),
        # seed 1, per-target rounds: the replicate from round 8 on (12 shadow releases)
        ({"seed": 1, "n_shadow": 12, "traditional": "per-target", "n_rounds": 7}, 8),
    ],
)
def test_too_few_game_rounds_exit_2_before_any_training(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: dict, need: int
) -> None:
    path = write(tmp_path, {**SMOKE, **change})
    assert main(["record-risk", str(path)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    n_rounds, seed = change["n_rounds"], change["seed"]
    assert f"n_rounds: expected at least {need} rounds per game" in err
    assert f"with seed {seed} and 4 targets, {n_rounds} rounds" in err
    assert f"the first {need} rounds are the fewest" in err and f"found {n_rounds}" in err
    assert not (tmp_path / "report").exists()
    assert not (tmp_path / "cache").exists()  # nothing trained, nothing cached
    # the minimum itself runs (validated, not trained here)
    from privaudit.record_risk.config import load_record_risk_config

    cfg = load_record_risk_config(write(tmp_path, {**SMOKE, **change, "n_rounds": need}))
    assert cfg.n_rounds == need
