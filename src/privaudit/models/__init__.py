"""Models: the :class:`Model` / :class:`Trainer` protocols and their adapters.

Public API (docs/architecture.md, "Module contracts"):

* :class:`Model` (``n_classes``, ``logits(X)``) and :class:`Trainer` (``name``,
  ``fit(X, y, *, seed)``, ``settings()``) protocols;
* :class:`SklearnTrainer`, :class:`SklearnModel` (logits from ``decision_function``, an
  MLP's output pre-activation, or floored log-probabilities);
* :class:`PrecomputedModel` (per-record logits or losses by record id),
  :func:`load_precomputed`;
* :func:`distill` (Attack D's distillation: soft labels, or logit matching giving a
  :class:`LogitRegressionModel`);
* :func:`save_model` / :func:`load_model` (skops, never pickle).
"""

from privaudit.models.base import Model, Trainer
from privaudit.models.distill import (
    DISTILL_METHODS,
    LogitRegressionModel,
    distill,
    logit_regressor_for,
    soft_label_expansion,
)
from privaudit.models.persistence import (
    SKLEARN_STATE_TYPES,
    UntrustedModelError,
    load_model,
    save_model,
    untrusted_types,
)
from privaudit.models.precomputed import PrecomputedModel, load_precomputed
from privaudit.models.sklearn import (
    ABSENT_CLASS_MARGIN,
    LOGIT_SOURCES,
    PROBA_FLOOR,
    SklearnModel,
    SklearnTrainer,
    TrainingError,
)

__all__ = [
    "ABSENT_CLASS_MARGIN",
    "DISTILL_METHODS",
    "LOGIT_SOURCES",
    "PROBA_FLOOR",
    "SKLEARN_STATE_TYPES",
    "LogitRegressionModel",
    "Model",
    "PrecomputedModel",
    "SklearnModel",
    "SklearnTrainer",
    "Trainer",
    "TrainingError",
    "UntrustedModelError",
    "distill",
    "load_model",
    "load_precomputed",
    "logit_regressor_for",
    "save_model",
    "soft_label_expansion",
    "untrusted_types",
]
