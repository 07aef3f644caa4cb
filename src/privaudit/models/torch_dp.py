"""DP-SGD training of a :class:`~privaudit.models.torch_recipe.TorchRecipe` with Opacus.

Imported by :meth:`TorchTrainer.fit <privaudit.models.torch_models.TorchTrainer.fit>` only
when the recipe has a ``dp`` section (Opacus is the optional extra ``dp``:
``pip install "privaudit[dp]"``); the section itself is validated with the recipe.

A caller that must act inside the private run (the gradient canaries of a one-run audit,
:func:`privaudit.canaries.train_recipe_with_gradient_canaries`, which add their gradients
in the optimizer's noise step and log the iterates) passes a ``private_hook``: called once
with the module, Opacus' ``DPOptimizer`` and the Poisson rate after ``make_private``, it
returns a :class:`DPStepHook` told of every optimizer step and closed at the end, so the
training loop stays this one.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from privaudit.errors import InvalidInputError
from privaudit.models.torch_recipe import (
    TorchModel,
    TorchRecipe,
    lr_at,
    make_optimizer,
    require_torch,
)

__all__ = ["DPStepHook", "PrivateHook", "fit_dp"]


class DPStepHook(Protocol):
    """What a ``private_hook`` returns: told of every step, closed once at the end."""

    def after_step(self, module: Any) -> None:
        """Called after each optimizer step with the (unwrapped) module."""

    def close(self) -> None:
        """Called once when training ends (also on an error)."""


PrivateHook = Callable[[Any, Any, float], DPStepHook]
"""``(module, dp_optimizer, sample_rate) -> DPStepHook``, called once the run is private."""


def fit_dp(
    r: TorchRecipe,
    X: NDArray[np.float64],
    y: NDArray[np.int64],
    seed: int,
    C: int,
    dev: str,
    *,
    private_hook: PrivateHook | None = None,
) -> TorchModel:
    """DP-SGD training with Opacus (Abadi et al. 2016): per-example gradients clipped to
    ``max_grad_norm``, Gaussian noise of std ``noise_multiplier * max_grad_norm``, Poisson
    sampling at rate ``batch_size / n``; all randomness (initial weights, sampling,
    noise) from ``seed`` (``fork_rng`` + ``manual_seed``). ``private_hook``: see the
    module docstring."""
    torch = require_torch()
    engine_class = _privacy_engine_class()
    dp = dict(r.dp or {})
    data = torch.utils.data.TensorDataset(
        torch.tensor(X, dtype=torch.float32), torch.tensor(y, dtype=torch.long)
    )
    with torch.random.fork_rng(devices=[]), _opacus_warnings_ignored():
        torch.manual_seed(seed)
        module = r.build(seed).to(dev)
        module.train()
        engine, priv, opt, loader = _make_private(engine_class, r, dp, module, data)
        hook = None
        if private_hook is not None:
            hook = private_hook(module, opt, float(loader.sample_rate))
        _train_private(r, module, priv, opt, loader, dev, hook)
        eps = float(engine.get_epsilon(float(dp["delta"])))
    module.eval()
    info = {
        "n_train": int(y.size),
        "seed": int(seed),
        "device": dev,
        "epochs": r.epochs,
        "dp": True,
        "accountant_epsilon": eps,
        "delta": float(dp["delta"]),
        "noise_multiplier": float(opt.noise_multiplier),
        "max_grad_norm": float(dp["max_grad_norm"]),
        "accountant": str(dp["accountant"]),
    }
    return TorchModel(module.cpu(), C, recipe=r, fit_info=info, device=r.device)


def _privacy_engine_class() -> Any:
    """Opacus' ``PrivacyEngine``, or an error naming the extra that installs it."""
    try:
        from opacus import PrivacyEngine
    except ImportError as exc:
        raise InvalidInputError(
            "model.params.dp: expected Opacus installed (pip install 'privaudit[dp]'), found none"
        ) from exc
    return PrivacyEngine


@contextmanager
def _opacus_warnings_ignored() -> Iterator[None]:
    """Opacus' warnings silenced inside the block (its hooks fire on module outputs
    when inputs need no gradient: expected)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Full backward hook is firing")
        warnings.filterwarnings("ignore", module="opacus")
        yield


def _make_private(
    engine_class: Any, r: TorchRecipe, dp: dict[str, Any], module: Any, data: Any
) -> tuple[Any, Any, Any, Any]:
    """``(engine, private module, DP optimizer, Poisson loader)``: the recipe's optimizer
    and mini-batches of ``data`` made private by a new Opacus engine with the recipe's
    accountant, at the given noise multiplier or at the one that spends
    ``target_epsilon`` over the recipe's epochs."""
    torch = require_torch()
    opt = make_optimizer(r, module.parameters())
    loader = torch.utils.data.DataLoader(data, batch_size=r.batch_size)
    engine = engine_class(accountant=dp["accountant"])
    common = {
        "module": module,
        "optimizer": opt,
        "data_loader": loader,
        "max_grad_norm": float(dp["max_grad_norm"]),
    }
    if "target_epsilon" in dp:
        priv, opt, loader = engine.make_private_with_epsilon(
            **common,
            target_epsilon=float(dp["target_epsilon"]),
            target_delta=float(dp["delta"]),
            epochs=r.epochs,
        )
    else:
        priv, opt, loader = engine.make_private(
            **common, noise_multiplier=float(dp["noise_multiplier"])
        )
    return engine, priv, opt, loader


def _train_private(
    r: TorchRecipe,
    module: Any,
    priv: Any,
    opt: Any,
    loader: Any,
    dev: str,
    hook: DPStepHook | None,
) -> None:
    """The DP-SGD epochs: a step per non-empty Poisson batch, the learning rate of the
    recipe's schedule over the expected number of batches; ``hook`` is told of every
    step (with the unwrapped ``module``) and closed at the end, also on an error."""
    torch = require_torch()
    n_steps, step = r.epochs * len(loader), 0  # Poisson batches: the expected count
    try:
        for _ in range(r.epochs):
            for xb, yb in loader:
                if r.lr_schedule != "constant":
                    for group in opt.param_groups:
                        group["lr"] = lr_at(r, min(step, n_steps - 1), n_steps)
                step += 1
                if yb.numel() == 0:
                    continue
                opt.zero_grad(set_to_none=True)
                loss = torch.nn.functional.cross_entropy(priv(xb.to(dev)), yb.to(dev))
                loss.backward()
                opt.step()
                if hook is not None:
                    hook.after_step(module)
    finally:
        if hook is not None:
            hook.close()
