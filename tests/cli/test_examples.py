"""The shipped example config stays valid as the schema evolves."""

from __future__ import annotations

from pathlib import Path

from privaudit.membership.config import load_config

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_example_audit_config_is_valid() -> None:
    cfg = load_config(EXAMPLES / "audit.yaml")
    assert cfg.dataset.name == "adult"
    assert cfg.model.kind == "gradient_boosting"
    assert "rmia-online" in cfg.attack_names()
