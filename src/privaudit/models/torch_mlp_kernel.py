r"""The hand-written batched kernel of :func:`~privaudit.models.torch_batched.fit_many`:
``K`` stacked MLPs, forward and backward written out with batched matrix products.

The networks it covers (:func:`mlp_ops`): an ``nn.Sequential`` of ``nn.Linear`` layers
(with or without bias) and elementwise activations -- ``ReLU``, ``Tanh``, ``Sigmoid``,
``GELU`` (both approximations), ``LeakyReLU``, ``ELU``, ``CELU``, ``SELU``, ``SiLU``,
``Mish``, ``Softplus``, ``Hardtanh``, ``ReLU6``, ``Hardsigmoid``, ``Hardswish`` -- in any
order, plus the modules that are the identity on a ``(n, d)`` batch in training mode
(``Identity``, ``Flatten()``, ``Dropout(p=0)``). Anything else (convolutions, batch norm,
dropout with ``p > 0``, a subclass of one of these types) is left to the ``vmap`` kernel.

Forward, per model ``k`` and mini-batch ``H_0`` (one :func:`torch.baddbmm` over the
model axis per linear layer): :math:`Z = H W^T + b`; an activation :math:`H = f(Z)`.
The loss is the mean cross-entropy over model ``k``'s ``n_k`` real rows, whose gradient
in the logits is :math:`(\mathrm{softmax}(Z_L) - Y) / n_k` on real rows, 0 on padding
rows (computed in the ``(K, C, rows)`` layout, where the softmax over few classes is
several times faster on the CPU than over the last axis). Backward: a linear layer
gives :math:`\partial W = \partial Z^T H`, :math:`\partial b = \sum_{rows} \partial Z`
and, unless nothing before it has parameters, :math:`\partial H = \partial Z W`; an
activation's backward is the ATen backward kernel autograd itself calls for it
(``threshold_backward``, ``tanh_backward``, ``gelu_backward``, ...), so its gradient is
autograd's bit for bit given the same inputs (Rumelhart et al. 1986; Goodfellow et al.
2016, Sec. 6.5 for the back-propagation equations).

One exception to "the same operations as autograd": on the CPU, ``torch.tanh`` is a
scalar loop in this build (about 2.5 ns an element, where the matrix products of a
128-unit layer cost about 1 ns a unit and record), so ``Tanh`` of a float32 buffer is
numpy's vectorised ``np.tanh`` written into the tensor's memory: the same function, within
about :math:`6 \cdot 10^{-8}` of the float64 ``tanh`` (``torch.tanh``: :math:`3 \cdot
10^{-8}`; its backward reads only the output); on CUDA ``torch.tanh`` is used. Everything
else agrees with one-by-one training up to the rounding of the matrix products (batched
vs single), which the tests bound.

Every mini-batch of every model is gathered with one index operation from index arrays
prepared before training (the batches of :func:`~privaudit.models.torch_recipe.batch_order`
with ``default_rng(seed_k)``, as the one-by-one trainer draws them), from a table of only
the rows some model trains on (the models' rows are renumbered into it before the
batches are drawn, so no sort of the whole index table is needed).

Where the input is sparse (on the CPU, every row with at most a quarter of the padded
width nonzero, as one-hot encoded tables are: Adult's rows have 15 of 112), the first
layer's forward product is a sum of the weight rows of each record's nonzero features
(``torch.nn.functional.embedding_bag`` with the feature values as weights, over all
models' weights as one table): the same terms as the product without its zero ones, in
another order (so equal up to float32 rounding). The weight gradient remains the batched
product; the dense batch it reads is written from the gathered nonzeros (a
``scatter_add_`` into zeros, the same values bit for bit), so a step gathers the rows'
small table of nonzeros only, not their dense rows. :class:`_SparseRows` holds the rows'
nonzeros.

A step where every model has the same number of real rows (the last, partial batch of an
epoch when the models train on equally many records) computes those rows only, in the
first rows of the buffers; other steps pad every model's batch to the batch size (the
padding rows get zero gradient). A step does the matrix products, the activations and
the loss gradient and nothing else: its buffers (the gathered batch, every layer's
output and input gradient) are allocated once and written with the ``out=`` forms of
the same operations, an activation's backward is written into the next layer's
input-gradient buffer (the ``grad_input`` form of the same ATen kernel), and the
parameter views are taken once. These change no bit of the result.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from privaudit.models.torch_recipe import batch_order, require_torch

__all__ = ["ACTIVATIONS", "ActivationOp", "LinearOp", "mlp_ops", "train_mlp"]

#: The activation modules the kernel covers (``torch.nn`` class names).
ACTIVATIONS = (
    "ReLU",
    "Tanh",
    "Sigmoid",
    "GELU",
    "LeakyReLU",
    "ELU",
    "CELU",
    "SELU",
    "SiLU",
    "Mish",
    "Softplus",
    "Hardtanh",
    "ReLU6",
    "Hardsigmoid",
    "Hardswish",
)

# torch.nn.functional.selu's constants (aten/src/ATen/native/Activation.cpp)
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


@dataclasses.dataclass(frozen=True)
class LinearOp:
    """A linear layer: the names of its weight and bias (None without bias) in the
    module's state dict."""

    weight: str
    bias: str | None


