"""Gradient canaries in the DP-SGD run of a privaudit torch recipe (issue 33, item 2): the
recipe's own loop (``TorchTrainer.fit`` -> ``fit_dp``) with the ``GradientCanaryInjector``
attached through its ``private_hook``; the canary moves its coordinate by exactly one
canary step against the same run without canaries, the accountant is untouched, the scores
find the included canaries, a run that never inserts them is the plain run, bad input."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("opacus")

from privaudit.canaries import (
    audit_canaries,
    draw_coins,
    make_gradient_canaries,
    make_text_canaries,
    train_recipe_with_gradient_canaries,
)
from privaudit.canaries.opacus_hook import flat_parameters
from privaudit.errors import InvalidInputError
from privaudit.models.torch_models import TorchTrainer
from privaudit.models.torch_recipe import TorchRecipe

pytestmark = pytest.mark.filterwarnings("ignore:Secure RNG turned off")


def _data(n: int = 64, d: int = 5) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, d))
    return X, (X[:, 0] > 0).astype(int)


def _recipe(**kw: object) -> TorchRecipe:
    base: dict[str, object] = {
        "factory": "privaudit.models.torch_nets:mlp",
        "factory_kwargs": {"n_features": 5, "n_classes": 2, "hidden": 4},
        "optimizer": "sgd",
        "lr": 0.5,
        "epochs": 1,
        "batch_size": 64,
        "device": "cpu",
        "dp": {"noise_multiplier": 1.0, "max_grad_norm": 1.0},
    }
    return TorchRecipe(**{**base, **kw})  # type: ignore[arg-type]


N_PARAMS = 5 * 4 + 4 + 4 * 2 + 2


def test_an_included_canary_moves_its_coordinate_by_exactly_lr_c_over_b() -> None:
    """Full batch (rate 1), one step, the same seed: the noise is the same draw in both runs
    (the canaries' sampling uses its own generator), so the difference is the canaries'."""
    X, y = _data()
    cs = make_gradient_canaries(N_PARAMS, 12, seed=1)
    coins = draw_coins(cs, seed=2)
    run = train_recipe_with_gradient_canaries(_recipe(), X, y, cs, coins, seed=3)
    plain = TorchTrainer(_recipe()).fit(X, y, seed=3)
    assert run.sample_rate == 1.0 and run.steps == 1 and run.trace.shape == (2, 12)
    diff = flat_parameters(run.model.module) - flat_parameters(plain.module)
    want = np.zeros(N_PARAMS)
    want[cs.coords[coins.included]] = -0.5 * 1.0 / run.expected_batch_size
    np.testing.assert_allclose(diff, want, atol=1e-6)
    assert run.gradient_canaries_inserted == int(coins.included.sum())
    assert run.accountant_epsilon == plain.fit_info["accountant_epsilon"]
    np.testing.assert_allclose(run.trace[-1], flat_parameters(run.model.module)[cs.coords])


def test_the_scores_find_the_included_canaries_and_never_inserted_is_the_plain_run() -> None:
    """The canaries sit on first-layer weights of 10 input columns that are always 0, whose
    data gradient is 0 (quiet coordinates): only the noise and the canary move them."""
    X, y = _data(n=256)
    X = np.hstack([X, np.zeros((X.shape[0], 10))])
    hidden, d = 4, 15
    n_params = d * hidden + hidden + hidden * 2 + 2
    quiet = [h * d + j for h in range(hidden) for j in range(5, d)]
    cs = make_gradient_canaries(n_params, 30, seed=0, candidates=quiet)
    coins = draw_coins(cs, seed=4)
    recipe = _recipe(
        factory_kwargs={"n_features": d, "n_classes": 2, "hidden": hidden},
        epochs=4,
        batch_size=64,
        dp={"noise_multiplier": 0.3},
    )
    run = train_recipe_with_gradient_canaries(recipe, X, y, cs, coins, seed=0)
    assert run.steps >= 10 and run.trace.shape == (run.steps + 1, 30)
    s = run.scores()
    inc = coins.included
    assert (s[inc][:, None] > s[~inc][None, :]).mean() > 0.95
    r = audit_canaries(cs, coins, s, access="iterates", accountant_epsilon=run.accountant_epsilon)
    assert r.epsilon_lower_bound > 0.0
    never = train_recipe_with_gradient_canaries(recipe, X, y, cs, coins, seed=0, insert=False)
    plain = TorchTrainer(recipe).fit(X, y, seed=0)
    assert never.gradient_canaries_inserted == 0
    np.testing.assert_array_equal(
        flat_parameters(never.model.module), flat_parameters(plain.module)
    )


def test_bad_recipes_and_sets_are_refused() -> None:
    X, y = _data()
    cs = make_gradient_canaries(N_PARAMS, 4, seed=1)
    coins = draw_coins(cs, seed=2)
    with pytest.raises(InvalidInputError, match="dp section"):
        train_recipe_with_gradient_canaries(_recipe(dp=None), X, y, cs, coins)
    with pytest.raises(InvalidInputError, match="plain SGD"):
        train_recipe_with_gradient_canaries(_recipe(optimizer="adam"), X, y, cs, coins)
    with pytest.raises(InvalidInputError, match="plain SGD"):
        train_recipe_with_gradient_canaries(_recipe(momentum=0.9), X, y, cs, coins)
    other = make_gradient_canaries(N_PARAMS + 5, 4, seed=1)
    with pytest.raises(InvalidInputError, match="trainable parameters"):
        train_recipe_with_gradient_canaries(_recipe(), X, y, other, draw_coins(other, seed=0))
    with pytest.raises(InvalidInputError, match="trainable parameters"):
        train_recipe_with_gradient_canaries(
            _recipe(), X, y, other, draw_coins(other, seed=0), insert=False
        )
    text = make_text_canaries(4)
    with pytest.raises(InvalidInputError, match="gradient canaries"):
        train_recipe_with_gradient_canaries(_recipe(), X, y, text, draw_coins(text, seed=0))
    with pytest.raises(InvalidInputError, match="coins of another set"):
        train_recipe_with_gradient_canaries(_recipe(), X, y, cs, draw_coins(other, seed=0))
    with pytest.raises(InvalidInputError, match="private_hook"):
        TorchTrainer(_recipe(dp=None)).fit(X, y, seed=0, private_hook=lambda *a: None)
