"""The threat-model document (results.json["threat_model"])."""

from __future__ import annotations

from privaudit.attacks import attack_names
from privaudit.membership.games import describe_game
from privaudit.membership.threat_model import ATTACK_ASSUMPTIONS, threat_model


def test_every_builtin_attack_is_described() -> None:
    assert set(attack_names()) <= set(ATTACK_ASSUMPTIONS)


def test_document_states_game_knowledge_and_bounds() -> None:
    game = {**describe_game("fixed-record-and-dataset", n_trials=6).to_dict(), "id": "def-3.4"}
    attacks = [
        {"name": "shadow", "params": {"signal": "logit_confidence"}},
        {"name": "label-only", "params": {"signal": "label_robustness"}},
        {"name": "leave-one-out", "params": {}},
    ]
    audits = [{"attack": "shadow", "procedure": "one-run", "confidence": 0.95}]
    tm = threat_model(game, attacks, audits=audits)
    assert tm["game"]["id"] == "def-3.4" and tm["game"]["n_trials"] == 6
    assert any("coin b" in r for r in tm["game"]["resampled"])
    by = {a["name"]: a for a in tm["attacks"]}
    assert "Def. 3.1" in " ".join(by["shadow"]["assumptions"])  # S holds alpha on average
    assert by["label-only"]["access"].startswith("label-only")
    assert any("training set D" in k for k in by["leave-one-out"]["knows"])
    (b,) = tm["bounds"]
    assert b["attack"] == "shadow" and "6 trials" in b["assumption"]


def test_rmia_assumptions_name_the_score_form() -> None:
    """Issue 28: the threat model says which RMIA score produced the numbers."""
    game = describe_game("fixed-record-and-dataset", n_trials=1).to_dict()
    attacks = [
        {"name": "rmia-online", "params": {"score": "ratio"}},
        {"name": "rmia-offline", "params": {"score": "fraction"}},
    ]
    by = {a["name"]: a for a in threat_model(game, attacks)["attacks"]}
    online = " ".join(by["rmia-online"]["assumptions"])
    assert "log likelihood ratio log Pr(x|theta) - log Pr(x)" in online
    assert "not the paper's pairwise-comparison score" in online
    offline = " ".join(by["rmia-offline"]["assumptions"])
    assert "the paper's pairwise-comparison score Pr_z[LR(x, z) >= gamma]" in offline


def test_online_rmia_assumptions_name_the_estimate_of_pr_x() -> None:
    """Issue 34: online RMIA's Pr(x) is the balanced estimate by default, the paper's plain
    mean on request; the threat model says which one produced the numbers."""
    from privaudit.attacks.rmia import PRIORS

    game = describe_game("fixed-record-and-dataset", n_trials=1).to_dict()
    attacks = [
        {"name": "rmia-online", "params": {"score": "ratio", "reference_average": "balanced"}},
        {"name": "informia-online", "params": {"reference_average": "mean"}},
        {"name": "rmia-offline", "params": {"score": "ratio", "reference_average": "mean"}},
    ]
    by = {a["name"]: a for a in threat_model(game, attacks)["attacks"]}
    assert by["rmia-online"]["assumptions"][0] == f"Pr(x): {PRIORS['balanced']}"
    assert by["informia-online"]["assumptions"][0] == f"Pr(x): {PRIORS['mean']}"
    assert not any(a.startswith("Pr(x):") for a in by["rmia-offline"]["assumptions"])
