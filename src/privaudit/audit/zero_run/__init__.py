"""Zero-Run auditing: DP lower bounds from known members and known non-members under a
distribution shift, corrected with propensity scores ("Privacy Auditing with Zero (0)
Training Run", 2026; shared/notes/audit-math.md section 5).
"""

from __future__ import annotations

from privaudit.audit.zero_run.global_correction import (
    eps_bar_ds,
    global_eps_lb,
    global_gdp_mu_lb,
    mu_bar_ds,
    overlap_eta,
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
    "ConditionalBound",
    "conditional_eps_audit",
    "conditional_gdp_audit",
    "draw_uniforms",
    "eps_bar_ds",
    "eps_ds",
    "eps_retention",
    "gdp_retention",
    "global_eps_lb",
    "global_gdp_mu_lb",
    "mu_bar_ds",
    "overlap_eta",
    "propensity_aware_guesses",
    "propensity_model_test",
]
