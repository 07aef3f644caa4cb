"""run_audit end to end on a small digits audit (fast), and the demo config."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from privaudit.errors import InvalidInputError
from privaudit.membership.config import AuditConfig, config_from_dict
from privaudit.membership.pipeline import (
    AuditReport,
    demo_config,
    experiment_config,
    n_models_behind,
    run_audit,
)
from privaudit.report import ReportExistsError, ScoreTable, load_results, recompute_attack_metrics

SMALL: dict[str, Any] = {
    "dataset": "digits",
    "model": {"kind": "mlp", "params": {"hidden_layer_sizes": [32], "max_iter": 60}},
    "sizes": {"n_target_pool": 240, "n_population": 480},
    "models": {
        "n_reference": 4,
        "n_shadow": 2,
        "n_distilled": 2,
        "n_leave_one_out": 2,
        "leave_one_out_sample": 4,
    },
    "alpha": 0.1,
    "seed": 3,
    "n_jobs": 1,
}


def small_config(out: Path, **over: Any) -> AuditConfig:
    return config_from_dict({**SMALL, "output_dir": str(out), **over})


@pytest.fixture(scope="module")
def audit(tmp_path_factory: pytest.TempPathFactory) -> AuditReport:
    out = tmp_path_factory.mktemp("audit") / "report"
    return run_audit(small_config(out), progress=False)


def test_report_directory_written(audit: AuditReport) -> None:
    assert audit.out_dir is not None
    assert sorted(p.name for p in audit.out_dir.iterdir()) == [
        "bundle.json",
        "report.html",
        "results.json",
        "scores.npz",
    ]
    results = load_results(audit.out_dir)
    assert results == json.loads(json.dumps(audit.results))
    from privaudit.attacks import default_attacks

    assert [a["name"] for a in results["attacks"]] == list(default_attacks())
    s = results["settings"]
    assert s["game"] == "fixed-model" and s["alpha"] == 0.1 and s["dataset"]["name"] == "digits"
    assert s["models"]["n_reference"] == 4 and s["seeds"]["root"] == 3
    assert results["game"]["fixed"] and results["game"]["resampled"]
    t = results["target"]
    assert t["n_members"] + t["n_non_members"] == 240
    assert t["train_accuracy"] > t["test_accuracy"]


def test_every_number_recomputable_from_scores(audit: AuditReport) -> None:
    assert audit.out_dir is not None
    results = load_results(audit.out_dir)
    table = ScoreTable.load(audit.out_dir)
    re = recompute_attack_metrics(table, results)
    for a in results["attacks"]:
        m = re[a["name"]]
        assert m.auc == pytest.approx(a["auc"], abs=1e-12), a["name"]
        assert m.tpr_at_fpr == a["tpr_at_fpr"]
        assert m.achieved_fpr == a["achieved_fpr"]
        assert m.alpha_within_error == a["alpha_within_error"]
        assert list(m.warnings) == a["warnings"]
        assert m.n_positives == a["n_positives"] and m.n_negatives == a["n_negatives"]


def test_attack_entries(audit: AuditReport) -> None:
    by_name = {a["name"]: a for a in audit.results["attacks"]}
    assert by_name["reference"]["n_reference_models"] == 2  # the shadow models (population)
    assert by_name["lira-online"]["n_reference_models"] == 4
    assert by_name["shadow"]["n_reference_models"] == 2
    assert by_name["population"]["n_reference_models"] == 0
    # L is reported on every record it scored: all non-members and the sampled members
    loo = by_name["leave-one-out"]
    assert loo["n_negatives"] == audit.results["target"]["n_non_members"]
    assert loo["n_positives"] == 2
    # so its records' bits are no independent coins: its one-run bound is refused; the
    # other attacks scored every pool record (one fair coin each) and keep theirs
    from privaudit.stats.attack_bounds import MEMBER_CHOSEN_SAMPLE

    audits = {a["attack"]: a for a in audit.results["audits"]}
    assert audits["leave-one-out"]["extra"]["not_gated_reason"] == MEMBER_CHOSEN_SAMPLE
    assert audits["leave-one-out"]["epsilon_lower_bound"] == 0.0
    assert all(
        (a.get("extra") or {}).get("gated") is not False
        for n, a in audits.items()
        if n != "leave-one-out"
    )
    # alpha-threshold attacks report the achieved FPR next to alpha; others do not
    for name in ("population", "shadow", "reference", "distillation"):
        assert by_name[name]["alpha"] == 0.1 and by_name[name]["achieved_fpr"] is not None
    assert by_name["lira-online"]["achieved_fpr"] is None
    # 120ish non-members < 1000: TPR at 0.1% FPR is withheld, not faked
    assert by_name["reference"]["tpr_at_fpr"]["0.001"] is None
    ag = audit.results["agreement"]
    assert "leave-one-out" in ag["names"] and ag["names"][-1] == "GT"
    assert "agreement_excludes" not in audit.results["settings"]
    # L is compared with each attack on the records both scored
    i = ag["names"].index("leave-one-out")
    assert ag["n_train_pairs"][i][-1] == 2 and ag["n_test_pairs"][i][-1] == loo["n_negatives"]
    assert ag["n_train_pairs"][0][-1] == audit.results["target"]["n_members"]


def test_same_seed_same_scores(audit: AuditReport, tmp_path: Path) -> None:
    again = run_audit(small_config(tmp_path / "r"), progress=False, write=False)
    assert again.out_dir is None and not (tmp_path / "r").exists()
    for name, s in audit.experiment.scores.items():
        np.testing.assert_array_equal(s.scores, again.experiment.scores[name].scores)


def test_existing_report_refused_before_any_work(
    audit: AuditReport, monkeypatch: pytest.MonkeyPatch
) -> None:
    def must_not_run(*_: Any, **__: Any) -> None:
        raise AssertionError("the experiment ran although the report directory exists")

    monkeypatch.setattr("privaudit.membership.pipeline.run_experiment", must_not_run)
    assert audit.out_dir is not None
    with pytest.raises(ReportExistsError, match="overwrite"):
        run_audit(small_config(audit.out_dir), progress=False)


def test_sizes_larger_than_dataset_named(tmp_path: Path) -> None:
    cfg = small_config(tmp_path / "r", sizes={"n_target_pool": 1500, "n_population": 1500})
    with pytest.raises(InvalidInputError, match="sizes"):
        run_audit(cfg, progress=False)
    assert not (tmp_path / "r").exists()


def test_demo_config_meets_the_issue() -> None:
    cfg = demo_config()
    from privaudit.attacks import attack_names

    assert cfg.dataset.name == "adult" and cfg.model.kind == "mlp"
    assert cfg.model.estimator_params()["alpha"] == 0.0  # no weight decay: overfits
    assert cfg.models.n_reference >= 8
    assert cfg.attack_names() == attack_names()  # distillation-logits too: an MLP target
    assert cfg.attack_params == {}  # every attack with its (tuned) defaults, nothing forced
    ec = experiment_config(cfg, 45_222)
    # enough non-members for TPR at 0.1% FPR: a fair coin per pool record leaves fewer
    # than 1,000 with probability below 1e-9
    from scipy.stats import binom

    assert binom.cdf(999, ec.n_target_pool, 0.5) < 1e-9
    assert n_models_behind("lira-online", ec) == cfg.models.n_reference


def test_agreement_at_two_fprs_and_vulnerable_records_in_results_and_report(
    audit: AuditReport,
) -> None:
    r = audit.results
    ag = r["agreement_at_fpr"]
    assert [b["fpr"] for b in ag] == [0.05, 0.3]
    for b in ag:
        assert "leave-one-out" in b["names"] and b["names"][-1] == "GT"
        i = b["names"].index("leave-one-out")
        # L is compared on the records it scored
        assert 0 < b["n_train"][0][i] + b["n_test"][0][i] < audit.experiment.record_ids.size
    vr = r["vulnerable_records"]
    assert vr["fprs"] == [0.05, 0.3]
    names = {(s["name"], s["fpr"]) for s in vr["sets"]}
    for f in (0.05, 0.3):
        assert {("random", f), ("all-correct", f), ("R-correct", f), ("SP-correct", f)} <= names
    assert vr["ranking"]["ranked_by"] == "leave-one-out" and vr["ranking"]["records"]
    ranked = [x["record_id"] for x in vr["ranking"]["records"]]
    exp = audit.experiment
    member = dict(zip(exp.record_ids.tolist(), exp.membership.tolist(), strict=True))
    assert all(member[x] for x in ranked)  # the most vulnerable *members*
    html = (audit.out_dir / "report.html").read_text()  # type: ignore[operator]
    for heading in (
        "Threat model",
        "Agreement between attacks at a common FPR",
        "Vulnerable records",
    ):
        assert heading in html
    assert str(ranked[0]) in html


def test_leave_one_out_aimed_at_the_record_types(tmp_path: Path) -> None:
    """vulnerable.leave_one_out_per_set: a second pass trains L's models for more members
    of each record type (and reuses every other model), for the vulnerable-record analysis
    only: Attack L's figures stay on its random first sample, since the aimed members were
    chosen by their membership and the other attacks' decisions."""
    cfg = small_config(
        tmp_path / "r",
        attacks=["population", "shadow", "reference", "leave-one-out"],
        vulnerable={"leave_one_out_per_set": 2},
    )
    rep = run_audit(cfg, progress=False, write=False)
    vr = rep.results["vulnerable_records"]
    sample = vr["leave_one_out_sample"]
    assert sample["n_aimed_at_record_types"] > 0
    assert sample["n_records"] == 4 + sample["n_aimed_at_record_types"]
    # the second pass trained only leave-one-out models (2 per added member), counted
    # beside the first pass's
    trained = rep.results["settings"]["models_trained"]
    first = run_audit(
        small_config(
            tmp_path / "r1", attacks=["population", "shadow", "reference", "leave-one-out"]
        ),
        progress=False,
        write=False,
    )
    first_trained = first.results["settings"]["models_trained"]
    assert (
        trained["leave_one_out"]
        == first_trained["leave_one_out"] + 2 * sample["n_aimed_at_record_types"]
    )
    assert {k: v for k, v in trained.items() if k != "leave_one_out"} == {
        k: v for k, v in first_trained.items() if k != "leave_one_out"
    }
    # Attack L's attacks-table figures and bound: the first pass's, not the aimed sample's
    (l_entry,) = [a for a in rep.results["attacks"] if a["name"] == "leave-one-out"]
    (l_first,) = [a for a in first.results["attacks"] if a["name"] == "leave-one-out"]
    assert l_entry == l_first
    assert rep.results["audits"] == first.results["audits"]
    for s in vr["sets"]:
        if s["name"] != "random" and s["n_records"] >= 2:
            assert s["leave_one_out"]["n_scored_by_l"] >= 1


