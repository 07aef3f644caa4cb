"""Gradient canaries in the DP-SGD run of a privaudit torch recipe (a ``dp:`` section).

privaudit's own torch recipes take the gradient canaries by the same path as a user's
Opacus loop: :func:`train_recipe_with_gradient_canaries` trains
the recipe with :meth:`TorchTrainer.fit <privaudit.models.torch_models.TorchTrainer.fit>`
(the one DP-SGD loop of the recipes, :func:`privaudit.models.torch_dp.fit_dp`) and hands it
a ``private_hook`` that attaches a :class:`~privaudit.canaries.GradientCanaryInjector` to
Opacus' ``DPOptimizer`` (each included Dirac canary added, at the run's Poisson rate, to
the clipped sum before the noise: Steinke, Nasr, Jagielski 2023, Sec. 7; Nasr et al. 2023,
Sec. 3) and records the canary coordinates after every step in an
:class:`~privaudit.canaries.IterateLog`: no second training loop. The white-box scores
(:func:`~privaudit.canaries.gradient_canary_scores`) assume plain SGD, so the recipe must
use ``optimizer: sgd`` without momentum or weight decay.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from privaudit._validation import fail
from privaudit.canaries.dpsgd import _DPRun
from privaudit.canaries.opacus_hook import GradientCanaryInjector, IterateLog
from privaudit.canaries.sets import CanaryCoins, CanarySet

__all__ = ["RecipeCanaryRun", "train_recipe_with_gradient_canaries"]


@dataclasses.dataclass(frozen=True, eq=False)
class RecipeCanaryRun(_DPRun):
    """A recipe's DP-SGD run with gradient canaries: the model and what the audit needs.

    Attributes
    ----------
    model : TorchModel
        The trained model (its ``fit_info`` holds the accountant's eps, as for any DP
        recipe).
    trace : ndarray, shape (steps + 1, m)
        The canaries' coordinates before training and after every step.
    accountant_epsilon, delta, noise_multiplier, sample_rate, expected_batch_size, lr,
    max_grad_norm : float
        The run's privacy and optimisation parameters.
    steps : int
        Optimizer steps taken.
    gradient_canaries_inserted : int
        Canary gradients added over the run (0 with ``insert=False``).
    """

    model: Any


class _CanaryHook:
    """The ``private_hook`` of :func:`train_recipe_with_gradient_canaries`."""

    def __init__(self, canaries: CanarySet, coins: CanaryCoins, insert: bool, seed: int) -> None:
        self.canaries, self.coins, self.insert, self.seed = canaries, coins, insert, seed
        self.injector: GradientCanaryInjector | None = None
        self.log = IterateLog(canaries.coords)
        self.optimizer: Any = None
        self.sample_rate = 0.0
        self.steps = 0

    def __call__(self, module: Any, optimizer: Any, sample_rate: float) -> _CanaryHook:
        self.optimizer, self.sample_rate = optimizer, sample_rate
        if self.insert:
            self.injector = GradientCanaryInjector(
                optimizer, self.canaries, self.coins, sample_rate=sample_rate, seed=self.seed
            )
            self.injector.attach()
        else:  # the coordinates must still exist
            from privaudit.canaries.opacus_hook import _Locator

            n = _Locator(optimizer.params, self.canaries.coords).total
            if n != self.canaries.n_params:
                raise fail(
                    "canaries", f"a set made for {n} trainable parameters", self.canaries.n_params
                )
        self.log.record(module)
        return self

    def after_step(self, module: Any) -> None:
        self.steps += 1
        self.log.record(module)

    def close(self) -> None:
        if self.injector is not None:
            self.injector.detach()


def train_recipe_with_gradient_canaries(
    recipe: Any,
    X: ArrayLike,
    y: ArrayLike,
    canaries: CanarySet,
    coins: CanaryCoins,
    *,
    seed: int = 0,
    n_classes: int | None = None,
    insert: bool = True,
) -> RecipeCanaryRun:
    """Train a DP-SGD torch recipe on ``X, y`` with the included gradient canaries.

    Parameters
    ----------
    recipe : TorchRecipe
        With a ``dp`` section and ``optimizer="sgd"``, no momentum, no weight decay.
    X, y : array_like
        The training records.
    canaries : CanarySet
        Gradient canaries made for the recipe's trainable parameters
        (``make_gradient_canaries(n_params, m)``, ``n_params`` of ``recipe.build()``).
    coins : CanaryCoins
        Their inclusion coins.
    seed : int
        Seed of the training run (as for :meth:`TorchTrainer.fit`); the canaries' own
        Poisson sampling is seeded from ``seed + 1``.
    n_classes : int, optional
        Number of classes (default: from ``y``).
    insert : bool
        False: log the coordinates without ever adding the canaries (the "never inserted"
        validity check).

    Returns
    -------
    RecipeCanaryRun

    Raises
    ------
    InvalidInputError
        Not a gradient set, coins of another set, a recipe without ``dp`` or not plain
        SGD, or canaries made for another number of parameters.
    """
    from privaudit.models.torch_models import TorchTrainer
    from privaudit.models.torch_recipe import TorchRecipe

    if not isinstance(recipe, TorchRecipe):
        raise fail("recipe", "a TorchRecipe", type(recipe).__name__)
    if recipe.dp is None:
        raise fail("recipe", "a DP-SGD recipe (a dp section)", "no dp section")
    if recipe.optimizer != "sgd" or recipe.momentum != 0 or recipe.weight_decay != 0:
        raise fail(
            "recipe",
            "plain SGD (optimizer sgd, momentum 0, weight_decay 0): the canary scores assume it",
            f"{recipe.optimizer}, momentum {recipe.momentum}, weight_decay {recipe.weight_decay}",
        )
    if not canaries.is_gradient:
        raise fail("canaries", "gradient canaries", f"a {canaries.kind!r} set")
    coins.check_matches(canaries)
    hook = _CanaryHook(canaries, coins, insert, int(seed) + 1)
    model = TorchTrainer(recipe).fit(
        np.asarray(X), np.asarray(y), seed=seed, n_classes=n_classes, private_hook=hook
    )
    info = model.fit_info
    return RecipeCanaryRun(
        model=model,
        trace=hook.log.trace,
        accountant_epsilon=float(info["accountant_epsilon"]),
        delta=float(info["delta"]),
        noise_multiplier=float(info["noise_multiplier"]),
        sample_rate=float(hook.sample_rate),
        expected_batch_size=float(hook.optimizer.expected_batch_size),
        lr=float(recipe.lr),
        max_grad_norm=float(info["max_grad_norm"]),
        steps=hook.steps,
        gradient_canaries_inserted=0 if hook.injector is None else hook.injector.inserted,
    )
