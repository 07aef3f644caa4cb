"""The ``target`` section and the ``torch`` recipe of an audit config."""

from __future__ import annotations

from pathlib import Path

import pytest

from privaudit.membership.config import ConfigError, config_from_dict, load_config

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
BASE = {"dataset": "adult", "model": {"kind": "mlp"}}
T = {"kind": "sklearn", "path": "t.skops", "members": "m.txt", "non_members": "n.txt"}


@pytest.mark.parametrize(
    ("target", "extra", "match"),
    [
        ({**T, "members": None}, {}, "both 'members' and 'non_members'"),
        ({"kind": "sklearn", "path": "t.skops"}, {}, "member_column"),
        ({**T, "member_column": "m"}, {}, "not both"),
        ({**T, "references": "population"}, {}, "online attacks need IN models"),
        (
            {**T, "references": "population"},
            {"attacks": ["rmia-offline"]},
            "rmia-offline.a",
        ),
        ({**T, "kind": "precomputed"}, {}, "distillation"),
        ({**T, "factory": "a:b"}, {}, "kind 'torch' only"),
        ({**T, "kind": "torch"}, {}, "target.factory"),
        ({**T, "accuracy_tolerance": 2}, {}, "target.accuracy_tolerance"),
        (T, {"model": {"kind": "torch", "params": {"lr": 0.1}}}, "model.params.*factory"),
        (
            T,
            {"model": {"kind": "torch", "params": {"factory": "a:b", "optimiser": "sgd"}}},
            "unknown 'optimiser'",
        ),
    ],
)
def test_bad_target_configs_name_the_field(target: dict, extra: dict, match: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(ConfigError, match=match):
        config_from_dict({**BASE, "target": target, **extra})


def test_offline_attacks_with_population_references() -> None:
    cfg = config_from_dict(
        {
            **BASE,
            "target": {**T, "references": "population"},
            "attacks": ["reference", "lira-offline", "rmia-offline"],
            "attack_params": {"rmia-offline": {"a": 0.3}},
        }
    )
    assert cfg.target is not None and cfg.target.references == "population"


def test_example_configs_resolve_paths_against_their_directory() -> None:
    cfg = load_config(EXAMPLES / "own_model.yaml")
    assert cfg.target is not None and cfg.target.path.parent.name == "own_model_out"
    assert cfg.target.path.is_absolute() or cfg.target.path.parts[0] != "own_model_out"
    tcfg = load_config(EXAMPLES / "own_model_torch.yaml")
    assert tcfg.model.kind == "torch" and tcfg.config_dir == EXAMPLES.resolve()


def test_mnist_example_config_is_valid() -> None:
    cfg = load_config(EXAMPLES / "mnist_cnn.yaml")
    assert cfg.dataset.name == "mnist" and cfg.model.kind == "torch"
    assert cfg.attacks is None  # every attack


@pytest.mark.slow
def test_mnist_example_runs_every_attack(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from privaudit.membership.pipeline import run_audit

    cfg = load_config(EXAMPLES / "mnist_cnn.yaml")
    params = {**cfg.model.params, "epochs": 2}
    cfg = cfg.model_copy(
        update={
            "model": cfg.model.model_copy(update={"params": params}),
            "sizes": cfg.sizes.model_copy(update={"n_target_pool": 200, "n_population": 300}),
            "models": cfg.models.model_copy(
                update={
                    "n_reference": 4,
                    "n_shadow": 2,
                    "n_distilled": 2,
                    "leave_one_out_sample": 4,
                }
            ),
            "output_dir": tmp_path / "rep",
        }
    )
    rep = run_audit(cfg, progress=False)
    assert [a["name"] for a in rep.results["attacks"]] == list(cfg.attack_names())
    # LiRA's augmented queries: shifts in {-2, 0, 2}^2 of the recipe's max_shift
    for a in rep.results["attacks"]:
        if a["name"].startswith("lira"):
            assert a["params"]["n_views"] == 9, a["name"]
    assert "9 query views" in (tmp_path / "rep" / "report.html").read_text()


def test_lira_augmented_queries_through_privaudit_run(tmp_path: Path) -> None:
    # a tiny torch MLP on 8 x 8 digits trained with 1-pixel shifts: LiRA queries 9 views
    pytest.importorskip("torch")
    import json

    import yaml

    from privaudit.cli import main

    cfg = {
        "dataset": "digits",
        "model": {
            "kind": "torch",
            "params": {
                "factory": "privaudit.models.torch_nets:mlp",
                "factory_kwargs": {"n_features": 64, "n_classes": 10, "hidden": 32},
                "epochs": 2,
                "batch_size": 32,
                "augmentation": "shift",
                "max_shift": 1,
                "input_shape": [1, 8, 8],
                "device": "cpu",
            },
        },
        "attacks": ["lira-online", "lira-offline"],
        "attack_params": {
            "lira-online": {"variance": "fixed", "augmented_queries": True},
            "lira-offline": {"variance": "fixed", "augmented_queries": True},
        },
        "sizes": {"n_target_pool": 120, "n_population": 160},
        "models": {"n_reference": 4},
        "alpha": 0.1,
        "n_jobs": 1,
    }
    p = tmp_path / "audit.yaml"
    p.write_text(yaml.safe_dump(cfg))
    assert main(["run", str(p), "--no-progress", "--out", str(tmp_path / "rep")]) == 0
    res = json.loads((tmp_path / "rep" / "results.json").read_text())
    for a in res["attacks"]:
        assert a["params"]["n_views"] == 9 and a["params"]["view_names"][0] == "identity"
    assert "9 query views" in (tmp_path / "rep" / "report.html").read_text()
