"""RMIA against a brute-force N x Z oracle (ties included), and its memory bound."""

from __future__ import annotations

import dataclasses
import tracemalloc

import numpy as np
import pytest

from privaudit.attacks import AttackData, run_attack
from privaudit.attacks.rmia import rmia_scores
from privaudit.errors import DesignError, InvalidInputError
from privaudit.records import MembershipMatrix, SignalTable

from .conftest import World, make_world


def literal_ratios(d: AttackData, *, offline: bool, a: float) -> tuple[np.ndarray, np.ndarray]:
    """Pr(x|theta)/Pr(x) and Pr(z|theta)/Pr(z), record by record in a loop, from the
    probabilities exp(-loss) (the world's margins are small, so nothing saturates here)."""
    px = np.exp(-d.target["loss"].values[0])
    pz = np.exp(-d.population_target["loss"].values[0])
    rx = np.exp(-d.reference["loss"].values)
    rz = np.exp(-d.reference_population["loss"].values)
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
    return px / pr_x, pz / pr_z


def _oracle_from_tables(d: AttackData, *, offline: bool, a: float, gamma: float) -> np.ndarray:
    """Literal Zarifzadeh et al. score: mean over z of 1[LR(x, z) >= gamma], N x Z matrix."""
    ratio_x, ratio_z = literal_ratios(d, offline=offline, a=a)
    # the comparison as the implementation states it: r_z <= r_x / gamma, pair by pair
    hit = ratio_z[None, :] <= (ratio_x / gamma)[:, None]
    same = d.record_ids[:, None] == d.population_target["loss"].record_ids[None, :]
    hit = hit & ~same
    out: np.ndarray = hit.sum(axis=1) / (ratio_z.size - same.sum(axis=1))
    # pairs within rounding of LR = gamma may go either way between the log-space
    # computation and this literal one: flag the records that have one
    lr = ratio_x[:, None] / ratio_z[None, :]
    near = (np.abs(lr / gamma - 1.0) < 1e-9) & ~same
    return np.where(near.any(axis=1), np.nan, out)


def _assert_matches(got: np.ndarray, expected: np.ndarray) -> None:
    ok = ~np.isnan(expected)
    assert ok.mean() > 0.95
    np.testing.assert_array_equal(got[ok], expected[ok])


@pytest.mark.parametrize("offline", [False, True])
@pytest.mark.parametrize("gamma", [1.0, 2.0, 0.5])
def test_attack_matches_bruteforce(offline: bool, gamma: float) -> None:
    w = make_world(20, n=150, n_pop=200)
    name = "rmia-offline" if offline else "rmia-online"
    kw = {"a": 0.3} if offline else {}
    res = run_attack(name, w.data, gamma=gamma, score="fraction", **kw)
    expected = _oracle_from_tables(w.data, offline=offline, a=0.3, gamma=gamma)
    _assert_matches(res.scores, expected)
    assert res.params["gamma"] == gamma
    if offline:
        assert res.params["a"] == 0.3


def test_literal_likelihood_ratio_agrees_away_from_ties(world: World) -> None:
    """Against LR(x,z) = (p_x/P_x)/(p_z/P_z) >= gamma computed literally."""
    d = world.data
    res = run_attack("rmia-online", d, gamma=2.0, score="fraction")
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


def overlapping_population() -> AttackData:
    """A world whose population holds 20 of the audited records (r0..r19) too."""
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
    return d2


def test_self_pairs_removed_when_population_contains_audited_records() -> None:
    d2 = overlapping_population()
    for name, off in (("rmia-online", False), ("rmia-offline", True)):
        kw = {"a": 0.3} if off else {}
        res = run_attack(name, d2, score="fraction", **kw)
        assert res.params["n_self_pairs_removed"] == 20
        _assert_matches(res.scores, _oracle_from_tables(d2, offline=off, a=0.3, gamma=2.0))


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
    res = run_attack("rmia-offline", d2, a=0.5, score="fraction")
    assert res.params["population_out_source"] == "all models"
    _assert_matches(res.scores, _oracle_from_tables(d2, offline=True, a=0.5, gamma=2.0))


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
        run_attack("rmia-online", world.data, signal="prob_true")
    with pytest.raises(InvalidInputError, match="score"):
        run_attack("rmia-online", world.data, score="rank")
    with pytest.raises(InvalidInputError, match="a:"):
        run_attack("rmia-offline", world.data, a="tuned")


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


