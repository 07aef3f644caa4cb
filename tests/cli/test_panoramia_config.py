"""The PANORAMIA config: every problem is named by its field; the CLI exits 2 and writes nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from privaudit.cli import main
from privaudit.membership.config import ConfigError
from privaudit.panoramia.config import (
    MODALITY_MODULES,
    TabularGeneratorConfig,
    available_modalities,
    load_panoramia_config,
    panoramia_config_from_dict,
)


def _base(**over: Any) -> dict[str, Any]:
    cfg: dict[str, Any] = {
        "modality": "tabular",
        "target": {"kind": "sklearn", "path": "target.skops"},
        "model": {"kind": "mlp", "params": {"hidden_layer_sizes": [16]}},
        "data": {"dataset": "adult", "members": "members.txt"},
    }
    cfg.update(over)
    return cfg


def _error(data: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as info:
        panoramia_config_from_dict(data, source="p.yaml")
    return str(info.value)


def test_a_valid_config_and_its_defaults() -> None:
    cfg = panoramia_config_from_dict(
        _base(generator={"kind": "cart", "params": {"min_samples_leaf": 5}})
    )
    assert cfg.modality == "tabular" and cfg.confidence == 0.95 and cfg.seed == 0
    g = cfg.generator_config()
    assert isinstance(g, TabularGeneratorConfig) and g.kind == "cart" and g.n_bins is None
    assert cfg.sizes.model_dump(exclude_none=True) == {}
    assert cfg.data.describe() == {"name": "adult", "members": "members.txt"}


@pytest.mark.parametrize(
    ("over", "expected"),
    [
        ({"modality": "audio"}, "modality: Input should be 'tabular', 'image' or 'text'"),
        ({"confidence": 1.0}, "confidence: Input should be less than 1"),
        ({"seed": -1}, "seed: Input should be greater than or equal to 0"),
        (
            {"sizes": {"generator_fraction": 1.5}},
            "sizes.generator_fraction: Input should be less than 1",
        ),
        ({"sizes": {"m": 10}}, "sizes.m: unknown field"),
        (
            {"generator": {"n_bins": 1}},
            "generator.n_bins: Input should be greater than or equal to 2",
        ),
        (
            {"generator": {"top_k": 5}},
            "generator.top_k: unknown field (not a tabular generator setting)",
        ),
        (
            {"generator": {"kind": "baynet", "params": {"epsilon": 1}}},
            "generator: params: expected parameters of baynet (degree); found unknown 'epsilon'",
        ),
        ({"generator": {"kind": "privbayes"}}, "expected 'epsilon' for privbayes"),
        (
            {"model": {"kind": "mlp", "params": {"hidden": 3}}},
            "model.params: expected parameters of MLPClassifier",
        ),
        ({"model": None}, "model: expected the recipe the target was trained with"),
        (
            {"target": {"kind": "huggingface", "path": "x"}},
            "target.kind: expected sklearn or torch for modality 'tabular'",
        ),
        (
            {"target": {"kind": "sklearn", "path": "x", "factory": "m:f"}},
            "target: 'factory' and 'factory_kwargs' apply to kind 'torch' only",
        ),
        (
            {"target": {"kind": "torch", "path": "x.safetensors"}},
            "target.factory: expected a factory for a torch target",
        ),
        ({"data": {"dataset": "adult"}}, "data: expected the known members"),
        (
            {"data": {"dataset": "adult", "members": "m", "member_column": "c"}},
            "data: expected either 'members'",
        ),
        (
            {"data": {"dataset": "adult", "member_column": "c"}},
            "data: 'member_column' needs a dataset table",
        ),
        (
            {"data": {"texts": "tiny-shakespeare", "members": "m"}},
            "data.dataset: expected a table for modality 'tabular'",
        ),
        ({"finetune": {"steps": 30}}, "finetune: applies to modality 'text' only"),
        ({"finetune": {"stepz": 3}}, "finetune: expected fine-tuning recipe fields"),
        ({"extra": 1}, "extra: unknown field"),
    ],
)
def test_errors_name_the_field(over: dict[str, Any], expected: str) -> None:
    msg = _error(_base(**over))
    assert msg.startswith("p.yaml: invalid PANORAMIA audit config")
    assert expected in msg, msg


@pytest.mark.parametrize("modality", ["image", "text"])
def test_modalities_not_installed_are_refused(
    modality: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(MODALITY_MODULES, modality, "privaudit.panoramia.no_such_module")
    assert modality not in available_modalities()
    msg = _error(_base(modality=modality))
    assert f"modality: {modality!r} is not available in this version of privaudit" in msg


def test_several_problems_are_listed_together() -> None:
    msg = _error(_base(confidence=2, seed=-3, sizes={"val_fraction": 0}))
    assert "(3 problems)" in msg


def test_paths_resolve_against_the_config_and_must_exist(tmp_path: Path) -> None:
    (tmp_path / "target.skops").write_text("x")
    p = tmp_path / "p.yaml"
    p.write_text(yaml.safe_dump(_base(output_dir="rep", cache_dir="c")))
    with pytest.raises(
        ConfigError, match=r"data\.members: expected an existing file of record ids"
    ):
        load_panoramia_config(p)
    (tmp_path / "members.txt").write_text("1\n2\n")
    cfg = load_panoramia_config(p)
    assert cfg.target.path == tmp_path / "target.skops"
    assert cfg.data.members == tmp_path / "members.txt"
    assert cfg.output_dir == tmp_path / "rep" and cfg.cache_dir == tmp_path / "c"
    (tmp_path / "target.skops").unlink()
    with pytest.raises(ConfigError, match=r"target\.path: expected an existing model file"):
        load_panoramia_config(p)


def test_cli_exits_2_and_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "p.yaml"
    p.write_text(yaml.safe_dump(_base(confidence=1.5, output_dir="rep")))
    assert main(["panoramia", str(p)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "confidence: Input should be less than 1" in err
    assert sorted(x.name for x in tmp_path.iterdir()) == ["p.yaml"]
    p.write_text("modality: tabular\nmodality: image\n")
    assert main(["panoramia", str(p)]) == 2
    assert "found 'modality' twice" in capsys.readouterr().err
    assert main(["panoramia", str(tmp_path / "missing.yaml")]) == 2


def test_text_generator_start_after_is_passed_on_and_checked(tmp_path: Path) -> None:
    """generator.start_after reaches the text modality's sampling; an empty string is refused."""
    from privaudit.panoramia.config import panoramia_config_from_dict

    text = {
        "modality": "text",
        "target": {"kind": "huggingface", "path": "t"},
        "base": {"path": "b"},
        "data": {"texts": "tiny-shakespeare", "members": "m.txt"},
    }
    cfg = panoramia_config_from_dict({**text, "generator": {"start_after": "\n\n"}})
    assert cfg.generator_config().model_dump(exclude_none=True) == {"start_after": "\n\n"}
    with pytest.raises(ConfigError, match=r"generator\.start_after"):
        panoramia_config_from_dict({**text, "generator": {"start_after": ""}})
