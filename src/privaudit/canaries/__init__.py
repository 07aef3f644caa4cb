"""Audit a DP claim in one training run with canaries (issue 33).

Make ``m`` canaries and their secret coins (:func:`make_input_canaries`,
:func:`make_gradient_canaries`, :func:`draw_coins`), insert the included ones into the
training run (:func:`append_canaries` for any framework; :class:`GradientCanaryInjector` for
Opacus' DP-SGD, with :class:`IterateLog` for white-box access), score each canary
(:func:`input_canary_scores`, :func:`gradient_canary_scores`), then bound
(:func:`audit_canaries`: Steinke, Nasr, Jagielski 2023 and the f-DP audit of Mahloujifar,
Melis, Chaudhuri 2024, beside the accountant's eps). The command line is ``privaudit
canaries make`` / ``privaudit canaries audit``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from privaudit._lazy import lazy_exports

if TYPE_CHECKING:
    from privaudit.canaries.audit import audit_canaries, canary_bounds
    from privaudit.canaries.dpsgd import DPSGDRun, mlp_parameter_count, train_dp_sgd_with_canaries
    from privaudit.canaries.insert import append_canaries, canary_records
    from privaudit.canaries.opacus_hook import GradientCanaryInjector, IterateLog, flat_parameters
    from privaudit.canaries.result import CanaryAuditResult
    from privaudit.canaries.scoring import gradient_canary_scores, input_canary_scores
    from privaudit.canaries.sets import (
        CANARY_KINDS,
        CanaryCoins,
        CanarySet,
        draw_coins,
        load_canary_set,
        load_coins,
        make_gradient_canaries,
        make_input_canaries,
    )

_EXPORTS = {
    "audit_canaries": "privaudit.canaries.audit",
    "canary_bounds": "privaudit.canaries.audit",
    "DPSGDRun": "privaudit.canaries.dpsgd",
    "mlp_parameter_count": "privaudit.canaries.dpsgd",
    "train_dp_sgd_with_canaries": "privaudit.canaries.dpsgd",
    "append_canaries": "privaudit.canaries.insert",
    "canary_records": "privaudit.canaries.insert",
    "GradientCanaryInjector": "privaudit.canaries.opacus_hook",
    "IterateLog": "privaudit.canaries.opacus_hook",
    "flat_parameters": "privaudit.canaries.opacus_hook",
    "CanaryAuditResult": "privaudit.canaries.result",
    "gradient_canary_scores": "privaudit.canaries.scoring",
    "input_canary_scores": "privaudit.canaries.scoring",
    "CANARY_KINDS": "privaudit.canaries.sets",
    "CanaryCoins": "privaudit.canaries.sets",
    "CanarySet": "privaudit.canaries.sets",
    "draw_coins": "privaudit.canaries.sets",
    "load_canary_set": "privaudit.canaries.sets",
    "load_coins": "privaudit.canaries.sets",
    "make_gradient_canaries": "privaudit.canaries.sets",
    "make_input_canaries": "privaudit.canaries.sets",
}
__all__ = [
    "CANARY_KINDS",
    "CanaryAuditResult",
    "CanaryCoins",
    "CanarySet",
    "DPSGDRun",
    "GradientCanaryInjector",
    "IterateLog",
    "append_canaries",
    "audit_canaries",
    "canary_bounds",
    "canary_records",
    "draw_coins",
    "flat_parameters",
    "gradient_canary_scores",
    "input_canary_scores",
    "load_canary_set",
    "load_coins",
    "make_gradient_canaries",
    "make_input_canaries",
    "mlp_parameter_count",
    "train_dp_sgd_with_canaries",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
