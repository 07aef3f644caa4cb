"""RMIA against a brute-force N x Z oracle (ties included), and its memory bound."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from privaudit.attacks import AttackData, run_attack
from privaudit.attacks.rmia import rmia_scores
from privaudit.errors import DesignError, InvalidInputError
from privaudit.records import MembershipMatrix, SignalTable

from .conftest import World, make_world


def _oracle_from_tables(d: AttackData, *, offline: bool, a: float, gamma: float) -> np.ndarray:
    """Literal Zarifzadeh et al. score: mean over z of 1[LR(x, z) >= gamma], N x Z matrix."""
    px = d.target["prob_true"].values[0]
    pz = d.population_target["prob_true"].values[0]
    rx = d.reference["prob_true"].values
    rz = d.reference_population["prob_true"].values
    keep_x = d.reference_membership.keep
    keep_z = (
        np.zeros_like(rz, bool)
        if d.reference_population_membership is None
        else d.reference_population_membership.keep
    )
    pr_x = np.empty(px.size)
    for i in range(px.size):
        if offline:
            pr_x[i] = 0.5 * ((1 + a) * rx[~keep_x[:, i], i].mean() + (1 - a))
        else:
            pr_x[i] = rx[:, i].mean()
    pr_z = np.empty(pz.size)
    for j in range(pz.size):
        if offline:
            pr_z[j] = 0.5 * ((1 + a) * rz[~keep_z[:, j], j].mean() + (1 - a))
        else:
            pr_z[j] = rz[:, j].mean()
    ratio_x = px / pr_x
    ratio_z = pz / pr_z
    # the comparison as the implementation states it: r_z <= r_x / gamma, pair by pair
    hit = ratio_z[None, :] <= (ratio_x / gamma)[:, None]
    same = d.record_ids[:, None] == d.population_target["prob_true"].record_ids[None, :]
    hit = hit & ~same
    return hit.sum(axis=1) / (pz.size - same.sum(axis=1))


@pytest.mark.parametrize("offline", [False, True])
@pytest.mark.parametrize("gamma", [1.0, 2.0, 0.5])
def test_attack_matches_bruteforce(offline: bool, gamma: float) -> None:
    w = make_world(20, n=150, n_pop=200)
    name = "rmia-offline" if offline else "rmia-online"
    kw = {"a": 0.3} if offline else {}
    res = run_attack(name, w.data, gamma=gamma, **kw)
    expected = _oracle_from_tables(w.data, offline=offline, a=0.3, gamma=gamma)
    np.testing.assert_array_equal(res.scores, expected)
    assert res.params["gamma"] == gamma
    if offline:
        assert res.params["a"] == 0.3


def test_literal_likelihood_ratio_agrees_away_from_ties(world: World) -> None:
    """Against LR(x,z) = (p_x/P_x)/(p_z/P_z) >= gamma computed literally."""
    d = world.data
    res = run_attack("rmia-online", d, gamma=2.0)
    px = d.target["prob_true"].values[0]
    pz = d.population_target["prob_true"].values[0]
    lr = (px / d.reference["prob_true"].values.mean(0))[:, None] / (
        pz / d.reference_population["prob_true"].values.mean(0)
    )[None, :]
    lit = (lr >= 2.0).mean(axis=1)
    near = (np.abs(lr - 2.0) < 1e-9 * 2.0).any(axis=1)
    np.testing.assert_array_equal(res.scores[~near], lit[~near])


def test_rmia_scores_exact_with_ties() -> None:
    # powers of two: r_x / gamma and the ratio LR are exact, so ties are real ties
    rng = np.random.default_rng(0)
    rx = 2.0 ** rng.integers(-4, 5, size=300)
    rz = 2.0 ** rng.integers(-4, 5, size=257)
    for gamma in (0.5, 1.0, 2.0, 4.0):
        got = rmia_scores(rx, rz, gamma)
        lr = rx[:, None] / rz[None, :]
        np.testing.assert_array_equal(got, (lr >= gamma).mean(axis=1))
        assert (lr == gamma).any()  # the ties were exercised


def test_self_pairs_removed_when_population_contains_audited_records() -> None:
    w = make_world(21, n=60, n_pop=80)
    d = w.data
    # population = audited records r0..r19 + the real population records
    sel = np.arange(20)
    pop_ids = np.concatenate([d.record_ids[sel], d.population_target["prob_true"].record_ids])

    def cat(a: SignalTable, b: SignalTable) -> SignalTable:
        return SignalTable(
            a.signal, pop_ids, a.model_ids, np.concatenate([a.values[:, sel], b.values], axis=1)
        )

    pt = {s: cat(d.target[s], d.population_target[s]) for s in d.target}
    rp = {s: cat(d.reference[s], d.reference_population[s]) for s in d.reference}
    keep = np.concatenate(
        [d.reference_membership.keep[:, sel], d.reference_population_membership.keep], axis=1
    )
    d2 = AttackData(
        record_ids=d.record_ids,
        labels=d.labels,
        target=d.target,
        population_target=pt,
        reference=d.reference,
        reference_membership=d.reference_membership,
        reference_population=rp,
        reference_population_membership=MembershipMatrix(
            pop_ids, d.reference_membership.model_ids, keep
        ),
    )
    for name, off in (("rmia-online", False), ("rmia-offline", True)):
        res = run_attack(name, d2)
        assert res.params["n_self_pairs_removed"] == 20
        np.testing.assert_array_equal(
            res.scores, _oracle_from_tables(d2, offline=off, a=0.3, gamma=2.0)
        )


def test_population_membership_none_means_all_out() -> None:
    w = make_world(22, n=50, n_pop=70)
    d = w.data
    d2 = AttackData(
        record_ids=d.record_ids,
        labels=d.labels,
        target=d.target,
        population_target=d.population_target,
        reference=d.reference,
        reference_membership=d.reference_membership,
        reference_population=d.reference_population,
    )
    res = run_attack("rmia-offline", d2, a=0.5)
    assert res.params["population_out_source"] == "all models"
    np.testing.assert_array_equal(
        res.scores, _oracle_from_tables(d2, offline=True, a=0.5, gamma=2.0)
    )


def test_offline_without_out_models_is_design_error() -> None:
    w = make_world(23, n=30, n_pop=30)
    d = w.data
    keep = np.array(d.reference_membership.keep)
    keep[:, 0] = True
    d2 = AttackData(
        record_ids=d.record_ids,
        labels=d.labels,
        target=d.target,
        population_target=d.population_target,
        reference=d.reference,
        reference_membership=MembershipMatrix(d.record_ids, d.reference_membership.model_ids, keep),
        reference_population=d.reference_population,
    )
    with pytest.raises(DesignError, match="OUT"):
        run_attack("rmia-offline", d2)
    run_attack("rmia-online", d2)  # online uses every model


def test_bad_parameters(world: World) -> None:
    with pytest.raises(InvalidInputError, match="gamma"):
        run_attack("rmia-online", world.data, gamma=0.0)
    with pytest.raises(InvalidInputError, match="a:"):
        run_attack("rmia-offline", world.data, a=1.5)
    with pytest.raises(InvalidInputError, match="signal"):
        run_attack("rmia-online", world.data, signal="loss")


def test_memory_is_linear_not_n_times_z() -> None:
    """200k x 200k pairs would need 40 GB as a matrix; the sort-based score stays small."""
    rng = np.random.default_rng(1)
    n = z = 200_000
    rx, rz = rng.lognormal(size=n), rng.lognormal(size=z)
    tracemalloc.start()
    scores = rmia_scores(rx, rz, 2.0)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 20 * (n + z) * 8  # a few arrays of length N + Z
    sub = rng.choice(n, 50, replace=False)
    np.testing.assert_array_equal(
        scores[sub], (rz[None, :] <= (rx[sub] / 2.0)[:, None]).mean(axis=1)
    )
