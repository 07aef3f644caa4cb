"""InfoRMIA against a literal pairwise oracle: the mean over population records z of
log2 LR(x, z), RMIA's pairwise likelihood ratio (Tao and Shokri 2026), self pairs left out."""

from __future__ import annotations

import numpy as np
import pytest

from privaudit.attacks import AttackData, run_attack
from privaudit.errors import DesignError
from privaudit.records import MembershipMatrix, SignalTable

from .conftest import World, make_world, pair_auc
from .test_rmia import literal_ratios, overlapping_population


def _oracle(d: AttackData, *, offline: bool, a: float) -> np.ndarray:
    ratio_x, ratio_z = literal_ratios(d, offline=offline, a=a)
    lr = np.log2(ratio_x[:, None] / ratio_z[None, :])  # N x Z, pair by pair
    same = d.record_ids[:, None] == d.population_target["loss"].record_ids[None, :]
    out: np.ndarray = np.where(same, 0.0, lr).sum(axis=1) / (ratio_z.size - same.sum(axis=1))
    return out


@pytest.mark.parametrize("offline", [False, True])
def test_matches_the_pairwise_oracle(offline: bool) -> None:
    w = make_world(20, n=150, n_pop=200)
    kw = {"a": 0.3} if offline else {}
    res = run_attack("informia-offline" if offline else "informia-online", w.data, **kw)
    np.testing.assert_allclose(res.scores, _oracle(w.data, offline=offline, a=0.3), rtol=1e-9)
    assert res.params["score_name"] == "information gain in bits"


def test_self_pairs_left_out_of_the_population_term() -> None:
    d = overlapping_population()
    for name, off in (("informia-online", False), ("informia-offline", True)):
        kw = {"a": 0.3} if off else {}
        res = run_attack(name, d, **kw)
        assert res.params["n_self_pairs_removed"] == 20
        np.testing.assert_allclose(res.scores, _oracle(d, offline=off, a=0.3), rtol=1e-9)


def test_ranks_as_rmia_log_likelihood_ratio(world: World) -> None:
    """One target: the population term is one constant, so the ROC is RMIA's ``ratio`` form's
    (and the scores differ from it by that constant, in bits)."""
    for mode in ("online", "offline"):
        info = run_attack(f"informia-{mode}", world.data)
        rmia = run_attack(f"rmia-{mode}", world.data, score="ratio")
        diff = info.scores - rmia.scores / np.log(2.0)
        np.testing.assert_allclose(diff, diff[0], rtol=0, atol=1e-9)
        assert diff[0] == pytest.approx(info.params["population_kl_bits"], abs=1e-9)
        if mode == "offline":
            assert info.params["a"] == rmia.params["a"]  # tuned on the reference models alike
        member = world.member
        assert pair_auc(info.scores, member) == pytest.approx(pair_auc(rmia.scores, member))


def test_bits_scale_zero_for_a_typical_population_record(world: World) -> None:
    """Scored on the population records themselves, InfoRMIA averages to 0 bits."""
    d = world.data
    same_as_pop = AttackData(
        record_ids=d.population_target["loss"].record_ids,
        labels=np.zeros(d.population_target["loss"].record_ids.size, dtype=int),  # unused
        target=d.population_target,
        population_target=d.population_target,
        reference=d.reference_population,
        reference_membership=d.reference_population_membership,
        reference_population=d.reference_population,
        reference_population_membership=d.reference_population_membership,
    )
    res = run_attack("informia-online", same_as_pop)
    assert abs(float(np.mean(res.scores))) < 0.05 * float(np.std(res.scores))


def test_empty_population_is_refused() -> None:
    from privaudit.attacks.informia import informia_scores

    with pytest.raises(DesignError, match="population"):
        informia_scores(np.zeros(3), np.zeros(0))
    with pytest.raises(DesignError, match="other than x itself"):
        informia_scores(np.zeros(1), np.zeros(1), self_index=np.array([0]))


def _leaky_references_untouched_target(seed: int, n: int = 2000, k: int = 8) -> AttackData:
    """Reference models that fit their members better (logit confidence up by up to 6), each
    record IN for half of them; a target that trained on none of the audited records; a
    population that no reference model trained on (no reference_population_membership, as
    the experiment engine passes it). Signals: the loss of a 2-class logit."""
    rng = np.random.default_rng(seed)
    mu, sd = rng.normal(2.0, 2.0, 2 * n), rng.uniform(0.5, 2.0, 2 * n)
    shift = 3.0 * rng.uniform(0.0, 2.0, n)
    keep = np.argsort(rng.random((k, n)), axis=0) < k // 2

    def loss(phi: np.ndarray) -> np.ndarray:
        return np.asarray(np.logaddexp(0.0, -phi))

    ids, pop_ids = np.arange(n), np.arange(n, 2 * n)
    mids = tuple(f"ref{j}" for j in range(k))

    def table(rows: np.ndarray, who: np.ndarray, models: tuple[str, ...]) -> dict:
        return {"loss": SignalTable("loss", who, models, loss(rows))}

    return AttackData(
        record_ids=ids,
        labels=np.zeros(n, dtype=int),
        target=table(mu[None, :n] + sd[:n] * rng.normal(size=(1, n)), ids, ("t",)),
        reference=table(mu[:n] + sd[:n] * rng.normal(size=(k, n)) + keep * shift, ids, mids),
        reference_membership=MembershipMatrix(ids, mids, keep),
        population_target=table(mu[None, n:] + sd[n:] * rng.normal(size=(1, n)), pop_ids, ("t",)),
        reference_population=table(mu[n:] + sd[n:] * rng.normal(size=(k, n)), pop_ids, mids),
    )


def test_online_bits_are_zero_for_target_non_members_with_a_population_of_out_records() -> None:
    """Audited records the target never trained on are typical population records: their
    mean information gain is about 0 bits. Pr(x) = (P_IN + P_OUT)/2 for the audited
    records; the population records have OUT models only, so their Pr(z) imputes the IN
    world with a (moment-matched) as well: with a = 1 (Pr(z) = P_OUT, as when a was read
    as "not needed" because every audited record has both worlds) the mean was -0.21 bits
    here."""
    d = _leaky_references_untouched_target(0)
    res = run_attack("informia-online", d)
    assert abs(float(np.mean(res.scores))) < 0.1, float(np.mean(res.scores))
    assert res.params["a_rule"] == "moment-matched" and 0.0 < res.params["a"] < 1.0
    assert res.params["n_records_one_world"] == 0
    assert res.params["n_population_one_world"] == d.population_target["loss"].values.shape[1]
