"""The PANORAMIA game: splits, runner, result record (Kazmi et al. 2024, Definition 2)."""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

import numpy as np
import pytest

from privaudit.errors import DesignError, InvalidInputError
from privaudit.panoramia.fixture import (
    FixtureModality,
    FixtureRecords,
    FixtureTarget,
    fixture_population,
    fixture_truth,
)
from privaudit.panoramia.game import (
    PanoramiaSizes,
    PanoramiaSplit,
    run_panoramia,
    selection_criterion,
    split_members,
)
from privaudit.stats.panoramia import panoramia_audit

TOP_KEYS = {
    "modality", "seed", "confidence", "sizes", "bounds", "comparisons", "curves",
    "generator", "helper", "classifiers", "split", "notes",
}  # fmt: skip
SIZE_KEYS = {
    "n_known_members", "n_generator_train", "n_audit_members", "n_synthetic",
    "n_helper_pool", "n_audit_synthetic", "n_classifier_train", "n_validation", "m",
    "n_test_members", "n_test_synthetic",
}  # fmt: skip


class SpyModality(FixtureModality):
    """The fixture modality, recording which ids each step saw."""

    def __init__(self, lam: float) -> None:
        super().__init__(lam)
        self.seen: dict[str, list[tuple[str, ...]]] = {"generator": [], "helper": []}

    def fit_generator(self, records: FixtureRecords, *, seed: int) -> Any:
        self.seen["generator"].append(records.ids)
        return super().fit_generator(records, seed=seed)

    def fit_helper(self, records: FixtureRecords, *, seed: int) -> Any:
        self.seen["helper"].append(records.ids)
        return super().fit_helper(records, seed=seed)


@pytest.fixture(scope="module")
def game() -> tuple[SpyModality, Any, FixtureRecords]:
    pop = fixture_population(2000, seed=11)
    target = FixtureTarget(frozenset(pop.ids), eps=2.0, seed=5)
    mod = SpyModality(lam=0.3)
    return mod, run_panoramia(mod, target, pop, seed=3), pop


def test_result_keys_and_json(game: Any) -> None:
    _, res, _ = game
    d = res.to_dict()
    assert set(d) == TOP_KEYS
    assert set(d["sizes"]) == SIZE_KEYS
    assert set(d["bounds"]) == {
        "c_lb", "c_plus_eps_lb", "eps_tilde", "cap", "n_thresholds", "beta_per_threshold",
        "mia", "baseline",
    }  # fmt: skip
    b = d["bounds"]
    # no classifier passes the cap (the bound of perfect scores on these slots)
    assert max(b["c_lb"], b["c_plus_eps_lb"]) <= b["cap"]
    assert set(d["bounds"]["mia"]) == {"r", "v"} == set(d["bounds"]["baseline"])
    assert d["comparisons"] == {"rmrn": None, "o1": None}
    assert set(d["curves"]) == {"mia", "baseline"}
    assert set(d["split"]) == {"ids_sha256", "checked"} and d["split"]["checked"] is True
    assert set(d["split"]["ids_sha256"]) == {
        "generator", "members", "helper_pool", "audit_synthetic", "test",
    }  # fmt: skip
    assert d["classifiers"]["rmrn"] is None
    json.dumps(d, allow_nan=False)
    s = d["sizes"]
    assert s["n_generator_train"] + s["n_audit_members"] == s["n_known_members"] == 2000
    assert s["n_helper_pool"] + s["n_audit_synthetic"] == s["n_synthetic"] == 2000
    assert s["n_test_members"] + s["n_test_synthetic"] == s["m"] == 500


def test_generator_never_sees_d_in_and_helper_never_sees_d_out(game: Any) -> None:
    mod, res, pop = game
    sp = res.split
    (gen_ids,) = mod.seen["generator"]
    (helper_ids,) = mod.seen["helper"]
    assert set(gen_ids) == set(sp.generator)
    assert not set(gen_ids) & set(sp.members)
    assert set(helper_ids) == set(sp.helper_pool)
    assert not set(helper_ids) & set(sp.audit_synthetic)
    assert not set(helper_ids) & set(pop.ids)
    # the classifiers' records and the test slots come from D_in and D_out only
    assert set(sp.train_members + sp.val_members) <= set(sp.members)
    assert set(sp.train_synthetic + sp.val_synthetic) <= set(sp.audit_synthetic)


