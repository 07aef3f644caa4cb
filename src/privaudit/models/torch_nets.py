"""Built-in module factories for torch recipes (``privaudit.models.torch_nets:mlp``,
``privaudit.models.torch_nets:small_cnn``). Importing this module imports torch."""

from __future__ import annotations

from typing import Any

from privaudit.models.torch_recipe import require_torch

__all__ = ["mlp", "small_cnn"]


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
