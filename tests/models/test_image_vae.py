"""The class-conditional VAE used as PANORAMIA's image generator (models/image_vae.py)."""

from __future__ import annotations

import numpy as np
import pytest

from privaudit.data import load_mnist
from privaudit.errors import InvalidInputError

torch = pytest.importorskip("torch")

from privaudit.models.image_vae import (  # noqa: E402
    ConditionalVAE,
    VAESettings,
    fit_conditional_vae,
    load_conditional_vae,
)

SMALL = {"epochs": 2, "channels": 4, "hidden": 32, "latent_dim": 4, "batch_size": 32}


@pytest.fixture(scope="module")
def mnist_small():
    ds = load_mnist()
    return ds.X[:240], ds.y[:240]


@pytest.fixture(scope="module")
def vae(mnist_small) -> ConditionalVAE:
    X, y = mnist_small
    return fit_conditional_vae(X, y, seed=3, n_classes=10, settings=SMALL)


def _weights(v: ConditionalVAE) -> dict[str, np.ndarray]:
    return {k: t.detach().numpy().copy() for k, t in v.module.state_dict().items()}


def test_fit_is_bit_reproducible_and_leaves_global_rng_alone(mnist_small, vae):
    X, y = mnist_small
    torch_state = torch.random.get_rng_state().clone()
    np_state = np.random.get_state()[1].copy()  # noqa: NPY002
    again = fit_conditional_vae(X, y, seed=3, n_classes=10, settings=SMALL)
    assert torch.equal(torch_state, torch.random.get_rng_state())
    assert np.array_equal(np_state, np.random.get_state()[1])  # noqa: NPY002
    w1, w2 = _weights(vae), _weights(again)
    assert all(np.array_equal(w1[k], w2[k]) for k in w1)
    other = fit_conditional_vae(X, y, seed=4, n_classes=10, settings=SMALL)
    assert not all(np.array_equal(w1[k], v) for k, v in _weights(other).items())
    a, b = vae.sample(50, seed=9), again.sample(50, seed=9)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    assert not np.array_equal(vae.sample(50, seed=10)[0], a[0])


def test_training_lowers_the_loss(mnist_small):
    X, y = mnist_small
    settings = {**SMALL, "epochs": 8, "batch_size": 16, "lr": 3e-3}
    v = fit_conditional_vae(X, y, seed=0, n_classes=10, settings=settings)
    losses = v.fit_info["loss_by_epoch"]
    assert len(losses) == 8 and losses[-1] < losses[0]
    # reconstruction beats the best constant image (per-pixel mean) on the training data
    p = np.clip(X.mean(axis=0), 1e-6, 1 - 1e-6)
    const_bce = float(-(X * np.log(p) + (1 - X) * np.log1p(-p)).mean())
    assert v.reconstruction_bce(X, y) < const_bce


def test_samples_shape_range_and_labels(mnist_small, vae):
    X, y = vae.sample(400, seed=1)
    assert X.shape == (400, 784) and y.shape == (400,)
    assert X.min() >= 0.0 and X.max() <= 1.0
    # labels follow the class proportions of the training data
    props = np.bincount(mnist_small[1], minlength=10) / mnist_small[1].size
    np.testing.assert_allclose(vae.class_proportions, props)
    counts = np.bincount(y, minlength=10)
    expected = 400 * props
    assert ((counts - expected) ** 2 / expected).sum() < 40  # chi2(9) far tail
    Xb, yb = vae.sample(30, seed=1, labels=np.full(30, 7))
    assert (yb == 7).all()
    Xb, yb = vae.sample(200, seed=1, decode="bernoulli")
    assert set(np.unique(Xb)) <= {0.0, 1.0}


def test_labels_only_from_classes_seen(mnist_small):
    X, y = mnist_small
    keep = y < 2
    v = fit_conditional_vae(X[keep], y[keep], seed=0, n_classes=10, settings={**SMALL, "epochs": 1})
    _, ys = v.sample(100, seed=0)
    assert set(ys.tolist()) <= {0, 1}


def test_save_load_round_trip(tmp_path, vae):
    p = vae.save(tmp_path / "vae.safetensors")
    back = load_conditional_vae(p)
    assert back.settings() == vae.settings()
    a, b = vae.sample(20, seed=5), back.sample(20, seed=5)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    assert back.fit_info["loss_by_epoch"] == vae.fit_info["loss_by_epoch"]
    bad = tmp_path / "x.safetensors"
    bad.write_bytes(b"not a file")
    with pytest.raises(InvalidInputError, match="path"):
        load_conditional_vae(bad)


