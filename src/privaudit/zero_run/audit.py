"""The full Zero-Run audit: propensities, diagnostics, corrected bounds, bootstrap, falsification.

"Privacy Auditing with Zero (0) Training Run" (2026), Sections 3-6; the statistics are
specified in audit-math.md section 5. Steps (paper Section 3, "Zero-Run Auditing"):

1. the attack's scores are given (higher = more likely member; computed from the audited
   model's outputs and the features only);
2. propensities ``pi_hat(x) = P(member | x)`` are estimated from the features alone by each
   requested estimator family, out of sample (5-fold cross-fitting, 3-fold inner
   calibration; :mod:`.propensity`), or given;
3. every estimator gets the diagnostics of :mod:`.diagnostics`, the global and pointwise
   corrected bounds (:func:`.bounds.zero_run_bounds`), optionally a bootstrap over
   propensity fits (Section 6; the audited model's scores held fixed) and the falsification
   test against every other estimator's scores as a features-only challenger (Remark C.1);
4. the headline (``headline_rule``): by default the **largest** pointwise bound over the
   admitted, not falsified estimators, each estimator's bounds computed at ``beta / J``
   (``J`` admitted estimators; Bonferroni), which is ``beta``-valid by the union bound; or
   (``"min"``) the pointwise bound of the most conservative estimator at ``beta``
   (Appendix I.3). With a bootstrap the per-estimator value is its lower quantile.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privaudit._validation import (
    check_choice,
    check_positive_int,
    check_probability,
    check_same_length,
    fail,
)
from privaudit.records import AuditResult, json_number
from privaudit.runtime.mapping import InlineMapper, Mapper
from privaudit.runtime.progress import ProgressOption, progress_phase
from privaudit.runtime.seeds import derive_rng, derive_seed
from privaudit.runtime.store import ArtifactStore
from privaudit.stats._level import resolve_beta
from privaudit.stats.selection import prepare_scores
from privaudit.zero_run.bootstrap import bootstrap_pointwise, bound_args
from privaudit.zero_run.bounds import DEFAULT_MARGIN_Z, zero_run_bounds
from privaudit.zero_run.diagnostics import propensity_diagnostics
from privaudit.zero_run.placebo import PLACEBO_SCORE, placebo_check, placebo_scores
from privaudit.zero_run.propensity import (
    ESTIMATORS,
    FeatureMatrix,
    PairedPropensity,
    cross_fit_propensity_pair,
    prepare_features,
)
from privaudit.zero_run.result import ZeroRunResult
from privaudit.zero_run.tampering import (
    check_propensity,
    conservative_propensity,
    draw_uniforms,
    propensity_model_test,
)

__all__ = [
    "DEFAULT_CHALLENGERS",
    "DEFAULT_ESTIMATORS",
    "HEADLINE_RULES",
    "POINTWISE_REFUSED",
    "zero_run_audit",
]

DEFAULT_ESTIMATORS = ("logistic", "logistic-quadratic")
"""The uncalibrated maximum-likelihood logits, linear and quadratic in the features (split
correction): the linear one has the power when the logit is close to linear (a mean shift),
the quadratic one is well specified under shifts in spread and correlation too
(docs/zero_run_validity.md, the null battery)."""

DEFAULT_CHALLENGERS = ("hist-gb",)
"""Features-only propensity models that only challenge the estimators (the falsification
test, Remark C.1), never enter the headline and cost no share of ``beta``: a flexible
model catches a misspecified parametric one."""

HEADLINE_RULES = ("max", "min")
"""How the headline combines the estimators: ``"max"`` (Bonferroni over the admitted
estimators, each at ``beta / J``; the default) or ``"min"`` (each at ``beta``, the smallest)."""

POINTWISE_REFUSED: dict[str, str] = {
    "random-forest": (
        "the margin-corrected pointwise bound is not valid for random-forest propensities: "
        "on a 0-DP mechanism under shift 1 (1,500 per class) it reported eps > 0 in 7 of 20 "
        "runs at margin_z = 2 (the forest's shrinkage toward 1/2 is shared by both paired "
        "fits, so the standard error misses it; docs/zero_run_validity.md)"
    ),
}
"""Estimator families whose estimated propensities the pointwise correction refuses, and why.

