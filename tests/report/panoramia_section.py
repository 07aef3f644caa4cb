"""A hand-made PANORAMIA result (the keys of pano_api.md section 2) on simulated test scores.

The bounds are computed from the scores with :func:`privaudit.stats.panoramia.panoramia_lb`
(beta/2 per test over the quantile thresholds), so ``privaudit verify`` must recompute them
exactly; the curves are ``panoramia_curve`` of the same scores.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privaudit.panoramia.report import BASELINE, MIA, RMRN
from privaudit.report.results import ScoreTable
from privaudit.stats.panoramia import panoramia_cap, panoramia_curve, panoramia_lb


def panoramia_fixture(
    m: int = 400,
    *,
    seed: int = 0,
    rmrn: bool = True,
    confidence: float = 0.95,
    baseline_shift: float = 0.4,
) -> tuple[dict[str, Any], ScoreTable, ScoreTable | None]:
    """``(section, test ScoreTable, RM;RN ScoreTable or None)``; ``baseline_shift``: the
    baseline's separation of members (large: a generator it detects)."""
    rng = np.random.default_rng(seed)
    member = rng.random(m) < 0.5
    ids = np.asarray([f"real-{i:05d}" if member[i] else f"synth-{i:06d}" for i in range(m)])
    mia = 1.2 * member + rng.normal(size=m)
    base = baseline_shift * member + rng.normal(size=m)
    beta = 1 - confidence
    cpe, im = panoramia_lb(mia, member, beta_per_test=beta / 2)
    c, ib = panoramia_lb(base, member, beta_per_test=beta / 2)
    table = ScoreTable(record_ids=ids, member=member, scores={MIA: mia, BASELINE: base})
    curves = {
        "mia": panoramia_curve(mia, member, beta_per_test=beta / 2),
        "baseline": panoramia_curve(base, member, beta_per_test=beta / 2),
    }
    rm = None
    rm_table = None
    if rmrn:
        mr = rng.random(m) < 0.5
        rs = 1.3 * mr + rng.normal(size=m)
        eps, ir = panoramia_lb(rs, mr, beta_per_test=beta)
        rm_table = ScoreTable(
            record_ids=np.asarray([f"r-{i}" for i in range(m)]), member=mr, scores={RMRN: rs}
        )
        rm = {
            "eps_lb": eps,
            "m": m,
            "n_test_members": int(mr.sum()),
            "r": ir["r"],
            "v": ir["v"],
            "n_thresholds": ir["n_thresholds"],
            "beta_per_threshold": ir["beta_per_threshold"],
        }
        curves["rmrn"] = panoramia_curve(rs, mr, beta_per_test=beta)
    n_mem = int(member.sum())
    section = {
        "modality": "tabular",
        "seed": seed,
        "confidence": confidence,
        "sizes": {
            "n_known_members": 4 * n_mem,
            "n_generator_train": 2 * n_mem,
            "n_audit_members": 2 * n_mem,
            "n_synthetic": 4 * n_mem,
            "n_helper_pool": 2 * n_mem,
            "n_audit_synthetic": 2 * n_mem,
            "n_classifier_train": 2 * n_mem,
            "n_validation": n_mem,
            "m": m,
            "n_test_members": n_mem,
            "n_test_synthetic": m - n_mem,
        },
        "bounds": {
            "c_lb": c,
            "c_plus_eps_lb": cpe,
            "eps_tilde": max(0.0, cpe - c),
            "cap": panoramia_cap(member, beta_per_test=beta / 2),
            "n_thresholds": im["n_thresholds"],
            "beta_per_threshold": im["beta_per_threshold"],
            "mia": {"r": im["r"], "v": im["v"]},
            "baseline": {"r": ib["r"], "v": ib["v"]},
        },
        "comparisons": {
            "rmrn": rm,
            "o1": None
            if not rmrn
            else {
                "eps_lb": 0.4,
                "m": m,
                "k_pos": 20,
                "k_neg": 20,
                "r": 40,
                "v": 33,
                "selection": "union-bound",
            },
        },
        "curves": curves,
        "generator": {"name": "baynet", "degree": 2, "n_bins": 8},
        "helper": {"trainer": "mlp", "n_train": 2 * n_mem},
        "classifiers": {
            "mia": {"best_iteration": 40},
            "baseline": {"best_iteration": 12},
            "rmrn": None,
        },
        "split": {
            "ids_sha256": {
                k: "0" * 64
                for k in ("generator", "members", "helper_pool", "audit_synthetic", "test")
            },
            "checked": True,
        },
        "notes": ["eps_tilde is a lower bound on eps only if c_lb is tight (Sec. 4.2)"],
    }
    return section, table, rm_table
