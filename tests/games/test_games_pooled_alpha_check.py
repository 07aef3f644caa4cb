"""The achieved-FPR check of a game pooled over trials: one beta-binomial per trial threshold."""

from __future__ import annotations

import math
import types
from typing import Any

import numpy as np
import pytest

from privaudit.attacks.calibration import calibrate_threshold
from privaudit.membership.games import GameSamples, game_attack_metrics, pool_game
from privaudit.metrics.roc import (
    alpha_acceptance_region,
    attack_metrics,
    pooled_alpha_acceptance_region,
)
from privaudit.records import AttackScores


def _k(alpha: float, m: int) -> int:
    return math.ceil((m + 1) * (1 - alpha) - 1e-9)


def test_pooled_region_flags_about_five_percent_of_exchangeable_games() -> None:
    """8 trials x 600 non-members, each trial's threshold from its own 2,400 calibration
    scores: the pooled count is a sum of 8 beta-binomials. Its convolution region flags
    about 5% of the null games; one beta-binomial over all 4,800 draws (as if they shared
    one threshold) is far too wide and flags almost none."""
    rng = np.random.default_rng(2024)
    n_trials, n_t, m, alpha, reps = 8, 600, 2400, 0.05, 300
    k = _k(alpha, m)
    fpr = rng.beta(m + 1 - k, k, size=(reps, n_trials))  # each trial threshold's true FPR
    counts = rng.binomial(n_t, fpr).sum(axis=1)
    lo, hi = pooled_alpha_acceptance_region(alpha, [m] * n_trials, [n_t] * n_trials)
    new = float(np.mean((counts < lo) | (counts > hi)))
    lo1, hi1 = alpha_acceptance_region(alpha, m, n_trials * n_t)
    old = float(np.mean((counts < lo1) | (counts > hi1)))
    assert 0.02 <= new <= 0.09, new
    assert old <= 0.015, old
    assert lo1 < lo and hi < hi1


def test_pooled_region_with_one_trial_is_the_single_beta_binomial() -> None:
    for alpha, m, n in ((0.05, 2400, 1200), (0.01, 999, 37), (0.3, 20, 5)):
        assert pooled_alpha_acceptance_region(alpha, [m], [n]) == alpha_acceptance_region(
            alpha, m, n
        )


def _game(sizes: list[int], n_neg: list[int], alpha: float, shift: float, seed: int) -> Any:
    rng = np.random.default_rng(seed)
    trials, sc, mem, rid, tr = [], [], [], [], []
    for t, (m, n) in enumerate(zip(sizes, n_neg, strict=True)):
        info = calibrate_threshold({}, rng.standard_normal(m), alpha)
        ids = np.array([f"x{i}" for i in range(200 + n)])
        s = np.r_[rng.standard_normal(200) + 1.0, rng.standard_normal(n) + shift]
        member = np.r_[np.ones(200, bool), np.zeros(n, bool)]
        a = AttackScores("p", ids, s, info, alpha, info["threshold"])
        trials.append(types.SimpleNamespace(scores={"p": a}))
        sc.append(s)
        mem.append(member)
        rid.append(ids)
        tr.append(np.full(ids.size, t))
    return types.SimpleNamespace(
        game=types.SimpleNamespace(name="average"),
        trials=tuple(trials),
        samples={
            "p": GameSamples(
                "p",
                np.concatenate(sc),
                np.concatenate(mem),
                np.concatenate(rid),
                np.concatenate(tr),
            )
        },
    )


def test_pool_game_records_each_trials_sizes_and_the_check_uses_them() -> None:
    sizes, n_neg, alpha = [500, 800, 1200], [300, 150, 450], 0.05
    pooled = pool_game(_game(sizes, n_neg, alpha, 0.0, seed=3))["p"]
    params = pooled.scores.params
    assert params["trial_threshold_sample_sizes"] == sizes
    assert params["trial_n_negatives"] == n_neg
    assert "threshold_sample_size" not in params  # trial 0's: not the pooled count's
    met = game_attack_metrics(pooled)
    lo, hi = pooled_alpha_acceptance_region(alpha, sizes, n_neg)
    assert met.alpha_within_error == (lo <= met.n_false_positives <= hi)
    assert met.alpha_check is not None
    assert met.alpha_check.startswith("beta-binomial convolution over 3 trial thresholds")
    assert "500-1200 calibration non-members" in met.alpha_check
    assert "approximate" in met.alpha_check
    # the recorded sizes are what the check reads: other sizes, another region
    other = AttackScores(
        "p",
        pooled.scores.record_ids,
        pooled.scores.scores,
        {**params, "trial_threshold_sample_sizes": [20, 20, 20]},
        alpha,
        pooled.scores.threshold,
    )
    assert pooled_alpha_acceptance_region(alpha, [20, 20, 20], n_neg) != (lo, hi)
    lo2, hi2 = pooled_alpha_acceptance_region(alpha, [20, 20, 20], n_neg)
    met2 = attack_metrics(other, pooled.member)
    assert met2.alpha_within_error == (lo2 <= met2.n_false_positives <= hi2)
    bad = AttackScores(
        "p",
        pooled.scores.record_ids,
        pooled.scores.scores,
        {**params, "trial_n_negatives": [1, 2, 3]},
        alpha,
        pooled.scores.threshold,
    )
    with pytest.raises(ValueError, match="trial_n_negatives"):
        attack_metrics(bad, pooled.member)


def test_pool_game_flags_a_shifted_game_more_often_than_before() -> None:
    """8 trials whose non-members score 0.12 sd higher (true FPR ~ 1.4 alpha at 5%): the
    per-trial convolution flags most games, one beta-binomial over every draw few."""
    flags_new = flags_old = 0
    for seed in range(20):
        pooled = pool_game(_game([2400] * 8, [600] * 8, 0.05, 0.12, seed))["p"]
        met = game_attack_metrics(pooled)
        flags_new += not met.alpha_within_error
        lo, hi = alpha_acceptance_region(0.05, 2400, 4800)
        flags_old += not (lo <= (met.n_false_positives or 0) <= hi)
    assert flags_new >= 14 and flags_new > flags_old + 2, (flags_new, flags_old)


def test_one_trial_game_keeps_its_params_and_single_beta_binomial() -> None:
    game = _game([900], [400], 0.05, 0.0, seed=5)
    pooled = pool_game(game)["p"]
    params = pooled.scores.params
    assert params["threshold_sample_size"] == 900
    assert "trial_threshold_sample_sizes" not in params
    met = game_attack_metrics(pooled)
    single = attack_metrics(game.trials[0].scores["p"], game.samples["p"].member)
    assert met.alpha_within_error == single.alpha_within_error
    assert met.alpha_check == single.alpha_check
    assert met.alpha_check is not None and met.alpha_check.startswith("beta-binomial: 400")
