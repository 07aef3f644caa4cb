"""Uncorrected, globally corrected and pointwise-corrected bounds from one propensity vector.

:func:`zero_run_bounds` is the step every Zero-Run audit shares: attack scores, membership
and propensities in, three :class:`~privaudit.records.AuditResult` out. The number of
guesses ``r`` is chosen on the audit labels among ``K`` candidates, so every candidate is
tested at ``beta / K`` (Bonferroni; audit-math.md section 6, item 1), separately for the
mu and the eps bound of each correction.

* ``"uncorrected"``: the plain one-run audits (Steinke et al. 2023; Mahloujifar et al. 2024)
  of the most confident guesses, as if members and non-members were exchangeable. Under a
  distribution shift it is **not** a valid bound: it is reported to show what the
  correction removes (the paper's "No Correction" baseline, ``pi_hat = 1/2``).
* ``"global"``: Corollary 4.4 (:mod:`.global_correction`) on the same guesses.
* ``"pointwise"``: guesses ranked by confidence x retention (Remark 5.2) and tampered
  (:mod:`.tampering`); mu-GDP by Theorem 5.1.2 and pure eps-DP by Theorem 5.1.1.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privaudit._validation import as_float_array, check_same_length, fail
from privaudit.records import AuditResult
from privaudit.stats._level import resolve_beta
from privaudit.stats.fdp import gdp_mu_lb_one_run
from privaudit.stats.one_run import eps_lb_one_run
from privaudit.stats.selection import default_candidates, prepare_scores
from privaudit.zero_run.global_correction import (
    GLOBAL_GDP_METHODS,
    eps_bar_ds,
    global_eps_lb,
    global_gdp_mu_lb,
    mu_bar_ds,
    overlap_eta,
)
from privaudit.zero_run.propensity import PairedPropensity
from privaudit.zero_run.tampering import (
    check_propensity,
    conditional_eps_audit,
    conditional_gdp_audit,
    conservative_propensity,
    gdp_retention,
    propensity_aware_guesses,
)

__all__ = [
    "CORRECTIONS",
    "DEFAULT_MARGIN_Z",
    "SPLIT_ESTIMATORS",
    "default_guess_counts",
    "pointwise_inputs",
    "zero_run_bounds",
]

CORRECTIONS = ("uncorrected", "global", "pointwise")

DEFAULT_MARGIN_Z = 2.0
"""Standard errors added to ``|logit pi_hat|`` for the pointwise correction with estimated
propensities (docs/zero_run_validity.md: the null simulation needs about 2 for hist-gb)."""


SPLIT_ESTIMATORS = frozenset({"logistic", "logistic-quadratic"})
"""Estimators whose pointwise correction is the *split* one (:func:`pointwise_inputs`)."""


def pointwise_inputs(
    estimator: str, fit: PairedPropensity, margin_z: float = DEFAULT_MARGIN_Z
) -> dict[str, Any]:
    r"""The pointwise-correction arguments of :func:`zero_run_bounds` for one paired fit.

    Two rules (docs/zero_run_validity.md has the derivation and the simulations):

    * **margin** (every estimator but those in :data:`SPLIT_ESTIMATORS`): the combined
      estimate ``l_bar = (l_a + l_b) / 2`` ranks and tampers, with ``|l_bar|`` raised by
      ``margin_z`` standard errors (:func:`.tampering.conservative_propensity`);
      returns ``propensity=pi, propensity_se=se, margin_z=margin_z``.
    * **split** (``"logistic"`` and ``"logistic-quadratic"``, the uncalibrated MLEs):
      estimate *a* ranks the guesses,
      the independent estimate *b* tampers them, with ``|l_b|`` raised by
      ``s_b^2 / 2 = se^2`` (``s_b^2 = 2 se^2`` is the variance of one fit when ``se`` is
      that of the mean of two). Exact step: if ``l_b = l + e`` with ``e ~ N(0, s^2)``
      independent of everything that chose the guess (which the split gives: *a* and the
      attack's scores do not see *b*'s training data), then for every ``l``,
      ``|l + e| >= sign(l) (l + e)`` gives ``E[e^{-|l_b|}] <= e^{-|l|} E[e^{-sign(l) e}]
      = e^{-|l|} e^{s^2/2}``, so the tampering retention ``e^{-|l_b| - s^2/2}`` (and the
      eps rule's ``b(eps)``, affine in it) is at most the true one *in expectation*, which
      is what Theorem 5.1's per-guess argument uses (the coin is independent of the
      guess's success given ``x``). Asymptotic steps: the Gaussian error (asymptotic
      normality of the MLE), no bias beyond ``O(1/n)`` (a **well-specified**
      logit-linear model: under misspecification the fit converges to the best linear
      logit, which can be less extreme than the truth), and a consistent ``se``. The
      errors of records scored by the same fit are correlated, so the count is not a sum
      of independent coins; the null simulation checks that this does not break the
      binomial test. Returns ``propensity=pi_b_cons, ranking_propensity=pi_a``.
    """
    if estimator not in SPLIT_ESTIMATORS:
        return {"propensity": fit.pi, "propensity_se": fit.logit_se, "margin_z": margin_z}
    with np.errstate(over="ignore"):
        pi_a = 1.0 / (1.0 + np.exp(-fit.logit_a))
        pi_b = 1.0 / (1.0 + np.exp(-fit.logit_b))
    se2 = np.where(np.isfinite(fit.logit_se), fit.logit_se**2, np.inf)
    return {
        "propensity": conservative_propensity(pi_b, se2, 1.0),
        "ranking_propensity": np.asarray(pi_a, dtype=np.float64),
        "propensity_se": None,
        "split": True,
    }


def default_guess_counts(m: int) -> list[int]:
    """Candidate numbers of guesses ``r = m, m/2, m/4, ...`` (at most 12, at least 10 guesses).

    The same halving ladder as the one-run audits' ``(k_pos, k_neg)`` candidates
    (:func:`privaudit.stats.default_candidates`), as totals.
    """
    out = [kp + kn for kp, kn in default_candidates(m)]
    return [r for r in dict.fromkeys(out) if r >= 1]


def _counts(t: NDArray[np.int8], member: NDArray[np.bool_]) -> tuple[int, int]:
    """(r, v) of one guess vector: the number of guesses and of correct ones."""
    s = np.where(member, 1, -1)
    return int((t != 0).sum()), int(((t != 0) & (t == s)).sum())


def _best(values: list[float]) -> int:
    """Index of the largest bound among the candidates (the first on ties)."""
    return int(np.argmax(values))


def zero_run_bounds(
    scores: ArrayLike,
    member: ArrayLike,
    propensity: ArrayLike,
    *,
    uniforms: ArrayLike,
    confidence: float | None = None,
    beta: float | None = None,
    propensity_se: ArrayLike | None = None,
    margin_z: float = DEFAULT_MARGIN_Z,
    ranking_propensity: ArrayLike | None = None,
    split: bool = False,
    delta: float = 0.0,
    delta_ds: float = 0.0,
    eta: float | None = None,
    global_method: str = "tensor",
    guess_counts: Sequence[int] | None = None,
    threshold: float | None = None,
    corrections: Sequence[str] = CORRECTIONS,
) -> dict[str, AuditResult]:
    r"""The three Zero-Run bounds of one attack under one propensity model.

    Parameters
    ----------
    scores : array_like
        Attack scores (higher = more likely member), one per audit example; they must not
        be chosen using the membership labels.
    member : array_like of bool
        Known membership of each example (True = known training record).
    propensity : array_like
        ``pi_hat_i = P(member | x_i)`` for each example (out-of-sample estimates, or the
        oracle); not clipped.
    uniforms : array_like
        One ``U[0, 1)`` per example for the tampering coins (:func:`.draw_uniforms`), fixed
        for the whole audit.
    beta : float, optional
        Failure probability of every bound (default 0.05), used exactly.
    confidence : float, optional
        Convenience spelling of ``1 - beta`` (``beta`` wins when both are given).
    propensity_se : array_like, optional
        Standard errors of ``logit(propensity)`` (e.g. ``PairedPropensity.logit_se`` of
        :func:`.propensity.cross_fit_propensity_pair`). When given, the pointwise
        correction uses the conservative propensities of
        :func:`.tampering.conservative_propensity` (``|logit|`` raised by ``margin_z``
        standard errors) for ranking and tampering, for both the eps and the mu bound.
        ``None`` (oracle or given propensities): the propensities are used as they are.
    margin_z : float
        The number of standard errors (default :data:`DEFAULT_MARGIN_Z`).
    ranking_propensity : array_like, optional
        Propensities that rank the pointwise guesses (Remark 5.2) instead of the tampering
        ones, e.g. an independent estimate (the split correction of
        :func:`pointwise_inputs`); the tampering uses ``propensity``.
    split : bool
        Label the pointwise result as the split correction (notes and ``extra``); set by
        :func:`pointwise_inputs`.
    delta : float
        delta of the (eps, delta) bounds of the uncorrected and global audits. The
        pointwise eps bound is pure eps-DP (delta = 0) only: the paper's delta > 0
        tampering term is not recoverable from its text.
    delta_ds : float
        The overlap assumption's ``delta_DS`` (paper Assumption 4.3) for the global
        correction; ``eta`` is estimated (:func:`.overlap_eta`, a plug-in: a note says so)
        unless given, from the propensities the pointwise correction tampers with
        (``propensity``, made conservative by ``margin_z`` standard errors when
        ``propensity_se`` is given). The default 0 takes ``eta`` as the most extreme propensity observed in
        either class. With ``delta_DS > 0`` keep it well below ``beta * v / m`` (GDP,
        ``"tensor"``) and ``1 / m`` (eps): the ``f_{0, delta_DS}`` factor and Steinke et
        al.'s ``2 m delta`` term otherwise wipe out the bound.
    eta : float, optional
        A known overlap level (e.g. from an oracle propensity), used instead of the estimate.
    global_method : {"tensor", "absorb"}
        See :func:`.global_gdp_mu_lb`: ``"absorb"`` pays the overlap failure of any of
        the ``m`` examples (``m * delta_ds``, which must stay below ``beta``) once.
    guess_counts : sequence of int, optional
        Candidate numbers of guesses; default :func:`default_guess_counts`.
    threshold : float, optional
        The attack's decision threshold (default: the median score).
    corrections : sequence of str
        Which of :data:`CORRECTIONS` to compute (default all three).

    Returns
    -------
    dict
        ``{"uncorrected": ..., "global": ..., "pointwise": ...}`` of
        :class:`~privaudit.records.AuditResult` (``procedure`` ``"zero-run-<name>"``),
        the keys of ``corrections`` only.
    """
    s, mem = prepare_scores(scores, member)
    pi = check_propensity(propensity)
    check_same_length(scores=s, propensity=pi)
    beta = resolve_beta(beta, confidence)
    wanted = _check_settings(delta, global_method, corrections)
    ctx = _selection(beta, guess_counts, mem)
    eta_plugin = eta is None
    if eta is None:
        # the same conservative (margin-corrected) propensities the pointwise correction uses
        pi_eta = pi
        if propensity_se is not None:
            se = as_float_array(propensity_se, "propensity_se", ndim=1, allow_inf=True)
            check_same_length(propensity=pi, propensity_se=se)
            pi_eta = conservative_propensity(pi, se, margin_z)
        eta = overlap_eta(pi_eta, mem, delta_ds)

    out: dict[str, AuditResult] = {}
    if wanted & {"uncorrected", "global"}:
        rv = _plain_counts(s, mem, ctx, threshold)
        if "uncorrected" in wanted:
            out["uncorrected"] = _uncorrected_bound(rv, ctx, delta)
        if "global" in wanted:
            out["global"] = _global_bound(
                rv, ctx, delta, eta, delta_ds, global_method, eta_plugin=eta_plugin
            )
    if "pointwise" in wanted:
        out["pointwise"] = _pointwise_bound(
            s, mem, pi, ctx, uniforms=uniforms, propensity_se=propensity_se, margin_z=margin_z,
            ranking_propensity=ranking_propensity, split=split, threshold=threshold,
        )  # fmt: skip
    for res in out.values():
        if res.mu_lower_bound is not None and math.isnan(res.mu_lower_bound):  # pragma: no cover
            raise fail("bounds", "finite numbers", "NaN")
    return {c: out[c] for c in CORRECTIONS if c in out}


@dataclass(frozen=True)
class _Selection:
    """What the three bounds share: beta, the candidate numbers of guesses and the audit size.

    Every candidate is tested at ``level = beta / K`` (Bonferroni over the ``K`` candidates),
    and every result says so (``threshold_selection`` and a note).
    """

    beta: float
    cands: list[int]
    m: int
    n_members: int

    @property
    def confidence(self) -> float:
        """``1 - beta``, for display only; every test uses beta."""
        return 1.0 - self.beta

    @property
    def level(self) -> float:
        """The level of each candidate's test, ``beta / K``."""
        return self.beta / len(self.cands)

    @property
    def selection(self) -> str:
        """The results' ``threshold_selection``."""
        return f"union-bound over {len(self.cands)} candidate numbers of guesses"

    @property
    def notes(self) -> list[str]:
        """The notes every bound carries: the i.i.d. assumption and the Bonferroni choice of r."""
        return [
            "Assumes the (features, membership) pairs are i.i.d. (Zero-Run paper, Assumption 3.2).",
            f"The number of guesses r was chosen among {len(self.cands)} candidates on the audit "
            f"labels; each was tested at beta/{len(self.cands)} = {self.level:.3g} (Bonferroni).",
        ]


