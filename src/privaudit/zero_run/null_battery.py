r"""The null battery of the Zero-Run headline: shifts of every kind, a mechanism that leaks nothing.

The headline of :func:`.audit.zero_run_audit` must keep its level whatever the difference
between known members and known non-members, not only for the mean shift under which a
logit-linear propensity model is exactly right (:mod:`.null_check`). Each case below draws
``n`` members and ``n`` non-members (``n = 1,500`` per class in the benchmark) whose features
differ in one way; the **null** score is the case's true log-odds ``logit pi(x)`` -- the
strongest features-only attack (Neyman-Pearson), which leaks nothing through any model, so
the truth is ``eps = mu = 0`` and a headline above 0 is a false positive. The **power** score
is a Gaussian ``mu = 1`` release of membership under the same features:
``Y = mu S + N(0, 1)``, attack score the posterior log-odds ``mu Y - mu^2 / 2 + logit
pi_hat_a(x)`` with the first paired estimate *a* of the default ``"logistic"`` family
(the propensity-aware attack of :func:`.null_check.gaussian_power_replicate`), truth
``mu = 1``.

==================  ==============================================================  =======================
case                members vs non-members (features; noise columns N(0, 1))          true logit
==================  ==============================================================  =======================
``mean-<g>``        ``x1 ~ N(+g, 1)`` vs ``N(-g, 1)``; 2 noise columns                ``2 g x1``
``spread-<s>``      ``x1 ~ N(0, s^2)`` vs ``N(0, 1)``; 1 noise column (issue 28)      ``-log s + x1^2 (1 - s^-2) / 2``
``interaction``     ``(x1, x2)`` standard normal with correlation 0.6 vs independent;  a quadratic form
                    1 noise column
``mixture``         20% of members from a sub-population ``N((3, 3), 0.5^2 I)``        log of a mixture ratio
                    present only among them, the rest and every non-member ``N(0, I)``
                    in ``(x1, x2)``; 1 noise column
``categorical``     a category ``c`` in ``a..d`` with frequencies (.4, .3, .2, .1) vs  ``log(p1(c) / p0(c))``
                    (.1, .2, .3, .4); 2 numeric noise columns
==================  ==============================================================  =======================

:func:`draw_case` draws one replicate; :func:`battery_replicate` runs the real audit on it
(the defaults of :func:`.audit.zero_run_audit`, every check included) and returns the
headline and each estimator's figures. ``benchmarks/bench_zero_run_null.py --battery`` runs
it over many seeds and prints the table; the tests run a few replicates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from privaudit._validation import check_positive_int, fail

__all__ = ["NULL_CASES", "POWER_CASES", "ShiftCase", "battery_replicate", "draw_case"]

NULL_CASES = (
    "mean-1",
    "mean-2",
    "spread-1.3",
    "spread-1.6",
    "interaction",
    "mixture",
    "categorical",
)
"""The null battery's cases (issue 28: mean, spread 1.3 and 1.6, interaction, mixture,
categorical)."""

POWER_CASES = ("mean-0.3", "spread-1.6", "mixture")
"""The power cases: the mean shift of the earlier power check, and the spread and mixture
shifts (a Gaussian mu = 1 release under those features)."""


@dataclass(frozen=True)
class ShiftCase:
    """One drawn replicate of a case: features, membership, the true log-odds, the coins' rng."""

    features: pd.DataFrame | np.ndarray
    member: np.ndarray
    true_logit: np.ndarray
    rng: np.random.Generator


def _parameter(case: str, prefix: str) -> float:
    try:
        value = float(case[len(prefix) :])
    except ValueError:
        raise fail("case", f"'{prefix}<number>'", case) from None
    if not value > 0.0:
        raise fail("case", f"'{prefix}<number>' with a positive number", case)
    return value


