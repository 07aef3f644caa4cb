"""Generators: discretisation, BayNet / PrivBayes, sequential CART, the user adapter."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from privaudit.data.dataset import Dataset
from privaudit.errors import InvalidInputError
from privaudit.generators import (
    BayesianNetworkGenerator,
    CartGenerator,
    DiscreteTable,
    UserGenerator,
    choose_degree,
    discretise,
    make_generator,
    mutual_information_sensitivity,
    synthesise,
    theta_usefulness,
)
from privaudit.generators.baynet import _subset_entropies


def correlated_codes(n: int = 600, seed: int = 0) -> tuple[np.ndarray, tuple[int, ...]]:
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 4, n)
    b = (a + rng.integers(0, 2, n)) % 4
    c = (a * b + rng.integers(0, 2, n)) % 3
    d = rng.integers(0, 2, n)
    e = (c + d) % 2
    return np.stack([a, b, c, d, e], axis=1), (4, 4, 3, 2, 2)


def tv(p: np.ndarray, q: np.ndarray) -> float:
    return 0.5 * float(np.abs(p - q).sum())


def joint(codes: np.ndarray, cols: tuple[int, ...], card: tuple[int, ...]) -> np.ndarray:
    idx = np.ravel_multi_index(tuple(codes[:, c] for c in cols), [card[c] for c in cols])
    return np.bincount(idx, minlength=math.prod(card[c] for c in cols)) / len(codes)


def test_discretise_folds_one_hot_blocks_and_bins_numbers() -> None:
    rng = np.random.default_rng(0)
    colour = rng.integers(0, 3, 200)
    X = np.column_stack(
        [
            rng.normal(size=200),
            np.eye(3)[colour],
            np.where(rng.random(200) < 0.9, 0.0, rng.exponential(size=200)),
        ]
    )
    ds = Dataset(
        "toy",
        np.arange(200),
        X,
        rng.integers(0, 2, 200),
        ("x", "colour=r", "colour=g", "colour=b", "gain"),
        ("no", "yes"),
    )
    t = discretise(ds, n_bins=4)
    assert t.names == ("x", "colour", "gain", "label")
    assert t.cardinalities[0] == 4 and t.cardinalities[1] == 3 and t.cardinalities[3] == 2
    assert np.array_equal(t.codes[:, 1], colour)
    assert t.levels[1] == ("r", "g", "b")
    # the heavy value 0 of "gain" gets a bin of its own
    assert t.levels[2][0] == "0" and np.all((t.codes[:, 2] == 0) == (X[:, 4] == 0))
    assert np.array_equal(t.codes[:, 3], ds.y)
    # quantile bins of "x" are about equal
    assert np.bincount(t.codes[:, 0]).min() >= 40


def test_discretise_adult_shape() -> None:
    from privaudit.data import load_adult

    t = discretise(load_adult())
    assert t.n_attributes == 15 and t.names[-1] == "label"
    assert all(c >= 2 for c in t.cardinalities)
    assert all(m < c for m, c in zip(t.codes.max(axis=0), t.cardinalities, strict=True))


def test_subset_entropies_match_direct_counting() -> None:
    codes, card = correlated_codes(300)
    H = _subset_entropies(codes, card, 3)
    assert len(H) == 1 + 5 + 10 + 10
    for size in (1, 2, 3):
        for cols in itertools.combinations(range(5), size):
            p = joint(codes, cols, card)
            p = p[p > 0]
            assert H[sum(1 << c for c in cols)] == pytest.approx(-(p * np.log2(p)).sum(), abs=1e-9)


@pytest.mark.parametrize("degree", [1, 2])
def test_baynet_reproduces_low_order_marginals(degree: int) -> None:
    codes, card = correlated_codes(3000)
    g = BayesianNetworkGenerator(degree=degree)
    net = g.fit(codes, card, seed=0)
    assert all(len(p) <= degree for p in net.parents)
    assert sorted(net.order) == list(range(5))
    syn = net.sample(20000, np.random.default_rng(1))
    for cols in [(0,), (0, 1), (2, 3)]:
        assert tv(joint(syn, cols, card), joint(codes, cols, card)) < 0.05
    if degree == 2:  # c depends on (a, b) jointly: a degree-2 network keeps it
        assert tv(joint(syn, (0, 1, 2), card), joint(codes, (0, 1, 2), card)) < 0.06


def test_releases_are_reproducible_from_the_seed_and_vary_with_it() -> None:
    codes, card = correlated_codes(500)
    for g in (
        BayesianNetworkGenerator(2),
        BayesianNetworkGenerator(2, epsilon=1.0),
        CartGenerator(),
    ):
        a = synthesise(g, codes, card, seed=7)
        assert np.array_equal(a, synthesise(g, codes, card, seed=7))
        assert not np.array_equal(a, synthesise(g, codes, card, seed=8))
        assert a.shape == codes.shape


def test_privbayes_large_epsilon_is_baynet_and_small_epsilon_loses_the_data() -> None:
    codes, card = correlated_codes(2000)
    codes, card = codes[:, :4], card[:4]  # e = c xor d would tie I(X; {c, d}) and I(X; {c, e})
    base = BayesianNetworkGenerator(2).fit(codes, card, seed=3)
    big = BayesianNetworkGenerator(2, epsilon=1e9).fit(codes, card, seed=3)
    assert big.order == base.order and big.parents == base.parents
    # the Laplace noise (scale 2 (d - k) / (n eps_2)) swamps the (a, b) joint at eps = 0.01
    # (clipped noisy cells: a random distribution, not the data's), and vanishes at 1e9
    data_ab = joint(codes, (0, 1), card)
    far = synthesise(BayesianNetworkGenerator(2, epsilon=0.01), codes, card, seed=1, n=20000)
    near = synthesise(BayesianNetworkGenerator(2, epsilon=1e9), codes, card, seed=1, n=20000)
    assert tv(joint(far, (0, 1), card), data_ab) > 0.25
    assert tv(joint(near, (0, 1), card), data_ab) < 0.03


def test_theta_usefulness_is_zhang_et_al_formula_and_picks_the_largest_useful_k() -> None:
    # binary attributes: the joints of a degree-k network are n eps2 / ((d - k) 2^(k+2))-useful
    d, n, eps2 = 10, 5000, 0.7
    for k in range(d):
        assert theta_usefulness(n, (2,) * d, eps2, k) == pytest.approx(
            n * eps2 / ((d - k) * 2 ** (k + 2))
        )
    # the rule by brute force: the largest k whose usefulness reaches theta = 4
    brute = max(k for k in range(d) if n * eps2 / ((d - k) * 2 ** (k + 2)) >= 4)
    assert choose_degree(n, (2,) * d, eps2) == brute == 5
    # general domains: the mean over (k+1)-subsets of 1 / (product of domain sizes)
    card = (3, 5, 2, 7)
    for k in range(4):
        subsets = list(itertools.combinations(card, k + 1))
        mean = sum(1 / math.prod(s) for s in subsets) / len(subsets)
        assert theta_usefulness(800, card, 1.0, k) == pytest.approx(800 / (2 * (4 - k)) * mean)
    # more data or budget never lowers k; nothing useful -> k = 0 (noisy marginals)
    ks = [choose_degree(m, (8,) * 12, 0.7) for m in (10**3, 10**4, 10**5, 10**6)]
    assert ks == sorted(ks) and ks[0] == 0 and ks[-1] >= 2
    assert choose_degree(10, (8,) * 12, 0.7) == 0


def test_privbayes_auto_degree_fits_with_the_chosen_k() -> None:
    codes, card = correlated_codes(2000)
    g = BayesianNetworkGenerator("auto", epsilon=1.0)
    k = choose_degree(2000, card, 0.7)
    assert g.degree_for(2000, card) == k and g.settings()["theta"] == 4.0
    net = g.fit(codes, card, seed=0)
    assert net.k == k and all(len(p) <= k for p in net.parents)
    # k = 0 (too little data for any joint): one-way noisy marginals, still a sampler
    tiny = BayesianNetworkGenerator("auto", epsilon=0.05).fit(codes[:50], card, seed=0)
    assert tiny.k == 0 and all(p == () for p in tiny.parents)
    syn = tiny.sample(300, np.random.default_rng(1))
    assert syn.shape == (300, len(card)) and (syn < np.asarray(card)).all()


def test_mutual_information_sensitivity_lemma_4_1() -> None:
    n = 1000
    assert mutual_information_sensitivity(n, True) == pytest.approx(
        math.log2(n) / n + (n - 1) / n * math.log2(n / (n - 1))
    )
    assert mutual_information_sensitivity(n, False) == pytest.approx(
        2 / n * math.log2((n + 1) / 2) + (n - 1) / n * math.log2((n + 1) / (n - 1))
    )
    assert mutual_information_sensitivity(n, False) > mutual_information_sensitivity(n, True)


def test_cart_samples_donor_values_and_keeps_dependencies() -> None:
    codes, card = correlated_codes(3000)
    fitted = CartGenerator().fit(codes, card, seed=0)
    syn = fitted.sample(5000, np.random.default_rng(0))
    # b = a or a + 1 (mod 4) in the data; CART keeps that rule
    assert np.mean((syn[:, 1] - syn[:, 0]) % 4 <= 1) > 0.97
    assert tv(joint(syn, (0,), card), joint(codes, (0,), card)) < 0.03


def test_make_generator_and_bad_input() -> None:
    assert make_generator("baynet", degree=1).name == "baynet-k1"
    assert make_generator("privbayes", epsilon=1.0).name == "privbayes-auto-eps1"
    assert make_generator("privbayes", epsilon=1.0, degree=2).name == "privbayes-k2-eps1"
    with pytest.raises(InvalidInputError, match="degree"):
        BayesianNetworkGenerator(degree="auto")  # BayNet has no budget to size k by
    with pytest.raises(InvalidInputError, match="theta"):
        BayesianNetworkGenerator(degree="auto", epsilon=1.0, theta=0.0)
    with pytest.raises(InvalidInputError, match="epsilon"):
        make_generator("privbayes")
    with pytest.raises(InvalidInputError, match="generator"):
        make_generator("gan")
    with pytest.raises(InvalidInputError, match="codes"):
        BayesianNetworkGenerator().fit(np.array([[0, 5]]), (2, 2), seed=0)
    with pytest.raises(InvalidInputError, match="epsilon"):
        BayesianNetworkGenerator(epsilon=-1.0)
    with pytest.raises(InvalidInputError, match="cardinalities: expected at least one attribute"):
        BayesianNetworkGenerator(degree=1).fit(np.zeros((5, 0), dtype=np.int64), (), seed=0)


class Bootstrap:
    def __init__(self) -> None:
        self.fitted = False

    def fit(self, df: pd.DataFrame, seed: int | None = None) -> None:
        self.df, self.rng, self.fitted = df, np.random.default_rng(seed), True

    def sample(self, n: int) -> pd.DataFrame:
        return self.df.sample(n, replace=True, random_state=self.rng)


def test_user_generator_adapter() -> None:
    codes, card = correlated_codes(100)
    obj = Bootstrap()
    g = UserGenerator(obj, ["a", "b", "c", "d", "e"], name="bootstrap")
    assert g.randomised
    out = synthesise(g, codes, card, seed=1)
    assert not obj.fitted  # the original is never fitted
    assert np.array_equal(out, synthesise(g, codes, card, seed=1))
    rows = {tuple(r) for r in codes.tolist()}
    assert all(tuple(r) in rows for r in out.tolist())

    class Broken(Bootstrap):
        def sample(self, n: int) -> pd.DataFrame:
            return pd.DataFrame({"a": [9] * n})

    with pytest.raises(InvalidInputError, match="sample"):
        synthesise(UserGenerator(Broken(), ["a", "b", "c", "d", "e"]), codes, card, seed=0)
    with pytest.raises(InvalidInputError, match="fit"):
        UserGenerator(object(), ["a"])


def test_discrete_table_validation() -> None:
    with pytest.raises(InvalidInputError, match="codes"):
        DiscreteTable(np.arange(2), np.array([[0], [3]]), (2,), ("a",))
    t = DiscreteTable(np.array(["x", "y"]), np.array([[0], [1]]), (2,), ("a",))
    assert t.positions(["y"]).tolist() == [1]
    assert t.with_codes(np.array([[1]])).record_ids.tolist() == ["synth-000000"]