@dataclasses.dataclass(frozen=True)
class ActivationOp:
    """An elementwise activation: ``forward(z) -> h`` and ``backward(dh, z, h) -> dz``
    (autograd's backward kernel of the activation); ``forward_`` computes ``h`` in
    ``z``'s memory where the backward reads only ``h`` (None otherwise); ``backward_``
    is ``backward`` written into ``dh``'s memory (the kernel's ``grad_input`` form,
    None where not provided)."""

    name: str
    forward: Callable[[Any], Any]
    backward: Callable[[Any, Any, Any], Any]
    forward_: Callable[[Any], Any] | None = None
    backward_: Callable[[Any, Any, Any], Any] | None = None


Op = LinearOp | ActivationOp


class StackedOptimizer(Protocol):
    """The optimizer of the stacked parameters (``torch_batched._BatchedOptimizer``)."""

    def step(self, grads: dict[str, Any], active: Any) -> None: ...


def _fast_tanh(z: Any) -> Any:
    return _fast_tanh_(z.clone())


def _fast_tanh_(z: Any) -> Any:
    """``tanh`` in place: numpy's ``np.tanh`` on a contiguous float32 CPU tensor (see the
    module docstring), ``torch.tanh`` otherwise."""
    if z.device.type != "cpu" or z.dtype != require_torch().float32 or not z.is_contiguous():
        return z.tanh_()
    a = z.numpy()
    np.tanh(a, out=a)
    return z


