"""Edge paths of run_guess_selection, multi_run_audit and run_procedure, pinned.

Each test fixes one branch that the general audit tests reach rarely: the held-out
fallback to a single guess, the tie note of fixed guess counts, the union-bound level,
the group-size division and the order of the parameter checks.
"""

from __future__ import annotations

import numpy as np
import pytest

from privaudit.errors import InvalidInputError
from privaudit.stats.multi_run import multi_run_audit
from privaudit.stats.procedures import ProcedureParams, run_procedure
from privaudit.stats.selection import GuessCounts, run_guess_selection


def _v(c: GuessCounts, level: float) -> float:
    return float(c.v)


def _data(m: int = 10) -> tuple[np.ndarray, np.ndarray]:
    s = np.arange(m, dtype=np.float64)
    return s, s >= m // 2


@pytest.mark.parametrize(("cand", "k_pos", "k_neg"), [((0, 2), 0, 1), ((2, 0), 1, 0)])
def test_held_out_keeps_one_guess_when_scaling_leaves_none(
    cand: tuple[int, int], k_pos: int, k_neg: int
) -> None:
    s, mem = _data()
    # 9 of 10 examples choose; (k * 1) // 10 == 0 on the one audited example.
    sel = run_guess_selection(
        s, mem, _v, 0.05, k_pos=None, k_neg=None, selection="held-out",
        candidates=[cand], holdout_fraction=0.9, rng=0,
    )  # fmt: skip
    assert (sel.counts.m, sel.counts.k_pos, sel.counts.k_neg) == (1, k_pos, k_neg)
    assert sel.level == 0.05 and sel.extra["selected_candidate"] == list(cand)


def test_held_out_needs_a_candidate_with_a_guess_on_the_selection_part() -> None:
    s, mem = _data()
    with pytest.raises(InvalidInputError, match="at least one candidate with a guess"):
        run_guess_selection(
            s, mem, _v, 0.05, k_pos=None, k_neg=None, selection="held-out",
            candidates=[(1, 0)], holdout_fraction=0.5, rng=0,
        )  # fmt: skip


def test_fixed_counts_note_tied_abstentions() -> None:
    s = np.full(4, 0.5)
    mem = np.array([True, False, True, False])
    sel = run_guess_selection(s, mem, _v, 0.05, k_pos=1, k_neg=None)
    assert (sel.counts.r, sel.description) == (0, "fixed")
    assert sel.notes == ("1 guess(es) abstained because of tied scores at the k boundary.",)


def test_union_bound_tests_each_candidate_at_beta_over_k() -> None:
    s, mem = _data(40)
    cands = [(1, 1), (5, 5), (10, 10)]
    seen: list[float] = []

    def bound(c: GuessCounts, level: float) -> float:
        seen.append(level)
        return float(c.v)

    sel = run_guess_selection(s, mem, bound, 0.06, k_pos=None, k_neg=None, candidates=cands)
    assert seen == [0.06 / 3] * 3 and sel.level == 0.06 / 3
    assert sel.value == 20.0 and sel.extra["candidate_bounds"] == [2.0, 10.0, 20.0]


def test_multi_run_group_size_divides_both_pure_dp_bounds_after_beta() -> None:
    rs = np.random.default_rng(0)
    mem = rs.random(400) < 0.5
    s = rs.normal(size=400) + 2.0 * mem
    one = multi_run_audit(s, mem)
    three = multi_run_audit(s, mem, group_size=3)
    assert three.epsilon_lower_bound == one.epsilon_lower_bound / 3
    assert three.mu_lower_bound == one.mu_lower_bound / 3  # type: ignore[operator]
    assert list(three.extra)[-2:] == ["beta", "group_size"]
    assert (
        three.notes[-2] == "Group privacy over the group size 3: mu divided by 3; eps divided by 3."
    )


def test_multi_run_threshold_and_thresholds_exclusive() -> None:
    s, mem = _data()
    with pytest.raises(InvalidInputError, match="at most one of the two"):
        multi_run_audit(s, mem, threshold=1.0, thresholds=[1.0])


def test_run_procedure_panoramia_checks_in_order() -> None:
    s, mem = _data()
    s01 = s / 10.0
    with pytest.raises(InvalidInputError, match=r"^--delta"):
        run_procedure("panoramia", s01, mem, params=ProcedureParams(delta=0.1, k_pos=1))
    with pytest.raises(InvalidInputError, match=r"^--k-pos"):
        run_procedure("panoramia", s01, mem, params=ProcedureParams(k_pos=1))
    with pytest.raises(InvalidInputError, match=r"^--baseline-col"):
        run_procedure("panoramia", s01, mem)
    with pytest.raises(InvalidInputError, match=r"baseline in \[0, 1\]"):
        run_procedure(
            "panoramia", s01, mem, baseline=s01 * 2, params=ProcedureParams(thresholds="code")
        )


def test_guess_counts_are_whole_numbers_never_truncated() -> None:
    s, mem = _data(40)
    whole = run_guess_selection(s, mem, _v, 0.05, k_pos=5, k_neg=5)
    as_float = run_guess_selection(s, mem, _v, 0.05, k_pos=5.0, k_neg=np.int64(5))  # type: ignore[arg-type]
    assert as_float.counts == whole.counts
    for bad in (2.7, True, "5", float("nan")):
        with pytest.raises(InvalidInputError, match="k_pos: expected a whole number"):
            run_guess_selection(s, mem, _v, 0.05, k_pos=bad, k_neg=None)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="candidates: k_neg: expected a whole number"):
        run_guess_selection(s, mem, _v, 0.05, k_pos=None, k_neg=None, candidates=[(5, 5.5)])  # type: ignore[list-item]
    with pytest.raises(InvalidInputError, match="pairs"):
        run_guess_selection(s, mem, _v, 0.05, k_pos=None, k_neg=None, candidates=[(5,)])  # type: ignore[list-item]
