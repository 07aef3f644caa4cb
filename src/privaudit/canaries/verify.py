"""``privaudit verify`` of a canary bundle: both one-run bounds recomputed from ``inputs.npz``.

The manifest records the training copies of each canary (``repetitions``), so the
per-record bounds of repeated text canaries are recomputed as the audit derived them.

The command line registers :func:`verify_canaries` for bundles of kind ``canaries``
(:func:`privaudit.cli.verification.verify_bundle`); the generic part (manifest, digests,
comparison with tolerances) is the report core's.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from privaudit.report.bundle import TOLERANCES, BundleError, Check, compare, load_json

__all__ = ["verify_canaries"]


def verify_canaries(folder: Path, manifest: Mapping[str, Any]) -> list[Check]:
    """Recompute the ``audits`` and the headline of a canary audit from its saved scores."""
    from privaudit.canaries.audit import canary_bounds
    from privaudit.canaries.report import CANARY_INPUTS_FILE, CANARY_RESULTS_FILE
    from privaudit.canaries.result import audit_entry, guesses_text, headline_bounds

    recorded = load_json(folder / CANARY_RESULTS_FILE)
    try:
        with np.load(folder / CANARY_INPUTS_FILE, allow_pickle=False) as z:
            scores, included = z["scores"], z["included"].astype(bool)
    except Exception as exc:
        raise BundleError(f"BUNDLE: cannot read the canary inputs ({exc})") from None
    cfg = manifest["config"]
    try:
        # the training copies of each canary (bundles written before it was recorded: 1)
        repetitions = cfg.get("repetitions")
        one, fdp = canary_bounds(
            scores,
            included,
            k_pos=cfg["k_pos"],
            k_neg=cfg["k_neg"],
            confidence=cfg["confidence"],
            delta=cfg["delta"],
            repetitions=1 if repetitions is None else repetitions,
        )
        head = headline_bounds(
            one, fdp, cfg["accountant_epsilon"], 1 if repetitions is None else repetitions
        )
        if repetitions is None:
            del head["repetitions"]
        want = {
            "audits": [audit_entry(one), audit_entry(fdp)],
            "canaries": {
                "m": int(scores.size),
                "n_included": int(included.sum()),
                "set_fingerprint": cfg["set_fingerprint"],
                "coins_fingerprint": cfg["coins_fingerprint"],
                "kind": cfg["canary_kind"],
                "access": cfg["access"],
                "accountant_epsilon": cfg["accountant_epsilon"],
                **head,
                "guesses": guesses_text(cfg["k_pos"], cfg["k_neg"]),
            },
        }
    except (KeyError, TypeError) as exc:
        raise BundleError(f"BUNDLE: incomplete canary config in the manifest ({exc})") from None
    checks, skipped = compare(
        {k: recorded.get(k) for k in want}, want, "results", TOLERANCES["bounds"]
    )
    return checks + skipped
