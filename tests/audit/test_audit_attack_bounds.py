"""The per-attack one-run bounds of ``privaudit run`` (issue 8, item 9)."""

from __future__ import annotations

import numpy as np
import pytest

from privaudit.errors import InvalidInputError
from privaudit.stats import one_run_audit
from privaudit.stats.attack_bounds import (
    SAMPLING_NOTE,
    SPLIT_NOT_RANDOMISED,
    attack_one_run_bounds,
    grouped_one_run_bounds,
)


def test_each_attack_is_the_one_run_audit_at_the_bonferroni_level() -> None:
    rng = np.random.default_rng(0)
    member = rng.random(800) < 0.5
    cols = {f"a{i}": (rng.standard_normal(800) + (1.0 + i) * member, member) for i in range(3)}
    out = attack_one_run_bounds(cols, confidence=0.9)
    assert [d["attack"] for d in out] == ["a0", "a1", "a2"]
    for d, (s, m) in zip(out, cols.values(), strict=True):
        want = one_run_audit(s, m, confidence=1 - 0.1 / 3)
        assert d["epsilon_lower_bound"] == want.epsilon_lower_bound
        assert d["confidence"] == pytest.approx(1 - 0.1 / 3)
        assert d["family_confidence"] == 0.9 and d["procedure"] == "one-run"
        assert any("Bonferroni over 3 attacks" in n for n in d["notes"])
        assert any("own fair coin" in n for n in d["notes"])
    # stronger attacks give larger bounds
    lbs = [d["epsilon_lower_bound"] for d in out]
    assert lbs[0] < lbs[1] < lbs[2]


def test_null_world_max_over_attacks_rarely_positive() -> None:
    """eps = 0 (scores independent of membership), membership one fair coin per record
    as in the pipeline: the largest of the K bounds is positive in at most about beta of
    the audits."""
    rng = np.random.default_rng(1)
    n_sim, k, hits = 200, 4, 0
    for _ in range(n_sim):
        member = rng.random(200) < 0.5
        cols = {f"a{i}": (rng.standard_normal(200), member) for i in range(k)}
        hits += max(d["epsilon_lower_bound"] for d in attack_one_run_bounds(cols)) > 0
    # P(Binomial(200, 0.05) > 20) < 1e-3
    assert hits <= 20


def test_needs_an_attack() -> None:
    with pytest.raises(InvalidInputError, match="columns"):
        attack_one_run_bounds({})


def test_sampling_assumption_is_recorded() -> None:
    rng = np.random.default_rng(2)
    member = rng.permutation(100) < 50
    cols = {"a": (rng.standard_normal(100) + member, member)}
    (d,) = attack_one_run_bounds(cols)
    assert d["sampling_assumption"] == SAMPLING_NOTE and d["notes"][-1] == SAMPLING_NOTE
    (g,) = attack_one_run_bounds(cols, sampling_assumption="pooled over 3 trials")
    assert g["sampling_assumption"] == "pooled over 3 trials"
    assert g["epsilon_lower_bound"] == d["epsilon_lower_bound"]


# ---------------------------------------------------------------------------------------
# grouped_one_run_bounds: membership randomised by groups (the chunks of a document)


def test_group_scores_mean_membership_sizes_in_first_appearance_order() -> None:
    from privaudit.stats.attack_bounds import group_scores

    s, m, k = group_scores([1.0, 3.0, 5.0, 0.0, 2.0], [1, 1, 0, 1, 0], ["b", "b", "a", "c", "a"])
    np.testing.assert_allclose(s, [2.0, 3.5, 0.0])
    assert m.tolist() == [True, False, True]
    assert k.tolist() == [2, 2, 1]


def test_group_scores_refuses_a_group_mixing_members_and_non_members() -> None:
    from privaudit.stats.attack_bounds import group_scores

    with pytest.raises(InvalidInputError, match="mixed group"):
        group_scores([1.0, 2.0], [1, 0], ["d0", "d0"])


def test_one_record_per_group_is_the_ungrouped_bound() -> None:
    from privaudit.stats.attack_bounds import grouped_one_run_bounds

    rng = np.random.default_rng(3)
    member = rng.random(400) < 0.5
    scores = member + rng.normal(0, 0.7, 400)
    cols = {"a": (scores, member)}
    plain = attack_one_run_bounds(cols)
    grouped = grouped_one_run_bounds(cols, [f"d{i}" for i in range(400)], unit="document")
    assert grouped[0]["epsilon_lower_bound"] == plain[0]["epsilon_lower_bound"] > 0
    assert grouped[0]["extra"]["max_records_per_unit"] == 1
    assert "unit_epsilon_lower_bound" not in grouped[0]["extra"]


def test_groups_are_audited_as_units_and_divided_by_the_largest_group() -> None:
    """k copies of each document's score: the group audit sees the documents once (not
    k times, which would overstate the evidence) and divides by k (group privacy)."""
    from privaudit.stats.attack_bounds import grouped_one_run_bounds

    rng = np.random.default_rng(4)
    n_docs, k = 300, 3
    member = rng.random(n_docs) < 0.5
    doc_scores = member + rng.normal(0, 0.5, n_docs)
    scores = np.repeat(doc_scores, k)
    chunk_member = np.repeat(member, k)
    docs = np.repeat([f"d{i}" for i in range(n_docs)], k)
    out = grouped_one_run_bounds({"a": (scores, chunk_member)}, docs, unit="document")[0]
    per_doc = attack_one_run_bounds({"a": (doc_scores, member)})[0]
    assert out["extra"]["unit_epsilon_lower_bound"] == per_doc["epsilon_lower_bound"] > 0
    assert out["epsilon_lower_bound"] == pytest.approx(per_doc["epsilon_lower_bound"] / k)
    assert out["counts"]["m"] == n_docs
    # auditing the repeated chunks as independent examples would claim far more
    naive = attack_one_run_bounds({"a": (scores, chunk_member)})[0]["epsilon_lower_bound"]
    assert naive > out["extra"]["unit_epsilon_lower_bound"]


