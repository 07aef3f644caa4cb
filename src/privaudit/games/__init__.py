"""Inference games (Ye et al. 2022, Def. 3.1-3.4) as runnable experiments, and metrics.

* :mod:`~privaudit.games.experiment` -- :func:`run_experiment`: Ye et al.'s experiment,
  a composition of the split (:mod:`~privaudit.games.ye_split`), the models of each role
  and their signals (:mod:`~privaudit.games.ye`) and the attacks;
* :mod:`~privaudit.games.games` -- :func:`run_game`: the four games, recording what
  was fixed and what was resampled;
* :mod:`~privaudit.games.metrics` -- ROC, AUC, TPR at FPR, achieved FPR, agreement;
* :mod:`~privaudit.games.record_risk` -- :func:`run_record_risk`: the traditional and the
  model-seeded record-level games (Krčo et al. 2025) for generators and classifiers, on
  the plans of :mod:`~privaudit.games.record_games`, with the metrics of
  :mod:`~privaudit.games.record_metrics`;
* :mod:`~privaudit.games.train_many` -- the one cached, resumable "train many" step both
  experiments use (tasks of releases; models with their per-record signals, batched
  fits).
"""

from privaudit.games.experiment import (
    DEFAULT_ATTACKS,
    ExperimentConfig,
    ExperimentResult,
    GameDescription,
    run_experiment,
    target_pool_ids,
)
from privaudit.games.games import GAMES, GameResult, GameSamples, describe_game, run_game
from privaudit.games.metrics import (
    achieved_fpr,
    agreement_matrix,
    attack_metrics,
    auc,
    fpr_at_tpr,
    roc_curve,
    tpr_at_fpr,
)
from privaudit.games.record_risk import RecordRiskConfig, RecordRiskResult, run_record_risk

__all__ = [
    "DEFAULT_ATTACKS",
    "GAMES",
    "ExperimentConfig",
    "ExperimentResult",
    "GameDescription",
    "GameResult",
    "GameSamples",
    "RecordRiskConfig",
    "RecordRiskResult",
    "achieved_fpr",
    "agreement_matrix",
    "attack_metrics",
    "auc",
    "describe_game",
    "fpr_at_tpr",
    "roc_curve",
    "run_experiment",
    "run_game",
    "run_record_risk",
    "target_pool_ids",
    "tpr_at_fpr",
]
