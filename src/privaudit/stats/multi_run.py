"""Multi-run auditing (Jagielski, Ullman, Oprea 2020; Nasr et al. 2021, 2023).

Each trial trains a model with (positive) or without (negative) the target record and
scores it; a fixed test "score >= threshold" gives ``tp, fn`` on the positives and
``fp, tn`` on the negatives. One-sided Clopper-Pearson bounds on the two error rates
(each at ``alpha / 2``) turn the counts into eps and mu-GDP lower bounds
(audit-math.md section 1).
"""

from __future__ import annotations

import dataclasses

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from privaudit._validation import check_choice, check_positive_int, check_probability, fail
from privaudit.records import AuditResult
from privaudit.stats._level import resolve_beta
from privaudit.stats._tails import clopper_pearson_lower, clopper_pearson_upper
from privaudit.stats.selection import prepare_scores

__all__ = [
    "log_group_delta",
    "multi_run_audit",
    "multi_run_eps_lb",
    "multi_run_mu_lb",
    "threshold_counts",
]

MULTI_RUN_SELECTIONS = ("union-bound", "held-out")


def _check_rate_counts(tp: int, fn: int, fp: int, tn: int) -> tuple[int, int, int, int]:
    vals = []
    for name, x in (("tp", tp), ("fn", fn), ("fp", fp), ("tn", tn)):
        vals.append(check_positive_int(x, name, minimum=0))
    tp, fn, fp, tn = vals
    if tp + fn == 0:
        raise fail("tp + fn", "at least one positive trial", 0)
    if fp + tn == 0:
        raise fail("fp + tn", "at least one negative trial", 0)
    return tp, fn, fp, tn


def _eps_from_rates(
    tpr_lb: NDArray[np.float64], fpr_ub: NDArray[np.float64], delta: float, group_size: int = 1
) -> NDArray[np.float64]:
    """``max(0, log((TPR_lb - d)/FPR_ub), log((1 - FPR_ub - d)/(1 - TPR_lb)))``, vectorised;
    for a group of ``k > 1`` records, the record-level bound :func:`_group_eps`."""
    if group_size > 1 and delta > 0.0:
        return np.maximum(
            _group_eps(tpr_lb, fpr_ub, delta, group_size),
            _group_eps(1.0 - fpr_ub, 1.0 - tpr_lb, delta, group_size),
        )
    with np.errstate(divide="ignore", invalid="ignore"):
        e1 = np.where(
            tpr_lb > delta, np.log(np.maximum(tpr_lb - delta, 1e-300)) - np.log(fpr_ub), -np.inf
        )
        tnr_lb = 1.0 - fpr_ub
        fnr_ub = 1.0 - tpr_lb
        e2 = np.where(
            (tnr_lb > delta) & (fnr_ub > 0),
            np.log(np.maximum(tnr_lb - delta, 1e-300)) - np.log(np.maximum(fnr_ub, 1e-300)),
            -np.inf,
        )
        e2 = np.where((tnr_lb > delta) & (fnr_ub <= 0), np.inf, e2)
    eps = np.maximum(0.0, np.maximum(e1, e2))
    return eps / group_size if group_size > 1 else eps  # pure DP: k eps for k records


def _group_eps(
    p_lb: NDArray[np.float64], q_ub: NDArray[np.float64], delta: float, k: int
) -> NDArray[np.float64]:
    r"""Record-level eps lower bound from a test on groups of ``k`` records, ``delta > 0``.

    Along a chain of ``k`` neighbouring datasets the (eps, delta)-DP inequality applied
    ``k`` times gives :math:`\Pr[M(D)\in S] \le e^{k\varepsilon}\Pr[M(D')\in S] +
    \delta_k` with :math:`\delta_k = \delta\sum_{i<k} e^{i\varepsilon}` for datasets
    ``k`` records apart (group privacy; Dwork and Roth 2014, Thm. 2.2 gives the
    ``delta = 0`` case, where the bound is the record-level one divided by ``k``). So
    the group test's rates satisfy :math:`p \le e^{k\varepsilon} q + \delta_k` (``p``
    the TPR and ``q`` the FPR, or ``p`` the TNR and ``q`` the FNR). An eps with
    :math:`e^{k\varepsilon} q_{ub} + \delta_k(\varepsilon) < p_{lb}` is excluded at the
    bounds' confidence; the left side increases with eps, so the excluded eps are
    ``[0, root)`` and the bound is the root (0 where eps = 0 is not excluded). It is
    found by bisection in log space, and the lower end of the final bracket is returned
    (never above the root). Dividing the group bound by ``k`` instead is valid only for
    ``delta = 0``: it ignores the growth of delta.
    """
    p = np.asarray(p_lb, dtype=np.float64)
    q = np.asarray(q_ub, dtype=np.float64)
    with np.errstate(divide="ignore"):
        log_p, log_q, log_d = np.log(p), np.log(q), np.log(delta)

    def excluded(eps: NDArray[np.float64]) -> NDArray[np.bool_]:
        # log(e^{k eps} q + delta_k(eps)) < log p
        return np.logaddexp(k * eps + log_q, log_group_delta(eps, delta, k)) < log_p

    lo = np.zeros_like(p)
    ok = excluded(lo)
    # an upper end where h >= 0: e^{k eps} q >= p, or delta e^{(k-1) eps} >= p when q = 0
    with np.errstate(divide="ignore", invalid="ignore"):
        hi = np.where(q > 0, (log_p - log_q) / k, (log_p - log_d) / (k - 1))
    hi = np.where(ok, np.maximum(hi, 0.0), 0.0)
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        below = excluded(mid)
        lo = np.where(ok & below, mid, lo)
        hi = np.where(ok & ~below, mid, hi)
    return np.where(ok, lo, 0.0)


