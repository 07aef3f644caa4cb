"""The sections of a membership audit's ``results.json`` that describe what ran:
``settings`` (:func:`audit_settings`, :func:`executor_settings`), ``game``
(:func:`game_section`: the game, its trials) and ``target`` (:func:`target_summary`,
:func:`target_entry`: accuracies, origin, a DP-SGD target's accountant epsilon, a provided
target's fingerprints, :func:`split_fingerprint`). :func:`privaudit.membership.pipeline.run_audit`
composes them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from privaudit.data import Dataset
from privaudit.membership.config import GAME_NAMES, AuditConfig
from privaudit.membership.experiment import ExperimentResult
from privaudit.membership.games import GameResult
from privaudit.membership.inputs import GivenInputs
from privaudit.metrics.roc import AttackMetrics, auc
from privaudit.models import SklearnTrainer
from privaudit.models.provided import ProvidedTarget
from privaudit.models.torch_models import TorchTrainer
from privaudit.runtime.executor import Executor, LocalExecutor, RayExecutor

__all__ = [
    "audit_settings",
    "executor_settings",
    "game_id",
    "game_section",
    "split_fingerprint",
    "target_entry",
    "target_summary",
]


def game_section(
    exp: ExperimentResult, game_result: GameResult | None, metrics: Mapping[str, Any]
) -> dict[str, Any]:
    """results.json's ``game`` section (with the trials of a game)."""
    game_doc = exp.game.to_dict() if game_result is None else game_result.game.to_dict()
    game_doc["id"] = game_id(game_doc["name"])
    if game_result is not None:
        game_doc["fixed_records"] = (
            None if game_result.fixed_records is None else game_result.fixed_records.tolist()
        )
        game_doc["trials"] = _trial_summaries(game_result, metrics)
    return game_doc


def game_id(name: str) -> str:
    return {v: k for k, v in GAME_NAMES.items()}.get(name, name)


def _trial_summaries(
    result: GameResult, metrics: Mapping[str, AttackMetrics]
) -> list[dict[str, Any]]:
    """Per trial: seeds, the target's accuracies, draws, and each attack's AUC on them."""
    out = []
    for t, res in enumerate(result.trials):
        per_attack: dict[str, Any] = {}
        for name, smp in result.samples.items():
            sel = smp.trial == t
            m = smp.member[sel]
            per_attack[name] = {
                "n_draws": int(sel.sum()),
                "n_member_draws": int(m.sum()),
                "auc": float(auc(smp.scores[sel], m)) if m.any() and (~m).any() else None,
            }
        out.append(
            {
                "trial": t,
                "seeds": {k: int(v) for k, v in res.seeds.items()},
                "train_accuracy": res.train_accuracy,
                "test_accuracy": res.test_accuracy,
                "attacks": per_attack,
            }
        )
    return out


def target_summary(
    exp: ExperimentResult, game: GameResult | None, member: np.ndarray
) -> dict[str, Any]:
    """The target; over several trials: mean accuracies, and draws counted as members/non-members."""
    if game is None or len(game.trials) == 1:
        return {
            "train_accuracy": exp.train_accuracy,
            "test_accuracy": exp.test_accuracy,
            "n_members": int(exp.membership.sum()),
            "n_non_members": int((~exp.membership).sum()),
        }
    return {
        "train_accuracy": float(np.mean([t.train_accuracy for t in game.trials])),
        "test_accuracy": float(np.mean([t.test_accuracy for t in game.trials])),
        "n_members": int(member.sum()),
        "n_non_members": int((~member).sum()),
        "n_trials": len(game.trials),
        "counts": "draws of the game over all trials; accuracies are means over the trial targets",
    }