def _saturated_world(seed: int = 0, n: int = 300, n_pop: int = 400, k: int = 8) -> AttackData:
    """Margins of 40-80 nats: exp(-loss) rounds to exactly 1 for every record."""
    rng = np.random.default_rng(seed)
    from .conftest import balanced_keep, tables

    ids = np.array([f"r{i}" for i in range(n)])
    pop_ids = np.array([f"p{i}" for i in range(n_pop)])
    lab, plab = rng.integers(0, 2, n), rng.integers(0, 2, n_pop)
    member = rng.uniform(size=n) < 0.5
    keep = balanced_keep(k, n, rng)
    mu, mu_p = rng.uniform(40, 60, n), rng.uniform(40, 60, n_pop)

    def phi(m: np.ndarray, inside: np.ndarray) -> np.ndarray:
        return m[None, :] + 10.0 * inside + rng.normal(size=inside.shape)

    mids = tuple(f"ref{j}" for j in range(k))
    return AttackData(
        record_ids=ids,
        labels=lab,
        target=tables(phi(mu, member[None, :]), lab, ids, "target"),
        population_target=tables(phi(mu_p, np.zeros((1, n_pop), bool)), plab, pop_ids, "target"),
        reference=tables(phi(mu, keep), lab, ids, "ref"),
        reference_membership=MembershipMatrix(ids, mids, keep),
        reference_population=tables(phi(mu_p, np.zeros((k, n_pop), bool)), plab, pop_ids, "ref"),
    )


def test_log_space_ratio_does_not_saturate() -> None:
    """Regression (issue 10, item 3): with p(true class) = exp(-loss) rounded to 1 every
    record had the same ratio; the log-space ratio keeps them apart and is exact."""
    d = _saturated_world()
    assert np.all(d.target["prob_true"].values == 1.0)  # the saturation is real
    lx = d.target["loss"].values[0]
    lref = d.reference["loss"].values
    # log r_x = -l_x - log mean exp(-l_j) = -l_x + mean(l_j) + O(l^2), l < 1e-17
    expected = -lx + lref.mean(axis=0)
    res = run_attack("rmia-online", d)
    np.testing.assert_allclose(res.scores, expected, rtol=1e-9, atol=0)
    assert np.unique(res.scores).size == d.n_records
    off = run_attack("rmia-offline", d, a=0.4)
    out = ~d.reference_membership.keep
    q = np.where(out, lref, 0).sum(0) / out.sum(0)  # 1 - P_OUT to first order
    np.testing.assert_allclose(off.scores, -lx + 0.5 * 1.4 * q, rtol=1e-9, atol=0)


def test_fraction_form_ties_and_ratio_is_its_envelope() -> None:
    """The fraction at gamma is a step function of the log ratio: same order, more ties."""
    w = make_world(24, n=300, n_pop=400)
    ratio = run_attack("rmia-online", w.data).scores
    frac = run_attack("rmia-online", w.data, score="fraction").scores
    order = np.argsort(ratio, kind="stable")
    assert np.all(np.diff(frac[order]) >= 0)  # non-decreasing in the ratio
    assert np.unique(frac).size < np.unique(ratio).size


def _reversed_target(d: AttackData) -> AttackData:
    """``d`` with the target's outputs given to the records in reverse order."""
    target = {
        s: SignalTable(s, t.record_ids, t.model_ids, t.values[:, ::-1].copy())
        for s, t in d.target.items()
    }
    return dataclasses.replace(d, target=target)


def test_offline_a_is_tuned_on_reference_models_only() -> None:
    w = make_world(25, n=200, n_pop=300)
    d = w.data
    res = run_attack("rmia-offline", d)
    assert res.params["a_rule"] == "auto"
    grid = res.params["a_tuning_auc"]
    best = max(grid, key=lambda k: (grid[k], -float(k)))
    assert res.params["a"] == float(best)
    # the target's outputs play no part in the choice of a
    again = run_attack("rmia-offline", _reversed_target(d))
    assert again.params["a_tuning_auc"] == grid
    # an independent computation of the grid AUC of pseudo-target 0 alone
    from privaudit.attacks.rmia import _Inputs, tune_offline_a

    lx, lz = d.reference["loss"].values, d.reference_population["loss"].values
    keep, keep_z = d.reference_membership.keep, d.reference_population_membership.keep
    inp = _Inputs(-lx[0], -lz[0], lx, lz, keep, keep_z, None)
    _, one, n_used = tune_offline_a(inp, score="ratio", gamma=2.0, max_models=1)
    assert n_used == 1
    others = np.arange(1, lx.shape[0])
    from .conftest import pair_auc

    out = ~keep[others]
    p_out = np.array([np.exp(-lx[others][out[:, i], i]).mean() for i in range(lx.shape[1])])
    for a in (0.0, 0.5, 1.0):
        sx = -lx[0] - np.log(0.5 * ((1 + a) * p_out + (1 - a)))
        assert abs(one[f"{a:.1f}"] - pair_auc(sx, keep[0])) < 1e-12


