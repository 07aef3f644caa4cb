"""A small class-conditional convolutional VAE: the image generator of PANORAMIA.

PANORAMIA (Kazmi et al., NeurIPS 2024, Section 3, Phase 1) trains a generative model ``G``
on a subset ``D_G`` of the known members and uses its samples as non-members. The paper
uses StyleGAN2 on CIFAR-10 (Section 5); this module provides a generator that trains on a
CPU in minutes on a few thousand MNIST-sized images: a conditional VAE (Kingma & Welling
2014; Sohn, Lee & Yan 2015, "Learning structured output representation using deep
conditional generative models") whose encoder and decoder both see the class label, so
that every generated image comes with the label the helper model and the scorers train on.

Architecture (``channels = c``, images ``(C, H, W)`` with ``H`` and ``W`` divisible by 4):

* encoder ``q(z | x, y)``: two 4x4 stride-2 convolutions (``C -> c -> 2c``, ReLU), the
  flattened map concatenated with the one-hot label, a ``hidden``-unit ReLU layer, then
  linear heads for the mean and log-variance of a ``latent_dim``-dimensional Gaussian;
* decoder ``p(x | z, y)``: ``[z, one-hot y] -> hidden -> 2c x H/4 x W/4`` (ReLU), two 4x4
  stride-2 transposed convolutions back to ``C x H x W`` pixel logits (Bernoulli
  likelihood of pixel intensities in [0, 1], the usual choice for MNIST).

Loss per image: ``BCE(x, sigmoid(decoder)) summed over pixels + kl_weight *
KL(q(z|x,y) || N(0, I))`` (``kl_weight = 1`` is the ELBO; below 1 trades prior fit for
sharper reconstructions, Higgins et al. 2017). Adam, mini-batches of a fresh permutation
per epoch.

Sampling (:meth:`ConditionalVAE.sample`): labels drawn from the class proportions of the
training data ``D_G`` (or given), ``z ~ N(0, temperature^2 I)``, and the image is read
off the decoder's pixel probabilities ``p``:

* ``decode="matched"`` (default): ``p`` mapped through the monotone quantile map
  ``F_real^{-1}(F_gen(p))`` fitted at the end of training, where ``F_real`` is the
  distribution of all pixel values of the training images and ``F_gen`` that of the
  decoder means of as many prior samples (histogram matching); for colour images
  (``C > 1``) one map per channel, so that each channel keeps its own histogram (a
  pooled map would give every channel the histogram of all three). A VAE's decoder mean is
  blurry -- on MNIST about 21% of its pixels are grey (0.1-0.9) against 9% in real
  digits -- and a small CNN tells such samples from real digits with AUC 1.0; matched
  samples keep the decoder's shapes with the real images' intensity histogram (AUC about
  0.8 for the same detector; measured on 1,500 MNIST images, see the PANORAMIA note).
  This matters for PANORAMIA: the more recognisable the synthetic data, the larger
  ``c_lb`` and the less ``eps_tilde`` can show (Kazmi et al. 2024, Section 4.2). The map
  uses only the training data (``D_G``).
* ``decode="mean"``: ``p`` itself;
* ``decode="bernoulli"``: one Bernoulli draw per pixel (binary images).

Reproducibility: the initial weights and the reparameterisation noise come from
``torch.manual_seed(seed)`` inside ``torch.random.fork_rng`` over the CPU and every CUDA
device (``manual_seed`` seeds them all; the caller's global state, CUDA included, is
untouched), the batch order from ``numpy.random.default_rng(seed)``; sampling uses its
own seed the same way. On CPU two fits with the same seed give the same weights bit for bit.
Weights are saved as safetensors with JSON metadata (:meth:`ConditionalVAE.save`,
:func:`load_conditional_vae`); nothing is pickled.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privaudit._validation import as_float_array, as_label_array, check_positive_int, fail
from privaudit.models.causal_lm import _all_cuda_devices
from privaudit.models.torch_models import read_state_dict
from privaudit.models.torch_recipe import require_torch, resolve_device
from privaudit.runtime.progress import ProgressOption, progress_bar

__all__ = [
    "DECODES",
    "ConditionalVAE",
    "VAESettings",
    "fit_conditional_vae",
    "load_conditional_vae",
]

#: How a sampled image is read off the decoder.
DECODES: tuple[str, ...] = ("matched", "mean", "bernoulli")
_N_QUANTILES = 1001
_FORMAT = "privaudit-conditional-vae"


@dataclasses.dataclass(frozen=True)
class VAESettings:
    """Hyper-parameters of the conditional VAE (JSON-able through :meth:`settings`).

    Parameters
    ----------
    latent_dim : int
        Dimension of ``z``.
    channels : int
        Channels of the first convolution (the second has twice as many).
    hidden : int
        Width of the fully connected layer on each side.
    epochs, batch_size : int
    lr : float
        Adam learning rate.
    kl_weight : float
        Weight of the KL term (1 = the ELBO).
    decode : {"matched", "mean", "bernoulli"}
        How :meth:`ConditionalVAE.sample` turns decoder probabilities into pixels (see
        the module docstring); ``"matched"`` (default) maps them through the quantile
        map fitted on the training data.
    temperature : float
        Standard deviation of the latent prior when sampling (1 = the prior).
    device : {"cpu", "cuda", "auto"}
    """

    latent_dim: int = 8
    channels: int = 32
    hidden: int = 256
    epochs: int = 60
    batch_size: int = 64
    lr: float = 1e-3
    kl_weight: float = 1.0
    decode: str = "matched"
    temperature: float = 1.0
    device: str = "cpu"

    def __post_init__(self) -> None:
        for name in ("latent_dim", "channels", "hidden", "epochs", "batch_size"):
            check_positive_int(getattr(self, name), name)
        for name in ("lr", "kl_weight", "temperature"):
            v = getattr(self, name)
            if (
                isinstance(v, bool)
                or not isinstance(v, int | float)
                or not math.isfinite(v)
                or v <= 0
            ):
                raise fail(name, "a finite positive number", repr(v))
        if self.decode not in DECODES:
            raise fail("decode", " or ".join(repr(d) for d in DECODES), repr(self.decode))
        if self.device not in ("auto", "cpu", "cuda"):
            raise fail("device", "'auto', 'cpu' or 'cuda'", repr(self.device))

    @classmethod
    def from_mapping(cls, params: Mapping[str, Any] | None) -> VAESettings:
        """Settings from a dict (unknown keys are an error naming them)."""
        d = dict(params or {})
        known = {f.name for f in dataclasses.fields(cls)}
        bad = sorted(set(d) - known)
        if bad:
            raise fail("vae", "keys among " + ", ".join(sorted(known)), bad)
        return cls(**d)

    def settings(self) -> dict[str, Any]:
        """JSON-able description of everything that affects the fit and the samples."""
        return dataclasses.asdict(self)


def _check_shape(input_shape: Sequence[int]) -> tuple[int, int, int]:
    try:
        shape = tuple(int(s) for s in input_shape)
    except (TypeError, ValueError):
        raise fail("input_shape", "(channels, height, width)", repr(input_shape)) from None
    if len(shape) != 3 or min(shape) < 1 or shape[1] % 4 or shape[2] % 4:
        raise fail(
            "input_shape", "(channels, height, width), height and width divisible by 4", shape
        )
    return shape[0], shape[1], shape[2]


def _build_module(shape: tuple[int, int, int], n_classes: int, s: VAESettings) -> Any:
    """The encoder/decoder pair as one ``nn.Module`` (see the module docstring)."""
    torch = require_torch()
    nn = torch.nn
    C, H, W = shape
    c = s.channels
    flat = 2 * c * (H // 4) * (W // 4)

    class _CVAE(nn.Module):  # type: ignore[name-defined]
        def __init__(self) -> None:
            super().__init__()
            self.n_classes = n_classes
            self.enc_conv = nn.Sequential(
                nn.Unflatten(1, (C, H, W)),
                nn.Conv2d(C, c, 4, stride=2, padding=1),
                nn.ReLU(),
                nn.Conv2d(c, 2 * c, 4, stride=2, padding=1),
                nn.ReLU(),
                nn.Flatten(),
            )
            self.enc_fc = nn.Sequential(nn.Linear(flat + n_classes, s.hidden), nn.ReLU())
            self.mu = nn.Linear(s.hidden, s.latent_dim)
            self.logvar = nn.Linear(s.hidden, s.latent_dim)
            self.dec_fc = nn.Sequential(
                nn.Linear(s.latent_dim + n_classes, s.hidden),
                nn.ReLU(),
                nn.Linear(s.hidden, flat),
                nn.ReLU(),
            )
            self.dec_up1 = nn.ConvTranspose2d(2 * c + n_classes, c, 4, stride=2, padding=1)
            self.dec_up2 = nn.ConvTranspose2d(c + n_classes, C, 4, stride=2, padding=1)

        def encode(self, x: Any, onehot: Any) -> tuple[Any, Any]:
            h = self.enc_fc(torch.cat([self.enc_conv(x), onehot], dim=1))
            return self.mu(h), self.logvar(h)

        def decode(self, z: Any, onehot: Any) -> Any:
            """Pixel logits, flattened ``(n, C*H*W)``."""
            h = self.dec_fc(torch.cat([z, onehot], dim=1)).reshape(-1, 2 * c, H // 4, W // 4)
            h = torch.relu(self.dec_up1(torch.cat([h, _label_maps(onehot, H // 4, W // 4)], 1)))
            h = self.dec_up2(torch.cat([h, _label_maps(onehot, H // 2, W // 2)], 1))
            return h.flatten(1)

    return _CVAE()


def _label_maps(onehot: Any, h: int, w: int) -> Any:
    """The one-hot label as constant feature maps ``(n, n_classes, h, w)``: the decoder
    sees the class at every resolution, so that it cannot ignore it."""
    return onehot[:, :, None, None].expand(-1, -1, h, w)


def _onehot(torch: Any, y: NDArray[np.int64], n_classes: int, dev: str) -> Any:
    return torch.nn.functional.one_hot(torch.as_tensor(y, dtype=torch.long), n_classes).to(
        device=dev, dtype=torch.float32
    )


def _check_images(X: ArrayLike, d: int, name: str = "X") -> NDArray[np.float64]:
    a = as_float_array(X, name, ndim=2)
    if a.shape[1] != d:
        raise fail(name, f"{d} columns (flattened images)", f"{a.shape[1]} columns")
    if a.min() < 0.0 or a.max() > 1.0:
        raise fail(name, "pixel intensities in [0, 1]", f"range [{a.min():.4g}, {a.max():.4g}]")
    return a


def _check_labels(y: ArrayLike, n: int, n_classes: int, name: str = "y") -> NDArray[np.int64]:
    lab = as_label_array(y, name)
    if lab.size != n:
        raise fail(name, f"{n} labels", f"{lab.size} labels")
    if lab.size and lab.max() >= n_classes:
        raise fail(name, f"labels in 0..{n_classes - 1}", f"maximum {int(lab.max())}")
    return lab


class ConditionalVAE:
    """A trained class-conditional VAE (see the module docstring).

    Attributes
    ----------
    module : torch.nn.Module
    input_shape : tuple of int
        ``(C, H, W)``; records are flattened.
    n_classes : int
    class_counts : float64 array, shape (n_classes,)
        Label counts of the training data (``D_G``).
    class_proportions : float64 array, shape (n_classes,)
        ``class_counts / class_counts.sum()``; :meth:`sample` draws labels from them by
        default.
    vae_settings : VAESettings
    pixel_map : (source quantiles, target quantiles) or None
        The ``decode="matched"`` map: quantiles of the decoder means of prior samples and
        the same quantiles of the training pixels (``np.interp`` between them); each of
        shape ``(Q,)`` (one map for every pixel) or ``(C, Q)`` (one map per channel).
    fit_info : dict
        ``seed``, ``n_train``, ``epochs``, ``seconds``, ``loss_by_epoch`` (mean negative
        ELBO per image), ``bce_per_pixel`` (final epoch's training reconstruction
        cross-entropy per pixel).
    """

    def __init__(
        self,
        module: Any,
        *,
        input_shape: Sequence[int],
        n_classes: int,
        class_counts: ArrayLike,
        vae_settings: VAESettings,
        pixel_map: tuple[ArrayLike, ArrayLike] | None = None,
        fit_info: Mapping[str, Any] | None = None,
    ) -> None:
        self.module = module
        self.input_shape = _check_shape(input_shape)
        self.n_classes = check_positive_int(n_classes, "n_classes", minimum=2)
        counts = as_float_array(class_counts, "class_counts", ndim=1)
        if counts.size != self.n_classes or (counts < 0).any() or not counts.sum() > 0:
            raise fail("class_counts", f"{self.n_classes} non-negative counts", counts)
        self.class_counts = counts
        self.class_proportions = counts / counts.sum()
        self.vae_settings = vae_settings
        self.pixel_map: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None
        if pixel_map is not None:
            src, dst = (
                np.asarray(pixel_map[0], dtype=np.float64),
                np.asarray(pixel_map[1], dtype=np.float64),
            )
            ok = src.shape == dst.shape and src.ndim in (1, 2) and src.shape[-1] >= 2
            if ok and src.ndim == 2:
                ok = src.shape[0] == self.input_shape[0]
            if not ok or not (np.isfinite(src).all() and np.isfinite(dst).all()):
                raise fail(
                    "pixel_map",
                    f"two finite quantile tables of one shape, (Q,) or ({self.input_shape[0]}, Q)",
                    f"shapes {src.shape} and {dst.shape}",
                )
            if (np.diff(src, axis=-1) < 0).any():
                raise fail("pixel_map", "increasing source quantiles", "a decrease")
            self.pixel_map = (src, dst)
        self.fit_info: dict[str, Any] = dict(fit_info or {})

    @property
    def n_pixels(self) -> int:
        """``C * H * W``."""
        C, H, W = self.input_shape
        return C * H * W

    def __repr__(self) -> str:
        return (
            f"ConditionalVAE(input_shape={self.input_shape}, n_classes={self.n_classes}, "
            f"latent_dim={self.vae_settings.latent_dim})"
        )

    def settings(self) -> dict[str, Any]:
        """JSON-able: the hyper-parameters, the shape, the classes and their proportions."""
        return {
            "kind": "conditional-conv-vae",
            **self.vae_settings.settings(),
            "input_shape": list(self.input_shape),
            "n_classes": self.n_classes,
            "class_proportions": [float(v) for v in self.class_proportions],
        }

    def sample(
        self,
        n: int,
        *,
        seed: int,
        labels: ArrayLike | None = None,
        proportions: ArrayLike | None = None,
        decode: str | None = None,
        temperature: float | None = None,
    ) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
        """``n`` generated images (flattened, in [0, 1]) and their labels.

        Parameters
        ----------
        n : int
        seed : int
            Labels (when drawn), latents and Bernoulli pixels all come from it.
        labels : int array of shape (n,), optional
            The class of each image; default: drawn i.i.d. from ``proportions``.
        proportions : array of shape (n_classes,), optional
            Class weights to draw labels from (default: those of the training data).
        decode, temperature : optional
            Override the settings' ``decode`` / ``temperature``.

        Returns
        -------
        (X, y) : float64 array (n, C*H*W), int64 array (n,)
        """
        n = check_positive_int(n, "n")
        dec = self.vae_settings.decode if decode is None else decode
        if dec not in DECODES:
            raise fail("decode", " or ".join(repr(d) for d in DECODES), repr(dec))
        temp = self.vae_settings.temperature if temperature is None else temperature
        if isinstance(temp, bool) or not isinstance(temp, int | float) or not temp > 0:
            raise fail("temperature", "a positive number", repr(temp))
        rng = np.random.default_rng(int(seed))
        if labels is not None:
            if proportions is not None:
                raise fail("proportions", "None when labels are given", "both")
            y = _check_labels(labels, n, self.n_classes, "labels")
        else:
            p = self.class_proportions
            if proportions is not None:
                p = as_float_array(proportions, "proportions", ndim=1)
                if p.size != self.n_classes or (p < 0).any() or not p.sum() > 0:
                    raise fail("proportions", f"{self.n_classes} non-negative weights", p)
                p = p / p.sum()
            y = np.asarray(rng.choice(self.n_classes, size=n, p=p), dtype=np.int64)
        z = rng.standard_normal((n, self.vae_settings.latent_dim)) * float(temp)
        probs = self._decoder_means(y, z)
        if dec == "bernoulli":
            X = (rng.random(probs.shape) < probs).astype(np.float64)
        elif dec == "matched":
            if self.pixel_map is None:
                raise fail("decode", "'mean' or 'bernoulli' (this VAE has no pixel map)", dec)
            X = _apply_pixel_map(probs, self.pixel_map, self.input_shape)
        else:
            X = probs
        return np.clip(X, 0.0, 1.0), y

    def _decoder_means(self, y: NDArray[np.int64], z: NDArray[np.float64]) -> NDArray[np.float64]:
        torch = require_torch()
        dev = resolve_device(self.vae_settings.device)
        module = self.module.to(dev)
        module.eval()
        out = []
        with torch.no_grad():
            for s in range(0, y.size, 1024):
                zb = torch.as_tensor(z[s : s + 1024], dtype=torch.float32, device=dev)
                oh = _onehot(torch, y[s : s + 1024], self.n_classes, dev)
                out.append(torch.sigmoid(module.decode(zb, oh)).double().cpu().numpy())
        return np.concatenate(out)

    def reconstruction_bce(self, X: ArrayLike, y: ArrayLike) -> float:
        """Mean binary cross-entropy per pixel of the decoder mean at the encoder mean
        (``z = mu(x, y)``): a deterministic sanity metric, e.g. on held-out images."""
        torch = require_torch()
        Xa = _check_images(X, self.n_pixels)
        ya = _check_labels(y, Xa.shape[0], self.n_classes)
        dev = resolve_device(self.vae_settings.device)
        module = self.module.to(dev)
        module.eval()
        total = 0.0
        with torch.no_grad():
            for s in range(0, Xa.shape[0], 1024):
                xb = torch.from_numpy(np.array(Xa[s : s + 1024], dtype=np.float32)).to(dev)
                oh = _onehot(torch, ya[s : s + 1024], self.n_classes, dev)
                mu, _ = module.encode(xb, oh)
                logits = module.decode(mu, oh)
                total += float(
                    torch.nn.functional.binary_cross_entropy_with_logits(
                        logits, xb, reduction="sum"
                    )
                )
        return total / (Xa.shape[0] * self.n_pixels)

    # -- persistence ---------------------------------------------------------------
    def save(self, path: str | Path) -> Path:
        """Write the weights as safetensors (atomically) with JSON metadata: the settings,
        the shape, the class proportions and ``fit_info`` (scalars and lists); no code."""
        from safetensors.numpy import save_file

        p = Path(path)
        tensors = {
            k: np.ascontiguousarray(v.detach().cpu().numpy())
            for k, v in self.module.state_dict().items()
        }
        info = {
            k: v for k, v in self.fit_info.items() if isinstance(v, bool | int | float | str | list)
        }
        meta = {
            "format": _FORMAT,
            "settings": json.dumps(self.vae_settings.settings(), sort_keys=True),
            "input_shape": json.dumps(list(self.input_shape)),
            "n_classes": str(self.n_classes),
            "class_counts": json.dumps([float(v) for v in self.class_counts]),
            "fit_info": json.dumps(info),
            "pixel_map": json.dumps(
                None if self.pixel_map is None else [v.tolist() for v in self.pixel_map]
            ),
        }
        tmp = p.with_name(p.name + ".tmp")
        save_file(tensors, str(tmp), metadata=meta)
        tmp.replace(p)
        return p


def _fit_pixel_map(
    gen: NDArray[np.float64],
    real: NDArray[np.float64],
    shape: tuple[int, int, int],
    levels: NDArray[np.float64],
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The ``decode="matched"`` quantile tables: decoder means ``gen`` against the
    training pixels ``real`` (both ``(n, C*H*W)``), pooled when ``C == 1``, else one
    ``(C, Q)`` row per channel (the CHW layout: channel ``c`` is the ``c``-th block of
    ``H*W`` columns)."""
    C = shape[0]
    if C == 1:
        src = np.maximum.accumulate(np.quantile(gen.ravel(), levels))
        return src, np.quantile(real.ravel(), levels)
    g = gen.reshape(gen.shape[0], C, -1)
    r = real.reshape(real.shape[0], C, -1)
    src = np.stack([np.maximum.accumulate(np.quantile(g[:, c].ravel(), levels)) for c in range(C)])
    return src, np.stack([np.quantile(r[:, c].ravel(), levels) for c in range(C)])


