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


def act_mlp(
    n_features: int = 4, n_classes: int = 3, act: str = "Tanh", hidden: int = 8, bias: bool = True
) -> Any:
    """``Linear - act - Dropout(0) - Linear(bias) - act - Identity - Linear``: two hidden
    layers with the activation ``torch.nn.<act>`` (its default arguments), identities
    between, the middle layer with or without bias."""
    from torch import nn

    A = getattr(nn, act)
    return nn.Sequential(
        nn.Linear(n_features, hidden),
        A(),
        nn.Dropout(0.0),
        nn.Linear(hidden, hidden, bias=bias),
        A(),
        nn.Identity(),
        nn.Linear(hidden, n_classes),
    )


def layer_norm_mlp(n_features: int = 4, n_classes: int = 3) -> Any:
    """Not elementwise (a layer norm between the layers): outside the MLP kernel."""
    from torch import nn

    return nn.Sequential(
        nn.Linear(n_features, 8), nn.LayerNorm(8), nn.Tanh(), nn.Linear(8, n_classes)
    )


def odd_mlp(n_features: int = 4, n_classes: int = 3) -> Any:
    """Two activations in a row and an activation after the last linear layer (the
    logits are ``tanh`` of a linear layer's output)."""
    from torch import nn

    return nn.Sequential(
        nn.Linear(n_features, 8), nn.ReLU(), nn.Tanh(), nn.Linear(8, n_classes), nn.Tanh()
    )
