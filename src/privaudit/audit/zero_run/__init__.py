"""Zero-Run auditing: DP lower bounds from known members and known non-members under a
distribution shift, corrected with propensity scores ("Privacy Auditing with Zero (0)
Training Run", 2026; shared/notes/audit-math.md section 5).

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

from privaudit.audit.zero_run.audit import (
    DEFAULT_CHALLENGERS,
    DEFAULT_ESTIMATORS,
    zero_run_audit,
)
from privaudit.audit.zero_run.bounds import CORRECTIONS, default_guess_counts, zero_run_bounds
from privaudit.audit.zero_run.diagnostics import propensity_diagnostics
from privaudit.audit.zero_run.global_correction import (
    eps_bar_ds,
    global_eps_lb,
    global_gdp_mu_lb,
    mu_bar_ds,
    overlap_eta,
)
from privaudit.audit.zero_run.propensity import (
    ESTIMATORS,
    cross_fit_propensity,
    make_propensity_model,
    prepare_features,
)
from privaudit.audit.zero_run.result import ZeroRunResult
from privaudit.audit.zero_run.simulate import (
    figure2_checks,
    gaussian_shift_experiment,
    summarize_shift_experiment,
)
from privaudit.audit.zero_run.tampering import (
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