def _check_settings(delta: float, global_method: str, corrections: Sequence[str]) -> set[str]:
    """Validate ``delta``, ``global_method`` and ``corrections``; the set of corrections wanted."""
    if not 0.0 <= delta < 1.0:
        raise fail("delta", "a value in [0, 1)", delta)
    if global_method not in GLOBAL_GDP_METHODS:
        raise fail("global_method", f"one of {GLOBAL_GDP_METHODS}", global_method)
    wanted = set(corrections)
    if isinstance(corrections, str) or not wanted or not wanted <= set(CORRECTIONS):
        raise fail("corrections", f"a non-empty list from {CORRECTIONS}", corrections)
    return wanted


def _selection(
    beta: float, guess_counts: Sequence[int] | None, mem: NDArray[np.bool_]
) -> _Selection:
    """What the bounds share, with the candidate numbers of guesses given (checked) or default."""
    m = mem.size
    cands = default_guess_counts(m) if guess_counts is None else [int(r) for r in guess_counts]
    if not cands or any(not 1 <= r <= m for r in cands):
        raise fail("guess_counts", f"numbers of guesses in [1, {m}]", list(cands))
    return _Selection(beta, cands, m, int(mem.sum()))


def _plain_counts(
    s: NDArray[np.float64], mem: NDArray[np.bool_], ctx: _Selection, threshold: float | None
) -> list[tuple[int, int]]:
    """Per candidate, (r, v) of the most confident guesses (uncorrected and global bounds)."""
    plain = [propensity_aware_guesses(s, np.ones(ctx.m), r, threshold=threshold) for r in ctx.cands]
    return [_counts(t, mem) for t in plain]


