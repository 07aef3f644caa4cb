"""One entry point for the score-level audit procedures, by name.

``privaudit audit`` calls it on a user's table, and ``privaudit verify`` calls it again
on the arrays and parameters saved in an audit bundle, so a re-verified bound comes from
the very function that produced it.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from numpy.typing import ArrayLike

from privaudit._validation import fail
from privaudit.records import AuditResult
from privaudit.stats.fdp import fdp_one_run_audit
from privaudit.stats.multi_run import multi_run_audit
from privaudit.stats.one_run import one_run_audit
from privaudit.stats.panoramia import panoramia_audit

__all__ = ["PROCEDURES", "ProcedureParams", "run_procedure"]

PROCEDURES = ("multi-run", "one-run", "fdp-one-run", "panoramia")


@dataclasses.dataclass(frozen=True)
class ProcedureParams:
    """The parameters of :func:`run_procedure` (a bundle stores them with ``asdict``).

    ``beta`` is the failure probability (used exactly; default 0.05), ``confidence`` the
    convenience spelling ``1 - beta`` (``beta`` wins); ``delta`` that of the audited
    (eps, delta)-DP; ``k_pos``/``k_neg`` fixed guess counts (None: selected by
    ``selection``, ``"union-bound"`` or ``"held-out"``); ``thresholds`` PANORAMIA's policy
    (``"quantiles"``, ``"code"`` or ``"all"``); ``gaussian_epsilon`` makes ``fdp-one-run``
    report eps(mu_lb, delta); ``parametric`` adds a labelled assumption-based estimate to
    the one-run procedures; ``seed`` drives the held-out split.
    """

    confidence: float | None = None
    beta: float | None = None
    delta: float = 0.0
    k_pos: int | None = None
    k_neg: int | None = None
    selection: str = "union-bound"
    thresholds: str = "quantiles"
    gaussian_epsilon: bool = False
    seed: int = 0
    parametric: str | None = None


def run_procedure(
    procedure: str,
    scores: ArrayLike,
    member: ArrayLike,
    *,
    baseline: ArrayLike | None = None,
    params: ProcedureParams = ProcedureParams(),
) -> AuditResult:
    """Run the audit procedure named ``procedure`` on per-example scores.

    ``multi-run`` (:func:`multi_run_audit`, one row per training run), ``one-run``
    (:func:`one_run_audit`, Steinke et al. 2023), ``fdp-one-run``
    (:func:`fdp_one_run_audit`, Mahloujifar et al. 2024; ``gaussian_epsilon`` reports
    eps(mu_lb, delta)) or ``panoramia`` (:func:`panoramia_audit`, Kazmi et al. 2024; needs
    ``baseline``, delta = 0, no guess counts); ``params`` (:class:`ProcedureParams`)
    holds the rest. Parameter errors name the CLI option they come from.
    """
    p = params
    confidence, delta, k_pos, k_neg = p.confidence, p.delta, p.k_pos, p.k_neg
    selection, seed, beta = p.selection, p.seed, p.beta
    if procedure not in PROCEDURES:
        raise fail("--procedure", "one of " + ", ".join(PROCEDURES), repr(procedure))
    if p.parametric is not None and procedure not in ("one-run", "fdp-one-run"):
        raise fail("--parametric", "one-run or fdp-one-run procedures only", procedure)
    s = np.asarray(scores)
    m = np.asarray(member)
    if procedure == "multi-run":
        if k_pos is not None or k_neg is not None:
            raise fail("--k-pos/--k-neg", "no guess counts for multi-run", "given")
        return multi_run_audit(
            s, m, beta=beta, confidence=confidence, delta=delta, selection=selection, rng=seed
        )
    if procedure == "one-run":
        return one_run_audit(
            s,
            m,
            k_pos=k_pos,
            k_neg=k_neg,
            beta=beta,
            confidence=confidence,
            delta=delta,
            parametric=p.parametric,
            selection=selection,
            rng=seed,
        )
    if procedure == "fdp-one-run":
        return fdp_one_run_audit(
            s,
            m,
            k_pos=k_pos,
            k_neg=k_neg,
            beta=beta,
            confidence=confidence,
            delta=delta,
            parametric=p.parametric,
            epsilon="gaussian" if p.gaussian_epsilon else "fdp",
            selection=selection,
            rng=seed,
        )
    return _run_panoramia(s, m, baseline, p)


def _run_panoramia(
    s: np.ndarray, m: np.ndarray, baseline: ArrayLike | None, p: ProcedureParams
) -> AuditResult:
    """PANORAMIA once its preconditions hold: delta = 0, no guess counts, a baseline."""
    if p.delta != 0.0:
        raise fail("--delta", "0 for panoramia (pure-DP tests only)", p.delta)
    if p.k_pos is not None or p.k_neg is not None:
        raise fail("--k-pos/--k-neg", "no guess counts for panoramia", "given")
    if baseline is None:
        raise fail("--baseline-col", "baseline scores for panoramia", "none")
    if p.thresholds == "code":
        _check_code_grid_range(s, baseline)
    return panoramia_audit(
        s, baseline, m, beta=p.beta, confidence=p.confidence, thresholds=p.thresholds
    )


def _check_code_grid_range(s: np.ndarray, baseline: ArrayLike) -> None:
    """The authors' code grid covers [0, 1]: scores and baseline must lie in it."""
    for name, vals in (("scores", s), ("baseline", np.asarray(baseline))):
        if vals.size and (vals.min() < 0.0 or vals.max() > 1.0):
            raise fail(
                "--thresholds code",
                f"{name} in [0, 1] (use --thresholds quantiles or --thresholds all for "
                "other scores)",
                f"range [{vals.min():.4g}, {vals.max():.4g}]",
            )
