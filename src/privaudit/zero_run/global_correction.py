"""Global Zero-Run correction by adaptive composition ("Privacy Auditing with Zero (0)
Training Run", 2026, Section 4, Theorem 4.1, Corollary 4.4; audit-math.md section 5.1).

The audit data are produced by a distribution-shift mechanism ``M_DS`` (membership bits ->
features) composed with the audited algorithm. Under the overlap assumption (paper
Assumption 4.3) ``P_a(pi(X) in [eta, 1 - eta]) >= 1 - delta_DS`` for both classes, ``M_DS``
is ``(eps_bar_DS, delta_DS)``-DP with

.. math::

    \\bar\\varepsilon_{DS} = \\log\\frac{1 - \\eta}{\\eta}, \\qquad
    \\bar\\mu_{DS} = \\Phi^{-1}(1 - \\eta) - \\Phi^{-1}(\\eta) = -2\\Phi^{-1}(\\eta),

and Corollary 4.4 turns a one-run audit of the composition into a bound on the algorithm:

1. not ``(eps + eps_bar, 1 - (1 - delta)(1 - delta_DS))``-DP  =>  not (eps, delta)-DP;
2. not ``G_{sqrt(mu^2 + mu_bar^2)} (x) f_{0, delta_DS}``-DP  =>  not mu-GDP.

A uniform worst-case penalty: the global correction loses power quickly as the shift grows
(paper Figure 2(a)); the pointwise correction (:mod:`.tampering`) is usually stronger.

Membership prior: ``pi`` includes the class prior. For pure eps-DP with ``delta_DS = 0``
the posterior-odds argument holds for any prior; for ``delta_DS > 0`` or the GDP version
with unbalanced classes the composition statement assumes the one-run benchmark's prior of
1/2 and is AMBIGUOUS (audit-math.md section 5.1) -- :func:`privaudit.zero_run.zero_run_audit`
adds a note when the classes are unbalanced.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike
from scipy import special

from privaudit._validation import (
    as_bool_array,
    check_both_classes,
    check_probability,
    check_same_length,
    fail,
)
from privaudit.stats.fdp import FbarInverse, fdp_rejects, gdp_fbar_inverse, largest_rejected
from privaudit.stats.one_run import check_counts, eps_lb_one_run
from privaudit.zero_run.tampering import check_propensity

__all__ = [
    "GLOBAL_GDP_METHODS",
    "eps_bar_ds",
    "global_eps_lb",
    "global_gdp_mu_lb",
    "mu_bar_ds",
    "overlap_eta",
    "tensor_fbar_inverse",
]

GLOBAL_GDP_METHODS = ("tensor", "absorb")


def _check_eta(eta: float) -> float:
    if not 0.0 <= eta <= 0.5:
        raise fail("eta", "an overlap level in [0, 1/2]", eta)
    return float(eta)


def eps_bar_ds(eta: float) -> float:
    """``eps_bar_DS = log((1 - eta) / eta)`` (paper Corollary 4.4); ``inf`` at ``eta = 0``."""
    eta = _check_eta(eta)
    if eta == 0.0:
        return math.inf
    return math.log1p(-eta) - math.log(eta)


def mu_bar_ds(eta: float) -> float:
    """``mu_bar_DS = -2 Phi^{-1}(eta)``: the smallest mu with ``f_{eps_bar,0} >= G_mu``.

    Paper Corollary 4.4 writes it ``Phi^{-1}(q(eps_bar)) - Phi^{-1}(1 - q(eps_bar))``,
    which equals ``-2 Phi^{-1}(eta)`` (audit-math.md sections 0 and 5.1). ``inf`` at 0.
    """
    eta = _check_eta(eta)
    if eta == 0.0:
        return math.inf
    return float(-2.0 * special.ndtri(eta))


def overlap_eta(pi: ArrayLike, member: ArrayLike, delta_ds: float) -> float:
    """Empirical overlap level ``eta`` for a given ``delta_DS`` (paper Assumption 4.3).

    The largest ``eta`` such that, within each class, at most a fraction ``delta_DS`` of the
    examples has ``min(pi, 1 - pi) < eta``: the ``floor(delta_DS n_a)``-th smallest value of
    ``min(pi, 1 - pi)`` in class ``a``, minimised over the two classes. A plug-in estimate
    of a population quantity (like the bootstrap, only asymptotically valid); with oracle
    propensities compute ``eta`` from the known distribution instead.
    """
    p = check_propensity(pi)
    mem = as_bool_array(member, "member", ndim=1)
    check_same_length(propensity=p, member=mem)
    check_both_classes(mem, "member")
    if not 0.0 <= delta_ds < 1.0:
        raise fail("delta_ds", "a value in [0, 1)", delta_ds)
    tail = np.minimum(p, 1.0 - p)
    eta = 0.5
    for cls in (True, False):
        x = np.sort(tail[mem == cls])
        k = math.floor(delta_ds * x.size)
        eta = min(eta, float(x[min(k, x.size - 1)]))
    return eta


def tensor_fbar_inverse(mu: float, delta: float) -> FbarInverse:
    r"""``fbar^{-1}`` of ``G_mu (x) f_{0,delta}``: ``(1-delta) Phi(Phi^{-1}((y-delta)/(1-delta)) - mu)``.

    For ``y > delta``, else 0 (Dong, Roth, Su 2022; audit-math.md section 0).
    """
    base = gdp_fbar_inverse(mu)
    if delta == 0.0:
        return base

    def finv(y: float) -> float:
        if y <= delta:
            return 0.0
        return (1.0 - delta) * base((y - delta) / (1.0 - delta))

    return finv


def global_gdp_mu_lb(
    m: int,
    r: int,
    v: int,
    *,
    eta: float,
    delta_ds: float,
    beta: float,
    method: str = "tensor",
) -> float:
    r"""Global-correction mu-GDP lower bound (paper Corollary 4.4 (2); Algorithms 5 and 6).

    .. math::

        \mu_{tot} = \sup\{\mu : \text{the one-run f-DP audit rejects } f\}, \qquad
        \mu_{lb} = \sqrt{\max(0, \mu_{tot}^2 - \bar\mu_{DS}^2)}

    * ``method="tensor"`` (Algorithm 5, ``beta``-valid): ``f = G_mu (x) f_{0,delta_DS}``
      in the recursion of Mahloujifar, Melis, Chaudhuri (2024).
    * ``method="absorb"`` (Algorithm 6, with a corrected level): ``f = G_mu`` tested at
      level ``beta - m delta_DS``. The paper states the audit of ``G_mu`` at ``beta`` is
      ``(beta + delta_DS)``-valid, but ``delta_DS`` of Assumption 4.3 is a *per-example*
      probability: the chance that some of the ``m`` audit examples falls outside the
      overlap region is up to ``m delta_DS`` (union bound), and only when none does is
      the composition ``G_mu`` (a 0-DP null with ``delta_DS = 0.01``, ``m = 2000`` gave
      ``mu_lb > 0`` in 19 of 20 runs at the paper's level). Raises
      :class:`~privaudit.errors.InvalidInputError` when ``m delta_DS >= beta`` (no bound
      is possible); with ``delta_DS > 0`` prefer ``"tensor"``, which pays ``delta_DS``
      per example inside the test.
    """
    m, r, v = check_counts(m, r, v)
    beta = check_probability(beta, "beta")
    if method not in GLOBAL_GDP_METHODS:
        raise fail("method", f"one of {GLOBAL_GDP_METHODS}", method)
    if not 0.0 <= delta_ds < 1.0:
        raise fail("delta_ds", "a value in [0, 1)", delta_ds)
    mu_ds = mu_bar_ds(eta)
    if v == 0 or math.isinf(mu_ds):
        return 0.0
    if method == "tensor":
        mu_tot = largest_rejected(
            lambda mu: fdp_rejects(m, r, v, tensor_fbar_inverse(mu, delta_ds), beta)
        )
    else:
        level = beta - m * delta_ds  # union bound over the m examples' overlap failures
        if level <= 0.0:
            raise fail(
                "delta_ds",
                f"m * delta_ds < beta ({beta:g}) for method 'absorb' (each of the m = {m} "
                "examples may fall outside the overlap region; use method 'tensor')",
                delta_ds,
            )
        mu_tot = largest_rejected(lambda mu: fdp_rejects(m, r, v, gdp_fbar_inverse(mu), level))
    if math.isinf(mu_tot):
        return math.inf
    return math.sqrt(max(0.0, mu_tot * mu_tot - mu_ds * mu_ds))


def global_eps_lb(
    m: int,
    r: int,
    v: int,
    *,
    eta: float,
    delta_ds: float,
    delta: float = 0.0,
    beta: float,
) -> float:
    r"""Global-correction (eps, delta) lower bound (paper Corollary 4.4 (1); Algorithm 4).

    .. math::

        \varepsilon_{tot} = \text{eps\_lb\_one\_run}(m, r, v, \delta_{tot}, \beta), \quad
        \delta_{tot} = 1 - (1 - \delta)(1 - \delta_{DS}), \quad
        \varepsilon_{lb} = \max(0, \varepsilon_{tot} - \bar\varepsilon_{DS})

    Steinke et al.'s delta term is ``2 m delta_tot``, so ``delta_DS`` must be well below
    ``1/m`` to leave any power.
    """
    m, r, v = check_counts(m, r, v)
    beta = check_probability(beta, "beta")
    for name, x in (("delta", delta), ("delta_ds", delta_ds)):
        if not 0.0 <= x < 1.0:
            raise fail(name, "a value in [0, 1)", x)
    eps_ds = eps_bar_ds(eta)
    if math.isinf(eps_ds):
        return 0.0
    delta_tot = 1.0 - (1.0 - delta) * (1.0 - delta_ds)
    eps_tot = eps_lb_one_run(m, r, v, delta_tot, beta)
    return max(0.0, eps_tot - eps_ds)
