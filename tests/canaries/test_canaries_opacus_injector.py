"""The Opacus integration: a Dirac canary is one more clipped sample, and the accountant is untouched."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("opacus")

from privaudit.canaries import (
    GradientCanaryInjector,
    draw_coins,
    make_gradient_canaries,
    train_dp_sgd_with_canaries,
)
from privaudit.canaries.dpsgd import mlp_parameter_count
from privaudit.canaries.opacus_hook import flat_parameters
from privaudit.errors import InvalidInputError


def _data(n: int = 64, d: int = 5) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, d))
    return X, (X[:, 0] > 0).astype(int)


def test_an_included_canary_moves_its_coordinate_by_exactly_lr_c_over_b() -> None:
    X, y = _data()
    n_params = mlp_parameter_count(5, 4, 2)
    cs = make_gradient_canaries(n_params, 20, seed=1)
    coins = draw_coins(cs, seed=2)
    common = {"hidden": 4, "epochs": 1, "batch_size": 64, "lr": 0.5, "max_grad_norm": 1.0}
    with_c = train_dp_sgd_with_canaries(
        X, y, gradient_canaries=(cs, coins), noise_multiplier=0.0, **common
    )
    without = train_dp_sgd_with_canaries(X, y, noise_multiplier=0.0, **common)
    assert with_c.sample_rate == 1.0 and with_c.steps == 1
    diff = flat_parameters(with_c.module) - flat_parameters(without.module)
    step = -0.5 * 1.0 / with_c.expected_batch_size
    want = np.zeros(n_params)
    want[cs.coords[coins.included]] = step
    assert np.allclose(diff, want, atol=1e-6)
    assert with_c.gradient_canaries_inserted == int(coins.included.sum())
    # the trace logged the canary coordinates before and after the step
    assert with_c.trace is not None and with_c.trace.shape == (2, 20)


def test_the_accountant_eps_is_the_same_with_and_without_canaries() -> None:
    X, y = _data()
    n_params = mlp_parameter_count(5, 4, 2)
    cs = make_gradient_canaries(n_params, 20, seed=1)
    common = {"hidden": 4, "epochs": 2, "batch_size": 16, "noise_multiplier": 1.0}
    a = train_dp_sgd_with_canaries(X, y, gradient_canaries=(cs, draw_coins(cs, seed=2)), **common)
    b = train_dp_sgd_with_canaries(X, y, **common)
    assert a.accountant_epsilon == b.accountant_epsilon and np.isfinite(a.accountant_epsilon)
    assert a.sample_rate == b.sample_rate == 16 / 64


@pytest.mark.filterwarnings("ignore:Secure RNG turned off")
def test_the_injector_refuses_a_set_for_another_model() -> None:
    import torch
    from opacus import PrivacyEngine

    X, y = _data()
    module = torch.nn.Linear(5, 2)
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.tensor(X, dtype=torch.float32), torch.tensor(y)),
        batch_size=16,
    )
    _, opt, _ = PrivacyEngine().make_private(
        module=module,
        optimizer=torch.optim.SGD(module.parameters(), lr=0.1),
        data_loader=loader,
        noise_multiplier=1.0,
        max_grad_norm=1.0,
    )
    cs = make_gradient_canaries(100, 10, seed=0)
    with pytest.raises(
        InvalidInputError, match=r"below the model's 12 trainable parameters|made for 12"
    ):
        GradientCanaryInjector(opt, cs, draw_coins(cs, seed=0), sample_rate=0.25)


def test_physical_batches_give_the_same_run_as_one_logical_batch() -> None:
    """Full-batch DP-GD split into physical batches: same steps, noise, canaries, accountant."""
    X, y = _data()
    n_params = mlp_parameter_count(5, 4, 2)
    cs = make_gradient_canaries(n_params, 20, seed=1)
    coins = draw_coins(cs, seed=2)
    common = {"hidden": 4, "epochs": 3, "batch_size": 64, "lr": 0.5, "noise_multiplier": 1.0}
    one = train_dp_sgd_with_canaries(X, y, gradient_canaries=(cs, coins), seed=3, **common)
    split = train_dp_sgd_with_canaries(
        X, y, gradient_canaries=(cs, coins), seed=3, max_physical_batch_size=16, **common
    )
    assert one.steps == split.steps == 3 and one.sample_rate == split.sample_rate == 1.0
    assert one.accountant_epsilon == split.accountant_epsilon
    assert one.gradient_canaries_inserted == split.gradient_canaries_inserted
    assert one.trace is not None and split.trace is not None
    assert one.trace.shape == split.trace.shape == (4, 20)
    assert np.allclose(one.trace, split.trace, atol=1e-5)
    assert not np.allclose(one.trace[0], one.trace[-1])  # the run moved them
