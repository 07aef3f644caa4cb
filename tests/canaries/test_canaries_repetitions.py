"""Text canaries trained on several times: the audit tests groups of ``repetitions`` records
and reports per-record bounds by group privacy; the claim gate and ``privaudit verify`` use
the per-record figures."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from privaudit.canaries import audit_canaries, canary_texts, draw_coins, make_text_canaries
from privaudit.canaries.group import record_eps_fdp, record_eps_one_run
from privaudit.cli import main
from privaudit.stats.fdp import fdp_eps_lb_one_run
from privaudit.stats.one_run import eps_lb_one_run


def _laplace_count_scores(cs, coins, eps: float, rng: np.random.Generator) -> np.ndarray:  # type: ignore[no-untyped-def]
    """An eps-DP mechanism per training record: the count of every distinct text in the
    training multiset plus Laplace(1/eps) noise (one training text changes one count by 1),
    read at each canary's text."""
    counts = Counter(canary_texts(cs, coins))
    raw = np.array([counts.get(t, 0) for t in cs.texts.tolist()], dtype=float)
    return raw + rng.laplace(0.0, 1.0 / eps, cs.m)


def test_repeated_canaries_do_not_refute_a_true_per_record_claim() -> None:
    """A per-record eps = 1 mechanism, canaries trained on 8 times each: the per-record
    bounds exceed eps = 1 in at most about beta of the audits (the group bounds, reported as
    per-record ones, exceeded it in all of them)."""
    eps, m, n, k = 1.0, 1000, 100, 8
    cs = make_text_canaries(m, repetitions=k, key_length=4, secret_length=6, seed=0)
    rng = np.random.default_rng(8)
    violations = above_group = 0
    for i in range(n):
        coins = draw_coins(cs, seed=8000 + i)
        r = audit_canaries(
            cs, coins, _laplace_count_scores(cs, coins, eps, rng), access="black-box"
        )
        one, fdp = r.one_run, r.fdp
        assert r.repetitions == k and one.extra["group_size"] == fdp.extra["group_size"] == k
        group = one.extra["group_epsilon_lower_bound"]
        assert r.epsilon_lower_bound == pytest.approx(group / k, rel=1e-12)  # delta = 0
        assert fdp.epsilon_lower_bound == pytest.approx(
            fdp.extra["group_epsilon_lower_bound"] / k, rel=1e-12
        )
        assert r.mu_lower_bound == pytest.approx(fdp.extra["group_mu_lower_bound"] / k)
        violations += r.epsilon_lower_bound > eps or fdp.epsilon_lower_bound > eps
        above_group += group > eps
    assert violations / n <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / n)
    assert above_group == n  # the group of 8 records does leak more than eps = 1


def test_single_copies_are_audited_as_before() -> None:
    cs = make_text_canaries(200, repetitions=1, seed=1)
    coins = draw_coins(cs, seed=2)
    r = audit_canaries(
        cs,
        coins,
        _laplace_count_scores(cs, coins, 2.0, np.random.default_rng(3)),
        access="black-box",
    )
    assert r.repetitions == 1 and "group_size" not in r.one_run.extra
    assert r.canaries_section()["repetitions"] == 1
    assert "group_bounds" not in r.canaries_section()


@pytest.mark.parametrize(("m", "r", "v"), [(1000, 200, 180), (1000, 1000, 900), (100, 50, 45)])
@pytest.mark.parametrize("delta", [1e-5, 1e-3])
def test_per_record_eps_with_delta_is_where_the_group_guarantee_stops_being_rejected(
    m: int, r: int, v: int, delta: float
) -> None:
    """With delta > 0 the per-record bound is eps with k eps the bound at
    delta_k(eps) = delta sum_{i<k} e^{i eps} (a fixed point), below the group bound / k."""
    for k in (2, 8):
        for rec, group in (
            (record_eps_one_run(m, r, v, delta, 0.05, k), eps_lb_one_run),
            (record_eps_fdp(m, r, v, delta, 0.05, k), fdp_eps_lb_one_run),
        ):
            assert rec <= group(m, r, v, delta, 0.05) / k + 1e-12
            if rec > 0:
                dk = delta * sum(math.exp(i * rec) for i in range(k))
                assert k * rec == pytest.approx(group(m, r, v, dk, 0.05), abs=1e-6)
    assert record_eps_one_run(m, r, v, delta, 0.05, 1) == eps_lb_one_run(m, r, v, delta, 0.05)


def _repeated_result(tmp_path: Path):  # type: ignore[no-untyped-def]
    cs = make_text_canaries(400, repetitions=4, key_length=3, secret_length=5, seed=2)
    coins = draw_coins(cs, seed=5)
    scores = _laplace_count_scores(cs, coins, 1.5, np.random.default_rng(6))
    return audit_canaries(cs, coins, scores, access="black-box", delta=1e-5, accountant_epsilon=2.0)


def test_verify_recomputes_the_per_record_bounds_of_repeated_canaries(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = _repeated_result(tmp_path)
    one = result.one_run
    assert 0 < result.epsilon_lower_bound < one.extra["group_epsilon_lower_bound"] / 4
    assert result.fdp.extra["epsilon_fdp"] == result.fdp.epsilon_lower_bound
    report = result.save(tmp_path / "report")
    res = json.loads((report / "results.json").read_text(encoding="utf-8"))
    c = res["canaries"]
    assert c["repetitions"] == 4 and c["group_bounds"]["records_per_canary"] == 4
    assert c["epsilon_lower_bound"] == result.epsilon_lower_bound
    assert c["group_bounds"]["epsilon_lower_bound"] == one.extra["group_epsilon_lower_bound"]
    assert c["fraction_of_accountant"] == pytest.approx(result.epsilon_lower_bound / 2.0)
    manifest = json.loads((report / "bundle.json").read_text(encoding="utf-8"))
    assert manifest["config"]["repetitions"] == 4
    assert "per training record" in (report / "report.html").read_text(encoding="utf-8")
    assert "per training record" in str(result)
    capsys.readouterr()
    assert main(["verify", str(report)]) == 0
    assert "verify: OK" in capsys.readouterr().out
    # recomputed with one copy per canary, the recorded per-record bounds no longer follow
    manifest["config"]["repetitions"] = 1
    (report / "bundle.json").write_text(json.dumps(manifest), encoding="utf-8")
    assert main(["verify", str(report)]) == 1


def test_the_claim_gate_compares_the_per_record_bounds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from privaudit.canaries.cli import _report_violations

    result = _repeated_result(tmp_path)
    per_record = max(result.epsilon_lower_bound, result.fdp.epsilon_lower_bound)
    group = result.one_run.extra["group_epsilon_lower_bound"]
    assert not _report_violations(result, (per_record + group) / 2, 0.95)
    assert _report_violations(result, per_record / 2, 0.95)
    assert "per training record (each canary trained on 4 times)" in capsys.readouterr().err
