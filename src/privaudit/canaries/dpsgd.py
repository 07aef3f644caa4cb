"""A DP-SGD run of a small classifier with canaries inserted, as the benchmark and tests use.

The same two insertion paths a user's own training takes: input canaries appended to the
training records (:func:`~privaudit.canaries.append_canaries`), gradient canaries added
inside Opacus' step (:class:`~privaudit.canaries.GradientCanaryInjector`), the canary
coordinates logged after every step (:class:`~privaudit.canaries.IterateLog`). Plain SGD
(no momentum), Poisson sampling, per-sample clipping, Gaussian noise (Abadi et al. 2016).
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privaudit._validation import as_float_array, as_label_array, check_positive_int, fail
from privaudit.canaries.insert import append_canaries
from privaudit.canaries.opacus_hook import GradientCanaryInjector, IterateLog
from privaudit.canaries.sets import CanaryCoins, CanarySet
from privaudit.errors import InvalidInputError

__all__ = ["DPSGDRun", "mlp_parameter_count", "pretrained_mlp", "train_dp_sgd_with_canaries"]


@dataclasses.dataclass(frozen=True, eq=False)
class _DPRun:
    """The parameters of one DP-SGD run with canaries that the audit needs, and its
    canary trace: what :class:`DPSGDRun` and
    :class:`~privaudit.canaries.RecipeCanaryRun` share."""

    accountant_epsilon: float
    delta: float
    noise_multiplier: float
    sample_rate: float
    expected_batch_size: float
    lr: float
    max_grad_norm: float
    steps: int
    trace: NDArray[np.float64] | None
    gradient_canaries_inserted: int

    def scores(self, access: str = "iterates") -> NDArray[np.float64]:
        """The canaries' white-box scores (:func:`~privaudit.canaries.gradient_canary_scores`)."""
        from privaudit.canaries.scoring import gradient_canary_scores

        if self.trace is None:
            raise fail("trace", "the gradient canaries' trace", "a run without gradient canaries")
        return gradient_canary_scores(
            self.trace,
            lr=self.lr,
            expected_batch_size=self.expected_batch_size,
            max_grad_norm=self.max_grad_norm,
            access=access,
            noise_multiplier=self.noise_multiplier,
            sample_rate=self.sample_rate,
        )


@dataclasses.dataclass(frozen=True, eq=False)
class DPSGDRun(_DPRun):
    """What one DP-SGD run with canaries gives the audit.

    Attributes
    ----------
    module : torch.nn.Module
        The final model (evaluation mode, on the CPU).
    accountant_epsilon : float
        Opacus' RDP accountant's eps at ``delta`` (inf without noise).
    delta, noise_multiplier, sample_rate, expected_batch_size, lr, max_grad_norm : float
        The run's privacy and optimisation parameters.
    steps : int
        Optimizer steps taken.
    trace : ndarray or None
        The gradient canaries' coordinates after every step (``(steps + 1, m)``).
    gradient_canaries_inserted : int
        How many canary gradients were added over the run.
    """

    module: Any

    def input_losses(self, canaries: CanarySet) -> NDArray[np.float64]:
        """Cross-entropy loss of each input canary's label under the final model."""
        import torch

        with torch.no_grad():
            out = self.module(torch.tensor(canaries.X, dtype=torch.float32))
            loss = torch.nn.functional.cross_entropy(
                out, torch.tensor(canaries.y, dtype=torch.long), reduction="none"
            )
        return np.asarray(loss.numpy(), dtype=np.float64)


def mlp_parameter_count(n_features: int, hidden: int, n_classes: int) -> int:
    """Trainable parameters of the benchmark's MLP ``d -> hidden -> classes`` (ReLU)."""
    return n_features * hidden + hidden + hidden * n_classes + n_classes


def _mlp(n_features: int, hidden: int, n_classes: int) -> Any:
    import torch

    return torch.nn.Sequential(
        torch.nn.Linear(n_features, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, n_classes)
    )


def pretrained_mlp(
    n_features: int,
    hidden: int,
    n_classes: int,
    public: tuple[ArrayLike, ArrayLike] | None,
    public_epochs: int,
    seed: int,
) -> Any:
    """The MLP a run with this ``seed`` starts its private phase from (initialised, then
    trained on ``public`` if given): for choosing canary coordinates before the run
    (:func:`~privaudit.canaries.quiet_coordinates`)."""
    import torch

    with torch.random.fork_rng(devices=[]):
        return _initial_mlp(n_features, hidden, n_classes, public, public_epochs, seed)