def _apply_pixel_map(
    probs: NDArray[np.float64],
    pixel_map: tuple[NDArray[np.float64], NDArray[np.float64]],
    shape: tuple[int, int, int],
) -> NDArray[np.float64]:
    """Decoder means through the quantile map (per channel when it has one row each)."""
    src, dst = pixel_map
    if src.ndim == 1:
        return np.asarray(np.interp(probs, src, dst), dtype=np.float64)
    C = shape[0]
    p = probs.reshape(probs.shape[0], C, -1)
    out = np.empty_like(p)
    for c in range(C):
        out[:, c] = np.interp(p[:, c], src[c], dst[c])
    return out.reshape(probs.shape)


def load_conditional_vae(path: str | Path) -> ConditionalVAE:
    """Read a VAE written by :meth:`ConditionalVAE.save` (safetensors; nothing is executed)."""
    p = Path(path)
    if p.suffix.lower() != ".safetensors":
        raise fail("path", "a .safetensors file written by ConditionalVAE.save", p.name)
    state, meta = read_state_dict(p)
    if meta.get("format") != _FORMAT:
        raise fail("path", f"a file written by ConditionalVAE.save ({_FORMAT})", meta.get("format"))
    s = VAESettings.from_mapping(json.loads(meta["settings"]))
    shape = _check_shape(json.loads(meta["input_shape"]))
    n_classes = int(meta["n_classes"])
    module = _build_module(shape, n_classes, s)
    try:
        module.load_state_dict(state, strict=True)
    except Exception as exc:
        raise fail(
            "weights", "a state dict of this VAE's architecture", f"{p.name}: {exc}"
        ) from None
    module.eval()
    return ConditionalVAE(
        module,
        input_shape=shape,
        n_classes=n_classes,
        class_counts=json.loads(meta["class_counts"]),
        vae_settings=s,
        pixel_map=json.loads(meta.get("pixel_map", "null")),
        fit_info=json.loads(meta.get("fit_info", "{}")),
    )


