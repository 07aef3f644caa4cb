"""Inference games (Ye et al. 2022, Def. 3.1-3.4) as runnable experiments, and metrics.

* :mod:`~privaudit.games.experiment` -- :func:`run_experiment`: train the target and the
  attacker's models (through the executor and the artifact store), compute signals,
  run the attacks;
* :mod:`~privaudit.games.games` -- :func:`run_game`: the four games, recording what
  was fixed and what was resampled;
* :mod:`~privaudit.games.metrics` -- ROC, AUC, TPR at FPR, achieved FPR, agreement.
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

__all__ = [
    "DEFAULT_ATTACKS",
    "GAMES",
    "ExperimentConfig",
    "ExperimentResult",
    "GameDescription",
    "GameResult",
    "GameSamples",
    "achieved_fpr",
    "agreement_matrix",
    "attack_metrics",
    "auc",
    "describe_game",
    "fpr_at_tpr",
    "roc_curve",
    "run_experiment",
    "run_game",
    "target_pool_ids",
    "tpr_at_fpr",
]
