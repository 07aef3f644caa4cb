r"""Controlled Gaussian-mechanism experiment of the Zero-Run paper (Section 7, Figure 2(a)).

"Privacy Auditing with Zero (0) Training Run" (2026), Section 7, "Controlled Gaussian
Mechanism Results": a mechanism with a known privacy level is audited while an auxiliary
feature becomes more and more predictive of membership. The paper's qualitative findings,
which :func:`figure2_checks` tests on the output of :func:`gaussian_shift_experiment`:

1. the uncorrected audit attributes the features-only signal to the mechanism and
   exceeds the true ``mu`` under strong shift (an invalid lower bound);
2. the globally and the pointwise-corrected audits stay valid at every shift level;
3. the global correction loses power quickly (uniform worst-case penalty) while the
   propensity-aware pointwise correction stays informative under moderate shift.

Design (the paper's Appendix H, which specifies its own noisy-sum mechanism, is not in the
text we have; this is a per-example version with the same ``mu_true = 2/3``)
---------------------------------------------------------------------------------------
For one seed, ``m`` audit examples are drawn **once** and kept fixed across the shift
levels (the paper keeps "the membership assignments, Gaussian release, and
mechanism-derived scores fixed"):

* membership ``S_i ~ Bernoulli(1/2)`` i.i.d. (paper Assumption 3.2);
* the release ``Y_i = mu 1{S_i = 1} + N(0, 1)``: given everything else, ``Y_i`` is
  ``N(mu, 1)`` for a member and ``N(0, 1)`` for a non-member, whose trade-off curve is
  exactly ``G_mu`` (Dong, Roth, Su 2022), so the mechanism is ``mu``-GDP with respect to
  each membership bit and not ``mu'``-GDP for any ``mu' < mu``: ``mu_true = mu``;
* ``Z_i ~ N(0, 1)`` and ``n_noise`` pure-noise features ``N_ij ~ N(0, 1)``.

Only the shift level ``gamma >= 0`` changes the auxiliary feature

.. math:: A_i = \gamma\,(2 S_i - 1) + Z_i ,

so ``A | S=1 ~ N(gamma, 1)`` and ``A | S=0 ~ N(-gamma, 1)``; the features-only ROC AUC
is ``Phi(sqrt(2) gamma)`` (:func:`shift_feature_auc`) and the oracle propensity
(:func:`oracle_propensity`) is the Bayes posterior with prior 1/2,

.. math:: \pi(a) = P(S = 1 \mid A = a) = \mathrm{expit}(2 \gamma a).

The attack (a function of the release and the features only) is the posterior log-odds

.. math:: \mathrm{score}_i = \mu Y_i - \mu^2 / 2 + \mathrm{logit}(\hat\pi_i),

with ``pi_hat`` the oracle or the estimated propensity (the paper's MIA combines the
mechanism score with ``pi_hat``, Section 7). The same scores feed the three audits of
:func:`privaudit.zero_run.bounds.zero_run_bounds`:

* ``"oracle"``: ``pi_hat = pi``; the global correction uses the exact overlap
  (:func:`oracle_overlap_eta`): ``delta_DS = oracle_delta_ds``, ``eta = expit(-2 gamma c)``
  where ``P(|A| > c | S = s) = delta_DS`` (the same for both classes by symmetry), with
  ``global_method="tensor"`` (Algorithm 5: ``G_mu (x) f_{0, delta_DS}``, which pays
  ``delta_DS`` per example inside the test and is ``beta``-valid; Algorithm 6, "absorb",
  would have to pay ``m delta_DS`` up front, more than ``beta`` here); at ``gamma = 0``:
  ``eta = 1/2``, ``delta_DS = 0``. The default is ``delta_DS = beta / (10 K)``
  (``K = len(default_guess_counts(m))``, 9 at ``m = 4000``), small against the
  ``beta v / m`` that the ``f_{0, delta_DS}`` factor would otherwise erase.
* ``"estimated"``: the correction the audit itself uses (:func:`.zero_run_audit`):
  ``pi_hat`` from paired cross-fitting (five fits on 2/5 of the data, two independent
  out-of-sample estimates per record; :func:`.propensity.cross_fit_propensity_pair`) on
  the feature matrix ``[A, N_1, ..., N_{n_noise}]`` (the noise columns give the estimator
  something to overfit), and the estimator's pointwise rule
  (:func:`.bounds.pointwise_inputs`: ``|logit pi_hat|`` raised by ``margin_z`` standard
  errors, or the split rule for ``"logistic"``; docs/zero_run_validity.md). The attack
  uses the first paired estimate *a*.
  The global correction uses the library defaults (``eta`` estimated from the sample as
  the most extreme propensity, ``delta_DS = 0``, ``"tensor"``).
* ``"estimated-plugin"``: the paper's plain plug-in, for comparison only: ``pi_hat``
  from 5-fold cross-fitting with 3-fold inner calibration
  (:func:`privaudit.zero_run.propensity.cross_fit_propensity`), used without a
  margin. It is NOT valid under estimation error (issue 9: a 0-DP score under shift
  gets eps > 0 in most runs with hist-gb).
"""