def _uncorrected_bound(rv: list[tuple[int, int]], ctx: _Selection, delta: float) -> AuditResult:
    """The plain one-run mu-GDP and (eps, delta) bounds of the most confident guesses.

    Not valid under a distribution shift (members and non-members treated as exchangeable):
    the paper's "No Correction" baseline, reported for comparison. ``rv`` holds the (r, v)
    counts of each candidate's guesses.
    """
    m, level = ctx.m, ctx.level
    mu_u = [gdp_mu_lb_one_run(m, r, v, level) if r else 0.0 for r, v in rv]
    eps_u = [eps_lb_one_run(m, r, v, delta, level) if r else 0.0 for r, v in rv]
    iu, ju = _best(mu_u), _best(eps_u)
    return AuditResult(
        procedure="zero-run-uncorrected",
        confidence=ctx.confidence,
        delta=delta,
        epsilon_lower_bound=eps_u[ju],
        mu_lower_bound=mu_u[iu],
        counts={"m": m, "r": rv[iu][0], "v": rv[iu][1], "n_members": ctx.n_members},
        threshold_selection=ctx.selection,
        extra={
            "beta": ctx.beta,
            "beta_per_test": level,
            "guess_counts": ctx.cands,
            "counts_epsilon": list(rv[ju]),
        },
        notes=(
            "NOT a valid bound under distribution shift: members and non-members are treated "
            "as exchangeable (pi_hat = 1/2). Shown for comparison only.",
            *ctx.notes,
        ),
    )