def log_group_delta(eps: ArrayLike, delta: float, k: int) -> NDArray[np.float64]:
    r"""``log delta_k(eps)``, the delta of an (eps, delta)-DP guarantee for groups of ``k``.

    Applying the (eps, delta)-DP inequality along a chain of ``k`` neighbouring datasets
    gives :math:`\Pr[M(D)\in S] \le e^{k\varepsilon}\Pr[M(D')\in S] + \delta_k` with
    :math:`\delta_k(\varepsilon) = \delta\sum_{i<k} e^{i\varepsilon}` (group privacy;
    Dwork and Roth 2014, Thm. 2.2 for ``delta = 0``). The sum is computed as
    :math:`e^{(k-1)\varepsilon}\sum_{j<k} e^{-j\varepsilon}` (each term in ``[1, k]``, no
    overflow). Vectorised over ``eps``; ``delta > 0``, ``k >= 1``. Shared by
    :func:`_group_eps` and the canary audit of repeated canaries.
    """
    e = np.asarray(eps, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        tail = np.where(e > 0, np.expm1(-k * e) / np.expm1(-e), float(k))
        return np.log(delta) + (k - 1) * e + np.log(tail)


def _mu_from_rates(tpr_lb: NDArray[np.float64], fpr_ub: NDArray[np.float64]) -> NDArray[np.float64]:
    """``max(0, Phi^-1(1 - FPR_ub) - Phi^-1(FNR_ub))``, vectorised (computed from small sides)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        mu = -special.ndtri(fpr_ub) - special.ndtri(1.0 - tpr_lb)
    return np.maximum(0.0, np.nan_to_num(mu, nan=0.0, posinf=np.inf))


def multi_run_eps_lb(
    tp: int,
    fn: int,
    fp: int,
    tn: int,
    *,
    confidence: float | None = None,
    beta: float | None = None,
    delta: float = 0.0,
    n_thresholds: int = 1,
) -> float:
    r"""eps lower bound of the multi-run audit from the counts of one test.

    Jagielski, Ullman, Oprea (NeurIPS 2020), Section 4; Nasr et al. (2021) as in
    jax_privacy; audit-math.md section 1. With ``alpha = beta`` (exact; or
    ``1 - confidence``) split over
    the two one-sided Clopper-Pearson bounds (and over ``n_thresholds`` fixed thresholds
    tried, Bonferroni):

    .. math::

        \varepsilon_{lb} = \max\Big(0,\ \log\frac{TPR_{lb} - \delta}{FPR_{ub}},\
        \log\frac{1 - FPR_{ub} - \delta}{1 - TPR_{lb}}\Big)

    ``TPR_lb = CP_lower(tp, tp+fn, a)``, ``FPR_ub = CP_upper(fp, fp+tn, a)``,
    ``a = alpha / (2 n_thresholds)`` — always the conservative end of each interval
    (the optimistic variant is not valid; audit-math.md section 1). A term whose
    numerator is ``<= 0`` is skipped.

    Examples
    --------
    >>> multi_run_eps_lb(50, 50, 50, 50)  # no signal
    0.0
    >>> round(multi_run_eps_lb(95, 5, 5, 95), 4)
    2.0621
    """
    tp, fn, fp, tn = _check_rate_counts(tp, fn, fp, tn)
    a = _per_rate_level(resolve_beta(beta, confidence), n_thresholds)
    _check_delta(delta)
    tpr_lb = np.asarray(clopper_pearson_lower(tp, tp + fn, a))
    fpr_ub = np.asarray(clopper_pearson_upper(fp, fp + tn, a))
    return float(_eps_from_rates(tpr_lb, fpr_ub, delta))


def multi_run_mu_lb(
    tp: int,
    fn: int,
    fp: int,
    tn: int,
    *,
    confidence: float | None = None,
    beta: float | None = None,
    n_thresholds: int = 1,
) -> float:
    r"""mu-GDP lower bound of the multi-run audit (Nasr et al. 2023; audit-math.md section 1).

    .. math:: \mu_{lb} = \max(0,\ \Phi^{-1}(1 - FPR_{ub}) - \Phi^{-1}(FNR_{ub}))

    with ``FNR_ub = 1 - TPR_lb``; the same Clopper-Pearson levels as
    :func:`multi_run_eps_lb`. Valid because mu-GDP implies
    ``FNR >= Phi(Phi^-1(1 - FPR) - mu)`` for every test.
    """
    tp, fn, fp, tn = _check_rate_counts(tp, fn, fp, tn)
    a = _per_rate_level(resolve_beta(beta, confidence), n_thresholds)
    tpr_lb = np.asarray(clopper_pearson_lower(tp, tp + fn, a))
    fpr_ub = np.asarray(clopper_pearson_upper(fp, fp + tn, a))
    return float(_mu_from_rates(tpr_lb, fpr_ub))


def _per_rate_level(alpha: float, n_thresholds: int) -> float:
    n = check_positive_int(n_thresholds, "n_thresholds")
    return alpha / (2.0 * n)


def _check_delta(delta: float) -> float:
    if not 0.0 <= delta < 1.0:
        raise fail("delta", "a value in [0, 1)", delta)
    return float(delta)


def threshold_counts(
    scores: NDArray[np.float64], member: NDArray[np.bool_], thresholds: NDArray[np.float64]
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """``tp`` and ``fp`` of the tests ``score >= t`` for each ``t`` in ``thresholds``."""
    pos = np.sort(scores[member])
    neg = np.sort(scores[~member])
    tp = pos.size - np.searchsorted(pos, thresholds, side="left")
    fp = neg.size - np.searchsorted(neg, thresholds, side="left")
    return tp.astype(np.int64), fp.astype(np.int64)


def _bounds_all(
    tp: NDArray[np.int64],
    fp: NDArray[np.int64],
    n_pos: int,
    n_neg: int,
    a_pos: float,
    a_neg: float,
    delta: float,
    group_size: int,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Record-level eps and mu bounds of every test (a group test's divided as in
    :func:`_eps_from_rates`; mu-GDP gives ``k mu`` for ``k`` records, Dong, Roth, Su 2022)."""
    tpr_lb = np.asarray(clopper_pearson_lower(tp, np.full_like(tp, n_pos), a_pos))
    fpr_ub = np.asarray(clopper_pearson_upper(fp, np.full_like(fp, n_neg), a_neg))
    eps = _eps_from_rates(tpr_lb, fpr_ub, delta, group_size)
    return eps, _mu_from_rates(tpr_lb, fpr_ub) / group_size


def multi_run_audit(
    scores: ArrayLike,
    member: ArrayLike,
    *,
    threshold: float | None = None,
    thresholds: ArrayLike | None = None,
    confidence: float | None = None,
    beta: float | None = None,
    delta: float = 0.0,
    selection: str = "union-bound",
    holdout_fraction: float = 0.5,
    group_size: int = 1,
    rng: np.random.Generator | int | None = None,
) -> AuditResult:
    r"""Multi-run audit of one score per trial (Jagielski et al. 2020; Nasr et al. 2021, 2023).

    Each row is one trial: the score of the challenge record under the model of that
    trial (higher = more likely included) and whether the record was included. The
    test ``score >= t`` gives ``tp, fn, fp, tn``; bounds as in :func:`multi_run_eps_lb`
    and :func:`multi_run_mu_lb` (both hold jointly: they come from the same intervals).

    How the threshold is chosen is part of the result (audit-math.md sections 1 and 6):

    * ``threshold=t``: fixed in advance; ``a = alpha/2`` per rate.
    * ``thresholds=[t_1..t_L]``: a grid fixed in advance (not from these data);
      Bonferroni, ``a = alpha/(2L)`` per rate, the best of the L bounds is reported.
    * neither, ``selection="union-bound"``: every score is a candidate threshold. The
      CP bounds are made simultaneous over every count level (``a = alpha/(2P)`` for the
      TPR bound over the ``P`` positive trials, ``alpha/(2N)`` for the FPR bound): for
      each level ``j`` the event "some threshold has ``tp >= j`` and
      ``TPR < CP_lower(j)``" is contained in one binomial tail event at a fixed
      population threshold, of probability ``<= a``; so all the bounds hold at once
      with probability ``1 - alpha`` and the best threshold may be picked on the data.
      (Above 20,000 distinct tests, exact bounds are computed for the 512 best-ranked
      by a Wilson-score approximation only: a speed-up that can lower, never raise, the
      result.)
    * neither, ``selection="held-out"``: the threshold maximising the bound on a random
      ``holdout_fraction`` of the trials is applied to the others at ``alpha/2`` per rate.

    ``group_size = k``: each trial inserted ``k`` copies (JUO20's poisoning), and the
    bounds are made record-level by group privacy: a mu-GDP mechanism is ``k mu``-GDP
    for ``k`` records (mu divided by k), an eps-DP one ``k eps``-DP (eps divided by k,
    ``delta = 0``); with ``delta > 0`` an (eps, delta)-DP mechanism is only
    ``(k eps, delta sum_{i<k} e^{i eps})``-DP for ``k`` records, and the eps bound is the
    largest eps that guarantee is rejected at (:func:`_group_eps`), below the group
    bound divided by k.

    ``beta`` (default 0.05) is the failure probability ``alpha`` of the bounds, used
    exactly; ``confidence = 1 - beta`` is accepted as a convenience (``beta`` wins).
    """
    alpha = resolve_beta(beta, confidence)
    delta = _check_delta(delta)
    k = check_positive_int(group_size, "group_size")
    s, mem = prepare_scores(scores, member)
    grid = _fixed_threshold_grid(threshold, thresholds)
    if grid is not None:
        found = _audit_fixed_grid(s, mem, grid, alpha, delta, k)
    else:
        found = _audit_data_chosen_threshold(
            s, mem, alpha, delta, k, selection, holdout_fraction, rng
        )
    found.extra["beta"] = alpha
    if k > 1:
        _note_group_size(found, k, delta)
    found.notes.append(
        "Converting mu_lower_bound to (eps, delta) assumes a Gaussian trade-off curve; "
        "epsilon_lower_bound does not."
    )
    return AuditResult(
        procedure="multi-run",
        confidence=1.0 - alpha,
        delta=delta,
        epsilon_lower_bound=found.eps,
        mu_lower_bound=found.mu,
        counts=found.counts,
        threshold_selection=found.description,
        extra=found.extra,
        notes=tuple(found.notes),
    )


@dataclasses.dataclass
class _ThresholdAudit:
    """The bounds of the chosen test, its counts, and how the threshold was chosen."""

    eps: float
    mu: float
    counts: dict[str, int]
    description: str
    extra: dict[str, object]
    notes: list[str]


def _fixed_threshold_grid(
    threshold: float | None, thresholds: ArrayLike | None
) -> NDArray[np.float64] | None:
    """The thresholds fixed in advance, as a checked 1-D grid (None: chosen on the data)."""
    if threshold is not None and thresholds is not None:
        raise fail("threshold, thresholds", "at most one of the two", "both")
    if threshold is None and thresholds is None:
        return None
    grid = np.atleast_1d(
        np.asarray(threshold if threshold is not None else thresholds, dtype=np.float64)
    )
    if grid.ndim != 1 or grid.size == 0 or np.isnan(grid).any():
        raise fail("thresholds", "a non-empty 1-D list of numbers", grid)
    return grid


def _audit_fixed_grid(
    s: NDArray[np.float64],
    mem: NDArray[np.bool_],
    grid: NDArray[np.float64],
    alpha: float,
    delta: float,
    group_size: int,
) -> _ThresholdAudit:
    """Best of the ``L`` fixed thresholds, each rate at ``alpha/(2L)`` (Bonferroni)."""
    n_pos, n_neg = int(mem.sum()), int((~mem).sum())
    a = alpha / (2.0 * grid.size)
    tp, fp = threshold_counts(s, mem, grid)
    eps, mu = _bounds_all(tp, fp, n_pos, n_neg, a, a, delta, group_size)
    best = int(np.argmax(eps))
    best_mu = int(np.argmax(mu))
    desc = "fixed" if grid.size == 1 else f"union-bound over {grid.size} fixed thresholds"
    extra: dict[str, object] = {
        "threshold": float(grid[best]),
        "threshold_mu": float(grid[best_mu]),
        "level_per_rate": {"tpr": a, "fpr": a},
    }
    counts = _counts(int(tp[best]), n_pos, int(fp[best]), n_neg)
    if best_mu != best:
        extra["counts_mu"] = _counts(int(tp[best_mu]), n_pos, int(fp[best_mu]), n_neg)
    return _ThresholdAudit(float(eps[best]), float(mu[best_mu]), counts, desc, extra, [])


def _audit_data_chosen_threshold(
    s: NDArray[np.float64],
    mem: NDArray[np.bool_],
    alpha: float,
    delta: float,
    group_size: int,
    selection: str,
    holdout_fraction: float,
    rng: np.random.Generator | int | None,
) -> _ThresholdAudit:
    """A threshold chosen on the data: union bound over all of them, or held out."""
    check_choice(selection, "selection", MULTI_RUN_SELECTIONS)
    if selection == "union-bound":
        eps_v, mu_v, counts, extra = _union_all_thresholds(s, mem, alpha, delta, group_size)
        return _ThresholdAudit(
            eps_v,
            mu_v,
            counts,
            "union-bound over all thresholds (every count level)",
            extra,
            [
                "Threshold chosen on the same trials; the Clopper-Pearson bounds were made "
                "simultaneous over all count levels (alpha/(2P) for TPR, alpha/(2N) for FPR)."
            ],
        )
    eps_v, mu_v, counts, extra = _held_out(s, mem, alpha, delta, group_size, holdout_fraction, rng)
    desc = (
        f"held-out: threshold chosen on {extra['n_selection_trials']} trials, "
        f"audited on {extra['n_audit_trials']}"
    )
    return _ThresholdAudit(eps_v, mu_v, counts, desc, extra, [])


def _note_group_size(found: _ThresholdAudit, k: int, delta: float) -> None:
    """Say how the group test's bounds were made record-level (:func:`_bounds_all`)."""
    found.extra["group_size"] = k
    eps_rule = (
        f"eps divided by {k}"
        if delta == 0.0
        else f"eps the largest value whose group guarantee (k eps, delta sum_(i<{k}) e^(i eps)) "
        "the test rejects (delta grows with the group, so eps is not just divided)"
    )
    found.notes.append(f"Group privacy over the group size {k}: mu divided by {k}; {eps_rule}.")


def _counts(tp: int, n_pos: int, fp: int, n_neg: int) -> dict[str, int]:
    return {"tp": tp, "fn": n_pos - tp, "fp": fp, "tn": n_neg - fp}


def _union_all_thresholds(
    s: NDArray[np.float64], mem: NDArray[np.bool_], alpha: float, delta: float, group_size: int
) -> tuple[float, float, dict[str, int], dict[str, object]]:
    n_pos, n_neg = int(mem.sum()), int((~mem).sum())
    cand = np.unique(s)  # every distinct "score >= t" test (plus t above all: no signal)
    tp, fp = threshold_counts(s, mem, cand)
    a_pos, a_neg = alpha / (2.0 * n_pos), alpha / (2.0 * n_neg)
    # Only distinct (tp, fp) pairs matter.
    pairs, idx = np.unique(np.stack([tp, fp], axis=1), axis=0, return_index=True)
    if pairs.shape[0] > _EXHAUSTIVE_MAX:
        keep = _screen(pairs[:, 0], pairs[:, 1], n_pos, n_neg, a_pos, a_neg, delta, group_size)
        pairs, idx = pairs[keep], idx[keep]
    eps, mu = _bounds_all(pairs[:, 0], pairs[:, 1], n_pos, n_neg, a_pos, a_neg, delta, group_size)
    be, bm = int(np.argmax(eps)), int(np.argmax(mu))
    counts = _counts(int(pairs[be, 0]), n_pos, int(pairs[be, 1]), n_neg)
    extra: dict[str, object] = {
        "threshold": float(cand[idx[be]]),
        "threshold_mu": float(cand[idx[bm]]),
        "n_thresholds": int(cand.size),
        "level_per_rate": {"tpr": a_pos, "fpr": a_neg},
    }
    if bm != be:
        extra["counts_mu"] = _counts(int(pairs[bm, 0]), n_pos, int(pairs[bm, 1]), n_neg)
    return float(eps[be]), float(mu[bm]), counts, extra


# Above this many distinct (tp, fp) pairs the exact Clopper-Pearson bounds are computed
# only for the candidates a normal (Wilson) approximation ranks best; see _screen.
_EXHAUSTIVE_MAX = 20_000
_SCREEN_KEEP = 512


def _wilson(k: NDArray[np.int64], n: int, a: float, lower: bool) -> NDArray[np.float64]:
    z = float(-special.ndtri(a))
    p = k / n
    centre = p + z * z / (2 * n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    out = (centre - half if lower else centre + half) / (1 + z * z / n)
    return np.clip(out, 1e-300, 1.0)


def _screen(
    tp: NDArray[np.int64],
    fp: NDArray[np.int64],
    n_pos: int,
    n_neg: int,
    a_pos: float,
    a_neg: float,
    delta: float,
    group_size: int,
) -> NDArray[np.int64]:
    """Indices of the candidates ranked best (eps and mu) by Wilson-score approximations.

    Only a speed-up: the exact bounds are then computed for these candidates, and the
    maximum over a subset of simultaneously valid bounds is still valid (it can only be
    lower than the exhaustive maximum).
    """
    tpr = _wilson(tp, n_pos, a_pos, lower=True)
    fpr = _wilson(fp, n_neg, a_neg, lower=False)
    eps = _eps_from_rates(tpr, fpr, delta, group_size)
    mu = _mu_from_rates(tpr, fpr)  # its ranking does not depend on the group size
    k = min(_SCREEN_KEEP, tp.size)
    top = np.concatenate([np.argpartition(-eps, k - 1)[:k], np.argpartition(-mu, k - 1)[:k]])
    return np.unique(top)


def _held_out(
    s: NDArray[np.float64],
    mem: NDArray[np.bool_],
    alpha: float,
    delta: float,
    group_size: int,
    holdout_fraction: float,
    rng: np.random.Generator | int | None,
) -> tuple[float, float, dict[str, int], dict[str, object]]:
    frac = check_probability(holdout_fraction, "holdout_fraction")
    gen = np.random.default_rng(rng)
    m = s.size
    perm = gen.permutation(m)
    n_sel = round(frac * m)
    sel, aud = perm[:n_sel], perm[n_sel:]
    ms, ma = mem[sel], mem[aud]
    for part, name in ((ms, "selection"), (ma, "audit")):
        if part.all() or not part.any():
            raise fail(
                "member",
                f"both classes in the {name} part of the held-out split",
                f"{int(part.sum())} member(s) of {part.size}",
            )
    a = alpha / 2.0
    cand = np.unique(s[sel])
    tp, fp = threshold_counts(s[sel], ms, cand)
    if cand.size > _EXHAUSTIVE_MAX:  # selection only: any rule is valid here
        keep = _screen(tp, fp, int(ms.sum()), int((~ms).sum()), a, a, delta, group_size)
        cand, tp, fp = cand[keep], tp[keep], fp[keep]
    eps_s, mu_s = _bounds_all(tp, fp, int(ms.sum()), int((~ms).sum()), a, a, delta, group_size)
    t_eps, t_mu = float(cand[int(np.argmax(eps_s))]), float(cand[int(np.argmax(mu_s))])
    n_pos, n_neg = int(ma.sum()), int((~ma).sum())
    tp2, fp2 = threshold_counts(s[aud], ma, np.array([t_eps, t_mu]))
    eps, mu = _bounds_all(tp2, fp2, n_pos, n_neg, a, a, delta, group_size)
    counts = _counts(int(tp2[0]), n_pos, int(fp2[0]), n_neg)
    extra: dict[str, object] = {
        "threshold": t_eps,
        "threshold_mu": t_mu,
        "n_selection_trials": int(n_sel),
        "n_audit_trials": int(m - n_sel),
        "level_per_rate": {"tpr": a, "fpr": a},
    }
    if t_mu != t_eps:
        extra["counts_mu"] = _counts(int(tp2[1]), n_pos, int(fp2[1]), n_neg)
    return float(eps[0]), float(mu[1]), counts, extra


# Exposed for tests and for callers who hold only rates.
def eps_from_rates(tpr_lb: float, fpr_ub: float, delta: float = 0.0) -> float:
    """eps bound from given conservative rate bounds (see :func:`multi_run_eps_lb`)."""
    return float(_eps_from_rates(np.asarray(tpr_lb), np.asarray(fpr_ub), delta))
