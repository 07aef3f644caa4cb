"""AttackData validation: bad inputs give one clear InvalidInputError."""

from __future__ import annotations

import numpy as np
import pytest

from privaudit.attacks import AttackData
from privaudit.errors import InvalidInputError
from privaudit.records import MembershipMatrix, SignalTable

from .conftest import World, make_world, tables


@pytest.fixture(scope="module")
def w() -> World:
    return make_world(40, n=30, n_pop=40)


def test_nan_and_inf_signals_rejected() -> None:
    ids = np.array([1, 2, 3])
    with pytest.raises(InvalidInputError, match="NaN"):
        SignalTable("loss", ids, ("t",), np.array([[0.1, np.nan, 0.3]]))
    with pytest.raises(InvalidInputError, match="infinite"):
        SignalTable("loss", ids, ("t",), np.array([[0.1, np.inf, 0.3]]))


def test_mismatched_lengths_and_ids(w: World) -> None:
    d = w.data
    with pytest.raises(InvalidInputError, match="labels"):
        AttackData(record_ids=d.record_ids, labels=d.labels[:-1], target=d.target)
    other = {
        s: SignalTable(s, d.record_ids[::-1], t.model_ids, t.values[:, ::-1])
        for s, t in d.target.items()
    }
    with pytest.raises(InvalidInputError, match=r"target\['loss'\].record_ids"):
        AttackData(record_ids=d.record_ids, labels=d.labels, target=other)
    with pytest.raises(InvalidInputError, match="record_ids"):
        AttackData(record_ids=d.record_ids[:-1], labels=d.labels[:-1], target=d.target)
    with pytest.raises(InvalidInputError, match="population_labels"):
        AttackData(
            record_ids=d.record_ids,
            labels=d.labels,
            target=d.target,
            population_target=d.population_target,
            population_labels=d.population_labels[:-2],
        )


def test_duplicate_and_empty_ids(w: World) -> None:
    d = w.data
    ids = np.array(d.record_ids)
    ids[1] = ids[0]
    with pytest.raises(InvalidInputError, match="unique"):
        AttackData(record_ids=ids, labels=d.labels, target=d.target)
    with pytest.raises(InvalidInputError, match="at least one id"):
        AttackData(record_ids=np.array([], dtype=str), labels=np.array([], dtype=int), target={})


def test_checked_ids_are_reused_without_a_second_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """A record built from another record's (read-only) ids keeps that very array and skips
    the uniqueness check; a new array with the same ids, or a duplicate, is checked."""
    from privaudit import records

    t = SignalTable("loss", np.array([3, 1, 2]), ("m0", "m1"), np.zeros((2, 3)))
    calls: list[int] = []
    original = records.check_unique_ids

    def counted(ids, name="record_ids"):
        calls.append(1)
        return original(ids, name)

    monkeypatch.setattr(records, "check_unique_ids", counted)
    sub = SignalTable("loss", t.record_ids, ("m1",), t.values[1:])
    mm = MembershipMatrix(t.record_ids, ("m0",), np.ones((1, 3), dtype=bool))
    assert sub.record_ids is t.record_ids and mm.record_ids is t.record_ids and not calls
    assert not t.record_ids.flags.writeable
    SignalTable("loss", np.array([3, 1, 2]), ("m0",), np.zeros((1, 3)))
    assert len(calls) == 1
    with pytest.raises(InvalidInputError, match="unique ids"):
        SignalTable("loss", np.array([3, 3, 2]), ("m0",), np.zeros((1, 3)))


