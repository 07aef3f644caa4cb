"""The full Zero-Run audit: orchestration, reproducibility, resumable bootstrap, errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import special

from privaudit.errors import EstimationError, InvalidInputError
from privaudit.runtime.seeds import derive_rng
from privaudit.runtime.store import ArtifactStore
from privaudit.zero_run import ZeroRunResult, draw_uniforms, zero_run_audit, zero_run_bounds


def _shifted(m: int, gamma: float, seed: int = 0):  # type: ignore[no-untyped-def]
    g = np.random.default_rng(seed)
    member = g.random(m) < 0.5
    y = 1.0 * member + g.standard_normal(m)
    a = gamma * np.where(member, 1.0, -1.0) + g.standard_normal(m)
    features = np.c_[a, g.standard_normal((m, 2))]
    oracle = special.expit(2.0 * gamma * a)
    scores = y + 2.0 * gamma * a
    return member, scores, features, oracle


def test_given_propensities_headline_rules() -> None:
    member, scores, _, oracle = _shifted(1500, 0.5)
    flat = np.full(member.size, 0.5)
    given = {"oracle": oracle, "flat": flat}
    res = zero_run_audit(scores, member, propensity=given, seed=3, headline_rule="min")
    by_name = {e["name"]: e for e in res.estimators}
    assert set(by_name) == {"oracle", "flat"}
    # The same numbers as the building block, with the audit's own tampering uniforms.
    u = draw_uniforms(member.size, derive_rng(3, purpose="zero-run-tampering"))
    direct = zero_run_bounds(scores, member, oracle, uniforms=u)
    assert by_name["oracle"]["pointwise"]["mu_lower_bound"] == direct["pointwise"].mu_lower_bound
    assert res.uncorrected["mu_lower_bound"] == direct["uncorrected"].mu_lower_bound
    # A flat propensity corrects nothing: its "pointwise" bound is the uncorrected one ...
    assert by_name["flat"]["pointwise"]["mu_lower_bound"] == res.uncorrected["mu_lower_bound"]
    # ... and the oracle, as a features-only challenger, falsifies it.
    flat_tests = {f["challenger"]: f for f in by_name["flat"]["falsification"]}
    assert flat_tests["oracle"]["rejected"]
    assert any("[flat] falsification test rejected" in w for w in res.warnings)
    oracle_tests = {f["challenger"]: f for f in by_name["oracle"]["falsification"]}
    assert not oracle_tests["oracle"]["rejected"]
    # Rule "min": the smaller pointwise bound (the oracle's, here), each at beta.
    mus = {n: e["pointwise"]["mu_lower_bound"] for n, e in by_name.items()}
    assert res.headline["mu_lower_bound"] == min(mus.values())
    assert res.headline["estimator"] == min(mus, key=mus.__getitem__)
    assert res.headline["basis"] == "point estimate"
    assert res.uncorrected["mu_lower_bound"] > res.headline["mu_lower_bound"]

    # Rule "max" (default): every estimator at beta / 2, the falsified flat one left out,
    # so the headline is the oracle's bound at beta / 2 although flat's is larger.
    mx = zero_run_audit(scores, member, propensity=given, seed=3)
    half = zero_run_bounds(scores, member, oracle, uniforms=u, beta=0.025)["pointwise"]
    mx_by = {e["name"]: e for e in mx.estimators}
    assert mx_by["oracle"]["pointwise"]["mu_lower_bound"] == half.mu_lower_bound
    assert half.mu_lower_bound < direct["pointwise"].mu_lower_bound
    assert mx.headline["rule"] == "max" and mx.headline["beta_per_estimator"] == 0.025
    assert mx.headline["falsified_estimators"] == ["flat"]
    assert mx.headline["estimator"] == "oracle"
    assert mx.headline["mu_lower_bound"] == half.mu_lower_bound
    assert mx.headline["epsilon_lower_bound"] == half.epsilon_lower_bound
    assert mx_by["flat"]["pointwise"]["mu_lower_bound"] > mx.headline["mu_lower_bound"]
    # the uncorrected comparison stays at beta
    assert mx.uncorrected["mu_lower_bound"] == res.uncorrected["mu_lower_bound"]
    # Without the falsified estimator, the maximum is over the admitted ones.
    two = zero_run_audit(
        scores, member, propensity={"oracle": oracle, "oracle2": oracle.copy()}, seed=3
    )
    assert two.headline["mu_lower_bound"] == half.mu_lower_bound
    with pytest.raises(InvalidInputError, match="headline_rule"):
        zero_run_audit(scores, member, propensity=given, headline_rule="mean")


def test_estimated_audit_is_reproducible_and_round_trips(tmp_path: Path) -> None:
    member, scores, features, _ = _shifted(600, 0.4, seed=1)
    kw = {"features": features, "estimators": ("logistic-sigmoid",), "seed": 7}
    a = zero_run_audit(scores, member, **kw)
    b = zero_run_audit(scores, member, **kw)
    assert a.to_dict() == b.to_dict()
    diag = a.estimators[0]["diagnostics"]
    assert 0.5 < diag["auc"] < 0.9
    assert a.settings["propensity"] == "cross-fitted"
    back = ZeroRunResult.from_dict(json.loads(json.dumps(a.to_dict())))
    assert back == a
    assert back.bound("logistic-sigmoid", "pointwise").procedure == "zero-run-pointwise"
    with pytest.raises(InvalidInputError, match="estimator"):
        back.bound("nope", "pointwise")


def test_bootstrap_resumes_from_the_store(tmp_path: Path) -> None:
    member, scores, features, _ = _shifted(500, 0.3, seed=2)
    kw = {"features": features, "estimators": ("logistic-sigmoid",), "seed": 1, "n_bootstrap": 3}
    store = ArtifactStore(tmp_path / "cache")
    first = zero_run_audit(scores, member, store=store, **kw)
    assert store.stats.created == 3
    again = zero_run_audit(scores, member, store=store, **kw)
    assert store.stats.hits == 3 and store.stats.created == 3
    assert first.to_dict() == again.to_dict()
    plain = zero_run_audit(scores, member, **kw)
    assert plain.to_dict() == first.to_dict()
    boot = first.estimators[0]["bootstrap"]
    assert len(boot["mu_values"]) == 3
    assert boot["mu_lower_quantile"] == min(boot["mu_values"])  # lower 2.5 % of 3 values
    assert first.headline["mu_lower_bound"] == boot["mu_lower_quantile"]


def test_bad_input_gives_clear_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    member, scores, features, oracle = _shifted(300, 0.3)
    with pytest.raises(InvalidInputError, match="features"):
        zero_run_audit(scores, member)
    with pytest.raises(InvalidInputError, match="estimators"):
        zero_run_audit(scores, member, features=features, estimators=("bogus",))
    with pytest.raises(InvalidInputError, match="n_bootstrap"):
        zero_run_audit(scores, member, propensity=oracle, n_bootstrap=5)
    with pytest.raises(InvalidInputError, match="member"):
        zero_run_audit(scores, np.ones(member.size, dtype=bool), features=features)
    bad = features.copy()
    bad[4, 1] = np.nan
    with pytest.raises(InvalidInputError, match=r"NaN|finite"):
        zero_run_audit(scores, member, features=bad)
    with pytest.raises(InvalidInputError, match="propensity"):
        zero_run_audit(scores, member, propensity=np.r_[oracle[:-1], 1.5])

    import privaudit.zero_run.propensity as prop

    class Broken:
        def __init__(self, *args: object, **kwargs: object) -> None:
            pass

        def fit(self, *args: object, **kwargs: object) -> None:
            raise RuntimeError("solver diverged")

    monkeypatch.setattr(prop, "make_propensity_model", lambda *a, **k: Broken())
    with pytest.raises(EstimationError, match="logistic-sigmoid"):
        zero_run_audit(scores, member, features=features, estimators=("logistic-sigmoid",))


def test_absorbed_overlap_failure_is_paid_once_across_candidates() -> None:
    from privaudit.stats import gdp_mu_lb_one_run
    from privaudit.zero_run import default_guess_counts, propensity_aware_guesses

    member, scores, _, _ = _shifted(2000, 0.0, seed=4)
    m, beta, dds = member.size, 0.05, 1e-5  # m * delta_DS = 0.02 < beta
    u = draw_uniforms(m, 0)
    got = zero_run_bounds(
        scores, member, np.full(m, 0.5), uniforms=u, global_method="absorb", delta_ds=dds, eta=0.5
    )["global"]
    cands = default_guess_counts(m)
    s = np.where(member, 1, -1)
    best = 0.0
    for r in cands:
        t = propensity_aware_guesses(scores, np.ones(m), r)
        rr, vv = int((t != 0).sum()), int(((t != 0) & (t == s)).sum())
        best = max(best, gdp_mu_lb_one_run(m, rr, vv, (beta - m * dds) / len(cands)))
    assert got.mu_lower_bound == pytest.approx(best, abs=1e-9)
    with pytest.raises(InvalidInputError, match="delta_ds"):
        zero_run_bounds(
            scores, member, np.full(m, 0.5), uniforms=u, global_method="absorb", delta_ds=0.06
        )
    with pytest.raises(InvalidInputError, match="m \\* delta_ds"):  # m * delta_DS = 0.05
        zero_run_bounds(
            scores, member, np.full(m, 0.5), uniforms=u, global_method="absorb", delta_ds=2.5e-5
        )


def test_the_headline_names_the_estimator_of_each_bound() -> None:
    """The headline's mu and eps are each the extreme over the same estimators, possibly
    from different ones (e.g. one's bootstrap quantile of mu, another's of eps): each is
    named, and the summary says so when they differ."""
    from privaudit.zero_run.audit import _headline

    def entry(name: str, mu: float, eps: float) -> dict[str, Any]:
        return {
            "name": name,
            "pointwise_refused": None,
            "falsification": [],
            "placebo": None,
            "bootstrap": None,
            "pointwise": {"mu_lower_bound": mu, "epsilon_lower_bound": eps},
        }

    entries = [entry("logistic", 0.5, 1.0), entry("forest", 0.4, 1.2)]
    h = _headline(entries, "max", 0.05, 0, 0.025)
    assert (h["estimator"], h["mu_lower_bound"]) == ("logistic", 0.5)
    assert (h["epsilon_estimator"], h["epsilon_lower_bound"]) == ("forest", 1.2)
    low = _headline(entries, "min", 0.05, 0, 0.05)
    assert (low["estimator"], low["epsilon_estimator"]) == ("forest", "logistic")
    from privaudit.zero_run.summary import _eps_estimator_text

    assert _eps_estimator_text(h) == " (eps from forest)"
    assert _eps_estimator_text({**h, "epsilon_estimator": "logistic"}) == ""
