"""Audit a DP claim in one training run with canaries.

Make ``m`` canaries and their secret coins (:func:`make_input_canaries`,
:func:`make_gradient_canaries` with :func:`quiet_coordinates`, :func:`make_text_canaries`,
:func:`sample_text_canaries` (high-temperature samples of the base model), :func:`draw_coins`), insert the included ones into the training run (:func:`append_canaries`
for any framework, :func:`canary_texts` for a language model's fine-tuning texts;
:class:`GradientCanaryInjector` for Opacus' DP-SGD, with :class:`IterateLog` for white-box
access; :func:`train_dp_sgd_with_canaries` does both for a small classifier, and
:func:`train_recipe_with_gradient_canaries` for a privaudit torch recipe with a ``dp``
section, through the recipe's own training loop), score each
canary (:func:`input_canary_scores`, :func:`gradient_canary_scores`,
:func:`text_canary_scores`), then bound
(:func:`audit_canaries`: Steinke, Nasr, Jagielski 2023 and the f-DP audit of Mahloujifar,
Melis, Chaudhuri 2024, beside the accountant's eps; :func:`ideal_canary_audit` gives the
best bound a DP-SGD setting allows and guess counts fixed in advance). The command line is ``privaudit
canaries make`` / ``privaudit canaries audit``. The names are exported by ``privaudit``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from privaudit._lazy import lazy_exports

if TYPE_CHECKING:
    from privaudit.canaries.audit import audit_canaries
    from privaudit.canaries.coordinates import quiet_coordinates
    from privaudit.canaries.dpsgd import train_dp_sgd_with_canaries
    from privaudit.canaries.ideal import IdealCanaryAudit, ideal_canary_audit
    from privaudit.canaries.insert import append_canaries, canary_records, canary_texts
    from privaudit.canaries.opacus_hook import GradientCanaryInjector, IterateLog
    from privaudit.canaries.recipe_dpsgd import RecipeCanaryRun, train_recipe_with_gradient_canaries
    from privaudit.canaries.result import CanaryAuditResult
    from privaudit.canaries.scoring import gradient_canary_scores, input_canary_scores
    from privaudit.canaries.sets import (
        CanaryCoins,
        CanarySampling,
        CanarySet,
        draw_coins,
        load_canary_set,
        load_coins,
        make_gradient_canaries,
        make_input_canaries,
    )
    from privaudit.canaries.text_sampled import sample_text_canaries
    from privaudit.canaries.text_scoring import TextCanaryScores, text_canary_scores
    from privaudit.canaries.text_sets import make_text_canaries, rare_token_symbols

_EXPORTS = {
    "audit_canaries": "privaudit.canaries.audit",
    "quiet_coordinates": "privaudit.canaries.coordinates",
    "train_dp_sgd_with_canaries": "privaudit.canaries.dpsgd",
    "ideal_canary_audit": "privaudit.canaries.ideal",
    "IdealCanaryAudit": "privaudit.canaries.ideal",
    "append_canaries": "privaudit.canaries.insert",
    "canary_records": "privaudit.canaries.insert",
    "canary_texts": "privaudit.canaries.insert",
    "make_text_canaries": "privaudit.canaries.text_sets",
    "rare_token_symbols": "privaudit.canaries.text_sets",
    "sample_text_canaries": "privaudit.canaries.text_sampled",
    "text_canary_scores": "privaudit.canaries.text_scoring",
    "TextCanaryScores": "privaudit.canaries.text_scoring",
    "GradientCanaryInjector": "privaudit.canaries.opacus_hook",
    "IterateLog": "privaudit.canaries.opacus_hook",
    "RecipeCanaryRun": "privaudit.canaries.recipe_dpsgd",
    "train_recipe_with_gradient_canaries": "privaudit.canaries.recipe_dpsgd",
    "CanaryAuditResult": "privaudit.canaries.result",
    "gradient_canary_scores": "privaudit.canaries.scoring",
    "input_canary_scores": "privaudit.canaries.scoring",
    "CanaryCoins": "privaudit.canaries.sets",
    "CanarySampling": "privaudit.canaries.sets",
    "CanarySet": "privaudit.canaries.sets",
    "draw_coins": "privaudit.canaries.sets",
    "load_canary_set": "privaudit.canaries.sets",
    "load_coins": "privaudit.canaries.sets",
    "make_gradient_canaries": "privaudit.canaries.sets",
    "make_input_canaries": "privaudit.canaries.sets",
}
__all__ = [
    "CanaryAuditResult",
    "CanaryCoins",
    "CanarySampling",
    "CanarySet",
    "GradientCanaryInjector",
    "IdealCanaryAudit",
    "IterateLog",
    "RecipeCanaryRun",
    "TextCanaryScores",
    "append_canaries",
    "audit_canaries",
    "canary_records",
    "canary_texts",
    "draw_coins",
    "gradient_canary_scores",
    "ideal_canary_audit",
    "input_canary_scores",
    "load_canary_set",
    "load_coins",
    "make_gradient_canaries",
    "make_input_canaries",
    "make_text_canaries",
    "quiet_coordinates",
    "rare_token_symbols",
    "sample_text_canaries",
    "text_canary_scores",
    "train_dp_sgd_with_canaries",
    "train_recipe_with_gradient_canaries",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
