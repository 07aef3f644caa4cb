"""Many small convolutional networks trained at once: stacked on an accelerator, split
between threads on a CPU.

The reference models of LiRA and RMIA and the shadow models of Ye et al.'s attacks
(Carlini et al. 2022, Sec. VI; Zarifzadeh et al. 2024, Sec. 5; Ye et al. 2022, Sec. 4) are
copies of the target's recipe trained on other subsets. For a CNN the two ways of
training ``K`` of them together behave very differently on the two kinds of device:

* **CUDA**: the stacked computation of :func:`privaudit.models.torch_batched.fit_many`
  (``vmap`` of ``functional_call``; torch's batching rule turns ``K`` convolutions with
  their own weights into one grouped convolution, ``groups=K``) keeps the device busy
  where one small CNN would not.
* **CPU**: the same grouped convolution is slower per image than ``K`` separate
  convolutions (measured on the CIFAR-10 CNN, one torch thread: 0.86 ms per image
  trained one by one, 1.6 ms stacked by four and 2.0 ms by eight; numbers in
  ``docs/cifar10.md``). The models are therefore trained one by one by the trainer's own
  loop (:func:`privaudit.models.torch_recipe.train_module`), and the CPU's torch threads
  split the models instead of each operation: ``n`` Python threads each train their share
  with torch running every operation on one thread (its kernels release the GIL), as
  the MLP kernel of :mod:`privaudit.models.torch_batched` does. The initial weights are
  drawn in the calling thread before (``recipe.build(seed_k)`` seeds torch's global
  generator), so every model is exactly the model ``trainer.fit`` gives with one torch
  thread: the same weights, batches and augmentation for its seed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import as_float_array, as_label_array, fail
from privaudit.models.torch_recipe import (
    TorchModel,
    TorchRecipe,
    _set_worker_threads,
    require_torch,
    resolve_device,
)

__all__ = ["fit_many_conv", "has_conv"]


def has_conv(recipe: TorchRecipe) -> bool:
    """Whether the recipe's network contains a convolution (built once, seed 0, without
    touching torch's global generator)."""
    torch = require_torch()
    module = recipe.build(seed=0)
    return any(isinstance(m, torch.nn.modules.conv._ConvNd) for m in module.modules())


def fit_many_conv(
    trainer: Any,
    X: NDArray[np.float64],
    y: NDArray[np.int64],
    subsets: Sequence[NDArray[np.int64]],
    seeds: Sequence[int],
    *,
    n_classes: int | None = None,
    n_threads: int | None = None,
) -> list[TorchModel]:
    """Train one CNN per ``(subset, seed)`` of ``(X, y)`` (see the module docstring).

    Parameters
    ----------
    trainer : TorchTrainer
        Its recipe is used for every model.
    X, y : arrays
        All records; ``subsets[k]`` are the row positions model ``k`` trains on.
    subsets : sequence of int arrays
    seeds : sequence of int
        One per model.
    n_classes : int, optional
    n_threads : int, optional
        CPU threads that split the models (default: torch's thread count, at most the
        number of models).

    Returns
    -------
    list of TorchModel
        ``models[k]`` is ``trainer.fit(X[subsets[k]], y[subsets[k]], seed=seeds[k])``
        (bit for bit on a CPU with one torch thread; up to rounding otherwise).
    """
    torch = require_torch()
    X = as_float_array(X, "X", ndim=2)
    y = as_label_array(y, "y")
    if len(subsets) != len(seeds):
        raise fail("seeds", f"{len(subsets)} seeds (one per subset)", len(seeds))
    subs = [np.asarray(s, dtype=np.int64) for s in subsets]
    for k, s in enumerate(subs):
        if s.ndim != 1 or s.size == 0 or s.min() < 0 or s.max() >= y.size:
            raise fail(f"subsets[{k}]", f"non-empty row positions in [0, {y.size})", s.shape)
    r: TorchRecipe = trainer.recipe
    _set_worker_threads()
    dev = resolve_device(r.device)
    if dev != "cpu" or r.dp is not None:
        from privaudit.models.torch_batched import fit_many

        return fit_many(trainer, X, y, subs, [int(s) for s in seeds], n_classes=n_classes)
    C = n_classes if n_classes is not None else trainer.n_classes
    C = int(y.max()) + 1 if C is None else int(C)
    if n_threads is not None and (isinstance(n_threads, bool) or int(n_threads) < 1):
        raise fail("n_threads", "a positive integer", repr(n_threads))
    K = len(subs)
    n_par = int(n_threads) if n_threads is not None else int(torch.get_num_threads())
    n_par = max(1, min(n_par, K))
    from privaudit.models.torch_recipe import train_module

    modules = [r.build(int(s)) for s in seeds]  # global RNG: in this thread, in order

    def one(k: int) -> TorchModel:
        model = train_module(r, modules[k], X[subs[k]], y[subs[k]], int(seeds[k]), C, "cpu")
        model.fit_info["batched"] = True
        return model

    if n_par == 1:
        return [one(k) for k in range(K)]
    from concurrent.futures import ThreadPoolExecutor

    shares = [c.tolist() for c in np.array_split(np.arange(K), n_par) if c.size]
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with ThreadPoolExecutor(max_workers=len(shares)) as pool:
            parts = list(pool.map(lambda share: [one(k) for k in share], shares))
    finally:
        torch.set_num_threads(before)
    return [m for part in parts for m in part]