def _activation(m: Any) -> ActivationOp | None:
    """The kernel's form of activation module ``m`` (exact types only), else None."""
    torch = require_torch()
    nn, F, aten = torch.nn, torch.nn.functional, torch.ops.aten
    t = type(m)
    if t is nn.ReLU:
        return ActivationOp(
            "ReLU",
            torch.relu,
            lambda g, z, h: aten.threshold_backward(g, h, 0),
            torch.relu_,
            lambda g, z, h: aten.threshold_backward.grad_input(g, h, 0, grad_input=g),
        )
    if t is nn.Tanh:
        return ActivationOp(
            "Tanh",
            _fast_tanh,
            lambda g, z, h: aten.tanh_backward(g, h),
            _fast_tanh_,
            lambda g, z, h: aten.tanh_backward.grad_input(g, h, grad_input=g),
        )
    if t is nn.Sigmoid:
        return ActivationOp(
            "Sigmoid",
            torch.sigmoid,
            lambda g, z, h: aten.sigmoid_backward(g, h),
            torch.sigmoid_,
            lambda g, z, h: aten.sigmoid_backward.grad_input(g, h, grad_input=g),
        )
    if t is nn.GELU:
        a = str(m.approximate)
        return ActivationOp(
            "GELU",
            lambda z: F.gelu(z, approximate=a),
            lambda g, z, h: aten.gelu_backward(g, z, approximate=a),
            None,
            lambda g, z, h: aten.gelu_backward.grad_input(g, z, approximate=a, grad_input=g),
        )
    if t is nn.LeakyReLU:
        s = float(m.negative_slope)
        return ActivationOp(
            "LeakyReLU",
            lambda z: F.leaky_relu(z, s),
            lambda g, z, h: aten.leaky_relu_backward(g, z, s, False),
        )
    if t is nn.ELU:
        al = float(m.alpha)
        return ActivationOp(
            "ELU",
            lambda z: F.elu(z, al),
            lambda g, z, h: aten.elu_backward(g, al, 1.0, 1.0, False, z),
        )
    if t is nn.CELU:
        al = float(m.alpha)
        return ActivationOp(
            "CELU",
            lambda z: F.celu(z, al),
            lambda g, z, h: aten.elu_backward(g, al, 1.0, 1.0 / al, False, z),
        )
    if t is nn.SELU:
        return ActivationOp(
            "SELU",
            F.selu,
            lambda g, z, h: aten.elu_backward(g, _SELU_ALPHA, _SELU_SCALE, 1.0, False, z),
        )
    if t is nn.SiLU:
        return ActivationOp("SiLU", F.silu, lambda g, z, h: aten.silu_backward(g, z))
    if t is nn.Mish:
        return ActivationOp("Mish", F.mish, lambda g, z, h: aten.mish_backward(g, z))
    if t is nn.Softplus:
        beta, thr = float(m.beta), float(m.threshold)
        return ActivationOp(
            "Softplus",
            lambda z: F.softplus(z, beta, thr),
            lambda g, z, h: aten.softplus_backward(g, z, beta, thr),
        )
    if t in (nn.Hardtanh, nn.ReLU6):
        lo, hi = float(m.min_val), float(m.max_val)
        return ActivationOp(
            t.__name__,
            lambda z: F.hardtanh(z, lo, hi),
            lambda g, z, h: aten.hardtanh_backward(g, z, lo, hi),
        )
    if t is nn.Hardsigmoid:
        return ActivationOp(
            "Hardsigmoid", F.hardsigmoid, lambda g, z, h: aten.hardsigmoid_backward(g, z)
        )
    if t is nn.Hardswish:
        return ActivationOp("Hardswish", F.hardswish, lambda g, z, h: aten.hardswish_backward(g, z))
    return None


def _is_identity(m: Any) -> bool:
    """Modules that leave a ``(n, d)`` training batch unchanged."""
    nn = require_torch().nn
    t = type(m)
    if t is nn.Identity:
        return True
    if t is nn.Flatten:
        return int(m.start_dim) == 1 and int(m.end_dim) == -1
    if t in (nn.Dropout, nn.AlphaDropout):
        return float(m.p) == 0.0
    return False


def mlp_ops(module: Any) -> list[Op] | None:
    """The kernel's operations for ``module``: a ``Sequential`` of ``Linear`` layers and
    elementwise activations (see the module docstring) with at least one ``Linear``;
    None for any other module."""
    nn = require_torch().nn
    if type(module) is not nn.Sequential or len(module) == 0:
        return None
    ops: list[Op] = []
    for name, m in module.named_children():
        if type(m) is nn.Linear:
            ops.append(LinearOp(f"{name}.weight", None if m.bias is None else f"{name}.bias"))
            continue
        if _is_identity(m):
            continue
        act = _activation(m)
        if act is None:
            return None
        ops.append(act)
    if not any(isinstance(op, LinearOp) for op in ops):
        return None
    return ops


