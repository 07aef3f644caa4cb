"""LiRA against a slow per-record scipy implementation."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from privaudit.attacks import AttackData, run_attack
from privaudit.errors import DesignError
from privaudit.records import MembershipMatrix

from .conftest import World, make_world, tables


def _slow_lira(
    world: World, *, online: bool, location: str, variance: str, test: str = "one-sided"
):
    d = world.data
    obs = d.target["logit_confidence"].values[0]
    ref = d.reference["logit_confidence"].values
    keep = d.reference_membership.keep
    loc = np.mean if location == "mean" else np.median
    if variance == "fixed":
        groups = [(ref[keep[:, i], i]) for i in range(obs.size)] + [
            ref[~keep[:, i], i] for i in range(obs.size)
        ]
        if not online:
            groups = [ref[~keep[:, i], i] for i in range(obs.size)]
        ss = sum(float(((g - g.mean()) ** 2).sum()) for g in groups)
        dof = sum(g.size for g in groups) - len(groups)
        s_fixed = np.sqrt(ss / dof)
    out = []
    for i in range(obs.size):
        ins, outs = ref[keep[:, i], i], ref[~keep[:, i], i]
        s_in = np.std(ins) if variance == "per-example" else s_fixed
        s_out = np.std(outs) if variance == "per-example" else s_fixed
        if online:
            out.append(
                stats.norm.logpdf(obs[i], loc(ins), s_in)
                - stats.norm.logpdf(obs[i], loc(outs), s_out)
            )
        elif test == "one-sided":
            out.append(-stats.norm.sf(obs[i], loc(outs), s_out))
        else:
            out.append(-stats.norm.logpdf(obs[i], loc(outs), s_out))
    return np.array(out)


@pytest.mark.parametrize("location", ["mean", "median"])
@pytest.mark.parametrize("variance", ["per-example", "fixed"])
def test_online_matches_slow_oracle(location: str, variance: str) -> None:
    w = make_world(10, n=150, n_pop=50, k=10)
    res = run_attack("lira-online", w.data, location=location, variance=variance)
    np.testing.assert_allclose(
        res.scores,
        _slow_lira(w, online=True, location=location, variance=variance),
        rtol=1e-9,
        atol=1e-9,
    )
    assert res.params["variance"] == variance and res.params["location"] == location
    assert res.params["n_in_min"] == 5 and res.params["n_out_min"] == 5


@pytest.mark.parametrize("test", ["one-sided", "two-sided"])
@pytest.mark.parametrize("variance", ["per-example", "fixed"])
def test_offline_matches_slow_oracle(test: str, variance: str) -> None:
    w = make_world(11, n=150, n_pop=50, k=10)
    res = run_attack("lira-offline", w.data, offline_test=test, variance=variance)
    np.testing.assert_allclose(
        res.scores,
        _slow_lira(w, online=False, location="mean", variance=variance, test=test),
        rtol=1e-9,
        atol=1e-12,
    )
    assert res.params["offline_test"] == test


def test_reference_code_fixed_variance_is_std_of_all_in_signals() -> None:
    w = make_world(12, n=60, n_pop=30, k=6)
    res = run_attack("lira-online", w.data, variance="fixed-reference-code")
    ref = w.data.reference["logit_confidence"].values
    keep = w.data.reference_membership.keep
    s = np.std(ref[keep])
    obs = w.data.target["logit_confidence"].values[0]
    mu_in = np.array([ref[keep[:, i], i].mean() for i in range(obs.size)])
    mu_out = np.array([ref[~keep[:, i], i].mean() for i in range(obs.size)])
    expected = stats.norm.logpdf(obs, mu_in, s) - stats.norm.logpdf(obs, mu_out, s)
    np.testing.assert_allclose(res.scores, expected, rtol=1e-9)


def test_two_sided_offline_has_no_alpha_threshold(world: World) -> None:
    from privaudit.errors import InvalidInputError

    with pytest.raises(InvalidInputError, match="alpha"):
        run_attack("lira-offline", world.data, offline_test="two-sided", alpha=0.01)
    res = run_attack("lira-offline", world.data, alpha=0.01, threshold_calibration="smoothed")
    assert res.threshold == -0.01
    cal = run_attack("lira-offline", world.data, alpha=0.01)
    assert cal.params["threshold_calibration"] == "population"
    assert cal.threshold == cal.params["threshold"]


def _with_keep(w: World, keep: np.ndarray) -> AttackData:
    d = w.data
    k = keep.shape[0]
    ref = {s: t.select_models([f"ref{j}" for j in range(k)]) for s, t in d.reference.items()}
    return AttackData(
        record_ids=d.record_ids,
        labels=d.labels,
        target=d.target,
        reference=ref,
        reference_membership=MembershipMatrix(
            d.record_ids, tuple(f"ref{j}" for j in range(k)), keep
        ),
    )


def test_missing_out_or_in_models_are_design_errors() -> None:
    w = make_world(13, n=20, n_pop=20, k=6)
    keep = np.array(w.data.reference_membership.keep)
    keep[:, 3] = True  # record 3 is IN for every reference model: no OUT
    d = _with_keep(w, keep)
    for name in ("lira-online", "lira-offline", "reference", "rmia-offline"):
        if name.startswith("rmia"):
            continue
        with pytest.raises(DesignError, match="OUT"):
            run_attack(name, d)
    keep = np.array(w.data.reference_membership.keep)
    keep[:, 5] = False  # no IN model: online fails, offline works
    d = _with_keep(w, keep)
    with pytest.raises(DesignError, match="IN"):
        run_attack("lira-online", d)
    run_attack("lira-offline", d)
    # one OUT model per record: per-example variance impossible, fixed variance fine
    keep = np.zeros((2, 20), bool)
    keep[0] = True
    d = _with_keep(w, keep)
    with pytest.raises(DesignError, match="at least 2 OUT"):
        run_attack("lira-offline", d, variance="per-example")
    res = run_attack("lira-offline", d, variance="fixed-reference-code")
    assert res.params["n_out_max"] == 1


def test_auto_variance_is_per_example_with_many_models() -> None:
    w = make_world(5, n=20, n_pop=20, k=64)
    res = run_attack("lira-online", w.data)
    assert (res.params["variance_rule"], res.params["variance"]) == ("auto", "per-example")
    few = make_world(5, n=20, n_pop=20, k=8)
    assert run_attack("lira-online", few.data).params["variance"] == "fixed"


def test_out_models_selected_from_matrix_not_layout() -> None:
    """Permuting models (and their keep rows) never changes any score."""
    w = make_world(14, n=80, n_pop=40, k=8)
    d = w.data
    perm = np.random.default_rng(0).permutation(8)
    names = [f"ref{j}" for j in perm]
    ref = {s: t.select_models(names) for s, t in d.reference.items()}
    d2 = AttackData(
        record_ids=d.record_ids,
        labels=d.labels,
        target=d.target,
        reference=ref,
        reference_membership=d.reference_membership.select_models(names),
    )
    for name in ("lira-online", "lira-offline", "reference"):
        np.testing.assert_allclose(
            run_attack(name, d2).scores, run_attack(name, d).scores, rtol=1e-12
        )


def test_sigma_floor_guards_identical_reference_signals() -> None:
    ids = np.array(["a", "b", "c"])
    labels = np.array([0, 1, 0])
    phi_ref = np.ones((4, 3))  # every reference model gives the same signal
    keep = np.array([[1, 1, 0], [1, 0, 1], [0, 1, 1], [0, 0, 0]], bool)
    d = AttackData(
        record_ids=ids,
        labels=labels,
        target=tables(np.array([[1.0, 2.0, 0.5]]), labels, ids, "t"),
        reference=tables(phi_ref, labels, ids, "ref"),
        reference_membership=MembershipMatrix(ids, tuple(f"ref{j}" for j in range(4)), keep),
    )
    res = run_attack("lira-offline", d)
    assert np.isfinite(res.scores).all()
    assert res.params["n_sigma_floored"] == 3
