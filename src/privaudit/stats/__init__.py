"""The DP statistics: differential-privacy lower bounds from membership guesses, as plain
functions on arrays (a foundation every audit procedure uses; NumPy and SciPy only).

Procedures:

* :func:`multi_run_audit` / :func:`multi_run_eps_lb` / :func:`multi_run_mu_lb` -- one
  score per training run (Jagielski, Ullman, Oprea 2020; Nasr et al. 2021, 2023);
* :func:`one_run_audit` / :func:`eps_lb_one_run` -- one training run with many
  canaries (Steinke, Nasr, Jagielski 2023);
* :func:`fdp_one_run_audit` / :func:`gdp_mu_lb_one_run` -- the f-DP / mu-GDP one-run
  audit (Mahloujifar, Melis, Chaudhuri 2024);
* :func:`panoramia_audit` -- c_lb, {c+eps}_lb and eps_tilde (Kazmi et al. 2024);
* :func:`parametric_one_run` -- an **assumption-based** estimate (valid only inside a
  parametric family, after Xiang et al. 2025), reported beside the bounds above, and
  :func:`plan_one_run_audit`, a power analysis that fixes the guess counts in advance.

Every procedure takes the failure probability ``beta`` exactly (``confidence = 1 - beta``
is a convenience that loses digits at tiny ``beta``).

Every ``*_audit`` function returns a :class:`privaudit.records.AuditResult` stating
the procedure, confidence, delta, the counts behind the bound and how thresholds or
guess counts were chosen. Numerical shortcuts round bounds down, never up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from privaudit._lazy import lazy_exports

if TYPE_CHECKING:  # what a type checker sees; at run time each name is imported on first use
    # (SciPy's stats and optimize cost ~0.8 s to import: a command that fails on its
    # input before any bound is computed does not pay it)
    from privaudit.stats._tails import (
        binom_log_sf,
        clopper_pearson_lower,
        clopper_pearson_upper,
        eps_to_gdp_mu,
        gdp_delta,
        gdp_epsilon,
        log_q,
    )
    from privaudit.stats.audit_plan import AuditPlan, plan_one_run_audit
    from privaudit.stats.fdp import (
        eps_delta_fbar_inverse,
        fdp_eps_lb_one_run,
        fdp_one_run_audit,
        fdp_p_value,
        fdp_rejects,
        gdp_fbar_inverse,
        gdp_mu_lb_one_run,
        mu_to_epsilon,
    )
    from privaudit.stats.multi_run import (
        multi_run_audit,
        multi_run_eps_lb,
        multi_run_mu_lb,
    )
    from privaudit.stats.one_run import eps_lb_one_run, one_run_audit, one_run_log_p_value
    from privaudit.stats.panoramia import (
        panoramia_audit,
        panoramia_curve,
        panoramia_hoeffding_lb,
        panoramia_lb,
    )
    from privaudit.stats.parametric import (
        PARAMETRIC_FAMILIES,
        ParametricEstimate,
        parametric_one_run,
    )
    from privaudit.stats.procedures import PROCEDURES, run_procedure
    from privaudit.stats.selection import (
        GuessCounts,
        default_candidates,
        make_guesses,
    )

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "binom_log_sf": "privaudit.stats._tails",
        "clopper_pearson_lower": "privaudit.stats._tails",
        "clopper_pearson_upper": "privaudit.stats._tails",
        "eps_to_gdp_mu": "privaudit.stats._tails",
        "gdp_delta": "privaudit.stats._tails",
        "gdp_epsilon": "privaudit.stats._tails",
        "log_q": "privaudit.stats._tails",
        "AuditPlan": "privaudit.stats.audit_plan",
        "plan_one_run_audit": "privaudit.stats.audit_plan",
        "eps_delta_fbar_inverse": "privaudit.stats.fdp",
        "fdp_eps_lb_one_run": "privaudit.stats.fdp",
        "fdp_one_run_audit": "privaudit.stats.fdp",
        "fdp_p_value": "privaudit.stats.fdp",
        "fdp_rejects": "privaudit.stats.fdp",
        "gdp_fbar_inverse": "privaudit.stats.fdp",
        "gdp_mu_lb_one_run": "privaudit.stats.fdp",
        "mu_to_epsilon": "privaudit.stats.fdp",
        "multi_run_audit": "privaudit.stats.multi_run",
        "multi_run_eps_lb": "privaudit.stats.multi_run",
        "multi_run_mu_lb": "privaudit.stats.multi_run",
        "eps_lb_one_run": "privaudit.stats.one_run",
        "one_run_audit": "privaudit.stats.one_run",
        "one_run_log_p_value": "privaudit.stats.one_run",
        "panoramia_audit": "privaudit.stats.panoramia",
        "panoramia_curve": "privaudit.stats.panoramia",
        "panoramia_hoeffding_lb": "privaudit.stats.panoramia",
        "panoramia_lb": "privaudit.stats.panoramia",
        "PARAMETRIC_FAMILIES": "privaudit.stats.parametric",
        "ParametricEstimate": "privaudit.stats.parametric",
        "parametric_one_run": "privaudit.stats.parametric",
        "PROCEDURES": "privaudit.stats.procedures",
        "run_procedure": "privaudit.stats.procedures",
        "GuessCounts": "privaudit.stats.selection",
        "default_candidates": "privaudit.stats.selection",
        "make_guesses": "privaudit.stats.selection",
    },
)

__all__ = [
    "PARAMETRIC_FAMILIES",
    "PROCEDURES",
    "AuditPlan",
    "GuessCounts",
    "ParametricEstimate",
    "binom_log_sf",
    "clopper_pearson_lower",
    "clopper_pearson_upper",
    "default_candidates",
    "eps_delta_fbar_inverse",
    "eps_lb_one_run",
    "eps_to_gdp_mu",
    "fdp_eps_lb_one_run",
    "fdp_one_run_audit",
    "fdp_p_value",
    "fdp_rejects",
    "gdp_delta",
    "gdp_epsilon",
    "gdp_fbar_inverse",
    "gdp_mu_lb_one_run",
    "log_q",
    "make_guesses",
    "mu_to_epsilon",
    "multi_run_audit",
    "multi_run_eps_lb",
    "multi_run_mu_lb",
    "one_run_audit",
    "one_run_log_p_value",
    "panoramia_audit",
    "panoramia_curve",
    "panoramia_hoeffding_lb",
    "panoramia_lb",
    "parametric_one_run",
    "plan_one_run_audit",
    "run_procedure",
]