def test_target_must_be_one_model_and_tables_consistent(w: World) -> None:
    d = w.data
    with pytest.raises(InvalidInputError, match="1 model"):
        AttackData(record_ids=d.record_ids, labels=d.labels, target=d.reference)
    with pytest.raises(InvalidInputError, match="signal"):
        AttackData(record_ids=d.record_ids, labels=d.labels, target={"prob_true": d.target["loss"]})
    with pytest.raises(InvalidInputError, match="non-empty dict"):
        AttackData(record_ids=d.record_ids, labels=d.labels, target={})
    with pytest.raises(InvalidInputError, match="SignalTable"):
        AttackData(record_ids=d.record_ids, labels=d.labels, target={"loss": np.zeros((1, 30))})  # type: ignore[dict-item]
    mixed = dict(d.reference)
    mixed["loss"] = d.reference["loss"].select_models(
        ["ref1", "ref0", *[f"ref{j}" for j in range(2, 8)]]
    )
    with pytest.raises(InvalidInputError, match="model_ids"):
        AttackData(
            record_ids=d.record_ids,
            labels=d.labels,
            target=d.target,
            reference=mixed,
            reference_membership=d.reference_membership,
        )


def test_membership_must_match_tables(w: World) -> None:
    d = w.data
    with pytest.raises(InvalidInputError, match="reference_membership"):
        AttackData(record_ids=d.record_ids, labels=d.labels, target=d.target, reference=d.reference)
    wrong_models = d.reference_membership.select_models(
        [f"ref{j}" for j in (1, 0, 2, 3, 4, 5, 6, 7)]
    )
    with pytest.raises(InvalidInputError, match=r"reference_membership\.model_ids"):
        AttackData(
            record_ids=d.record_ids,
            labels=d.labels,
            target=d.target,
            reference=d.reference,
            reference_membership=wrong_models,
        )
    wrong_records = MembershipMatrix(
        d.record_ids[::-1], d.reference_membership.model_ids, d.reference_membership.keep[:, ::-1]
    )
    with pytest.raises(InvalidInputError, match=r"reference_membership\.record_ids"):
        AttackData(
            record_ids=d.record_ids,
            labels=d.labels,
            target=d.target,
            reference=d.reference,
            reference_membership=wrong_records,
        )
    with pytest.raises(InvalidInputError, match="shadow_membership"):
        AttackData(
            record_ids=d.record_ids,
            labels=d.labels,
            target=d.target,
            shadow=d.shadow,
            shadow_labels=d.shadow_labels,
        )
    with pytest.raises(InvalidInputError, match="shadow_labels"):
        AttackData(
            record_ids=d.record_ids,
            labels=d.labels,
            target=d.target,
            shadow=d.shadow,
            shadow_membership=d.shadow_membership,
        )


def test_reference_population_must_be_the_reference_models(w: World) -> None:
    d = w.data
    renamed = {
        s: SignalTable(s, t.record_ids, tuple(f"other{j}" for j in range(8)), t.values)
        for s, t in d.reference_population.items()
    }
    with pytest.raises(InvalidInputError, match=r"reference_population\.model_ids"):
        AttackData(
            record_ids=d.record_ids,
            labels=d.labels,
            target=d.target,
            population_target=d.population_target,
            reference=d.reference,
            reference_membership=d.reference_membership,
            reference_population=renamed,
        )
    pop_target_other_model = tables(
        np.zeros((1, 40)), d.population_labels, d.population_target["loss"].record_ids, "x"
    )
    with pytest.raises(InvalidInputError, match=r"population_target\.model_ids"):
        AttackData(
            record_ids=d.record_ids,
            labels=d.labels,
            target=d.target,
            population_target=pop_target_other_model,
        )


def test_bad_labels(w: World) -> None:
    d = w.data
    with pytest.raises(InvalidInputError, match="labels"):
        AttackData(record_ids=d.record_ids, labels=np.full(30, 0.5), target=d.target)
    with pytest.raises(InvalidInputError, match="labels"):
        AttackData(record_ids=d.record_ids, labels=-np.ones(30, int), target=d.target)


def test_table_accessor_errors(w: World) -> None:
    d = AttackData(
        record_ids=w.data.record_ids, labels=w.data.labels, target={"loss": w.data.target["loss"]}
    )
    with pytest.raises(InvalidInputError, match="prob_true"):
        d.table("target", "prob_true")
    with pytest.raises(InvalidInputError, match="reference"):
        d.table("reference", "loss")
    with pytest.raises(InvalidInputError, match="field"):
        d.table("nope", "loss")