def test_scores_table_is_continuous_with_ids(game: Any) -> None:
    _, res, _ = game
    t = res.scores
    assert t.attacks == ("panoramia-mia", "panoramia-baseline")
    assert t.record_ids.tolist() == list(res.split.test_ids)
    assert t.member.tolist() == list(res.split.test_member)
    # not hard 0/1 predictions: the MIA's scores take more than two values
    assert np.unique(t.scores["panoramia-mia"]).size > 2
    # the bounds are the ones panoramia_audit gives on the saved scores
    a = panoramia_audit(t.scores["panoramia-mia"], t.scores["panoramia-baseline"], t.member)
    assert res.c_lb == a.extra["c_lower_bound"]
    assert res.c_plus_eps_lb == a.extra["c_plus_epsilon_lower_bound"]


def test_eps_tilde_sign_and_truth(game: Any) -> None:
    _, res, _ = game
    c, c_eps = fixture_truth(0.3, 2.0)
    b = res.bounds
    assert b["eps_tilde"] == max(0.0, b["c_plus_eps_lb"] - b["c_lb"])
    assert b["c_plus_eps_lb"] > b["c_lb"]  # the target leaks: positive, never negated
    assert b["eps_tilde"] > 0.5
    assert b["c_lb"] <= c and b["c_plus_eps_lb"] <= c_eps


def test_curves_max_is_the_bound(game: Any) -> None:
    _, res, _ = game
    for role, key in (("mia", "c_plus_eps_lb"), ("baseline", "c_lb")):
        cv = res.curves[role]
        assert len(cv["recall"]) == len(cv["precision"]) == len(cv["lb"]) > 0
        assert max(cv["lb"]) == res.bounds[key]


def test_seed_reproduces_bit_for_bit() -> None:
    pop = fixture_population(800, seed=2)
    target = FixtureTarget(frozenset(pop.ids), eps=1.0, seed=1)
    a = run_panoramia(FixtureModality(0.2), target, pop, seed=7)
    b = run_panoramia(FixtureModality(0.2), target, pop, seed=7)
    c = run_panoramia(FixtureModality(0.2), target, pop, seed=8)
    assert a.to_dict() == b.to_dict()
    for k in a.scores.scores:
        assert a.scores.scores[k].tobytes() == b.scores.scores[k].tobytes()
    assert a.split.test_ids != c.split.test_ids
    # the record order of the input does not matter either
    rev = FixtureRecords(pop.ids[::-1], pop.x[::-1])
    d = run_panoramia(FixtureModality(0.2), target, rev, seed=7)
    assert d.to_dict() == a.to_dict()


def test_split_members_disjoint_and_seeded() -> None:
    ids = [f"r{i}" for i in range(100)]
    g, m = split_members(ids, PanoramiaSizes(), seed=0)
    assert len(g) == len(m) == 50 and not set(g) & set(m) and set(g) | set(m) == set(ids)
    assert split_members(ids, PanoramiaSizes(), seed=0) == (g, m)
    assert split_members(ids, PanoramiaSizes(), seed=1) != (g, m)


def _good_split() -> PanoramiaSplit:
    known = [f"r{i}" for i in range(200)]
    g, m = split_members(known, PanoramiaSizes(), seed=0)
    synth = [f"synth-{i:06d}" for i in range(200)]
    return PanoramiaSplit.build(known, g, m, synth, PanoramiaSizes(), seed=0)


@pytest.mark.parametrize(
    "change",
    [
        {"generator": ("r0", "r0")},  # duplicates
        {"known_members": ("r1", "r2")},  # D_G / D_in not subsets of the known members
        {"helper_pool": ("synth-000000",), "audit_synthetic": ("synth-000000",)},
        {"synthetic": ("r0",)},  # a "synthetic" record that is a real id
        {"non_members": ("r5",)},  # a non-member that is a known member
        {"test_member": ()},  # coins missing
    ],
)
def test_violated_check_raises(change: dict[str, Any]) -> None:
    good = _good_split()
    good.check()
    bad = dataclasses.replace(good, **change)
    with pytest.raises(DesignError):
        bad.check()


