"""Zero-Run auditing: DP lower bounds from known members and known non-members under a
distribution shift, corrected with propensity scores ("Privacy Auditing with Zero (0)
Training Run", 2026; docs/zero_run_validity.md).

Entry point: :func:`zero_run_audit`. Building blocks, bottom up:

* :mod:`.tampering` -- eps_DS, retention probabilities, propensity-aware guesses, the
  pointwise (conditional) mu-GDP and eps-DP bounds, the falsification test;
* :mod:`.global_correction` -- the overlap level and the composition bounds (Cor. 4.4);
* :mod:`.bounds` -- uncorrected / global / pointwise bounds of one attack and one
  propensity vector;
* :mod:`.features` / :mod:`.estimators` / :mod:`.propensity` -- feature validation, the
  six estimator families (+ ``logistic`` and ``logistic-quadratic``), cross-fitting and
  bootstrap fits;
* :mod:`.placebo` -- the placebo check (the pointwise audit of a features-only score);
* :mod:`.null_battery` -- shifts of every kind for the headline's null battery;
* :mod:`.diagnostics` -- calibration and overlap diagnostics with warnings;
* :mod:`.bootstrap` -- the bootstrap over propensity fits (Section 6);
* :mod:`.audit` / :mod:`.result` -- the orchestration and the :class:`ZeroRunResult`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from privaudit._lazy import lazy_exports

if TYPE_CHECKING:  # what a type checker sees; at run time each name is imported on first use
    from privaudit.zero_run.audit import (
        DEFAULT_CHALLENGERS,
        DEFAULT_ESTIMATORS,
        zero_run_audit,
    )
    from privaudit.zero_run.bounds import CORRECTIONS, default_guess_counts, zero_run_bounds
    from privaudit.zero_run.diagnostics import propensity_diagnostics
    from privaudit.zero_run.global_correction import (
        eps_bar_ds,
        global_eps_lb,
        global_gdp_mu_lb,
        mu_bar_ds,
        overlap_eta,
    )
    from privaudit.zero_run.propensity import (
        ESTIMATORS,
        cross_fit_propensity,
        make_propensity_model,
        prepare_features,
    )
    from privaudit.zero_run.result import ZeroRunResult
    from privaudit.zero_run.simulate import (
        figure2_checks,
        gaussian_shift_experiment,
        summarize_shift_experiment,
    )
    from privaudit.zero_run.tampering import (
        ConditionalBound,
        conditional_eps_audit,
        conditional_gdp_audit,
        draw_uniforms,
        eps_ds,
        eps_retention,
        gdp_retention,
        propensity_aware_guesses,
        propensity_model_test,
    )

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "DEFAULT_CHALLENGERS": "privaudit.zero_run.audit",
        "DEFAULT_ESTIMATORS": "privaudit.zero_run.audit",
        "zero_run_audit": "privaudit.zero_run.audit",
        "CORRECTIONS": "privaudit.zero_run.bounds",
        "default_guess_counts": "privaudit.zero_run.bounds",
        "zero_run_bounds": "privaudit.zero_run.bounds",
        "propensity_diagnostics": "privaudit.zero_run.diagnostics",
        "eps_bar_ds": "privaudit.zero_run.global_correction",
        "global_eps_lb": "privaudit.zero_run.global_correction",
        "global_gdp_mu_lb": "privaudit.zero_run.global_correction",
        "mu_bar_ds": "privaudit.zero_run.global_correction",
        "overlap_eta": "privaudit.zero_run.global_correction",
        "ESTIMATORS": "privaudit.zero_run.propensity",
        "cross_fit_propensity": "privaudit.zero_run.propensity",
        "make_propensity_model": "privaudit.zero_run.propensity",
        "prepare_features": "privaudit.zero_run.propensity",
        "ZeroRunResult": "privaudit.zero_run.result",
        "figure2_checks": "privaudit.zero_run.simulate",
        "gaussian_shift_experiment": "privaudit.zero_run.simulate",
        "summarize_shift_experiment": "privaudit.zero_run.simulate",
        "ConditionalBound": "privaudit.zero_run.tampering",
        "conditional_eps_audit": "privaudit.zero_run.tampering",
        "conditional_gdp_audit": "privaudit.zero_run.tampering",
        "draw_uniforms": "privaudit.zero_run.tampering",
        "eps_ds": "privaudit.zero_run.tampering",
        "eps_retention": "privaudit.zero_run.tampering",
        "gdp_retention": "privaudit.zero_run.tampering",
        "propensity_aware_guesses": "privaudit.zero_run.tampering",
        "propensity_model_test": "privaudit.zero_run.tampering",
    },
)

__all__ = [
    "CORRECTIONS",
    "DEFAULT_CHALLENGERS",
    "DEFAULT_ESTIMATORS",
    "ESTIMATORS",
    "ConditionalBound",
    "ZeroRunResult",
    "conditional_eps_audit",
    "conditional_gdp_audit",
    "cross_fit_propensity",
    "default_guess_counts",
    "draw_uniforms",
    "eps_bar_ds",
    "eps_ds",
    "eps_retention",
    "figure2_checks",
    "gaussian_shift_experiment",
    "gdp_retention",
    "global_eps_lb",
    "global_gdp_mu_lb",
    "make_propensity_model",
    "mu_bar_ds",
    "overlap_eta",
    "prepare_features",
    "propensity_aware_guesses",
    "propensity_diagnostics",
    "propensity_model_test",
    "summarize_shift_experiment",
    "zero_run_audit",
    "zero_run_bounds",
]
