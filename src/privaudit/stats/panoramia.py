"""PANORAMIA bounds (Kazmi et al., NeurIPS 2024, Section 4).

Each of ``m`` test slots shows a real member (``member = 1``) or a generated non-member
(``member = 0``). A baseline classifier sees only the record; the MIA sees the record
and the target model. From member guesses only ("score > t"), for each threshold ``t``:
``r_t`` guesses, ``v_t`` correct, and

* c-closeness test of the generator (Prop. 1), on the baseline scores:
  ``p = P[Bin(r_t, q(c)) >= v_t]``;
* MIA test (Prop. 2), on the MIA scores: ``p = P[Bin(r_t, q(c + eps)) >= v_t]``;

so each bound is ``max_t eps_lb_one_run(m, r_t, v_t, 0, beta_t)`` with ``beta/2`` per
test (Corollary 1) and a union bound over the recall levels (thresholds) tried
(audit-math.md section 4). ``eps_tilde = max(0, {c+eps}_lb - c_lb)``. The sign is the
paper's: the authors' plotting code prints ``c_lb - {c+eps}_lb``; privaudit does not.

``eps_tilde`` is a lower bound on eps only if ``c_lb`` is tight (Sec. 4.2): it is a
measurement reported under its own name with that caveat, never as an eps lower bound and
never checked against a claimed eps (:func:`panoramia_audit`).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privaudit._validation import (
    as_float_array,
    check_choice,
    check_probability,
    check_same_length,
    fail,
)
from privaudit.records import AuditResult
from privaudit.stats._level import resolve_beta
from privaudit.stats._tails import logit_cp_lower
from privaudit.stats.one_run import certify_pure
from privaudit.stats.selection import prepare_scores

__all__ = [
    "EPSILON_TILDE_CAVEAT",
    "NOT_GATED_REASON",
    "panoramia_audit",
    "panoramia_cap",
    "panoramia_curve",
    "panoramia_hoeffding_lb",
    "panoramia_lb",
]

THRESHOLD_POLICIES = ("quantiles", "code", "all")
"""Threshold policies: ``"quantiles"`` (default; any real scores), ``"code"`` (the authors'
100-point grid of [0, 1]), ``"all"`` (every distinct score, the paper's text)."""

N_QUANTILES = 100

#: What eps_tilde is (Kazmi et al. 2024, Sec. 4.2, "Measurement semantics"): printed with it
#: wherever it is shown.
EPSILON_TILDE_CAVEAT = (
    "epsilon_tilde = max(0, {c+eps}_lb - c_lb) is a lower bound on the target's eps only if "
    "c_lb is tight (no detector of generated records beats the baseline); otherwise it is a "
    "measurement, not a bound (Kazmi et al. 2024, Section 4.2)"
)

#: Why a PANORAMIA audit gates no claimed epsilon (``AuditResult.extra["not_gated_reason"]``).
NOT_GATED_REASON = (
    "PANORAMIA certifies no lower bound on eps alone: c_lb bounds the generator's closeness c "
    "from below and {c+eps}_lb bounds c + eps from below, so eps >= {c+eps}_lb - c holds for "
    "the true c, which the test slots never bound from above; epsilon_lower_bound is 0 and no "
    "claimed epsilon is checked (a valid eps lower bound needs real non-members: RM;RN in "
    "privaudit panoramia, or audit --procedure one-run on real members and non-members)"
)


def _quantile_thresholds(scores: NDArray[np.float64], n: int) -> NDArray[np.float64]:
    """Thresholds ``t_j`` such that "score > t_j" guesses (at most) the top ``k_j`` scores.

    ``k_j = ceil(j m / L)``, ``j = 1..L``, ``L = min(n, m)``: a grid of guess counts
    fixed by ``m`` alone. ``t_j`` is the ``(k_j + 1)``-th largest score (``-inf`` for
    ``k_j = m``), so a block of ties at the boundary is left out as a whole and the
    guess set depends on the scores only, never on the labels or the record order.
    """
    m = scores.size
    n_levels = min(n, m)
    ks = np.unique(np.ceil(np.arange(1, n_levels + 1) * m / n_levels).astype(np.int64))
    desc = np.sort(scores)[::-1]
    return np.where(ks < m, desc[np.minimum(ks, m - 1)], -np.inf)


def _member_guess_counts(
    scores: NDArray[np.float64], member: NDArray[np.bool_], policy: str | NDArray[np.float64]
) -> tuple[NDArray[np.int64], NDArray[np.int64], int]:
    """``(r_t, v_t)`` for each threshold of the policy, and the union-bound size L."""
    m = scores.size
    if isinstance(policy, str) and policy == "all":
        # every distinct "score >= s" member-guess set: the top-j sets at tie boundaries;
        # at most m recall levels (paper Section 4.2), union bound beta/(2m).
        order = np.argsort(-scores, kind="stable")
        s_desc = scores[order]
        cum = np.cumsum(member[order], dtype=np.int64)
        # keep the last index of each block of ties
        last = np.flatnonzero(np.r_[s_desc[1:] != s_desc[:-1], True])
        return (last + 1).astype(np.int64), cum[last], m
    if isinstance(policy, str):
        thr = (
            _quantile_thresholds(scores, N_QUANTILES)
            if policy == "quantiles"
            else np.linspace(0.0, 1.0, 100)
        )
    else:
        thr = np.asarray(policy, dtype=np.float64)
    srt = np.sort(scores)
    pos = np.sort(scores[member])
    r = m - np.searchsorted(srt, thr, side="right")  # strict "score > t" (authors' code)
    v = pos.size - np.searchsorted(pos, thr, side="right")
    return r.astype(np.int64), v.astype(np.int64), int(thr.size)


def _raw_lbs(r: NDArray[np.int64], v: NDArray[np.int64], beta_t: float) -> NDArray[np.float64]:
    """``logit(CP_lower(v_t, r_t, beta_t))`` per threshold, ``-inf`` where nothing is right."""
    ok = (r > 0) & (v > 0)
    vals = np.full(r.shape, -np.inf)
    if ok.any():
        vals[ok] = np.asarray(logit_cp_lower(v[ok], r[ok], beta_t))
    return vals


def _max_lb(r: NDArray[np.int64], v: NDArray[np.int64], beta_t: float) -> tuple[float, int]:
    """``max_t`` of the certified pure-DP one-run bound (``0`` when none is positive).

    Each candidate is certified (rounded down against the exact tail); a threshold is
    certified only while its uncertified value could still beat the best certified
    one, so usually only the argmax is. The result equals ``max`` of
    :func:`panoramia_curve`'s ``lb``.
    """
    vals = _raw_lbs(r, v, beta_t)
    if not np.isfinite(vals).any():
        return 0.0, -1
    log_beta = math.log(beta_t)
    best_val, best = 0.0, int(np.argmax(vals))
    for t in np.argsort(-vals, kind="stable"):
        if not vals[t] > best_val:
            break
        cert = certify_pure(float(vals[t]), int(r[t]), int(v[t]), log_beta)
        if cert > best_val:
            best_val, best = cert, int(t)
    return best_val, best


def _guess_counts_checked(
    scores: ArrayLike, member: ArrayLike, thresholds: str | ArrayLike
) -> tuple[NDArray[np.int64], NDArray[np.int64], int, int]:
    """``(r_t, v_t, L, m)`` of a threshold policy after the boundary checks."""
    s, mem = prepare_scores(scores, member)
    policy: str | NDArray[np.float64]
    if isinstance(thresholds, str):
        policy = check_choice(thresholds, "thresholds", THRESHOLD_POLICIES)
        if policy == "code" and (s.min() < 0.0 or s.max() > 1.0):
            raise fail(
                "scores",
                'values in [0, 1] for the "code" threshold grid (use the "quantiles" or "all" policy)',
                f"range [{s.min():.4g}, {s.max():.4g}]",
            )
    else:
        policy = as_float_array(thresholds, "thresholds", ndim=1)
    r, v, n_union = _member_guess_counts(s, mem, policy)
    return r, v, n_union, int(s.size)


def panoramia_lb(
    scores: ArrayLike,
    member: ArrayLike,
    *,
    beta_per_test: float,
    thresholds: str | ArrayLike = "quantiles",
) -> tuple[float, dict[str, int | float]]:
    r"""``max_t`` of the one-run pure-DP bound over member-guess thresholds (one score vector).

    Kazmi et al. (2024), Section 4 (Props. 1-2, Corollary 1); audit-math.md section 4:

    .. math:: lb = \max_t\ \varepsilon_{lb}(m, r_t, v_t, \delta=0, \beta_{test}/L)

    where ``L`` is the number of thresholds (``"quantiles"``, the default: the ``L =
    min(100, m)`` guess sets "the top ``ceil(j m / L)`` scores", ``j = 1..L``, with a tie
    block at the boundary left out; the counts depend on ``m`` only, so the thresholds are
    fixed before the labels are seen and any real scores work -- logits, log-likelihood
    ratios; ``"code"``: 100 points of ``linspace(0, 1)``
    with "score > t", scores in [0, 1] only (the authors' code); ``"all"``: every distinct score with "score >= s", ``L = m``; an
    explicit grid of ``L`` values fixed in advance, with "score > t"). The inner bound is
    ``logit(CP_lower(v_t, r_t, beta_t))`` (see :func:`privaudit.stats.eps_lb_one_run`),
    certified against the exact tail (every threshold whose uncertified value could
    still be the maximum). Returns the bound and the counts at the maximiser.
    """
    r, v, n_union, m = _guess_counts_checked(scores, member, thresholds)
    beta_t = check_probability(beta_per_test, "beta_per_test") / n_union
    lb, best = _max_lb(r, v, beta_t)
    info: dict[str, int | float] = {
        "m": m,
        "r": int(r[best]) if best >= 0 else 0,
        "v": int(v[best]) if best >= 0 else 0,
        "n_thresholds": int(n_union),
        "beta_per_threshold": beta_t,
    }
    return lb, info


def panoramia_cap(member: ArrayLike, *, beta_per_test: float) -> float:
    """The largest :func:`panoramia_lb` any scores reach on these test slots: the bound of
    perfect scores tied within each class (1 for members, 0 otherwise), whose guess set at
    the quantile threshold past the members is exactly the members (the tie block at the
    boundary is left out), the largest all-correct set any scores can give. ``c_lb`` at the cap means the baseline told the generated records apart
    perfectly, and ``eps_tilde <= cap - c_lb`` whatever the target leaks (Kazmi et al. 2024,
    Sec. 5.3: the power of the test is bounded by ``m``; the cap grows like ``log m``)."""
    m = np.asarray(member, dtype=bool)
    lb, _ = panoramia_lb(m.astype(np.float64), m, beta_per_test=beta_per_test)
    return lb


def panoramia_curve(
    scores: ArrayLike,
    member: ArrayLike,
    *,
    beta_per_test: float,
    thresholds: str | ArrayLike = "quantiles",
) -> dict[str, list[float]]:
    r"""Per-threshold recall, precision and bound ``lb_t`` of :func:`panoramia_lb`.

    The same threshold grid and the same union bound (``beta_t = beta_per_test / L``)
    as :func:`panoramia_lb`, so ``max(lb) == panoramia_lb(...)[0]`` exactly (tested).
    For each threshold ``t`` with ``r_t`` member guesses of which ``v_t`` are right,
    over ``m`` slots with ``n_1`` members: ``recall = v_t / n_1``, ``precision = v_t /
    r_t`` and ``lb_t = max(0, eps_lb(m, r_t, v_t, 0, beta_t))``, each certified against
    the exact binomial tail; thresholds that guess nothing (``r_t = 0``, a tie block at
    the top) are left out (no precision; their bound is 0). Kazmi et al. (2024),
    Section 5.2, Figs. 3-4: precision vs recall with the precision a bound ``B``
    implies, ``e^B / (1 + e^B)`` (the largest precision a ``B``-close generator, or a
    ``B``-DP target, allows in expectation), and the bound vs recall.
    """
    r, v, n_union, _ = _guess_counts_checked(scores, member, thresholds)
    _, mem = prepare_scores(scores, member)
    n_pos = int(mem.sum())
    beta_t = check_probability(beta_per_test, "beta_per_test") / n_union
    keep = r > 0
    r, v = r[keep], v[keep]
    raw = _raw_lbs(r, v, beta_t)
    log_beta = math.log(beta_t)
    lb = [
        certify_pure(float(x), int(rr), int(vv), log_beta) if x > 0 else 0.0
        for x, rr, vv in zip(raw, r, v, strict=True)
    ]
    precision = v / r
    recall = v / n_pos if n_pos else np.zeros(r.shape)
    return {
        "recall": [float(x) for x in recall],
        "precision": [float(x) for x in precision],
        "lb": lb,
    }


def panoramia_hoeffding_lb(
    scores: ArrayLike, member: ArrayLike, *, beta_per_test: float, thresholds: str = "quantiles"
) -> float:
    r"""The paper's readable (Hoeffding) version of the bound; always looser.

    Reject ``x`` when ``precision_t >= q(x) + sqrt(log(1/beta_t) / (2 r_t))`` (Kazmi et al.
    2024, Section 4; audit-math.md section 4), so
    ``lb_t = logit(precision_t - sqrt(log(1/beta_t)/(2 r_t)))`` where that is in (1/2, 1).
    """
    s, mem = prepare_scores(scores, member)
    policy = check_choice(thresholds, "thresholds", THRESHOLD_POLICIES)
    r, v, n_union = _member_guess_counts(s, mem, policy)
    beta_t = check_probability(beta_per_test, "beta_per_test") / n_union
    ok = r > 0
    if not ok.any():
        return 0.0
    x = v[ok] / r[ok] - np.sqrt(math.log(1.0 / beta_t) / (2.0 * r[ok]))
    x = x[(x > 0.5) & (x < 1.0)]
    if x.size == 0:
        return 0.0
    xm = float(x.max())
    # round down: nudge the precision bound below before the logit
    xm = xm * (1.0 - 1e-12)
    return max(0.0, math.log(xm) - math.log1p(-xm))


def panoramia_audit(
    mia_scores: ArrayLike,
    baseline_scores: ArrayLike,
    member: ArrayLike,
    *,
    confidence: float | None = None,
    beta: float | None = None,
    thresholds: str | ArrayLike = "quantiles",
) -> AuditResult:
    r"""PANORAMIA audit: ``c_lb``, ``{c+eps}_lb`` and ``eps_tilde`` (Kazmi et al. 2024, Sec. 4).

    .. math::

        c_{lb} = \max_t lb_t(\text{baseline}), \quad
        \{c+\varepsilon\}_{lb} = \max_t lb_t(\text{MIA}), \quad
        \tilde\varepsilon = \max(0, \{c+\varepsilon\}_{lb} - c_{lb})

    each test at ``beta/2`` (Corollary 1), divided over the thresholds (``"quantiles"``,
    the default: ``beta/(2L)`` over ``L = min(100, m)`` top-k guess sets fixed by ``m``,
    for any real scores; ``"code"``:
    ``beta/(2*100)`` on a 100-point grid of [0, 1], as the authors' code; ``"all"``:
    ``beta/(2m)`` over every distinct score, as the paper's text; or a grid fixed in
    advance). Only "member" guesses count (c-closeness bounds the generator's density
    from one side only).

    What is a bound and what is not (Kazmi et al. 2024, Sec. 4.2, "Measurement
    semantics": eps_tilde "does not imply a lower-bound on eps"):

    * ``c_lb`` is a lower confidence bound on the generator's closeness ``c``
      (Prop. 1) and ``{c+eps}_lb`` one on ``c + eps`` (Prop. 2), jointly at ``1 - beta``;
    * ``eps_tilde`` is a lower bound on the target's eps only if ``c_lb`` is tight (the
      true ``c`` equals it): ``eps >= {c+eps}_lb - c`` for the true ``c``, which the
      test slots bound from below only. It is reported as ``extra["epsilon_tilde"]``
      with :data:`EPSILON_TILDE_CAVEAT` (``extra["epsilon_tilde_caveat"]``), **never**
      as ``epsilon_lower_bound``;
    * the valid lower bound on eps alone that these slots certify is the trivial one:
      ``epsilon_lower_bound`` is ``0.0``, and ``extra["gated"]`` is ``False`` with
      :data:`NOT_GATED_REASON`: no figure of this audit is checked against a claimed
      eps (``--claimed-epsilon`` of ``privaudit audit`` exits 0 on it, and the CI
      formats skip it). ``{c+eps}_lb`` is valid but bounds ``c + eps``, so a claim on
      eps cannot be refuted by it. A valid eps lower bound without retraining needs
      real non-members (RM;RN of ``privaudit panoramia``: ``c = 0``).

    Earlier versions put ``eps_tilde`` in ``epsilon_lower_bound`` and ``privaudit audit``
    gated ``--claimed-epsilon`` on it. The pure-DP (delta = 0) tests only; the
    (c, gamma) relaxation of Appendix E is not implemented.
    """
    beta = resolve_beta(beta, confidence)
    a = as_float_array(mia_scores, "mia_scores", ndim=1)
    b = as_float_array(baseline_scores, "baseline_scores", ndim=1)
    check_same_length(mia_scores=a, baseline_scores=b)
    _, mem = prepare_scores(a, member, scores_name="mia_scores")
    cpe, info_mia = panoramia_lb(a, mem, beta_per_test=beta / 2, thresholds=thresholds)
    c, info_base = panoramia_lb(b, mem, beta_per_test=beta / 2, thresholds=thresholds)
    eps_tilde = max(0.0, cpe - c)
    if isinstance(thresholds, str):
        desc = {
            "quantiles": f"union-bound over {info_mia['n_thresholds']} score-quantile "
            "thresholds (top-k guess sets fixed by m)",
            "code": "union-bound over 100 fixed thresholds (authors' code)",
        }.get(thresholds, f"union-bound over all {a.size} recall levels (paper)")
    else:
        desc = f"union-bound over {info_mia['n_thresholds']} fixed thresholds"
    counts = {
        "m": int(a.size),
        "n_members": int(mem.sum()),
        "mia_r": info_mia["r"],
        "mia_v": info_mia["v"],
        "baseline_r": info_base["r"],
        "baseline_v": info_base["v"],
    }
    return AuditResult(
        procedure="panoramia",
        confidence=1.0 - beta,
        delta=0.0,
        epsilon_lower_bound=0.0,
        mu_lower_bound=None,
        counts=counts,
        threshold_selection=desc,
        extra={
            "c_lower_bound": c,
            "c_plus_epsilon_lower_bound": cpe,
            "epsilon_tilde": eps_tilde,
            "epsilon_tilde_caveat": EPSILON_TILDE_CAVEAT + ".",
            "gated": False,
            "not_gated_reason": NOT_GATED_REASON + ".",
            "beta": beta,
            "beta_per_threshold": info_mia["beta_per_threshold"],
        },
        notes=(
            EPSILON_TILDE_CAVEAT + ".",
            NOT_GATED_REASON + ".",
            "Member guesses only; beta/2 per test (Corollary 1), then a union bound over the "
            "thresholds.",
            "Valid only if each test slot independently holds a member or a generated "
            "sample with probability 1/2.",
        ),
    )