def _global_bound(
    rv: list[tuple[int, int]],
    ctx: _Selection,
    delta: float,
    eta: float,
    delta_ds: float,
    global_method: str,
    *,
    eta_plugin: bool = False,
) -> AuditResult:
    """Corollary 4.4's globally corrected bounds of the same guesses as the uncorrected one.

    The overlap level ``eta`` (with ``delta_DS``) is paid as a composition penalty
    (:mod:`.global_correction`). With ``global_method="absorb"`` the overlap failure (some
    of the ``m`` examples outside the overlap region: probability up to ``m delta_DS``, a
    union bound over the examples) is one event shared by every candidate, so it is paid
    once (the level of each candidate's test is raised accordingly). ``eta_plugin``: ``eta``
    was estimated from the propensities (a note says so).
    """
    m, level, beta = ctx.m, ctx.level, ctx.beta
    g_level = level
    if global_method == "absorb":
        if not m * delta_ds < beta:
            raise fail(
                "delta_ds",
                f"m * delta_ds < beta ({beta:g}) for global_method 'absorb' (m = {m}: some "
                "example falls outside the overlap region with probability up to "
                "m * delta_ds); use global_method 'tensor'",
                delta_ds,
            )
        # The overlap failure (probability <= m delta_DS) is one event shared by every
        # candidate, so it is paid once: each candidate's G_mu test runs at
        # (beta - m delta_DS) / K, and global_gdp_mu_lb(method="absorb") tests at its
        # beta argument minus m delta_DS.
        g_level = (beta - m * delta_ds) / len(ctx.cands) + m * delta_ds
    mu_g = [
        global_gdp_mu_lb(m, r, v, eta=eta, delta_ds=delta_ds, beta=g_level, method=global_method)
        for r, v in rv
    ]
    eps_g = [
        global_eps_lb(m, r, v, eta=eta, delta_ds=delta_ds, delta=delta, beta=level) for r, v in rv
    ]
    ig, jg = _best(mu_g), _best(eps_g)
    n1 = ctx.n_members
    global_notes = [
        f"Overlap eta = {eta:.4g} with delta_DS = {delta_ds:g}: eps_bar_DS = {eps_bar_ds(eta):.4g}, "
        f"mu_bar_DS = {mu_bar_ds(eta):.4g} (Corollary 4.4).",
        *ctx.notes,
    ]
    if eta_plugin:
        global_notes.append(
            "eta was estimated from the propensities (the margin-corrected ones when standard "
            "errors are given): a plug-in estimate of a population quantity, valid only "
            "asymptotically; give a known eta for an exact global correction."
        )
    if abs(n1 / m - 0.5) > 0.05:
        global_notes.append(
            f"Members are {n1}/{m} of the examples: with unbalanced classes the global GDP and "
            "delta_DS > 0 composition statements assume the one-run prior of 1/2 (AMBIGUOUS in "
            "audit-math.md 5.1); prefer the pointwise correction."
        )
    return AuditResult(
        procedure="zero-run-global",
        confidence=ctx.confidence,
        delta=delta,
        epsilon_lower_bound=eps_g[jg],
        mu_lower_bound=mu_g[ig],
        counts={"m": m, "r": rv[ig][0], "v": rv[ig][1], "n_members": n1},
        threshold_selection=ctx.selection,
        extra={
            "beta": beta,
            "beta_per_test": level,
            "eta": eta,
            "delta_ds": delta_ds,
            "eps_bar_ds": eps_bar_ds(eta),
            "mu_bar_ds": mu_bar_ds(eta),
            "global_method": global_method,
            "counts_epsilon": list(rv[jg]),
        },
        notes=tuple(global_notes),
    )