def draw_case(case: str, seed: int, *, n_per_class: int = 1500) -> ShiftCase:
    """Draw one replicate of ``case`` (see the module's table) with ``seed``.

    Members come first (``n_per_class`` of each). Deterministic in ``seed``.
    """
    n = check_positive_int(n_per_class, "n_per_class", minimum=15)
    rng = np.random.default_rng(seed)
    member = np.r_[np.ones(n, bool), np.zeros(n, bool)]
    size = 2 * n
    features: pd.DataFrame | np.ndarray
    if case.startswith("mean-"):
        g = _parameter(case, "mean-")
        x1 = g * np.where(member, 1.0, -1.0) + rng.standard_normal(size)
        features = np.c_[x1, rng.standard_normal((size, 2))]
        logit = 2.0 * g * x1
    elif case.startswith("spread-"):
        sd = _parameter(case, "spread-")
        x1 = np.where(member, sd, 1.0) * rng.standard_normal(size)
        features = np.c_[x1, rng.standard_normal(size)]
        logit = -np.log(sd) + 0.5 * x1**2 * (1.0 - 1.0 / sd**2)
    elif case == "interaction":
        rho = 0.6
        z = rng.standard_normal((size, 2))
        x1 = z[:, 0]
        x2 = np.where(member, rho * z[:, 0] + np.sqrt(1.0 - rho**2) * z[:, 1], z[:, 1])
        features = np.c_[x1, x2, rng.standard_normal(size)]
        q1 = (x1**2 - 2.0 * rho * x1 * x2 + x2**2) / (1.0 - rho**2)
        logit = -0.5 * np.log(1.0 - rho**2) - 0.5 * (q1 - (x1**2 + x2**2))
    elif case == "mixture":
        w, centre, sd = 0.2, np.array([3.0, 3.0]), 0.5
        sub = member & (rng.random(size) < w)
        xy = rng.standard_normal((size, 2))
        xy[sub] = centre + sd * rng.standard_normal((int(sub.sum()), 2))
        features = np.c_[xy, rng.standard_normal(size)]
        log_p0 = -0.5 * (xy**2).sum(axis=1)
        log_sub = np.log(w) - 2.0 * np.log(sd) - 0.5 * (((xy - centre) / sd) ** 2).sum(axis=1)
        logit = np.logaddexp(np.log(1.0 - w) + log_p0, log_sub) - log_p0
    elif case == "categorical":
        levels = np.array(list("abcd"))
        p1, p0 = np.array([0.4, 0.3, 0.2, 0.1]), np.array([0.1, 0.2, 0.3, 0.4])
        k = np.where(member, rng.choice(4, size, p=p1), rng.choice(4, size, p=p0))
        features = pd.DataFrame(
            {"c": levels[k], "x1": rng.standard_normal(size), "x2": rng.standard_normal(size)}
        )
        logit = np.log(p1[k] / p0[k])
    else:
        raise fail("case", "mean-<g>, spread-<s>, interaction, mixture or categorical", repr(case))
    return ShiftCase(features, member, np.asarray(logit, dtype=np.float64), rng)


def battery_replicate(
    case: str,
    seed: int,
    *,
    power_mu: float | None = None,
    n_per_class: int = 1500,
    beta: float = 0.05,
    **audit_kw: Any,
) -> dict[str, Any]:
    """One replicate of the battery: the audit's headline on a drawn case.

    ``power_mu=None`` audits the null score (the true log-odds; truth 0); a number audits
    the Gaussian release of that ``mu`` (truth ``mu``). ``audit_kw`` go to
    :func:`.audit.zero_run_audit` (default: its defaults, every check on).

    Returns
    -------
    dict
        ``{"case", "seed", "power_mu", "eps", "mu", "refused", "estimator",
        "falsified", "placebo_failed", "<estimator>:eps", "<estimator>:mu", ...}``.
    """
    from privaudit.runtime.seeds import derive_seed
    from privaudit.zero_run.audit import zero_run_audit
    from privaudit.zero_run.propensity import cross_fit_propensity_pair

    drawn = draw_case(case, seed, n_per_class=n_per_class)
    member = drawn.member
    if power_mu is None:
        scores = drawn.true_logit
    else:
        y = power_mu * member + drawn.rng.standard_normal(member.size)
        # the audit's own "logistic" fit (same seed): the attack reads estimate a only
        fit = cross_fit_propensity_pair(
            drawn.features,
            member,
            estimator="logistic",
            seed=derive_seed(seed, purpose="zero-run-propensity"),
        )
        scores = power_mu * y - power_mu**2 / 2.0 + np.clip(fit.logit_a, -50.0, 50.0)
    res = zero_run_audit(scores, member, features=drawn.features, seed=seed, beta=beta, **audit_kw)
    h = res.headline
    out: dict[str, Any] = {
        "case": case,
        "seed": seed,
        "power_mu": power_mu,
        "eps": float(h["epsilon_lower_bound"]),
        "mu": float(h["mu_lower_bound"]),
        "refused": bool(h["refused"]),
        "estimator": h["estimator"],
        "falsified": list(h["falsified_estimators"]),
        "placebo_failed": list(h["placebo_failed_estimators"]),
    }
    for e in res.estimators:
        out[f"{e['name']}:eps"] = float(e["pointwise"]["epsilon_lower_bound"] or 0.0)
        out[f"{e['name']}:mu"] = float(e["pointwise"]["mu_lower_bound"] or 0.0)
    return out
