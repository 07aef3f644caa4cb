"""Record-level games: per-record AUC intervals and the gap test with shared releases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privaudit.errors import InvalidInputError
from privaudit.metrics.auc_ci import auc_confidence_interval
from privaudit.record_risk.metrics import (
    bootstrap_auc_deviations,
    per_record_auc,
    record_auc_intervals,
    rmsd_gap_test,
)

# P(5 + N(0,1) > N(0,1)) = Phi(5 / sqrt 2): a leaking release against an OUT one
_LEAK_WINS = 0.5 * math.erfc(-5.0 / math.sqrt(2.0) / math.sqrt(2.0))


def _leaky_game(
    rng: np.random.Generator, n_records: int, n_rounds: int, q: float
) -> tuple[np.ndarray, np.ndarray, float]:
    """A model-seeded game per record: half the rounds IN, half OUT; an IN release leaks the
    record with probability q (score 5 + N(0,1)), else scores like an OUT one (N(0,1))."""
    n1 = n_rounds // 2
    n0 = n_rounds - n1
    leak = rng.random((n_records, n1)) < q
    s_in = np.where(leak, 5.0, 0.0) + rng.normal(size=(n_records, n1))
    s = np.concatenate([s_in, rng.normal(size=(n_records, n0))], axis=1)
    m = np.zeros_like(s, dtype=bool)
    m[:, :n1] = True
    return s, m, q * _LEAK_WINS + (1 - q) * 0.5


@pytest.mark.parametrize(("n_rounds", "q"), [(100, 0.9), (400, 0.97)])
def test_record_auc_intervals_hold_their_level_for_high_risk_records(
    n_rounds: int, q: float
) -> None:
    """The most vulnerable records (AUC 0.95, 0.985) keep 95% coverage: Hanley and McNeil's
    AUC +- 1.96 SE covered 0.87 of them in both designs (and is 0 at AUC 1)."""
    rng = np.random.default_rng(11)
    s, m, true = _leaky_game(rng, 1500, n_rounds, q)
    auc, lo, hi, se = record_auc_intervals(s, m, confidence=0.95)
    assert np.allclose(auc, per_record_auc(s, m))
    assert np.all((lo <= auc) & (auc <= hi)) and np.all(se >= 0)
    covered = np.mean((lo <= true) & (true <= hi))
    # 1500 records: the coverage's SE is about 0.006
    assert covered >= 0.92, covered


def test_record_auc_intervals_are_auc_ci_per_row_and_proper_at_auc_one() -> None:
    rng = np.random.default_rng(3)
    s, m, _ = _leaky_game(rng, 20, 60, 0.8)
    s[0, :30] += 100.0  # record 0 perfectly separated: AUC 1, DeLong's SE 0
    auc, lo, hi, se = record_auc_intervals(s, m, confidence=0.9)
    for k in range(20):
        want = auc_confidence_interval(s[k], m[k], confidence=0.9)
        assert (auc[k], lo[k], hi[k], se[k]) == pytest.approx(want, rel=1e-12, abs=1e-15)
    assert auc[0] == 1.0 and hi[0] == 1.0 and lo[0] < 0.95
    with pytest.raises(InvalidInputError, match="member"):
        record_auc_intervals(s, m[:, :10])


def test_bootstrap_deviations_resample_shared_rounds_jointly_and_reproduce() -> None:
    """A shared block's columns are drawn once for all targets (two targets with the same
    scores get the same AUC in every draw), a per-target block's per target; the
    deviations' spread is the AUC's sampling SD; one seed, one answer."""
    rng = np.random.default_rng(0)
    k, n_in, n_out = 6, 200, 200
    s_in = rng.normal(size=(1, n_in)).repeat(k, axis=0) + 1.0
    s_out = rng.normal(size=(1, n_out)).repeat(k, axis=0)
    ones, zeros = np.ones((k, n_in), bool), np.zeros((k, n_out), bool)
    both_shared = [(s_in, ones, True), (s_out, zeros, True)]
    out_own = [(s_in, ones, True), (s_out, zeros, False)]
    dev = bootstrap_auc_deviations(both_shared, 300, seed=5)
    assert dev.shape == (300, k) and np.allclose(dev, dev[:, :1])
    own = bootstrap_auc_deviations(out_own, 300, seed=5)
    assert not np.allclose(own, own[:, :1])
    assert np.array_equal(own, bootstrap_auc_deviations(out_own, 300, seed=5))
    # the spread: DeLong's SE of these AUCs (identical rows), within bootstrap noise
    _, _, _, se = auc_confidence_interval(
        np.concatenate([s_in[0], s_out[0]]), np.r_[np.ones(n_in, bool), np.zeros(n_out, bool)]
    )
    assert own.std(axis=0) == pytest.approx(np.full(k, se), rel=0.15)
    assert abs(own.mean()) < 0.2 * se


def test_bootstrap_deviations_match_materialised_resamples() -> None:
    """The AUC of a draw, from round counts, is the AUC of the drawn rounds written out
    (ties 1/2); a draw leaving a target without an OUT round gives NaN."""
    from privaudit.record_risk.metrics import _sorted_ties, _weighted_auc

    rng = np.random.default_rng(1)
    k, n = 5, 40
    s = rng.integers(0, 6, size=(k, n)).astype(float)  # many ties
    m = rng.random((k, n)) < 0.5
    m[:, 0], m[:, 1] = True, False
    order, start, stop = _sorted_ties(s)
    m_sorted = np.take_along_axis(m, order, axis=1)
    for _ in range(20):
        idx = rng.integers(0, n, size=(k, n))
        w = np.stack([np.bincount(i, minlength=n) for i in idx]).astype(float)
        got = _weighted_auc(np.take_along_axis(w, order, axis=1)[None], m_sorted, start, stop)[0]
        sx, mx = np.take_along_axis(s, idx, axis=1), np.take_along_axis(m, idx, axis=1)
        ok = mx.any(axis=1) & (~mx).any(axis=1)
        assert np.allclose(got[ok], per_record_auc(sx[ok], mx[ok]), rtol=0, atol=1e-12)
        assert np.all(np.isnan(got[~ok]))
    w = np.zeros((1, k, n))
    w[0, :, 0] = 3.0  # IN rounds only
    assert np.all(np.isnan(_weighted_auc(w, m_sorted, start, stop)))


def _games(
    rng: np.random.Generator, mu: np.ndarray, mu_t: np.ndarray, su: float, n_rounds: int
) -> tuple[list[np.ndarray], list[list[tuple[np.ndarray, np.ndarray, bool]]]]:
    """MS, T, MS', T' as the record-risk run plays them, with a release-level shift
    u ~ N(0, su^2): model-seeded IN releases shared by all targets, OUT releases each
    target's own; amortised traditional releases shared, each target IN w.p. 1/2. A
    target's score is mu * (IN) + u + N(0, 1)."""
    k = mu.size
    n1 = n_rounds // 2
    n0 = n_rounds - n1
    risks, blocks = [], []
    for game in ("ms", "t", "ms", "t"):
        if game == "ms":
            s_in = mu[:, None] + rng.normal(0, su, n1)[None, :] + rng.normal(size=(k, n1))
            s_out = rng.normal(0, su, (k, n0)) + rng.normal(size=(k, n0))
            b = [
                (s_in, np.ones((k, n1), bool), True),
                (s_out, np.zeros((k, n0), bool), False),
            ]
        else:
            while True:
                member = rng.random((k, n_rounds)) < 0.5
                if member.any(axis=1).all() and (~member).any(axis=1).all():
                    break
            u = rng.normal(0, su, n_rounds)
            s = mu_t[:, None] * member + u[None, :] + rng.normal(size=(k, n_rounds))
            b = [(s, member, True)]
        blocks.append(b)
        risks.append(per_record_auc(np.hstack([x[0] for x in b]), np.hstack([x[1] for x in b])))
    return risks, blocks


