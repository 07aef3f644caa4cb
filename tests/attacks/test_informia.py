"""InfoRMIA against a literal pairwise oracle: the mean over population records z of
log2 LR(x, z), RMIA's pairwise likelihood ratio (Tao and Shokri 2026), self pairs left out."""

from __future__ import annotations

import numpy as np
import pytest

from privaudit.attacks import AttackData, run_attack
from privaudit.errors import DesignError

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