def test_check_catches_overlap_between_generator_and_test() -> None:
    good = _good_split()
    leaked = good.generator[0]
    bad = dataclasses.replace(good, test_ids=(leaked, *good.test_ids[1:]))
    with pytest.raises(DesignError):
        bad.check()
    # a flipped coin (a member labelled as generated) is caught too
    coins = (not good.test_member[0], *good.test_member[1:])
    with pytest.raises(DesignError):
        dataclasses.replace(good, test_member=coins).check()


def test_bad_generator_ids_and_sizes_raise() -> None:
    pop = fixture_population(400, seed=0)
    target = FixtureTarget(frozenset(pop.ids), eps=1.0, seed=0)

    class Cheat(FixtureModality):
        def sample(self, generator: Any, n: int, *, seed: int) -> FixtureRecords:
            out = super().sample(generator, n, seed=seed)
            return FixtureRecords((pop.ids[0], *out.ids[1:]), out.x)  # a real record

    with pytest.raises(DesignError, match="never be a real"):
        run_panoramia(Cheat(0.3), target, pop, seed=0)
    with pytest.raises(InvalidInputError):
        PanoramiaSizes(test_fraction=1.0)
    with pytest.raises(DesignError):
        run_panoramia(FixtureModality(0.3), target, fixture_population(3, seed=0), seed=0)
    nm = FixtureRecords(pop.ids[:5], pop.x[:5])
    with pytest.raises(DesignError):
        run_panoramia(FixtureModality(0.3), target, pop, non_members=nm, seed=0)


def test_selection_criterion_is_the_bound_then_auc() -> None:
    rng = np.random.default_rng(0)
    lab = rng.random(400) < 0.5
    crit = selection_criterion(0.05)
    useless = np.zeros(400)
    good = lab + rng.normal(0, 0.5, 400)
    assert crit(good, lab) > crit(useless, lab)
    # two scorers with the same bound (0: nothing certifiable) are ordered by AUC
    weak = lab * 0.01 + rng.normal(0, 1, 400)
    weaker = rng.normal(0, 1, 400)
    assert math.floor(crit(weak, lab) * 1e6) == math.floor(crit(weaker, lab) * 1e6) == 0
    assert (crit(weak, lab) > crit(weaker, lab)) == (
        np.mean(weak[lab][:, None] > weak[~lab]) > np.mean(weaker[lab][:, None] > weaker[~lab])
    )


def test_rmrn_and_o1_on_the_same_target() -> None:
    pop = fixture_population(3000, seed=4)
    non = fixture_population(1500, seed=5, prefix="non")
    target = FixtureTarget(frozenset(pop.ids), eps=1.5, seed=2)
    res = run_panoramia(FixtureModality(0.3), target, pop, non_members=non, seed=1)
    d = res.to_dict()
    rmrn, o1 = d["comparisons"]["rmrn"], d["comparisons"]["o1"]
    assert set(rmrn) == {"eps_lb", "m", "n_test_members", "r", "v", "n_thresholds",
                         "beta_per_threshold"}  # fmt: skip
    assert set(o1) == {"eps_lb", "m", "k_pos", "k_neg", "r", "v", "selection"}
    assert "union-bound" in o1["selection"]
    # one test at beta (c = 0) over the same L quantile thresholds as PANORAMIA
    assert rmrn["n_thresholds"] == d["bounds"]["n_thresholds"]
    assert rmrn["beta_per_threshold"] == pytest.approx(2 * d["bounds"]["beta_per_threshold"])
    # real non-members, randomised response: both bounds see the leak, below the truth
    assert 0 < rmrn["eps_lb"] <= 1.5 and 0 < o1["eps_lb"] <= 1.5
    assert set(d["curves"]) == {"mia", "baseline", "rmrn"}
    assert max(d["curves"]["rmrn"]["lb"]) == rmrn["eps_lb"]
    assert d["classifiers"]["rmrn"]["weight"] > 0
    t = res.rmrn_scores
    assert t is not None and t.attacks == ("rmrn-mia",) and t.record_ids.size == rmrn["m"]
    rs = res.rmrn_split
    assert rs is not None
    assert set(t.record_ids[t.member]) <= set(res.split.members)
    assert set(t.record_ids[~t.member]) <= set(non.ids)

    # RM;RN's test pairs hold the same D_in members as PANORAMIA's (same m here)
    def pair_members(ids: Any, unshown: Any, coins: Any) -> set[str]:
        return {a if c else b for a, b, c in zip(ids, unshown, coins, strict=True)}

    assert rmrn["m"] == d["sizes"]["m"] == 750
    assert pair_members(rs.test_ids, rs.unshown_ids, rs.test_member) == pair_members(
        res.split.test_ids, res.split.unshown_ids, res.split.test_member
    )
    bad = dataclasses.replace(rs, test_ids=(rs.train_members[0], *rs.test_ids[1:]))
    with pytest.raises(DesignError):
        bad.check()
    # the non-members never reach the generator, the helper or PANORAMIA's classifiers
    sp = res.split
    used = set(sp.generator + sp.helper_pool + sp.train_members + sp.train_synthetic)
    assert not used & set(non.ids)


