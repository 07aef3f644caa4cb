"""The mid-ranks behind the Mann-Whitney AUC equal scipy's ``rankdata`` float for float."""

from __future__ import annotations

import numpy as np
from scipy import stats

from privaudit._stats import mann_whitney_auc, mid_ranks


def _auc_scipy(s: np.ndarray, m: np.ndarray) -> float:
    n_pos, n_neg = int(m.sum()), int((~m).sum())
    r = stats.rankdata(s, method="average")
    return float((r[m].sum() - n_pos * (n_pos + 1) / 2.0) / (float(n_pos) * float(n_neg)))


def test_mid_ranks_equal_rankdata_and_the_auc_is_unchanged() -> None:
    rng = np.random.default_rng(3)
    for trial in range(200):
        n = int(rng.integers(1, 5000))
        s = rng.normal(size=n)
        if trial % 2 == 0:
            s = np.round(s, 1)  # ties
        if trial % 7 == 0:
            s[: n // 3] = np.inf
        ranks = mid_ranks(s)
        assert np.array_equal(ranks, stats.rankdata(s, method="average"))
        m = rng.random(n) < 0.4
        if m.any() and not m.all():
            assert mann_whitney_auc(s, m) == _auc_scipy(s, m)


def test_mid_ranks_propagate_nan() -> None:
    s = np.array([0.3, np.nan, 0.1])
    assert np.isnan(mid_ranks(s)).all()
    assert np.isnan(mann_whitney_auc(s, np.array([True, False, True])))
