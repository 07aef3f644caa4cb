"""A learned membership classifier whose training stops at the best validation epoch.

PANORAMIA's MIA and baseline (Kazmi et al. 2024, Sec. 3 and App. C) are networks that
combine an encoder of the record ``x`` with per-example (images) or per-token (text)
loss features of a model (the target ``f`` for the MIA, the helper ``h`` for the
baseline). Both are *selected* on a validation split: after every epoch the caller's
``criterion`` (PANORAMIA: the bound itself on the validation scores) is evaluated, and
the returned network is a copy of the state at the best epoch -- never simply the last
one (the authors' released code kept the last state, which silently weakens both
classifiers by different amounts and so biases ``eps_tilde`` either way).

Training: binary cross-entropy on logits (label ``True`` = member), Adam with optional
L2 weight decay, mini-batches in a fresh permutation each epoch. Everything random comes
from ``seed``: the initial weights (``torch.manual_seed`` inside ``fork_rng``, so the
caller's global state is untouched) and the batch order (a NumPy generator). On CPU two
fits with the same seed and inputs return the same weights bit for bit.

``torch`` is imported only inside the functions.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import as_bool_array, check_positive_int, fail
from privaudit.models.torch_recipe import require_torch, resolve_device
from privaudit.runtime.seeds import derive_rng

__all__ = ["fit_selected_net", "predict_net"]

Criterion = Callable[[NDArray[np.float64], NDArray[np.bool_]], float]


def _check_inputs(inputs: Sequence[Any], name: str) -> list[NDArray[np.float32]]:
    if isinstance(inputs, np.ndarray) or len(inputs) == 0:
        raise fail(
            name, "a non-empty sequence of arrays (one per network input)", type(inputs).__name__
        )
    arrays = [np.ascontiguousarray(np.asarray(a, dtype=np.float32)) for a in inputs]
    n = arrays[0].shape[0] if arrays[0].ndim else -1
    for i, a in enumerate(arrays):
        if a.ndim == 0 or a.shape[0] != n:
            raise fail(f"{name}[{i}]", f"an array with {n} rows", a.shape)
        if not np.isfinite(a).all():
            raise fail(f"{name}[{i}]", "finite values", "NaN or infinity")
    return arrays


def predict_net(
    module: Any,
    inputs: Sequence[NDArray[Any]],
    *,
    batch_size: int = 1024,
    device: str = "cpu",
) -> NDArray[np.float64]:
    """Logits (higher = member) of ``module(*batch)`` over ``inputs``, in eval mode."""
    torch = require_torch()
    arrays = _check_inputs(inputs, "inputs")
    check_positive_int(batch_size, "batch_size")
    dev = resolve_device(device)
    module.eval()
    out: list[NDArray[np.float64]] = []
    n = arrays[0].shape[0]
    with torch.no_grad():
        for s in range(0, n, batch_size):
            batch = [torch.from_numpy(a[s : s + batch_size]).to(dev) for a in arrays]
            logit = module(*batch).reshape(-1)
            out.append(logit.double().cpu().numpy())
    return np.concatenate(out) if out else np.zeros(0)


def fit_selected_net(
    build: Callable[[], Any],
    train_inputs: Sequence[NDArray[Any]],
    train_label: NDArray[np.bool_],
    val_inputs: Sequence[NDArray[Any]],
    val_label: NDArray[np.bool_],
    *,
    criterion: Criterion,
    epochs: int = 30,
    batch_size: int = 128,
    lr: float = 1e-3,
    weight_decay: float = 0.0,
    seed: int,
    patience: int | None = None,
    device: str = "cpu",
) -> tuple[Any, dict[str, Any]]:
    """Train ``build()`` as a membership classifier and keep its best validation epoch.

    Parameters
    ----------
    build : callable
        Returns a fresh ``torch.nn.Module`` mapping ``module(*inputs_batch)`` to one logit
        per record (shape ``(batch,)`` or ``(batch, 1)``); called once, under ``seed``.
    train_inputs, val_inputs : sequence of arrays
        The network's inputs (e.g. ``(images, loss_features)``), same number of rows.
    train_label, val_label : bool arrays
        ``True`` = member. Both classes must occur in each.
    criterion : callable ``(val_scores, val_label) -> float``
        Higher is better; evaluated after every epoch (and on the untrained network,
        epoch 0). The state of the first epoch reaching the maximum is restored.
    epochs, batch_size, lr, weight_decay : training settings (Adam).
    seed : int
        Initial weights and batch order.
    patience : int, optional
        Stop after this many epochs without a strictly better criterion (the best
        state is still the one returned).
    device : {"cpu", "cuda", "auto"}

    Returns
    -------
    module, info
        The module in eval mode holding the best epoch's weights, and
        ``{"best_epoch", "epochs_run", "criterion_by_epoch", "best_criterion",
        "n_train", "n_val"}``.
    """
    torch = require_torch()
    tr = _check_inputs(train_inputs, "train_inputs")
    va = _check_inputs(val_inputs, "val_inputs")
    if len(tr) != len(va):
        raise fail("val_inputs", f"{len(tr)} arrays, like train_inputs", len(va))
    y_tr = as_bool_array(train_label, "train_label", ndim=1)
    y_va = as_bool_array(val_label, "val_label", ndim=1)
    for name, y, x in (("train_label", y_tr, tr), ("val_label", y_va, va)):
        if y.size != x[0].shape[0]:
            raise fail(name, f"one label per record ({x[0].shape[0]})", y.size)
        if y.all() or not y.any():
            raise fail(name, "both members and non-members", f"{int(y.sum())} of {y.size} members")
    check_positive_int(epochs, "epochs")
    check_positive_int(batch_size, "batch_size")
    if not (math.isfinite(lr) and lr > 0):
        raise fail("lr", "a positive learning rate", lr)
    if patience is not None:
        check_positive_int(patience, "patience")
    dev = resolve_device(device)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        module = build()
    if not isinstance(module, torch.nn.Module):
        raise fail("build()", "a torch.nn.Module", type(module).__name__)
    module = module.to(dev)
    opt = torch.optim.Adam(module.parameters(), lr=lr, weight_decay=weight_decay)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    rng = derive_rng(int(seed), purpose="selected-net-batches")
    xs = [torch.from_numpy(a) for a in tr]
    target = torch.from_numpy(y_tr.astype(np.float32))

    def evaluate() -> float:
        value = float(criterion(predict_net(module, va, device=dev), y_va))
        if math.isnan(value):
            raise fail("criterion", "a number (higher = better)", "NaN")
        return value

    history = [evaluate()]
    best, best_epoch = history[0], 0
    best_state = copy.deepcopy(module.state_dict())
    n = y_tr.size
    for epoch in range(1, epochs + 1):
        module.train()
        perm = torch.from_numpy(rng.permutation(n))
        for s in range(0, n, batch_size):
            idx = perm[s : s + batch_size]
            opt.zero_grad()
            logit = module(*[x[idx].to(dev) for x in xs]).reshape(-1)
            loss_fn(logit, target[idx].to(dev)).backward()
            opt.step()
        history.append(evaluate())
        if history[-1] > best:
            best, best_epoch = history[-1], epoch
            best_state = copy.deepcopy(module.state_dict())
        elif patience is not None and epoch - best_epoch >= patience:
            break
    module.load_state_dict(best_state)
    module.eval()
    info: dict[str, Any] = {
        "best_epoch": best_epoch,
        "epochs_run": len(history) - 1,
        "criterion_by_epoch": history,
        "best_criterion": best,
        "n_train": int(n),
        "n_val": int(y_va.size),
    }
    return module, info