def test_score_form_is_named_beside_its_figures() -> None:
    """Issue 28: the default score is the log likelihood ratio, not the paper's pairwise
    comparison; each result names which one it is."""
    from privaudit.attacks.rmia import SCORE_NAMES

    w = make_world(25, n=200, n_pop=300)
    for name in ("rmia-online", "rmia-offline"):
        kw = {"a": 0.3} if name == "rmia-offline" else {}
        default = run_attack(name, w.data, **kw)
        assert default.params["score"] == "ratio"
        assert default.params["score_name"] == "log likelihood ratio" == SCORE_NAMES["ratio"]
        paper = run_attack(name, w.data, score="fraction", **kw)
        assert paper.params["score_name"] == "pairwise-comparison score"


# --- online RMIA's balanced prior (issue 34) ------------------------------------------


def _with_keep(d: AttackData, keep: np.ndarray) -> AttackData:
    """``d`` with another reference layout (the signals stay as they are)."""
    k = keep.shape[0]
    mids = tuple(f"ref{j}" for j in range(k))

    def first(tables: dict[str, SignalTable]) -> dict[str, SignalTable]:
        return {s: SignalTable(s, t.record_ids, mids, t.values[:k]) for s, t in tables.items()}

    return AttackData(
        record_ids=d.record_ids,
        labels=d.labels,
        target=d.target,
        population_target=d.population_target,
        reference=first(d.reference),
        reference_membership=MembershipMatrix(d.record_ids, mids, keep),
        reference_population=first(d.reference_population),
    )


def literal_balanced_prior(p: np.ndarray, keep: np.ndarray, a: float) -> np.ndarray:
    """1/2 (P_IN + P_OUT) record by record in linear space, a missing world imputed by
    P_IN = a P_OUT + (1 - a) (or its inverse, floored at 0)."""
    out = np.empty(p.shape[1])
    for i in range(p.shape[1]):
        ins, outs = p[keep[:, i], i], p[~keep[:, i], i]
        p_in = ins.mean() if ins.size else a * outs.mean() + (1 - a)
        p_out = outs.mean() if outs.size else max(0.0, (ins.mean() - (1 - a)) / a)
        out[i] = 0.5 * (p_in + p_out)
    return out


def _unbalanced_keep(k: int, n: int, seed: int) -> np.ndarray:
    """Each model IN for a random half of the records, independently: with few models
    many records have more IN than OUT models, or only one world."""
    rng = np.random.default_rng(seed)
    keep = rng.uniform(size=(k, n)) < 0.5
    return keep


@pytest.mark.parametrize("k", [1, 2, 3])
def test_balanced_prior_matches_the_literal_computation(k: int) -> None:
    w = make_world(40, n=300, n_pop=200, k=8)
    keep = _unbalanced_keep(k, 300, seed=k)
    d = _with_keep(w.data, keep)
    res = run_attack("rmia-online", d, a=0.4)
    px = np.exp(-d.target["loss"].values[0])
    p_ref = np.exp(-d.reference["loss"].values)
    expected = np.log(px / literal_balanced_prior(p_ref, keep, 0.4))
    np.testing.assert_allclose(res.scores, expected, rtol=1e-10, atol=1e-12)
    assert res.params["reference_average"] == "balanced"
    assert res.params["a"] == 0.4 and res.params["a_rule"] == "given"
    one_world = (keep.sum(0) == 0) | (keep.sum(0) == k)
    assert res.params["n_records_one_world"] == int(one_world.sum()) > 0


def test_balanced_prior_is_the_mean_where_every_record_is_balanced(world: World) -> None:
    """privaudit's own layouts put every record IN for half of the models: there the
    balanced prior and the paper's mean are the same number (no imputation, no a)."""
    bal = run_attack("rmia-online", world.data)
    mean = run_attack("rmia-online", world.data, prior="mean")
    np.testing.assert_allclose(bal.scores, mean.scores, rtol=1e-12, atol=1e-12)
    assert bal.params["n_records_one_world"] == 0
    assert bal.params["a_rule"].startswith("not needed")
    assert mean.params["reference_average"] == "mean"


