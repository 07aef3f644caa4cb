"""Gradient (Dirac) canaries inside Opacus' DP-SGD step, and a log of the iterates.

:class:`GradientCanaryInjector` wraps one Opacus ``DPOptimizer``: at every step, after the
per-sample gradients of the real batch are clipped and summed and **before** the Gaussian
noise is added (``DPOptimizer.pre_step``: ``clip_and_accumulate`` -> ``add_noise``), each
included canary is sampled with the same Poisson rate ``q`` as every real record and, when
sampled, its gradient ``C e_j`` is added to the summed gradient. The noise
``N(0, (sigma C)^2 I)`` and the division by the expected batch size then act on it exactly
as on a real sample (Steinke, Nasr, Jagielski 2023, Sec. 7; Nasr et al. 2023, Sec. 3).

Why the accounting is unchanged: a Dirac canary's gradient has norm exactly ``C``, so
clipping leaves it as it is and it is one more record of norm at most ``C``; it is sampled
independently at rate ``q``; the noise multiplier and the number of steps are those of the
run. The training run is therefore DP-SGD with Poisson rate ``q``, noise ``sigma`` and ``T``
steps on the dataset "real records + included canaries", whose guarantee (the accountant's
eps for ``q, sigma, T, delta``) does not depend on the dataset size. The only difference
is that Opacus divides the sum by ``q * n_real`` instead of ``q * (n_real + m_in)``, a
data-independent constant scale: post-processing, no privacy cost. Secure RNG
(``secure_mode``) is not used for the canaries' sampling, as for a seeded Opacus run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import check_probability, fail
from privaudit.canaries.sets import CanaryCoins, CanarySet

__all__ = ["GradientCanaryInjector", "IterateLog", "flat_parameters"]


def _trainable(params: Sequence[Any]) -> list[Any]:
    return [p for p in params if getattr(p, "requires_grad", False)]


def flat_parameters(module: Any) -> NDArray[np.float64]:
    """The trainable parameters of a torch module as one flat vector (``parameters()`` order)."""
    import torch

    with torch.no_grad():
        parts = [
            p.detach().reshape(-1).double().cpu() for p in _trainable(list(module.parameters()))
        ]
        return torch.cat(parts).numpy().copy()


class _Locator:
    """Flat coordinate -> (parameter, index inside its flattened view)."""

    def __init__(self, params: Sequence[Any], coords: NDArray[np.int64]) -> None:
        sizes = np.array([int(p.numel()) for p in params], dtype=np.int64)
        total = int(sizes.sum())
        if coords.size and int(coords.max()) >= total:
            raise fail(
                "canaries",
                f"coordinates below the model's {total} trainable parameters",
                f"coordinate {int(coords.max())}",
            )
        starts = np.concatenate(([0], np.cumsum(sizes)))
        owner = np.searchsorted(starts, coords, side="right") - 1
        self.params = list(params)
        self.groups = [
            (int(k), np.flatnonzero(owner == k), coords[owner == k] - starts[k])
            for k in np.unique(owner)
        ]
        self.total = total


class GradientCanaryInjector:
    """Adds the included Dirac canaries to every DP-SGD step of an Opacus optimizer.

    Parameters
    ----------
    optimizer : opacus.optimizers.DPOptimizer
        The optimizer ``PrivacyEngine.make_private`` returned (its parameters are the
        model's trainable parameters in ``module.parameters()`` order).
    canaries : CanarySet
        Gradient canaries whose coordinates index those parameters.
    coins : CanaryCoins
        Their inclusion coins (only included canaries are ever added).
    sample_rate : float
        The Poisson sampling rate of the run (the ``sample_rate`` of Opacus' data loader).
    seed : int
        Seed of the canaries' own Poisson sampling.

    Notes
    -----
    The canary's gradient is ``+C e_j``: a step of SGD with learning rate ``lr`` moves
    coordinate ``j`` by ``-lr C / B`` (``B`` the expected batch size) when the canary is
    sampled. Use it as a context: the optimizer's ``add_noise`` is restored on exit.
    """

    def __init__(
        self,
        optimizer: Any,
        canaries: CanarySet,
        coins: CanaryCoins,
        *,
        sample_rate: float,
        seed: int = 0,
    ) -> None:
        if not canaries.is_gradient:
            raise fail("canaries", "gradient canaries", f"a {canaries.kind!r} set")
        coins.check_matches(canaries)
        for name in ("add_noise", "max_grad_norm", "params"):
            if not hasattr(optimizer, name):
                raise fail("optimizer", "an Opacus DPOptimizer", type(optimizer).__name__)
        self.optimizer = optimizer
        self.q = check_probability(sample_rate, "sample_rate", open_interval=False)
        self.included = np.flatnonzero(coins.included)
        self._loc = _Locator(optimizer.params, canaries.coords[self.included])
        if self._loc.total != canaries.n_params:
            raise fail(
                "canaries",
                f"a set made for {self._loc.total} trainable parameters",
                f"a set made for {canaries.n_params}",
            )
        self._rng = np.random.default_rng([int(seed), 0xD1AC])
        self._original: Callable[[], None] | None = None
        self.steps = 0
        self.inserted = 0

    def __enter__(self) -> GradientCanaryInjector:
        self.attach()
        return self

    def __exit__(self, *exc: object) -> None:
        self.detach()

    def attach(self) -> None:
        """Wrap the optimizer's ``add_noise`` (idempotent)."""
        if self._original is None:
            self._original = self.optimizer.add_noise
            self.optimizer.add_noise = self._add_noise

    def detach(self) -> None:
        """Restore the optimizer's own ``add_noise``."""
        if self._original is not None:
            self.optimizer.add_noise = self._original
            self._original = None

    def _add_noise(self) -> None:
        import torch

        sampled = self._rng.random(self.included.size) < self.q
        c = float(self.optimizer.max_grad_norm)
        with torch.no_grad():
            for k, rows, local in self._loc.groups:
                hit = local[sampled[rows]]
                if hit.size == 0:
                    continue
                p = self._loc.params[k]
                flat = p.summed_grad.view(-1)
                idx = torch.as_tensor(hit, dtype=torch.long, device=flat.device)
                add = torch.full((hit.size,), c, dtype=flat.dtype, device=flat.device)
                flat.index_add_(0, idx, add)
        self.steps += 1
        self.inserted += int(sampled.sum())
        if self._original is None:  # pragma: no cover - only reachable after detach()
            raise fail("injector", "an attached injector", "a detached one")
        self._original()


class IterateLog:
    """The values of chosen parameter coordinates after every step (white-box access).

    ``record(module)`` after each optimizer step (and once before training) appends the
    coordinates ``coords`` of the flat trainable parameters; :attr:`trace` is the
    ``(steps + 1, len(coords))`` array. With ``coords=None`` the whole vector is kept
    (what ``privaudit canaries audit --iterates`` reads).
    """

    def __init__(self, coords: NDArray[np.int64] | None = None) -> None:
        self.coords = None if coords is None else np.asarray(coords, dtype=np.int64)
        self._rows: list[NDArray[np.float64]] = []

    def record(self, module: Any) -> None:
        """Append the current values."""
        v = flat_parameters(module)
        self._rows.append(v if self.coords is None else v[self.coords])

    @property
    def trace(self) -> NDArray[np.float64]:
        """The recorded values, one row per recorded step."""
        if not self._rows:
            raise fail("iterates", "at least one recorded step", "none")
        return np.stack(self._rows)

    def save(
        self,
        path: str | Path,
        *,
        lr: float,
        expected_batch_size: float,
        max_grad_norm: float,
        noise_multiplier: float | None = None,
        sample_rate: float | None = None,
        accountant_epsilon: float | None = None,
        delta: float | None = None,
    ) -> Path:
        """Write the iterates and the run's facts as ``.npz`` (``canaries audit --iterates``).

        ``params`` is the ``(steps + 1, P)`` trace (full vectors: ``coords=None``); the
        scalars are what :func:`~privaudit.canaries.gradient_canary_scores` needs.
        """
        if self.coords is not None:
            raise fail(
                "iterates",
                "a log of whole parameter vectors (coords=None)",
                "a log of chosen coordinates",
            )
        facts = {
            "lr": lr,
            "expected_batch_size": expected_batch_size,
            "max_grad_norm": max_grad_norm,
            "noise_multiplier": noise_multiplier,
            "sample_rate": sample_rate,
            "accountant_epsilon": accountant_epsilon,
            "delta": delta,
        }
        arrays: dict[str, Any] = {k: np.array(float(v)) for k, v in facts.items() if v is not None}
        p = Path(path)
        with p.open("wb") as fh:
            np.savez_compressed(fh, params=self.trace.astype(np.float64), **arrays)
        return p