def fit_conditional_vae(
    X: ArrayLike,
    y: ArrayLike,
    *,
    seed: int,
    input_shape: Sequence[int] = (1, 28, 28),
    n_classes: int | None = None,
    settings: VAESettings | Mapping[str, Any] | None = None,
    progress: ProgressOption = None,
) -> ConditionalVAE:
    """Train a :class:`ConditionalVAE` on flattened images ``X`` in [0, 1] with labels ``y``.

    In PANORAMIA the training data is ``D_G`` only (Kazmi et al. 2024, Section 3, Phase 1).

    Parameters
    ----------
    X : array (n, C*H*W)
    y : int array (n,)
    seed : int
        Initial weights, reparameterisation noise and batch order.
    input_shape : (C, H, W)
    n_classes : int, optional
        An integer >= 2 (the model needs two classes at least); default ``max(y) + 1``,
        or 2 when every label is 0.
    settings : VAESettings or mapping, optional
    progress : progress option, optional
        Progress over epochs (:mod:`privaudit.runtime.progress`; None = a bar on a
        terminal only).

    Returns
    -------
    ConditionalVAE
    """
    require_torch()  # a missing torch is reported before any argument
    s = settings if isinstance(settings, VAESettings) else VAESettings.from_mapping(settings)
    shape, Xa, ya, C = _fit_inputs(X, y, seed=seed, input_shape=input_shape, n_classes=n_classes)
    dev = resolve_device(s.device)
    t0 = time.perf_counter()
    module, losses, bce_last = _train(
        Xa, ya, shape, C, s, seed=int(seed), dev=dev, progress=progress
    )
    counts = np.bincount(ya, minlength=C).astype(np.float64)
    vae = ConditionalVAE(
        module.cpu(), input_shape=shape, n_classes=C, class_counts=counts, vae_settings=s
    )
    vae.pixel_map = _matched_pixel_map(vae, Xa, int(seed))
    vae.fit_info = {
        "seed": int(seed),
        "n_train": int(Xa.shape[0]),
        "epochs": int(s.epochs),
        "seconds": round(time.perf_counter() - t0, 3),
        "loss_by_epoch": [round(v, 4) for v in losses],
        "bce_per_pixel": bce_last,
        "device": dev,
    }
    return vae


