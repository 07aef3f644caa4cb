"""The cross-fitted ridge classifier and its permutation test (privaudit.metrics.shift_test),
and the check of a provided target's declared random split built on it
(privaudit.membership.split_check)."""

from __future__ import annotations

import numpy as np
import pytest

from privaudit.data.dataset import Dataset
from privaudit.errors import InsufficientDataError, InvalidInputError
from privaudit.membership import split_check
from privaudit.membership.split_check import check_declared_split, split_check_refusal
from privaudit.metrics.shift_test import RidgeCrossFit
from privaudit.models.provided import ProvidedTarget


def _p_value(z: np.ndarray, member: np.ndarray, seed: int, n_perm: int = 19) -> float:
    fit = RidgeCrossFit.prepare(z, member, np.arange(member.size), n_folds=5, ridge=10.0, seed=seed)
    return fit.shift_test(fit.cross_fit(fit.y), n_perm, seed, unit="record").p_value


def test_the_p_value_holds_its_level_under_a_random_draw() -> None:
    """Membership drawn at random, whatever the records: p <= 0.05 in about 5% of draws
    (exact by exchangeability; 19 permutations give p = 0.05 at the smallest)."""
    rng = np.random.default_rng(0)
    z = rng.standard_normal((120, 6))
    low = sum(_p_value(z, rng.permutation(120) < 60, seed=s) <= 0.05 for s in range(200))
    assert low <= 20  # P(Binomial(200, 0.05) > 20) < 0.002


def test_a_split_chosen_by_the_records_is_refuted() -> None:
    rng = np.random.default_rng(1)
    z = rng.standard_normal((200, 5))
    member = z[:, 0] + 0.5 * rng.standard_normal(200) > 0  # chosen by a record property
    assert _p_value(z, member, seed=0) == pytest.approx(1 / 20)


def test_groups_are_permuted_as_units_and_dealt_whole_into_folds() -> None:
    rng = np.random.default_rng(2)
    groups = np.repeat(np.arange(30), 4)
    member = np.repeat(rng.permutation(30) < 15, 4)
    fit = RidgeCrossFit.prepare(
        rng.standard_normal((120, 3)), member, groups, n_folds=5, ridge=1.0, seed=0
    )
    for test_idx in fit.folds:  # no group split across folds
        inside = set(groups[test_idx].tolist())
        assert not inside & set(np.delete(groups, test_idx).tolist())
    t = fit.shift_test(fit.cross_fit(fit.y), 9, 0, unit="group")
    assert t.unit == "group" and t.n_permutations == 9 and 0.0 < t.p_value <= 1.0


def test_bad_inputs_are_named() -> None:
    z = np.zeros((10, 2))
    member = np.arange(10) < 5
    with pytest.raises(InvalidInputError, match="z/member/groups"):
        RidgeCrossFit.prepare(z[:9], member, np.arange(10), n_folds=2, ridge=1.0, seed=0)
    with pytest.raises(InsufficientDataError, match="records: expected at least 2 records"):
        RidgeCrossFit.prepare(
            z, np.arange(10) < 1, np.arange(10), n_folds=2, ridge=1.0, seed=0, unit="record"
        )


def _provided(member_ids: np.ndarray, non_member_ids: np.ndarray) -> ProvidedTarget:
    class _Model:
        n_classes = 2

    return ProvidedTarget(
        _Model(), member_ids, non_member_ids, randomised_split=True, references="population"
    )


def _dataset(n: int, seed: int) -> Dataset:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 4))
    y = (x[:, 1] + rng.standard_normal(n) > 0).astype(np.int64)
    return Dataset("toy", np.arange(n), x, y, tuple(f"f{i}" for i in range(4)), ("a", "b"))


def test_a_declared_random_split_that_is_random_stands() -> None:
    data = _dataset(600, 3)
    rows = np.random.default_rng(4).permutation(600)
    check = check_declared_split(data, _provided(rows[:200], rows[200:400]), seed=0)
    assert check["refuted"] is False and check["p_value"] >= 0.05
    assert check["n_records"] == 400 and check["unit"] == "record"
    assert split_check_refusal(check) is None


def test_a_declared_split_the_records_refute_refuses_the_bounds() -> None:
    """Members chosen by a feature (as when an auditor picks the records a model fits
    best): the records alone separate them, so the declaration is refuted."""
    data = _dataset(600, 5)
    audited = np.arange(400)
    order = audited[np.argsort(-(data.X[:400, 2] * data.X[:400, 3]))]  # an interaction
    check = check_declared_split(data, _provided(order[:200], order[200:]), seed=0)
    assert check["refuted"] is True and check["auc"] > 0.7
    reason = split_check_refusal(check)
    assert reason is not None and reason.startswith("refused: the split was declared random")


def test_beyond_the_cap_a_subset_drawn_without_the_labels_is_tested(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(split_check, "MAX_RECORDS", 150)
    data = _dataset(600, 6)
    rows = np.random.default_rng(7).permutation(600)
    check = check_declared_split(data, _provided(rows[:200], rows[200:400]), seed=1)
    assert check["n_records"] == 150
    again = check_declared_split(data, _provided(rows[:200], rows[200:400]), seed=1)
    assert again == check  # reproducible from the seed
