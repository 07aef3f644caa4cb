"""Attacks P, S, R, D, L against direct per-record / per-class oracles."""

from __future__ import annotations

import numpy as np
import pytest

from privaudit.attacks import AttackData, run_attack
from privaudit.attacks.thresholds import fit_out_world
from privaudit.errors import InsufficientDataError
from privaudit.records import MembershipMatrix

from .conftest import World, make_world


@pytest.fixture(scope="module")
def w() -> World:
    return make_world(30, n=200, n_pop=300)


def _cdf1(sample: np.ndarray, x: float, method: str) -> float:
    """Minus the member score of one record: the CDF, or for the linear method beyond
    the sample its tie-free extension (thresholds.OutWorld.linear_score), written out."""
    f = float(fit_out_world(sample).cdf(np.array([x]), method)[0])
    lo, hi = float(sample.min()), float(sample.max())
    if method == "linear" and (x < lo or x > hi):
        span = hi - lo if hi > lo else 1.0
        return -(lo - x) / span if x < lo else 1.0 + (x - hi) / span
    return f


def test_population_is_target_loss_cdf_over_population(w: World) -> None:
    d = w.data
    res = run_attack("population", d, signal="loss", smoothing="linear")
    pop = d.population_target["loss"].values[0]
    x = d.target["loss"].values[0]
    expected = np.array([-_cdf1(pop, xi, "linear") for xi in x])
    np.testing.assert_allclose(res.scores, expected, rtol=1e-12)
    # the paper's reading of the linear quantile: decisions = loss <= np.quantile(pop, alpha)
    res = run_attack(
        "population",
        d,
        signal="loss",
        alpha=0.1,
        smoothing="linear",
        threshold_calibration="smoothed",
    )
    c = np.quantile(pop, 0.1)
    x_ok = np.abs(x - c) > 1e-9
    np.testing.assert_array_equal(res.decisions()[x_ok], (x <= c)[x_ok])
    assert res.params["alpha_guarantee"] == "approximate"
    # the default (conformal): loss below the floor((N+1) alpha)-th smallest population loss
    res = run_attack("population", d, signal="loss", alpha=0.1, smoothing="linear")
    j = int(np.floor((pop.size + 1) * 0.1 + 1e-9))
    np.testing.assert_array_equal(res.decisions(), x < np.sort(pop)[j - 1])
    assert res.params["alpha_guarantee"] == "per-target"
    assert res.params["threshold_sample_size"] == pop.size


def test_population_alpha_decision_holds_alpha_in_expectation() -> None:
    """Non-members exchangeable with N population records: the conformal decision's FPR
    is at most alpha on average; the interpolated quantile's is alpha + (1 - 2 alpha)/(N+1)
    (5.9% at alpha 5%, N = 99)."""
    from privaudit.records import SignalTable

    rng = np.random.default_rng(3)
    n_pop, n_x, runs, alpha = 99, 400, 300, 0.05
    fpr: dict[str, list[float]] = {"population": [], "smoothed": []}
    for _ in range(runs):
        pop, x = rng.exponential(size=n_pop), rng.exponential(size=n_x)
        ids = np.array([f"r{i}" for i in range(n_x)])
        pids = np.array([f"p{i}" for i in range(n_pop)])
        data = AttackData(
            record_ids=ids,
            labels=np.zeros(n_x, dtype=np.int64),
            target={"loss": SignalTable("loss", ids, ("t",), x[None, :])},
            population_target={"loss": SignalTable("loss", pids, ("t",), pop[None, :])},
        )
        for cal in fpr:
            res = run_attack(
                "population", data, signal="loss", alpha=alpha, threshold_calibration=cal
            )
            fpr[cal].append(res.decisions().mean())
    se = np.sqrt(alpha / (n_x * runs))  # the decisions' spread within a run, roughly
    assert np.mean(fpr["population"]) < alpha + 3 * se
    assert np.mean(fpr["smoothed"]) > alpha + (1 - 2 * alpha) / (n_pop + 1) / 2