from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import optimize, special, stats
from sklearn.metrics import roc_auc_score

from privaudit._stats import clopper_pearson_upper
from privaudit._validation import (
    as_float_array,
    check_choice,
    check_positive_int,
    check_probability,
    fail,
)
from privaudit.records import AuditResult
from privaudit.runtime.mapping import InlineMapper, Mapper
from privaudit.runtime.seeds import derive_rng, derive_seed, spawn_seeds
from privaudit.zero_run.bounds import (
    CORRECTIONS,
    DEFAULT_MARGIN_Z,
    default_guess_counts,
    pointwise_inputs,
    zero_run_bounds,
)
from privaudit.zero_run.propensity import (
    ESTIMATORS,
    cross_fit_propensity,
    cross_fit_propensity_pair,
)

__all__ = [
    "DEFAULT_SHIFT_LEVELS",
    "SHIFT_PROPENSITIES",
    "GaussianShiftData",
    "MapExecutor",
    "draw_gaussian_shift_data",
    "figure2_checks",
    "gaussian_shift_experiment",
    "oracle_overlap_eta",
    "oracle_propensity",
    "shift_feature_auc",
    "summarize_shift_experiment",
]

SHIFT_PROPENSITIES: tuple[str, ...] = ("oracle", "estimated", "estimated-plugin")
"""How ``pi_hat`` is obtained: the closed-form posterior; paired cross-fitted estimates
with the audit's margin (valid, asymptotically); plain cross-fitted plug-in estimates (the
paper's correction, not valid under estimation error; a labelled comparison)."""

DEFAULT_SHIFT_LEVELS: tuple[float, ...] = (0.0, 0.02, 0.05, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5)
"""Shift levels ``gamma``; features-only AUC ``Phi(sqrt(2) gamma)`` from 0.5 to 0.983.

The small levels 0.02 and 0.05 (AUC 0.51 and 0.53) show how fast the global correction's
uniform penalty ``mu_bar_DS`` removes its power."""


MapExecutor = Mapper  # the runtime protocol, under the name this module documents


_LOGIT_CAP = 50.0  # attack-score cap for pi_hat in {0, 1}; does not touch the propensity


def shift_feature_auc(gamma: float) -> float:
    r"""ROC AUC of the auxiliary feature alone: ``Phi(sqrt(2) gamma)``.

    ``A_1 - A_0 ~ N(2 gamma, 2)`` for a member / non-member pair, so
    ``P(A_1 > A_0) = Phi(2 gamma / sqrt(2))``. It says how strong a shift level is.
    """
    g = _check_gamma(gamma)
    return float(special.ndtr(math.sqrt(2.0) * g))


def oracle_propensity(feature: ArrayLike, gamma: float) -> NDArray[np.float64]:
    r"""Oracle propensity ``pi(a) = P(S = 1 | A = a) = expit(2 gamma a)`` (prior 1/2).

    Bayes' rule with ``A | S=1 ~ N(gamma, 1)``, ``A | S=0 ~ N(-gamma, 1)``: the density
    ratio is ``exp(2 gamma a)``. Paper Definition 3.1 for the module's design.
    """
    g = _check_gamma(gamma)
    a = as_float_array(feature, "feature", ndim=1)
    return np.asarray(special.expit(2.0 * g * a), dtype=np.float64)


