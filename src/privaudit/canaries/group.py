r"""Per-record bounds of a canary audit whose canaries are trained on several times.

A text canary with ``repetitions = k`` enters the training data ``k`` times when its coin
is 1 (:func:`~privaudit.canaries.canary_texts`), so flipping one coin adds or removes
``k`` training records. The one-run audits of the coins (Steinke, Nasr, Jagielski 2023;
Mahloujifar, Melis, Chaudhuri 2024) then test the mechanism's guarantee for a **group** of
``k`` records, and their bounds are group bounds. A per-record claim is audited through
group privacy:

* a ``mu``-GDP mechanism is ``k mu``-GDP for groups of ``k`` records (Dong, Roth, Su 2022,
  Thm. 2.14), so the per-record ``mu`` bound is the group bound divided by ``k``;
* an eps-DP mechanism is ``k eps``-DP for groups of ``k`` (Dwork and Roth 2014,
  Thm. 2.2): with ``delta = 0`` the per-record eps bound is the group bound divided by ``k``;
* an (eps, delta)-DP mechanism is only ``(k eps, delta_k(eps))``-DP for groups, with
  ``delta_k(eps) = delta sum_{i<k} e^{i eps}``
  (:func:`privaudit.stats.multi_run.log_group_delta`): the per-record eps bound is the
  first eps whose group guarantee the test does not reject, at the level of the group
  test (``beta / K`` when the guesses were selected among ``K`` candidates). Dividing the
  group bound by ``k`` would ignore the growth of delta.

Each group test is a valid test of the per-record hypothesis (the hypothesis implies the
group guarantee), so the per-record bounds hold at the group bounds' confidence, and a
selection of the guesses paid for by the union bound stays paid for.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from privaudit.stats._tails import first_rejection_boundary
from privaudit.stats.fdp import (
    eps_delta_fbar_inverse,
    fdp_rejects,
    largest_rejected,
    mu_to_epsilon,
)
from privaudit.stats.multi_run import log_group_delta
from privaudit.stats.one_run import eps_lb_one_run, one_run_log_p_value

if TYPE_CHECKING:
    from privaudit.records import AuditResult

__all__ = ["record_eps_fdp", "record_eps_one_run", "record_level_bounds"]

# The scan step of the one-run p-value where it is not proven monotone, as in
# privaudit.stats.one_run.eps_lb_one_run (there on eps, here on the group's k eps).
_SCAN_STEP = 0.01
_TOL = 1e-10


def _group_delta(eps: float, delta: float, k: int) -> float:
    """``delta_k(eps)``, or ``inf`` where it is not below 1 (a vacuous group guarantee)."""
    log_dk = float(log_group_delta(eps, delta, k))
    return math.exp(log_dk) if log_dk < 0.0 else math.inf


def record_eps_one_run(m: int, r: int, v: int, delta: float, beta: float, k: int) -> float:
    r"""Per-record eps lower bound from Steinke et al.'s test of groups of ``k`` records.

    The largest eps with every smaller value rejected, where eps is rejected when the
    one-run p-value of the group guarantee is at most ``beta``:

    .. math:: p\big(k\varepsilon, \delta_k(\varepsilon)\big) \le \beta, \qquad
        \delta_k(\varepsilon) = \delta \sum_{i<k} e^{i\varepsilon}

    (Steinke, Nasr, Jagielski 2023, Theorem 3.1 and their code listing for ``delta > 0``;
    :func:`~privaudit.stats.one_run.one_run_log_p_value`). ``delta = 0``: the group bound
    divided by ``k``. ``delta > 0``: ``p`` increases with eps and with delta while
    ``2 m delta_k <= 1`` (audit-math.md section 2), so along ``(k eps, delta_k(eps))`` it
    increases too and bisection is valid; beyond, the first non-rejected value is found by
    a scan on a grid of ``0.01 / k``, then bisection, as
    :func:`~privaudit.stats.one_run.eps_lb_one_run` does. Rounded down. ``k = 1`` is
    :func:`~privaudit.stats.one_run.eps_lb_one_run`.
    """
    group = eps_lb_one_run(m, r, v, 0.0, beta)
    if delta == 0.0 or group == 0.0:
        return group / k  # p(., delta) >= p(., 0): nothing rejected at delta = 0, none here
    if k == 1:
        return eps_lb_one_run(m, r, v, delta, beta)
    log_beta = math.log(beta)

    def rejects(e: float) -> bool:
        dk = _group_delta(e, delta, k)
        return dk < 1.0 and one_run_log_p_value(k * e, m, r, v, dk) <= log_beta

    if not rejects(0.0):
        return 0.0
    if math.isinf(group):  # pragma: no cover - needs beta below 2^-r, as in eps_lb_one_run
        group = 1e3
    # p(k eps, delta_k) >= p(k eps, 0): not rejected once k eps passes the pure group bound
    hi = (group + _SCAN_STEP) / k
    while rejects(hi):  # pragma: no cover - defensive; cannot happen by the inequality
        hi *= 2
    if 2.0 * m * _group_delta(hi, delta, k) <= 1.0:
        return first_rejection_boundary(rejects, 0.0, hi, tol=_TOL)
    return _scan_then_bisect(rejects, hi, _SCAN_STEP / k)


def _scan_then_bisect(rejects: Callable[[float], bool], hi: float, step: float) -> float:
    """The first non-rejected grid point below ``hi``, then bisection inside its cell."""
    lo, x = 0.0, step
    while x < hi and rejects(x):
        lo = x
        x += step
    return first_rejection_boundary(rejects, lo, min(x, hi), tol=_TOL)


def record_eps_fdp(m: int, r: int, v: int, delta: float, beta: float, k: int) -> float:
    r"""Per-record eps lower bound from the f-DP one-run test of groups of ``k`` records.

    The largest eps whose group guarantee ``f_{k eps, delta_k(eps)}`` the recursion of
    Mahloujifar, Melis, Chaudhuri (2024) rejects at ``beta``
    (:func:`~privaudit.stats.fdp.fdp_rejects`; audit-math.md section 3). ``fbar^{-1}`` of
    ``f_{eps, delta}`` decreases in eps and in delta, so rejection is monotone along
    ``(k eps, delta_k(eps))`` and bisection is valid. A group guarantee with
    ``delta_k >= 1`` is vacuous and never rejected. With ``delta = 0`` the test is of
    ``f_{k eps, 0}`` and the bound is the group bound divided by ``k`` (up to the bisection's
    rounding; :func:`record_level_bounds` divides).
    """
    if v == 0:
        return 0.0

    def rejects(e: float) -> bool:
        dk = _group_delta(e, delta, k) if delta > 0.0 else 0.0
        return dk < 1.0 and fdp_rejects(m, r, v, eps_delta_fbar_inverse(k * e, dk), beta)

    return largest_rejected(rejects)


def _counts(a: AuditResult) -> tuple[int, int, int, float]:
    c = a.counts
    return int(c["m"]), int(c["r"]), int(c["v"]), float(a.extra["beta_per_test"])


def _note(k: int, delta: float) -> str:
    rule = (
        f"eps and mu are the group bounds divided by {k} (an eps-DP mechanism is {k} eps-DP, "
        f"a mu-GDP one {k} mu-GDP for {k} records; Dong, Roth, Su 2022, Thm. 2.14)"
        if delta == 0.0
        else f"mu is the group bound divided by {k} (Dong, Roth, Su 2022, Thm. 2.14); eps is "
        f"the largest value whose group guarantee (k eps, delta sum_(i<{k}) e^(i eps)) the "
        "test rejects (delta grows with the group, so eps is not just divided)"
    )
    return (
        f"Each included canary was trained on {k} times (repetitions = {k}): the test bounds "
        f"one canary, a group of {k} training records (extra.group_epsilon_lower_bound, "
        "extra.group_mu_lower_bound; extra.candidate_bounds are group bounds too). The "
        f"reported bounds are per training record, by group privacy: {rule}."
    )


def record_level_bounds(
    one: AuditResult, fdp: AuditResult, repetitions: int
) -> tuple[AuditResult, AuditResult]:
    """The one-run and f-DP audits of canaries trained on ``repetitions`` times each, made
    per training record (module docstring). ``repetitions = 1``: both returned unchanged.

    The returned results carry the per-record bounds in ``epsilon_lower_bound`` and
    ``mu_lower_bound`` (and the f-DP audit's ``extra.epsilon_fdp`` and
    ``extra.epsilon_if_gaussian``), the group bounds in ``extra.group_*``, the group size in
    ``extra.group_size`` and a note saying how they were derived.
    """
    k = int(repetitions)
    if k <= 1:
        return one, fdp
    delta = float(one.delta)
    note = _note(k, delta)
    m, r, v, level = _counts(one)
    one_eps = record_eps_one_run(m, r, v, delta, level, k)
    one_rec = dataclasses.replace(
        one,
        epsilon_lower_bound=one_eps,
        extra={
            **one.extra,
            "group_size": k,
            "group_epsilon_lower_bound": one.epsilon_lower_bound,
        },
        notes=(*one.notes, note),
    )
    m, r, v, level = _counts(fdp)
    fdp_eps = (
        fdp.epsilon_lower_bound / k
        if fdp.delta == 0.0
        else record_eps_fdp(m, r, v, float(fdp.delta), level, k)
    )
    group_mu = float(fdp.mu_lower_bound or 0.0)
    mu = group_mu / k
    extra = {
        **fdp.extra,
        "epsilon_fdp": fdp_eps,
        "group_size": k,
        "group_epsilon_lower_bound": fdp.epsilon_lower_bound,
        "group_mu_lower_bound": group_mu,
    }
    if "epsilon_if_gaussian" in fdp.extra:
        extra["group_epsilon_if_gaussian"] = fdp.extra["epsilon_if_gaussian"]
        extra["epsilon_if_gaussian"] = mu_to_epsilon(mu, float(fdp.delta))
    fdp_rec = dataclasses.replace(
        fdp,
        epsilon_lower_bound=fdp_eps,
        mu_lower_bound=mu,
        extra=extra,
        notes=(*fdp.notes, note),
    )
    return one_rec, fdp_rec