def test_gap_test_holds_its_level_when_releases_are_shared() -> None:
    """An exact null (every target's risk the same in both games) with a release-level
    shift shared across targets: the bootstrap over releases gives the spread of
    excess_msd (std(d) / sqrt(K), which treats records as independent, gave about half
    of it, and rejected 14% at 0.05 with K = 64, 400 rounds), and rejects at about the
    level."""
    rng = np.random.default_rng(22)
    k, n_rounds, su, n_sims = 32, 100, 3.0, 100
    mu = np.linspace(0.0, 2.0, k)
    excess, se, rejected = [], [], 0
    for i in range(n_sims):
        risks, blocks = _games(rng, mu, mu, su, n_rounds)
        null = tuple(bootstrap_auc_deviations(b, 100, seed=4 * i + j) for j, b in enumerate(blocks))
        g = rmsd_gap_test(*risks, null_deviations=null)
        assert g["method"] == "release-bootstrap" and g["n_bootstrap"] == 100
        excess.append(g["excess_msd"])
        se.append(g["se"])
        rejected += g["p"] < 0.05
    ratio = float(np.mean(se) / np.std(excess))
    assert 0.75 < ratio < 1.3, ratio
    assert rejected / n_sims <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / n_sims)


def test_gap_test_with_the_bootstrap_finds_a_real_gap() -> None:
    """A traditional game whose risk differs by a shift of +-0.6 in the score's mean per
    record (the AUC by about 0.15), with shared releases: found at the bootstrap's
    smallest p, and as surely as by the independent-records test where that one holds
    (no shared shift)."""
    rng = np.random.default_rng(8)
    k = 64
    mu = np.linspace(0.0, 2.0, k)
    mu_t = mu + np.where(np.arange(k) % 2 == 0, 0.6, -0.6)
    for su in (0.0, 1.0):
        risks, blocks = _games(rng, mu, mu_t, su, 200)
        null = tuple(bootstrap_auc_deviations(b, 200, seed=j) for j, b in enumerate(blocks))
        g = rmsd_gap_test(*risks, null_deviations=null)
        assert g["p"] == pytest.approx(1 / 201) and g["z"] > 4
        assert g["excess_rmsd"] == pytest.approx(0.15, abs=0.05)
        assert rmsd_gap_test(*risks)["p"] < 1e-3
    # with independent records and no gap, the two spreads agree
    risks, blocks = _games(rng, mu, mu, 0.0, 200)
    null = tuple(bootstrap_auc_deviations(b, 200, seed=j) for j, b in enumerate(blocks))
    plain = rmsd_gap_test(*risks)
    assert plain["method"] == "independent-records" and plain["n_bootstrap"] == 0
    assert rmsd_gap_test(*risks, null_deviations=null)["se"] == pytest.approx(plain["se"], rel=0.35)
    with pytest.raises(InvalidInputError, match="null_deviations"):
        rmsd_gap_test(*risks, null_deviations=(null[0], null[1], null[2][:, :3], null[3]))