class CountingModality(FixtureModality):
    """Counts the expensive steps; can fail once in the baseline scorer (a killed run)."""

    def __init__(self, lam: float, fail_baseline: bool = False) -> None:
        super().__init__(lam)
        self.calls = {"generator": 0, "helper": 0, "scorer": 0}
        self.fail_baseline = fail_baseline

    def fit_generator(self, records: FixtureRecords, *, seed: int) -> Any:
        self.calls["generator"] += 1
        return super().fit_generator(records, seed=seed)

    def fit_helper(self, records: FixtureRecords, *, seed: int) -> Any:
        self.calls["helper"] += 1
        return super().fit_helper(records, seed=seed)

    def fit_scorer(self, train: Any, val: Any, *, seed: int, criterion: Any) -> Any:
        self.calls["scorer"] += 1
        if self.fail_baseline and self.calls["scorer"] == 2:
            raise KeyboardInterrupt  # killed while fitting the baseline
        return super().fit_scorer(train, val, seed=seed, criterion=criterion)


def test_store_caches_by_content_and_resumes(tmp_path: Any) -> None:
    from privaudit.runtime.store import ArtifactStore

    pop = fixture_population(1200, seed=9)
    non = fixture_population(600, seed=10, prefix="non")
    target = FixtureTarget(frozenset(pop.ids), eps=1.0, seed=4)
    fresh = run_panoramia(FixtureModality(0.3), target, pop, non_members=non, seed=2)
    store = ArtifactStore(tmp_path / "store")
    killed = CountingModality(0.3, fail_baseline=True)
    with pytest.raises(KeyboardInterrupt):
        run_panoramia(killed, target, pop, non_members=non, seed=2, store=store)
    assert killed.calls == {"generator": 1, "helper": 1, "scorer": 2}
    resumed = CountingModality(0.3)
    res = run_panoramia(resumed, target, pop, non_members=non, seed=2, store=store)
    # samples, helper and the MIA came from the store; baseline and RM;RN were fitted
    assert resumed.calls == {"generator": 0, "helper": 0, "scorer": 2}
    assert res.to_dict() == fresh.to_dict()
    again = CountingModality(0.3)
    res2 = run_panoramia(again, target, pop, non_members=non, seed=2, store=store)
    assert again.calls == {"generator": 0, "helper": 0, "scorer": 0}
    assert res2.to_dict() == fresh.to_dict()
    for k in fresh.scores.scores:
        assert res2.scores.scores[k].tobytes() == fresh.scores.scores[k].tobytes()
    # a different target (other content of its loss features) refits the MIA scorers only
    other = FixtureTarget(frozenset(pop.ids), eps=1.0, seed=5)
    changed = CountingModality(0.3)
    run_panoramia(changed, other, pop, non_members=non, seed=2, store=store)
    assert changed.calls == {"generator": 0, "helper": 0, "scorer": 2}


