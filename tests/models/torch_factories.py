"""Tiny module factories for the torch tests (importable as tests.models.torch_factories
or by file path)."""

from __future__ import annotations

from typing import Any


def mlp(n_features: int = 4, hidden: int = 8, n_classes: int = 3) -> Any:
    from torch import nn

    return nn.Sequential(nn.Linear(n_features, hidden), nn.ReLU(), nn.Linear(hidden, n_classes))


def not_a_module() -> Any:
    return 42


def bn_mlp(n_features: int = 4, n_classes: int = 3) -> Any:
    from torch import nn

    return nn.Sequential(
        nn.Linear(n_features, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, n_classes)
    )


def tanh_mlp(n_features: int = 4, n_classes: int = 3) -> Any:
    from torch import nn

    return nn.Sequential(nn.Linear(n_features, 8), nn.Tanh(), nn.Linear(8, n_classes))