def _initial_mlp(
    n_features: int,
    hidden: int,
    n_classes: int,
    public: tuple[ArrayLike, ArrayLike] | None,
    public_epochs: int,
    seed: int,
) -> Any:
    """The MLP seeded with ``seed`` on torch's global generator, then trained on ``public``."""
    import torch

    torch.manual_seed(seed)
    module = _mlp(n_features, hidden, n_classes)
    if public is not None:
        _pretrain(module, public, public_epochs, seed)
    return module


def _pretrain(module: Any, public: tuple[ArrayLike, ArrayLike], epochs: int, seed: int) -> None:
    """Non-private training on public records (Adam, lr 1e-3, batches of 256)."""
    import torch

    Xp = torch.tensor(as_float_array(public[0], "public X", ndim=2), dtype=torch.float32)
    yp = torch.tensor(as_label_array(public[1], "public y"), dtype=torch.long)
    gen = torch.Generator().manual_seed(seed + 7)
    opt = torch.optim.Adam(module.parameters(), lr=1e-3)
    for _ in range(epochs):
        for idx in torch.randperm(len(yp), generator=gen).split(256):
            opt.zero_grad(set_to_none=True)
            torch.nn.functional.cross_entropy(module(Xp[idx]), yp[idx]).backward()
            opt.step()


def train_dp_sgd_with_canaries(
    X: ArrayLike,
    y: ArrayLike,
    *,
    input_canaries: tuple[CanarySet, CanaryCoins] | None = None,
    gradient_canaries: tuple[CanarySet, CanaryCoins] | None = None,
    hidden: int = 32,
    epochs: int = 3,
    batch_size: int = 2048,
    lr: float = 2.0,
    max_grad_norm: float = 1.0,
    noise_multiplier: float | None = None,
    target_epsilon: float | None = None,
    delta: float = 1e-5,
    public: tuple[ArrayLike, ArrayLike] | None = None,
    public_epochs: int = 5,
    insert: bool = True,
    max_physical_batch_size: int | None = None,
    seed: int = 0,
) -> DPSGDRun:
    """Train the MLP with DP-SGD (Opacus) on ``X, y`` plus the included canaries.

    Exactly one of ``noise_multiplier`` (0 = no noise, a non-private run with clipping)
    and ``target_epsilon`` (Opacus picks the noise for ``epochs`` at ``delta``).
    ``batch_size / n_real`` is the Poisson rate of every record and canary.

    ``insert=False`` logs the gradient canaries' coordinates without ever adding them
    (the "never inserted" validity check: the scores then do not depend on the coins).

    ``public``: records trained on first, without privacy, for ``public_epochs`` (Adam,
    batches of 256): the usual public pre-training before a DP fine-tuning. The
    private run starts near an optimum, where the real data's mean gradient on a canary
    coordinate is small, so the canaries stand out (the guarantee and the accountant
    concern the private records and the canaries only; the public ones are public).

    ``max_physical_batch_size``: split each (logical, Poisson-sampled) batch into
    physical batches of at most this many records (Opacus' ``BatchMemoryManager``); the
    noise, the canaries and the step are those of the logical batch, so the run and its
    accounting are the same, only the memory of the per-sample gradients is bounded
    (full-batch DP-GD, ``batch_size >= len(X)``, needs it for a wide model).
    """
    try:
        import opacus  # noqa: F401
        import torch
    except ImportError as exc:
        raise InvalidInputError(
            "opacus: expected Opacus installed (pip install 'privaudit[dp]'), found none"
        ) from exc
    if (noise_multiplier is None) == (target_epsilon is None):
        raise fail("noise_multiplier/target_epsilon", "exactly one of them", "both or neither")
    data, n_features, n_classes, rate = _training_data(X, y, input_canaries, batch_size)
    with torch.random.fork_rng(devices=[]), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Full backward hook is firing")
        warnings.filterwarnings("ignore", module="opacus")
        module = _initial_mlp(n_features, hidden, n_classes, public, public_epochs, seed)
        engine, priv, dp_opt, dp_loader = _make_private(
            module,
            data,
            rate,
            lr=lr,
            max_grad_norm=max_grad_norm,
            noise_multiplier=noise_multiplier,
            target_epsilon=target_epsilon,
            delta=delta,
            epochs=epochs,
        )
        q = float(dp_loader.sample_rate)
        log, injector = _canary_hooks(module, dp_opt, gradient_canaries, insert, q, seed)
        dp_loader = _physical_batches(dp_loader, dp_opt, max_physical_batch_size)
        steps = 0
        for _ in range(epochs):
            for xb, yb in dp_loader:
                dp_opt.zero_grad(set_to_none=True)
                loss = torch.nn.functional.cross_entropy(priv(xb), yb)
                loss.backward()
                dp_opt.step()
                if getattr(dp_opt, "_is_last_step_skipped", False):
                    continue  # a physical batch inside a logical one: no step yet
                steps += 1
                if log is not None:
                    log.record(module)
        if injector is not None:
            injector.detach()
        sigma = float(dp_opt.noise_multiplier)
        eps = float(engine.get_epsilon(delta)) if sigma > 0 else float("inf")
    module.eval()
    return DPSGDRun(
        module=module,
        accountant_epsilon=eps,
        delta=float(delta),
        noise_multiplier=sigma,
        sample_rate=q,
        expected_batch_size=float(dp_opt.expected_batch_size),
        lr=float(lr),
        max_grad_norm=float(max_grad_norm),
        steps=steps,
        trace=None if log is None else log.trace,
        gradient_canaries_inserted=0 if injector is None else injector.inserted,
    )


