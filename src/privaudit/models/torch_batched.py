"""Many small torch models trained as one batched computation.

Reference and shadow models of small networks dominate the cost of every
reference-based attack (LiRA, RMIA, attack R need tens to hundreds of them; Carlini et
al. 2022, Sec. VI; Zarifzadeh et al. 2024, Sec. 5). Trained one at a time, a small MLP
spends most of each step in Python and kernel-launch overhead. :func:`fit_many` trains
``K`` of them at once: their parameters are stacked along a leading model axis
(:func:`torch.func.stack_module_state`), the forward pass of all ``K`` networks on
their own mini-batches is one :func:`torch.vmap` of :func:`torch.func.functional_call`,
one backward pass gives every model's gradient (the models share no parameter, so the
gradient of the sum of their losses is each model's own gradient), and the optimizer
update is applied to the stacked tensors.

Each model keeps its own training subset, seed and mini-batch order, and the same
recipe as :meth:`~privaudit.models.torch_models.TorchTrainer.fit`: the initial weights
come from ``recipe.build(seed_k)``, the batches from
:func:`~privaudit.models.torch_recipe.batch_order` with ``default_rng(seed_k)``, the
augmentation from the same generator afterwards. Models whose subsets differ in size
take different numbers of steps: at a step where model ``k`` has no batch left its
parameters and optimizer state are left unchanged (masked update), and a partial batch
is padded with masked rows (the loss is the mean over the real rows). The optimizers
(SGD with momentum, Adam, AdamW) are re-implemented on the stacked tensors with the
formulas of ``torch.optim``; one-by-one and batched training agree up to floating-point
rounding (the tests compare them).

MLPs (``nn.Sequential`` of ``Linear`` layers and elementwise activations -- ReLU, tanh,
sigmoid, GELU, LeakyReLU, ELU, SiLU, ... and identities such as ``Dropout(p=0)``; see
:mod:`privaudit.models.torch_mlp_kernel`), with the cross-entropy loss and no
augmentation, take a faster path (``kernel="mlp"``): the forward and backward passes are
written out with batched matrix products (:func:`torch.baddbmm` / :func:`torch.bmm` over
the model axis) instead of ``vmap`` and autograd, which spend most of a small network's
step in dispatch overhead, and every mini-batch of every model is gathered with one
index operation from index arrays prepared before training (the same batches as
:func:`batch_order`). The gradients are those autograd computes (each activation's
backward is the ATen kernel autograd calls), up to rounding. With several torch threads
on the CPU the models are split between as many Python threads, each running every
operation on one torch thread (no synchronisation inside a step).

Where batching does not apply (modules with buffers such as batch norm's running
statistics, DP-SGD recipes), :func:`fit_many` falls back to one fit per model.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import as_float_array, as_label_array, check_positive_int, fail
from privaudit.models.torch_mlp_kernel import LinearOp, Op, mlp_ops, train_mlp
from privaudit.models.torch_recipe import (
    TorchModel,
    TorchRecipe,
    _set_worker_threads,
    augment_batch,
    batch_order,
    lr_at,
    require_torch,
    resolve_device,
)

__all__ = ["KERNELS", "RecipeTrainer", "batchable", "fit_many", "mlp_layers"]

#: ``fit_many`` kernels: ``"auto"`` (``"mlp"`` where it applies, else ``"vmap"``).
KERNELS = ("auto", "mlp", "vmap")


class RecipeTrainer(Protocol):
    """What :func:`fit_many` needs of a trainer: the recipe every model follows, the
    label space, and the one-by-one fit it falls back to where batching does not apply
    (e.g. :class:`~privaudit.models.torch_models.TorchTrainer`)."""

    @property
    def recipe(self) -> TorchRecipe: ...

    @property
    def n_classes(self) -> int | None: ...

    def fit(
        self,
        X: NDArray[np.float64],
        y: NDArray[np.int64],
        *,
        seed: int,
        n_classes: int | None = None,
    ) -> TorchModel: ...


def batchable(module: Any) -> bool:
    """Whether a module can be trained stacked: no buffers (no running statistics)."""
    return not any(True for _ in module.buffers())


def mlp_layers(module: Any) -> list[tuple[str, str | None]] | None:
    """``[(weight name, bias name or None), ...]`` of the ``Linear`` layers of a network
    the hand-written kernel covers (a ``Sequential`` of ``Linear`` layers and
    elementwise activations, :func:`~privaudit.models.torch_mlp_kernel.mlp_ops`); None
    for any other module."""
    ops = mlp_ops(module)
    if ops is None:
        return None
    return [(op.weight, op.bias) for op in ops if isinstance(op, LinearOp)]


def fit_many(
    trainer: RecipeTrainer,
    X: NDArray[np.float64],
    y: NDArray[np.int64],
    subsets: Sequence[NDArray[np.int64]],
    seeds: Sequence[int],
    *,
    n_classes: int | None = None,
    max_models: int = 64,
    kernel: str = "auto",
) -> list[TorchModel]:
    """Train one model per ``(subset, seed)`` of ``(X, y)``, batched where possible.

    Parameters
    ----------
    trainer : RecipeTrainer
        E.g. a :class:`~privaudit.models.torch_models.TorchTrainer`; its recipe is used
        for every model.
    X, y : arrays
        All records; ``subsets[k]`` are the row positions model ``k`` trains on.
    subsets : sequence of int arrays
    seeds : sequence of int
        One per model.
    n_classes : int, optional
    max_models : int
        Models trained together per group (memory bound).
    kernel : {"auto", "mlp", "vmap"}
        ``"mlp"``: the hand-written batched forward/backward of plain MLP stacks (see
        the module docstring; refused for other networks); ``"vmap"``: ``vmap`` of
        ``functional_call`` and autograd, for any network without buffers; ``"auto"``:
        ``"mlp"`` where it applies.

    Returns
    -------
    list of TorchModel
        ``models[k]`` equals (up to rounding) ``trainer.fit(X[subsets[k]], y[subsets[k]],
        seed=seeds[k])``.
    """
    X = as_float_array(X, "X", ndim=2)
    y = as_label_array(y, "y")
    if len(subsets) != len(seeds):
        raise fail("seeds", f"{len(subsets)} seeds (one per subset)", len(seeds))
    check_positive_int(max_models, "max_models")
    if kernel not in KERNELS:
        raise fail("kernel", " or ".join(KERNELS), repr(kernel))
    subs = [np.asarray(s, dtype=np.int64) for s in subsets]
    for k, s in enumerate(subs):
        if s.ndim != 1 or s.size == 0 or s.min() < 0 or s.max() >= y.size:
            raise fail(f"subsets[{k}]", f"non-empty row positions in [0, {y.size})", s.shape)
    C = n_classes if n_classes is not None else trainer.n_classes
    C = int(y.max()) + 1 if C is None else int(C)
    out: list[TorchModel] = []
    for start in range(0, len(subs), max_models):
        out.extend(
            _fit_group(
                trainer,
                X,
                y,
                subs[start : start + max_models],
                [int(s) for s in seeds[start : start + max_models]],
                C,
                kernel,
            )
        )
    return out


def _fit_group(
    trainer: RecipeTrainer,
    X: NDArray[np.float64],
    y: NDArray[np.int64],
    subs: list[NDArray[np.int64]],
    seeds: list[int],
    C: int,
    kernel: str = "auto",
) -> list[TorchModel]:
    """Train one group of models: one by one where batching does not apply, else stacked,
    with the hand-written MLP kernel (the models split between Python threads where the
    CPU has several torch threads) or with ``vmap`` and autograd."""
    torch = require_torch()
    from torch.func import stack_module_state

    _set_worker_threads()
    r = trainer.recipe
    dev = resolve_device(r.device)
    modules = [r.build(s) for s in seeds]
    if len(modules) == 1 or r.dp is not None or not all(batchable(m) for m in modules):
        return [
            trainer.fit(X[s], y[s], seed=seed, n_classes=C)
            for s, seed in zip(subs, seeds, strict=True)
        ]
    K = len(modules)
    for m in modules:
        m.to(dev).train()
    ops = _kernel_ops(r, modules[0], kernel)
    params, _ = stack_module_state(modules)
    if ops is None:
        params = _train_vmap(r, params, modules[0], X, y, subs, seeds, dev)
        return _unstack(modules, params, r, subs, seeds, dev, C)
    params = {k: v.detach().clone().contiguous() for k, v in params.items()}
    n_par = min(int(torch.get_num_threads()), K) if dev == "cpu" else 1
    if n_par > 1:
        return _train_mlp_threads(r, params, ops, X, y, subs, seeds, modules, C, n_par)
    train_mlp(r, params, ops, X, y, subs, seeds, dev, _optimizer_of(r, K))
    return _unstack(modules, params, r, subs, seeds, dev, C)


def _kernel_ops(r: Any, module: Any, kernel: str) -> list[Op] | None:
    """The operations the hand-written MLP kernel trains the group with, or None where
    the ``vmap`` path trains it (asked for, or the kernel does not apply); ``kernel="mlp"``
    is refused where the kernel does not apply.

    The kernel covers a ``Sequential`` of ``Linear`` layers and elementwise activations
    (:func:`~privaudit.models.torch_mlp_kernel.mlp_ops`) with the cross-entropy loss, no
    augmentation and a constant learning rate (its updates take one constant rate).
    """
    ops = mlp_ops(module)
    applies = (
        ops is not None
        and r.loss == "cross_entropy"
        and r.augmentation == "none"
        and r.lr_schedule == "constant"
    )
    if kernel == "mlp" and not applies:
        raise fail(
            "kernel",
            "'auto' or 'vmap' for this recipe ('mlp' needs a Sequential of Linear layers and "
            "elementwise activations, the cross-entropy loss, no augmentation and a constant "
            "learning rate)",
            "'mlp'",
        )
    return ops if applies and kernel != "vmap" else None


def _train_vmap(
    r: Any,
    stacked: dict[str, Any],
    module: Any,
    X: NDArray[np.float64],
    y: NDArray[np.int64],
    subs: list[NDArray[np.int64]],
    seeds: list[int],
    dev: str,
) -> dict[str, Any]:
    """Train the stacked parameters of ``module``'s network with ``vmap`` and autograd;
    returns the trained parameters.

    Each model draws its mini-batch order (:func:`batch_order`) and then its
    augmentation from ``default_rng`` of its own seed; at every step each model takes its
    own batch (none once its run has ended: its update is masked), at its own point of
    the learning-rate schedule.
    """
    torch = require_torch()
    params = {k: v.detach().clone().requires_grad_(True) for k, v in stacked.items()}
    forward = _stacked_forward(module)
    rngs = [np.random.default_rng(s) for s in seeds]
    orders = [
        batch_order(s.size, r.batch_size, r.epochs, g) for s, g in zip(subs, rngs, strict=True)
    ]
    Xf = X.astype(np.float32)
    state = _BatchedOptimizer(r, params, len(subs))
    for step in range(max(len(o) for o in orders)):
        if r.lr_schedule != "constant":  # each model at its own step of its own run
            state.lr = torch.tensor(
                [lr_at(r, min(step, len(o) - 1), len(o)) for o in orders],
                dtype=torch.float32,
                device=dev,
            )
        xb, yb, mask = _step_batches(r, Xf, y, subs, orders, rngs, step)
        xt = torch.from_numpy(xb).to(dev)
        yt = torch.from_numpy(yb).to(dev)
        mt = torch.from_numpy(mask).to(dev)
        per_model = _masked_losses(forward(params, xt), yt, mt)
        grads = torch.autograd.grad(per_model.sum(), list(params.values()))
        active = mt.sum(1) > 0
        state.step(dict(zip(params.keys(), grads, strict=True)), active)
    return params


def _stacked_forward(module: Any) -> Any:
    """``(stacked parameters, (K, batch, ...) inputs) -> (K, batch, C) logits``: the
    forward pass of every model at once, :func:`torch.vmap` of
    :func:`torch.func.functional_call` on a weightless (``meta``) copy of ``module``."""
    torch = require_torch()
    from torch.func import functional_call

    base = copy.deepcopy(module).to("meta")

    def call(p: dict[str, Any], xb: Any) -> Any:
        return functional_call(base, (p,), (xb,))

    return torch.vmap(call)


def _step_batches(
    r: Any,
    Xf: NDArray[np.float32],
    y: NDArray[np.int64],
    subs: list[NDArray[np.int64]],
    orders: list[list[NDArray[np.int64]]],
    rngs: list[np.random.Generator],
    step: int,
) -> tuple[NDArray[np.float32], NDArray[np.int64], NDArray[np.float32]]:
    """Every model's mini-batch of ``step``, padded to ``batch_size`` rows: the inputs
    ``(K, batch_size, d)`` (augmented with the model's own generator), the labels and
    the mask of real rows ``(K, batch_size)``; all zero for a model whose run has
    ended."""
    K, bs = len(subs), r.batch_size
    xb = np.zeros((K, bs, Xf.shape[1]), dtype=np.float32)
    yb = np.zeros((K, bs), dtype=np.int64)
    mask = np.zeros((K, bs), dtype=np.float32)
    for k in range(K):
        if step >= len(orders[k]):
            continue
        rows = subs[k][orders[k][step]]
        block = Xf[rows]
        if r.augmentation != "none" and r.input_shape is not None:
            block = augment_batch(block, r.input_shape, r.augmentation, r.max_shift, rngs[k])
        xb[k, : rows.size] = block
        yb[k, : rows.size] = y[rows]
        mask[k, : rows.size] = 1.0
    return xb, yb, mask


def _masked_losses(logits: Any, yt: Any, mt: Any) -> Any:
    """Each model's cross-entropy loss, ``(K,)``: the mean over the real rows (``mt``) of
    its padded batch (zero for a model without a batch)."""
    torch = require_torch()
    K, bs = mt.shape
    ce = torch.nn.functional.cross_entropy(
        logits.reshape(K * bs, -1), yt.reshape(-1), reduction="none"
    ).reshape(K, bs)
    return (ce * mt).sum(1) / mt.sum(1).clamp_min(1.0)


def _unstack(
    modules: list[Any],
    params: dict[str, Any],
    r: Any,
    subs: list[NDArray[np.int64]],
    seeds: list[int],
    dev: str,
    C: int,
) -> list[TorchModel]:
    """Model k's slice of the stacked parameters, as a :class:`TorchModel`."""
    torch = require_torch()
    out = []
    for k, m in enumerate(modules):
        with torch.no_grad():
            m.load_state_dict({name: p[k].detach().clone() for name, p in params.items()})
        m.eval()
        info = {
            "n_train": int(subs[k].size),
            "seed": int(seeds[k]),
            "device": dev,
            "epochs": r.epochs,
            "batched": True,
        }
        out.append(TorchModel(m.cpu(), C, recipe=r, fit_info=info, device=r.device))
    return out


def _train_mlp_threads(
    r: Any,
    params: dict[str, Any],
    ops: list[Op],
    X: NDArray[np.float64],
    y: NDArray[np.int64],
    subs: list[NDArray[np.int64]],
    seeds: list[int],
    modules: list[Any],
    C: int,
    n_par: int,
) -> list[TorchModel]:
    """The CPU's threads split the models instead of each operation.

    Each of ``n_par`` Python threads trains its own share of the stacked models with the
    hand-written kernel while torch runs every operation on one thread (its kernels
    release the GIL): the threads never wait for each other, whereas splitting the
    small batched matrix products of one step across threads synchronises them several
    times per step. The initial weights (global RNG) were drawn before, in this thread;
    every model gets the same computation as when all train together.
    """
    from concurrent.futures import ThreadPoolExecutor

    torch = require_torch()
    chunks = [c for c in np.array_split(np.arange(len(modules)), n_par) if c.size]
    parts = [{k: v[c].contiguous() for k, v in params.items()} for c in chunks]

    def run(j: int) -> None:
        c = chunks[j]
        train_mlp(
            r,
            parts[j],
            ops,
            X,
            y,
            [subs[i] for i in c],
            [seeds[i] for i in c],
            "cpu",
            _optimizer_of(r, int(c.size)),
        )

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with ThreadPoolExecutor(max_workers=len(chunks)) as pool:
            list(pool.map(run, range(len(chunks))))
    finally:
        torch.set_num_threads(before)
    out: list[TorchModel] = []
    for c, part in zip(chunks, parts, strict=True):
        out.extend(
            _unstack(
                [modules[i] for i in c],
                part,
                r,
                [subs[i] for i in c],
                [seeds[i] for i in c],
                "cpu",
                C,
            )
        )
    return out


def _optimizer_of(r: Any, K: int) -> Any:
    """``params -> _BatchedOptimizer(r, params, K)`` (the MLP kernel builds its own
    working copy of the parameters first)."""

    def make(params: dict[str, Any]) -> _BatchedOptimizer:
        return _BatchedOptimizer(r, params, K)

    return make


class _BatchedOptimizer:
    """SGD / Adam / AdamW of ``torch.optim`` (default betas, eps, no amsgrad, no
    dampening or Nesterov) on parameters stacked along a model axis, with a per-model
    mask: an inactive model's parameters and state are left as they are."""

    def __init__(self, recipe: Any, params: dict[str, Any], K: int) -> None:
        torch = require_torch()
        self.r = recipe
        self.params = params
        self.t = torch.zeros(K, dtype=torch.float64, device=next(iter(params.values())).device)
        self.m = {k: torch.zeros_like(v) for k, v in params.items()}
        self.v = {k: torch.zeros_like(v) for k, v in params.items()}
        self.started = torch.zeros(K, dtype=torch.bool, device=self.t.device)
        self.uniform = True
        self.n = 0
        # torch.optim's fused CPU kernel (one pass per tensor) where it exists
        self.fused = None
        if recipe.optimizer in ("adam", "adamw"):
            self.fused = getattr(torch, f"_fused_{recipe.optimizer}_", None)
        self.steps = [torch.zeros((), dtype=torch.float32) for _ in params]
        #: per-model learning rates of this step, ``(K,)`` (a scheduled recipe), or None:
        #: the recipe's constant ``lr``
        self.lr: Any = None

    def _step_all(self, grads: dict[str, Any]) -> None:
        """The update of every model at once (the formulas of ``torch.optim``)."""
        r = self.r
        self.n += 1
        self.t += 1
        self.started[:] = True
        b1, b2, eps = 0.9, 0.999, 1e-8
        if self.fused is not None:
            names = list(self.params)
            for st in self.steps:
                st.add_(1)
            try:
                self.fused(
                    [self.params[k] for k in names],
                    [grads[k].contiguous() for k in names],  # the kernel reads flat memory
                    [self.m[k] for k in names],
                    [self.v[k] for k in names],
                    [],
                    self.steps,
                    lr=float(r.lr),
                    beta1=b1,
                    beta2=b2,
                    weight_decay=float(r.weight_decay),
                    eps=eps,
                    amsgrad=False,
                    maximize=False,
                )
                return
            except (RuntimeError, NotImplementedError):  # no fused kernel for this device
                for st in self.steps:
                    st.sub_(1)
                self.fused = None
        for name, p in self.params.items():
            g = grads[name]
            if r.optimizer == "sgd":
                if r.weight_decay:
                    g = g.add(p, alpha=r.weight_decay)
                if r.momentum:
                    buf = self.m[name]
                    if self.n == 1:
                        buf.copy_(g)
                    else:
                        buf.mul_(r.momentum).add_(g)
                    g = buf
                p.add_(g, alpha=-r.lr)
                continue
            if r.optimizer == "adam" and r.weight_decay:
                g = g.add(p, alpha=r.weight_decay)
            if r.optimizer == "adamw" and r.weight_decay:
                p.mul_(1 - r.lr * r.weight_decay)
            m, v = self.m[name], self.v[name]
            m.mul_(b1).add_(g, alpha=1 - b1)
            v.mul_(b2).addcmul_(g, g, value=1 - b2)
            bc1 = 1 - b1**self.n
            bc2 = 1 - b2**self.n
            denom = (v.sqrt() / (bc2**0.5)).add_(eps)
            p.addcdiv_(m, denom, value=-r.lr / bc1)

    def step(self, grads: dict[str, Any], active: Any) -> None:
        torch = require_torch()
        if self.uniform and self.lr is None and bool(active.all()):
            # every model has taken every step so far: scalar bias corrections, in place
            with torch.no_grad():
                self._step_all(grads)
            return
        self.uniform = False
        r = self.r
        with torch.no_grad():
            self.t = torch.where(active, self.t + 1, self.t)
            b1, b2, eps = 0.9, 0.999, 1e-8
            bc1 = (1 - b1**self.t).clamp_min(1e-30)
            bc2 = (1 - b2**self.t).clamp_min(1e-30)
            for name, p in self.params.items():
                g = grads[name]
                shape = (-1,) + (1,) * (p.ndim - 1)
                act = active.reshape(shape)
                lr = r.lr if self.lr is None else self.lr.to(p.dtype).reshape(shape)
                if r.optimizer == "sgd":
                    if r.weight_decay:
                        g = g + r.weight_decay * p
                    if r.momentum:
                        first = (~self.started).reshape(shape)
                        buf = torch.where(first, g, r.momentum * self.m[name] + g)
                        self.m[name] = torch.where(act, buf, self.m[name])
                        g = buf
                    new = p - lr * g
                else:
                    if r.optimizer == "adam" and r.weight_decay:
                        g = g + r.weight_decay * p
                    base = p * (1 - lr * r.weight_decay) if r.optimizer == "adamw" else p
                    m = b1 * self.m[name] + (1 - b1) * g
                    v = b2 * self.v[name] + (1 - b2) * g * g
                    self.m[name] = torch.where(act, m, self.m[name])
                    self.v[name] = torch.where(act, v, self.v[name])
                    c1 = bc1.to(p.dtype).reshape(shape)
                    c2 = bc2.to(p.dtype).reshape(shape)
                    denom = (v.sqrt() / c2.sqrt()) + eps
                    new = base - (lr / c1) * m / denom
                p.copy_(torch.where(act, new, p))
            self.started = self.started | active