def _pointwise_propensities(
    pi: NDArray[np.float64],
    propensity_se: ArrayLike | None,
    margin_z: float,
    ranking_propensity: ArrayLike | None,
    split: bool,
) -> tuple[NDArray[np.float64], NDArray[np.float64], dict[str, object]]:
    """The propensities the pointwise correction tampers with and the retentions that rank.

    With standard errors, the conservative propensities (``|logit|`` raised by ``margin_z``
    of them) replace ``pi``; a ``ranking_propensity`` (split correction) ranks instead of
    the tampering one. Returns (tampering propensities, ranking retentions, what to add to
    the result's ``extra``).
    """
    margin_extra: dict[str, object] = {}
    pi_pw = pi
    if propensity_se is not None:
        se = as_float_array(propensity_se, "propensity_se", ndim=1, allow_inf=True)
        check_same_length(propensity=pi, propensity_se=se)
        pi_pw = conservative_propensity(pi, se, margin_z)
        finite = se[np.isfinite(se)]
        margin_extra = {
            "margin_z": float(margin_z),
            "logit_se_median": float(np.median(finite)) if finite.size else math.inf,
        }
    b_rank = gdp_retention(pi_pw)
    if ranking_propensity is not None:
        pr = check_propensity(ranking_propensity, "ranking_propensity")
        check_same_length(propensity=pi, ranking_propensity=pr)
        b_rank = gdp_retention(pr)
        margin_extra["ranking"] = "independent estimate"
    if split:
        margin_extra["correction"] = "split"
    return pi_pw, b_rank, margin_extra


