"""Where to put Dirac canaries: the coordinates the real data hardly move.

A Dirac canary's score reads its coordinate's update; the real records' summed clipped
gradient on that coordinate is noise to the score (and a drift that differs from coordinate
to coordinate). Placing the canaries where that sum is smallest makes them stand out:
Nasr et al. (USENIX Security 2023, Sec. 5) pick the Dirac coordinate by how little the
training gradients touch it (their exact rule -- which statistic, over which run -- is not
restated here; this module uses the one below). :func:`quiet_coordinates` ranks the
trainable coordinates of a model by the mean absolute **batch sum** of per-sample
clipped gradients, divided by the clipping norm, over batches of public (or any
coin-independent) records. Choosing the coordinates from data that do not depend on the
coins keeps the audit valid (the coins stay independent of everything else).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privaudit._validation import as_float_array, as_label_array, check_positive_int

__all__ = ["quiet_coordinates"]


def quiet_coordinates(
    module: Any,
    X: ArrayLike,
    y: ArrayLike,
    *,
    m: int,
    max_grad_norm: float = 1.0,
    batch_size: int = 256,
    n_batches: int = 8,
    seed: int = 0,
) -> NDArray[np.int64]:
    """The ``m`` trainable coordinates with the smallest clipped real-gradient sums.

    Parameters
    ----------
    module : torch.nn.Module
        The model at the start of the private run (cross-entropy loss).
    X, y : array_like
        Records that do not depend on the coins (public data).
    m : int
        Number of coordinates to return (sorted).
    max_grad_norm, batch_size, n_batches, seed
        Clipping norm, size and number of the random batches scored.

    Returns
    -------
    ndarray of int
        Flat indices over ``module.parameters()`` (trainable ones), as
        :func:`~privaudit.canaries.make_gradient_canaries` takes them as ``candidates``.
    """
    import torch
    from torch.func import functional_call, grad, vmap

    Xa = torch.tensor(as_float_array(X, "X", ndim=2), dtype=torch.float32)
    ya = torch.tensor(as_label_array(y, "y"), dtype=torch.long)
    m = check_positive_int(m, "m")
    names = [n for n, p in module.named_parameters() if p.requires_grad]
    params = {n: p.detach() for n, p in module.named_parameters() if p.requires_grad}

    def loss(p: dict[str, Any], x: Any, t: Any) -> Any:
        out = functional_call(module, p, (x.unsqueeze(0),))
        return torch.nn.functional.cross_entropy(out, t.unsqueeze(0))

    per_sample = vmap(grad(loss), in_dims=(None, 0, 0))
    gen = torch.Generator().manual_seed(seed)
    total = torch.zeros(sum(int(params[n].numel()) for n in names), dtype=torch.float64)
    for _ in range(n_batches):
        idx = torch.randperm(len(ya), generator=gen)[:batch_size]
        g = per_sample(params, Xa[idx], ya[idx])
        flat = torch.cat([g[n].reshape(len(idx), -1) for n in names], dim=1).double()
        norms = flat.norm(dim=1, keepdim=True)
        flat = flat * torch.clamp(max_grad_norm / (norms + 1e-12), max=1.0)
        total += flat.sum(dim=0).abs() / max_grad_norm
    order = np.argsort(total.numpy(), kind="stable")[:m]
    return np.sort(order).astype(np.int64)
