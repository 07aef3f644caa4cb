"""The hand-written batched MLP kernel (models/torch_mlp_kernel.py) against one-by-one
training with torch.optim and autograd, for every activation it covers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from privaudit.errors import InvalidInputError
from privaudit.models.torch_mlp_kernel import ACTIVATIONS
from privaudit.models.torch_models import TorchRecipe, TorchTrainer

FACTORIES = str(Path(__file__).with_name("torch_factories.py"))


def _data(n: int = 200, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = (X[:, 0] > 0).astype(np.int64) + (X[:, 1] > 1).astype(np.int64)
    return X, y


def _recipe(act: str, **kw: object) -> TorchRecipe:
    base: dict[str, object] = {
        "factory": f"{FACTORIES}:act_mlp",
        "factory_kwargs": {"act": act},
        "epochs": 5,
        "batch_size": 16,
        "lr": 0.05,
        "device": "cpu",
    }
    base.update(kw)
    return TorchRecipe(**base)  # type: ignore[arg-type]


def test_the_kernel_covers_sequentials_of_linear_layers_and_activations() -> None:
    torch = pytest.importorskip("torch")
    from privaudit.models.torch_batched import mlp_layers
    from privaudit.models.torch_mlp_kernel import mlp_ops

    nn = torch.nn
    net = _recipe("Tanh", factory_kwargs={"act": "Tanh", "bias": False}).build(0)
    # Dropout(0) and Identity are skipped; the middle layer has no bias
    assert mlp_layers(net) == [("0.weight", "0.bias"), ("3.weight", None), ("6.weight", "6.bias")]
    assert [getattr(op, "name", "linear") for op in mlp_ops(net) or []] == [
        "linear",
        "Tanh",
        "linear",
        "Tanh",
        "linear",
    ]
    assert mlp_ops(nn.Sequential(nn.Linear(3, 2), nn.Dropout(0.5))) is None  # random
    assert mlp_ops(nn.Sequential(nn.Linear(3, 2), nn.Softmax(dim=1))) is None  # not elementwise
    assert mlp_ops(nn.Sequential(nn.Tanh())) is None  # nothing to learn
    assert mlp_ops(nn.Linear(3, 2)) is None  # not a Sequential

    class MyTanh(nn.Tanh):  # a subclass may change forward: not trusted
        pass

    assert mlp_ops(nn.Sequential(nn.Linear(3, 2), MyTanh(), nn.Linear(2, 2))) is None


@pytest.mark.parametrize("act", ACTIVATIONS)
def test_one_step_gradients_are_autograds(act: str) -> None:
    # one full-batch SGD step with lr 1: the weights move by exactly minus the gradient,
    # so the batched kernel's weights equal one-by-one training's up to the rounding of
    # the matrix products (a wrong backward formula would be off by ~1e-2)
    pytest.importorskip("torch")
    from privaudit.models.torch_batched import fit_many

    X, y = _data(64)
    rec = _recipe(act, optimizer="sgd", lr=1.0, epochs=1, batch_size=64)
    tr = TorchTrainer(rec, n_classes=3)
    subsets = [np.arange(64), np.arange(64)]
    batched = fit_many(tr, X, y, subsets, [3, 4], n_classes=3, kernel="mlp")
    for sd, m in zip([3, 4], batched, strict=True):
        one = tr.fit(X, y, seed=sd, n_classes=3)
        start = rec.build(sd).state_dict()
        for name, w in one.module.state_dict().items():
            moved = (w - start[name]).abs().max().item()
            gap = (m.module.state_dict()[name] - w).abs().max().item()
            assert gap <= 1e-6 * max(1.0, moved), (name, gap, moved)


# the default run trains a few activations end to end (the one-step test above checks
# every activation's gradient); the slow run all of them
_DEFAULT_RUN = ("ReLU", "Tanh", "GELU", "ELU")


@pytest.mark.parametrize(
    "act",
    [a if a in _DEFAULT_RUN else pytest.param(a, marks=pytest.mark.slow) for a in ACTIVATIONS],
)
def test_batched_kernel_equals_one_by_one_for_each_activation(act: str) -> None:
    # several epochs, unequal subsets (partial batches, models that stop early), SGD
    # variants and Adam: logits within 5e-5 of one-by-one training (float32
    # rounding, and numpy's tanh on the CPU)
    pytest.importorskip("torch")
    from privaudit.models.torch_batched import fit_many

    X, y = _data(200)
    rng = np.random.default_rng(2)
    subsets = [np.sort(rng.choice(200, size=n, replace=False)) for n in (90, 100, 77)]
    seeds = [4, 5, 6]
    # plain SGD (the update written into the parameters), SGD with momentum and weight
    # decay, Adam (the optimizer of the stacked tensors)
    for opt, momentum, wd, bias in (
        ("sgd", 0.0, 0.0, True),
        ("sgd", 0.9, 0.01, True),
        ("adam", 0.0, 0.01, False),
    ):
        rec = _recipe(
            act,
            factory_kwargs={"act": act, "bias": bias},
            optimizer=opt,
            momentum=momentum,
            weight_decay=wd,
        )
        tr = TorchTrainer(rec, n_classes=3)
        batched = fit_many(tr, X, y, subsets, seeds, n_classes=3, kernel="mlp")
        for s, sd, m in zip(subsets, seeds, batched, strict=True):
            one = tr.fit(X[s], y[s], seed=sd, n_classes=3)
            np.testing.assert_allclose(m.logits(X), one.logits(X), atol=5e-5, err_msg=opt)


def test_equal_subsets_with_a_partial_last_batch() -> None:
    # every model has the same number of rows at every step (the last batch of an epoch
    # partial): the kernel's shared-count path
    pytest.importorskip("torch")
    from privaudit.models.torch_batched import fit_many

    X, y = _data(200)
    subsets = [np.arange(0, 100), np.arange(50, 150), np.arange(100, 200)]
    for opt in ("sgd", "adam"):
        rec = _recipe("GELU", optimizer=opt, batch_size=24)  # 100 = 4 * 24 + 4
        tr = TorchTrainer(rec, n_classes=3)
        seeds = [1, 2, 3][: len(subsets)]
        ms = fit_many(tr, X, y, subsets, seeds, n_classes=3, kernel="mlp")
        for s, sd, m in zip(subsets, seeds, ms, strict=True):
            one = tr.fit(X[s], y[s], seed=sd, n_classes=3)
            np.testing.assert_allclose(m.logits(X), one.logits(X), atol=5e-5, err_msg=opt)


def _trainer_and_gather(d: int, opt: str) -> tuple[TorchTrainer, Any]:
    """The one-by-one trainer of a tanh MLP on ``d`` features with optimizer ``opt``, and
    ``gather(X, y, rows)``: the kernel's training table (``_Data``) of its initial network
    on those rows, on the CPU."""
    from privaudit.models.torch_mlp_kernel import _Data, mlp_ops

    rec = _recipe("Tanh", factory_kwargs={"act": "Tanh", "n_features": d}, optimizer=opt)
    module = rec.build(0)
    ops = mlp_ops(module)
    assert ops is not None
    stacked = {k: v.detach()[None] for k, v in module.state_dict().items()}

    def gather(X: np.ndarray, y: np.ndarray, rows: np.ndarray) -> Any:
        return _Data.gather(X, y, [rows], stacked, ops, "cpu")

    return TorchTrainer(rec, n_classes=3), gather


def test_first_bias_folded_or_not_trains_as_one_by_one() -> None:
    # on the CPU the first layer's bias is the weight of a padding feature of ones when
    # the input width is not a multiple of 16 (4 features here), and a separate bias when
    # it is (16 features: no padding); both train as the one-by-one trainer does, with
    # plain SGD (the update inside the weight product) and Adam (the optimizer's step)
    pytest.importorskip("torch")
    from privaudit.models.torch_batched import fit_many

    rng = np.random.default_rng(3)
    subsets = [np.arange(0, 90), np.arange(30, 120)]
    for d in (4, 16):
        X = rng.normal(size=(120, d))
        y = (X[:, 0] > 0).astype(np.int64) + (X[:, 1] > 1).astype(np.int64)
        for opt in ("sgd", "adam"):
            tr, gather = _trainer_and_gather(d, opt)
            data = gather(X, y, subsets[0])
            assert (data.b0 is not None) == (d % 16 != 0)
            if data.b0 is not None:
                assert (data.X[:, d] == 1.0).all() and data.b0 not in data.work
            ms = fit_many(tr, X, y, subsets, [1, 2], n_classes=3, kernel="mlp")
            for s, sd, m in zip(subsets, [1, 2], ms, strict=True):
                one = tr.fit(X[s], y[s], seed=sd, n_classes=3)
                np.testing.assert_allclose(m.logits(X), one.logits(X), atol=5e-5, err_msg=opt)


def _one_hot_rows(rng: np.random.Generator, n: int, d: int, n_numeric: int) -> np.ndarray:
    """``n_numeric`` standard-normal columns, then one-hot codes of 4 categorical
    columns filling the rest of the ``d`` columns (one 1 in each group)."""
    X = np.zeros((n, d))
    X[:, :n_numeric] = rng.normal(size=(n, n_numeric))
    groups = np.array_split(np.arange(n_numeric, d), 4)
    for g in groups:
        X[np.arange(n), rng.choice(g, size=n)] = 1.0
    return X


def test_sparse_rows_hold_every_nonzero_and_only_sparse_tables_use_them() -> None:
    pytest.importorskip("torch")
    from privaudit.models.torch_mlp_kernel import SPARSE_FRACTION, _SparseRows

    rng = np.random.default_rng(5)
    X = _one_hot_rows(rng, 300, 48, 3).astype(np.float32)
    X[7, 0] = 0.0  # a row with fewer nonzeros: padded with feature 0, value 0
    X[8, 1] = np.nan  # NaN is kept as a nonzero
    sp = _SparseRows.of(X)
    assert sp is not None and sp.idx.shape == (300, 7) and sp.width == 48
    back = np.zeros_like(X)
    np.add.at(back, (np.repeat(np.arange(300), 7), sp.idx.numpy().ravel()), sp.val.numpy().ravel())
    np.testing.assert_array_equal(back, X)  # NaN == NaN in assert_array_equal
    assert sp.val[7].tolist().count(0.0) == 1
    dense = rng.normal(size=(50, 48)).astype(np.float32)
    dense[:, : int(48 * (1 - SPARSE_FRACTION))] = 0.0  # a quarter nonzero: still sparse
    assert _SparseRows.of(dense) is not None
    dense[0, 0] = 1.0  # one row above a quarter: the dense product
    assert _SparseRows.of(dense) is None
    assert _SparseRows.of(np.zeros((4, 16), dtype=np.float32)) is None


def test_the_sparse_step_writes_the_dense_batch_bit_for_bit() -> None:
    """The weight gradient reads a dense batch that a sparse step writes from the gathered
    nonzeros: every row equals the table's row exactly (NaN included), for every model's
    rows of a step, and the first layer's output is the product on those rows."""
    torch = pytest.importorskip("torch")
    from privaudit.models.torch_mlp_kernel import _Layer, _SparseRows

    rng = np.random.default_rng(6)
    X = _one_hot_rows(rng, 200, 48, 3).astype(np.float32)
    X[3, 0] = 0.0  # a padded row
    X[4, 1] = np.nan
    X[5, 1] = 0.0  # padded, its feature 0 nonzero: the padding's 0 adds onto a real value
    K, n, out = 3, 16, 5
    sp = _SparseRows.of(X)
    assert sp is not None
    sp = sp.for_batches(K, n)
    w_t = torch.randn(K, 48, out)
    lay = _Layer(w_t.transpose(1, 2), None, w_t, None, torch.empty(K, n, out), None, None, None)
    ix = torch.from_numpy(rng.integers(0, 200, size=K * n))
    ix[0], ix[1], ix[2] = 3, 4, 5
    assert X[5, 0] != 0.0
    xb = torch.full((K * n, 48), 7.0)  # stale values of an earlier step are overwritten
    h, z = sp.first_layer(ix, n, lay, xb)
    want = X[ix.numpy()].reshape(K, n, 48)
    np.testing.assert_array_equal(h.numpy(), want)
    finite = np.isfinite(want).all(axis=2)
    expect = np.einsum("knd,kdo->kno", np.nan_to_num(want), w_t.numpy())
    np.testing.assert_allclose(z.numpy()[finite], expect[finite], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("d", [20, 48])
def test_sparse_inputs_train_as_one_by_one(d: int) -> None:
    # one-hot rows (3 numeric + 4 one-hot groups): the first layer's forward sums the
    # weight rows of each record's nonzeros, its weight stored (K, in, out); d=20 pads
    # to 32 with the bias folded in, d=48 has no padding and a separate bias; plain SGD
    # (the transposed update inside the product) and Adam (transposed gradients for the
    # optimizer) train as the one-by-one trainer does; dense rows keep the dense product
    pytest.importorskip("torch")
    from privaudit.models.torch_batched import fit_many

    rng = np.random.default_rng(4)
    X = _one_hot_rows(rng, 150, d, 3)  # d=20: 8 nonzeros of 32 with the bias column
    y = (X[:, 0] > 0).astype(np.int64) + (X[:, 5] > 0).astype(np.int64)
    uneven = [np.arange(0, 100), np.arange(40, 150), np.arange(10, 60)]
    even = [np.arange(0, 100), np.arange(50, 150)]  # each epoch ends in a cut step (4 rows)
    for opt, subsets in (("sgd", uneven), ("adam", uneven), ("sgd", even), ("adam", even)):
        tr, gather = _trainer_and_gather(d, opt)
        data = gather(X, y, subsets[0])
        assert data.sparse is not None and data.first_t
        assert (data.b0 is not None) == (d % 16 != 0)
        dense = gather(rng.normal(size=X.shape), y, subsets[0])
        assert dense.sparse is None and not dense.first_t
        seeds = [1, 2, 3][: len(subsets)]
        ms = fit_many(tr, X, y, subsets, seeds, n_classes=3, kernel="mlp")
        for s, sd, m in zip(subsets, seeds, ms, strict=True):
            one = tr.fit(X[s], y[s], seed=sd, n_classes=3)
            np.testing.assert_allclose(m.logits(X), one.logits(X), atol=5e-5, err_msg=opt)


def test_other_networks_fall_back_to_vmap() -> None:
    pytest.importorskip("torch")
    from privaudit.models.torch_batched import fit_many, mlp_layers

    X, y = _data(60)
    rec = _recipe("Tanh", factory=f"{FACTORIES}:layer_norm_mlp", factory_kwargs={}, epochs=2)
    tr = TorchTrainer(rec, n_classes=3)
    assert mlp_layers(rec.build(0)) is None
    with pytest.raises(InvalidInputError, match="elementwise activations"):
        fit_many(tr, X, y, [np.arange(30), np.arange(30, 60)], [1, 2], kernel="mlp")
    auto = fit_many(tr, X, y, [np.arange(30), np.arange(30, 60)], [1, 2], n_classes=3)
    one = tr.fit(X[30:], y[30:], seed=2, n_classes=3)
    np.testing.assert_allclose(auto[1].logits(X), one.logits(X), atol=1e-5)


def test_unusual_orders_of_layers_and_activations() -> None:
    # two activations in a row (the second reads an activation's output, not a fresh
    # linear output) and an activation after the last linear layer (its gradient comes
    # from the loss, not from a layer's input-gradient buffer)
    pytest.importorskip("torch")
    from privaudit.models.torch_batched import fit_many

    X, y = _data(120)
    rec = _recipe("Tanh", factory=f"{FACTORIES}:odd_mlp", factory_kwargs={})
    tr = TorchTrainer(rec, n_classes=3)
    subsets = [np.arange(0, 70), np.arange(40, 120)]
    batched = fit_many(tr, X, y, subsets, [1, 2], n_classes=3, kernel="mlp")
    for s, sd, m in zip(subsets, [1, 2], batched, strict=True):
        one = tr.fit(X[s], y[s], seed=sd, n_classes=3)
        np.testing.assert_allclose(m.logits(X), one.logits(X), atol=5e-5)


def test_batch_indices_are_the_one_by_one_trainers_batches() -> None:
    # the kernel's index table, filled per model in one scatter, holds exactly the
    # batches of batch_order (unequal subsets: partial batches, models that stop early)
    from privaudit.models.torch_mlp_kernel import batch_indices
    from privaudit.models.torch_recipe import batch_order

    rng = np.random.default_rng(3)
    subs = [rng.choice(500, size=n, replace=False) for n in (37, 64, 5, 100)]
    seeds = [11, 12, 13, 14]
    idx, count = batch_indices(subs, seeds, 16, 3)
    for k, (s, seed) in enumerate(zip(subs, seeds, strict=True)):
        order = batch_order(s.size, 16, 3, np.random.default_rng(seed))
        assert count[len(order) :, k].sum() == 0
        assert (idx[len(order) :, k] == 0).all()
        for step, rows in enumerate(order):
            assert count[step, k] == rows.size
            np.testing.assert_array_equal(idx[step, k, : rows.size], s[rows])
            assert (idx[step, k, rows.size :] == 0).all()


def test_the_cpu_tanh_is_numpys_in_place_and_near_the_exact_tanh() -> None:
    # Tanh on a contiguous float32 CPU buffer is np.tanh written into the tensor's memory:
    # within 1e-7 of the float64 tanh (torch.tanh's scalar loop is several times slower);
    # anything else (float64, a strided view) is torch.tanh
    torch = pytest.importorskip("torch")
    from privaudit.models.torch_mlp_kernel import _fast_tanh, _fast_tanh_

    z = torch.linspace(-12.0, 12.0, 200_001)
    exact = torch.tanh(z.double())
    h = _fast_tanh_(z.clone())
    assert h.dtype == torch.float32
    np.testing.assert_array_equal(h.numpy(), np.tanh(z.numpy()))
    assert (h.double() - exact).abs().max().item() <= 1e-7
    buf = z.clone()
    assert _fast_tanh_(buf).data_ptr() == buf.data_ptr()
    assert torch.equal(_fast_tanh(z), h) and not torch.equal(z, h)  # the input is kept
    d = z.double()
    assert torch.equal(_fast_tanh_(d.clone()), torch.tanh(d))
    strided = z[:-1].clone().view(2, -1)[:, ::3]
    assert not strided.is_contiguous()
    expected = torch.tanh(strided)
    assert torch.equal(_fast_tanh_(strided), expected)


@pytest.mark.parametrize("act", ["ReLU", "Tanh", "Sigmoid", "GELU"])
def test_in_place_backwards_are_the_backwards(act: str) -> None:
    torch = pytest.importorskip("torch")
    from privaudit.models.torch_mlp_kernel import mlp_ops

    ops = mlp_ops(torch.nn.Sequential(torch.nn.Linear(3, 3), getattr(torch.nn, act)()))
    assert ops is not None
    op = ops[1]
    assert op.backward_ is not None  # type: ignore[union-attr]
    g = torch.Generator().manual_seed(1)
    z = torch.randn(2, 50, 7, generator=g)
    h = op.forward(z)  # type: ignore[union-attr]
    dh = torch.randn(2, 50, 7, generator=g)
    expected = op.backward(dh, z, h)  # type: ignore[union-attr]
    got = op.backward_(dh, z, h)  # type: ignore[union-attr]
    assert got.data_ptr() == dh.data_ptr()
    assert torch.equal(got, expected)
