"""Per-record calibrated TPR at FPR (Jälkö et al. 2026): a simulation with known per-record FPRs.

Every record i has its own OUT score distribution N(mu_i, sd_i^2) (heterogeneous records,
as in a real audit) and IN = OUT shifted by delta_i. The true FPR of a threshold t for
record i is known exactly, 1 - Phi((t - mu_i) / sd_i), so we can check which figure
holds alpha per record.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from privaudit.errors import InvalidInputError
from privaudit.metrics.calibrated import calibrated_tpr_at_fpr, record_thresholds


def _world(seed: int, n: int, m_in: int, m_out: int):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    mu = rng.normal(0.0, 2.0, size=n)
    sd = np.exp(rng.normal(0.0, 0.6, size=n))  # per-record spread, 0.3x to 3x
    delta = rng.exponential(1.5, size=n) * sd
    member = np.zeros((m_in + m_out, n), dtype=bool)
    member[:m_in] = True
    member = np.take_along_axis(member, np.argsort(rng.uniform(size=member.shape), axis=0), 0)
    s = mu[None, :] + sd[None, :] * rng.normal(size=member.shape) + delta[None, :] * member
    return s, member, mu, sd


def _true_fpr(t, mu, sd):  # type: ignore[no-untyped-def]
    return stats.norm.sf((t - mu) / sd)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_calibrated_holds_the_per_record_fpr_and_pooled_does_not(seed: int) -> None:
    alpha, n = 0.01, 2000
    s, member, mu, sd = _world(seed, n, 16, 16)
    res = calibrated_tpr_at_fpr(s, member, alpha)
    # pooled: one threshold; the true per-record FPR depends on the record: records whose
    # OUT scores sit high or spread wide get far more than alpha, the others far less
    pooled_fpr = _true_fpr(res.pooled_threshold, mu, sd)
    thr = record_thresholds(s, ~member, alpha)
    cal_fpr = _true_fpr(thr, mu, sd)
    # group the records by how high their OUT tail lies (mu + 2.33 sd: their true
    # threshold at alpha), in quartiles: the calibrated FPR is alpha in every group
    # (exact in expectation for Gaussian scores), the pooled one is not
    groups = np.array_split(np.argsort(mu + stats.norm.isf(alpha) * sd), 4)
    for g in groups:
        assert 0.6 * alpha < cal_fpr[g].mean() < 1.6 * alpha, cal_fpr[g].mean()
    assert pooled_fpr[groups[-1]].mean() > 3 * alpha
    assert pooled_fpr[groups[0]].mean() < alpha / 3
    assert abs(cal_fpr.mean() - alpha) < 0.0015, cal_fpr.mean()
    assert 0.0 < res.calibrated_tpr < 1.0 and res.pooled_record_fpr_max > 3 * alpha


@pytest.mark.parametrize("seed", [0, 1])
def test_finite_population_correction_removes_the_plug_in_bias(seed: int) -> None:
    """With 4 OUT scores per record the plug-in Gaussian (ddof=0, normal quantile) has true
    FPR about 3x alpha and so overstates the calibrated TPR; the t prediction quantile holds
    alpha in expectation."""
    alpha, n = 0.01, 20000
    s, member, mu, sd = _world(seed, n, 4, 4)
    fpc = record_thresholds(s, ~member, alpha)
    plug = record_thresholds(s, ~member, alpha, finite_population_correction=False)
    assert abs(_true_fpr(fpc, mu, sd).mean() - alpha) < 0.001
    assert _true_fpr(plug, mu, sd).mean() > 2.5 * alpha
    a = calibrated_tpr_at_fpr(s, member, alpha)
    b = calibrated_tpr_at_fpr(s, member, alpha, finite_population_correction=False)
    assert b.calibrated_tpr > a.calibrated_tpr  # the positive bias
    d = a.to_dict()
    assert "pooled" in d["pooled"]["label"] and "calibrated" in d["calibrated"]["label"]


def test_input_errors() -> None:
    s = np.zeros((4, 3))
    m = np.array([[True] * 3, [False] * 3, [False] * 3, [False] * 3])
    with pytest.raises(InvalidInputError, match="member"):
        calibrated_tpr_at_fpr(s, m[:2], 0.1)
    with pytest.raises(InvalidInputError, match="fpr"):
        calibrated_tpr_at_fpr(s, m, 1.5)
    with pytest.raises(InvalidInputError, match="2 OUT"):
        calibrated_tpr_at_fpr(s, ~m, 0.1)
    bad = s.copy()
    bad[0, 0] = np.nan
    with pytest.raises(InvalidInputError, match="finite"):
        calibrated_tpr_at_fpr(bad, m, 0.1)