def test_moment_matched_a_recovers_the_linear_relation() -> None:
    from privaudit.attacks.rmia import moment_matched_a

    rng = np.random.default_rng(3)
    a_true = 0.35
    p_out = rng.uniform(0.05, 0.99, size=(4, 5000))
    keep = rng.uniform(size=p_out.shape) < 0.5
    p = np.where(keep, a_true * p_out + (1 - a_true), p_out)
    assert moment_matched_a(-np.log(p), keep) == pytest.approx(a_true, abs=0.01)
    # a model that fits its members exactly (P_IN = 1): a = 0
    assert moment_matched_a(-np.log(np.where(keep, 1.0, p_out)), keep) == 0.0
    with pytest.raises(DesignError, match="both IN and OUT"):
        moment_matched_a(-np.log(p_out), np.zeros_like(keep))


def test_auto_a_is_moment_matched_on_the_references_only() -> None:
    w = make_world(41, n=300, n_pop=200, k=8)
    keep = _unbalanced_keep(1, 300, seed=5)
    d = _with_keep(w.data, keep)
    res = run_attack("rmia-online", d)
    p_ref = np.exp(-d.reference["loss"].values)
    q = 1 - p_ref
    assert res.params["a_rule"] == "moment-matched"
    assert res.params["a"] == pytest.approx(q[keep].mean() / q[~keep].mean(), rel=1e-12)
    # the target plays no part: reversing its outputs leaves a as it was
    assert run_attack("rmia-online", _reversed_target(d)).params["a"] == res.params["a"]


def test_balanced_prior_does_not_saturate() -> None:
    """Losses far below machine epsilon, one reference model: the log ratio to first order
    in the losses, for records whose only model is OUT and whose only model is IN."""
    d = _saturated_world(k=8)
    keep = _unbalanced_keep(1, d.n_records, seed=2)
    d1 = _with_keep(d, keep)
    a = 0.4
    res = run_attack("rmia-online", d1, a=a)
    lx, lr = d1.target["loss"].values[0], d1.reference["loss"].values[0]
    # OUT only: -log(1/2[(1+a)(1-l) + (1-a)]) = (1+a) l / 2; IN only: (1 + 1/a) l / 2
    expected = -lx + np.where(keep[0], 0.5 * (1 + 1 / a) * lr, 0.5 * (1 + a) * lr)
    np.testing.assert_allclose(res.scores, expected, rtol=1e-9, atol=0)
    assert np.unique(res.scores).size == d1.n_records


def _one_reference_world(
    seed: int, n: int = 600, n_pop: int = 300, leak: float = 2.0
) -> tuple[AttackData, np.ndarray]:
    """make_world's toy signals (logit = record difficulty + ``leak`` x IN + noise) with one
    reference model IN for a random half of the audited records; ``leak`` for the target
    only (0: a target that learnt nothing of its members)."""
    from .conftest import tables

    rng = np.random.default_rng(seed)
    ids = np.array([f"r{i}" for i in range(n)])
    pop_ids = np.array([f"p{i}" for i in range(n_pop)])
    lab, plab = rng.integers(0, 2, n), rng.integers(0, 2, n_pop)
    mu, mu_p = rng.normal(1.0, 2.0, n), rng.normal(1.0, 2.0, n_pop)
    member = rng.uniform(size=n) < 0.5
    keep = (rng.uniform(size=n) < 0.5)[None, :]

    def phi(m: np.ndarray, inside: np.ndarray, delta: float = 2.0) -> np.ndarray:
        return m[None, :] + delta * inside + 0.6 * rng.normal(size=inside.shape)

    d = AttackData(
        record_ids=ids,
        labels=lab,
        target=tables(phi(mu, member[None, :], leak), lab, ids, "target"),
        population_target=tables(phi(mu_p, np.zeros((1, n_pop), bool)), plab, pop_ids, "target"),
        reference=tables(phi(mu, keep), lab, ids, "ref"),
        reference_membership=MembershipMatrix(ids, ("ref0",), keep),
        reference_population=tables(phi(mu_p, np.zeros((1, n_pop), bool)), plab, pop_ids, "ref"),
    )
    return d, member