def oracle_overlap_eta(gamma: float, delta_ds: float) -> tuple[float, float]:
    r"""Exact overlap ``(eta, delta_DS)`` of the oracle propensity (paper Assumption 4.3).

    ``min(pi(A), 1 - pi(A)) < eta`` iff ``|A| > c`` with ``c = log((1 - eta)/eta) / (2 gamma)``,
    and ``P(|A| > c | S = 1) = Phi(gamma - c) + Phi(-gamma - c)`` (the same given ``S = 0``).
    ``c`` solves ``P(|A| > c | S) = delta_DS`` and ``eta = expit(-2 gamma c)``, so that
    ``P_s(pi(A) in [eta, 1 - eta]) = 1 - delta_DS`` for both classes exactly.

    Returns
    -------
    (eta, delta_ds) : tuple of float
        ``(1/2, 0)`` at ``gamma = 0`` (no shift: ``pi = 1/2`` everywhere, no tail is
        needed); otherwise ``eta`` as above (possibly 0.0 after underflow at huge shifts,
        where ``eps_bar_DS = inf`` and the global bound is 0) and the given ``delta_ds``.
    """
    g = _check_gamma(gamma)
    if not 0.0 < delta_ds < 1.0:
        raise fail("delta_ds", "a value in (0, 1)", delta_ds)
    if g == 0.0:
        return 0.5, 0.0

    def excess(c: float) -> float:
        return float(special.ndtr(g - c) + special.ndtr(-g - c)) - delta_ds

    # excess(0) = 1 - delta_ds > 0, excess(g + 40) ~ -delta_ds < 0, strictly decreasing
    c = optimize.brentq(excess, 0.0, g + 40.0, xtol=1e-14, rtol=1e-14, maxiter=500)
    return float(special.expit(-2.0 * g * c)), float(delta_ds)


@dataclasses.dataclass(frozen=True, eq=False)
class GaussianShiftData:
    """One seed's draws, fixed across shift levels (see the module docstring).

    Attributes
    ----------
    member : ndarray of bool
        ``S_i`` (True = member).
    release : ndarray of float
        ``Y_i = mu 1{S_i} + N(0, 1)``, the mechanism's per-example output.
    base_noise : ndarray of float
        ``Z_i``, the noise of the auxiliary feature.
    nuisance : ndarray of float, shape (m, n_noise)
        Pure-noise features (independent of membership).
    mu : float
        The mechanism's (exact) GDP parameter.
    """

    member: NDArray[np.bool_]
    release: NDArray[np.float64]
    base_noise: NDArray[np.float64]
    nuisance: NDArray[np.float64]
    mu: float

    def feature(self, gamma: float) -> NDArray[np.float64]:
        """The auxiliary feature ``A_i = gamma (2 S_i - 1) + Z_i`` at shift level ``gamma``."""
        g = _check_gamma(gamma)
        return np.asarray(g * np.where(self.member, 1.0, -1.0) + self.base_noise)

    def features(self, gamma: float) -> NDArray[np.float64]:
        """Propensity feature matrix ``[A, N_1, ..., N_{n_noise}]`` of shape ``(m, 1 + n_noise)``."""
        return np.column_stack([self.feature(gamma), self.nuisance])

    def mechanism_score(self) -> NDArray[np.float64]:
        """``log`` likelihood ratio of the release: ``mu Y_i - mu^2 / 2``."""
        return np.asarray(self.mu * self.release - 0.5 * self.mu * self.mu)


def draw_gaussian_shift_data(
    m: int, *, mu: float = 2.0 / 3.0, n_noise: int = 2, rng: np.random.Generator | int
) -> GaussianShiftData:
    """Draw ``S``, the Gaussian release ``Y``, ``Z`` and the noise features, in that order.

    Parameters
    ----------
    m : int
        Number of audit examples.
    mu : float
        The mechanism's GDP parameter (> 0).
    n_noise : int
        Number of pure-noise features (>= 0).
    rng : Generator or int
        Source of randomness.
    """
    m = check_positive_int(m, "m", minimum=2)
    mu = _check_mu(mu)
    n_noise = check_positive_int(n_noise, "n_noise", minimum=0)
    gen = np.random.default_rng(rng)
    member = gen.random(m) < 0.5
    release = mu * member + gen.standard_normal(m)
    base_noise = gen.standard_normal(m)
    nuisance = gen.standard_normal((m, n_noise))
    return GaussianShiftData(member, release, base_noise, nuisance, mu)


# --- the experiment -------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Task:
    seed_index: int
    seed: int
    gamma: float
    mu: float
    m: int
    n_noise: int
    propensities: tuple[str, ...]
    estimator: str
    confidence: float
    oracle_delta_ds: float
    margin_z: float = DEFAULT_MARGIN_Z

    @property
    def label(self) -> str:
        return f"seed {self.seed_index} (#{self.seed}), gamma={self.gamma:g}"