def test_verify_rederives_the_refusal_of_attack_ls_bound(
    audit: AuditReport, tmp_path: Path
) -> None:
    """verify recomputes the bounds with Attack L's refusal derived from the game, so a
    bundle that drops it (giving L an ungated entry) does not verify."""
    import json
    import shutil

    from privaudit.cli.verify_cmd import verify_bundle
    from privaudit.report.bundle import BUNDLE_FILE, file_digest

    assert audit.out_dir is not None
    assert verify_bundle(audit.out_dir / BUNDLE_FILE).ok
    copy = tmp_path / "bundle"
    shutil.copytree(audit.out_dir, copy)
    p = copy / "results.json"
    d = json.loads(p.read_text())
    # the forged entry: L's bound as it would be computed without the refusal
    from privaudit.report.results import plain
    from privaudit.stats.attack_bounds import attack_one_run_bounds

    table = ScoreTable.load(copy)
    per_attack = [a for a in d["audits"] if a.get("attack") in table.scores]
    bounds = attack_one_run_bounds(
        {a["attack"]: table.scored(a["attack"])[1:] for a in per_attack},
        confidence=float(per_attack[0]["family_confidence"]),
        delta=float(per_attack[0]["delta"]),
        sampling_assumption=str(per_attack[0]["sampling_assumption"]),
    )
    i = [a["attack"] for a in d["audits"]].index("leave-one-out")
    d["audits"][i] = plain(bounds)[[b["attack"] for b in bounds].index("leave-one-out")]
    p.write_text(json.dumps(d, indent=2))
    m = json.loads((copy / BUNDLE_FILE).read_text())
    m["files"]["results.json"] = file_digest(p)
    (copy / BUNDLE_FILE).write_text(json.dumps(m))
    report = verify_bundle(copy / BUNDLE_FILE)
    assert not report.ok
    assert any("leave-one-out" in c.name or "audits" in c.name for c in report.mismatches)
