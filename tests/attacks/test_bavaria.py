"""BaVarIA (Brännvall 2026): the prior fit, validity with few references, errors."""

from __future__ import annotations

import numpy as np
import pytest

from privaudit.attacks import AttackData, run_attack
from privaudit.attacks.bavaria import fit_variance_prior
from privaudit.errors import DesignError
from privaudit.records import MembershipMatrix, SignalTable

from .conftest import make_world, pair_auc


def test_variance_prior_recovers_a_known_inverse_gamma() -> None:
    rng = np.random.default_rng(1)
    var = 1.0 / rng.gamma(4.0, 1.0 / 6.0, size=20000)  # Inv-Gamma(4, 6)
    ss = var * rng.chisquare(2, size=var.size)  # 3 signals per group
    a0, b0, groups = fit_variance_prior(ss, np.full(var.size, 2.0))
    assert groups == var.size
    assert abs(a0 - 4.0) < 0.6 and abs(b0 - 6.0) < 1.0


def test_variance_prior_needs_two_signals_in_some_group() -> None:
    with pytest.raises(DesignError, match="at least 2 reference models"):
        fit_variance_prior(np.zeros(5), np.zeros(5))


def _offline_world(seed: int, n: int, n_out: int) -> tuple[AttackData, np.ndarray]:
    """Every audited record a non-member; heteroscedastic Gaussian signals per record."""
    rng = np.random.default_rng(seed)
    ids = np.arange(n)
    mu = rng.normal(0.0, 3.0, size=n)
    sd = np.sqrt(1.0 / rng.gamma(3.0, 1.0 / 2.0, size=n))  # sigma^2 ~ Inv-Gamma(3, 2)
    ref = mu[None, :] + sd[None, :] * rng.normal(size=(n_out, n))
    target = mu + sd * rng.normal(size=n)
    models = tuple(f"r{j}" for j in range(n_out))
    sig = "logit_confidence"
    data = AttackData(
        record_ids=ids,
        labels=np.zeros(n, dtype=np.int64),
        target={sig: SignalTable(sig, ids, ("t",), target[None, :])},
        reference={sig: SignalTable(sig, ids, models, ref)},
        reference_membership=MembershipMatrix(ids, models, np.zeros((n_out, n), dtype=bool)),
    )
    return data, sd


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_offline_p_values_hold_alpha_per_record_with_few_references(seed: int) -> None:
    """With 3 OUT models the plug-in Gaussian of LiRA (per-example sigma) fires on about 3x
    alpha of non-members; BaVarIA's predictive t holds alpha (its p-value is exact when the
    prior is the one the variances were drawn from, and the prior is learned here)."""
    n, alpha = 6000, 0.01
    data, _ = _offline_world(seed, n, 3)
    res = run_attack("bavaria-offline", data, clip=None)  # the predictive itself
    p = np.exp(-res.scores)  # the score is -log p
    rate = float(np.mean(p <= alpha))
    assert abs(rate - alpha) < 4 * np.sqrt(alpha * (1 - alpha) / n) + 0.002, rate
    lira = run_attack(
        "lira-offline", data, variance="per-example", clip=None, threshold_calibration="smoothed"
    )
    lira_rate = float(np.mean(np.exp(-lira.scores) <= alpha))  # the score is -log p
    assert lira_rate > 2 * alpha, lira_rate  # the bias BaVarIA removes


def test_bavaria_normal_predictive_and_errors() -> None:
    w = make_world(4, n=300, n_pop=200)
    for name in ("bavaria-online", "bavaria-offline"):
        t = run_attack(name, w.data)
        g = run_attack(name, w.data, predictive="normal")
        assert t.params["predictive"] == "t" and g.params["predictive"] == "normal"
        assert pair_auc(g.scores, w.member) > 0.7
        assert t.params["prior_a0"] > 0 and t.params["prior_b0"] > 0
    with pytest.raises(Exception, match="predictive"):
        run_attack("bavaria-online", w.data, predictive="cauchy")
    # one reference model: no record has two signals in one world, and online lacks a world
    one = _first_models(w.data, 1)
    with pytest.raises(DesignError):
        run_attack("bavaria-offline", one)
    with pytest.raises(DesignError):
        run_attack("bavaria-online", one)


def _first_models(data: AttackData, k: int) -> AttackData:
    import dataclasses

    mm = data.reference_membership
    assert mm is not None
    keep = mm.keep[:k]
    models = mm.model_ids[:k]
    ref = {s: SignalTable(s, t.record_ids, models, t.values[:k]) for s, t in data.reference.items()}
    return dataclasses.replace(
        data,
        reference=ref,
        reference_membership=MembershipMatrix(mm.record_ids, models, keep),
        reference_population=None,
        reference_population_membership=None,
    )


def test_saturated_records_do_not_collapse_the_prior() -> None:
    """Records whose reference signals are all equal (a clipped or saturated signal) have
    SS = 0; their marginal density is unbounded as b0 -> 0, so the fit leaves them out
    (before, a few such records drove the prior to variance 0 and the scores to inf)."""
    data, _ = _offline_world(3, 2000, 4)
    ref = data.reference["logit_confidence"].values.copy()
    ref[:, :100] = 10.0  # 5% of the records saturated at the clip
    ss = ((ref - ref.mean(axis=0)) ** 2).sum(axis=0)
    a0, b0, groups = fit_variance_prior(ss, np.full(ss.size, 3.0))
    a_ref, b_ref, _ = fit_variance_prior(ss[100:], np.full(ss.size - 100, 3.0))
    assert groups == 1900 and (a0, b0) == pytest.approx((a_ref, b_ref), rel=1e-4)
    assert 1.5 < a0 < 6.0 and b0 > 0.5  # variances drawn from Inv-Gamma(3, 2)
    tables = {
        "logit_confidence": SignalTable(
            "logit_confidence", data.record_ids, data.reference["logit_confidence"].model_ids, ref
        )
    }
    import dataclasses

    res = run_attack("bavaria-offline", dataclasses.replace(data, reference=tables), clip=None)
    assert np.all(np.isfinite(res.scores))
    with pytest.raises(DesignError, match="equal signals"):
        fit_variance_prior(np.zeros(5), np.full(5, 3.0))


def test_clip_is_tuned_on_the_reference_models_only() -> None:
    w = make_world(6, n=300, n_pop=200)
    res = run_attack("bavaria-online", w.data)
    assert res.params["clip_rule"].startswith("auto")
    given = run_attack("bavaria-online", w.data, clip=5.0)
    assert given.params["clip"] == 5.0 and given.params["clip_rule"] == "given"
    with pytest.raises(Exception, match="clip"):
        run_attack("bavaria-offline", w.data, clip=-1.0)