def _label(task: _Task) -> str:
    return task.label


def _attack_logit(pi: NDArray[np.float64]) -> NDArray[np.float64]:
    with np.errstate(divide="ignore"):
        lo = np.log(pi) - np.log1p(-pi)
    return np.clip(lo, -_LOGIT_CAP, _LOGIT_CAP)


def _run_task(task: _Task) -> list[dict[str, Any]]:
    """All rows of one (seed, shift level): every propensity x correction."""
    data = draw_gaussian_shift_data(
        task.m,
        mu=task.mu,
        n_noise=task.n_noise,
        rng=derive_rng(task.seed, purpose="zero-run-gaussian-shift/data"),
    )
    uniforms = derive_rng(task.seed, purpose="zero-run-gaussian-shift/tampering").random(task.m)
    feature = data.feature(task.gamma)
    base = data.mechanism_score()
    rows: list[dict[str, Any]] = []
    for prop in task.propensities:
        if prop == "oracle":
            pi, res = _oracle_audit(task, data, feature, base, uniforms)
        elif prop == "estimated":
            pi, res = _estimated_audit(task, data, base, uniforms)
        else:  # "estimated-plugin"
            pi, res = _plugin_audit(task, data, base, uniforms)
        rows.extend(_propensity_rows(task, data, prop, pi, res))
    return rows


def _oracle_audit(
    task: _Task,
    data: GaussianShiftData,
    feature: NDArray[np.float64],
    base: NDArray[np.float64],
    uniforms: NDArray[np.float64],
) -> tuple[NDArray[np.float64], dict[str, AuditResult]]:
    """``(pi, bounds)`` with the closed-form propensity and its exact overlap ("tensor")."""
    pi = oracle_propensity(feature, task.gamma)
    scores = base + 2.0 * task.gamma * feature  # logit(pi), exactly
    eta, dds = oracle_overlap_eta(task.gamma, task.oracle_delta_ds)
    res = zero_run_bounds(
        scores,
        data.member,
        pi,
        uniforms=uniforms,
        confidence=task.confidence,
        delta_ds=dds,
        eta=eta,
        global_method="tensor",
    )
    return pi, res


def _fit_kwargs(task: _Task) -> dict[str, Any]:
    """Estimator and derived seed of the task's cross-fitted propensity."""
    return {
        "estimator": task.estimator,
        "seed": derive_seed(task.seed, purpose="zero-run-gaussian-shift/propensity"),
    }


def _estimated_audit(
    task: _Task,
    data: GaussianShiftData,
    base: NDArray[np.float64],
    uniforms: NDArray[np.float64],
) -> tuple[NDArray[np.float64], dict[str, AuditResult]]:
    """``(pi, bounds)`` with the audit's own correction: paired fit, margin or split rule."""
    fit_kw = _fit_kwargs(task)
    fit = cross_fit_propensity_pair(data.features(task.gamma), data.member, **fit_kw)
    # the attack uses estimate a, never the split rule's tampering estimate b
    scores = base + np.clip(fit.logit_a, -_LOGIT_CAP, _LOGIT_CAP)
    kw = pointwise_inputs(task.estimator, fit, task.margin_z)
    res = zero_run_bounds(scores, data.member, uniforms=uniforms, confidence=task.confidence, **kw)
    return fit.pi, res


def _plugin_audit(
    task: _Task,
    data: GaussianShiftData,
    base: NDArray[np.float64],
    uniforms: NDArray[np.float64],
) -> tuple[NDArray[np.float64], dict[str, AuditResult]]:
    """``(pi, bounds)`` with the paper's plain plug-in estimate (a labelled comparison)."""
    fit_kw = _fit_kwargs(task)
    pi = cross_fit_propensity(data.features(task.gamma), data.member, **fit_kw)
    scores = base + _attack_logit(pi)
    res = zero_run_bounds(
        scores, data.member, uniforms=uniforms, confidence=task.confidence, propensity=pi
    )
    return pi, res


