"""Per-record membership signals from logits, and signal tables for many models.

Public API (docs/architecture.md, "Module contracts"):

* :data:`SIGNALS` = ``("loss", "prob_true", "logit_confidence", "entropy",
  "modified_entropy")`` and :data:`SIGNAL_HIGHER_IS_MEMBER` (their direction);
* :func:`compute_signal` ``(name, logits, labels) -> float64 (n,)``, always finite, and
  the individual functions; :func:`compute_signal_from_loss` for losses-only models;
* :func:`signal_table` ``(models, dataset, signals, *, batch_size) -> dict[str, SignalTable]``;
* :data:`QUERY_SIGNALS` = ``("label_robustness",)``: label-only signals that query the model
  on perturbed records (:mod:`privaudit.signals.perturb`); :data:`ALL_SIGNALS` = both kinds;
* :data:`TEXT_SIGNALS` and :func:`text_signals` (:mod:`privaudit.signals.text`): membership
  signals of texts under a causal LM (loss, zlib, min-k, min-k++, reference, reference-ratio),
  higher = member, from :class:`~privaudit.models.causal_lm.TokenStats`;
* :data:`FINETUNE_SIGNALS` and :func:`finetune_signals` (:mod:`privaudit.signals.text_finetune`):
  a fine-tuned LM against the model it was fine-tuned from (ez-mia, wbc, informia-token),
  from :class:`~privaudit.models.lm_paired.PairedTokenStats`, and :func:`token_scores`
  (the per-token scores the report shows).
"""

from privaudit.signals.functions import (
    LOSS_DERIVABLE,
    SIGNAL_HIGHER_IS_MEMBER,
    SIGNALS,
    compute_signal,
    compute_signal_from_loss,
    cross_entropy_loss,
    entropy,
    logit_confidence,
    logit_confidence_from_loss,
    modified_entropy,
    prob_true,
    prob_true_from_loss,
)
from privaudit.signals.perturb import QUERY_SIGNALS, label_robustness
from privaudit.signals.table import ALL_SIGNALS, DEFAULT_BATCH_SIZE, model_signals, signal_table
from privaudit.signals.text import (
    TEXT_SIGNALS,
    min_k,
    min_k_plus_plus,
    reference_difference,
    reference_ratio,
    text_loss,
    text_signals,
    zlib_ratio,
)
from privaudit.signals.text_finetune import (
    FINETUNE_SIGNALS,
    ez_mia,
    finetune_signals,
    informia_token,
    token_scores,
    wbc,
)

__all__ = [
    "ALL_SIGNALS",
    "DEFAULT_BATCH_SIZE",
    "FINETUNE_SIGNALS",
    "LOSS_DERIVABLE",
    "QUERY_SIGNALS",
    "SIGNALS",
    "SIGNAL_HIGHER_IS_MEMBER",
    "TEXT_SIGNALS",
    "compute_signal",
    "compute_signal_from_loss",
    "cross_entropy_loss",
    "entropy",
    "ez_mia",
    "finetune_signals",
    "informia_token",
    "label_robustness",
    "logit_confidence",
    "logit_confidence_from_loss",
    "min_k",
    "min_k_plus_plus",
    "model_signals",
    "modified_entropy",
    "prob_true",
    "prob_true_from_loss",
    "reference_difference",
    "reference_ratio",
    "signal_table",
    "text_loss",
    "text_signals",
    "token_scores",
    "wbc",
    "zlib_ratio",
]
