"""privaudit's beta-binomial quantiles equal scipy.stats.betabinom's ppf, integer for integer."""

from __future__ import annotations

import math

import pytest
from scipy import stats

from privaudit._stats import betabinom_ppf
from privaudit.metrics.roc import alpha_acceptance_region


@pytest.mark.parametrize("n_cal", [1, 2, 10, 37, 999, 1000, 20000])
def test_quantiles_equal_scipy_on_the_acceptance_regions_parameters(n_cal: int) -> None:
    for alpha in (0.001, 0.01, 0.05, 0.3, 0.5):
        k = min(max(math.ceil((n_cal + 1) * (1.0 - alpha) - 1e-9), 1), n_cal)
        for n_neg in (0, 1, 3, 100, 5000, 12345):
            for conf in (0.9, 0.95, 0.99):
                tail = (1.0 - conf) / 2.0
                dist = stats.betabinom(n_neg, n_cal + 1 - k, k)
                want = [int(dist.ppf(tail)), int(dist.ppf(1.0 - tail))]
                assert betabinom_ppf(n_neg, n_cal + 1 - k, k, [tail, 1.0 - tail]) == want
                assert list(alpha_acceptance_region(alpha, n_cal, n_neg, conf)) == want


def test_quantiles_over_the_whole_range_of_probabilities() -> None:
    for n, a, b in ((20, 0.5, 0.5), (50, 3.0, 40.0), (7, 1.0, 1.0)):
        qs = [i / 97 for i in range(1, 97)]
        assert betabinom_ppf(n, a, b, qs) == [int(v) for v in stats.betabinom(n, a, b).ppf(qs)]


def test_sum_of_beta_binomials_equals_the_brute_force_convolution() -> None:
    import numpy as np

    from privaudit._stats import betabinom_sum_ppf

    rng = np.random.default_rng(0)
    qs = [0.001, 0.025, 0.5, 0.975, 0.999]
    for _ in range(60):
        t = int(rng.integers(1, 6))
        ns = [int(v) for v in rng.integers(0, 300, t)]
        ms = [int(v) for v in rng.integers(20, 3000, t)]
        alpha = float(rng.choice([0.01, 0.05, 0.3]))
        ks = [min(max(math.ceil((m + 1) * (1 - alpha) - 1e-9), 1), m) for m in ms]
        a = [m + 1 - k for m, k in zip(ms, ks, strict=True)]
        pmf = np.ones(1)
        for n, aa, bb in zip(ns, a, ks, strict=True):
            pmf = np.convolve(pmf, stats.betabinom(n, aa, bb).pmf(np.arange(n + 1)))
        cdf = np.cumsum(pmf)
        want = [int(min(np.searchsorted(cdf, q), cdf.size - 1)) for q in qs]
        assert betabinom_sum_ppf(ns, a, ks, qs) == want, (ns, ms, alpha)
        if t == 1:
            assert betabinom_sum_ppf(ns, a, ks, qs) == betabinom_ppf(ns[0], a[0], ks[0], qs)