def _propensity_rows(
    task: _Task,
    data: GaussianShiftData,
    prop: str,
    pi: NDArray[np.float64],
    res: dict[str, AuditResult],
) -> list[dict[str, Any]]:
    """One output row per correction of the bounds obtained with propensity ``prop``."""
    beta = 1.0 - task.confidence
    prop_auc = float(roc_auc_score(data.member, pi))
    rows: list[dict[str, Any]] = []
    for corr in CORRECTIONS:
        r = res[corr]
        mu_lb = r.mu_lower_bound
        rows.append(
            {
                "seed_index": task.seed_index,
                "seed": task.seed,
                "level": task.gamma,
                "feature_auc": shift_feature_auc(task.gamma),
                "propensity": prop,
                "correction": corr,
                "mu_lower_bound": float("nan") if mu_lb is None else float(mu_lb),
                "epsilon_lower_bound": float(r.epsilon_lower_bound),
                "mu_true": task.mu,
                "beta": beta,
                "m": task.m,
                "n_members": int(data.member.sum()),
                "r": int(r.counts.get("r", 0)),
                "v": int(r.counts.get("v", 0)),
                "v_retained": int(r.counts.get("v_retained", r.counts.get("v", 0))),
                "propensity_auc": prop_auc,
                "eta": float(res["global"].extra["eta"]),
                "delta_ds": float(res["global"].extra["delta_ds"]),
                "retention_mean": float(res["pointwise"].extra["retention_mean"]),
            }
        )
    return rows