def _fit_inputs(
    X: ArrayLike,
    y: ArrayLike,
    *,
    seed: int,
    input_shape: Sequence[int],
    n_classes: int | None,
) -> tuple[tuple[int, int, int], NDArray[np.float64], NDArray[np.int64], int]:
    """The checked shape, images, labels and number of classes of a fit (at least 2)."""
    shape = _check_shape(input_shape)
    Xa = _check_images(X, shape[0] * shape[1] * shape[2])
    n = Xa.shape[0]
    if n < 2:
        raise fail("X", "at least 2 images", n)
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise fail("seed", "an integer", repr(seed))
    if n_classes is not None:
        n_classes = check_positive_int(n_classes, "n_classes", minimum=2)
    ya = as_label_array(y, "y")
    if ya.size != n:  # before max(y): an empty y has none
        raise fail("y", f"{n} labels", f"{ya.size} labels")
    C = max(int(ya.max()) + 1, 2) if n_classes is None else n_classes
    return shape, Xa, _check_labels(ya, n, C), C


def _train(
    Xa: NDArray[np.float64],
    ya: NDArray[np.int64],
    shape: tuple[int, int, int],
    C: int,
    s: VAESettings,
    *,
    seed: int,
    dev: str,
    progress: ProgressOption,
) -> tuple[Any, list[float], float]:
    """Adam over ``s.epochs`` epochs of seeded mini-batches: the module (eval mode), the
    mean negative ELBO per image of each epoch and the last epoch's BCE per pixel."""
    torch = require_torch()
    n, d = Xa.shape
    rng = np.random.default_rng(seed)
    losses: list[float] = []
    bce_last = float("nan")
    Xt = torch.from_numpy(np.array(Xa, dtype=np.float32))
    Yt = _onehot(torch, ya, C, "cpu")
    with torch.random.fork_rng(devices=_all_cuda_devices()):
        torch.manual_seed(seed)  # seeds every CUDA device too: all are forked
        module = _build_module(shape, C, s).to(dev)
        module.train()
        opt = torch.optim.Adam(module.parameters(), lr=s.lr)
        with progress_bar("conditional VAE", s.epochs, enabled=progress) as bar:
            for _ in range(s.epochs):
                perm = torch.as_tensor(rng.permutation(n))
                tot, tot_bce = _train_epoch(module, opt, Xt, Yt, perm, s, dev)
                losses.append(tot / n)
                bce_last = tot_bce / (n * d)
                bar.advance()
    module.eval()
    return module, losses, bce_last


