"""Built-in module factories for torch recipes (``privaudit.models.torch_nets:mlp``,
``privaudit.models.torch_nets:small_cnn``, ``privaudit.models.torch_nets:cifar10_cnn``).
Importing this module imports torch."""

from __future__ import annotations

from typing import Any

from privaudit.models.torch_recipe import require_torch

__all__ = ["cifar10_cnn", "mlp", "small_cnn"]


def mlp(n_features: int, n_classes: int, hidden: int | list[int] = 128) -> Any:
    """Fully connected ReLU network ``n_features - hidden... - n_classes``."""
    torch = require_torch()
    sizes = [hidden] if isinstance(hidden, int) else list(hidden)
    layers: list[Any] = []
    d = n_features
    for h in sizes:
        layers += [torch.nn.Linear(d, h), torch.nn.ReLU()]
        d = h
    layers.append(torch.nn.Linear(d, n_classes))
    return torch.nn.Sequential(*layers)


def small_cnn(
    n_classes: int = 10,
    channels: int = 16,
    image_shape: tuple[int, int, int] | list[int] = (1, 28, 28),
) -> Any:
    """Two 3x3 convolutions (ReLU, 2x2 max-pooling) and a linear head, for flattened
    images of ``image_shape`` (height and width divisible by 4)."""
    torch = require_torch()
    nn = torch.nn
    c, h, w = (int(v) for v in image_shape)
    return nn.Sequential(
        nn.Unflatten(1, (c, h, w)),
        nn.Conv2d(c, channels, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(channels, 2 * channels, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(2 * channels * (h // 4) * (w // 4), n_classes),
    )


def cifar10_cnn(
    n_classes: int = 10,
    channels: int = 16,
    image_shape: tuple[int, int, int] | list[int] = (3, 32, 32),
    hidden: int = 0,
) -> Any:
    """Three 3x3 convolution blocks (``channels``, ``2 channels``, ``4 channels``; ReLU,
    2x2 max-pooling) and a linear head, for flattened CIFAR-10 images (``(3, 32, 32)``;
    height and width divisible by 8); ``hidden > 0`` adds a ReLU layer of that width
    before the head.

    The small CNN of the CIFAR-10 audits: the convolution-and-pooling stack of the
    targets of Ye et al. 2022 (Sec. 5) and Carlini et al. 2022 (Sec. VI), narrowed so
    that it trains on a CPU (``channels=16``: 33,834 parameters; ``channels=32``:
    133,706). No batch normalisation, so that many of them train stacked
    (:func:`privaudit.models.torch_batched.fit_many`, which needs modules without buffers).
    """
    torch = require_torch()
    nn = torch.nn
    c, h, w = (int(v) for v in image_shape)
    k = int(channels)
    layers: list[Any] = [nn.Unflatten(1, (c, h, w))]
    width = c
    for out in (k, 2 * k, 4 * k):
        layers += [nn.Conv2d(width, out, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2)]
        width = out
    layers.append(nn.Flatten())
    d = width * (h // 8) * (w // 8)
    if hidden > 0:
        layers += [nn.Linear(d, int(hidden)), nn.ReLU()]
        d = int(hidden)
    layers.append(nn.Linear(d, n_classes))
    return nn.Sequential(*layers)
