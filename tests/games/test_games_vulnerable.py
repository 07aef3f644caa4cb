"""Ye et al. (2022) Sec. 5.3-5.4: agreement at a common FPR and the vulnerable-record analysis."""

from __future__ import annotations

import numpy as np
import pytest

from privaudit.errors import InvalidInputError
from privaudit.membership.vulnerable import (
    ScoredTarget,
    agreement_at_fpr,
    decisions_at_fpr,
    vulnerable_records,
)


def test_decisions_at_fpr_is_the_best_roc_point_brute_force() -> None:
    rng = np.random.default_rng(0)
    for _ in range(20):
        n = 60
        m = rng.uniform(size=n) < 0.5
        m[:2] = [True, False]
        s = np.round(rng.normal(size=n) + m, 1)  # ties on purpose
        for f in (0.05, 0.3):
            d, t = decisions_at_fpr(s, m, f)
            assert d[~m].mean() <= f + 1e-12
            best = max(
                (s[m] >= c).mean()
                for c in [*np.unique(s), np.inf]
                if (s[~m] >= c).mean() <= f + 1e-12
            )
            assert d[m].mean() == pytest.approx(best)
            np.testing.assert_array_equal(d, s >= t)


def _target(rng: np.random.Generator, n: int = 200) -> tuple[ScoredTarget, np.ndarray, np.ndarray]:
    ids = np.array([f"r{i}" for i in range(n)])
    member = np.zeros(n, bool)
    member[: n // 2] = True
    base = rng.normal(size=n)
    scores = {
        "a": (ids, base + 2.0 * member),
        "b": (ids, base + 2.0 * member + 0.3 * rng.normal(size=n)),
        # an attack scoring a sample only (as Attack L)
        "leave-one-out": (ids[::4], (rng.normal(size=n) + member)[::4]),
    }
    return ScoredTarget(scores, dict(zip(ids.tolist(), member.tolist(), strict=True))), ids, member


def test_agreement_at_fpr_pairwise_oracle_with_subset_attack() -> None:
    t, _, member = _target(np.random.default_rng(1))
    out = agreement_at_fpr(t, fprs=(0.1,))
    (b,) = out
    assert b["names"] == ["a", "b", "leave-one-out", "GT"]
    da, _ = decisions_at_fpr(t.scores["a"][1], member, 0.1)
    dl, _ = decisions_at_fpr(t.scores["leave-one-out"][1], member[::4], 0.1)
    # a vs L on the records both scored (every 4th), separately for members / non-members
    common_m = member[::4]
    assert b["n_train"][0][2] == int(common_m.sum()) and b["n_test"][0][2] == int((~common_m).sum())
    agree = da[::4] == dl
    assert b["train"][0][2] == pytest.approx(agree[common_m].mean())
    assert b["test"][2][0] == pytest.approx(agree[~common_m].mean())
    # agreement with GT is the TPR on members and 1 - FPR on non-members
    assert b["train"][0][3] == pytest.approx(da[member].mean())
    assert b["test"][0][3] == pytest.approx(1 - da[~member].mean())
    assert b["train"][1][1] == 1.0  # an attack agrees with itself


def _sec54_world(n_targets: int, flip: float = 0.0, seed: int = 0):  # type: ignore[no-untyped-def]
    """Members 0-19 found by R only, 20-39 by S and P only, 40-59 by all, 60-99 by none.

    Scores are built so that at FPR 0.3 exactly those records pass each attack's
    threshold; Attack L scores every record, highest for the R-only ones.
    """
    rng = np.random.default_rng(seed)
    n = 200
    ids = np.arange(n)
    member = ids < 100
    r_only, sp_only, all_ = ids < 20, (ids >= 20) & (ids < 40), (ids >= 40) & (ids < 60)
    targets = []
    for _ in range(n_targets):
        noise = rng.uniform(0, 0.1, size=n)
        non = ~member
        hi_non = non & (ids < 130)  # 30% of non-members above every threshold
        flipped = rng.uniform(size=n) < flip

        def att(
            found: np.ndarray,
            noise: np.ndarray = noise,
            flipped: np.ndarray = flipped,
            hi_non: np.ndarray = hi_non,
        ) -> np.ndarray:
            f = found ^ (flipped & member)
            # missed members lie below every non-member: no threshold at FPR <= 0.3 flags them
            return np.where(f | hi_non, 10.0, np.where(member, -1.0, 0.0)) + noise

        loo = np.where(r_only, 5.0, np.where(member, 1.0, 0.0)) + rng.normal(0, 0.5, size=n)
        targets.append(
            ScoredTarget(
                scores={
                    "population": (ids, att(sp_only | all_)),
                    "shadow": (ids, att(sp_only | all_)),
                    "reference": (ids, att(r_only | all_)),
                    "distillation": (ids, att(r_only | all_)),
                    "leave-one-out": (ids, loo),
                },
                member=dict(zip(ids.tolist(), member.tolist(), strict=True)),
                loss={int(i): float(2.0 if i < 20 else 0.5) for i in ids},
            )
        )
    return targets, ids


def test_record_types_vulnerability_ranking_and_neighbours() -> None:
    targets, ids = _sec54_world(1)
    X = np.stack([ids.astype(float), np.zeros(ids.size)], axis=1)
    X[5, 0] = 5.4  # record 5's nearest member is 6 (distance 0.6 before standardising)
    out = vulnerable_records(targets, fprs=(0.3,), features=(ids, X), top=5)
    sets = {s["name"]: s for s in out["sets"]}
    assert sets["R-correct"]["record_ids"] == list(range(20))
    assert sets["SP-correct"]["record_ids"] == list(range(20, 40))
    assert sets["all-correct"]["record_ids"] == list(range(40, 60))
    assert sets["random"]["n_records"] == 100
    # L-based vulnerability: the R-correct members are the most vulnerable
    auc_r = sets["R-correct"]["leave_one_out"]["auc"]
    assert auc_r > sets["SP-correct"]["leave_one_out"]["auc"] and auc_r > 0.99
    assert sets["R-correct"]["loss"]["mean"] == 2.0 and sets["SP-correct"]["loss"]["mean"] == 0.5
    assert sum(sets["R-correct"]["loss"]["histogram"]["counts"]) == 20
    rank = out["ranking"]
    assert rank["ranked_by"] == "leave-one-out"
    assert all(r["record_id"] < 20 for r in rank["records"])
    rec5 = vulnerable_records(targets, fprs=(0.3,), features=(ids, X), top=100)["ranking"][
        "records"
    ]
    r5 = next(r for r in rec5 if r["record_id"] == 5)
    assert r5["nn_record_id"] == 6
    sd = X[:, 0].std()
    assert r5["nn_distance"] == pytest.approx(0.6 / sd)


def test_majority_rule_over_several_targets() -> None:
    # each member's decisions are flipped on ~10% of 10 targets: the 80% rule keeps the sets
    targets, _ = _sec54_world(10, flip=0.1, seed=3)
    out = vulnerable_records(targets, fprs=(0.3,))
    sets = {s["name"]: s for s in out["sets"]}
    assert out["n_targets"] == 10
    r_correct = set(sets["R-correct"]["record_ids"])
    assert r_correct <= set(range(20)) and len(r_correct) >= 14
    assert set(sets["SP-correct"]["record_ids"]) <= set(range(20, 40))


def test_majority_one_asks_for_every_target_as_the_config_allows() -> None:
    # the audit config accepts majority in (0.5, 1]; 1 means flagged on every target
    targets, _ = _sec54_world(10, flip=0.1, seed=3)
    every = vulnerable_records(targets, fprs=(0.3,), majority=1.0)
    most = vulnerable_records(targets, fprs=(0.3,))
    sets = {s["name"]: set(s["record_ids"]) for s in every["sets"]}
    default = {s["name"]: set(s["record_ids"]) for s in most["sets"]}
    assert every["majority"] == 1.0
    assert sets["R-correct"] < default["R-correct"]  # a flip on any target drops a record
    for bad in (0.0, 1.5, float("nan")):
        with pytest.raises(InvalidInputError, match="majority"):
            vulnerable_records(targets, fprs=(0.3,), majority=bad)


def test_without_l_or_groups_says_so() -> None:
    targets, _ = _sec54_world(1)
    only = [ScoredTarget({"lira-online": t.scores["reference"]}, t.member, t.loss) for t in targets]
    out = vulnerable_records(only, fprs=(0.3,))
    assert [s["name"] for s in out["sets"]] == ["random"]
    assert out["ranking"]["ranked_by"] == "lira-online"
    assert any("Attack L" in n for n in out["notes"])


def test_nearest_training_record_matches_a_brute_force_search() -> None:
    """``_nn_distances`` against distances computed pair by pair, across its blocks of 512
    rows, with a training id listed twice and records outside the training set."""
    from privaudit.membership.vulnerable import _nn_distances

    rng = np.random.default_rng(7)
    X = rng.normal(size=(700, 5)) * np.array([1.0, 3.0, 0.5, 2.0, 1.0])
    ids = np.array([f"r{i}" for i in range(700)])
    train_ids = np.concatenate([ids[rng.permutation(700)[:400]], ids[[3]], ["absent"]])
    dist, nn = _nn_distances(X, ids, train_ids)
    Z = (X - X.mean(axis=0)) / X.std(axis=0)
    train = sorted({int(r[1:]) for r in train_ids if r != "absent"})
    assert set(dist) == set(ids.tolist()) == set(nn)
    for i in range(700):
        others = [j for j in train if j != i]
        d = np.sqrt(((Z[others] - Z[i]) ** 2).sum(axis=1))
        assert dist[ids[i]] == pytest.approx(float(d.min()), rel=1e-9, abs=1e-12)
        assert nn[ids[i]] == ids[others[int(np.argmin(d))]]

    # only the records asked for (ids outside the features ignored), with the same answers
    query = [*ids[rng.permutation(700)[:600]].tolist(), "absent"]
    q_dist, q_nn = _nn_distances(X, ids, train_ids, query)
    assert set(q_dist) == set(query) - {"absent"} == set(q_nn)
    assert all(q_dist[r] == pytest.approx(dist[r], rel=1e-12) and q_nn[r] == nn[r] for r in q_dist)


def test_nearest_among_the_training_records_themselves_matches_brute_force() -> None:
    """The training records' own nearest others (the audit's case: the members asked
    about are the training set), computed with each pair once across blocks of 512, with
    exact ties (duplicated rows, binary features) going to the first training record as
    the general search gives them."""
    from privaudit.membership.vulnerable import _nn_distances

    rng = np.random.default_rng(11)
    X = np.concatenate([rng.normal(size=(1300, 3)), rng.random((1300, 4)) > 0.6], axis=1)
    X[700:760] = X[100:160]  # duplicated rows: distance 0 to an earlier record
    ids = np.array([f"r{i}" for i in range(1300)])
    train_ids = ids[np.sort(rng.permutation(1300)[:1100])]
    dist, nn = _nn_distances(X, ids, train_ids, train_ids.tolist())
    outside = next(r for r in ids.tolist() if r not in set(train_ids.tolist()))
    # one record outside the training set asked too: the general search, row by row
    general_dist, _ = _nn_distances(X, ids, train_ids, [*train_ids.tolist(), outside])
    del general_dist[outside]
    sd = X.std(axis=0)
    Z = (X - X.mean(axis=0)) / sd
    train = [int(r[1:]) for r in train_ids]
    assert set(dist) == set(train_ids.tolist())
    for i in train:
        others = [j for j in train if j != i]
        d = np.sqrt(((Z[others] - Z[i]) ** 2).sum(axis=1))
        r = f"r{i}"
        assert dist[r] == pytest.approx(float(d.min()), rel=1e-9, abs=1e-7)
        assert nn[r] == f"r{others[int(np.argmin(d))]}" or d[others.index(int(nn[r][1:]))] == (
            pytest.approx(float(d.min()), rel=1e-9, abs=1e-7)
        )
    # the same answers up to the products' rounding (a pair's dot product may round
    # differently in another position of another product)
    assert set(general_dist) == set(dist)
    assert all(dist[r] == pytest.approx(general_dist[r], rel=1e-12, abs=1e-12) for r in dist)


def _gaussian_l_targets(
    n_targets: int, delta: float, seed: int, n: int = 2000
) -> list[ScoredTarget]:
    """Attack L alone on ``n_targets`` targets, each with a random half of the records as
    members: a member's score is N(delta, 1), a non-member's N(0, 1), independently per
    target. On one target L's TPR at FPR f is Phi(delta - z_f), its AUC Phi(delta / sqrt 2)."""
    rng = np.random.default_rng(seed)
    ids = np.arange(n)
    targets = []
    for _ in range(n_targets):
        member = np.zeros(n, bool)
        member[rng.permutation(n)[: n // 2]] = True
        s = rng.normal(size=n) + delta * member
        member_of = dict(zip(ids.tolist(), member.tolist(), strict=True))
        targets.append(ScoredTarget({"leave-one-out": (ids, s)}, member_of))
    return targets


@pytest.mark.parametrize(
    ("n_targets", "delta", "fpr"),
    [(4, 0.0, 0.05), (4, 2.5, 0.05), (8, 1.0, 0.05), (8, 1.0, 0.3)],
)
def test_l_vulnerability_over_several_targets_is_at_the_stated_fpr(
    n_targets: int, delta: float, fpr: float
) -> None:
    """Over several targets a member's L score is not averaged before it is compared with
    the single non-member scores: L's TPR at FPR f is the per-target one, Phi(delta - z_f),
    and its AUC Phi(delta / sqrt 2) (with the members' mean scores: 0.021 at delta 0 and
    0.88 at delta 2.5 for a true 0.05 and 0.80; AUC 0.82 for a true 0.76)."""
    from scipy.stats import norm

    out = vulnerable_records(_gaussian_l_targets(n_targets, delta, seed=5), fprs=(fpr,))
    (random_set,) = [s for s in out["sets"] if s["name"] == "random"]
    l_view = random_set["leave_one_out"]
    # ~n_targets * 1000 member scores and as many non-member scores: SE < 0.01
    assert l_view["tpr"] == pytest.approx(norm.cdf(delta - norm.isf(fpr)), abs=0.02)
    assert l_view["auc"] == pytest.approx(norm.cdf(delta / np.sqrt(2)), abs=0.015)
    assert l_view["n_l_scores"] > l_view["n_scored_by_l"] == random_set["n_records"]


def test_l_vulnerability_weighs_each_member_once_and_is_plain_on_one_target() -> None:
    """Each member weighs 1, split over its targets: its share of pairs won against the
    non-members; on one target the plain AUC (metrics.roc.auc) and TPR."""
    from privaudit.metrics.roc import auc

    targets, _ = _sec54_world(1)
    out = vulnerable_records(targets, fprs=(0.3,))
    ids, loo = targets[0].scores["leave-one-out"]
    member = np.asarray([targets[0].member[r] for r in ids.tolist()])
    (rnd,) = [s for s in out["sets"] if s["name"] == "random"]
    assert rnd["leave_one_out"]["auc"] == pytest.approx(auc(loo, member), rel=1e-12)
    thr = np.quantile(loo[~member], 0.7, method="higher")
    assert rnd["leave_one_out"]["tpr"] == pytest.approx(np.mean(loo[member] > thr))
    # two targets, record 0 a member of both (scores 3 and -3), record 1 of the first
    t1 = ScoredTarget(
        {"leave-one-out": (np.arange(4), np.array([3.0, 1.0, 0.0, 2.0]))},
        {0: True, 1: True, 2: False, 3: False},
    )
    t2 = ScoredTarget(
        {"leave-one-out": (np.arange(4), np.array([-3.0, 5.0, 0.0, 2.0]))},
        {0: True, 1: False, 2: False, 3: False},
    )
    view = next(
        s["leave_one_out"]
        for s in vulnerable_records([t1, t2], fprs=(0.3,))["sets"]
        if s["name"] == "random"
    )
    # non-member scores 0, 2 (first target) and 5, 0, 2 (second): record 0 beats 4 of 5 at 3
    # and none at -3 (weight 1/2 each), record 1 beats 2 of 5 (weight 1)
    assert view["auc"] == pytest.approx((0.5 * 0.8 + 0.5 * 0.0 + 1.0 * 0.4) / 2)
    assert view["mean_score"] == pytest.approx((0.0 + 1.0) / 2)
    assert view["n_scored_by_l"] == 2 and view["n_l_scores"] == 3