def test_store_needs_record_arrays(tmp_path: Any) -> None:
    from privaudit.runtime.store import ArtifactStore

    class NoArrays(FixtureModality):
        records_to_arrays = None  # type: ignore[assignment]

    pop = fixture_population(400, seed=0)
    target = FixtureTarget(frozenset(pop.ids), eps=1.0, seed=0)
    with pytest.raises(InvalidInputError, match="records_to_arrays"):
        run_panoramia(NoArrays(0.3), target, pop, seed=0, store=ArtifactStore(tmp_path))


class TwinNoisyModality(FixtureModality):
    """The helper IS the target (same loss features everywhere) and every scorer adds
    seeded noise per record: with common random numbers the MIA and the baseline are
    the same classifier, so eps_tilde is exactly 0; with a seed per role it would not be."""

    def __init__(self, lam: float, target: FixtureTarget) -> None:
        super().__init__(lam)
        self.target = target
        self.scorer_seeds: list[int] = []

    def fit_helper(self, records: FixtureRecords, *, seed: int) -> Any:
        return self.target

    def fit_scorer(self, train: Any, val: Any, *, seed: int, criterion: Any) -> Any:
        self.scorer_seeds.append(seed)
        base = super().fit_scorer(train, val, seed=seed, criterion=criterion)

        class Noisy:
            info = base.info

            def score(self, records: FixtureRecords, loss: Any) -> Any:
                noise = np.random.default_rng(seed).standard_normal(len(records.ids))
                return base.score(records, loss) + noise

        return Noisy()


def test_mia_and_baseline_share_the_scorer_seed() -> None:
    pop = fixture_population(2000, seed=6)
    non = fixture_population(1000, seed=7, prefix="non")
    target = FixtureTarget(frozenset(pop.ids), eps=2.0, seed=3)
    mod = TwinNoisyModality(0.3, target)
    res = run_panoramia(mod, target, pop, non_members=non, seed=4)
    # MIA, baseline and RM;RN: one seed (same initial weights and batch order)
    assert len(mod.scorer_seeds) == 3 and len(set(mod.scorer_seeds)) == 1
    mia, base = res.scores.scores["panoramia-mia"], res.scores.scores["panoramia-baseline"]
    assert mia.tobytes() == base.tobytes()
    assert res.c_lb == res.c_plus_eps_lb > 0
    assert res.eps_tilde == 0.0


class ReferenceModality(FixtureModality):
    """The fixture with a reference model (the protocol's optional ``reference_model``): a
    helper-like model keyed on the generator's training ids; records what each scorer saw."""

    def __init__(self, lam: float, *, on: bool = True) -> None:
        super().__init__(lam)
        self.on = on
        self.reference_of: list[tuple[str, ...]] = []
        self.scorer_losses: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def reference_model(self, generator: Any) -> Any:
        from privaudit.panoramia.fixture import FixtureHelper

        self.reference_of.append(tuple(generator.fitted_on))
        return FixtureHelper(99, len(generator.fitted_on)) if self.on else None

    def fit_scorer(self, train: Any, val: Any, *, seed: int, criterion: Any) -> Any:
        self.scorer_losses.append((train.loss, val.loss, train.records.ids))
        return super().fit_scorer(train, val, seed=seed, criterion=criterion)

    def settings(self) -> dict[str, Any]:
        return {**super().settings(), "reference": {"model": "fixture"} if self.on else None}