Their pointwise bounds are reported as 0 (a trivial, valid lower bound) with the reason in
``extra["refused"]`` and the notes; they are left out of the headline. Given propensities
are never refused."""


def _given_propensities(
    propensity: ArrayLike | Mapping[str, ArrayLike], m: int
) -> dict[str, NDArray[np.float64]]:
    """Check the given propensity vector(s): one in (0, 1) per audit example, named."""
    items = propensity.items() if isinstance(propensity, Mapping) else [("given", propensity)]
    out: dict[str, NDArray[np.float64]] = {}
    for name, p in items:
        arr = check_propensity(p, f"propensity[{name!r}]")
        if arr.size != m:
            raise fail(f"propensity[{name!r}]", f"one score per audit example ({m})", arr.size)
        out[str(name)] = arr
    if not out:
        raise fail("propensity", "at least one propensity vector", 0)
    return out


def zero_run_audit(
    scores: ArrayLike,
    member: ArrayLike,
    *,
    features: Any = None,
    propensity: ArrayLike | Mapping[str, ArrayLike] | None = None,
    estimators: Sequence[str] = DEFAULT_ESTIMATORS,
    challengers: Sequence[str] = DEFAULT_CHALLENGERS,
    placebo: bool = True,
    confidence: float | None = None,
    beta: float | None = None,
    margin_z: float = DEFAULT_MARGIN_Z,
    headline_rule: str = "max",
    delta: float = 0.0,
    delta_ds: float = 0.0,
    n_bootstrap: int = 0,
    bootstrap_quantile: float = 0.025,
    pca_components: int | None = None,
    n_folds: int = 5,
    n_inner: int = 3,
    seed: int = 0,
    executor: Mapper | None = None,
    store: ArtifactStore | None = None,
    progress: ProgressOption = None,
) -> ZeroRunResult:
    r"""Zero-Run audit of one attack on known members vs known (shifted) non-members.

    Parameters
    ----------
    scores : array_like
        Attack score per audit example (higher = more likely member), computed from the
        audited model's outputs and the example; never from the membership labels.
    member : array_like of bool
        True for the known training records, False for the known non-members.
    features : DataFrame or 2-D array, optional
        What the propensity models see: features of ``x`` only -- never the audited
        model's losses, logits, predictions or the task label (paper App. F.2). Required
        unless ``propensity`` is given.
    propensity : array or {name: array}, optional
        Precomputed propensities (e.g. an oracle, or a released model's scores); then no
        estimation, bootstrap or cross-fitting happens.
    estimators : sequence of str
        Propensity estimator families (:data:`.propensity.ESTIMATORS`) whose pointwise
        bounds may make the headline.
    challengers : sequence of str
        Further estimator families fitted only as features-only challengers of the
        falsification test (default :data:`DEFAULT_CHALLENGERS`); they never enter the
        headline and are not counted in ``J``. Ignored when propensities are given.
    placebo : bool
        Run the placebo check (:mod:`.placebo`, estimated propensities only): every
        estimator's pointwise audit is re-run on the attack's score projected on the
        features, which leaks nothing; an estimator whose placebo bound is above 0 leaves
        the headline.
    beta : float, optional
        Failure probability of every bound and of the falsification test (default 0.05),
        used exactly.
    confidence : float, optional
        Convenience spelling of ``1 - beta``.
    margin_z : float
        Estimated propensities only: ``|logit pi_hat|`` is raised by ``margin_z`` standard
        errors (from the disagreement of two independent fits, paired cross-fitting)
        before the pointwise correction, which makes it valid under estimation error
        asymptotically (docs/zero_run_validity.md). 0 reproduces the paper's plain
        plug-in correction, which is not valid for noisy estimators such as hist-gb.
        The ``"logistic"`` estimator uses the split rule instead and ignores it
        (:func:`.bounds.pointwise_inputs`).
    headline_rule : {"max", "min"}
        ``"max"`` (default): every bound of every estimator (global, pointwise, bootstrap
        replicates) is computed at ``beta / J``, ``J`` the number of estimators not refused
        (:data:`POINTWISE_REFUSED`), and the headline is the largest pointwise bound among
        those that pass both validity checks: not falsified by the Remark C.1 test (every
        estimator and challenger as a challenger, each test at ``beta`` divided by their
        number) and not failed by the placebo check. When none passes, the headline is
        **refused** (``headline["refused"]``, bound 0 with the reason). By the union bound
        ``P(max_j B_j > truth) <= sum_j P(B_j > truth) <= J beta / J = beta`` whatever the
        dependence between the estimators' bounds, so picking the largest after seeing the
        data is valid; leaving out falsified estimators (a data-dependent choice) can only
        lower the maximum, so it keeps validity. The price is ``beta / J`` instead of
        ``beta`` per estimator (a few percent of the bound), far less than the minimum over
        estimators costs when one estimator is noisy. ``"min"``: every estimator at
        ``beta`` and the headline is the smallest (most conservative, paper Appendix I.3);
        valid as soon as one estimator is. The uncorrected comparison is always at ``beta``.
    delta : float
        delta of the (eps, delta) bounds of the uncorrected and global audits (the
        pointwise eps bound is pure DP).
    delta_ds : float
        delta_DS of the overlap assumption (global correction); see
        :func:`.bounds.zero_run_bounds`.
    n_bootstrap : int
        Bootstrap replicates of the propensity fits per estimator (paper: 600); 0 = none.
    bootstrap_quantile : float
        The lower quantile reported (paper: 0.025).
    pca_components, n_folds, n_inner :
        Passed to :func:`.propensity.cross_fit_propensity`.
    seed : int
        Seeds the folds, the models, the bootstrap and the tampering coins.
    executor : Executor, optional
        Runs the bootstrap replicates (default: inline; a ``RayExecutor`` scales out).
    store : ArtifactStore, optional
        Caches every finished bootstrap replicate, so that a long bootstrap that was
        interrupted resumes instead of starting again.
    progress : progress option, optional
        Progress of the bootstrap (:mod:`privaudit.runtime.progress`; None = a bar on a
        terminal only).

    Returns
    -------
    ZeroRunResult
    """
    # Step 1: the attack's scores and membership (given), and the settings, checked.
    s, mem = prepare_scores(scores, member)
    beta = resolve_beta(beta, confidence)
    n_bootstrap, q, seed = _check_settings(
        margin_z, headline_rule, n_bootstrap, bootstrap_quantile, seed
    )
    fit_kw = {"n_folds": n_folds, "n_inner": n_inner, "pca_components": pca_components}
    # Step 2: the propensities, given or cross-fitted on the features, and the placebo score.
    with progress_phase(
        "propensity models" if propensity is None else "given propensities", enabled=progress
    ):
        feats, fits, pis, challenger_pis = _propensities(
            s, mem, features, propensity, (estimators, challengers), n_bootstrap, seed, fit_kw
        )
        placebo_score = _placebo_score(feats, s, seed) if placebo else None
    # Step 3: every estimator's bounds (at beta / J), diagnostics, bootstrap, falsification.
    n_tests = _n_tests(pis, fits, headline_rule)
    bound_kw = {"beta": beta / n_tests, "delta": delta, "delta_ds": delta_ds, "margin_z": margin_z}
    uniforms, test_uniforms = _coins(s.size, seed)
    run = _AuditRun(
        scores=s,
        member=mem,
        feats=feats,
        fits=fits,
        pis=pis,
        challenger_pis=challenger_pis,
        args=_bound_arguments(pis, fits, bound_kw),
        placebo=placebo_score,
        beta=beta,
        bound_kw=bound_kw,
        fit_kw=fit_kw,
        uniforms=uniforms,
        test_uniforms=test_uniforms,
        n_bootstrap=n_bootstrap,
        quantile=q,
        seed=seed,
        store=store,
        executor=executor if executor is not None else InlineMapper(progress=progress),
    )
    with progress_phase("bounds, diagnostics and tests", enabled=progress):
        all_bounds = _estimator_bounds(run)
        uncorrected = _uncorrected(s, mem, pis, all_bounds, uniforms, n_tests, beta, delta)
        entries, warnings = _estimator_entries(run, all_bounds)
    # Step 4: the headline, and a warning when it is refused or the shift explains the
    # uncorrected bound.
    headline = _headline(entries, headline_rule, q, n_bootstrap, beta / n_tests)
    warnings.extend(_refusal_warning(headline))
    warnings.extend(_shift_warning(uncorrected, headline))
    given = propensity is not None
    return _result(
        run, headline, uncorrected, entries, warnings, headline_rule, n_tests, given=given
    )


@dataclasses.dataclass(frozen=True)
class _AuditRun:
    """What the per-estimator steps of one audit share (step 3)."""

    scores: NDArray[np.float64]
    member: NDArray[np.bool_]
    feats: FeatureMatrix | None
    """The prepared features; None when the propensities are given."""
    fits: Mapping[str, PairedPropensity]
    """The paired cross-fits (empty when the propensities are given)."""
    pis: Mapping[str, NDArray[np.float64]]
    """Every estimator's propensities, in the order requested."""
    challenger_pis: Mapping[str, NDArray[np.float64]]
    """The falsification test's challengers: every estimator's and challenger's propensities."""
    args: Mapping[str, Mapping[str, Any]]
    """Per estimator, the arguments of :func:`.bounds.zero_run_bounds` (:func:`_bound_arguments`)."""
    beta: float
    """The audit's beta: the falsification test's level (bounds use ``bound_kw["beta"]``)."""
    bound_kw: Mapping[str, Any]
    """beta (``beta / J`` under rule ``"max"``), delta, delta_ds and margin_z of every bound."""
    fit_kw: Mapping[str, Any]
    """n_folds, n_inner and pca_components of every propensity fit."""
    placebo: NDArray[np.float64] | None
    """The placebo score (:func:`.placebo.placebo_scores`), or None when the check is off."""
    uniforms: NDArray[np.float64]
    """The tampering coins, one per audit example, shared by every estimator and replicate."""
    test_uniforms: NDArray[np.float64]
    """The falsification test's coins."""
    n_bootstrap: int
    quantile: float
    seed: int
    store: ArtifactStore | None
    executor: Mapper


def _coins(m: int, seed: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The tampering and the falsification uniforms: one fixed draw of each per audit.

    Fixed per audit (audit-math.md 5.2: one uniform per example, the coupling that makes the
    first non-rejected eps well defined) and independent of each other (separate purposes).
    """
    uniforms = draw_uniforms(m, derive_rng(seed, purpose="zero-run-tampering"))
    test_uniforms = draw_uniforms(m, derive_rng(seed, purpose="zero-run-falsification"))
    return uniforms, test_uniforms


def _placebo_score(
    feats: FeatureMatrix | None, s: NDArray[np.float64], seed: int
) -> NDArray[np.float64] | None:
    """The placebo check's score (:func:`.placebo.placebo_scores`): the attack's score
    projected on the features, seeded by ``"zero-run-placebo"``; None when the propensities
    are given (no features)."""
    if feats is None:
        return None
    return placebo_scores(feats, s, seed=derive_seed(seed, purpose="zero-run-placebo"))


def _estimator_bounds(run: _AuditRun) -> dict[str, dict[str, AuditResult]]:
    """Every estimator's uncorrected, global and pointwise bounds
    (:func:`.bounds.zero_run_bounds` with its :func:`_bound_arguments`), all on the audit's
    tampering coins."""
    return {
        name: zero_run_bounds(run.scores, run.member, uniforms=run.uniforms, **run.args[name])
        for name in run.pis
    }


def _estimator_entries(
    run: _AuditRun, all_bounds: Mapping[str, Mapping[str, AuditResult]]
) -> tuple[list[dict[str, Any]], list[str]]:
    """Step 3 for every estimator, in order: the entries and their warnings, one after another."""
    entries: list[dict[str, Any]] = []
    warnings: list[str] = []
    for name in run.pis:
        entry, entry_warnings = _estimator_entry(run, name, all_bounds[name])
        entries.append(entry)
        warnings.extend(entry_warnings)
    return entries, warnings


def _estimator_entry(
    run: _AuditRun, name: str, bounds: Mapping[str, AuditResult]
) -> tuple[dict[str, Any], list[str]]:
    """One estimator's result entry: diagnostics, bootstrap, falsification, global and pointwise.

    The pointwise bound of a refused family (:data:`POINTWISE_REFUSED`) is set to 0
    (:func:`_refuse`), and so is the global bound of an estimator that is refused, falsified
    or fails the placebo check (``global_refused`` says why; :func:`_global_refusal`). Returns the entry and its warnings: those of the diagnostics, of the
    falsification test, then the refusal.
    """
    diag = propensity_diagnostics(run.pis[name], run.member)
    warnings = [f"[{name}] {w}" for w in diag.get("warnings", [])]
    boot = _bootstrap(run, name)
    falsification = _falsification(
        name, run.args[name], run.challenger_pis, run.member, run.beta, run.test_uniforms, warnings
    )
    refused = POINTWISE_REFUSED.get(name) if name in run.fits else None
    pointwise = bounds["pointwise"]
    if refused is not None:
        pointwise = _refuse(pointwise, refused)
        warnings.append(f"[{name}] pointwise bound refused: {refused}.")
    placebo = None
    if run.placebo is not None and refused is None:
        placebo = placebo_check(
            run.placebo, run.member, uniforms=run.uniforms, bound_args=run.args[name]
        )
        if placebo["failed"]:
            warnings.append(
                f"[{name}] placebo check failed: the same pointwise audit of a features-only "
                f"score ({PLACEBO_SCORE}) gave mu >= {placebo['mu_lower_bound']:.3g}, "
                f"eps >= {placebo['epsilon_lower_bound']:.3g} where the truth is 0: this "
                "estimator's correction is too weak for this shift; left out of the headline."
            )
    global_refused = _global_refusal(refused, falsification, placebo)
    glob = bounds["global"]
    if global_refused is not None:
        glob = _refuse(glob, global_refused)
        warnings.append(f"[{name}] global bound refused: {global_refused}.")
    entry = {
        "name": name,
        "global": glob.to_dict(),
        "global_refused": global_refused,
        "pointwise": pointwise.to_dict(),
        "pointwise_refused": refused,
        "diagnostics": diag,
        "bootstrap": boot,
        "falsification": falsification,
        "placebo": placebo,
    }
    return entry, warnings


def _bootstrap(run: _AuditRun, name: str) -> dict[str, Any] | None:
    """One estimator's bootstrap over propensity refits (Section 6), or None.

    None when no replicates were asked for, the propensities were given (nothing to refit)
    or the family is refused (:data:`POINTWISE_REFUSED`). The audited model's scores and the
    tampering coins are held fixed (:func:`.bootstrap.bootstrap_pointwise`).
    """
    if not run.n_bootstrap or run.feats is None or name in POINTWISE_REFUSED:
        return None
    return bootstrap_pointwise(
        run.feats, run.member, run.scores, run.uniforms, name, n_bootstrap=run.n_bootstrap,
        quantile=run.quantile, seed=run.seed, fit_kw=run.fit_kw, bound_kw=run.bound_kw,
        store=run.store, executor=run.executor,
    )  # fmt: skip


def _settings(run: _AuditRun, headline_rule: str, *, given: bool) -> dict[str, Any]:
    """The result's ``settings``: what the audit ran with, checked values (``confidence = 1 - beta``)."""
    return {
        "seed": run.seed,
        "estimators": list(run.pis),
        "challengers": [c for c in run.challenger_pis if c not in run.pis],
        "placebo": run.placebo is not None,
        "confidence": 1.0 - run.beta,
        "beta": run.beta,
        "margin_z": run.bound_kw["margin_z"],
        "headline_rule": headline_rule,
        "delta": run.bound_kw["delta"],
        "delta_ds": run.bound_kw["delta_ds"],
        "n_bootstrap": run.n_bootstrap,
        "bootstrap_quantile": run.quantile,
        "pca_components": run.fit_kw["pca_components"],
        "n_folds": run.fit_kw["n_folds"],
        "n_inner": run.fit_kw["n_inner"],
        "propensity": "given" if given else "cross-fitted",
        "features": list(run.feats.column_names) if run.feats is not None else None,
    }


def _result(
    run: _AuditRun,
    headline: dict[str, Any],
    uncorrected: dict[str, Any],
    entries: Sequence[dict[str, Any]],
    warnings: Sequence[str],
    headline_rule: str,
    n_tests: int,
    *,
    given: bool,
) -> ZeroRunResult:
    """The audit's result: the class sizes, the headline, the uncorrected and per-estimator
    bounds, the warnings (repeats dropped, first occurrence kept), the notes and the settings."""
    return ZeroRunResult(
        confidence=1.0 - run.beta,
        n_members=int(run.member.sum()),
        n_non_members=int((~run.member).sum()),
        headline=headline,
        uncorrected=uncorrected,
        estimators=tuple(entries),
        warnings=tuple(dict.fromkeys(warnings)),
        notes=_notes(headline_rule, n_tests, run.beta, run.bound_kw["margin_z"], given=given),
        settings=_settings(run, headline_rule, given=given),
    )


def _check_settings(
    margin_z: float, headline_rule: str, n_bootstrap: int, bootstrap_quantile: float, seed: int
) -> tuple[int, float, int]:
    """Validate the audit's settings; the checked ``(n_bootstrap, quantile, seed)``."""
    if not (math.isfinite(margin_z) and margin_z >= 0.0):
        raise fail("margin_z", "a finite number >= 0", margin_z)
    check_choice(headline_rule, "headline_rule", HEADLINE_RULES)
    n_bootstrap = check_positive_int(n_bootstrap, "n_bootstrap", minimum=0)
    q = check_probability(bootstrap_quantile, "bootstrap_quantile")
    seed = check_positive_int(seed, "seed", minimum=0)
    return n_bootstrap, q, seed


def _bound_arguments(
    pis: Mapping[str, NDArray[np.float64]],
    fits: Mapping[str, PairedPropensity],
    bound_kw: Mapping[str, Any],
) -> dict[str, dict[str, Any]]:
    """Per estimator, the keyword arguments of :func:`.bounds.zero_run_bounds`.

    Estimated propensities get the margin or the split correction
    (:func:`.bounds.pointwise_inputs`); given ones are used as they are.
    """
    return {
        name: bound_args(name, fits.get(name), bound_kw) | {"propensity": pi}
        if name not in fits
        else bound_args(name, fits[name], bound_kw)
        for name, pi in pis.items()
    }


def _check_names(names: Sequence[str], name: str, *, allow_empty: bool) -> list[str]:
    """A list of estimator family names from :data:`.propensity.ESTIMATORS`, duplicates removed."""
    if isinstance(names, str) or (not names and not allow_empty):
        raise fail(name, f"a non-empty list of names from {ESTIMATORS}", names)
    bad = [e for e in names if e not in ESTIMATORS]
    if bad:
        raise fail(name, f"names from {ESTIMATORS}", bad)
    return list(dict.fromkeys(names))


def _propensities(
    s: NDArray[np.float64],
    mem: NDArray[np.bool_],
    features: Any,
    propensity: ArrayLike | Mapping[str, ArrayLike] | None,
    families: tuple[Sequence[str], Sequence[str]],
    n_bootstrap: int,
    seed: int,
    fit_kw: Mapping[str, Any],
) -> tuple[
    FeatureMatrix | None,
    dict[str, PairedPropensity],
    dict[str, NDArray[np.float64]],
    dict[str, NDArray[np.float64]],
]:
    """Step 2 of the audit: the propensities of every estimator, given or cross-fitted.

    Given propensities are checked and used as they are (no features, fits, challengers or
    bootstrap). Otherwise every requested estimator family and every challenger family
    (``families = (estimators, challengers)``) gets one paired cross-fit on the features
    (seeded by ``"zero-run-propensity"``, the same seed for every family). Returns the
    prepared features (None when given), the estimators' paired fits (empty when given),
    ``{name: pi}`` of the estimators in the order requested, and ``{name: pi}`` of every
    falsification challenger (the estimators, then the other challengers).
    """
    estimators, challengers = families
    if propensity is not None:
        pis = _given_propensities(propensity, s.size)
        if n_bootstrap:
            raise fail(
                "n_bootstrap", "0 when propensities are given (nothing to refit)", n_bootstrap
            )
        return None, {}, pis, dict(pis)
    if features is None:
        raise fail("features", "a feature table (or precomputed propensity scores)", None)
    feats = prepare_features(features)
    check_same_length(features=np.empty(feats.n_rows), scores=s)
    names = _check_names(estimators, "estimators", allow_empty=False)
    extra = [
        c for c in _check_names(challengers, "challengers", allow_empty=True) if c not in names
    ]
    fit_seed = derive_seed(seed, purpose="zero-run-propensity")
    fitted = {
        name: cross_fit_propensity_pair(feats, mem, estimator=name, seed=fit_seed, **fit_kw)
        for name in [*names, *extra]
    }
    fits = {name: fitted[name] for name in names}
    return feats, fits, {n: f.pi for n, f in fits.items()}, {n: f.pi for n, f in fitted.items()}


def _n_tests(
    pis: Mapping[str, NDArray[np.float64]],
    fits: Mapping[str, PairedPropensity],
    headline_rule: str,
) -> int:
    """The Bonferroni divisor J of ``beta``: the estimators that can enter the headline.

    Rule ``"max"``: the estimators not refused (:data:`POINTWISE_REFUSED`; refusal is by
    name, fixed before seeing the data), at least 1; rule ``"min"``: 1.
    """
    n_admitted = sum(1 for n in pis if not (n in fits and n in POINTWISE_REFUSED))
    return max(1, n_admitted) if headline_rule == "max" else 1


def _uncorrected(
    s: NDArray[np.float64],
    mem: NDArray[np.bool_],
    pis: Mapping[str, NDArray[np.float64]],
    all_bounds: Mapping[str, Mapping[str, AuditResult]],
    uniforms: NDArray[np.float64],
    n_tests: int,
    beta: float,
    delta: float,
) -> dict[str, Any]:
    """The uncorrected comparison bound (always at ``beta``), as a dict.

    It does not use the propensities, so it is the same for every estimator: taken from the
    first estimator's bounds when those ran at ``beta``, recomputed at ``beta`` when the
    estimators ran at ``beta / J``.
    """
    first = next(iter(pis.values()))
    unc_bounds = (
        next(iter(all_bounds.values()))
        if n_tests == 1
        else zero_run_bounds(s, mem, first, uniforms=uniforms, beta=beta, delta=delta)
    )
    return unc_bounds["uncorrected"].to_dict()


def _falsification(
    name: str,
    args: Mapping[str, Any],
    pis: Mapping[str, NDArray[np.float64]],
    mem: NDArray[np.bool_],
    beta: float,
    test_uniforms: NDArray[np.float64],
    warnings: list[str],
) -> list[dict[str, Any]]:
    """Remark C.1's falsification test of one estimator against every challenger's scores.

    What is tested is the propensity the pointwise correction tampers with (the margin- or
    split-corrected one, ``args`` of :func:`.bounds.zero_run_bounds`); each estimator
    (itself included) and each challenger family serves as a features-only challenger,
    each test at ``beta`` divided by their number (Bonferroni: a conservative model is
    falsified by some challenger with probability at most ``beta``). A rejection appends a
    warning to ``warnings``. Returns one record per challenger.
    """
    used = (
        conservative_propensity(args["propensity"], args["propensity_se"], args["margin_z"])
        if args.get("propensity_se") is not None
        else args["propensity"]
    )
    falsification = []
    level = beta / len(pis)
    for challenger, cpi in pis.items():
        res = propensity_model_test(cpi, mem, used, beta=level, uniforms=test_uniforms)
        falsification.append({"challenger": challenger, **res})
        if res["rejected"]:
            warnings.append(
                f"[{name}] falsification test rejected: the features-only challenger "
                f"'{challenger}' predicts membership better than '{name}' allows "
                f"(p = {res['p_value']:.3g} <= {level:.3g}); its correction is too weak."
            )
    return falsification


def _global_refusal(
    refused: str | None,
    falsification: Sequence[Mapping[str, Any]],
    placebo: Mapping[str, Any] | None,
) -> str | None:
    """Why an estimator's global bound is not printed, or None.

    The global correction takes its overlap level ``eta`` from the same propensities as the
    pointwise one, so an estimator whose pointwise correction is refused
    (:data:`POINTWISE_REFUSED`), falsified or fails the placebo check gives no global bound
    either.
    """
    reasons = []
    if refused is not None:
        reasons.append(f"the pointwise bound of this estimator is refused ({refused})")
    if any(f.get("rejected") for f in falsification):
        reasons.append("this estimator's propensities failed the falsification test")
    if placebo is not None and placebo.get("failed"):
        reasons.append("this estimator failed the placebo check")
    if not reasons:
        return None
    return (
        "; ".join(reasons) + ": its propensities (and the overlap level eta estimated from "
        "them) are not trusted"
    )


def _refuse(pointwise: AuditResult, refused: str) -> AuditResult:
    """A refused estimator's pointwise (or global) bound: set to 0 (trivial, valid), the
    original kept.

    The unrefused values go to ``extra`` and the reason heads the notes
    (:data:`POINTWISE_REFUSED`).
    """
    return dataclasses.replace(
        pointwise,
        epsilon_lower_bound=0.0,
        mu_lower_bound=0.0,
        extra={
            **pointwise.extra,
            "refused": refused,
            "unrefused_epsilon_lower_bound": pointwise.epsilon_lower_bound,
            "unrefused_mu_lower_bound": pointwise.mu_lower_bound,
        },
        notes=(f"REFUSED (bounds set to 0): {refused}.", *pointwise.notes),
    )


def _headline_mu(e: Mapping[str, Any]) -> float:
    """An estimator entry's mu for the headline: its bootstrap lower quantile, or its point bound."""
    if e["bootstrap"] is not None:
        return float(e["bootstrap"]["mu_lower_quantile"])
    return float(e["pointwise"]["mu_lower_bound"])


def _headline_eps(e: Mapping[str, Any]) -> float:
    """An estimator entry's eps for the headline: its bootstrap lower quantile, or its point bound."""
    if e["bootstrap"] is not None:
        return float(e["bootstrap"]["epsilon_lower_quantile"])
    return float(json_number(e["pointwise"]["epsilon_lower_bound"]) or 0.0)


def _headline(
    entries: Sequence[Mapping[str, Any]],
    headline_rule: str,
    q: float,
    n_bootstrap: int,
    beta_per_estimator: float,
) -> dict[str, Any]:
    """Step 4: combine the estimators' pointwise bounds into the headline (``headline_rule``).

    ``"max"``: the largest over the admitted (not refused) estimators that pass both
    validity checks -- not falsified (Remark C.1) and not failed by the placebo check
    (:mod:`.placebo`) -- each computed at ``beta / J``; valid by the union bound, and
    leaving estimators out can only lower the maximum. ``"min"``: the smallest over the
    admitted ones (the failed ones kept: removing them could only raise it). When no
    estimator is left, the headline is **refused**: the trivial bound 0, ``refused`` true
    and ``basis`` says why -- a correct result, where a positive number would not be.
    """
    falsified = [e["name"] for e in entries if any(f["rejected"] for f in e["falsification"])]
    placebo_failed = [e["name"] for e in entries if (e.get("placebo") or {}).get("failed")]
    admitted = [e for e in entries if e["pointwise_refused"] is None]
    if headline_rule == "max":
        # Union bound: any subset of the admitted estimators may be maximised over.
        failed = set(falsified) | set(placebo_failed)
        pool = [e for e in admitted if e["name"] not in failed]
        chosen = max(pool, key=_headline_mu) if pool else None
        eps_from = max(pool, key=_headline_eps) if pool else None
    else:
        pool = admitted
        chosen = min(pool, key=_headline_mu) if pool else None
        eps_from = min(pool, key=_headline_eps) if pool else None
    head_mu = _headline_mu(chosen) if chosen is not None else 0.0
    head_eps = _headline_eps(eps_from) if eps_from is not None else 0.0
    if chosen is None:
        basis = (
            "refused: every estimator refused for the pointwise bound (trivial bound 0)"
            if not admitted
            else "refused: every admitted estimator failed a validity check (falsification "
            "test or placebo check), so no propensity model is trusted for this shift "
            "(trivial bound 0)"
        )
    elif chosen["bootstrap"] is not None:
        basis = f"bootstrap {q:g}-quantile over {n_bootstrap} propensity fits"
    else:
        basis = "point estimate"
    ranged = pool or entries
    return {
        "mu_lower_bound": head_mu,
        "epsilon_lower_bound": head_eps,
        "estimator": (chosen or entries[0])["name"],
        # the eps bound is the extreme pointwise eps over the same estimators, which may be
        # another estimator's than the mu bound's (each is valid by the same union bound)
        "epsilon_estimator": (eps_from or chosen or entries[0])["name"],
        "correction": "pointwise",
        "rule": headline_rule,
        "beta_per_estimator": beta_per_estimator,
        "basis": basis,
        "refused": chosen is None,
        "refused_estimators": [e["name"] for e in entries if e["pointwise_refused"]],
        # Estimators whose correction a features-only challenger showed to be too weak:
        # left out of the maximum (rule "max"); kept in the minimum (rule "min", where
        # removing them could only raise it).
        "falsified_estimators": falsified,
        # Estimators whose pointwise audit of a features-only score (the placebo) was
        # above 0: left out of the maximum as the falsified ones are.
        "placebo_failed_estimators": placebo_failed,
        # The spread across estimator families (paper Appendix I.3: report it).
        "mu_range_across_estimators": [
            min(_headline_mu(e) for e in ranged),
            max(_headline_mu(e) for e in ranged),
        ],
    }


def _refusal_warning(headline: Mapping[str, Any]) -> list[str]:
    """The warning of a refused headline: no bound is printed, and why."""
    if not headline["refused"]:
        return []
    return [
        f"No headline bound: {headline['basis']}. A refused headline is a correct result; the "
        "uncorrected bound is not valid under the shift. The audit could not separate the "
        "model's leakage from the difference between members and non-members: give "
        "features that explain the shift, or propensities known to be conservative."
    ]


def _shift_warning(uncorrected: Mapping[str, Any], headline: Mapping[str, Any]) -> list[str]:
    """A warning when the uncorrected bound exceeds the headline by more than 0.1 in mu.

    Then much of the apparent leakage is the members/non-members distribution shift, not
    the model: the reader should not quote the uncorrected figure.
    """
    unc_mu = uncorrected["mu_lower_bound"]
    if (
        isinstance(unc_mu, float)
        and math.isfinite(unc_mu)
        and unc_mu > headline["mu_lower_bound"] + 0.1
    ):
        return [
            f"The uncorrected audit (mu >= {unc_mu:.3g}) exceeds the corrected one "
            f"({headline['mu_lower_bound']:.3g}): much of the apparent leakage comes from the "
            "distribution shift between members and non-members, not from the model."
        ]
    return []


def _notes(
    headline_rule: str, n_tests: int, beta: float, margin_z: float, *, given: bool
) -> tuple[str, ...]:
    """The result's notes: how the headline was chosen and what the corrections assume."""
    rule_note = (
        f"Headline: the largest pointwise-corrected bound over {n_tests} admitted "
        f"propensity estimator(s) that pass the validity checks (not falsified by a "
        "features-only challenger, placebo audit of a features-only score at 0), each "
        f"computed at beta/{n_tests} = {beta / n_tests:.3g} (Bonferroni: beta-valid by the "
        "union bound; leaving estimators out can only lower the maximum)."
        if headline_rule == "max"
        else "Headline: pointwise-corrected mu-GDP bound of the most conservative propensity "
        "estimator (Zero-Run paper, Section 5 and Appendix I.3)."
    )
    notes = [
        rule_note,
        "Estimated propensities are cross-fitted on the audit data in pairs of independent "
        f"fits; the pointwise correction raises |logit pi_hat| by {margin_z:g} standard errors "
        "of that estimate (margin rule), or, for the uncalibrated MLEs ('logistic', "
        "'logistic-quadratic'), ranks with one fit and tampers with the other, its |logit| "
        "raised by half its variance (split rule, which assumes a well-specified logit: the "
        "falsification test and the placebo check are its checks); both are asymptotically "
        "valid under estimation error, not exactly (docs/zero_run_validity.md). Bounds are "
        "exact for oracle or conservative given propensities (Corollary 6.1).",
    ]
    if given:
        notes.append("Propensity scores were given, not estimated.")
    return tuple(notes)
