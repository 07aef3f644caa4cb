"""Metrics of the record-level games (Krčo et al. 2025, "Lost in the Averages", Sec. 4-5).

* **Per-record risk** ``R`` = the AUC of the attack's scores of one target over one game's
  rounds (IN rounds positive), with a confidence interval at level ``1 - rho``
  (:func:`record_auc_intervals`: the attack-AUC interval of
  :func:`privaudit.metrics.auc_ci.auc_confidence_interval`, built on DeLong's variance,
  with an exact bound at AUC 0 or 1; a record's rounds are independent releases, so the
  interval of its AUC needs no more), and the
  half-width of the paper's Propositions 1-2: with probability ``1 - rho`` the empirical
  error rate of the attack over ``N`` rounds is within ``sqrt(log(2 / rho) / (2 N))`` of
  the game's true error rate (Hoeffding; Prop. 1 for the model-seeded game, whose limit is
  the risk of ``x`` in ``D0``, Prop. 2 for the traditional game, whose limit is that risk
  averaged over datasets). It bounds an error rate, not the AUC; it is reported as the
  sampling resolution of ``N`` rounds. (Hanley and McNeil's standard error,
  :func:`auc_standard_error`, is no longer what a record's risk is reported with: it
  assumes exponential score distributions, undercovers the most vulnerable records and is
  0 at AUC 1.)
* **Miss rate** ``MR(t)``: among the records at high risk in the model-seeded game
  (``R_MS >= t``), the share at low risk in the traditional game (``R_T < t``).
  ``t = 0.8`` is the paper's main threshold; 0.6 .. 0.9 are reported.
* **RMSD** between two risk vectors: ``sqrt(mean((R_a - R_b)^2))``.
* **Noise floors**: the same statistics between two independent replicates of one game
  (MS vs MS', T vs T'); a gap between games is real only where it exceeds them.
* **Gap test** (:func:`rmsd_gap_test`): whether RMSD(MS, T) exceeds what the replicates'
  noise alone would give. Comparing RMSD with the larger floor is only a rule of thumb (the
  floors are noisy too); the test uses, per record ``i``,
  ``d_i = (MS_i - T_i)^2 - ((MS_i - MS'_i)^2 + (T_i - T'_i)^2) / 2``. When the two games
  measure the same risk ``r_i`` and the four estimates are independent with equal variance
  within each game's pair (``v_MS``, ``v_T``), ``E[(MS - T)^2] = v_MS + v_T`` and
  ``E[(MS - MS')^2] / 2 + E[(T - T')^2] / 2 = v_MS + v_T``, so ``E[d_i] = 0`` exactly,
  whatever the distribution of the estimates. ``mean(d)`` estimates the excess mean squared
  difference (the part of ``RMSD^2`` that noise does not explain). Its spread under "no
  gap" is not that of independent records: a release serves several targets (every
  model-seeded IN round is one release scored for all ``K`` targets, as is every amortised
  traditional round), so a release that leaks more moves many targets' AUCs together, and
  ``std(d) / sqrt(K)`` understates it (a one-sided test at 0.05 rejected 14% of the time
  under an exact null with such shared release effects). With the rounds' scores the test
  therefore takes the spread from a bootstrap over releases
  (:func:`bootstrap_auc_deviations`): within each game the rounds are resampled with
  replacement, a round shared by the targets jointly for all of them and a round of one
  target (model-seeded OUT, per-target traditional) for that target alone, and each
  record's AUC is recomputed. Under "no gap" ``d`` is a quadratic form of the four
  estimates' errors alone (the risks cancel), so the statistic is mimicked by the same form
  of the bootstrap errors ``AUC* - AUC`` of the four games, whose spread over the
  bootstrap draws is the test's standard error (bootstrapping ``mean(d)`` itself would
  not do: at "no gap" it is a degenerate statistic whose plain bootstrap spread is about
  ``sqrt 3`` times too wide). Without the rounds, :func:`rmsd_gap_test` falls back on
  ``std(d) / sqrt(K)``, valid for independent records only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privaudit._validation import as_float_array, check_positive_int, check_probability, fail
from privaudit.metrics.auc_ci import auc_confidence_interval

__all__ = [
    "GAP_BOOTSTRAP_DRAWS",
    "THRESHOLDS",
    "ScoreBlock",
    "auc_standard_error",
    "bootstrap_auc_deviations",
    "compare_risks",
    "hoeffding_width",
    "miss_rate",
    "per_record_auc",
    "record_auc_intervals",
    "rmsd",
    "rmsd_gap_test",
]

#: Risk thresholds t of the miss rate (Krčo et al. report 0.6 .. 0.9; main 0.8).
THRESHOLDS: tuple[float, ...] = (0.6, 0.7, 0.8, 0.9)

#: Bootstrap draws of the gap test's null spread (:func:`bootstrap_auc_deviations`).
GAP_BOOTSTRAP_DRAWS = 1000

#: One block of a game's rounds: ``(scores, member, shared)``, scores and membership
#: (K targets x rounds); ``shared``: each column is one release scored for every target
#: (resampled jointly), else each row's rounds are the target's own releases.
ScoreBlock = tuple[NDArray[np.float64], NDArray[np.bool_], bool]


def per_record_auc(scores: ArrayLike, member: ArrayLike) -> NDArray[np.float64]:
    """AUC of each row of ``scores`` (K, N) against ``member`` (K, N) (ties count 1/2).

    Rows are independent targets; each needs at least one IN and one OUT round.
    """
    s = as_float_array(scores, "scores", ndim=2)
    m = np.asarray(member, dtype=bool)
    if m.shape != s.shape:
        raise fail("member", f"shape {s.shape}", m.shape)
    n1 = m.sum(axis=1)
    n0 = m.shape[1] - n1
    if np.any(n1 == 0) or np.any(n0 == 0):
        raise fail("member", "at least one IN and one OUT round per target", "a row of one class")
    from scipy.stats import rankdata

    ranks = rankdata(s, axis=1)
    r1 = np.where(m, ranks, 0.0).sum(axis=1)
    return np.asarray((r1 - n1 * (n1 + 1) / 2.0) / (n1 * n0), dtype=np.float64)


def auc_standard_error(auc: ArrayLike, n_in: ArrayLike, n_out: ArrayLike) -> NDArray[np.float64]:
    """Hanley & McNeil (1982, eq. 2) standard error of an AUC from n_in and n_out rounds.

    Exact at AUC 1/2 under no signal; elsewhere it assumes exponential score distributions,
    is too small for the most vulnerable records (AUC near 1) and is 0 at AUC 1. A
    record's risk is reported with :func:`record_auc_intervals` instead.
    """
    A = np.asarray(auc, dtype=np.float64)
    n1 = np.asarray(n_in, dtype=np.float64)
    n0 = np.asarray(n_out, dtype=np.float64)
    q1 = A / (2.0 - A)
    q2 = 2.0 * A * A / (1.0 + A)
    var = (A * (1 - A) + (n1 - 1) * (q1 - A * A) + (n0 - 1) * (q2 - A * A)) / (n1 * n0)
    return np.asarray(np.sqrt(np.maximum(var, 0.0)), dtype=np.float64)


def record_auc_intervals(
    scores: ArrayLike, member: ArrayLike, confidence: float = 0.95
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Each row's AUC with its confidence interval: ``(auc, lower, upper, se)`` over rows.

    Row ``k`` of ``scores`` (K, N) is target ``k``'s score in each round, ``member`` its
    bit; each row's rounds are independent releases, so its interval is
    :func:`privaudit.metrics.auc_ci.auc_confidence_interval` (built on the variance of
    DeLong, DeLong and Clarke-Pearson 1988; an exact bound at AUC 0 or 1, where any
    standard error is 0; that module states its construction and coverage). ``se`` is
    that function's standard error (DeLong's). One call per row: about 0.2 ms of CPU per
    row of 400 rounds.
    """
    s = as_float_array(scores, "scores", ndim=2)
    m = np.asarray(member, dtype=bool)
    if m.shape != s.shape:
        raise fail("member", f"shape {s.shape}", m.shape)
    check_probability(confidence, "confidence")
    out = np.empty((4, s.shape[0]), dtype=np.float64)
    for k in range(s.shape[0]):
        out[:, k] = auc_confidence_interval(s[k], m[k], confidence=confidence)
    return out[0], out[1], out[2], out[3]


