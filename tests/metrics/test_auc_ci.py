"""AUC confidence interval (DeLong's variance; logit-scale interval joined with a score-type
interval over Hanley and McNeil's variance function): oracles and coverage by simulation."""

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


def t_quantile(u: float, df_u: int, v: float, df_v: int) -> float:
    """Student's 0.975 quantile with Satterthwaite's degrees of freedom."""
    return float(stats.t.ppf(0.975, (u + v) ** 2 / (u**2 / df_u + v**2 / df_v)))


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
    u, v = w10.var(ddof=1) / w10.size, w01.var(ddof=1) / w01.size
    assert se == pytest.approx(math.sqrt(u + v), rel=1e-10)
    # the interval contains DeLong's logit-scale interval (t quantile)
    q = t_quantile(u, w10.size - 1, v, w01.size - 1)
    lg = math.log(a / (1 - a))
    assert lo <= 1 / (1 + math.exp(-(lg - q * se / (a * (1 - a))))) + 1e-12
    assert hi >= 1 / (1 + math.exp(-(lg + q * se / (a * (1 - a))))) - 1e-12
    assert lo < a < hi


def g10(t: np.ndarray | float) -> np.ndarray | float:
    return t * t * (1 - t) / (1 + t)


def g01(t: np.ndarray | float) -> np.ndarray | float:
    return t * (1 - t) ** 2 / (2 - t)


def scan_interval(
    s: np.ndarray, m: np.ndarray, groups: np.ndarray | None = None, n_grid: int = 400_001
) -> tuple[float, float]:
    """The interval written out independently: pair counting, Obuchowski's sums and the
    design effect by loops over clusters, the score set by a brute-force scan of [0, 1]."""
    w10, w01 = slow_placements(s, m)
    a = float(w10.mean())
    terms = []
    for w, cls in ((w10, m), (w01, ~m)):
        g = np.arange(w.size) if groups is None else groups[cls]
        labels = list(dict.fromkeys(g.tolist()))
        d = w - a
        sums = np.array([d[g == lab].sum() for lab in labels])
        sq = np.array([(d[g == lab] ** 2).sum() for lab in labels])
        sizes = np.array([(g == lab).sum() for lab in labels])
        k = len(labels)
        var = k / (k - 1) * float(np.sum(sums**2)) / w.size**2
        within = float(np.sum((sizes - 1) * sq))
        rho = min(max(float(np.sum(sums**2 - sq)) / within if within > 0 else 0.0, 0.0), 1.0)
        e = k * min(a, 1 - a)
        rho = (e * rho + 1) / (e + 1)
        m_w = float(np.sum(sizes**2)) / w.size
        deff = 1 + (m_w - 1) * rho
        terms.append((var, k, deff, w.size, m_w))
    (u, i_m, deff_m, n_m, mw_m), (v, i_n, deff_n, n_n, mw_n) = terms
    q = t_quantile(u, i_m - 1, v, i_n - 1)

    def shrunk(term: float, size: int, units: int, target: float, g: float) -> float:
        phi = size * term / g
        e = units * (1 - max(a, 1 - a))
        return max(phi, (e * phi + target) / (e + 1))

    b = max(a, 1 - a)  # an inverted attack: the mirror image of the negated scores' set
    c10 = shrunk(u, n_m, i_m, deff_m, float(g10(b))) / n_m
    c01 = shrunk(v, n_n, i_n, deff_n, float(g01(b))) / n_n
    t = np.linspace(0.0, 1.0, n_grid)
    bern = t * (1 - t)  # the most a class's mean placement can vary, per record
    model = np.minimum(c10 * g10(t), mw_m * bern / n_m) + np.minimum(
        c01 * g01(t), mw_n * bern / n_n
    )
    inside = (t - b) ** 2 <= q * q * np.maximum(u + v, model)
    idx = np.flatnonzero(inside)
    assert idx[-1] - idx[0] + 1 == idx.size  # the score set is an interval
    s_lo, s_hi = float(t[idx[0]]), float(t[idx[-1]])
    if b != a:
        s_lo, s_hi = 1 - s_hi, 1 - s_lo
    half = q * math.sqrt(u + v) / (a * (1 - a))
    lg = math.log(a / (1 - a))
    lo = min(1 / (1 + math.exp(-(lg - half))), s_lo)
    hi = max(1 / (1 + math.exp(-(lg + half))), s_hi)
    return lo, hi


@pytest.mark.parametrize(
    ("n_pos", "n_neg", "shift", "round_to", "flip"),
    [
        (50, 1000, 2.9, None, False),  # unbalanced, AUC about 0.98
        (20, 500, 2.3, None, False),
        (500, 50, 2.3, 0.5, False),  # few non-members, ties
        (30, 30, 0.5, None, False),
        (12, 9, 1.0, 0.5, False),
        (50, 1000, 2.9, None, True),  # the classes' roles swapped: AUC about 0.02
    ],
)
def test_interval_matches_a_brute_force_scan(
    n_pos: int, n_neg: int, shift: float, round_to: float | None, flip: bool
) -> None:
    rng = np.random.default_rng(n_pos + n_neg)
    m = np.arange(n_pos + n_neg) < n_pos
    s = rng.standard_normal(m.size) + shift * m
    if round_to:
        s = np.round(s / round_to) * round_to
    if flip:
        s = -s
    _, lo, hi, _ = auc_confidence_interval(s, m)
    want_lo, want_hi = scan_interval(s, m)
    assert lo == pytest.approx(want_lo, abs=3e-6)
    assert hi == pytest.approx(want_hi, abs=3e-6)