def test_balanced_prior_finds_more_members_with_one_reference_and_none_under_the_null() -> None:
    """One reference model, IN for half of the records: the plain mean gives a record whose
    reference is IN a lower score for a reason unrelated to the target; the balanced prior
    does not. In each of 5 worlds it is more powerful, and on a target that learnt nothing
    of its members it finds nothing."""
    from .conftest import pair_auc

    gains = []
    for seed in range(5):
        d, member = _one_reference_world(70 + seed)
        bal = pair_auc(run_attack("rmia-online", d).scores, member)
        mean = pair_auc(run_attack("rmia-online", d, prior="mean").scores, member)
        gains.append(bal - mean)
    assert min(gains) > 0.0 and np.mean(gains) > 0.02, gains
    aucs = []
    for seed in range(5):
        d, member = _one_reference_world(80 + seed, n=2000, leak=0.0)
        aucs.append(pair_auc(run_attack("rmia-online", d).scores, member))
    # sd of one AUC under the null with ~1,000 + 1,000 records: 0.013; of the mean: 0.006
    assert abs(np.mean(aucs) - 0.5) < 0.02, aucs


def test_bad_prior_is_refused(world: World) -> None:
    with pytest.raises(InvalidInputError, match="prior"):
        run_attack("rmia-online", world.data, prior="median")
    with pytest.raises(InvalidInputError, match="a"):
        run_attack("rmia-online", world.data, a=1.5)


def test_offline_a_is_moment_matched_on_population_records_the_references_trained_on() -> None:
    """References trained on population records only (every audited record OUT): nothing to
    tune a on, but reference_population_membership says which population records each
    model trained on, and a is matched on every IN and OUT pair there is."""
    w = make_world(42, n=200, n_pop=400, k=2)
    mm = w.data.reference_membership
    d = dataclasses.replace(
        w.data,
        reference_membership=MembershipMatrix(
            mm.record_ids, mm.model_ids, np.zeros((2, 200), bool)
        ),
    )  # each population record is IN for one of the two models (the world's layout)
    keep_z = np.asarray(d.reference_population_membership.keep)
    res = run_attack("rmia-offline", d)
    q_x = -np.expm1(-d.reference["loss"].values)
    q_z = -np.expm1(-d.reference_population["loss"].values)
    q_out = np.concatenate([q_x.ravel(), q_z[~keep_z]]).mean()
    assert res.params["a_rule"] == "moment-matched"
    assert res.params["a"] == pytest.approx(min(1.0, q_z[keep_z].mean() / q_out), rel=1e-12)
    assert 0.0 < res.params["a"] < 1.0
    # without the population's membership nothing informs a: the paper's value, named
    res = run_attack("rmia-offline", dataclasses.replace(d, reference_population_membership=None))
    assert res.params["a"] == 0.3 and "paper" in res.params["a_rule"]


def test_online_population_records_with_out_models_only_get_the_imputed_prior() -> None:
    """Every audited record has both worlds, but no reference model trained on a population
    record (no reference_population_membership): Pr(z) imputes z's IN world with the
    moment-matched a, 1/2 [(1 + a) P_OUT(z) + (1 - a)], as Pr(x) averages both worlds (the
    rule is recorded as such, not as "not needed"). With the population's membership and
    both worlds for every population record, a is not needed."""
    from privaudit.attacks.rmia import log_ratios, moment_matched_a

    w = make_world(43, n=300, n_pop=200, k=8)
    d = dataclasses.replace(w.data, reference_population_membership=None)
    res = run_attack("rmia-online", d)
    loss_x = d.reference["loss"].values
    a = moment_matched_a(loss_x, np.asarray(d.reference_membership.keep))
    assert res.params["a_rule"] == "moment-matched"
    assert res.params["a"] == pytest.approx(a, rel=1e-12) and 0.0 < a < 1.0
    assert res.params["n_records_one_world"] == 0 and res.params["n_population_one_world"] == 200
    _, _, _, lr_z = log_ratios(d, offline=False, a="auto")
    pz = np.exp(-d.population_target["loss"].values[0])
    p_out = np.exp(-d.reference_population["loss"].values).mean(axis=0)
    expected = np.log(pz / (0.5 * ((1 + a) * p_out + (1 - a))))
    np.testing.assert_allclose(lr_z, expected, rtol=1e-10, atol=1e-12)
    bal = run_attack("rmia-online", w.data)  # the world's population: IN for half the models
    assert bal.params["a_rule"].startswith("not needed") and bal.params["a"] == 1.0
    assert bal.params["n_population_one_world"] == 0
