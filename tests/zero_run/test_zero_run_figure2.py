"""Controlled Gaussian-mechanism experiment (Zero-Run paper, Section 7, Figure 2(a)).

A smaller version of ``benchmarks/bench_zero_run_shift.py``: the paper's three qualitative
claims, plus the pieces of the design checked against slow, obvious oracles.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest
from scipy import stats

from privaudit.errors import InvalidInputError
from privaudit.runtime.executor import LocalExecutor
from privaudit.zero_run.bounds import default_guess_counts
from privaudit.zero_run.simulate import (
    draw_gaussian_shift_data,
    figure2_checks,
    gaussian_shift_experiment,
    oracle_overlap_eta,
    oracle_propensity,
    shift_feature_auc,
    summarize_shift_experiment,
)

MU = 2.0 / 3.0
LEVELS = (0.0, 0.25, 1.5)
KW: dict[str, Any] = {"mu": MU, "m": 2000, "n_seeds": 6, "seed": 11}


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    return gaussian_shift_experiment(LEVELS, **KW)


@pytest.fixture(scope="module")
def summary(rows: list[dict]) -> list[dict]:
    return summarize_shift_experiment(rows, MU)


def _cell(summary: list[dict], level: float, prop: str, corr: str) -> dict:
    (c,) = [
        s
        for s in summary
        if s["level"] == level and s["propensity"] == prop and s["correction"] == corr
    ]
    return c


# --- the three claims of Figure 2(a) ---------------------------------------------------


def test_rows_cover_the_design(rows: list[dict]) -> None:
    assert len(rows) == 6 * len(LEVELS) * 2 * 3
    keys = {(r["seed_index"], r["level"], r["propensity"], r["correction"]) for r in rows}
    assert len(keys) == len(rows)
    for r in rows:
        assert r["mu_true"] == MU and r["m"] == 2000
        assert math.isfinite(r["mu_lower_bound"]) and r["mu_lower_bound"] >= 0.0


def test_uncorrected_exceeds_mu_true_at_strong_shift(summary: list[dict]) -> None:
    for prop in ("oracle", "estimated"):
        c = _cell(summary, 1.5, prop, "uncorrected")
        # invalid in every run, by a wide margin (features-only AUC 0.98)
        assert c["min"] > MU, c
        assert c["mean"] > 1.5 * MU, c


def test_corrected_audits_stay_valid(summary: list[dict]) -> None:
    beta = 0.05
    for s in summary:
        if s["correction"] == "uncorrected":
            continue
        # exact binomial test that the violation rate is <= beta; Bonferroni over 12 cells
        p = stats.binom.sf(s["n_above"] - 1, s["n"], beta)
        assert p >= 0.01 / 12, s
    for prop in ("oracle", "estimated"):
        for corr in ("global", "pointwise"):
            assert _cell(summary, 1.5, prop, corr)["max"] < MU


def test_pointwise_keeps_power_at_moderate_shift(summary: list[dict]) -> None:
    for prop in ("oracle", "estimated"):
        pw = _cell(summary, 0.25, prop, "pointwise")
        gl = _cell(summary, 0.25, prop, "global")
        assert pw["mean"] > gl["mean"], (pw, gl)
        assert pw["mean"] > 0.02, pw  # informative, not just a numerical hair above 0


def test_figure2_checks_pass(summary: list[dict]) -> None:
    checks = figure2_checks(summary, MU)
    assert [c["name"] for c in checks] == [
        "uncorrected-exceeds",
        "corrected-valid",
        "pointwise-beats-global",
    ]
    assert all(c["passed"] is True for c in checks), checks


def test_no_shift_oracle_is_the_plain_one_run_audit(rows: list[dict]) -> None:
    # gamma = 0: pi = 1/2, no tampering, eta = 1/2, delta_DS = 0 -> all three coincide
    for i in range(6):
        got = {
            r["correction"]: r["mu_lower_bound"]
            for r in rows
            if r["seed_index"] == i and r["level"] == 0.0 and r["propensity"] == "oracle"
        }
        assert got["uncorrected"] == got["global"] == got["pointwise"] > 0.0


def test_oracle_global_uses_the_exact_overlap(rows: list[dict]) -> None:
    for r in rows:
        if r["propensity"] != "oracle":
            continue
        # default delta_DS = beta / (10 K), K = 8 candidate guess counts at m = 2000
        assert len(default_guess_counts(2000)) == 8
        eta, dds = oracle_overlap_eta(r["level"], 0.05 / 80)
        assert r["eta"] == pytest.approx(eta, rel=1e-9)
        assert r["delta_ds"] == pytest.approx(dds, rel=1e-9)


# --- reproducibility -------------------------------------------------------------------


def test_reproducible_from_seed_and_data_fixed_across_levels(rows: list[dict]) -> None:
    # the first seed alone, at one level only: the same rows as inside the full run, so the
    # draws depend on the seed, not on the list of levels or on the number of seeds
    again = gaussian_shift_experiment([0.25], **{**KW, "n_seeds": 1})
    ref = [r for r in rows if r["seed_index"] == 0 and r["level"] == 0.25]
    assert again == ref
    other = gaussian_shift_experiment([0.25], **{**KW, "n_seeds": 1, "seed": 12})
    assert [r["mu_lower_bound"] for r in other] != [r["mu_lower_bound"] for r in ref]
    # membership (hence the release) is the same at every level of a seed
    for i in range(6):
        assert len({r["n_members"] for r in rows if r["seed_index"] == i}) == 1


@pytest.mark.slow
def test_results_do_not_depend_on_the_executor() -> None:
    kw: dict[str, Any] = {
        "m": 300,
        "n_seeds": 2,
        "seed": 3,
        "propensities": ("oracle", "estimated"),
    }
    inline = gaussian_shift_experiment([0.5, 1.0], **kw)
    pooled = gaussian_shift_experiment([0.5, 1.0], **kw, executor=LocalExecutor(2))
    assert inline == pooled


# --- the design's closed forms against slow oracles -----------------------------------


def test_oracle_propensity_is_the_bayes_posterior() -> None:
    a = np.linspace(-5.0, 5.0, 41)
    for g in (0.0, 0.3, 1.2):
        p1, p0 = stats.norm.pdf(a, g, 1.0), stats.norm.pdf(a, -g, 1.0)
        np.testing.assert_allclose(oracle_propensity(a, g), p1 / (p1 + p0), rtol=1e-12)


def test_oracle_overlap_eta_matches_monte_carlo() -> None:
    assert oracle_overlap_eta(0.0, 0.005) == (0.5, 0.0)
    rng = np.random.default_rng(5)
    n = 400_000
    for g in (0.25, 1.0):
        eta, dds = oracle_overlap_eta(g, 0.005)
        assert dds == 0.005 and 0.0 < eta < 0.5
        for sign in (1.0, -1.0):  # both classes
            pi = oracle_propensity(sign * g + rng.standard_normal(n), g)
            frac = np.mean(np.minimum(pi, 1.0 - pi) < eta)
            assert abs(frac - dds) < 5.0 * math.sqrt(dds * (1 - dds) / n), (g, sign, frac)
    etas = [oracle_overlap_eta(g, 0.005)[0] for g in (0.1, 0.25, 0.5, 1.0, 1.5)]
    assert all(x > y for x, y in itertools.pairwise(etas))


def test_shift_feature_auc_matches_the_empirical_auc() -> None:
    data = draw_gaussian_shift_data(20_000, rng=7)
    for g in (0.0, 0.5, 1.5):
        a = data.feature(g)
        auc = stats.mannwhitneyu(a[data.member], a[~data.member]).statistic / (
            data.member.sum() * (~data.member).sum()
        )
        assert auc == pytest.approx(shift_feature_auc(g), abs=0.015)


def test_draws_have_the_stated_distribution() -> None:
    d = draw_gaussian_shift_data(40_000, mu=MU, n_noise=2, rng=1)
    assert d.features(0.5).shape == (40_000, 3)
    assert abs(d.member.mean() - 0.5) < 0.01
    diff = d.release[d.member].mean() - d.release[~d.member].mean()
    assert diff == pytest.approx(MU, abs=0.04)
    assert stats.kstest(d.release[~d.member], "norm").pvalue > 1e-3
    # the nuisance features carry no membership information
    for j in range(2):
        x = d.nuisance[:, j]
        assert stats.ttest_ind(x[d.member], x[~d.member]).pvalue > 1e-3
    np.testing.assert_array_equal(d.feature(0.0), d.base_noise)


# --- the claim checker must be able to fail ---------------------------------------------


def _summary_cell(level: float, prop: str, corr: str, mean: float, n_above: int) -> dict:
    return {
        "level": level,
        "propensity": prop,
        "correction": corr,
        "n": 20,
        "mean": mean,
        "n_above": n_above,
    }


def _fake_summary(**override: tuple[float, int]) -> list[dict]:
    base = {
        (0.0, "uncorrected"): (0.35, 0),
        (0.0, "global"): (0.35, 0),
        (0.0, "pointwise"): (0.35, 0),
        (0.5, "uncorrected"): (0.6, 0),
        (0.5, "global"): (0.0, 0),
        (0.5, "pointwise"): (0.1, 0),
        (1.5, "uncorrected"): (1.6, 20),
        (1.5, "global"): (0.0, 0),
        (1.5, "pointwise"): (0.0, 1),
    }
    for key, val in override.items():
        lv, corr = key.split("_")
        base[(float(lv), corr)] = val
    return [_summary_cell(lv, "oracle", c, m, k) for (lv, c), (m, k) in base.items()]


def test_figure2_checks_fail_on_violations() -> None:
    ok = figure2_checks(_fake_summary(), MU)
    assert [c["passed"] for c in ok] == [True, True, True]
    bad1 = figure2_checks(_fake_summary(**{"1.5_uncorrected": (0.5, 0)}), MU)
    assert bad1[0]["passed"] is False
    # 6 of 20 above: P[Bin(20, 0.05) >= 6] = 3e-4 < 0.01 / 6
    bad2 = figure2_checks(_fake_summary(**{"1.5_pointwise": (0.2, 6)}), MU)
    assert bad2[1]["passed"] is False
    assert any("6/20" in d for d in bad2[1]["details"])
    # 3 of 20 above is within binomial slack of beta = 0.05
    assert figure2_checks(_fake_summary(**{"1.5_global": (0.1, 3)}), MU)[1]["passed"] is True
    bad3 = figure2_checks(_fake_summary(**{"0.5_pointwise": (0.0, 0)}), MU)
    assert bad3[2]["passed"] is False
    none = figure2_checks(_fake_summary(), MU, strong_min_level=2.0, moderate_levels=(0.6, 1.0))
    assert none[0]["passed"] is None and none[2]["passed"] is None


# --- input validation -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"levels": [0.0, -0.5]}, "levels"),
        ({"levels": [0.5, 0.5]}, "distinct"),
        ({"levels": [0.5, float("nan")]}, "levels"),
        ({"propensities": ("oracle", "magic")}, "propensities"),
        ({"propensities": ()}, "propensities"),
        ({"propensities": "oracle"}, "propensities"),
        ({"estimator": "svm"}, "estimator"),
        ({"m": 50}, "m"),
        ({"mu": -0.1}, "mu"),
        ({"n_seeds": 0}, "n_seeds"),
        ({"seed": -1}, "seed"),
        ({"confidence": 1.0}, "confidence"),
        ({"oracle_delta_ds": 0.05}, "oracle_delta_ds"),
        ({"oracle_delta_ds": 0.0100001}, "oracle_delta_ds"),  # K = 5 guess counts at m = 200
        ({"executor": object()}, "executor"),
    ],
)
def test_experiment_rejects_bad_input(kwargs: dict, match: str) -> None:
    args = {"levels": [0.5], "m": 200, "n_seeds": 1, **kwargs}
    with pytest.raises(InvalidInputError, match=match):
        gaussian_shift_experiment(**args)


def test_null_mechanism_corrected_bounds_stay_at_zero() -> None:
    """mu_true = 0: every positive bound is a false rejection, so validity can fail here."""
    null = gaussian_shift_experiment((1.0,), mu=0.0, m=1500, n_seeds=8, seed=5)
    by = {(r["propensity"], r["correction"]): [] for r in null}
    for r in null:
        by[(r["propensity"], r["correction"])].append(r["mu_lower_bound"])
    for prop in ("oracle", "estimated"):
        assert all(v > 0 for v in by[(prop, "uncorrected")])  # the shift alone "leaks"
        for corr in ("global", "pointwise"):
            # Binomial(8, 0.05) >= 3 has probability < 0.6 %.
            assert sum(v > 0 for v in by[(prop, corr)]) <= 2


def test_helpers_reject_bad_input() -> None:
    with pytest.raises(InvalidInputError, match="gamma"):
        oracle_propensity([0.0], -1.0)
    with pytest.raises(InvalidInputError, match="delta_ds"):
        oracle_overlap_eta(0.5, 0.0)
    with pytest.raises(InvalidInputError, match="gamma"):
        shift_feature_auc(float("inf"))
    with pytest.raises(InvalidInputError, match="rows"):
        summarize_shift_experiment([], MU)
    with pytest.raises(InvalidInputError, match="rows"):
        summarize_shift_experiment([{"level": 0.0}], MU)
    nan_row = {
        "level": 0.0,
        "propensity": "oracle",
        "correction": "global",
        "mu_lower_bound": np.nan,
    }
    with pytest.raises(InvalidInputError, match="NaN"):
        summarize_shift_experiment([nan_row], MU)
    with pytest.raises(InvalidInputError, match="summary"):
        figure2_checks([], MU)
    with pytest.raises(InvalidInputError, match="1 repeated row"):
        figure2_checks([*_fake_summary(), _fake_summary()[0]], MU)
    for bad in (None, "1.0", -1.0, np.inf, True):
        with pytest.raises(InvalidInputError, match="strong_min_level"):
            figure2_checks(_fake_summary(), MU, strong_min_level=bad)  # type: ignore[arg-type]


def test_estimated_uses_the_audits_margin_and_plugin_is_a_labelled_comparison() -> None:
    """ "estimated" is the audit's correction (paired fit + margin); the plug-in is separate."""
    kw: dict[str, Any] = {"m": 600, "n_seeds": 1, "seed": 5}
    props = ("estimated", "estimated-plugin")
    rows = gaussian_shift_experiment([0.5], propensities=props, **kw)
    pw = {r["propensity"]: r for r in rows if r["correction"] == "pointwise"}
    assert set(pw) == set(props)
    # the margin pushes |logit| up, so less is retained than with the plug-in
    assert pw["estimated"]["retention_mean"] < pw["estimated-plugin"]["retention_mean"]
    no_margin = gaussian_shift_experiment([0.5], propensities=("estimated",), margin_z=0.0, **kw)
    pw0 = next(r for r in no_margin if r["correction"] == "pointwise")
    assert pw0["retention_mean"] > pw["estimated"]["retention_mean"]
    # the plug-in rows are not part of the validity claim
    summary = summarize_shift_experiment(rows, MU)
    checks = {c["name"]: c for c in figure2_checks(summary, MU)}
    # one level x one claimed propensity x (global, pointwise) = 2 tested cells
    assert "0.01/2 per cell" in checks["corrected-valid"]["description"]
    with pytest.raises(InvalidInputError, match="margin_z"):
        gaussian_shift_experiment([0.5], propensities=("estimated",), margin_z=-1.0, **kw)
