"""The per-attack one-run bounds of ``privaudit run`` (issue 8, item 9)."""

from __future__ import annotations

import numpy as np
import pytest

from privaudit.audit import one_run_audit
from privaudit.audit.attack_bounds import SAMPLING_NOTE, attack_one_run_bounds
from privaudit.errors import InvalidInputError


def test_each_attack_is_the_one_run_audit_at_the_bonferroni_level() -> None:
    rng = np.random.default_rng(0)
    member = rng.permutation(800) < 400
    cols = {f"a{i}": (rng.standard_normal(800) + (1.0 + i) * member, member) for i in range(3)}
    out = attack_one_run_bounds(cols, confidence=0.9)
    assert [d["attack"] for d in out] == ["a0", "a1", "a2"]
    for d, (s, m) in zip(out, cols.values(), strict=True):
        want = one_run_audit(s, m, confidence=1 - 0.1 / 3)
        assert d["epsilon_lower_bound"] == want.epsilon_lower_bound
        assert d["confidence"] == pytest.approx(1 - 0.1 / 3)
        assert d["family_confidence"] == 0.9 and d["procedure"] == "one-run"
        assert any("Bonferroni over 3 attacks" in n for n in d["notes"])
        assert any("without replacement" in n for n in d["notes"])
    # stronger attacks give larger bounds
    lbs = [d["epsilon_lower_bound"] for d in out]
    assert lbs[0] < lbs[1] < lbs[2]


def test_null_world_max_over_attacks_rarely_positive() -> None:
    """eps = 0 (scores independent of membership), membership an exact half as in the
    pipeline: the largest of the K bounds is positive in at most about beta of the audits."""
    rng = np.random.default_rng(1)
    n_sim, k, hits = 200, 4, 0
    for _ in range(n_sim):
        member = rng.permutation(200) < 100
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