def test_population_per_class(w: World) -> None:
    d = w.data
    res = run_attack("population", d, signal="loss", per_class=True, smoothing="logit-gaussian")
    pop = d.population_target["loss"].values[0]
    x = d.target["loss"].values[0]
    for i in range(0, x.size, 17):
        y = d.labels[i]
        assert res.scores[i] == pytest.approx(
            -_cdf1(pop[d.population_labels == y], x[i], "logit-gaussian")
        )
    assert set(res.params["out_values_per_class"]) == {"0", "1"}


def test_shadow_uses_out_pairs_of_the_records_class(w: World) -> None:
    d = w.data
    res = run_attack("shadow", d, signal="loss", smoothing="average")
    vals = d.shadow["loss"].values
    keep = d.shadow_membership.keep
    x = d.target["loss"].values[0]
    for y in (0, 1):
        sample = vals[(~keep) & (d.shadow_labels[None, :] == y)]
        idx = np.flatnonzero(d.labels == y)[:10]
        for i in idx:
            assert res.scores[i] == pytest.approx(-_cdf1(sample, x[i], "average"), abs=1e-12)
    assert res.params["n_out_pairs"] == int((~keep).sum())


@pytest.mark.parametrize("method", ["linear", "logit-gaussian", "min", "average", "student-t"])
def test_reference_per_record_out_models(w: World, method: str) -> None:
    """R's out world: every reference model trained on population data (Ye et al. Eq. 10)."""
    d = w.data
    res = run_attack("reference", d, signal="loss", smoothing=method)
    ref = d.outside_reference["loss"].values
    x = d.target["loss"].values[0]
    for i in range(0, x.size, 13):
        assert res.scores[i] == pytest.approx(-_cdf1(ref[:, i], x[i], method), abs=1e-12)
    assert res.params["n_models"] == ref.shape[0]
    assert res.params["references"].startswith("trained on population data")


def test_distillation_uses_every_distilled_model(w: World) -> None:
    d = w.data
    res = run_attack("distillation", d, signal="loss")
    dist = d.distilled["loss"].values
    x = d.target["loss"].values[0]
    for i in range(0, x.size, 11):
        assert res.scores[i] == pytest.approx(-_cdf1(dist[:, i], x[i], "student-t"), abs=1e-12)
    assert res.params["n_models"] == dist.shape[0]


def test_leave_one_out_scores_only_records_with_enough_models(w: World) -> None:
    d = w.data
    res = run_attack("leave-one-out", d, signal="loss")
    out = d.leave_one_out_serves
    enough = out.sum(axis=0) >= 2
    np.testing.assert_array_equal(res.record_ids, d.record_ids[enough])
    assert res.params["n_skipped"] == int((~enough).sum()) > 0
    assert res.params["n_scored"] == int(enough.sum())
    vals = d.leave_one_out["loss"].values
    x = d.target["loss"].values[0]
    for pos, i in enumerate(np.flatnonzero(enough)[:15]):
        assert res.scores[pos] == pytest.approx(
            -_cdf1(vals[out[:, i], i], x[i], "student-t"), abs=1e-12
        )
    res3 = run_attack("leave-one-out", d, signal="loss", min_out_models=3)
    assert res3.params["n_scored"] == int((out.sum(axis=0) >= 3).sum())


def test_leave_one_out_with_no_usable_record_is_an_error(w: World) -> None:
    d = w.data
    keep = np.ones_like(d.leave_one_out_membership.keep)
    d2 = AttackData(
        record_ids=d.record_ids,
        labels=d.labels,
        target=d.target,
        leave_one_out=d.leave_one_out,
        leave_one_out_membership=MembershipMatrix(
            d.record_ids, d.leave_one_out_membership.model_ids, keep
        ),
        leave_one_out_serves=~keep,
    )
    with pytest.raises(InsufficientDataError, match="leave-one-out"):
        run_attack("leave-one-out", d2, signal="loss")