def _training_data(
    X: ArrayLike,
    y: ArrayLike,
    input_canaries: tuple[CanarySet, CanaryCoins] | None,
    batch_size: int,
) -> tuple[Any, int, int, float]:
    """The records and included input canaries, their features, classes and Poisson rate."""
    import torch

    Xa = as_float_array(X, "X", ndim=2)
    ya = as_label_array(y, "y")
    n_real = int(ya.size)
    n_classes = max(2, int(ya.max()) + 1)
    if input_canaries is not None:
        Xa, ya = append_canaries(Xa, ya, *input_canaries)
        n_classes = max(n_classes, input_canaries[0].n_classes)
    data = torch.utils.data.TensorDataset(
        torch.tensor(Xa, dtype=torch.float32), torch.tensor(ya, dtype=torch.long)
    )
    # the Poisson rate is that of the real records: batch_size / n_real (see opacus_hook)
    return data, Xa.shape[1], n_classes, min(1.0, batch_size / n_real)


def _make_private(
    module: Any,
    data: Any,
    rate: float,
    *,
    lr: float,
    max_grad_norm: float,
    noise_multiplier: float | None,
    target_epsilon: float | None,
    delta: float,
    epochs: int,
) -> tuple[Any, Any, Any, Any]:
    """Opacus' RDP engine, private module, DP-SGD optimizer and Poisson loader over ``data``."""
    import torch
    from opacus import PrivacyEngine

    opt = torch.optim.SGD(module.parameters(), lr=lr, momentum=0.0)
    loader = torch.utils.data.DataLoader(data, batch_size=max(1, round(rate * len(data))))
    engine = PrivacyEngine(accountant="rdp")
    common = {
        "module": module,
        "optimizer": opt,
        "data_loader": loader,
        "max_grad_norm": max_grad_norm,
    }
    if target_epsilon is not None:
        priv, dp_opt, dp_loader = engine.make_private_with_epsilon(
            **common, target_epsilon=target_epsilon, target_delta=delta, epochs=epochs
        )
    else:
        priv, dp_opt, dp_loader = engine.make_private(**common, noise_multiplier=noise_multiplier)
    return engine, priv, dp_opt, dp_loader


def _canary_hooks(
    module: Any,
    dp_opt: Any,
    gradient_canaries: tuple[CanarySet, CanaryCoins] | None,
    insert: bool,
    sample_rate: float,
    seed: int,
) -> tuple[IterateLog | None, GradientCanaryInjector | None]:
    """The gradient canaries' iterate log (first entry taken) and attached injector, if any."""
    if gradient_canaries is None:
        return None, None
    gset, gcoins = gradient_canaries
    injector: GradientCanaryInjector | None = None
    if insert:
        injector = GradientCanaryInjector(
            dp_opt, gset, gcoins, sample_rate=sample_rate, seed=seed + 1
        )
        injector.attach()
    log = IterateLog(gset.coords)
    log.record(module)
    return log, injector


def _physical_batches(dp_loader: Any, dp_opt: Any, max_physical_batch_size: int | None) -> Any:
    """``dp_loader``, split into physical batches of at most ``max_physical_batch_size``."""
    if max_physical_batch_size is None:
        return dp_loader
    from opacus.utils.batch_memory_manager import wrap_data_loader

    size = check_positive_int(max_physical_batch_size, "max_physical_batch_size")
    return wrap_data_loader(data_loader=dp_loader, max_batch_size=size, optimizer=dp_opt)
