"""Metrics of the record-level games (Krčo et al. 2025, "Lost in the Averages", Sec. 4-5).

* **Per-record risk** ``R`` = the AUC of the attack's scores of one target over one game's
  rounds (IN rounds positive), with the Hanley-McNeil (1982) standard error, and the
  half-width of the paper's Propositions 1-2: with probability ``1 - rho`` the empirical
  error rate of the attack over ``N`` rounds is within ``sqrt(log(2 / rho) / (2 N))`` of
  the game's true error rate (Hoeffding; Prop. 1 for the model-seeded game, whose limit is
  the risk of ``x`` in ``D0``, Prop. 2 for the traditional game, whose limit is that risk
  averaged over datasets). It bounds an error rate, not the AUC; it is reported as the
  sampling resolution of ``N`` rounds.
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
  difference (the part of ``RMSD^2`` that noise does not explain); its one-sided z test
  across records is asymptotic and treats records as independent (in the traditional game
  the targets share rounds, so this is an approximation).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privaudit._validation import as_float_array, check_probability, fail

__all__ = [
    "THRESHOLDS",
    "auc_standard_error",
    "compare_risks",
    "hoeffding_width",
    "miss_rate",
    "per_record_auc",
    "rmsd",
    "rmsd_gap_test",
]

#: Risk thresholds t of the miss rate (Krčo et al. report 0.6 .. 0.9; main 0.8).
THRESHOLDS: tuple[float, ...] = (0.6, 0.7, 0.8, 0.9)


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
    """Hanley & McNeil (1982, eq. 2) standard error of an AUC from n_in and n_out rounds."""
    A = np.asarray(auc, dtype=np.float64)
    n1 = np.asarray(n_in, dtype=np.float64)
    n0 = np.asarray(n_out, dtype=np.float64)
    q1 = A / (2.0 - A)
    q2 = 2.0 * A * A / (1.0 + A)
    var = (A * (1 - A) + (n1 - 1) * (q1 - A * A) + (n0 - 1) * (q2 - A * A)) / (n1 * n0)
    return np.asarray(np.sqrt(np.maximum(var, 0.0)), dtype=np.float64)


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


def rmsd_gap_test(
    risk_ms: ArrayLike, risk_t: ArrayLike, risk_ms2: ArrayLike, risk_t2: ArrayLike
) -> dict[str, float]:
    """Is the gap between the games more than replicate noise? (see the module docstring).

    Returns ``excess_msd`` (mean of ``d_i``: ``RMSD(MS, T)^2`` minus the noise expected from
    the replicates), ``excess_rmsd`` (``sqrt(max(excess_msd, 0))``), its standard error
    ``se``, the statistic ``z = excess_msd / se`` and the one-sided ``p`` value of "no gap"
    (normal approximation over records; ``p = 0.5`` when every ``d_i`` is 0).
    """
    ms, tr = _pair(risk_ms, risk_t)
    ms2, tr2 = _pair(risk_ms2, risk_t2)
    if ms2.shape != ms.shape:
        raise fail("risk_ms2", f"{ms.shape[0]} records like risk_ms", ms2.shape[0])
    d = (ms - tr) ** 2 - ((ms - ms2) ** 2 + (tr - tr2) ** 2) / 2.0
    k = d.shape[0]
    if k < 2:
        raise fail("risk_ms", "at least 2 records for the gap test", k)
    mean = float(np.mean(d))
    se = float(np.std(d, ddof=1) / math.sqrt(k))
    if se == 0.0:
        z = 0.0 if mean == 0.0 else math.copysign(math.inf, mean)
    else:
        z = mean / se
    p = 0.5 * math.erfc(z / math.sqrt(2.0))
    return {
        "excess_msd": mean,
        "excess_rmsd": math.sqrt(max(mean, 0.0)),
        "se": se,
        "z": z,
        "p": p,
    }


def compare_risks(
    risk_ms: ArrayLike,
    risk_t: ArrayLike,
    risk_ms2: ArrayLike | None = None,
    risk_t2: ArrayLike | None = None,
    thresholds: tuple[float, ...] = THRESHOLDS,
) -> dict[str, Any]:
    """MR(t) and RMSD between the games, with the replicate noise floors when given.

    Returns a dict with ``rmsd``, ``rmsd_noise_ms`` (MS vs MS'), ``rmsd_noise_t``
    (T vs T'), ``gap_test`` (:func:`rmsd_gap_test`, None without both replicates), and per
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
        else rmsd_gap_test(ms, tr, risk_ms2, risk_t2)
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
