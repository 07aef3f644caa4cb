"""Membership-inference attacks over signal tables; every score is "higher = member".

The input contract, the registry and :func:`run_attack` live in
:mod:`privaudit.attacks.base` (read its module docstring for which signal tables each
attack needs); threshold smoothing (Ye et al. 2022, App. B.3) in
:mod:`privaudit.attacks.thresholds`.
"""

from privaudit.attacks import (  # noqa: F401  (fill the registry)
    bavaria,
    informia,
    lira,
    per_record_attacks,
    rmia,
    threshold_attacks,
)
from privaudit.attacks.base import (
    ATTACKS,
    SIGNAL_NAMES,
    AttackData,
    AttackSpec,
    InputRequirements,
    attack_names,
    default_attacks,
    register,
    required_inputs,
    run_attack,
)

__all__ = [
    "ATTACKS",
    "SIGNAL_NAMES",
    "AttackData",
    "AttackSpec",
    "InputRequirements",
    "attack_names",
    "default_attacks",
    "register",
    "required_inputs",
    "run_attack",
]
