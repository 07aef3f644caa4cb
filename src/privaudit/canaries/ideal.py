"""The ideal gradient-canary audit: what the one-run bound can reach for a DP-SGD setting.

A Dirac canary in DP-SGD (Steinke, Nasr, Jagielski 2023, Sec. 7) is, at best, observed
through the subsampled Gaussian mechanism the accountant assumes: at step ``t`` an
included canary adds ``b_t ~ Bernoulli(q)`` to its coordinate's update (in units of its
own contribution ``lr C / B``), an excluded one adds nothing, and the noise adds
``sigma z_t``, ``z_t ~ N(0, 1)``; nothing else moves the coordinate (the other records'
gradients on it are zero). :func:`ideal_canary_audit` simulates that mechanism for ``m``
canaries with fair coins, scores the simulated iterates with
:func:`~privaudit.canaries.gradient_canary_scores` (the same score the real run gets),
and bounds them with the one-run audit. It gives

* the **theoretical best** one-run bound of the setting (``q``, ``T`` steps, ``sigma``,
  ``m``, ``delta``, confidence): how close a real run's audit comes to it measures what the
  other records' gradients and the score lose; the gap between it and the accountant is
  the price of the one-run method itself: binary guesses on ``m`` canaries of one run
  leave the bound of a Gaussian mechanism well below its eps (Steinke et al. 2023 show
  the gap for the idealised Gaussian mechanism; the delta term ``2 m delta`` of their
  bound also grows with ``m``; Agrawal et al. 2026, arXiv 2606.12733, trace it to the
  thresholding of the canary signals);
* **guess counts chosen in advance**: the ``(k_pos, k_neg)`` with the largest mean bound
  over the simulations. They depend only on ``m, q, T, sigma, delta`` and the
  confidence, never on the audited run or its coins, so an audit with them is a
  fixed-guess audit (``threshold_selection = "fixed"``): no union-bound correction is
  owed, and the bound is valid at the stated confidence (Steinke et al. 2023, Sec. 3:
  the number of guesses must be fixed before the coins are looked at; fixing it from a
  simulation of the claimed mechanism is such a choice).

The f-DP audit (Mahloujifar, Melis, Chaudhuri 2024) of the simulated scores is reported
at the chosen counts as well (``mu_lower_bound``).

:func:`~privaudit.plan_one_run_audit` plans guesses from a parametric score model; this
module simulates the DP-SGD mechanism itself (the Poisson subsampling, the ``T`` steps,
the score the audit uses, the delta term of the bound), which for ``q < 1`` is not one of
those families. With ``q = 1`` the mechanism is exactly Gaussian: ``T`` steps of noise
``sigma`` are one ``sqrt(T) / sigma``-GDP mechanism (Dong, Roth, Su 2022, Cor. 3.3).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import check_choice, check_positive_int, fail
from privaudit.canaries.scoring import ACCESS, gradient_canary_scores
from privaudit.stats.fdp import gdp_mu_lb_one_run
from privaudit.stats.one_run import eps_lb_one_run
from privaudit.stats.selection import SortedScores, default_candidates

__all__ = ["IdealCanaryAudit", "ideal_canary_audit", "planning_candidates"]


@dataclasses.dataclass(frozen=True)
class IdealCanaryAudit:
    """What the ideal Dirac-canary audit of one DP-SGD setting reaches.

    Attributes
    ----------
    k_pos, k_neg : int
        The guess counts with the largest mean eps bound over the simulations (to be
        fixed in advance for the real audit).
    epsilon_lower_bound : float
        Mean one-run eps lower bound (Steinke et al. 2023) over the simulations, guesses
        fixed at ``(k_pos, k_neg)``. It is an optimistic figure for the chosen counts
        (chosen on the same simulations); :attr:`epsilon_lower_bound_union` is not.
    epsilon_lower_bound_union : float
        Mean bound with the guesses chosen among the default candidates and the
        union-bound correction paid (what :func:`~privaudit.canaries.audit_canaries`
        does without ``k_pos``/``k_neg``).
    mu_lower_bound : float
        Mean f-DP (mu-GDP) lower bound (Mahloujifar et al. 2024) at ``(k_pos, k_neg)``.
    by_candidate : dict
        ``"k_pos,k_neg"`` -> mean eps bound, for every candidate tried.
    m, steps, runs : int
        Canaries, DP-SGD steps and simulated runs.
    sample_rate, noise_multiplier, delta, confidence : float
        The setting simulated.
    access : str
        The score simulated (``"final"`` or ``"iterates"``).
    """

    k_pos: int
    k_neg: int
    epsilon_lower_bound: float
    epsilon_lower_bound_union: float
    mu_lower_bound: float
    by_candidate: dict[str, float]
    m: int
    steps: int
    runs: int
    sample_rate: float
    noise_multiplier: float
    delta: float
    confidence: float
    access: str

    def to_dict(self) -> dict[str, object]:
        """A JSON-compatible dict of every field."""
        return dataclasses.asdict(self)


def planning_candidates(m: int) -> list[tuple[int, int]]:
    """Guess counts tried when planning: symmetric ``k_pos = k_neg = k`` and one-sided
    ``(k, 0)``, for ``k`` on a half-octave grid from ``m / 2`` down to 5.

    A plan pays no union bound, so the grid can be finer than
    :func:`~privaudit.stats.selection.default_candidates`.
    """
    m = check_positive_int(m, "m", minimum=2)
    ks: list[int] = []
    x = m / 2.0
    while x >= 5 and len(ks) < 40:
        k = int(x)
        if k not in ks:
            ks.append(k)
        x /= math.sqrt(2.0)
    if not ks:
        ks = [max(1, m // 2)]
    out = [(k, k) for k in ks if 2 * k <= m] + [(k, 0) for k in ks]
    return out


def _simulated_trace(
    rng: np.random.Generator, included: NDArray[np.bool_], q: float, steps: int, sigma: float
) -> NDArray[np.float64]:
    """Iterates of the canary coordinates under the ideal mechanism (lr = C = B = 1)."""
    m = included.size
    b = (rng.random((steps, m)) < q) & included
    x = b + sigma * rng.standard_normal((steps, m))
    return np.vstack([np.zeros((1, m)), -np.cumsum(x, axis=0)])


def ideal_canary_audit(
    m: int,
    *,
    sample_rate: float,
    steps: int,
    noise_multiplier: float,
    access: str = "iterates",
    delta: float = 0.0,
    confidence: float = 0.95,
    candidates: list[tuple[int, int]] | None = None,
    runs: int = 8,
    seed: int = 0,
) -> IdealCanaryAudit:
    """Simulate the ideal Dirac-canary audit of a DP-SGD setting (see the module docstring).

    Parameters
    ----------
    m : int
        Number of gradient canaries (each included by a fair coin).
    sample_rate : float
        Poisson rate ``q`` of every record and canary (1 = full-batch DP-GD).
    steps : int
        Number of DP-SGD steps ``T``.
    noise_multiplier : float
        ``sigma`` of the run (> 0).
    access : {"final", "iterates"}
        The score (as :func:`~privaudit.canaries.gradient_canary_scores`).
    delta, confidence : float
        Of the one-run bound, as for the real audit.
    candidates : list of (k_pos, k_neg), optional
        Guess counts tried; default :func:`planning_candidates`.
    runs : int
        Simulated runs (the means are over them).
    seed : int
        Seed of the simulation (independent of any real run's coins).

    Returns
    -------
    IdealCanaryAudit

    Examples
    --------
    >>> from privaudit.canaries import ideal_canary_audit
    >>> plan = ideal_canary_audit(1000, sample_rate=1.0, steps=4, noise_multiplier=2.0,
    ...                           delta=1e-5, runs=2, seed=0)
    >>> plan.k_pos > 0 and plan.epsilon_lower_bound > 0
    True
    """
    m, steps, runs, q, sigma = _checked_setting(
        m, sample_rate, steps, noise_multiplier, access, delta, confidence, runs
    )
    cands = _checked_candidates(m, candidates)
    union = default_candidates(m)
    beta = 1.0 - float(confidence)
    rng = np.random.default_rng([int(seed), 0x1DEA])
    table = np.zeros((runs, len(cands)))
    union_lb = np.zeros(runs)
    sorted_runs: list[SortedScores] = []
    for i in range(runs):
        ss = _simulated_run(rng, m, q, steps, sigma, access)
        sorted_runs.append(ss)
        table[i] = _fixed_guess_bounds(ss, cands, delta, beta)
        union_lb[i] = _union_bound(ss, union, delta, beta)
    means = table.mean(axis=0)
    j = int(np.argmax(means))
    kp, kn = cands[j]
    return IdealCanaryAudit(
        k_pos=kp,
        k_neg=kn,
        epsilon_lower_bound=float(means[j]),
        epsilon_lower_bound_union=float(union_lb.mean()),
        mu_lower_bound=_mean_mu_bound(sorted_runs, kp, kn, beta),
        by_candidate={f"{a},{b}": float(v) for (a, b), v in zip(cands, means, strict=True)},
        m=m,
        steps=steps,
        runs=runs,
        sample_rate=q,
        noise_multiplier=sigma,
        delta=float(delta),
        confidence=float(confidence),
        access=access,
    )


def _checked_setting(
    m: int,
    sample_rate: float,
    steps: int,
    noise_multiplier: float,
    access: str,
    delta: float,
    confidence: float,
    runs: int,
) -> tuple[int, int, int, float, float]:
    """Refuse a setting that cannot be simulated (naming the argument); return the checked
    ``(m, steps, runs, q, sigma)``."""
    m = check_positive_int(m, "m", minimum=2)
    steps = check_positive_int(steps, "steps")
    runs = check_positive_int(runs, "runs")
    check_choice(access, "access", ACCESS)
    q = _number(sample_rate, "sample_rate")
    if not 0.0 < q <= 1.0:
        raise fail("sample_rate", "a rate in (0, 1]", sample_rate)
    sigma = _number(noise_multiplier, "noise_multiplier")
    if not (math.isfinite(sigma) and sigma > 0):
        raise fail("noise_multiplier", "a finite number > 0", noise_multiplier)
    if not 0.0 < _number(confidence, "confidence") < 1.0:
        raise fail("confidence", "a value in (0, 1)", confidence)
    if not 0.0 <= _number(delta, "delta") < 1.0:
        raise fail("delta", "a value in [0, 1)", delta)
    return m, steps, runs, q, sigma


def _number(x: object, name: str) -> float:
    """``x`` as a float, or the error naming ``name`` (not a bare ValueError or TypeError)."""
    if isinstance(x, bool | str):
        raise fail(name, "a number", repr(x))
    try:
        return float(x)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise fail(name, "a number", repr(x)) from None


def _checked_candidates(m: int, candidates: list[tuple[int, int]] | None) -> list[tuple[int, int]]:
    """The guess counts to try, as ints: ``candidates``, default :func:`planning_candidates`."""
    given = planning_candidates(m) if candidates is None else candidates
    cands = [(int(a), int(b)) for a, b in given]
    if not cands:
        raise fail("candidates", "at least one (k_pos, k_neg)", "none")
    return cands


def _simulated_run(
    rng: np.random.Generator, m: int, q: float, steps: int, sigma: float, access: str
) -> SortedScores:
    """One simulated run: fair coins for the ``m`` canaries, the ideal mechanism's iterates,
    and their scores as the real audit computes them (sorted, with the coins)."""
    included = rng.random(m) < 0.5
    trace = _simulated_trace(rng, included, q, steps, sigma)
    s = gradient_canary_scores(
        trace,
        lr=1.0,
        expected_batch_size=1.0,
        max_grad_norm=1.0,
        access=access,
        noise_multiplier=sigma,
        sample_rate=q,
    )
    return SortedScores(np.asarray(s, dtype=np.float64), included)


def _fixed_guess_bounds(
    ss: SortedScores, cands: list[tuple[int, int]], delta: float, beta: float
) -> list[float]:
    """The one-run eps bound of one run at each candidate, guesses fixed (no union bound)."""
    out = []
    for kp, kn in cands:
        c = ss.counts(kp, kn)
        out.append(eps_lb_one_run(c.m, c.r, c.v, delta, beta))
    return out


def _union_bound(
    ss: SortedScores, union: list[tuple[int, int]], delta: float, beta: float
) -> float:
    """The best one-run eps bound of one run over the ``union`` candidates, each at level
    ``beta / len(union)`` (the union-bound correction), and at least 0."""
    best = 0.0
    for kp, kn in union:
        c = ss.counts(kp, kn)
        best = max(best, eps_lb_one_run(c.m, c.r, c.v, delta, beta / len(union)))
    return best


def _mean_mu_bound(sorted_runs: list[SortedScores], kp: int, kn: int, beta: float) -> float:
    """Mean f-DP (mu-GDP) lower bound (Mahloujifar et al. 2024) over the runs at
    ``(kp, kn)``."""
    mus = []
    for ss in sorted_runs:
        c = ss.counts(kp, kn)
        mus.append(gdp_mu_lb_one_run(c.m, c.r, c.v, beta))
    return float(np.mean(mus))
