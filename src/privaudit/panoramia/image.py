"""The image modality of PANORAMIA (Kazmi et al., NeurIPS 2024): generator, helper, scorer.

:class:`ImageModality` implements the ``Modality`` protocol of
:mod:`privaudit.panoramia.game` for image classifiers whose records are a
:class:`~privaudit.data.Dataset` of flattened images, either intensities in [0, 1] (e.g.
the bundled MNIST subset, :func:`privaudit.data.load_mnist`) or per-channel standardised
intensities ``(x - mean_c) / std_c`` (the bundled CIFAR-10 subset,
:func:`privaudit.data.load_cifar10`, whose ``info`` records ``channel_mean`` and
``channel_std``; see :class:`ChannelStandardization`):

* **generator** (Section 3, Phase 1): a class-conditional convolutional VAE
  (:mod:`privaudit.models.image_vae`) trained on ``D_G`` only; its samples carry labels
  drawn from the class proportions of ``D_G``, so that the helper can be trained on them
  and the target's loss on them is defined. The paper uses StyleGAN2 (Section 5); a VAE
  trains on a CPU in minutes, at the price of samples that are easier to tell from real
  images (a larger ``c_lb``, which caps what ``eps_tilde`` can show: Section 4.2). On
  standardised images the VAE is fitted on the intensities ``x = z * std_c + mean_c``
  (its Bernoulli likelihood needs [0, 1]) and its samples are standardised back with the
  same per-channel figures, so the target, the helper and the scorers see generated
  images on the scale of the real ones.
* **helper** ``h`` (Section 5.1, Table 2: "trained on synthetic data" is the best
  baseline design): the target's architecture and training recipe
  (:class:`~privaudit.models.TorchTrainer` of the target's
  :class:`~privaudit.models.TorchRecipe`), trained on the helper pool of generated images
  only -- never on the audit's own non-members.
* **loss features** of a model ``g`` (the target ``f`` for the MIA, ``h`` for the
  baseline): per image, the cross-entropy loss ``-log p_g(y|x)`` (the paper's feature,
  Section 5.1) and the logit-scaled confidence ``log(p/(1-p))`` of the true class
  (Carlini et al. 2022, Sec. IV-C). The second is a monotone function of the first, but
  on a scale where the members of an overfitted model stay apart: their losses all round
  to about 0, while their logits spread over tens of nats.
* **scorer** (Section 3, Phase 2; the MIA and the baseline): a small CNN encoder of the
  image concatenated with an MLP over the standardised loss features, one logit out
  (higher = member), trained with binary cross-entropy by
  :func:`privaudit.attacks.selected_net.fit_selected_net`, which restores the epoch with
  the best validation criterion (the PANORAMIA bound itself) from a deep copy -- never
  the last epoch. Scores are the continuous logits, never hard 0/1 predictions.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import as_float_array, check_positive_int, fail
from privaudit.attacks.selected_net import fit_selected_net, predict_net
from privaudit.data.dataset import Dataset
from privaudit.models.image_vae import ConditionalVAE, VAESettings, fit_conditional_vae
from privaudit.models.torch_models import TorchTrainer
from privaudit.models.torch_nets import small_cnn
from privaudit.models.torch_recipe import TorchModel, TorchRecipe, require_torch
from privaudit.panoramia.game import dataset_from_arrays, dataset_to_arrays
from privaudit.signals.functions import cross_entropy_loss, logit_confidence

__all__ = [
    "ChannelStandardization",
    "ImageGenerator",
    "ImageModality",
    "ImageScorer",
    "ScorerSettings",
    "image_loss_features",
]

#: Names of the columns of :func:`image_loss_features`.
LOSS_FEATURES: tuple[str, ...] = ("cross_entropy", "logit_confidence")


@dataclasses.dataclass(frozen=True)
class ScorerSettings:
    """Architecture and training of the image scorer (MIA and baseline alike).

    Parameters
    ----------
    channels : int
        Channels of the first 3x3 convolution of the image encoder (the second has twice
        as many; each is followed by ReLU and 2x2 max-pooling).
    hidden : int
        Width of the image embedding and of the joint layer.
    loss_hidden : int
        Width of the two layers of the loss-feature MLP.
    epochs, batch_size : int
    lr, weight_decay : float
        Adam.
    patience : int, optional
        Stop after this many epochs without a better validation criterion (the best
        epoch is restored either way).
    """

    channels: int = 16
    hidden: int = 64
    loss_hidden: int = 32
    epochs: int = 30
    batch_size: int = 128
    lr: float = 1e-3
    weight_decay: float = 0.0
    patience: int | None = 10

    def __post_init__(self) -> None:
        for name in ("channels", "hidden", "loss_hidden", "epochs", "batch_size"):
            check_positive_int(getattr(self, name), name)
        if self.patience is not None:
            check_positive_int(self.patience, "patience")
        for name in ("lr", "weight_decay"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | float) or not np.isfinite(v) or v < 0:
                raise fail(name, "a finite non-negative number", repr(v))
        if not self.lr > 0:
            raise fail("lr", "a positive learning rate", self.lr)

    @classmethod
    def from_mapping(cls, params: Mapping[str, Any] | None) -> ScorerSettings:
        """Settings from a dict (unknown keys are an error naming them)."""
        d = dict(params or {})
        known = {f.name for f in dataclasses.fields(cls)}
        bad = sorted(set(d) - known)
        if bad:
            raise fail("scorer", "keys among " + ", ".join(sorted(known)), bad)
        return cls(**d)

    def settings(self) -> dict[str, Any]:
        """JSON-able."""
        return dataclasses.asdict(self)


def build_scorer_module(
    input_shape: tuple[int, int, int], n_loss_features: int, s: ScorerSettings
) -> Any:
    """``module(x_flat, loss_features) -> logits (batch,)``: CNN encoder of the image and
    MLP of the loss features, concatenated, then a ReLU layer and one output."""
    torch = require_torch()
    nn = torch.nn

    class _ImageLossNet(nn.Module):  # type: ignore[name-defined]
        def __init__(self) -> None:
            super().__init__()
            # the target-style CNN (models.torch_nets.small_cnn) with a ``hidden``-wide
            # embedding in place of the class logits
            self.image = nn.Sequential(
                small_cnn(n_classes=s.hidden, channels=s.channels, image_shape=input_shape),
                nn.ReLU(),
            )
            self.loss = nn.Sequential(
                nn.Linear(n_loss_features, s.loss_hidden),
                nn.ReLU(),
                nn.Linear(s.loss_hidden, s.loss_hidden),
                nn.ReLU(),
            )
            self.head = nn.Sequential(
                nn.Linear(s.hidden + s.loss_hidden, s.hidden), nn.ReLU(), nn.Linear(s.hidden, 1)
            )

        def forward(self, x: Any, loss: Any) -> Any:
            return self.head(torch.cat([self.image(x), self.loss(loss)], dim=1)).squeeze(1)

    return _ImageLossNet()


def image_loss_features(model: Any, records: Dataset) -> NDArray[np.float64]:
    """``(n, 2)``: cross-entropy loss and logit-scaled confidence of the true class under
    ``model`` (anything with ``logits(X) -> (n, C)``, e.g. a :class:`TorchModel`)."""
    if not isinstance(records, Dataset):
        raise fail("records", "a Dataset", type(records).__name__)
    logits_fn = getattr(model, "logits", None)
    if not callable(logits_fn):
        raise fail("model", "a model with logits(X) (e.g. a TorchModel)", type(model).__name__)
    z = as_float_array(logits_fn(records.X), "model logits", ndim=2)
    if z.shape[0] != records.n_records:
        raise fail("model logits", f"{records.n_records} rows", z.shape[0])
    return np.column_stack([cross_entropy_loss(z, records.y), logit_confidence(z, records.y)])


@dataclasses.dataclass(frozen=True)
class ChannelStandardization:
    """Per-channel standardisation of image records: ``z = (x - mean_c) / std_c`` for the
    intensity ``x`` in [0, 1] of a pixel of channel ``c`` (CHW layout, flattened).

    Parameters
    ----------
    mean, std : tuple of float
        One figure per channel, on the [0, 1] intensity scale; ``std`` positive.
    """

    mean: tuple[float, ...]
    std: tuple[float, ...]

    def __post_init__(self) -> None:
        try:
            mean = tuple(float(v) for v in self.mean)
            std = tuple(float(v) for v in self.std)
        except (TypeError, ValueError):
            raise fail(
                "standardization", "per-channel mean and std (numbers)", repr(self)
            ) from None
        if not mean or len(mean) != len(std):
            raise fail(
                "standardization", "as many means as stds, at least one", (len(mean), len(std))
            )
        if not all(np.isfinite(mean)) or not all(np.isfinite(v) and v > 0 for v in std):
            raise fail("standardization", "finite means and positive finite stds", (mean, std))
        object.__setattr__(self, "mean", mean)
        object.__setattr__(self, "std", std)

    @classmethod
    def from_info(cls, info: Mapping[str, Any]) -> ChannelStandardization | None:
        """From a :class:`Dataset`'s ``info`` (``channel_mean`` / ``channel_std``, as
        :func:`privaudit.data.load_cifar10` writes them), or None when it has neither."""
        if "channel_mean" not in info and "channel_std" not in info:
            return None
        if "channel_mean" not in info or "channel_std" not in info:
            raise fail("records.info", "both channel_mean and channel_std", sorted(info))
        return cls(tuple(info["channel_mean"]), tuple(info["channel_std"]))

    def _columns(self, n_pixels: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        C = len(self.mean)
        if n_pixels % C:
            raise fail("standardization", f"a channel count dividing {n_pixels} pixels", C)
        k = n_pixels // C
        return np.repeat(np.asarray(self.mean), k), np.repeat(np.asarray(self.std), k)

    def to_unit(self, X: NDArray[np.float64]) -> NDArray[np.float64]:
        """Standardised records -> intensities, clipped to [0, 1] (exact for real images)."""
        mean, std = self._columns(X.shape[1])
        return np.clip(X * std + mean, 0.0, 1.0)

    def from_unit(self, X: NDArray[np.float64]) -> NDArray[np.float64]:
        """Intensities in [0, 1] -> standardised records."""
        mean, std = self._columns(X.shape[1])
        return np.asarray((X - mean) / std, dtype=np.float64)

    def settings(self) -> dict[str, Any]:
        """JSON-able."""
        return {"mean": list(self.mean), "std": list(self.std)}


@dataclasses.dataclass(frozen=True)
class ImageGenerator:
    """A fitted VAE plus what a generated :class:`Dataset` needs from ``D_G`` (the dataset
    name, feature and class names, and the standardisation its records were on)."""

    vae: ConditionalVAE
    dataset_name: str
    feature_names: tuple[str, ...]
    class_names: tuple[str, ...]
    standardization: ChannelStandardization | None = None

    @property
    def info(self) -> dict[str, Any]:
        """JSON-able: the class proportions of ``D_G``, the fit record (seed, seconds,
        loss by epoch, reconstruction cross-entropy per pixel) and the standardisation
        (None: the records were intensities in [0, 1])."""
        return {
            "class_proportions": [float(v) for v in self.vae.class_proportions],
            "fit": dict(self.vae.fit_info),
            "standardization": (
                None if self.standardization is None else self.standardization.settings()
            ),
        }


class ImageScorer:
    """A trained image + loss-feature scorer (the MIA or the baseline).

    ``score(records, loss)`` returns the network's logits (float64, higher = member).
    ``info``: what :func:`fit_selected_net` selected (``best_epoch``, ``epochs_run``,
    ``criterion_by_epoch``, ``n_train``, ``n_val``), the loss-feature standardisation
    and the scorer settings.
    """

    def __init__(
        self,
        module: Any,
        *,
        loss_mean: NDArray[np.float64],
        loss_scale: NDArray[np.float64],
        n_pixels: int,
        info: dict[str, Any],
    ) -> None:
        self.module = module
        self.loss_mean = np.asarray(loss_mean, dtype=np.float64)
        self.loss_scale = np.asarray(loss_scale, dtype=np.float64)
        self.n_pixels = int(n_pixels)
        self.info = info

    def inputs(self, records: Dataset, loss: NDArray[np.float64]) -> tuple[NDArray[Any], ...]:
        """The network's inputs: float32 images and standardised loss features."""
        return _inputs(records, loss, self.loss_mean, self.loss_scale, self.n_pixels)

    def score(self, records: Dataset, loss: NDArray[np.float64]) -> NDArray[np.float64]:
        """Membership scores (logits), higher = member."""
        return np.asarray(predict_net(self.module, self.inputs(records, loss)), dtype=np.float64)


