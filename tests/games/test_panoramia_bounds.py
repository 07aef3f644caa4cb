"""PANORAMIA's per-threshold curve and the exact fixture's bounds (Kazmi et al. 2024, Sec. 4)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privaudit.audit.panoramia import panoramia_curve, panoramia_lb


@pytest.mark.parametrize("thresholds", ["quantiles", "all"])
@pytest.mark.parametrize("seed", range(6))
def test_curve_max_equals_the_bound(seed: int, thresholds: str) -> None:
    rng = np.random.default_rng(seed)
    m = int(rng.integers(30, 600))
    member = rng.random(m) < 0.5
    scores = member * rng.uniform(0, 2) + rng.normal(0, 1, m)
    if seed % 2:
        scores = np.round(scores, 1)  # ties
    lb, info = panoramia_lb(scores, member, beta_per_test=0.025, thresholds=thresholds)
    cv = panoramia_curve(scores, member, beta_per_test=0.025, thresholds=thresholds)
    assert max(cv["lb"], default=0.0) == lb
    n1 = int(member.sum())
    for rec, prec, b in zip(cv["recall"], cv["precision"], cv["lb"], strict=True):
        assert 0 <= rec <= 1 and 0 <= prec <= 1 and b >= 0
        # the precision a bound implies, e^B / (1 + e^B), is a lower confidence bound on
        # the precision: never above the observed one
        if b > 0 and prec < 1:
            assert b <= math.log(prec) - math.log1p(-prec)
    if lb > 0:
        k = cv["lb"].index(lb)
        assert cv["precision"][k] == info["v"] / info["r"]
        assert cv["recall"][k] == info["v"] / n1


def test_curve_recall_is_monotone_for_quantiles() -> None:
    rng = np.random.default_rng(0)
    member = rng.random(300) < 0.5
    cv = panoramia_curve(member + rng.normal(0, 1, 300), member, beta_per_test=0.025)
    assert np.all(np.diff(cv["recall"]) >= 0)
    assert cv["recall"][-1] == 1.0