def test_inputs_are_validated(mnist_small, vae):
    X, y = mnist_small
    with pytest.raises(InvalidInputError, match="X: expected pixel intensities"):
        fit_conditional_vae(X * 2, y, seed=0, settings=SMALL)
    with pytest.raises(InvalidInputError, match="X: expected 784 columns"):
        fit_conditional_vae(X[:, :100], y, seed=0, settings=SMALL)
    with pytest.raises(InvalidInputError, match="y: expected 240 labels"):
        fit_conditional_vae(X, y[:10], seed=0, settings=SMALL)
    with pytest.raises(InvalidInputError, match="vae: expected keys"):
        VAESettings.from_mapping({"epoch": 3})
    with pytest.raises(InvalidInputError, match="decode"):
        VAESettings(decode="mode")
    with pytest.raises(InvalidInputError, match="input_shape"):
        fit_conditional_vae(X, y, seed=0, input_shape=(1, 27, 29), settings=SMALL)
    with pytest.raises(InvalidInputError, match=r"labels: expected labels in 0\.\.9"):
        vae.sample(3, seed=0, labels=[1, 2, 12])
    with pytest.raises(InvalidInputError, match="n: expected"):
        vae.sample(0, seed=0)


def test_matched_decoding_keeps_the_shapes_with_the_real_pixel_histogram(mnist_small, vae):
    X, _ = mnist_small
    mean, _ = vae.sample(300, seed=2, decode="mean")
    matched, _ = vae.sample(300, seed=2, decode="matched")
    # a monotone map of each pixel's probability: the order of pixels is kept
    i = np.argsort(mean[0], kind="stable")
    assert (np.diff(matched[0][i]) >= 0).all()

    # and the pixel values follow the training images' distribution
    def grey(a: np.ndarray) -> float:
        return float(((a > 0.1) & (a < 0.9)).mean())

    assert abs(grey(matched) - grey(X)) < 0.5 * abs(grey(mean) - grey(X))
    assert abs((matched > 0.5).mean() - (X > 0.5).mean()) < 0.03
    assert vae.settings()["decode"] == "matched"


def test_fit_forks_the_rng_of_every_cuda_device(monkeypatch, mnist_small):
    """``torch.manual_seed`` also seeds every CUDA device, so the fit must fork them all
    (else a caller's CUDA RNG state changes). No GPU here: CUDA is faked with 2 devices
    and ``fork_rng`` is spied on (then run on the CPU generator only)."""
    import contextlib

    X, y = mnist_small
    real_fork = torch.random.fork_rng
    forked: list[list[int]] = []
    seeded_in: list[list[int] | None] = []
    current: list[list[int]] = []

    @contextlib.contextmanager
    def spy_fork(devices=None, *args, **kwargs):
        forked.append(list(devices) if devices is not None else None)
        current.append(forked[-1])
        try:
            with real_fork(*args, devices=[], **kwargs):
                yield
        finally:
            current.pop()

    real_seed = torch.manual_seed

    def spy_seed(seed):
        seeded_in.append(current[-1] if current else None)
        return real_seed(seed)

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.random, "fork_rng", spy_fork)
    monkeypatch.setattr(torch, "manual_seed", spy_seed)
    fit_conditional_vae(X[:16], y[:16], seed=0, n_classes=10, settings={**SMALL, "epochs": 1})
    assert forked == [[0, 1]]
    assert seeded_in and all(d == [0, 1] for d in seeded_in)  # seeded only inside the fork


@pytest.mark.parametrize(
    ("n_classes", "found"),
    [
        (1, "found 1"),
        (0, "found 0"),
        (-3, "found -3"),
        (2.9, "found 2.9"),
        ("10", "found '10'"),
        ("ten", "found 'ten'"),
    ],
)
def test_bad_n_classes_is_an_error_naming_it(mnist_small, n_classes, found):
    X, y = mnist_small
    keep = y < 2
    with pytest.raises(InvalidInputError, match=f"n_classes: expected an integer.*{found}"):
        fit_conditional_vae(X[keep], y[keep], seed=0, n_classes=n_classes, settings=SMALL)


def test_empty_labels_are_an_error_naming_y(mnist_small):
    X, _ = mnist_small
    empty = np.array([], dtype=np.int64)
    with pytest.raises(InvalidInputError, match="y: expected 5 labels, found 0 labels"):
        fit_conditional_vae(X[:5], empty, seed=0, settings=SMALL)
    with pytest.raises(InvalidInputError, match="y: expected 5 labels, found 0 labels"):
        fit_conditional_vae(X[:5], [], seed=0, settings=SMALL)
    with pytest.raises(InvalidInputError, match="y: expected 5 labels, found 0 labels"):
        fit_conditional_vae(X[:5], empty, seed=0, n_classes=10, settings=SMALL)


def test_valid_n_classes_unchanged(mnist_small):
    """Integer and numpy-integer n_classes, and the default (max(y) + 1, at least 2: one
    class seen still gives a 2-class model), fit as before."""
    X, y = mnist_small
    one = {**SMALL, "epochs": 1}
    a = fit_conditional_vae(X[:40], y[:40], seed=1, n_classes=10, settings=one)
    b = fit_conditional_vae(X[:40], y[:40], seed=1, n_classes=np.int64(10), settings=one)
    assert b.n_classes == 10 and isinstance(b.n_classes, int)
    assert all(
        np.array_equal(a.module.state_dict()[k], v) for k, v in b.module.state_dict().items()
    )
    assert (
        fit_conditional_vae(X[:40], y[:40], seed=1, settings=one).n_classes == int(y[:40].max()) + 1
    )
    zeros = np.zeros(6, dtype=np.int64)
    assert fit_conditional_vae(X[:6], zeros, seed=1, settings=one).n_classes == 2