def test_grouped_bound_coverage_when_the_model_ignores_the_data() -> None:
    """A mechanism with eps = 0 (scores independent of membership) but strongly correlated
    chunk scores within a document: the chunk-as-example bound is positive far more often
    than beta; the grouped bound is not."""
    from privaudit.stats.attack_bounds import grouped_one_run_bounds

    rng = np.random.default_rng(5)
    n_docs, k, reps = 60, 5, 60
    naive_pos = grouped_pos = 0
    for _ in range(reps):
        member = np.repeat(rng.random(n_docs) < 0.5, k)
        scores = np.repeat(rng.normal(size=n_docs), k) + rng.normal(0, 0.01, n_docs * k)
        docs = np.repeat(np.arange(n_docs).astype(str), k)
        cols = {"a": (scores, member)}
        naive_pos += attack_one_run_bounds(cols)[0]["epsilon_lower_bound"] > 0
        grouped_pos += grouped_one_run_bounds(cols, docs)[0]["epsilon_lower_bound"] > 0
    assert grouped_pos <= 0.05 * reps + 2 * np.sqrt(0.05 * 0.95 * reps)
    assert naive_pos > grouped_pos


def test_a_chosen_split_makes_a_model_that_saw_nothing_look_leaky() -> None:
    """Why a split nobody drew at random gets no bound: scores that ignore the model
    entirely (eps = 0) but a split chosen by the score (members: the records scored
    highest, as when an auditor picks the records a model fits best) give a large bound
    that is false; with ``refused`` the entry holds the trivial 0, not gated."""
    rng = np.random.default_rng(7)
    scores = rng.standard_normal(1000)  # the record's own property, not the model's
    member = np.zeros(1000, dtype=bool)
    member[np.argsort(-scores)[:500]] = True  # the split chosen, not drawn
    (claimed,) = attack_one_run_bounds({"loss": (scores, member)})
    assert claimed["epsilon_lower_bound"] > 3.0  # false: nothing was trained on anything
    (refused,) = attack_one_run_bounds({"loss": (scores, member)}, refused=SPLIT_NOT_RANDOMISED)
    assert refused["epsilon_lower_bound"] == 0.0 and refused["mu_lower_bound"] is None
    assert refused["extra"]["gated"] is False
    assert refused["extra"]["not_gated_reason"] == SPLIT_NOT_RANDOMISED
    assert "candidate_bounds" not in refused["extra"]  # each as unfounded as the bound
    assert refused["notes"][0].startswith("REFUSED (bound set to 0): refused: the auditor chose")
    assert refused["counts"] == claimed["counts"]  # what the attack did stays on record


def test_a_refused_grouped_bound_keeps_its_units() -> None:
    rng = np.random.default_rng(8)
    groups = np.repeat(np.arange(100), 3)
    member = np.repeat(rng.permutation(100) < 50, 3)
    cols = {"s": (rng.standard_normal(300) + 3.0 * member, member)}
    (e,) = grouped_one_run_bounds(cols, groups, unit="document", refused="refused: a reason")
    assert e["epsilon_lower_bound"] == 0.0 and e["extra"]["gated"] is False
    assert e["extra"]["not_gated_reason"] == "refused: a reason"
    assert e["extra"]["unit"] == "document" and e["extra"]["n_units"] == 100
    assert e["extra"]["unit_epsilon_lower_bound"] == 0.0


def test_refused_attacks_refuse_only_their_own_entries() -> None:
    rng = np.random.default_rng(3)
    member = rng.random(400) < 0.5
    cols = {n: (rng.standard_normal(400) + 3.0 * member, member) for n in ("a", "b")}
    plain = attack_one_run_bounds(cols)
    out = attack_one_run_bounds(cols, refused_attacks={"b": "chosen by membership"})
    assert out[0] == plain[0] and plain[1]["epsilon_lower_bound"] > 0
    assert out[1]["epsilon_lower_bound"] == 0.0 and out[1]["extra"]["gated"] is False
    assert out[1]["extra"]["not_gated_reason"] == "chosen by membership"
    # the Bonferroni family still counts both attacks
    assert out[1]["confidence"] == plain[1]["confidence"]
    # a global refusal wins
    both = attack_one_run_bounds(cols, refused="split chosen", refused_attacks={"b": "x"})
    assert [e["extra"]["not_gated_reason"] for e in both] == ["split chosen"] * 2


def test_attack_ls_bound_is_refused_only_where_its_draws_were_chosen_by_membership() -> None:
    """Attack L scores every non-member and a fixed number of members: in the fixed-model
    and average games those are its draws; in the fixed-record games its draws are the
    fixed records, each with its own coin, so its bound stands there."""
    from privaudit.stats.attack_bounds import MEMBER_CHOSEN_SAMPLE, member_chosen_refusals

    attacks = ["loss", "leave-one-out", "lira-online"]
    for game in ("fixed-model", "average"):
        assert member_chosen_refusals(attacks, game) == {"leave-one-out": MEMBER_CHOSEN_SAMPLE}
    for game in ("fixed-record", "fixed-record-and-dataset"):
        assert member_chosen_refusals(attacks, game) == {}
    assert member_chosen_refusals(["loss"], "fixed-model") == {}