def _validity_note(split: bool, estimated: bool, margin_z: float) -> str:
    """What the pointwise bound's validity rests on: split rule, margin rule or given propensities."""
    if split:
        return (
            "Estimated propensities, split correction: one independent estimate ranks the "
            "guesses, the other tampers them with |logit| raised by half its variance "
            "(Jensen); valid asymptotically for a well-specified, asymptotically normal "
            "estimator (docs/zero_run_validity.md; the falsification test and the placebo "
            "check test the specification)."
        )
    if estimated:
        return (
            f"Estimated propensities: eps_DS raised by {margin_z:g} standard errors of the "
            "logit estimate (conservative_propensity) before ranking and tampering; valid "
            "asymptotically under a Gaussian working model of the estimation error, not "
            "exactly (docs/zero_run_validity.md)."
        )
    return (
        "Propensities used as given: exact when they are the true or conservative "
        "propensities (Corollary 6.1); estimated ones without a margin can be invalid."
    )


def _pointwise_bound(
    s: NDArray[np.float64],
    mem: NDArray[np.bool_],
    pi: NDArray[np.float64],
    ctx: _Selection,
    *,
    uniforms: ArrayLike,
    propensity_se: ArrayLike | None,
    margin_z: float,
    ranking_propensity: ArrayLike | None,
    split: bool,
    threshold: float | None,
) -> AuditResult:
    """Theorem 5.1's pointwise correction: propensity-aware guesses, tampered, then audited.

    Guesses are ranked by confidence x retention (Remark 5.2); the conditional mu-GDP and
    pure eps-DP audits run on one fixed draw of tampering ``uniforms`` (delta = 0).
    """
    pi_pw, b_rank, margin_extra = _pointwise_propensities(
        pi, propensity_se, margin_z, ranking_propensity, split
    )
    level = ctx.level
    aware = [propensity_aware_guesses(s, b_rank, r, threshold=threshold) for r in ctx.cands]
    gdp = [conditional_gdp_audit(t, mem, pi_pw, beta=level, uniforms=uniforms) for t in aware]
    eps = [conditional_eps_audit(t, mem, pi_pw, beta=level, uniforms=uniforms) for t in aware]
    ip, jp = _best([g.value for g in gdp]), _best([e.value for e in eps])
    return AuditResult(
        procedure="zero-run-pointwise",
        confidence=ctx.confidence,
        delta=0.0,
        epsilon_lower_bound=eps[jp].value,
        mu_lower_bound=gdp[ip].value,
        counts={**gdp[ip].counts(), "n_members": ctx.n_members},
        threshold_selection=ctx.selection,
        extra={
            "beta": ctx.beta,
            "beta_per_test": level,
            "retention_mean": float(gdp_retention(pi_pw).mean()),
            "counts_epsilon": eps[jp].counts(),
            **margin_extra,
        },
        notes=(
            "Pointwise correction by tampering (Theorem 5.1): mu-GDP with b_i = exp(-eps_DS(x_i)) "
            "(equation (2) reconstructed, audit-math.md 5.2), pure eps-DP with "
            "b_i = (1 + e^{-eps-eps_DS}) / (1 + e^{-eps}); the eps bound is for delta = 0.",
            _validity_note(split, propensity_se is not None, margin_z),
            *ctx.notes,
        ),
    )