def target_entry(
    summary: dict[str, Any],
    exp: ExperimentResult,
    provided: ProvidedTarget | None,
    split_check: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """``results.json["target"]``: the summary with accuracies None when unknown and the
    origin; for a DP-SGD target the accountant's epsilon and delta; for a provided target
    its description, whether its split was declared random (and the check of that
    declaration, :mod:`privaudit.membership.split_check`), the SHA-256 of its file and of
    its split (sorted member and non-member ids), and the recipe check."""
    out = dict(summary)
    for k in ("train_accuracy", "test_accuracy"):
        v = out.get(k)
        if v is not None and np.isnan(v):
            out[k] = None
    out["origin"] = exp.target_origin
    if "accountant_epsilon" in exp.target_info:
        # a DP-SGD target: the accountant's (upper-bound) epsilon at its delta, to be read
        # beside every empirical lower bound
        out["accountant_epsilon"] = float(exp.target_info["accountant_epsilon"])
        out["delta"] = float(exp.target_info["delta"])
    if provided is not None:
        out.update(provided.description)
        out["randomised_split"] = provided.randomised_split
        if split_check is not None:
            out["split_check"] = dict(split_check)
        out["model_sha256"] = provided.fingerprint
        out["split_sha256"] = split_fingerprint(exp.record_ids, exp.membership)
        out["n_population"] = int(exp.population_ids.size)
        if exp.recipe_check is not None:
            out["recipe_check"] = dict(exp.recipe_check)
    return out


def split_fingerprint(record_ids: np.ndarray, membership: np.ndarray) -> str:
    """SHA-256 of the split: sorted member ids, then sorted non-member ids, one per line."""
    import hashlib

    lines = ["members", *sorted(map(str, record_ids[membership].tolist()))]
    lines += ["non_members", *sorted(map(str, record_ids[~membership].tolist()))]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def audit_settings(
    config: AuditConfig,
    exp: ExperimentResult,
    dataset: Dataset,
    trainer: SklearnTrainer | TorchTrainer,
    game: GameResult | None = None,
    *,
    given: GivenInputs | None = None,
) -> dict[str, Any]:
    """``results.json["settings"]``: what ran (game, data, model, attacks, sizes, models,
    seeds); the data's description and the model kind from ``given`` when the audit's
    data and recipe were given in code."""
    ec = exp.config
    if given is not None:
        data_doc, kind = dict(given.dataset_description), given.model_kind
    else:
        data_doc, kind = config.dataset_section().describe(), config.model_section().kind
    trials = [exp] if game is None else list(game.trials)
    trained: dict[str, int] = {}
    loaded: dict[str, int] = {}
    for t in trials:
        for k, v in t.models_trained.items():
            trained[k] = trained.get(k, 0) + int(v)
        for k, v in t.models_loaded.items():
            loaded[k] = loaded.get(k, 0) + int(v)
    return {
        "game": exp.game.name if game is None else game.game.name,
        "game_options": {
            "id": config.game.definition(),
            "n_trials": len(trials),
            "n_fixed_records": config.game.n_fixed_records,
            "fixed_records": config.game.fixed_records,
        },
        "alpha": config.alpha,
        "dataset": {
            **data_doc,
            "n_records": dataset.n_records,
            "n_features": int(dataset.X.shape[1]),
            "n_classes": dataset.n_classes,
            "fingerprint": exp.dataset_fingerprint,
        },
        "model": {"kind": kind, **_jsonable(trainer.settings())},
        "attacks": list(ec.attacks),
        "attack_params": {k: dict(v) for k, v in ec.attack_params.items()},
        "sizes": {"n_target_pool": ec.n_target_pool, "n_population": ec.n_population},
        "models": {
            "n_reference": ec.n_reference,
            "n_shadow": ec.n_shadow,
            "n_distilled": ec.n_distilled,
            "distill_size": ec.distill_size,
            "n_leave_one_out": ec.n_leave_one_out,
            "leave_one_out_sample": ec.leave_one_out_sample,
        },
        "models_trained": trained,
        "models_loaded": loaded,
        "seeds": {"root": config.seed, **{k: int(v) for k, v in exp.seeds.items()}},
        "n_jobs": config.n_jobs,
        "cache_dir": None if config.cache_dir is None else str(config.cache_dir),
    }


def executor_settings(config: AuditConfig, executor: Executor) -> dict[str, Any]:
    """What ran the models, for ``results.json``: the executor that actually ran tasks.

    ``"ray"`` only when tasks ran on Ray (an audit whose attacks need no attacker models
    trains the target in this process and never starts Ray: it is recorded as local).
    """
    out: dict[str, Any] = {"executor_requested": config.executor}
    if isinstance(executor, RayExecutor) and executor.tasks_run > 0:
        out["executor"] = "ray"
        out["ray_address"] = executor.address or "local Ray instance started by privaudit"
    else:
        out["executor"] = "local"
        if isinstance(executor, LocalExecutor):
            out["threads_per_worker"] = executor.threads_per_worker
    return out


def _jsonable(d: Mapping[str, Any]) -> dict[str, Any]:
    import json

    return dict(json.loads(json.dumps(d, default=str)))