def hoeffding_width(n_rounds: int, rho: float = 0.05) -> float:
    """``sqrt(log(2 / rho) / (2 N))``: Krčo et al. Prop. 1-2 at confidence ``1 - rho``."""
    check_probability(rho, "rho")
    if n_rounds < 1:
        raise fail("n_rounds", "at least 1", n_rounds)
    return math.sqrt(math.log(2.0 / rho) / (2.0 * n_rounds))


def _pair(a: ArrayLike, b: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    x = as_float_array(a, "risk_a", ndim=1)
    y = as_float_array(b, "risk_b", ndim=1)
    if x.shape != y.shape:
        raise fail("risk_b", f"{x.size} risks (one per target)", y.size)
    return x, y


def miss_rate(risk_ms: ArrayLike, risk_t: ArrayLike, t: float = 0.8) -> float | None:
    """Share of model-seeded high-risk records (``R_MS >= t``) with ``R_T < t``.

    None when no record reaches ``t`` in the model-seeded game (undefined).
    """
    ms, tr = _pair(risk_ms, risk_t)
    high = ms >= t
    if not high.any():
        return None
    return float(np.mean(tr[high] < t))


def rmsd(risk_a: ArrayLike, risk_b: ArrayLike) -> float:
    """Root mean squared difference between two per-record risk vectors."""
    a, b = _pair(risk_a, risk_b)
    return float(np.sqrt(np.mean((a - b) ** 2)))


def _sorted_ties(
    s: NDArray[np.float64],
) -> tuple[NDArray[np.intp], NDArray[np.intp], NDArray[np.intp]]:
    """Per row: the order that sorts it, and for each sorted position the first position
    of its run of tied scores and one past the last."""
    order = np.argsort(s, axis=1, kind="stable")
    ss = np.take_along_axis(s, order, axis=1)
    k, n = s.shape
    pos = np.broadcast_to(np.arange(n), (k, n))
    new_run = np.ones((k, n), dtype=bool)
    new_run[:, 1:] = ss[:, 1:] != ss[:, :-1]
    start = np.maximum.accumulate(np.where(new_run, pos, 0), axis=1)
    run_end = np.ones((k, n), dtype=bool)
    run_end[:, :-1] = new_run[:, 1:]
    stop = np.minimum.accumulate(np.where(run_end, pos + 1, n)[:, ::-1], axis=1)[:, ::-1]
    return order, start, stop


def _weighted_auc(
    w: NDArray[np.float64],
    member_sorted: NDArray[np.bool_],
    start: NDArray[np.intp],
    stop: NDArray[np.intp],
) -> NDArray[np.float64]:
    """AUC of each row (ties 1/2) when the round at each sorted position counts ``w`` times
    (``w``: (B, K, N), in each row's sorted order); NaN where a row has no IN or no OUT."""
    nb, k, n = w.shape
    w1 = np.where(member_sorted, w, 0.0)
    w0 = w - w1
    below = np.zeros((nb, k, n + 1))
    np.cumsum(w0, axis=-1, out=below[..., 1:])
    # the OUT weight below each run of ties and through it, as flat takes (faster than
    # take_along_axis)
    rows = (np.arange(k) * (n + 1))[:, None]
    flat = below.reshape(nb, k * (n + 1))
    lo = np.take(flat, (rows + start).ravel(), axis=1).reshape(nb, k, n)
    hi = np.take(flat, (rows + stop).ravel(), axis=1).reshape(nb, k, n)
    won = np.einsum("bkn,bkn->bk", w1, lo + hi) / 2.0  # OUT weight below + half of the ties
    n1, n0 = w1.sum(axis=-1), w0.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where((n1 > 0) & (n0 > 0), won / (n1 * n0), np.nan)


def bootstrap_auc_deviations(
    blocks: list[ScoreBlock], n_boot: int = GAP_BOOTSTRAP_DRAWS, seed: int = 0
) -> NDArray[np.float64]:
    """Bootstrap errors ``AUC* - AUC`` of every target's AUC in one game, ``(n_boot, K)``.

    The game's rounds come in ``blocks`` (:data:`ScoreBlock`, each K targets x its
    rounds). Each draw resamples every block's rounds with replacement (Efron and
    Tibshirani, *An Introduction to the Bootstrap*, 1993, Ch. 6): a shared block's columns
    jointly for all targets (one release scored for all of them keeps its effect on all),
    another block's rounds for each target on its own; then each target's AUC over the
    drawn rounds (ties 1/2). A draw that leaves a target without an IN or an OUT round
    (possible in a traditional game with few rounds) gives NaN for it. Reproducible from
    ``seed``; about 0.1 s of CPU per 100 draws of 64 targets x 400 rounds.
    """
    check_positive_int(n_boot, "n_boot")
    if not blocks:
        raise fail("blocks", "at least one block of rounds", "none")
    s = np.concatenate([np.asarray(b[0], dtype=np.float64) for b in blocks], axis=1)
    m = np.concatenate([np.asarray(b[1], dtype=bool) for b in blocks], axis=1)
    k, n = s.shape
    ones = np.ones((1, k, n))
    order, start, stop = _sorted_ties(s)
    m_sorted = np.take_along_axis(m, order, axis=1)
    sort_flat = ((np.arange(k) * n)[:, None] + order).ravel()
    base = _weighted_auc(ones, m_sorted, start, stop)[0]
    rng = np.random.default_rng(seed)
    out = np.empty((n_boot, k), dtype=np.float64)
    chunk = max(1, 500_000 // (k * n))
    for b0 in range(0, n_boot, chunk):
        nb = min(chunk, n_boot - b0)
        w = np.empty((nb, k, n), dtype=np.float64)
        col = 0
        for sb, _, shared in blocks:
            width = np.shape(sb)[1]
            if shared:  # one draw of columns for every target
                idx = rng.integers(0, width, size=(nb, width))
                counts = _counts(idx, width)[:, None, :]
            else:  # each target's own rounds
                idx = rng.integers(0, width, size=(nb * k, width))
                counts = _counts(idx, width).reshape(nb, k, width)
            w[:, :, col : col + width] = counts
            col += width
        w = np.take(w.reshape(nb, k * n), sort_flat, axis=1).reshape(nb, k, n)
        out[b0 : b0 + nb] = _weighted_auc(w, m_sorted, start, stop) - base
    return out


def _counts(idx: NDArray[np.int64], width: int) -> NDArray[np.float64]:
    """How often each of ``width`` rounds is drawn, per row of ``idx``."""
    rows = idx.shape[0]
    flat = (idx + width * np.arange(rows)[:, None]).ravel()
    return np.bincount(flat, minlength=rows * width).reshape(rows, width).astype(np.float64)


def _gap_d(
    ms: NDArray[np.float64],
    tr: NDArray[np.float64],
    ms2: NDArray[np.float64],
    tr2: NDArray[np.float64],
) -> NDArray[np.float64]:
    """``d = (MS - T)^2 - ((MS - MS')^2 + (T - T')^2) / 2``, elementwise."""
    return np.asarray((ms - tr) ** 2 - ((ms - ms2) ** 2 + (tr - tr2) ** 2) / 2.0)


def rmsd_gap_test(
    risk_ms: ArrayLike,
    risk_t: ArrayLike,
    risk_ms2: ArrayLike,
    risk_t2: ArrayLike,
    *,
    null_deviations: Sequence[ArrayLike] | None = None,
) -> dict[str, Any]:
    """Is the gap between the games more than replicate noise? (see the module docstring).

    Parameters
    ----------
    risk_ms, risk_t, risk_ms2, risk_t2 : array_like
        Per-record AUCs of the model-seeded game, the traditional game and their replicates.
    null_deviations : 4 arrays (n_boot, K), optional
        Bootstrap errors ``AUC* - AUC`` of the four games, in that order
        (:func:`bootstrap_auc_deviations`, each game resampled on its own). The null
        spread is then that of ``mean(d)`` computed from them (the module docstring),
        which holds when releases are shared across targets. Without them, the spread
        is ``std(d) / sqrt(K)``, valid for independent records only.

    Returns
    -------
    dict
        ``excess_msd`` (mean of ``d_i``: ``RMSD(MS, T)^2`` minus the noise expected from
        the replicates), ``excess_rmsd`` (``sqrt(max(excess_msd, 0))``), ``se`` (its
        standard deviation under "no gap"), ``z = excess_msd / se``, the one-sided ``p``
        value of "no gap", ``method`` (``"release-bootstrap"`` or
        ``"independent-records"``) and ``n_bootstrap`` (the draws used; 0 without). With
        the bootstrap, ``p = (1 + #{null >= excess_msd}) / (1 + n_bootstrap)`` over the
        draws' ``mean(d)`` (a Monte Carlo p value, Davison and Hinkley, *Bootstrap Methods
        and their Application*, 1997, Sec. 4.2.1; at least ``1 / (1 + n_bootstrap)``):
        with shared releases that null is skewed, and the normal tail is too thin (under
        an exact null with K = 64 targets, 400 rounds and release shifts of twice the
        score noise, 400 simulations, the normal p rejected 3.3% at 0.01 where this one
        rejected 1.5%, and 6.5% vs 6.3% at 0.05). Without, the normal approximation
        (``p = 0.5`` when ``se`` and ``excess_msd`` are 0).
    """
    ms, tr = _pair(risk_ms, risk_t)
    ms2, tr2 = _pair(risk_ms2, risk_t2)
    if ms2.shape != ms.shape:
        raise fail("risk_ms2", f"{ms.shape[0]} records like risk_ms", ms2.shape[0])
    d = _gap_d(ms, tr, ms2, tr2)
    k = d.shape[0]
    if k < 2:
        raise fail("risk_ms", "at least 2 records for the gap test", k)
    mean = float(np.mean(d))
    null: NDArray[np.float64] | None = None
    if null_deviations is None:
        method, n_used = "independent-records", 0
        se = float(np.std(d, ddof=1) / math.sqrt(k))
    else:
        method, null = "release-bootstrap", _null_means(null_deviations, k)
        n_used = int(null.size)
        if n_used < 2:
            raise fail("null_deviations", "at least 2 usable bootstrap draws", n_used)
        se = float(np.std(null, ddof=1))
    if se == 0.0:
        z = 0.0 if mean == 0.0 else math.copysign(math.inf, mean)
    else:
        z = mean / se
    if null is None:
        p = 0.5 * math.erfc(z / math.sqrt(2.0))
    else:  # the bootstrap's own tail: the null of mean(d) is skewed when releases are shared
        p = (1.0 + float(np.sum(null >= mean))) / (1.0 + n_used)
    return {
        "excess_msd": mean,
        "excess_rmsd": math.sqrt(max(mean, 0.0)),
        "se": se,
        "z": z,
        "p": p,
        "method": method,
        "n_bootstrap": n_used,
    }


def _null_means(null_deviations: Sequence[ArrayLike], k: int) -> NDArray[np.float64]:
    """``mean(d)`` of each bootstrap draw's errors (records with a NaN left out; a draw
    with no usable record dropped)."""
    if len(null_deviations) != 4:
        raise fail("null_deviations", "4 arrays (MS, T, MS', T')", len(null_deviations))
    f = [np.asarray(a, dtype=np.float64) for a in null_deviations]
    if any(a.ndim != 2 or a.shape[1] != k for a in f) or len({a.shape for a in f}) != 1:
        raise fail("null_deviations", f"4 arrays of shape (n_boot, {k})", [a.shape for a in f])
    dn = _gap_d(*f)
    ok = ~np.isnan(dn)
    used = ok.any(axis=1)
    sums = np.where(ok, dn, 0.0).sum(axis=1)
    return np.asarray(sums[used] / ok.sum(axis=1)[used], dtype=np.float64)


def compare_risks(
    risk_ms: ArrayLike,
    risk_t: ArrayLike,
    risk_ms2: ArrayLike | None = None,
    risk_t2: ArrayLike | None = None,
    thresholds: tuple[float, ...] = THRESHOLDS,
    *,
    null_deviations: Sequence[ArrayLike] | None = None,
) -> dict[str, Any]:
    """MR(t) and RMSD between the games, with the replicate noise floors when given.

    Returns a dict with ``rmsd``, ``rmsd_noise_ms`` (MS vs MS'), ``rmsd_noise_t``
    (T vs T'), ``gap_test`` (:func:`rmsd_gap_test`, with ``null_deviations`` when given;
    None without both replicates), and per
    threshold ``miss_rate``, ``miss_rate_noise_ms`` (MS-high records
    that MS' calls low), ``miss_rate_noise_t`` (T-high records that T' calls low) and
    ``n_high_ms``.
    """
    ms, tr = _pair(risk_ms, risk_t)
    out: dict[str, Any] = {"rmsd": rmsd(ms, tr), "rmsd_noise_ms": None, "rmsd_noise_t": None}
    if risk_ms2 is not None:
        out["rmsd_noise_ms"] = rmsd(ms, risk_ms2)
    if risk_t2 is not None:
        out["rmsd_noise_t"] = rmsd(tr, risk_t2)
    out["gap_test"] = (
        None
        if risk_ms2 is None or risk_t2 is None or ms.shape[0] < 2
        else rmsd_gap_test(ms, tr, risk_ms2, risk_t2, null_deviations=null_deviations)
    )
    per: dict[str, Any] = {}
    for t in thresholds:
        per[f"{t:g}"] = {
            "miss_rate": miss_rate(ms, tr, t),
            "miss_rate_noise_ms": None if risk_ms2 is None else miss_rate(ms, risk_ms2, t),
            "miss_rate_noise_t": None if risk_t2 is None else miss_rate(tr, risk_t2, t),
            "n_high_ms": int(np.sum(ms >= t)),
            "n_high_t": int(np.sum(tr >= t)),
        }
    out["thresholds"] = per
    return out