def _inputs(
    records: Dataset,
    loss: NDArray[np.float64],
    mean: NDArray[np.float64],
    scale: NDArray[np.float64],
    n_pixels: int,
) -> tuple[NDArray[Any], ...]:
    if not isinstance(records, Dataset):
        raise fail("records", "a Dataset", type(records).__name__)
    if records.n_features != n_pixels:
        raise fail("records", f"flattened images of {n_pixels} pixels", records.n_features)
    L = as_float_array(loss, "loss", ndim=2)
    if L.shape != (records.n_records, mean.size):
        raise fail("loss", f"shape ({records.n_records}, {mean.size})", L.shape)
    z = (L - mean) / scale
    return records.X.astype(np.float32), z.astype(np.float32)


class ImageModality:
    """PANORAMIA on image classifiers (see the module docstring).

    Parameters
    ----------
    recipe : TorchRecipe
        The target's architecture and training recipe; the helper is trained with it.
    input_shape : (C, H, W)
        Shape of one image (records hold them flattened); H and W divisible by 4.
    n_classes : int
    vae : dict, optional
        :class:`~privaudit.models.image_vae.VAESettings` fields.
    scorer : dict, optional
        :class:`ScorerSettings` fields.
    standardization : ChannelStandardization or (mean, std), optional
        The per-channel standardisation of the records (see
        :class:`ChannelStandardization`); default: read from the generator's training
        records' ``info`` (``channel_mean`` / ``channel_std``, as
        :func:`~privaudit.data.load_cifar10` writes them) when there, else none (the
        records must then be intensities in [0, 1]).
    generator_cache : dict, optional
        A mapping the fitted generators are kept in, keyed by the SHA-256 of what
        determines them (the training records' fingerprint, the seed, the VAE settings,
        shape and classes). Fits are deterministic, so modalities that share one (e.g.
        the same target trained for several epoch counts, same ``D_G`` and seed) train
        each generator once; not part of the audit's settings.
    """

    name = "image"

    def __init__(
        self,
        recipe: TorchRecipe,
        *,
        input_shape: Sequence[int] = (1, 28, 28),
        n_classes: int = 10,
        vae: Mapping[str, Any] | None = None,
        scorer: Mapping[str, Any] | None = None,
        standardization: ChannelStandardization | Sequence[Sequence[float]] | None = None,
        generator_cache: MutableMapping[str, ConditionalVAE] | None = None,
    ) -> None:
        if not isinstance(recipe, TorchRecipe):
            raise fail("recipe", "a TorchRecipe", type(recipe).__name__)
        try:
            shape = tuple(int(v) for v in input_shape)
        except (TypeError, ValueError):
            raise fail("input_shape", "(channels, height, width)", repr(input_shape)) from None
        if len(shape) != 3 or min(shape) < 1 or shape[1] % 4 or shape[2] % 4:
            raise fail(
                "input_shape", "(channels, height, width), height and width divisible by 4", shape
            )
        self.recipe = recipe
        self.input_shape: tuple[int, int, int] = (shape[0], shape[1], shape[2])
        self.n_classes = check_positive_int(n_classes, "n_classes", minimum=2)
        self.vae_settings = VAESettings.from_mapping(vae)
        self.scorer_settings = ScorerSettings.from_mapping(scorer)
        self._trainer = TorchTrainer(recipe, n_classes=self.n_classes, name="helper", batched=False)
        self._cache = generator_cache
        self.standardization: ChannelStandardization | None
        if standardization is None or isinstance(standardization, ChannelStandardization):
            self.standardization = standardization
        else:
            try:
                mean, std = standardization
            except (TypeError, ValueError):
                raise fail(
                    "standardization", "(mean, std) per channel", repr(standardization)
                ) from None
            self.standardization = ChannelStandardization(tuple(mean), tuple(std))
        if self.standardization is not None and len(self.standardization.mean) != shape[0]:
            raise fail("standardization", f"{shape[0]} channels", len(self.standardization.mean))

    @property
    def n_pixels(self) -> int:
        """``C * H * W``."""
        C, H, W = self.input_shape
        return C * H * W

    def _check(self, records: Any, name: str = "records") -> Dataset:
        if not isinstance(records, Dataset):
            raise fail(name, "a Dataset of flattened images", type(records).__name__)
        if records.n_features != self.n_pixels:
            raise fail(
                name,
                f"flattened images of {self.n_pixels} pixels {self.input_shape}",
                records.n_features,
            )
        if records.n_classes != self.n_classes:
            raise fail(name, f"{self.n_classes} classes", records.n_classes)
        return records

    # -- records ------------------------------------------------------------------
    def ids(self, records: Dataset) -> tuple[str, ...]:
        """Record ids as strings."""
        return tuple(str(i) for i in self._check(records).record_ids)

    def take(self, records: Dataset, ids: Sequence[str]) -> Dataset:
        """The records with these ids, in this order."""
        ds = self._check(records)
        pos_of = {str(v): k for k, v in enumerate(ds.record_ids)}
        want = [str(i) for i in ids]
        missing = [i for i in want if i not in pos_of]
        if missing:
            raise fail(
                "ids", f"record ids of {ds.name!r}", f"{len(missing)} unknown, e.g. {missing[:3]}"
            )
        return ds.subset(ds.record_ids[np.array([pos_of[i] for i in want], dtype=np.int64)])

    def concat(self, a: Dataset, b: Dataset) -> Dataset:
        """``a`` followed by ``b`` (ids as strings; they must not collide)."""
        a, b = self._check(a, "a"), self._check(b, "b")
        if a.class_names != b.class_names:
            raise fail("b", f"class names {a.class_names}", b.class_names)
        ids = np.concatenate([a.record_ids.astype(str), b.record_ids.astype(str)])
        info = {"concat": [a.fingerprint(), b.fingerprint()]}
        return Dataset(
            a.name,
            ids,
            np.vstack([a.X, b.X]),
            np.concatenate([a.y, b.y]),
            a.feature_names,
            a.class_names,
            info,
        )

    def records_to_arrays(self, records: Dataset) -> dict[str, NDArray[Any]]:
        """Records as arrays, for the game's artifact store (cache and resume)."""
        return dataset_to_arrays(self._check(records))

    def records_from_arrays(self, arrays: Mapping[str, NDArray[Any]]) -> Dataset:
        """The inverse of :meth:`records_to_arrays`."""
        return self._check(dataset_from_arrays(arrays))

    # -- generator -----------------------------------------------------------------
    def _standardization_of(self, ds: Dataset) -> ChannelStandardization | None:
        std = self.standardization
        if std is None:
            std = ChannelStandardization.from_info(ds.info)
            if std is not None and len(std.mean) != self.input_shape[0]:
                raise fail(
                    "records.info channel_mean", f"{self.input_shape[0]} channels", len(std.mean)
                )
        return std

    def fit_generator(self, records: Dataset, *, seed: int) -> ImageGenerator:
        """The conditional VAE trained on ``records`` (``D_G`` only), on the [0, 1]
        intensity scale (standardised records are mapped back first)."""
        ds = self._check(records)
        std = self._standardization_of(ds)
        key = hashlib.sha256(
            json.dumps(
                [ds.fingerprint(), int(seed), self.vae_settings.settings(),
                 list(self.input_shape), self.n_classes,
                 None if std is None else std.settings()],
                sort_keys=True,
            ).encode()
        ).hexdigest()  # fmt: skip
        vae = None if self._cache is None else self._cache.get(key)
        if vae is None:
            X = ds.X if std is None else std.to_unit(ds.X)
            vae = fit_conditional_vae(
                X, ds.y, seed=int(seed), input_shape=self.input_shape,
                n_classes=self.n_classes, settings=self.vae_settings,
            )  # fmt: skip
            if self._cache is not None:
                self._cache[key] = vae
        return ImageGenerator(vae, ds.name, ds.feature_names, ds.class_names, std)

    def sample(self, generator: ImageGenerator, n: int, *, seed: int) -> Dataset:
        """``n`` generated images with ids ``synth-000000``.. and labels drawn from the
        class proportions of ``D_G``."""
        if not isinstance(generator, ImageGenerator):
            raise fail(
                "generator", "an ImageGenerator (from fit_generator)", type(generator).__name__
            )
        n = check_positive_int(n, "n")
        X, y = generator.vae.sample(n, seed=int(seed))
        info: dict[str, Any] = {"generated_by": "conditional-conv-vae", "seed": int(seed)}
        if generator.standardization is not None:
            X = generator.standardization.from_unit(X)
            info["channel_mean"] = list(generator.standardization.mean)
            info["channel_std"] = list(generator.standardization.std)
        ids = np.array([f"synth-{k:06d}" for k in range(n)])
        return Dataset(
            generator.dataset_name, ids, X, y, generator.feature_names, generator.class_names, info
        )

    # -- helper and loss features -------------------------------------------------------
    def fit_helper(self, records: Dataset, *, seed: int) -> TorchModel:
        """The target's recipe trained on ``records`` (the helper pool only)."""
        ds = self._check(records)
        return self._trainer.fit(ds.X, ds.y, seed=int(seed), n_classes=self.n_classes)

    def loss_features(self, model: Any, records: Dataset) -> NDArray[np.float64]:
        """See :func:`image_loss_features` (columns :data:`LOSS_FEATURES`)."""
        return image_loss_features(model, self._check(records))

    # -- scorer ----------------------------------------------------------------------
    def fit_scorer(
        self,
        train: Any,
        val: Any,
        *,
        seed: int,
        criterion: Callable[[NDArray[np.float64], NDArray[np.bool_]], float],
    ) -> ImageScorer:
        """Train the image + loss scorer on ``train``, selecting the epoch on ``val`` by
        ``criterion`` (:func:`fit_selected_net`; the best epoch's weights are restored).

        ``train`` / ``val`` are ``ScorerData`` (``records``, ``loss`` (n, k), ``label``).
        The loss features are standardised with the mean and standard deviation of
        ``train``'s (the scorer keeps them for :meth:`ImageScorer.score`).
        """
        tr_rec, va_rec = (
            self._check(train.records, "train.records"),
            self._check(val.records, "val.records"),
        )
        L = as_float_array(train.loss, "train.loss", ndim=2)
        mean = L.mean(axis=0)
        scale = L.std(axis=0)
        scale = np.where(scale > 0, scale, 1.0)
        tr_in = _inputs(tr_rec, L, mean, scale, self.n_pixels)
        va_in = _inputs(va_rec, val.loss, mean, scale, self.n_pixels)
        s = self.scorer_settings
        shape, k = self.input_shape, int(L.shape[1])
        module, info = fit_selected_net(
            lambda: build_scorer_module(shape, k, s),
            tr_in,
            np.asarray(train.label, dtype=bool),
            va_in,
            np.asarray(val.label, dtype=bool),
            criterion=criterion,
            epochs=s.epochs,
            batch_size=s.batch_size,
            lr=s.lr,
            weight_decay=s.weight_decay,
            seed=int(seed),
            patience=s.patience,
        )
        info = {
            **info,
            "scorer": "cnn-image+mlp-loss",
            "settings": s.settings(),
            "loss_features": list(LOSS_FEATURES),
            "loss_mean": [float(v) for v in mean],
            "loss_scale": [float(v) for v in scale],
        }
        return ImageScorer(
            module, loss_mean=mean, loss_scale=scale, n_pixels=self.n_pixels, info=info
        )

    def settings(self) -> dict[str, Any]:
        """JSON-able: the generator, the helper recipe, the loss features and the scorer."""
        return {
            "modality": self.name,
            "input_shape": list(self.input_shape),
            "n_classes": self.n_classes,
            "generator": {
                "kind": "conditional-conv-vae",
                **self.vae_settings.settings(),
                # None: read from the generator's training records' info when there
                "standardization": (
                    None if self.standardization is None else self.standardization.settings()
                ),
            },
            "helper": {
                "recipe": self.recipe.settings(),
                "trained_on": "helper pool (generated images)",
            },
            "loss_features": list(LOSS_FEATURES),
            "scorer": {"kind": "cnn-image+mlp-loss", **self.scorer_settings.settings()},
        }