def _train_epoch(
    module: Any, opt: Any, Xt: Any, Yt: Any, perm: Any, s: VAESettings, dev: str
) -> tuple[float, float]:
    """One Adam step per mini-batch of ``perm`` on the negative ELBO (KL weighted by
    ``s.kl_weight``); the epoch's summed unweighted negative ELBO and summed BCE."""
    torch = require_torch()
    tot, tot_bce = 0.0, 0.0
    for start in range(0, perm.numel(), s.batch_size):
        idx = perm[start : start + s.batch_size]
        xb = Xt[idx].to(dev)
        oh = Yt[idx].to(dev)
        bce, kl = _elbo_terms(torch, module, xb, oh)
        loss = (bce + s.kl_weight * kl) / idx.numel()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        tot += float((bce + kl).detach())
        tot_bce += float(bce.detach())
    return tot, tot_bce


def _elbo_terms(torch: Any, module: Any, xb: Any, oh: Any) -> tuple[Any, Any]:
    """The summed reconstruction BCE at one reparameterised draw ``z = mu + sigma eps``
    and the KL divergence of ``q(z|x,y)`` from ``N(0, I)`` (Kingma & Welling 2014)."""
    mu, logvar = module.encode(xb, oh)
    z = mu + torch.exp(0.5 * logvar) * torch.randn_like(mu)
    logits = module.decode(z, oh)
    bce = torch.nn.functional.binary_cross_entropy_with_logits(logits, xb, reduction="sum")
    kl = -0.5 * torch.sum(1.0 + logvar - mu.pow(2) - logvar.exp())
    return bce, kl


def _matched_pixel_map(
    vae: ConditionalVAE, Xa: NDArray[np.float64], seed: int
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The "matched" decoding map: decoder means of n prior samples (labels in D_G's
    proportions) against the training pixels, at the same quantile levels."""
    n = Xa.shape[0]
    s = vae.vae_settings
    qrng = np.random.default_rng([seed, 1])
    yq = np.asarray(qrng.choice(vae.n_classes, size=n, p=vae.class_proportions), dtype=np.int64)
    zq = qrng.standard_normal((n, s.latent_dim)) * s.temperature
    levels = np.linspace(0.0, 1.0, _N_QUANTILES)
    return _fit_pixel_map(vae._decoder_means(yq, zq), Xa, vae.input_shape, levels)
