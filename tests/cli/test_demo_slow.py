"""The full `privaudit demo` (minutes): the issue's done-when criteria on the demo target."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from scipy import stats

from privaudit.cli import main

#: Attacks whose alpha decision is calibrated for *this* target model (Def. 3.2): P on
#: the target's own population losses, R, D, L and offline LiRA by the population
#: (conformal) calibration. Attack S's threshold comes from shadow models, so it holds
#: alpha on average over target models (Def. 3.1), not for one fixed target; its
#: achieved FPR is reported next to alpha but not asserted here.
CALIBRATED = (
    "population",
    "reference",
    "distillation",
    "distillation-logits",
    "leave-one-out",
    "lira-offline",
    # conformal thresholds on population scores (privaudit.attacks.extra_attacks)
    "calibrated-loss",
    "learned",
    "label-only",
)


@pytest.mark.slow
def test_full_demo_meets_the_done_when_criteria(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    cache = tmp_path / "cache"
    args = ["demo", "--out", str(out), "--n-jobs", "2", "--no-progress", "--cache-dir", str(cache)]
    assert main(args) == 0
    assert (out / "report.html").is_file()
    results = json.loads((out / "results.json").read_text())
    by = {a["name"]: a for a in results["attacks"]}
    assert results["target"]["train_accuracy"] > results["target"]["test_accuracy"] + 0.1
    assert by["reference"]["n_negatives"] >= 1000  # TPR at 0.1% FPR is reported
    baseline = max(by["population"]["tpr_at_fpr"]["0.01"], by["shadow"]["tpr_at_fpr"]["0.01"])
    # Issue 10, done when: every attack scored on >= 1,000 records (L included: all
    # non-members and the sampled members); LiRA online and RMIA online above the loss
    # attack at 0.1% and 1% FPR; no attack at FPR 0 / TPR 0 without a warning.
    for a in results["attacks"]:
        assert a["n_positives"] + a["n_negatives"] >= 1000, a["name"]
        if a["achieved_fpr"] == 0 and a["achieved_tpr"] == 0:
            assert a["warnings"], a["name"]
    for name in ("lira-online", "rmia-online"):
        for f in ("0.001", "0.01"):
            assert by[name]["tpr_at_fpr"][f] > by["loss"]["tpr_at_fpr"][f], (name, f)
    assert by["shadow"]["alpha_guarantee"] == "average-over-targets"
    # Reference-based attacks (D with logit-matching students) are clearly stronger at
    # 1% FPR; Ye et al.'s soft-label D is not held to it (1.5% on this target), nor is
    # Attack R, whose 8 references now train on the population as in the paper (2.0%).
    for name in (
        "distillation-logits",
        "lira-online",
        "lira-offline",
        "rmia-online",
        "rmia-offline",
    ):
        assert by[name]["tpr_at_fpr"]["0.01"] >= 2.0 * baseline, name
    # Each calibrated alpha-threshold attack's achieved FPR on the held-out non-members is
    # within binomial error of alpha. A conformal threshold is itself estimated from
    # n_calibration population non-members, so the error of the achieved FPR counts both
    # binomial samples: sd = sqrt(alpha (1 - alpha) (1/n_negatives + 1/n_calibration)),
    # checked two-sided at 99% (five attacks are checked at once).
    z = stats.norm.ppf(0.995)
    for name in CALIBRATED:
        a = by[name]
        alpha, n_neg = a["alpha"], a["n_negatives"]
        # P's threshold is a quantile of the target's signals on the population itself.
        n_cal = a["params"].get("n_calibration", a["params"].get("n_population"))
        assert n_cal, (name, "threshold not calibrated on the population")
        sd = math.sqrt(alpha * (1 - alpha) * (1 / n_neg + 1 / n_cal))
        assert abs(a["achieved_fpr"] - alpha) <= z * sd, (name, a["achieved_fpr"], sd)
