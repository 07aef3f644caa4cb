"""examples/cifar10_cnn.yaml through ``privaudit run``: every attack on the CIFAR-10 CNN."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cifar10_cnn.yaml"
ALL_ATTACKS = {
    "population",
    "shadow",
    "reference",
    "distillation",
    "leave-one-out",
    "lira-online",
    "lira-offline",
    "rmia-online",
    "rmia-offline",
}


def _run(
    tmp_path: Path, *, params: dict[str, Any], sizes: dict[str, int], models: dict[str, int]
) -> dict[str, Any]:
    from privaudit.cli import main

    cfg = yaml.safe_load(EXAMPLE.read_text())
    cfg["model"]["params"].update(params)
    cfg["sizes"] = sizes
    cfg["models"] = models
    cfg["output_dir"] = str(tmp_path / "rep")
    path = tmp_path / "cifar10.yaml"
    path.write_text(yaml.safe_dump(cfg))
    assert main(["run", str(path)]) == 0
    return dict(json.loads((tmp_path / "rep" / "results.json").read_text()))


def test_example_config_is_the_documented_recipe(bench: ModuleType) -> None:
    from privaudit.membership.config import load_config

    cfg = load_config(EXAMPLE)
    assert cfg.dataset.name == "cifar10" and set(cfg.attacks or ()) == ALL_ATTACKS | {"loss"}
    p = cfg.model.params
    assert p["augmentation"] == "flip-shift" and p["max_shift"] == 4
    assert cfg.sizes.n_target_pool + cfg.sizes.n_population <= 6102
    assert cfg.models.n_reference == 16
    # the benchmark trains the example's recipe
    kw = p["factory_kwargs"]
    assert bench.EXAMPLE == {
        "epochs": p["epochs"],
        "channels": kw["channels"],
        "hidden": kw["hidden"],
        "lr": p["lr"],
        "batch_size": p["batch_size"],
        "lr_schedule": p["lr_schedule"],
    }


@pytest.fixture(scope="module")
def bench(repo_module: Callable[..., ModuleType]) -> ModuleType:
    return repo_module("benchmarks/bench_cifar10.py")


def test_tiny_cifar10_audit_runs_every_attack(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    res = _run(
        tmp_path,
        params={"epochs": 1, "factory_kwargs": {"n_classes": 10, "channels": 4}},
        sizes={"n_target_pool": 200, "n_population": 200},
        models={
            "n_reference": 4,
            "n_shadow": 2,
            "n_distilled": 2,
            "n_leave_one_out": 2,
            "leave_one_out_sample": 2,
        },
    )
    names = {a["name"] for a in res["attacks"]}
    assert names == ALL_ATTACKS | {"loss"}, names
    for a in res["attacks"]:
        if a["name"].startswith("lira"):  # shifts in {-4, 0, 4}^2, each mirrored
            assert a["params"]["n_views"] == 18, a["name"]
    assert res["settings"]["dataset"]["name"] == "cifar10"
