"""fit_selected_net: the best validation epoch is restored, seeds reproduce, inputs are checked."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from privaudit.attacks.selected_net import fit_selected_net, predict_net  # noqa: E402
from privaudit.errors import InvalidInputError  # noqa: E402
from privaudit.metrics.roc import auc  # noqa: E402


class _Net(torch.nn.Module):  # type: ignore[misc]
    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Linear(3, 8)
        self.b = torch.nn.Linear(2, 8)
        self.out = torch.nn.Linear(16, 1)

    def forward(self, x: torch.Tensor, loss: torch.Tensor) -> torch.Tensor:
        h = torch.cat([torch.relu(self.a(x)), torch.relu(self.b(loss))], dim=1)
        return self.out(h).squeeze(1)


def _data(n: int, seed: int) -> tuple[list[np.ndarray], np.ndarray]:
    rng = np.random.default_rng(seed)
    y = rng.random(n) < 0.5
    x = rng.normal(size=(n, 3))
    loss = rng.normal(size=(n, 2)) - 1.5 * y[:, None]  # members: lower loss
    return [x, loss], y


def _auc(s: np.ndarray, y: np.ndarray) -> float:
    return float(auc(s, y))


def test_learns_and_reproduces() -> None:
    tr, ytr = _data(400, 1)
    va, yva = _data(200, 2)
    m1, info1 = fit_selected_net(_Net, tr, ytr, va, yva, criterion=_auc, epochs=8, lr=2e-2, seed=3)
    m2, _ = fit_selected_net(_Net, tr, ytr, va, yva, criterion=_auc, epochs=8, lr=2e-2, seed=3)
    m3, _ = fit_selected_net(_Net, tr, ytr, va, yva, criterion=_auc, epochs=8, lr=2e-2, seed=4)
    s1 = predict_net(m1, va)
    assert np.array_equal(s1, predict_net(m2, va))
    assert not np.array_equal(s1, predict_net(m3, va))
    assert _auc(s1, yva) > 0.8
    assert info1["best_criterion"] == pytest.approx(_auc(s1, yva))
    assert len(info1["criterion_by_epoch"]) == info1["epochs_run"] + 1 == 9


def test_restores_best_epoch_not_last() -> None:
    tr, ytr = _data(300, 5)
    va, yva = _data(100, 6)
    scripted = [0.0, 1.0, 7.0, 2.0, 3.0, 4.0]
    seen: list[np.ndarray] = []

    def crit(s: np.ndarray, y: np.ndarray) -> float:
        seen.append(s.copy())
        return scripted[len(seen) - 1]

    m, info = fit_selected_net(_Net, tr, ytr, va, yva, criterion=crit, epochs=5, seed=0)
    assert info["best_epoch"] == 2
    assert np.array_equal(predict_net(m, va), seen[2])
    assert not np.array_equal(seen[2], seen[5])  # the last state differs


def test_patience_stops_early() -> None:
    tr, ytr = _data(200, 7)
    va, yva = _data(100, 8)
    _, info = fit_selected_net(
        _Net, tr, ytr, va, yva, criterion=lambda s, y: 0.0, epochs=20, seed=0, patience=3
    )
    assert info["best_epoch"] == 0 and info["epochs_run"] == 3


def test_bad_inputs() -> None:
    tr, ytr = _data(50, 9)
    va, yva = _data(50, 10)
    with pytest.raises(InvalidInputError, match="both members and non-members"):
        fit_selected_net(_Net, tr, np.ones(50, bool), va, yva, criterion=_auc, seed=0)
    with pytest.raises(InvalidInputError, match="rows"):
        fit_selected_net(_Net, [tr[0], tr[1][:10]], ytr, va, yva, criterion=_auc, seed=0)
    with pytest.raises(InvalidInputError, match="one label per record"):
        fit_selected_net(_Net, tr, ytr[:10], va, yva, criterion=_auc, seed=0)
    bad = [tr[0].copy(), tr[1]]
    bad[0][0, 0] = np.nan
    with pytest.raises(InvalidInputError, match="finite"):
        fit_selected_net(_Net, bad, ytr, va, yva, criterion=_auc, seed=0)
    with pytest.raises(InvalidInputError, match="criterion"):
        fit_selected_net(_Net, tr, ytr, va, yva, criterion=lambda s, y: float("nan"), seed=0)