def test_clustered_interval_matches_a_brute_force_scan() -> None:
    rng = np.random.default_rng(5)
    sizes = rng.integers(1, 8, 60)
    doc_member = np.arange(60) < 15
    groups = np.repeat(np.arange(60), sizes)
    m = doc_member[groups]
    s = np.repeat(rng.normal(size=60) + 2.0 * doc_member, sizes) + rng.normal(size=groups.size)
    _, lo, hi, _ = auc_confidence_interval(s, m, groups=groups)
    want_lo, want_hi = scan_interval(s, m, groups)
    assert lo == pytest.approx(want_lo, abs=3e-6)
    assert hi == pytest.approx(want_hi, abs=3e-6)


def test_one_misordered_pair_is_near_the_exact_bound() -> None:
    """30 members above 30 non-members but for one pair: the interval's lower end is near
    the exact binomial bound of 30 disjoint pairs with one failure, not far below it."""
    m = np.arange(60) < 30
    s = np.r_[np.arange(30) + 100.0, np.arange(30.0)]
    s[0] = 28.5  # one member below one non-member
    a, lo, hi, _ = auc_confidence_interval(s, m)
    assert a == pytest.approx(1 - 1 / 900) and hi == 1.0
    exact = stats.beta.ppf(0.025, 29, 2)  # Clopper-Pearson lower end, 29 of 30
    assert exact - 0.03 < lo < a, (lo, exact)


def test_negating_the_scores_mirrors_the_interval() -> None:
    """An inverted attack's interval is the mirror image of its negated scores' (the model
    keeps the members' placements as its heavy-tailed class in both orientations)."""
    rng = np.random.default_rng(3)
    m = np.arange(700) < 40
    s = np.round(rng.standard_normal(700) + 2.5 * m, 1)
    a, lo, hi, se = auc_confidence_interval(s, m)
    a2, lo2, hi2, se2 = auc_confidence_interval(-s, m)
    assert a2 == pytest.approx(1 - a, abs=1e-12) and se2 == pytest.approx(se, rel=1e-9)
    assert (lo2, hi2) == (pytest.approx(1 - hi, abs=1e-9), pytest.approx(1 - lo, abs=1e-9))
    groups = np.char.add(np.where(m, "m", "n"), (np.arange(700) // 3).astype(str))
    _, lo, hi, _ = auc_confidence_interval(s, m, groups=groups)
    _, lo2, hi2, _ = auc_confidence_interval(-s, m, groups=groups)
    assert (lo2, hi2) == (pytest.approx(1 - hi, abs=1e-9), pytest.approx(1 - lo, abs=1e-9))


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


@pytest.mark.parametrize(
    ("dist", "n_pos", "n_neg", "true"),
    [("binormal", 50, 1000, 0.98), ("exponential", 20, 500, 0.95)],
)
def test_coverage_with_few_members_and_high_auc(
    dist: str, n_pos: int, n_neg: int, true: float
) -> None:
    """Few members, many non-members, AUC near 1: the members' placements are skewed, and
    DeLong's logit interval missed the true AUC from above in 8% (binormal, 50 / 1,000,
    AUC 0.98) and 15% (exponential, 20 / 500, AUC 0.95) of samples, for 2.5% nominal
    (module docstring). The interval keeps each tail's miss rate near 2.5% or below."""
    rng = np.random.default_rng(17)
    reps = 600
    member = np.arange(n_pos + n_neg) < n_pos
    if dist == "binormal":
        d = math.sqrt(2) * stats.norm.ppf(true)
        scores = rng.standard_normal((reps, member.size)) + d * member
    else:  # exponential scores: AUC = lam / (1 + lam) with the members' mean lam
        lam = true / (1 - true)
        scores = rng.exponential(1.0, (reps, member.size)) * np.where(member, lam, 1.0)
    below = above = 0
    for s in scores:
        _, lo, hi, _ = auc_confidence_interval(s, member)
        below += true < lo
        above += true > hi
    # the old interval's expected misses from above: 49 (binormal) and 89 (exponential)
    # of 600; each tail here at most 4.5% (27), over 3 standard errors above 2.5%
    assert below <= 27, below
    assert above <= 27, above
    assert below + above <= 0.06 * reps, (below, above)


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
    assert (
        auc_ci_fields(scores, member, groups=np.arange(300))["auc_ci_method"] == "delong-hm-score"
    )


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
    assert f["auc_ci_method"] == "obuchowski-hm-score"
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


def test_clustered_coverage_with_few_member_documents_and_high_auc() -> None:
    """10 member documents against 200 non-member documents, 5 alike chunks each (a shared
    random effect, intra-class correlation 0.5), chunk-level AUC 0.98: Obuchowski's
    variance on the logit scale missed the true AUC from above in 13% of samples; the
    clustered interval keeps each tail near 2.5% or below."""
    rng = np.random.default_rng(23)
    reps, n_mem, n_non, k, true = 400, 10, 200, 5, 0.98
    d = math.sqrt(2) * stats.norm.ppf(true)  # chunk scores N(0, 1) around a document effect
    groups = np.repeat(np.arange(n_mem + n_non), k)
    member = groups < n_mem
    below = above = 0
    for _ in range(reps):
        doc = rng.normal(0.0, math.sqrt(0.5), n_mem + n_non) + d * (
            np.arange(n_mem + n_non) < n_mem
        )
        s = doc[groups] + rng.normal(0.0, math.sqrt(0.5), groups.size)
        _, lo, hi, _ = auc_confidence_interval(s, member, groups=groups)
        below += true < lo
        above += true > hi
    assert below <= 18, below  # 4.5% of 400; the old interval: about 52
    assert above <= 18, above
