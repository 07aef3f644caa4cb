"""The ``target`` section and the ``torch`` recipe of an audit config."""

from __future__ import annotations

from pathlib import Path

import pytest

from privaudit.config import ConfigError, config_from_dict, load_config

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
        }
    )
    assert cfg.target is not None and cfg.target.references == "population"


def test_example_configs_resolve_paths_against_their_directory() -> None:
    cfg = load_config(EXAMPLES / "own_model.yaml")
    assert cfg.target is not None and cfg.target.path.parent.name == "own_model_out"
    assert cfg.target.path.is_absolute() or cfg.target.path.parts[0] != "own_model_out"
    tcfg = load_config(EXAMPLES / "own_model_torch.yaml")
    assert tcfg.model.kind == "torch" and tcfg.config_dir == EXAMPLES.resolve()
