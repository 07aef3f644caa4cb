"""Membership sampling: splits, balanced keep matrices, leave-one-out designs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privaudit.data import (
    Dataset,
    balanced_keep_matrix,
    leave_one_out_sets,
    sample_membership,
    split_target_population,
)
from privaudit.errors import InvalidInputError


def toy(n: int = 100) -> Dataset:
    X = np.arange(2.0 * n).reshape(n, 2)
    return Dataset(
        "toy",
        np.array([f"id{k:03d}" for k in range(n)]),
        X,
        np.arange(n) % 2,
        ("a", "b"),
        ("n", "p"),
    )


def test_split_is_disjoint_and_reproducible() -> None:
    ds = toy()
    t, p = split_target_population(ds, 30, 50, np.random.default_rng(3))
    assert t.n_records == 30 and p.n_records == 50
    assert not set(t.record_ids) & set(p.record_ids)
    # rows stay attached to their ids
    np.testing.assert_array_equal(t.X, ds.X[ds.positions(t.record_ids)])
    t2, p2 = split_target_population(ds, 30, 50, 3)
    assert t2.fingerprint() == t.fingerprint() and p2.fingerprint() == p.fingerprint()
    t3, _ = split_target_population(ds, 30, 50, 4)
    assert t3.fingerprint() != t.fingerprint()
    with pytest.raises(InvalidInputError, match="at most the 100"):
        split_target_population(ds, 60, 41, 0)
    with pytest.raises(InvalidInputError, match="rng"):
        split_target_population(ds, 6, 4, "seed")  # type: ignore[arg-type]


@settings(max_examples=30, deadline=None)
@given(
    n_half=st.integers(1, 8),
    n_records=st.integers(1, 40),
    seed=st.integers(0, 2**32 - 1),
)
def test_balanced_keep_invariants(n_half: int, n_records: int, seed: int) -> None:
    n_models = 2 * n_half
    ids = np.array([f"r{k}" for k in range(n_records)])
    mm = balanced_keep_matrix(ids, n_models, np.random.default_rng(seed), model_prefix="ref")
    assert mm.keep.shape == (n_models, n_records)
    np.testing.assert_array_equal(mm.keep.sum(axis=0), n_half)  # every record IN for exactly half
    assert mm.model_ids[0] == "ref-000" and len(set(mm.model_ids)) == n_models
    assert mm.record_ids.tolist() == ids.tolist()
    again = balanced_keep_matrix(ids, n_models, np.random.default_rng(seed))
    np.testing.assert_array_equal(again.keep, mm.keep)


def test_balanced_keep_is_uniform() -> None:
    # each model's IN-probability is pkeep for every record, and records are independent:
    # P(model 0 keeps record i) = 1/2 over 4000 records (binomial sd ~ 0.008)
    mm = balanced_keep_matrix(np.arange(4000), 8, np.random.default_rng(0))
    rates = mm.keep.mean(axis=1)
    assert np.all(np.abs(rates - 0.5) < 0.04)
    # pairwise co-membership of models 0, 1: P = (4/8)(3/7) = 3/14
    assert abs((mm.keep[0] & mm.keep[1]).mean() - 3 / 14) < 0.03


def test_balanced_keep_pkeep_and_errors() -> None:
    mm = balanced_keep_matrix(np.arange(10), 4, 0, pkeep=0.25)
    np.testing.assert_array_equal(mm.keep.sum(axis=0), 1)
    with pytest.raises(InvalidInputError, match="n_models"):
        balanced_keep_matrix(np.arange(10), 3, 0)
    with pytest.raises(InvalidInputError, match="unique"):
        balanced_keep_matrix(np.array([1, 1]), 2, 0)
    with pytest.raises(InvalidInputError, match="pkeep"):
        balanced_keep_matrix(np.arange(3), 2, 0, pkeep=1.0)


def test_sample_membership() -> None:
    ids = np.arange(11)
    mm = sample_membership(ids, np.random.default_rng(1))
    assert mm.model_ids == ("target",) and int(mm.keep.sum()) == round(0.5 * 11)
    assert not np.array_equal(mm.keep, sample_membership(ids, 2).keep)
    with pytest.raises(InvalidInputError):
        sample_membership(np.arange(1), 0)


def test_leave_one_out_sets() -> None:
    train = np.array([f"t{k}" for k in range(20)])
    d = leave_one_out_sets(train, 5, np.random.default_rng(0))
    assert d.record_ids.size == 5 and len(set(d.record_ids)) == 5
    assert set(d.record_ids) <= set(train)
    for rid in d.record_ids:
        tr = d.training_ids(rid)
        assert tr.size == 19 and rid not in tr
        assert set(tr) | {rid} == set(train)
        assert d.model_for(rid) == f"loo-{rid}"
    np.testing.assert_array_equal(d.membership.keep.sum(axis=1), 19)
    with pytest.raises(InvalidInputError, match="n_records"):
        leave_one_out_sets(train, 21, 0)
    with pytest.raises(InvalidInputError, match="attacked"):
        d.training_ids("zzz")