def gaussian_shift_experiment(
    levels: Sequence[float] = DEFAULT_SHIFT_LEVELS,
    *,
    mu: float = 2.0 / 3.0,
    m: int = 4000,
    n_seeds: int = 20,
    seed: int = 0,
    propensities: Sequence[str] = ("oracle", "estimated"),
    estimator: str = "logistic-sigmoid",
    n_noise: int = 2,
    confidence: float = 0.95,
    oracle_delta_ds: float | None = None,
    margin_z: float = DEFAULT_MARGIN_Z,
    executor: MapExecutor | None = None,
) -> list[dict[str, Any]]:
    r"""Run the controlled Gaussian-mechanism experiment (Zero-Run paper, Sec. 7, Fig. 2(a)).

    For each of ``n_seeds`` seeds the data (membership, release, feature noise, noise
    features, tampering uniforms) are drawn once; for each shift level ``gamma`` only the
    auxiliary feature ``A = gamma (2S - 1) + Z`` changes. The attack
    ``mu Y - mu^2/2 + logit(pi_hat)`` is audited by
    :func:`~privaudit.zero_run.bounds.zero_run_bounds` with oracle and/or estimated
    propensities (design, overlap and estimator details in the module docstring). The
    true privacy level is ``mu`` at every level.

    Parameters
    ----------
    levels : sequence of float
        Distinct shift levels ``gamma >= 0``.
    mu : float
        GDP parameter of the per-example Gaussian mechanism (paper: 2/3).
    m : int
        Audit examples per seed (>= 100, so that 5 x 3 stratified cross-fitting has
        enough examples of each class).
    n_seeds : int
        Number of independent repetitions.
    seed : int
        Root seed; repetition ``i`` uses ``spawn_seeds(seed, n_seeds,
        purpose="zero-run-gaussian-shift")[i]``, so a run with more seeds extends one
        with fewer.
    propensities : sequence of {"oracle", "estimated", "estimated-plugin"}
        Which ``pi_hat`` to audit with (module docstring): ``"estimated"`` is the audit's
        own, margin-corrected correction; ``"estimated-plugin"`` the paper's plug-in (not
        valid under estimation error), for comparison.
    estimator : str
        Propensity pipeline for ``"estimated"`` and ``"estimated-plugin"`` (one of
        :data:`privaudit.zero_run.propensity.ESTIMATORS`).
    n_noise : int
        Pure-noise features given to the estimator next to ``A``.
    confidence : float
        ``1 - beta`` of every bound.
    oracle_delta_ds : float, optional
        ``delta_DS`` of the oracle global correction (``"tensor"``), in ``(0, beta / K)``
        with ``K`` the number of candidate guess counts of ``zero_run_bounds`` at this
        ``m`` (:func:`~privaudit.zero_run.bounds.default_guess_counts`); default
        ``beta / (10 K)`` (see the module docstring).
    margin_z : float
        Standard errors added to ``|logit pi_hat|`` for ``"estimated"`` (default: the
        audit's :data:`~privaudit.zero_run.bounds.DEFAULT_MARGIN_Z`).
    executor : MapExecutor, optional
        Runs the ``n_seeds x len(levels)`` tasks, e.g.
        :class:`privaudit.runtime.executor.LocalExecutor` (``n_jobs > 1`` for processes);
        default: a plain loop in this process. Results do not depend on the executor.

    Returns
    -------
    list of dict
        One JSON-compatible row per seed x level x propensity x correction, ordered that
        way, with keys ``seed_index, seed, level, feature_auc, propensity, correction,
        mu_lower_bound, epsilon_lower_bound, mu_true, beta, m, n_members, r, v`` (correct
        guesses), ``v_retained`` (correct guesses kept by tampering; ``v`` otherwise),
        ``propensity_auc`` (empirical AUC of ``pi_hat``), ``eta, delta_ds`` (of the global
        correction) and ``retention_mean`` (mean tampering retention ``b_i``). The
        ``epsilon_lower_bound`` of the oracle global row includes Steinke et al.'s
        ``2 m delta_DS`` term and is therefore 0 for ``delta_DS >> 1/m``; the experiment is
        about ``mu``.
    """
    lv = as_float_array(levels, "levels", ndim=1)
    if np.any(lv < 0.0):
        raise fail("levels", "shift levels gamma >= 0", lv.tolist())
    if np.unique(lv).size != lv.size:
        raise fail("levels", "distinct shift levels", lv.tolist())
    mu = _check_mu(mu)
    m = check_positive_int(m, "m", minimum=100)
    n_seeds = check_positive_int(n_seeds, "n_seeds")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise fail("seed", "a non-negative integer", repr(seed))
    if isinstance(propensities, str):
        raise fail("propensities", "a sequence of names", repr(propensities))
    props = tuple(propensities)
    if not props or len(set(props)) != len(props):
        raise fail("propensities", f"distinct names from {SHIFT_PROPENSITIES}", props)
    for p in props:
        check_choice(p, "propensities", SHIFT_PROPENSITIES)
    check_choice(estimator, "estimator", ESTIMATORS)
    n_noise = check_positive_int(n_noise, "n_noise", minimum=0)
    beta = 1.0 - check_probability(confidence, "confidence")
    n_cands = len(default_guess_counts(m))
    dds = beta / (10.0 * n_cands) if oracle_delta_ds is None else float(oracle_delta_ds)
    if not 0.0 < dds < beta / n_cands:
        raise fail(
            "oracle_delta_ds",
            f"a value in (0, beta / K = {beta / n_cands:.4g}) (K = {n_cands} candidate guess counts)",
            oracle_delta_ds,
        )
    if executor is not None and not callable(getattr(executor, "map", None)):
        raise fail("executor", "an executor with a map method, or None", type(executor).__name__)

    if not (math.isfinite(margin_z) and margin_z >= 0.0):
        raise fail("margin_z", "a finite number >= 0", margin_z)
    mz = float(margin_z)
    seeds = spawn_seeds(int(seed), n_seeds, purpose="zero-run-gaussian-shift")
    tasks = [
        _Task(i, s, float(g), mu, m, n_noise, props, estimator, 1.0 - beta, dds, mz)
        for i, s in enumerate(seeds)
        for g in lv
    ]
    ex: Mapper = executor if executor is not None else InlineMapper(progress=False)
    results = ex.map(_run_task, tasks, desc="zero-run gaussian shift", label=_label)
    return [row for rows in results for row in rows]


# --- summaries and the paper's qualitative claims -------------------------------------