def test_shadow_class_without_out_values_is_an_error(w: World) -> None:
    d = w.data
    labels = np.array(d.shadow_labels)
    labels[:] = 0  # no shadow record of class 1
    d2 = AttackData(
        record_ids=d.record_ids,
        labels=d.labels,
        target=d.target,
        shadow=d.shadow,
        shadow_membership=d.shadow_membership,
        shadow_labels=labels,
    )
    with pytest.raises(InsufficientDataError, match="class 1"):
        run_attack("shadow", d2, signal="loss")


def test_reference_attack_needs_two_models() -> None:
    w = make_world(31, n=30, n_pop=30, k=4)
    d = w.data
    one = {s: t.select_models(["oref0"]) for s, t in d.outside_reference.items()}
    d2 = AttackData(
        record_ids=d.record_ids, labels=d.labels, target=d.target, outside_reference=one
    )
    with pytest.raises(InsufficientDataError, match="reference models trained on population"):
        run_attack("reference", d2, signal="loss")


def test_alpha_attack_false_positive_rate_on_fresh_non_members() -> None:
    """R with the default predictive t: FPR on held-out non-members ~ alpha."""
    w = make_world(32, n=4000, n_pop=50, k=16, n_loo=2)
    res = run_attack("reference", w.data, alpha=0.05, threshold_calibration="smoothed")
    fpr = res.decisions()[~w.member].mean()
    n_neg = int((~w.member).sum())
    # the synthetic logit confidence is Gaussian given the record: the t is exact
    assert abs(fpr - 0.05) < 4 * np.sqrt(0.05 * 0.95 / n_neg)


@pytest.mark.parametrize("name", ["population", "reference", "distillation"])
def test_default_logit_confidence_equals_paper_logit_rescaled_loss(w: World, name: str) -> None:
    """phi is the App. B.3 logit rescaling of the loss: identical Gaussian p-values."""
    d = w.data
    a = run_attack(name, d, smoothing="logit-gaussian")
    b = run_attack(name, d, smoothing="logit-gaussian", signal="loss")
    assert a.params["signal"] == "logit_confidence" and a.params["rescale"] == "none"
    assert b.params["rescale"] == "logit"
    np.testing.assert_allclose(a.scores, b.scores, rtol=1e-6, atol=1e-9)


def test_logit_confidence_and_loss_keep_ranking_at_large_margins() -> None:
    """Margins of 40-60 nats: phi separates members, and so does the loss, which is
    computed as log1p(exp(-phi)) and no longer rounds to 0 (ties) there."""
    from privaudit.records import SignalTable

    from .conftest import tables

    rng = np.random.default_rng(5)
    n, k = 200, 8
    ids = np.array([f"r{i}" for i in range(n)])
    labels = np.zeros(n, int)
    member = np.arange(n) < n // 2
    mu = 45.0 + rng.normal(size=n)
    ref = tables(mu[None, :] + rng.normal(size=(k, n)), labels, ids, "ref")
    tgt = tables((mu + 3.0 * member + rng.normal(size=n))[None, :], labels, ids, "t")
    assert np.all(tgt["loss"].values > 0.0)  # no underflow to exact ties
    assert np.unique(tgt["loss"].values).size == n
    d = AttackData(record_ids=ids, labels=labels, target=tgt, distilled=ref)
    auc_phi = np.mean(
        run_attack("distillation", d).scores[member][:, None]
        > run_attack("distillation", d).scores[~member][None, :]
    )
    assert auc_phi > 0.9
    assert isinstance(tgt["loss"], SignalTable)
    s_loss = run_attack("distillation", d, signal="loss").scores
    assert np.mean(s_loss[member][:, None] > s_loss[~member][None, :]) > 0.9