def test_reference_features_reach_every_classifier_after_their_own() -> None:
    from privaudit.panoramia.fixture import FixtureHelper

    pop = fixture_population(1200, seed=12)
    non = fixture_population(600, seed=13, prefix="non")
    target = FixtureTarget(frozenset(pop.ids), eps=1.0, seed=6)
    mod = ReferenceModality(0.3)
    res = run_panoramia(mod, target, pop, non_members=non, seed=5)
    # G's training ids only (D_G): the reference saw no audit record
    assert mod.reference_of and all(set(i) == set(res.split.generator) for i in mod.reference_of)
    ref = FixtureHelper(99, len(res.split.generator))
    assert len(mod.scorer_losses) == 3  # MIA, baseline, RM;RN
    for train_loss, val_loss, ids in mod.scorer_losses:
        assert train_loss.shape[1] == val_loss.shape[1] == 2
        # the model's own column first, the reference's appended
        np.testing.assert_array_equal(train_loss[:, 1], ref.losses(ids))
    mia, base, _ = (t[0] for t in mod.scorer_losses)
    np.testing.assert_array_equal(mia[:, 0], target.losses(mod.scorer_losses[0][2]))
    assert not np.array_equal(mia[:, 0], base[:, 0])
    assert set(mod.scorer_losses[2][2]) & set(non.ids)  # RM;RN's real non-members
    # O(1) reads the target's own loss only: the same as without a reference
    off = run_panoramia(ReferenceModality(0.3, on=False), target, pop, non_members=non, seed=5)
    plain = run_panoramia(FixtureModality(0.3), target, pop, non_members=non, seed=5)
    assert res.to_dict()["comparisons"]["o1"] == plain.to_dict()["comparisons"]["o1"]
    # a modality whose reference_model returns None is the plain game, bit for bit
    for k in plain.scores.scores:
        assert off.scores.scores[k].tobytes() == plain.scores.scores[k].tobytes()
    assert off.to_dict()["bounds"] == plain.to_dict()["bounds"]


class CountingHelperModality(ReferenceModality):
    """The reference fixture that keeps the helpers it fits."""

    def __init__(self, lam: float) -> None:
        super().__init__(lam)
        self.helpers: list[Any] = []

    def fit_helper(self, records: Any, *, seed: int) -> Any:
        self.helpers.append(super().fit_helper(records, seed=seed))
        return self.helpers[-1]


def test_mia_reading_the_helper_gets_the_targets_then_the_helpers_then_the_reference() -> None:
    from privaudit.panoramia.fixture import FixtureHelper

    pop = fixture_population(1200, seed=12)
    non = fixture_population(600, seed=13, prefix="non")
    target = FixtureTarget(frozenset(pop.ids), eps=1.0, seed=6)
    mod = CountingHelperModality(0.3)
    res = run_panoramia(mod, target, pop, non_members=non, seed=5, mia_reads_helper=True)
    (mia, _, mia_ids), (base, _, base_ids), (rmrn, _, rmrn_ids) = mod.scorer_losses
    assert mia_ids == base_ids and mia.shape[1] == rmrn.shape[1] == 3 and base.shape[1] == 2
    np.testing.assert_array_equal(mia[:, 0], target.losses(mia_ids))
    np.testing.assert_array_equal(mia[:, 1:], base)  # the baseline's inputs, in its order
    # RM;RN, the same MIA pipeline: the target's, then the SAME helper's on its records, then
    # the reference's; one helper fit serves both record sets
    assert len(mod.helpers) == 1
    ref = FixtureHelper(99, len(res.split.generator))
    np.testing.assert_array_equal(rmrn[:, 0], target.losses(rmrn_ids))
    np.testing.assert_array_equal(rmrn[:, 1], mod.helpers[0].losses(rmrn_ids))
    np.testing.assert_array_equal(rmrn[:, 2], ref.losses(rmrn_ids))
    d = res.to_dict()
    assert d["classifiers"]["mia"]["reads_helper"] is True
    assert d["classifiers"]["rmrn"]["reads_helper"] is True
    assert "reads_helper" not in d["classifiers"]["baseline"]
    # off (the default): the paper's MIA and RM;RN, and nothing recorded
    off = CountingHelperModality(0.3)
    plain = run_panoramia(off, target, pop, non_members=non, seed=5)
    assert len(off.helpers) == 1 and off.scorer_losses[2][0].shape[1] == 2
    assert "reads_helper" not in plain.to_dict()["classifiers"]["mia"]
    assert "reads_helper" not in plain.to_dict()["classifiers"]["rmrn"]
    assert (
        res.scores.scores["panoramia-baseline"].tobytes()
        == plain.scores.scores["panoramia-baseline"].tobytes()
    )
    # without real non-members there is no RM;RN, and the helper is not kept for it
    alone = CountingHelperModality(0.3)
    run_panoramia(alone, target, pop, seed=5, mia_reads_helper=True)
    assert len(alone.helpers) == 1 and len(alone.scorer_losses) == 2
