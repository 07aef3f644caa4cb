"""privaudit: audit how much a trained model leaks about its training records.

The public API is what this package exports (``__all__``, ``from privaudit import ...``);
modules and names not exported here (``privaudit.membership.pipeline``,
``privaudit.stats.one_run``, ...) are internal and may change without notice.

Audit a scikit-learn model trained outside privaudit::

    import privaudit
    result = privaudit.audit_model(model, X, y, members=train_rows, non_members=test_rows,
                                   attacks=["population", "lira-online", "rmia-online"])
    print(result)                                  # the summary `privaudit run` prints
    best = result.strongest_attack()
    print(best.name, best.auc, best.tpr(0.01))     # AUC and TPR at 1% FPR
    result.save("my-audit")                        # results.json, scores.npz, report.html, bundle.json

The exported names, by what they are:

* **Membership inference** (Ye et al. 2022; LiRA, RMIA): :func:`audit_model` (a model
  trained outside privaudit, from Python), :func:`run_audit` with :class:`AuditConfig` /
  :func:`load_config` / :func:`demo_config` (``privaudit run`` / ``demo``), the result
  :class:`AuditReport`; :func:`attack_names`, :func:`default_attacks`.
* **PANORAMIA** (Kazmi et al. 2024): :func:`run_panoramia_audit`, :class:`PanoramiaConfig`,
  :func:`load_panoramia_config`, :class:`PanoramiaReport`.
* **Record-level risk** (Krco et al. 2025): :func:`run_record_risk`,
  :class:`RecordRiskConfig`, :class:`RecordRiskResult`, :func:`make_generator`.
* **Zero-Run** (2026): :func:`zero_run_audit`, :class:`ZeroRunResult`,
  ``DEFAULT_ESTIMATORS`` (the propensity estimators of its headline by default).
* **Canaries** (one-run audit of a DP claim; Steinke et al. 2023): :func:`make_input_canaries`,
  :func:`make_gradient_canaries`, :func:`make_text_canaries`, :func:`rare_token_symbols`, :func:`quiet_coordinates`,
  :func:`sample_text_canaries`, :class:`CanarySampling`, :func:`draw_coins`, :class:`CanarySet`, :class:`CanaryCoins`, :func:`load_canary_set`, :func:`load_coins`;
  insertion: :func:`append_canaries`, :func:`canary_records`, :func:`canary_texts`,
  :class:`GradientCanaryInjector`, :class:`IterateLog`, :func:`train_dp_sgd_with_canaries`,
  :func:`train_recipe_with_gradient_canaries`, :class:`RecipeCanaryRun`;
  scores and bounds: :func:`input_canary_scores`, :func:`gradient_canary_scores`,
  :func:`text_canary_scores`, :class:`TextCanaryScores`, :func:`audit_canaries`,
  :class:`CanaryAuditResult`; the ideal audit of a DP-SGD setting (best bound, guesses
  fixed in advance): :func:`ideal_canary_audit`, :class:`IdealCanaryAudit`.
* **Language models**: :func:`run_llm_audit`, :class:`LLMAuditConfig`,
  :func:`load_llm_config`, :class:`LLMAuditReport`; the building blocks of the example:
  :func:`shakespeare_split`, :func:`audited_records`, :func:`finetuned_model_dir`,
  :func:`tiny_gpt`, :func:`smollm2_gguf`, :class:`FineTuneRecipe`.
* **Results**: :class:`AuditResults` (a ``results.json`` read back), the typed figures
  :class:`AttackFigures`, :class:`TargetFigures`, :class:`BoundFigures`;
  :func:`verify_bundle` (``privaudit verify``), :class:`VerifyReport`;
  :func:`log_to_mlflow`, :func:`model_card`, :func:`write_model_card`.
* **Targets**: :class:`SklearnModel` / :class:`SklearnTrainer`, :class:`TorchModel` /
  :class:`TorchTrainer` / :class:`TorchRecipe`, :class:`CausalLM` (Hugging Face causal LM),
  :class:`PrecomputedModel` / :func:`load_precomputed`, :func:`load_model` /
  :func:`save_model` (skops, never pickle).
* **Data**: :class:`Dataset`, :func:`load_adult`, :func:`load_digits`, :func:`load_mnist`,
  :func:`load_cifar10`, :func:`load_table`; texts: :class:`TextRecords`, :func:`read_text_records`,
  :func:`write_text_records`, :func:`load_tiny_shakespeare`.
* **Signals and metrics**: :func:`cross_entropy_loss`, :func:`auc`,
  :func:`calibrated_tpr_at_fpr` / :class:`CalibratedTpr` (pooled vs per-record calibrated
  TPR at a FPR, Jälkö et al. 2026).
* **DP statistics**, plain functions on arrays: one-run (:func:`one_run_audit`,
  :func:`eps_lb_one_run`; Steinke et al. 2023), f-DP / mu-GDP (:func:`fdp_one_run_audit`,
  :func:`gdp_mu_lb_one_run`, :func:`fdp_eps_lb_one_run`, :func:`mu_to_epsilon`; Mahloujifar
  et al. 2024), multi-run (:func:`multi_run_audit`, :func:`multi_run_eps_lb`,
  :func:`multi_run_mu_lb`), parametric (:func:`parametric_one_run`,
  :func:`plan_one_run_audit`), PANORAMIA (:func:`panoramia_audit`), Zero-Run
  (:func:`zero_run_bounds`, :func:`global_eps_lb`, :func:`global_gdp_mu_lb`,
  :func:`conditional_eps_audit`, :func:`conditional_gdp_audit`, :func:`draw_uniforms`),
  per attack (:func:`attack_one_run_bounds`), by name (:func:`run_procedure`); each
  returns an :class:`AuditResult` stating its guarantee.
* **Running at scale**: :func:`make_executor` (the executor of a command's ``executor`` /
  ``ray_address`` / ``n_jobs`` setting: local processes or Ray), :class:`LocalRayCluster`
  (a real multi-node Ray cluster on this machine's loopback address, to try or test one).
* **Errors**: :class:`PrivauditError`, :class:`InvalidInputError`, :class:`ConfigError`,
  :class:`ReportExistsError`. **Command line**: :func:`main` (``privaudit ARGS``, from Python).

Every name is imported on first use: ``import privaudit`` (which the command line does at
start-up) imports neither NumPy nor pandas nor scikit-learn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from privaudit._lazy import lazy_exports
from privaudit._version import __version__

if TYPE_CHECKING:  # what a type checker sees; at run time each name is imported on first use
    from privaudit.attacks import attack_names, default_attacks
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
    from privaudit.cli import main
    from privaudit.cli.verification import verify_bundle
    from privaudit.config.base import ConfigError
    from privaudit.data.adult import load_adult
    from privaudit.data.cifar10 import load_cifar10
    from privaudit.data.dataset import Dataset
    from privaudit.data.mnist import load_mnist
    from privaudit.data.tables import load_digits, load_table
    from privaudit.data.text import (
        TextRecords,
        load_tiny_shakespeare,
        read_text_records,
        write_text_records,
    )
    from privaudit.errors import InvalidInputError, PrivauditError
    from privaudit.generators import make_generator
    from privaudit.llm.audit import audited_records, finetuned_model_dir, shakespeare_split
    from privaudit.llm.config import LLMAuditConfig, load_llm_config
    from privaudit.llm.pipeline import LLMAuditReport, run_llm_audit
    from privaudit.membership.config import AuditConfig, load_config
    from privaudit.membership.experiment_config import demo_config
    from privaudit.membership.own_model import audit_model
    from privaudit.membership.pipeline import run_audit
    from privaudit.membership.result import AuditReport
    from privaudit.metrics.calibrated import CalibratedTpr, calibrated_tpr_at_fpr
    from privaudit.metrics.roc import auc
    from privaudit.models.causal_lm import CausalLM
    from privaudit.models.lm_builders import smollm2_gguf, tiny_gpt
    from privaudit.models.lm_finetune import FineTuneRecipe
    from privaudit.models.persistence import load_model, save_model
    from privaudit.models.precomputed import PrecomputedModel, load_precomputed
    from privaudit.models.sklearn import SklearnModel, SklearnTrainer
    from privaudit.models.torch_models import TorchModel, TorchRecipe, TorchTrainer
    from privaudit.panoramia.config import PanoramiaConfig, load_panoramia_config
    from privaudit.panoramia.pipeline import run_panoramia_audit
    from privaudit.panoramia.result import PanoramiaReport
    from privaudit.record_risk.risk import RecordRiskConfig, RecordRiskResult, run_record_risk
    from privaudit.records import AuditResult
    from privaudit.report.bundle import VerifyReport
    from privaudit.report.figures import AttackFigures, AuditResults, BoundFigures, TargetFigures
    from privaudit.report.mlflow_run import log_to_mlflow
    from privaudit.report.model_card import model_card, write_model_card
    from privaudit.report.writer import ReportExistsError
    from privaudit.runtime.executor_setting import make_executor
    from privaudit.runtime.local_cluster import LocalRayCluster
    from privaudit.signals.functions import cross_entropy_loss
    from privaudit.stats import plan_one_run_audit
    from privaudit.stats.attack_bounds import attack_one_run_bounds
    from privaudit.stats.fdp import (
        fdp_eps_lb_one_run,
        fdp_one_run_audit,
        gdp_mu_lb_one_run,
        mu_to_epsilon,
    )
    from privaudit.stats.multi_run import multi_run_audit, multi_run_eps_lb, multi_run_mu_lb
    from privaudit.stats.one_run import eps_lb_one_run, one_run_audit
    from privaudit.stats.panoramia import panoramia_audit
    from privaudit.stats.parametric import parametric_one_run
    from privaudit.stats.procedures import run_procedure
    from privaudit.zero_run.audit import DEFAULT_ESTIMATORS, zero_run_audit
    from privaudit.zero_run.bounds import zero_run_bounds
    from privaudit.zero_run.global_correction import global_eps_lb, global_gdp_mu_lb
    from privaudit.zero_run.result import ZeroRunResult
    from privaudit.zero_run.tampering import (
        conditional_eps_audit,
        conditional_gdp_audit,
        draw_uniforms,
    )

#: Each public name and the module that defines it, grouped as the docstring lists them.
_PUBLIC: dict[str, str] = {
    # membership inference
    "audit_model": "privaudit.membership.own_model",
    "run_audit": "privaudit.membership.pipeline",
    "AuditConfig": "privaudit.membership.config",
    "load_config": "privaudit.membership.config",
    "demo_config": "privaudit.membership.experiment_config",
    "AuditReport": "privaudit.membership.result",
    "attack_names": "privaudit.attacks",
    "default_attacks": "privaudit.attacks",
    # PANORAMIA
    "run_panoramia_audit": "privaudit.panoramia.pipeline",
    "PanoramiaConfig": "privaudit.panoramia.config",
    "load_panoramia_config": "privaudit.panoramia.config",
    "PanoramiaReport": "privaudit.panoramia.result",
    # record-level risk
    "run_record_risk": "privaudit.record_risk.risk",
    "RecordRiskConfig": "privaudit.record_risk.risk",
    "RecordRiskResult": "privaudit.record_risk.risk",
    "make_generator": "privaudit.generators",
    # Zero-Run
    "zero_run_audit": "privaudit.zero_run.audit",
    "ZeroRunResult": "privaudit.zero_run.result",
    "DEFAULT_ESTIMATORS": "privaudit.zero_run.audit",
    # canaries (one-run audit of a DP claim)
    "audit_canaries": "privaudit.canaries.audit",
    "CanaryAuditResult": "privaudit.canaries.result",
    "CanarySet": "privaudit.canaries.sets",
    "CanarySampling": "privaudit.canaries.sets",
    "sample_text_canaries": "privaudit.canaries.text_sampled",
    "RecipeCanaryRun": "privaudit.canaries.recipe_dpsgd",
    "train_recipe_with_gradient_canaries": "privaudit.canaries.recipe_dpsgd",
    "CanaryCoins": "privaudit.canaries.sets",
    "make_input_canaries": "privaudit.canaries.sets",
    "make_gradient_canaries": "privaudit.canaries.sets",
    "make_text_canaries": "privaudit.canaries.text_sets",
    "rare_token_symbols": "privaudit.canaries.text_sets",
    "draw_coins": "privaudit.canaries.sets",
    "load_canary_set": "privaudit.canaries.sets",
    "load_coins": "privaudit.canaries.sets",
    "append_canaries": "privaudit.canaries.insert",
    "canary_records": "privaudit.canaries.insert",
    "canary_texts": "privaudit.canaries.insert",
    "input_canary_scores": "privaudit.canaries.scoring",
    "gradient_canary_scores": "privaudit.canaries.scoring",
    "text_canary_scores": "privaudit.canaries.text_scoring",
    "TextCanaryScores": "privaudit.canaries.text_scoring",
    "GradientCanaryInjector": "privaudit.canaries.opacus_hook",
    "IterateLog": "privaudit.canaries.opacus_hook",
    "quiet_coordinates": "privaudit.canaries.coordinates",
    "train_dp_sgd_with_canaries": "privaudit.canaries.dpsgd",
    "ideal_canary_audit": "privaudit.canaries.ideal",
    "IdealCanaryAudit": "privaudit.canaries.ideal",
    # language models
    "run_llm_audit": "privaudit.llm.pipeline",
    "LLMAuditConfig": "privaudit.llm.config",
    "load_llm_config": "privaudit.llm.config",
    "LLMAuditReport": "privaudit.llm.pipeline",
    "shakespeare_split": "privaudit.llm.audit",
    "audited_records": "privaudit.llm.audit",
    "finetuned_model_dir": "privaudit.llm.audit",
    "tiny_gpt": "privaudit.models.lm_builders",
    "smollm2_gguf": "privaudit.models.lm_builders",
    "FineTuneRecipe": "privaudit.models.lm_finetune",
    # results
    "AuditResults": "privaudit.report.figures",
    "AttackFigures": "privaudit.report.figures",
    "TargetFigures": "privaudit.report.figures",
    "BoundFigures": "privaudit.report.figures",
    "verify_bundle": "privaudit.cli.verification",
    "VerifyReport": "privaudit.report.bundle",
    "log_to_mlflow": "privaudit.report.mlflow_run",
    "model_card": "privaudit.report.model_card",
    "write_model_card": "privaudit.report.model_card",
    # targets
    "SklearnModel": "privaudit.models.sklearn",
    "SklearnTrainer": "privaudit.models.sklearn",
    "TorchModel": "privaudit.models.torch_models",
    "TorchTrainer": "privaudit.models.torch_models",
    "TorchRecipe": "privaudit.models.torch_models",
    "CausalLM": "privaudit.models.causal_lm",
    "PrecomputedModel": "privaudit.models.precomputed",
    "load_precomputed": "privaudit.models.precomputed",
    "load_model": "privaudit.models.persistence",
    "save_model": "privaudit.models.persistence",
    # data
    "Dataset": "privaudit.data.dataset",
    "load_adult": "privaudit.data.adult",
    "load_digits": "privaudit.data.tables",
    "load_mnist": "privaudit.data.mnist",
    "load_cifar10": "privaudit.data.cifar10",
    "load_table": "privaudit.data.tables",
    "TextRecords": "privaudit.data.text",
    "read_text_records": "privaudit.data.text",
    "write_text_records": "privaudit.data.text",
    "load_tiny_shakespeare": "privaudit.data.text",
    # signals and metrics
    "cross_entropy_loss": "privaudit.signals.functions",
    "auc": "privaudit.metrics.roc",
    "calibrated_tpr_at_fpr": "privaudit.metrics.calibrated",
    "CalibratedTpr": "privaudit.metrics.calibrated",
    # DP statistics
    "one_run_audit": "privaudit.stats.one_run",
    "eps_lb_one_run": "privaudit.stats.one_run",
    "fdp_one_run_audit": "privaudit.stats.fdp",
    "gdp_mu_lb_one_run": "privaudit.stats.fdp",
    "fdp_eps_lb_one_run": "privaudit.stats.fdp",
    "mu_to_epsilon": "privaudit.stats.fdp",
    "multi_run_audit": "privaudit.stats.multi_run",
    "multi_run_eps_lb": "privaudit.stats.multi_run",
    "multi_run_mu_lb": "privaudit.stats.multi_run",
    "parametric_one_run": "privaudit.stats.parametric",
    "plan_one_run_audit": "privaudit.stats",
    "panoramia_audit": "privaudit.stats.panoramia",
    "zero_run_bounds": "privaudit.zero_run.bounds",
    "global_eps_lb": "privaudit.zero_run.global_correction",
    "global_gdp_mu_lb": "privaudit.zero_run.global_correction",
    "conditional_eps_audit": "privaudit.zero_run.tampering",
    "conditional_gdp_audit": "privaudit.zero_run.tampering",
    "draw_uniforms": "privaudit.zero_run.tampering",
    "attack_one_run_bounds": "privaudit.stats.attack_bounds",
    "run_procedure": "privaudit.stats.procedures",
    "AuditResult": "privaudit.records",
    # running at scale
    "make_executor": "privaudit.runtime.executor_setting",
    "LocalRayCluster": "privaudit.runtime.local_cluster",
    # errors
    "PrivauditError": "privaudit.errors",
    "InvalidInputError": "privaudit.errors",
    "ConfigError": "privaudit.config.base",
    "ReportExistsError": "privaudit.report.writer",
    # command line
    "main": "privaudit.cli",
}

__getattr__, __dir__ = lazy_exports(__name__, _PUBLIC)

#: Sorted; the same names as ``_PUBLIC`` (and ``__version__``), which groups them.
__all__ = [
    "DEFAULT_ESTIMATORS",
    "AttackFigures",
    "AuditConfig",
    "AuditReport",
    "AuditResult",
    "AuditResults",
    "BoundFigures",
    "CalibratedTpr",
    "CanaryAuditResult",
    "CanaryCoins",
    "CanarySampling",
    "CanarySet",
    "CausalLM",
    "ConfigError",
    "Dataset",
    "FineTuneRecipe",
    "GradientCanaryInjector",
    "IdealCanaryAudit",
    "InvalidInputError",
    "IterateLog",
    "LLMAuditConfig",
    "LLMAuditReport",
    "LocalRayCluster",
    "PanoramiaConfig",
    "PanoramiaReport",
    "PrecomputedModel",
    "PrivauditError",
    "RecipeCanaryRun",
    "RecordRiskConfig",
    "RecordRiskResult",
    "ReportExistsError",
    "SklearnModel",
    "SklearnTrainer",
    "TargetFigures",
    "TextCanaryScores",
    "TextRecords",
    "TorchModel",
    "TorchRecipe",
    "TorchTrainer",
    "VerifyReport",
    "ZeroRunResult",
    "__version__",
    "append_canaries",
    "attack_names",
    "attack_one_run_bounds",
    "auc",
    "audit_canaries",
    "audit_model",
    "audited_records",
    "calibrated_tpr_at_fpr",
    "canary_records",
    "canary_texts",
    "conditional_eps_audit",
    "conditional_gdp_audit",
    "cross_entropy_loss",
    "default_attacks",
    "demo_config",
    "draw_coins",
    "draw_uniforms",
    "eps_lb_one_run",
    "fdp_eps_lb_one_run",
    "fdp_one_run_audit",
    "finetuned_model_dir",
    "gdp_mu_lb_one_run",
    "global_eps_lb",
    "global_gdp_mu_lb",
    "gradient_canary_scores",
    "ideal_canary_audit",
    "input_canary_scores",
    "load_adult",
    "load_canary_set",
    "load_cifar10",
    "load_coins",
    "load_config",
    "load_digits",
    "load_llm_config",
    "load_mnist",
    "load_model",
    "load_panoramia_config",
    "load_precomputed",
    "load_table",
    "load_tiny_shakespeare",
    "log_to_mlflow",
    "main",
    "make_executor",
    "make_generator",
    "make_gradient_canaries",
    "make_input_canaries",
    "make_text_canaries",
    "model_card",
    "mu_to_epsilon",
    "multi_run_audit",
    "multi_run_eps_lb",
    "multi_run_mu_lb",
    "one_run_audit",
    "panoramia_audit",
    "parametric_one_run",
    "plan_one_run_audit",
    "quiet_coordinates",
    "rare_token_symbols",
    "read_text_records",
    "run_audit",
    "run_llm_audit",
    "run_panoramia_audit",
    "run_procedure",
    "run_record_risk",
    "sample_text_canaries",
    "save_model",
    "shakespeare_split",
    "smollm2_gguf",
    "text_canary_scores",
    "tiny_gpt",
    "train_dp_sgd_with_canaries",
    "train_recipe_with_gradient_canaries",
    "verify_bundle",
    "write_model_card",
    "write_text_records",
    "zero_run_audit",
    "zero_run_bounds",
]