def batch_indices(
    subs: Sequence[NDArray[np.int64]], seeds: Sequence[int], batch_size: int, epochs: int
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Every step's rows of every model, ``(n_steps, K, batch_size)`` (padding: row 0),
    and the number of real rows ``(n_steps, K)``: :func:`batch_order` with
    ``default_rng(seed_k)``, as the one-by-one trainer draws them."""
    orders = [
        batch_order(s.size, batch_size, epochs, np.random.default_rng(seed))
        for s, seed in zip(subs, seeds, strict=True)
    ]
    n_steps = max(len(o) for o in orders)
    K = len(subs)
    idx = np.zeros((n_steps, K, batch_size), dtype=np.int64)
    count = np.zeros((n_steps, K), dtype=np.int64)
    for k, (s, order) in enumerate(zip(subs, orders, strict=True)):
        # one scatter per model: step j's rows go to idx[j, k, :len(rows_j)]
        lens = np.fromiter((rows.size for rows in order), dtype=np.int64, count=len(order))
        flat = np.concatenate(order)
        starts = np.cumsum(lens) - lens
        step_of = np.repeat(np.arange(len(order)), lens)
        idx[step_of, k, np.arange(flat.size) - np.repeat(starts, lens)] = s[flat]
        count[: len(order), k] = lens
    return idx, count


@dataclasses.dataclass
class _Layer:
    """A linear layer's working state in :func:`train_mlp`: its stacked parameters and
    their views, and its preallocated output and input-gradient buffers."""

    weight: Any  # (K, out, in)
    bias: Any | None  # (K, out)
    weight_t: Any  # (K, in, out) view
    bias_row: Any | None  # (K, 1, out) view
    out: Any  # (K, rows, out)
    grad_in: Any | None  # (K, rows, in), where the input's gradient is needed
    grad_in_t: Any | None  # (K, in, rows) view of grad_in
    bias_grad: Any | None  # (K, out)
    #: the parameter is ``weight_t``, stored ``(K, in, out)`` (the first layer of a sparse
    #: input: a table of every model's weight rows); ``weight`` is then its transposed view
    stored_t: bool = False

    def first_rows(self, n: int) -> _Layer:
        """This layer for a step of ``n`` rows a model: its output and input-gradient
        buffers' first ``K n`` rows, as ``(K, n, .)`` arrays."""

        def head(buf: Any) -> Any:
            return buf.view(-1)[: buf.shape[0] * n * buf.shape[2]].view(buf.shape[0], n, -1)

        grad_in = None if self.grad_in is None else head(self.grad_in)
        return dataclasses.replace(
            self,
            out=head(self.out),
            grad_in=grad_in,
            grad_in_t=None if grad_in is None else grad_in.transpose(1, 2),
        )


def train_mlp(
    r: Any,
    params: dict[str, Any],
    ops: Sequence[Op],
    X: NDArray[np.float64],
    y: NDArray[np.int64],
    subs: Sequence[NDArray[np.int64]],
    seeds: Sequence[int],
    dev: str,
    make_state: Callable[[dict[str, Any]], StackedOptimizer],
) -> None:
    """Train the stacked networks ``params`` (leading model axis) in place.

    Parameters
    ----------
    r : TorchRecipe
        Batch size and epochs (the optimizer is ``state``).
    params : dict of str to Tensor
        Stacked parameters, updated in place by ``state``.
    ops : sequence of LinearOp or ActivationOp
        From :func:`mlp_ops`.
    X, y : arrays
        All records; ``subs[k]`` are model ``k``'s rows.
    subs, seeds : sequences
        Model ``k``'s training rows and seed (its batch order).
    dev : str
    make_state : callable
        The optimizer of a dict of stacked parameters (e.g. ``_BatchedOptimizer``): it
        applies one step of every active model's update from its gradients.

    Notes
    -----
    On the CPU the first layer's input width is padded with zero features to a multiple
    of 16 (whole 64-byte rows: the batched products run faster): the padded weights get
    exactly zero gradients and stay zero under every optimizer, so the trained network
    is the unpadded one; the summation order of the products may change, not their
    terms. Where the first layer has a bias, the first padding feature is 1 instead and
    its weights are the bias: the forward product adds it and the weight gradient's
    product sums the bias gradient (no separate bias pass either way), and every
    optimizer here updates the bias column as it would the bias (elementwise). Where the
    input is sparse (:class:`_SparseRows`), the first weight is stored transposed, ``(K,
    in, out)``, for the same reason (elementwise optimizers; :meth:`_Data.unpad`
    transposes it back).

    Per step only the matrix products, the activations and the loss gradient are
    computed, into buffers allocated once (see the module docstring).
    """
    torch = require_torch()
    data = _Data.gather(X, y, subs, params, ops, dev)
    ops = data.ops
    batches = _Batches.draw(data.local, seeds, r.batch_size, r.epochs, dev)
    state = make_state(data.work)
    # a linear layer needs its input's gradient only when something before it learns
    first_linear = next(i for i, op in enumerate(ops) if isinstance(op, LinearOp))
    # plain SGD (no momentum, no weight decay) on a step where every model learns:
    # p <- p - lr * grad written straight into the parameters (baddbmm_ / add_)
    plain_sgd = r.optimizer == "sgd" and not r.momentum and not r.weight_decay
    lr = float(r.lr)
    K, bs = batches.K, batches.bs
    all_active = torch.ones(K, dtype=torch.bool, device=dev)
    with torch.no_grad():
        xbuf = data.X.new_empty((K * bs, data.X.shape[1]))
        ybuf = data.y.new_empty((K * bs,))
        loss = _LossGradient(batches, dev)
        full = _layers(ops, data.work, K, bs, first_linear, dev, data.first_t)
        sparse = data.sparse.for_batches(K, bs) if data.sparse is not None else None
        # a step of fewer rows a model (batches.rows) works in the first rows of the buffers
        cut: dict[int, tuple[Any, Any, dict[int, _Layer]]] = {
            n: (xbuf[: K * n], ybuf[: K * n], {i: lay.first_rows(n) for i, lay in full.items()})
            for n in set(batches.rows)
        }
        for step, ix in enumerate(batches.idx_steps):
            n = batches.rows[step]
            xb, ybb, layers = cut[n]
            yb = torch.index_select(data.y, 0, ix, out=ybb).view(K, 1, n)
            if sparse is None:
                h, z0 = torch.index_select(data.X, 0, ix, out=xb).view(K, n, -1), None
            else:
                h, z0 = sparse.first_layer(ix, n, layers[0], xb)
            logits, saved = _forward(ops, layers, h, z0)
            dzt = loss(logits, yb, step)
            fused = plain_sgd and batches.all_active[step]
            grads = _backward(ops, layers, saved, dzt, first_linear, fused, lr)
            if not fused:
                active = (
                    all_active
                    if batches.all_active[step]
                    else torch.from_numpy(batches.active_np[step])
                )
                state.step(grads, active.to(dev))
    data.unpad(params)


@dataclasses.dataclass
class _Data:
    """What :func:`train_mlp` trains on: only the rows some model trains on (so that the
    gathered table stays in cache), each model's rows renumbered into that table, the
    first layer's input padded on the CPU (see :func:`train_mlp`'s notes), the
    parameters it trains (``work``: ``params`` with the padded first weight, the first
    bias folded into it) and the operations that train them (``ops``: the first linear
    layer without its bias where it is folded); ``sparse``: the rows' nonzeros where the
    first layer reads them (:class:`_SparseRows`), its weight then stored ``(K, in, out)``
    (``first_t``)."""

    X: Any  # (rows used, d + pad) float32 on the device
    y: Any  # (rows used,) int64 on the device
    local: list[NDArray[np.int64]]  # model k's rows in that table
    work: dict[str, Any]
    ops: list[Op]
    w0: str | None  # the first layer's weight, when the network starts with a linear layer
    b0: str | None  # its bias, when folded into the padding column d
    d: int
    pad: int
    sparse: _SparseRows | None = None

    @property
    def first_t(self) -> bool:
        """The first weight is stored ``(K, in, out)``: where the first layer reads the
        sparse rows."""
        return self.sparse is not None

    @classmethod
    def gather(
        cls,
        X: NDArray[np.float64],
        y: NDArray[np.int64],
        subs: Sequence[NDArray[np.int64]],
        params: dict[str, Any],
        ops: Sequence[Op],
        dev: str,
    ) -> _Data:
        torch = require_torch()
        used = np.unique(np.concatenate([np.asarray(s) for s in subs]))
        local = [np.searchsorted(used, s) for s in subs]
        Xu = np.ascontiguousarray(X[used], dtype=np.float32)
        work = dict(params)
        w0 = ops[0].weight if isinstance(ops[0], LinearOp) else None
        d = Xu.shape[1]
        pad = (-d) % 16 if dev == "cpu" and w0 is not None else 0
        kernel_ops = list(ops)
        b0 = None
        if pad and w0 is not None:
            Xu = np.concatenate([Xu, np.zeros((Xu.shape[0], pad), dtype=np.float32)], axis=1)
            wp = params[w0].new_zeros((*params[w0].shape[:2], d + pad))
            wp[:, :, :d] = params[w0]
            b0 = ops[0].bias if isinstance(ops[0], LinearOp) else None
            if b0 is not None:  # the bias as the weight of a feature that is always 1
                Xu[:, d] = 1.0
                wp[:, :, d] = params[b0]
                del work[b0]
                kernel_ops[0] = LinearOp(w0, None)
            work[w0] = wp
        sparse = _SparseRows.of(Xu) if dev == "cpu" and w0 is not None else None
        if sparse is not None and w0 is not None:
            work[w0] = work[w0].transpose(1, 2).contiguous()
        Xt = torch.from_numpy(Xu).to(dev)
        yt = torch.from_numpy(np.ascontiguousarray(y[used], dtype=np.int64)).to(dev)
        return cls(Xt, yt, local, work, kernel_ops, w0, b0, d, pad, sparse)

    def unpad(self, params: dict[str, Any]) -> None:
        """Copy the trained first weight, without its padding columns, into ``params``
        (and the folded bias, its column ``d``), ``(K, out, in)`` again where it was stored
        transposed."""
        if (self.pad or self.first_t) and self.w0 is not None:
            with require_torch().no_grad():
                w = self.work[self.w0]
                if self.first_t:
                    w = w.transpose(1, 2)
                params[self.w0].copy_(w[:, :, : self.d])
                if self.b0 is not None:
                    params[self.b0].copy_(w[:, :, self.d])


#: A row table is sparse when no row has more nonzeros than this fraction of its (padded)
#: width. Measured on one core (8 MLPs x-128-2 tanh, SGD, batch 128, 5,000 rows each, CPU
#: time of training): at a quarter of 112 features 0.197 s against 0.216 s for the dense
#: product, at a quarter of 400 even (0.646 / 0.648), at a third even or slower, at 0.4
#: slower (0.223 / 0.207; 0.736 / 0.593); Adult's rows, 15 of 112, train 10% faster.
SPARSE_FRACTION = 1 / 4


@dataclasses.dataclass
class _SparseRows:
    """Each row's nonzero features (``idx``, ``(rows, k)``) and their values (``val``),
    ``k`` the most nonzeros of any row; shorter rows padded with feature 0 of value 0
    (a term of zero). With the buffers of a step (:meth:`for_batches`), the first layer's
    output of every model's batch is one ``embedding_bag`` over all models' weights
    stored ``(K, in, out)`` (model ``m``'s feature ``f`` is row ``m in + f``)."""

    idx: Any  # (rows, k) int64
    val: Any  # (rows, k) float32
    width: int
    ibuf: Any = None  # (K bs, k) a step's gathered indices, shifted to each model's rows
    vbuf: Any = None  # (K bs, k) their values
    shift: Any = None  # (K, 1): m * width

    @classmethod
    def of(cls, X: NDArray[np.float32]) -> _SparseRows | None:
        """The nonzeros of ``X`` (float32, on the CPU), or None when a row has more than
        :data:`SPARSE_FRACTION` of its width nonzero (the dense product is faster)."""
        torch = require_torch()
        nz = X != 0  # NaN and inf are nonzero: kept as they are
        counts = nz.sum(axis=1)
        k = int(counts.max()) if counts.size else 0
        if k == 0 or k > SPARSE_FRACTION * X.shape[1]:
            return None
        rows, cols = np.nonzero(nz)
        slot = np.arange(rows.size) - np.repeat(np.cumsum(counts) - counts, counts)
        idx = np.zeros((X.shape[0], k), dtype=np.int64)
        val = np.zeros((X.shape[0], k), dtype=np.float32)
        idx[rows, slot] = cols
        val[rows, slot] = X[rows, cols]
        return cls(torch.from_numpy(idx), torch.from_numpy(val), X.shape[1])

    def for_batches(self, K: int, bs: int) -> _SparseRows:
        """This table with the buffers of a step of ``K`` models' batches of ``bs``."""
        torch = require_torch()
        k = self.idx.shape[1]
        shift = (torch.arange(K, dtype=torch.int64) * self.width).view(K, 1)
        return dataclasses.replace(
            self,
            ibuf=self.idx.new_empty((K * bs, k)),
            vbuf=self.val.new_empty((K * bs, k)),
            shift=shift,
        )

    def first_layer(self, ix: Any, n: int, lay: _Layer, xb: Any) -> tuple[Any, Any]:
        """The rows ``ix`` (``K n`` of them, model-major) as the dense batch ``(K, n,
        width)`` written into ``xb`` (what the weight gradient reads), and the first linear
        layer's output on them ``(K, n, out)``, its bias added where it is not folded.

        The dense batch is built from the gathered nonzeros (``scatter_add_`` into zeros:
        each value lands on a zero, the padding terms add 0 to feature 0), so every value
        is the table's own, up to the sign of zeros (a -0.0 is not a nonzero); only the
        nonzeros' small table is gathered by row, not the dense one (measured: the dense
        gather of random rows was about a tenth of a step)."""
        torch = require_torch()
        K = self.shift.shape[0]
        ib = torch.index_select(self.idx, 0, ix, out=self.ibuf[: K * n])
        vb = torch.index_select(self.val, 0, ix, out=self.vbuf[: K * n])
        xb.zero_().scatter_add_(1, ib, vb)
        ib.view(K, -1).add_(self.shift)
        table = lay.weight_t.view(-1, lay.weight_t.shape[2])
        z = torch.nn.functional.embedding_bag(ib, table, per_sample_weights=vb, mode="sum")
        z = z.view(K, n, -1)
        if lay.bias_row is not None:
            z.add_(lay.bias_row)
        return xb.view(K, n, -1), z


@dataclasses.dataclass
class _Batches:
    """Every step's rows of every model (:func:`batch_indices`), as one index tensor per
    step, with what a step needs to know about them: ``rows`` (the rows a model computes:
    the batch size, or the shared count of a step where every model has the same number
    of real rows, then only those), ``same`` (every model has the same number of rows:
    no padding row is computed), ``count`` (real rows per model), ``all_active`` (every
    model has rows) and ``active_np`` (which models have rows); the flags are Python
    lists, read once a step."""

    K: int
    bs: int
    idx_steps: tuple[Any, ...]
    rows: list[int]
    count: Any
    same: list[bool]
    all_active: list[bool]
    active_np: NDArray[np.bool_]

    @classmethod
    def draw(
        cls,
        local: Sequence[NDArray[np.int64]],
        seeds: Sequence[int],
        bs: int,
        epochs: int,
        dev: str,
    ) -> _Batches:
        torch = require_torch()
        idx_np, count_np = batch_indices(local, seeds, bs, epochs)
        n_steps, K, _ = idx_np.shape
        idx_all = torch.from_numpy(idx_np.reshape(n_steps, K * bs)).to(dev)
        steps: list[Any] = list(idx_all.unbind(0))  # one view per step, taken once
        same = [bool(v) for v in (count_np == count_np[:, :1]).all(axis=1)]
        rows = [int(count_np[j, 0]) if same[j] else bs for j in range(n_steps)]
        for j in [j for j, n in enumerate(rows) if n < bs]:  # e.g. an epoch's last batch
            real = np.ascontiguousarray(idx_np[j, :, : rows[j]]).reshape(-1)
            steps[j] = torch.from_numpy(real).to(dev)
        active_np: NDArray[np.bool_] = count_np > 0
        return cls(
            K=K,
            bs=bs,
            idx_steps=tuple(steps),
            rows=rows,
            count=torch.from_numpy(count_np).to(dev),
            same=same,
            all_active=[bool(v) for v in np.asarray(active_np.all(axis=1))],
            active_np=active_np,
        )


def _layers(
    ops: Sequence[Op],
    work: dict[str, Any],
    K: int,
    bs: int,
    first_linear: int,
    dev: str,
    first_t: bool = False,
) -> dict[int, _Layer]:
    """Each linear layer's working state (:class:`_Layer`), by its position in ``ops``;
    ``first_t``: the first layer's weight is stored ``(K, in, out)``."""
    layers: dict[int, _Layer] = {}
    for i, op in enumerate(ops):
        if not isinstance(op, LinearOp):
            continue
        stored_t = first_t and i == first_linear
        w = work[op.weight].transpose(1, 2) if stored_t else work[op.weight]
        b = work[op.bias] if op.bias is not None else None
        grad_in = w.new_empty((K, bs, w.shape[2])) if i > first_linear else None
        layers[i] = _Layer(
            weight=w,
            bias=b,
            weight_t=w.transpose(1, 2),
            bias_row=None if b is None else b.unsqueeze(1),
            out=w.new_empty((K, bs, w.shape[1])),
            grad_in=grad_in,
            grad_in_t=None if grad_in is None else grad_in.transpose(1, 2),
            bias_grad=None if b is None else b.new_empty(b.shape),
            stored_t=stored_t,
        )
    return layers


def _forward(
    ops: Sequence[Op], layers: dict[int, _Layer], h: Any, z0: Any = None
) -> tuple[Any, list[tuple[Any, Any]]]:
    """One step's forward pass from the gathered batch ``h``: the logits and, per op, what
    its backward reads (a linear layer's input; an activation's input and output).
    ``z0``: the first op's output where it was computed from the sparse rows."""
    torch = require_torch()
    saved: list[tuple[Any, Any]] = []
    for i, op in enumerate(ops):
        if isinstance(op, LinearOp):
            saved.append((h, None))
            lay = layers[i]
            if i == 0 and z0 is not None:
                h = z0
            elif lay.bias_row is None:
                h = torch.bmm(h, lay.weight_t, out=lay.out)
            else:
                h = torch.baddbmm(lay.bias_row, h, lay.weight_t, out=lay.out)
            continue
        z = h
        if i > 0 and isinstance(ops[i - 1], LinearOp) and op.forward_ is not None:
            # a linear layer's fresh output is read by nothing else: overwrite it
            h = op.forward_(z)
        else:
            h = op.forward(z)
        saved.append((z, h))
    return h, saved


class _LossGradient:
    """d(mean cross-entropy)/d logits of a step, in the ``(K, C, rows)`` layout: softmax
    minus one-hot, divided by each model's number of real rows, 0 on padding rows."""

    def __init__(self, batches: _Batches, dev: str) -> None:
        torch = require_torch()
        self.batches = batches
        self.rows = torch.arange(batches.bs, device=dev)
        self.minus_one = torch.full((batches.K, 1, batches.bs), -1.0, device=dev)

    def __call__(self, logits: Any, yb: Any, step: int) -> Any:
        torch = require_torch()
        b = self.batches
        dzt = torch.softmax(logits.transpose(1, 2), dim=1)
        dzt.scatter_add_(1, yb, self.minus_one)  # reads the first rows' -1s of a cut step
        if b.same[step]:  # every row computed is real
            dzt.mul_(1.0 / max(b.rows[step], 1))
        else:
            n = b.count[step]
            wt = (self.rows[None, :] < n[:, None]).to(dzt.dtype)
            dzt.mul_((wt / n.clamp_min(1)[:, None].to(dzt.dtype)).unsqueeze(1))
        return dzt


def _backward(
    ops: Sequence[Op],
    layers: dict[int, _Layer],
    saved: list[tuple[Any, Any]],
    dzt: Any,
    first_linear: int,
    fused: bool,
    lr: float,
) -> dict[str, Any]:
    """One step's backward pass from the logits' gradient ``dzt`` (``(K, C, rows)``) down
    to the first linear layer. ``fused``: plain SGD where every model learns, the update
    written straight into the parameters (returns no gradient); else the parameters'
    gradients, by name, for the optimizer."""
    torch = require_torch()
    dz, dz_t = dzt.transpose(1, 2), dzt  # the gradient and its transpose (a view)
    grads: dict[str, Any] = {}
    for i in range(len(ops) - 1, first_linear - 1, -1):
        op = ops[i]
        a, out = saved[i]
        if isinstance(op, ActivationOp):
            if op.backward_ is not None and i + 1 < len(ops) and isinstance(ops[i + 1], LinearOp):
                # dz is the next layer's input-gradient buffer, read by nothing else
                dz = op.backward_(dz, a, out)
                dz_t = layers[i + 1].grad_in_t
            else:
                dz = op.backward(dz, a, out)
                dz_t = None
            continue
        lay = layers[i]
        dh = torch.bmm(dz, lay.weight, out=lay.grad_in) if lay.grad_in is not None else None
        if dz_t is None:
            dz_t = dz.transpose(1, 2)
        if fused:
            if lay.stored_t:  # the same update, transposed: W^T -= lr a^T dz
                lay.weight_t.baddbmm_(a.transpose(1, 2), dz, alpha=-lr)
            else:
                lay.weight.baddbmm_(dz_t, a, alpha=-lr)
            if lay.bias is not None:
                lay.bias.add_(torch.sum(dz, dim=1, out=lay.bias_grad), alpha=-lr)
        else:
            grads[op.weight] = (
                torch.bmm(a.transpose(1, 2), dz) if lay.stored_t else torch.bmm(dz_t, a)
            )
            if op.bias is not None:
                grads[op.bias] = dz.sum(dim=1)
        dz, dz_t = dh, None
    return grads