def summarize_shift_experiment(
    rows: Sequence[dict[str, Any]], mu_true: float, *, confidence: float = 0.95
) -> list[dict[str, Any]]:
    r"""Per level x propensity x correction: distribution of ``mu_lb`` and the violation rate.

    Parameters
    ----------
    rows : sequence of dict
        Output of :func:`gaussian_shift_experiment` (keys ``level``, ``propensity``,
        ``correction``, ``mu_lower_bound``; ``feature_auc`` and ``beta`` if present).
    mu_true : float
        The true GDP parameter.
    confidence : float
        Level of the one-sided Clopper-Pearson upper bound on the violation rate.

    Returns
    -------
    list of dict
        In order of first appearance: ``level, feature_auc, propensity, correction, n,
        mean, median, p90`` (linear-interpolated 90th percentile), ``min, max``,
        ``n_above`` (runs with ``mu_lb > mu_true``: the bound claims more leakage than the
        mechanism has, i.e. it is wrong), ``frac_above`` and ``frac_above_upper``
        (Clopper-Pearson upper bound of the violation probability at ``confidence``),
        ``beta``.
    """
    mu_true = _check_mu(mu_true, "mu_true")
    a = 1.0 - check_probability(confidence, "confidence")
    if isinstance(rows, dict) or not len(rows):
        raise fail("rows", "a non-empty sequence of experiment rows", type(rows).__name__)
    groups: dict[tuple[float, str, str], list[dict[str, Any]]] = defaultdict(list)
    for i, row in enumerate(rows):
        try:
            key = (float(row["level"]), str(row["propensity"]), str(row["correction"]))
            float(row["mu_lower_bound"])
        except (KeyError, TypeError, ValueError) as exc:
            raise fail(
                f"rows[{i}]", "a dict with level, propensity, correction, mu_lower_bound", exc
            ) from None
        groups[key].append(row)
    out: list[dict[str, Any]] = []
    for (level, prop, corr), grp in groups.items():
        x = np.array([float(r["mu_lower_bound"]) for r in grp])
        if np.isnan(x).any():
            raise fail("mu_lower_bound", "numbers (no NaN)", f"NaN for {prop}/{corr} at {level}")
        k, n = int((x > mu_true).sum()), int(x.size)
        out.append(
            {
                "level": level,
                "feature_auc": float(grp[0].get("feature_auc", shift_feature_auc(level))),
                "propensity": prop,
                "correction": corr,
                "n": n,
                "mean": float(x.mean()),
                "median": float(np.median(x)),
                "p90": float(np.percentile(x, 90)),
                "min": float(x.min()),
                "max": float(x.max()),
                "n_above": k,
                "frac_above": k / n,
                "frac_above_upper": float(clopper_pearson_upper(k, n, a)),
                "beta": float(grp[0].get("beta", float("nan"))),
            }
        )
    return out


def figure2_checks(
    summary: Sequence[dict[str, Any]],
    mu_true: float,
    *,
    beta: float = 0.05,
    strong_min_level: float = 1.0,
    moderate_levels: tuple[float, float] = (0.2, 0.6),
    alpha: float = 0.01,
) -> list[dict[str, Any]]:
    r"""The three qualitative claims of Figure 2(a), evaluated on a summary.

    1. ``"uncorrected-exceeds"``: at every strong level (``gamma >= strong_min_level``;
       the default 1.0 is a features-only AUC of 0.92), the mean uncorrected ``mu_lb``
       exceeds ``mu_true`` for every propensity.
    2. ``"corrected-valid"``: for every level, propensity (except the labelled plug-in
       comparison ``"estimated-plugin"``, which is not claimed valid) and correction in
       ``{"global", "pointwise"}``, the number of runs with ``mu_lb > mu_true`` is
       compatible with a violation probability of at most ``beta``: the cell fails when
       the exact binomial p-value ``P[Bin(n, beta) >= n_above]`` is below ``alpha / K``
       (``K`` cells, Bonferroni, so that valid bounds fail this check with probability at
       most ``alpha`` whatever the dependence between cells).
    3. ``"pointwise-beats-global"``: at every moderate level (``moderate_levels[0] <=
       gamma <= moderate_levels[1]``) the mean pointwise ``mu_lb`` exceeds the mean
       global one, for every propensity.

    Returns
    -------
    list of dict
        One per claim: ``name, passed`` (True / False, or None when no level of the
        summary qualifies), ``description`` and ``details`` (list of str, one per cell).
    """
    mu_true = _check_mu(mu_true, "mu_true")
    beta = check_probability(beta, "beta")
    alpha = check_probability(alpha, "alpha")
    lo, hi = (float(x) for x in moderate_levels)
    if not 0.0 <= lo <= hi:
        raise fail("moderate_levels", "a range (low, high) with 0 <= low <= high", moderate_levels)
    if isinstance(strong_min_level, bool) or not (
        isinstance(strong_min_level, int | float | np.integer | np.floating)
        and 0.0 <= strong_min_level < math.inf
    ):
        raise fail("strong_min_level", "a finite level >= 0", repr(strong_min_level))
    cells = {(s["level"], s["propensity"], s["correction"]): s for s in summary}
    if not cells:
        raise fail("summary", "a non-empty summary", "no rows")
    if len(cells) != len(summary):
        raise fail(
            "summary",
            "one row per (level, propensity, correction)",
            f"{len(summary) - len(cells)} repeated row(s)",
        )
    levels = sorted({k[0] for k in cells})
    props = sorted({k[1] for k in cells})
    return [
        _uncorrected_exceeds(cells, levels, props, mu_true, strong_min_level),
        _corrected_valid(cells, beta, alpha),
        _pointwise_beats_global(cells, levels, props, lo, hi),
    ]


