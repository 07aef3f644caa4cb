"""AUC confidence interval (DeLong 1988, logit scale): oracle and coverage by simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from privaudit.errors import InvalidInputError
from privaudit.metrics.auc_ci import auc_ci_fields, auc_confidence_interval, delong_placements
from privaudit.metrics.roc import auc


def slow_placements(s: np.ndarray, m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    pos, neg = s[m], s[~m]
    psi = (pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] == neg[None, :])
    return psi.mean(axis=1), psi.mean(axis=0)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_placements_match_pair_counting_with_ties(seed: int) -> None:
    rng = np.random.default_rng(seed)
    m = rng.random(90) < 0.4
    s = np.round(rng.standard_normal(90) + m, 1)  # many ties
    v10, v01 = delong_placements(s, m)
    w10, w01 = slow_placements(s, m)
    np.testing.assert_allclose(v10, w10, atol=1e-12)
    np.testing.assert_allclose(v01, w01, atol=1e-12)
    a, lo, hi, se = auc_confidence_interval(s, m)
    assert a == pytest.approx(auc(s, m), abs=1e-12)
    # DeLong's variance, written out from the slow placements
    var = w10.var(ddof=1) / w10.size + w01.var(ddof=1) / w01.size
    assert se == pytest.approx(math.sqrt(var), rel=1e-10)
    z = stats.norm.ppf(0.975)
    lg = math.log(a / (1 - a))
    assert lo == pytest.approx(1 / (1 + math.exp(-(lg - z * se / (a * (1 - a))))), rel=1e-12)
    assert lo < a < hi


@pytest.mark.parametrize(("d", "n"), [(0.0, 60), (0.95, 100), (2.3, 150)])
def test_coverage_by_simulation_binormal(d: float, n: int) -> None:
    """Members N(d, 1), non-members N(0, 1): true AUC = Phi(d / sqrt 2)."""
    rng = np.random.default_rng(int(d * 100) + n)
    true = stats.norm.cdf(d / math.sqrt(2))
    n_sim, hits = 400, 0
    member = np.arange(2 * n) < n
    for _ in range(n_sim):
        s = rng.standard_normal(2 * n) + d * member
        _, lo, hi, _ = auc_confidence_interval(s, member)
        hits += lo <= true <= hi
    # nominal 95%; P(Binomial(400, 0.95) outside [364, 393]) is about 1e-3
    assert 364 <= hits <= 393, hits


def test_degenerate_separations_and_confidence() -> None:
    m = np.arange(20) < 10
    a, lo, hi, _ = auc_confidence_interval(np.arange(20.0) * -1 + 100 * m, m)
    assert a == 1.0 and hi == 1.0 and lo == pytest.approx(0.025 ** (1 / 10))
    a, lo, hi, _ = auc_confidence_interval(-(np.arange(20.0) * -1 + 100 * m), m)
    assert a == 0.0 and lo == 0.0 and hi == pytest.approx(1 - 0.025 ** (1 / 10))
    a, lo, hi, _ = auc_confidence_interval(np.zeros(20), m)
    assert (a, lo, hi) == (0.5, 0.0, 1.0)
    rng = np.random.default_rng(0)
    s = rng.standard_normal(200) + (np.arange(200) < 100)
    mm = np.arange(200) < 100
    w90 = np.diff(auc_ci_fields(s, mm, confidence=0.9)["auc_ci"])[0]
    w99 = np.diff(auc_ci_fields(s, mm, confidence=0.99)["auc_ci"])[0]
    assert 0 < w90 < w99
    with pytest.raises(InvalidInputError):
        auc_confidence_interval(s, np.ones(200, bool))


# ---------------------------------------------------------------------------------------
# clustered records (Obuchowski 1997): the chunks of one document


def test_singleton_clusters_give_delong() -> None:
    rng = np.random.default_rng(7)
    member = rng.random(300) < 0.5
    scores = member * 0.8 + rng.normal(size=300)
    plain = auc_confidence_interval(scores, member)
    grouped = auc_confidence_interval(scores, member, groups=np.arange(300))
    np.testing.assert_allclose(grouped, plain, rtol=1e-12)
    assert auc_ci_fields(scores, member, groups=np.arange(300))["auc_ci_method"] == "delong-logit"


def test_clustered_variance_by_hand_and_refuses_mixed_clusters() -> None:
    scores = np.array([0.9, 0.8, 0.3, 0.7, 0.2, 0.1, 0.4, 0.6])
    member = np.array([1, 1, 1, 1, 0, 0, 0, 0], bool)
    groups = np.array(["a", "a", "b", "c", "d", "d", "e", "e"])
    v10, v01 = delong_placements(scores, member)
    a = v10.mean()
    t = np.array([v10[0] + v10[1], v10[2], v10[3]])
    u = np.array([v01[0] + v01[1], v01[2] + v01[3]])
    want = (
        3 / 2 * np.sum((t - np.array([2, 1, 1]) * a) ** 2) / 16
        + 2 / 1 * np.sum((u - np.array([2, 2]) * a) ** 2) / 16
    )
    _, _, _, se = auc_confidence_interval(scores, member, groups=groups)
    assert se == pytest.approx(np.sqrt(want))
    f = auc_ci_fields(scores, member, groups=groups)
    assert f["auc_ci_method"] == "obuchowski-clustered-logit"
    with pytest.raises(InvalidInputError, match="mixed cluster"):
        auc_confidence_interval(scores, member, groups=["a"] * 8)


def test_clustered_interval_covers_where_delong_does_not() -> None:
    """Documents of 5 alike chunks (a shared random effect), true AUC 0.5: DeLong's 95%
    interval, treating the 200 chunks as independent, misses 0.5 far more often than 5%;
    the clustered interval stays near its level."""
    rng = np.random.default_rng(11)
    reps, n_docs, k = 200, 40, 5
    miss_delong = miss_clustered = 0
    for _ in range(reps):
        doc_member = rng.permutation(np.r_[np.ones(n_docs // 2, bool), np.zeros(n_docs // 2, bool)])
        member = np.repeat(doc_member, k)
        groups = np.repeat(np.arange(n_docs), k)
        scores = np.repeat(rng.normal(size=n_docs), k) + 0.3 * rng.normal(size=n_docs * k)
        _, lo, hi, _ = auc_confidence_interval(scores, member)
        miss_delong += not lo <= 0.5 <= hi
        _, lo, hi, _ = auc_confidence_interval(scores, member, groups=groups)
        miss_clustered += not lo <= 0.5 <= hi
    assert miss_clustered <= 0.05 * reps + 2.5 * np.sqrt(0.05 * 0.95 * reps)
    assert miss_delong > 3 * miss_clustered
