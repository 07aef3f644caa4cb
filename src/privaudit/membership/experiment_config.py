"""From an :class:`~privaudit.membership.config.AuditConfig` to the experiment it runs.

:func:`demo_config` is the configuration of ``privaudit demo``; :func:`experiment_config`
the :class:`~privaudit.membership.experiment.ExperimentConfig` of an audit config (step 4 of
:func:`privaudit.membership.pipeline.run_audit`); :func:`n_models_behind` how many attacker models an
attack learned from (reported beside each attack).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from privaudit.errors import InvalidInputError
from privaudit.membership.config import AuditConfig, config_from_dict
from privaudit.membership.experiment import ExperimentConfig
from privaudit.models.provided import ProvidedSplit, ProvidedTarget

__all__ = ["demo_config", "experiment_config", "n_models_behind"]

#: Demo sizes (measured on 2 cores, see benchmarks/bench_demo.py): the target pool is
#: large enough for TPR at 0.1% FPR (>= 1,000 non-members), the MLP wide and trained
#: long enough, without weight decay, to fit its ~1,200 training records exactly.
_DEMO: dict[str, Any] = {
    "sizes": {"n_target_pool": 2400, "n_population": 4800},
    "model": {
        "kind": "mlp",
        "params": {"hidden_layer_sizes": [256], "max_iter": 300, "learning_rate_init": 0.002},
    },
    "models": {
        "n_reference": 16,
        "n_shadow": 8,
        "n_distilled": 8,
        "n_leave_one_out": 4,
        "leave_one_out_sample": 10,
    },
    "alpha": 0.05,
    # Every attack with its defaults: LiRA's shrunk variance and clipping and RMIA's
    # offline a are tuned on the reference models (issue 10; the comparison of the
    # variants on this target is in benchmarks/bench_attack_power.py).
}
_DEMO_QUICK: dict[str, Any] = {
    "sizes": {"n_target_pool": 1200, "n_population": 2400},
    "model": {
        "kind": "mlp",
        "params": {"hidden_layer_sizes": [128], "max_iter": 150, "learning_rate_init": 0.003},
    },
    "models": {
        "n_reference": 8,
        "n_shadow": 2,
        "n_distilled": 2,
        "n_leave_one_out": 2,
        "leave_one_out_sample": 10,
    },
    "alpha": 0.05,
}


def demo_config(
    *,
    seed: int = 0,
    n_jobs: int = -1,
    quick: bool = False,
    output_dir: str | Path = "privaudit-demo",
    cache_dir: str | Path | None = None,
) -> AuditConfig:
    """The configuration of ``privaudit demo``.

    UCI Adult; an MLP target (scikit-learn ``MLPClassifier``, one hidden layer, no
    weight decay, no early stopping) that overfits its training set; 16 reference
    models (LiRA, RMIA), 8 shadow models (S, and R's references trained on population
    data), 8 distilled models of each kind (soft-label students for attack
    ``distillation``, Ye et al.'s D; logit-regression students for
    ``distillation-logits``, Ba & Caruana 2014) and 4 leave-one-out models per sampled
    member; every registered attack at alpha = 0.05 with its default settings (LiRA's
    variance shrinkage and clipping and offline RMIA's a tuned on the reference
    models); the alpha thresholds of R, D, L and offline LiRA calibrated on population
    records (:mod:`privaudit.attacks.calibration`). ``quick`` shrinks the pool, the network and the
    numbers of attacker models (for a smoke run; then TPR at 0.1% FPR is not reported,
    since the pool has fewer than 1,000 non-members).
    """
    from privaudit.attacks import attack_names

    base = _DEMO_QUICK if quick else _DEMO
    data: dict[str, Any] = {
        "dataset": "adult",
        # every registered attack, distillation-logits included (the target is an MLP)
        "attacks": list(attack_names()),
        **base,
        "seed": seed,
        "n_jobs": n_jobs,
        "output_dir": str(output_dir),
        "cache_dir": None if cache_dir is None else str(cache_dir),
    }
    return config_from_dict(data, source="demo config")


def _sizes(config: AuditConfig, n_records: int) -> tuple[int, int]:
    pool = config.sizes.n_target_pool
    pop = config.sizes.n_population
    if pool is None:
        pool = min(2400, n_records // 3)
    if pop is None:
        pop = min(4800, n_records - pool)
    if pool + pop > n_records:
        raise InvalidInputError(
            f"sizes: expected n_target_pool + n_population <= {n_records} (the dataset's records), "
            f"found {pool} + {pop} = {pool + pop}"
        )
    return pool, pop


def experiment_config(
    config: AuditConfig, n_records: int, provided: ProvidedTarget | ProvidedSplit | None = None
) -> ExperimentConfig:
    """The :class:`ExperimentConfig` of an audit config on a dataset of ``n_records`` records
    (with a provided target, or its split alone: its audited set and population sizes)."""
    if provided is None:
        pool, pop = _sizes(config, n_records)
    else:
        pool = provided.audited_ids.size
        pop = n_records - pool if provided.population_ids is None else provided.population_ids.size
    m = config.models
    try:
        return ExperimentConfig(
            attacks=config.attack_names(),
            n_target_pool=pool,
            n_population=pop,
            n_reference=m.n_reference,
            n_shadow=m.n_shadow,
            n_distilled=m.n_distilled,
            distill_size=m.distill_size,
            n_leave_one_out=m.n_leave_one_out,
            leave_one_out_sample=m.leave_one_out_sample,
            alpha=config.alpha,
            seed=config.seed,
            n_jobs=config.n_jobs,
            attack_params=config.attack_params,
            # the target's loss for the vulnerable-record analysis (Ye et al. Fig. 5)
            signals=("loss",),
        )
    except InvalidInputError as exc:
        raise InvalidInputError(f"audit config: {exc}") from None


def n_models_behind(attack: str, config: ExperimentConfig) -> int:
    """How many attacker models the attack learned from (0: it uses the target only).

    Reference models for LiRA and RMIA; shadow models for S and R (R's reference
    models are trained on population data, as the shadow models); distilled for D; the
    leave-one-out models per record for L; 0 for the loss and population attacks.
    """
    from privaudit.attacks import required_inputs

    fields = set(required_inputs(attack).fields)
    if "reference" in fields:
        return config.n_reference
    if "shadow" in fields or "outside_reference" in fields:
        return config.n_shadow
    if "distilled" in fields or "distilled_logits" in fields:
        return config.n_distilled
    if "leave_one_out" in fields:
        return config.n_leave_one_out
    return 0