_Cells = dict[tuple[Any, Any, Any], dict[str, Any]]
"""Summary rows of :func:`figure2_checks` by ``(level, propensity, correction)``."""


def _verdict(oks: list[bool]) -> bool | None:
    """``passed`` of a claim: all cells pass, or None when no cell qualifies."""
    return None if not oks else all(oks)


def _uncorrected_exceeds(
    cells: _Cells, levels: list[Any], props: list[Any], mu_true: float, strong_min_level: float
) -> dict[str, Any]:
    """Claim 1 of Figure 2(a): mean uncorrected ``mu_lb`` > ``mu_true`` at strong shift."""
    oks, det = [], []
    for lv in (x for x in levels if x >= strong_min_level):
        for p in props:
            c = cells.get((lv, p, "uncorrected"))
            if c is not None:
                oks.append(c["mean"] > mu_true)
                det.append(f"gamma={lv:g} {p}: mean uncorrected {c['mean']:.3f} vs {mu_true:.4g}")
    return {
        "name": "uncorrected-exceeds",
        "passed": _verdict(oks),
        "description": f"mean uncorrected mu_lb > mu_true at gamma >= {strong_min_level:g}",
        "details": det,
    }


def _corrected_valid(cells: _Cells, beta: float, alpha: float) -> dict[str, Any]:
    """Claim 2 of Figure 2(a): global and pointwise violations compatible with rate <= beta."""
    corrected = [
        c
        for k, c in cells.items()
        if k[2] in ("global", "pointwise") and k[1] != "estimated-plugin"
    ]
    oks, det = [], []
    for c in corrected:
        pval = float(stats.binom.sf(c["n_above"] - 1, c["n"], beta))
        ok = pval >= alpha / len(corrected)
        oks.append(ok)
        if not ok or c["n_above"]:
            det.append(
                f"gamma={c['level']:g} {c['propensity']}/{c['correction']}: "
                f"{c['n_above']}/{c['n']} above, P[Bin(n, beta) >= k] = {pval:.3g}"
            )
    return {
        "name": "corrected-valid",
        "passed": _verdict(oks),
        "description": (
            f"global and pointwise: runs with mu_lb > mu_true compatible with rate <= "
            f"beta = {beta:g} (binomial test at {alpha:g}/{len(corrected)} per cell)"
        ),
        "details": det or [f"no corrected run above mu_true in {len(corrected)} cells"],
    }


def _pointwise_beats_global(
    cells: _Cells, levels: list[Any], props: list[Any], lo: float, hi: float
) -> dict[str, Any]:
    """Claim 3 of Figure 2(a): mean pointwise ``mu_lb`` > mean global at moderate shift."""
    oks, det = [], []
    for lv in (x for x in levels if lo <= x <= hi):
        for p in props:
            pw, gl = cells.get((lv, p, "pointwise")), cells.get((lv, p, "global"))
            if pw is not None and gl is not None:
                oks.append(pw["mean"] > gl["mean"])
                det.append(
                    f"gamma={lv:g} {p}: mean pointwise {pw['mean']:.3f} vs global {gl['mean']:.3f}"
                )
    return {
        "name": "pointwise-beats-global",
        "passed": _verdict(oks),
        "description": f"mean pointwise mu_lb > mean global at {lo:g} <= gamma <= {hi:g}",
        "details": det,
    }


# --- validation helpers ---------------------------------------------------------------


def _check_gamma(gamma: float) -> float:
    try:
        g = float(gamma)
    except (TypeError, ValueError):
        raise fail("gamma", "a number", repr(gamma)) from None
    if not (math.isfinite(g) and g >= 0.0):
        raise fail("gamma", "a finite shift level >= 0", g)
    return g


def _check_mu(mu: float, name: str = "mu") -> float:
    try:
        v = float(mu)
    except (TypeError, ValueError):
        raise fail(name, "a number", repr(mu)) from None
    if not (math.isfinite(v) and v >= 0.0):
        raise fail(name, "a finite GDP parameter >= 0 (0: the release carries no information)", v)
    return v
