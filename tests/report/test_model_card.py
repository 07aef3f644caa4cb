"""``privaudit model-card results.json`` (issue 29, item 6): a Hugging Face model-card section.

The card's front matter is parsed as YAML and its figures checked against results.json
(each attack's AUC and TPR at FPR, each epsilon lower bound, the strongest attack, the
sha256 of the file); the markdown holds the figures table, the threat model and the
caveats. With huggingface_hub installed, the Hub's own parser reads the card and its
evaluation results. From a small run, and from the demo (slow).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from privaudit.attacks.base import BUILTIN_ATTACKS
from privaudit.cli import main
from privaudit.report.model_card import MODEL_CARD_FILE, model_card


def _front_matter(text: str) -> tuple[dict[str, Any], str]:
    assert text.startswith("---\n")
    head, body = text[4:].split("\n---\n", 1)
    meta = yaml.safe_load(head)
    assert isinstance(meta, dict)
    return meta, body


def _check_card(card: Path, report: Path) -> None:
    results = json.loads((report / "results.json").read_text())
    meta, body = _front_matter(card.read_text(encoding="utf-8"))
    assert {"privacy-audit", "membership-inference", "privaudit"} <= set(meta["tags"])
    (entry,) = meta["model-index"]
    (res,) = entry["results"]
    metrics = {m["name"]: m for m in res["metrics"]}
    assert all(m["verified"] is False for m in res["metrics"])
    for a in results["attacks"]:
        assert metrics[f"membership-inference AUC ({a['name']})"]["value"] == a["auc"]
        for k, v in a["tpr_at_fpr"].items():
            name = f"TPR at {100 * float(k):g}% FPR ({a['name']})"
            assert (name in metrics) == (v is not None)
            if v is not None:
                assert metrics[name]["value"] == v and metrics[name]["type"] == f"tpr_at_fpr_{k}"
    # a refused entry (not gated: Attack L's in the demo) publishes no bound
    bounds = [
        b
        for b in results["audits"]
        if b["epsilon_lower_bound"] is not None and (b.get("extra") or {}).get("gated") is not False
    ]
    eps = [m for m in res["metrics"] if m["type"] == "epsilon_lower_bound"]
    assert [m["value"] for m in eps] == [b["epsilon_lower_bound"] for b in bounds]
    audit = meta["privacy_audit"]
    strongest = max(results["attacks"], key=lambda a: a["auc"])
    assert audit["strongest_attack"] == {"name": strongest["name"], "auc": strongest["auc"]}
    if bounds:
        top = max(bounds, key=lambda b: b["epsilon_lower_bound"])
        assert audit["max_epsilon_lower_bound"]["value"] == top["epsilon_lower_bound"]
    assert audit["n_members"] == results["target"]["n_members"]
    assert audit["alpha"] == results["settings"]["alpha"]
    assert (
        audit["results_sha256"]
        == hashlib.sha256((report / "results.json").read_bytes()).hexdigest()
    )
    assert audit["tool_version"] == results["privaudit_version"]
    for heading in ("### Results", "### Threat model", "### Caveats"):
        assert heading in body
    for a in results["attacks"]:
        assert f"| `{a['name']}` | {a['auc']:.3f}" in body
    assert results["threat_model"]["adversary"]["goal"] in body
    assert "does not prove privacy" in body and "privaudit verify" in body
    try:
        from huggingface_hub import ModelCard
    except ImportError:
        return
    hub = ModelCard(card.read_text(encoding="utf-8"))  # the Hub's parser of the metadata
    assert hub.data.eval_results is not None
    assert {r.metric_name for r in hub.data.eval_results} == set(metrics)
    assert hub.data.model_name == entry["name"]


def test_model_card_from_a_small_run(
    small_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "card.md"
    assert main(["model-card", str(small_run / "results.json"), "--out", str(out)]) == 0
    assert str(out) in capsys.readouterr().out
    _check_card(out, small_run)
    meta, _ = _front_matter(out.read_text())
    assert meta["model-index"][0]["name"] == "logistic on digits"


def test_model_card_default_path_and_name(small_run: Path, tmp_path: Path) -> None:
    import shutil

    report = tmp_path / "r"
    shutil.copytree(small_run, report)
    assert main(["model-card", str(report), "--model-name", "acme/digits-logreg"]) == 0
    meta, _ = _front_matter((report / MODEL_CARD_FILE).read_text())
    assert meta["model-index"][0]["name"] == "acme/digits-logreg"


def test_model_card_refuses_what_is_not_a_membership_audit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "results.json"
    bad.write_text(json.dumps({"schema_version": "1.0", "headline": {}}))
    assert main(["model-card", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "expected the results.json of a membership audit" in err and err.count("\n") == 1
    assert not (tmp_path / MODEL_CARD_FILE).exists()
    assert main(["model-card", str(tmp_path / "nope.json")]) == 2
    with pytest.raises(Exception, match=r"a results\.json document"):
        model_card([])  # type: ignore[arg-type]


@pytest.mark.slow
def test_model_card_of_the_demo(quick_demo: Path, tmp_path: Path) -> None:
    out = tmp_path / "card.md"
    assert main(["model-card", str(quick_demo), "--out", str(out)]) == 0
    _check_card(out, quick_demo)
    meta, _ = _front_matter(out.read_text())
    assert len(meta["privacy_audit"]["attacks"]) == len(
        BUILTIN_ATTACKS
    )  # the demo runs every built-in attack
