"""Network factories of the bring-your-own-target examples (PyTorch).

A factory is named in a config as ``"own_model_nets.py:adult_mlp"`` (resolved against
the config's directory) and called with the recipe's ``factory_kwargs``; it returns an
``nn.Module`` mapping a float32 batch ``(n, d)`` to logits ``(n, C)``.
"""

from __future__ import annotations

import torch
from torch import nn


def adult_mlp(n_features: int = 105, hidden: int = 128, n_classes: int = 2) -> nn.Module:
    """One hidden layer with ReLU: ``n_features - hidden - n_classes``."""
    return nn.Sequential(nn.Linear(n_features, hidden), nn.ReLU(), nn.Linear(hidden, n_classes))


class SmallCNN(nn.Module):
    """Two 3x3 convolutions (ReLU, 2x2 max-pooling) and a linear head, for 1x28x28 images
    given flattened (784 values per record)."""

    def __init__(self, channels: int = 16, n_classes: int = 10) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, channels, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(channels, 2 * channels, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.head = nn.Linear(2 * channels * 7 * 7, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.features(x.reshape(-1, 1, 28, 28))
        return self.head(h.flatten(1))


def mnist_cnn(channels: int = 16, n_classes: int = 10) -> nn.Module:
    """A :class:`SmallCNN`."""
    return SmallCNN(channels, n_classes)
