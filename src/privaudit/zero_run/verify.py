"""``privaudit verify`` of a Zero-Run bundle: the audit re-run from the saved inputs.

The generic part (the manifest, the file digests, the comparison with tolerances) is the
report core's (:mod:`privaudit.report.bundle`); the command line registers
:func:`verify_zero_run` for bundles of kind ``zero-run``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from privaudit.report.bundle import (
    AUDIT_INPUTS_FILE,
    FEATURES_FILE,
    TOLERANCES,
    BundleError,
    Check,
    compare,
    load_json,
)

__all__ = ["verify_zero_run"]


def verify_zero_run(folder: Path, manifest: Mapping[str, Any]) -> list[Check]:
    """Re-run the Zero-Run audit (propensity fits, bootstrap, tests) from the saved inputs."""
    import pandas as pd

    from privaudit.zero_run import zero_run_audit
    from privaudit.zero_run.report import ZERO_RUN_RESULTS_FILE, zero_run_payload

    recorded = load_json(folder / ZERO_RUN_RESULTS_FILE)
    try:
        with np.load(folder / AUDIT_INPUTS_FILE, allow_pickle=False) as z:
            scores, member = z["scores"], z["member"]
        features = pd.read_parquet(folder / FEATURES_FILE)
    except Exception as exc:
        raise BundleError(f"BUNDLE: cannot read the Zero-Run inputs ({exc})") from None
    cfg = manifest["config"]
    try:
        col = cfg.get("propensity_col")
        given = {col: features[col].to_numpy(dtype=np.float64)} if col else None
        result = zero_run_audit(
            scores,
            member,
            features=None if col else features,
            propensity=given,
            estimators=tuple(cfg["estimators"]),
            # bundles written before the validity checks existed had neither
            challengers=tuple(cfg.get("challengers", ())),
            placebo=cfg.get("placebo", False),
            confidence=cfg["confidence"],
            beta=cfg.get("beta"),
            margin_z=cfg.get("margin_z", 2.0),
            # bundles written before the rule existed used the minimum over estimators
            headline_rule=cfg.get("headline_rule", "min"),
            delta=cfg["delta"],
            delta_ds=cfg["delta_ds"],
            n_bootstrap=cfg["n_bootstrap"],
            pca_components=cfg["pca_components"],
            seed=cfg["seed"],
        )
    except (KeyError, TypeError) as exc:
        raise BundleError(f"BUNDLE: incomplete Zero-Run config in the manifest ({exc})") from None
    want = zero_run_payload(result)
    want.pop("privaudit_version", None)
    checks, skipped = compare(recorded, want, "results", TOLERANCES["bounds"])
    return checks + skipped
