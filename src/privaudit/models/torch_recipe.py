"""What a torch model is and how one trains: :class:`TorchRecipe`, :class:`TorchModel`
and the pieces every torch trainer shares.

The recipe names the network's **module factory** (``"package.module:function"`` or
``"path/to/file.py:function"``, called as ``function(**factory_kwargs)``, returning an
``nn.Module`` that maps a float32 batch ``X`` of shape ``(n, d)`` to logits ``(n, C)``)
and the training settings (optimizer, epochs, batches, augmentation, DP-SGD).
:class:`TorchModel` is a trained network seen through its logits. The training steps
shared by the one-by-one trainer (:class:`~privaudit.models.torch_models.TorchTrainer`),
DP-SGD (:mod:`privaudit.models.torch_dp`) and the batched trainer
(:mod:`privaudit.models.torch_batched`) live here too, so that all of them see the same
optimizer, mini-batches and augmentation for a seed: :func:`make_optimizer`,
:func:`batch_order`, :func:`augment_batch`, :func:`resolve_device`.

``torch`` is imported only inside the functions that need it (:func:`require_torch`);
importing the module needs no torch, so that configs and recipes validate on a default
install.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import json
import math
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privaudit._process import heavy_import
from privaudit._validation import as_float_array, check_positive_int, fail
from privaudit.errors import InvalidInputError, PrivauditError

__all__ = [
    "AUGMENTATIONS",
    "LOSSES",
    "LR_SCHEDULES",
    "OPTIMIZERS",
    "THREADS_ENV",
    "TorchModel",
    "TorchRecipe",
    "augment_batch",
    "batch_order",
    "lr_at",
    "make_optimizer",
    "require_torch",
    "resolve_device",
    "resolve_factory",
    "shift_images",
    "train_module",
]

OPTIMIZERS: tuple[str, ...] = ("sgd", "adam", "adamw")
AUGMENTATIONS: tuple[str, ...] = ("none", "shift", "flip", "flip-shift")
LOSSES: tuple[str, ...] = ("cross_entropy",)
LR_SCHEDULES: tuple[str, ...] = ("constant", "cosine", "one-cycle")
#: The share of a ``one-cycle`` run spent warming the learning rate up from 0.
_WARMUP_FRACTION = 0.15
#: Environment variable a worker process sets to the number of threads it may use; a
#: fit inside such a worker calls ``torch.set_num_threads`` with it.
THREADS_ENV = "PRIVAUDIT_THREADS_PER_WORKER"
_EVAL_BATCH = 4096


def require_torch() -> Any:
    """Import torch, or raise a clear error naming the extra to install."""
    try:
        if "torch" in sys.modules:
            import torch
        else:
            with heavy_import():  # the command line's process: see privaudit._process
                import torch
    except ImportError as exc:  # pragma: no cover - exercised without torch only
        raise InvalidInputError(
            "model: expected PyTorch installed for a torch model "
            "(pip install torch, then pip install 'privaudit[torch]'), found no torch"
        ) from exc
    return torch


def resolve_factory(spec: str, *, base_dir: str | Path | None = None) -> Callable[..., Any]:
    """The callable named by ``"package.module:function"`` or ``"file.py:function"``.

    A ``.py`` path is resolved against ``base_dir`` (the config's directory) when
    relative and imported under a name derived from its absolute path, so that worker
    processes resolve the same spec to the same function. The factory is the user's
    own code: it is imported (executed), unlike the weights, which are only read.
    """
    if not isinstance(spec, str) or spec.count(":") != 1:
        raise fail("factory", "'package.module:function' or 'file.py:function'", repr(spec))
    mod_name, func_name = spec.split(":")
    if not mod_name or not func_name.isidentifier():
        raise fail("factory", "'package.module:function' or 'file.py:function'", repr(spec))
    if mod_name.endswith(".py"):
        path = Path(mod_name)
        if not path.is_absolute() and base_dir is not None:
            path = Path(base_dir) / path
        path = path.resolve()
        if not path.is_file():
            raise fail("factory", "an existing Python file", str(path))
        key = "_privaudit_factory_" + "".join(c if c.isalnum() else "_" for c in str(path))
        module = sys.modules.get(key)
        if module is None:
            loader_spec = importlib.util.spec_from_file_location(key, path)
            if loader_spec is None or loader_spec.loader is None:  # pragma: no cover
                raise fail("factory", "an importable Python file", str(path))
            module = importlib.util.module_from_spec(loader_spec)
            sys.modules[key] = module
            try:
                loader_spec.loader.exec_module(module)
            except Exception:
                del sys.modules[key]
                raise
    else:
        try:
            module = importlib.import_module(mod_name)
        except ImportError as exc:
            raise fail("factory", "an importable module", f"{mod_name!r} ({exc})") from None
    fn = getattr(module, func_name, None)
    if fn is None or not callable(fn):
        raise fail("factory", f"a function {func_name!r} in {mod_name}", "none")
    return fn


@dataclasses.dataclass(frozen=True)
class TorchRecipe:
    """How a torch model is built and trained (the target's recipe, reused for every
    reference, shadow, distilled and leave-one-out model).

    Parameters
    ----------
    factory : str
        ``"package.module:function"`` or ``"file.py:function"`` returning an ``nn.Module``.
    factory_kwargs : mapping
        Keyword arguments of the factory (JSON-able).
    optimizer : {"sgd", "adam", "adamw"}
    lr : float
        Learning rate.
    momentum : float
        SGD momentum (ignored by Adam).
    weight_decay : float
        L2 penalty (coupled for SGD and Adam, decoupled for AdamW, as in torch.optim).
    epochs : int
    batch_size : int
    lr_schedule : {"constant", "cosine", "one-cycle"}
        The learning rate at step ``t`` of the ``T`` steps of a run: ``lr`` throughout
        (``constant``); ``lr * (1 + cos(pi t / T)) / 2`` (``cosine``, Loshchilov & Hutter
        2017, without restarts); or a linear warm-up from 0 over the first 15% of the steps,
        then that cosine decay to 0 over the rest (``one-cycle``, Smith & Topin 2019, the
        schedule of fast CIFAR-10 training). Each model follows the schedule over its own
        steps, also when many train stacked (the ``vmap`` path of
        :mod:`privaudit.models.torch_batched`; the hand-written MLP kernel takes a
        constant rate, so a scheduled MLP recipe trains through ``vmap``).
    loss : {"cross_entropy"}
    augmentation : {"none", "shift", "flip", "flip-shift"}
        Training-time augmentation of images: random shifts by up to ``max_shift``
        pixels (zero padding) and/or random horizontal flips; needs ``input_shape``.
    input_shape : tuple of int, optional
        ``(channels, height, width)`` of an image record (``X`` holds them flattened).
    max_shift : int
        Largest shift of the ``shift`` augmentation, in pixels.
    device : {"auto", "cpu", "cuda"}
        ``"auto"``: CUDA when available, else CPU.
    dp : mapping, optional
        DP-SGD with Opacus (extra ``dp``; Abadi et al. 2016): ``noise_multiplier`` or
        ``target_epsilon``, ``max_grad_norm`` (default 1.0), ``delta`` (default 1e-5),
        ``accountant`` (``"rdp"``, default, or ``"prv"``). Poisson sampling with rate
        ``batch_size / n``; the accountant's epsilon at ``delta`` is recorded in the
        model's ``fit_info["accountant_epsilon"]``.
    base_dir : str, optional
        Directory against which a relative ``file.py`` factory is resolved (not part of
        :meth:`settings`, so the cache key does not depend on where the config lives).
    """

    factory: str
    factory_kwargs: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    optimizer: str = "adam"
    lr: float = 1e-3
    momentum: float = 0.0
    weight_decay: float = 0.0
    epochs: int = 20
    batch_size: int = 64
    lr_schedule: str = "constant"
    loss: str = "cross_entropy"
    augmentation: str = "none"
    input_shape: tuple[int, ...] | None = None
    max_shift: int = 2
    device: str = "auto"
    dp: Mapping[str, Any] | None = None
    base_dir: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.factory, str) or self.factory.count(":") != 1:
            raise fail("factory", "'package.module:function' or 'file.py:function'", self.factory)
        object.__setattr__(self, "factory_kwargs", dict(self.factory_kwargs))
        if self.optimizer not in OPTIMIZERS:
            raise fail("optimizer", " or ".join(OPTIMIZERS), repr(self.optimizer))
        if self.lr_schedule not in LR_SCHEDULES:
            raise fail("lr_schedule", " or ".join(LR_SCHEDULES), repr(self.lr_schedule))
        if self.loss not in LOSSES:
            raise fail("loss", " or ".join(LOSSES), repr(self.loss))
        if self.augmentation not in AUGMENTATIONS:
            raise fail("augmentation", " or ".join(AUGMENTATIONS), repr(self.augmentation))
        for name in ("lr", "momentum", "weight_decay"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | float) or not np.isfinite(v) or v < 0:
                raise fail(name, "a finite non-negative number", repr(v))
        if not self.lr > 0:
            raise fail("lr", "a positive learning rate", self.lr)
        check_positive_int(self.epochs, "epochs")
        check_positive_int(self.batch_size, "batch_size")
        check_positive_int(self.max_shift, "max_shift")
        if self.input_shape is not None:
            shape = tuple(int(s) for s in self.input_shape)
            if len(shape) != 3 or min(shape) < 1:
                raise fail("input_shape", "(channels, height, width)", self.input_shape)
            object.__setattr__(self, "input_shape", shape)
        if self.augmentation != "none" and self.input_shape is None:
            raise fail(
                "input_shape", f"an image shape for augmentation {self.augmentation!r}", None
            )
        if self.device not in ("auto", "cpu", "cuda"):
            raise fail("device", "'auto', 'cpu' or 'cuda'", repr(self.device))
        if self.dp is not None:
            object.__setattr__(self, "dp", _check_dp(self.dp, self))

    def settings(self) -> dict[str, Any]:
        """JSON-able description of everything that affects training (cache keys)."""
        d = dataclasses.asdict(self)
        d.pop("base_dir")
        d.pop("device")  # results agree across devices up to floating-point noise
        d["factory_kwargs"] = json.loads(json.dumps(dict(self.factory_kwargs), sort_keys=True))
        d["input_shape"] = None if self.input_shape is None else list(self.input_shape)
        d["dp"] = None if self.dp is None else dict(self.dp)
        if self.lr_schedule == "constant":  # the keys of recipes from before the field
            d.pop("lr_schedule")
        return d

    def build(self, seed: int | None = None) -> Any:
        """A freshly initialised module (initial weights from ``seed`` when given)."""
        torch = require_torch()
        fn = resolve_factory(self.factory, base_dir=self.base_dir)
        if seed is None:
            module = fn(**self.factory_kwargs)
        else:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(int(seed))
                module = fn(**self.factory_kwargs)
        if not isinstance(module, torch.nn.Module):
            raise fail(f"factory {self.factory!r}", "a torch.nn.Module", type(module).__name__)
        return module


_DP_KEYS = ("noise_multiplier", "target_epsilon", "max_grad_norm", "delta", "accountant")


def _check_dp(dp: Mapping[str, Any], recipe: TorchRecipe) -> dict[str, Any]:
    d = dict(dp)
    bad = sorted(set(d) - set(_DP_KEYS))
    if bad:
        raise fail("dp", "keys among " + ", ".join(_DP_KEYS), bad)
    if ("noise_multiplier" in d) == ("target_epsilon" in d):
        raise fail("dp", "exactly one of noise_multiplier or target_epsilon", sorted(d))
    d.setdefault("max_grad_norm", 1.0)
    d.setdefault("delta", 1e-5)
    d.setdefault("accountant", "rdp")
    for k in ("noise_multiplier", "target_epsilon", "max_grad_norm"):
        if k in d and not (isinstance(d[k], int | float) and np.isfinite(d[k]) and d[k] > 0):
            raise fail(f"dp.{k}", "a positive number", d[k])
    if not (isinstance(d["delta"], int | float) and 0 < d["delta"] < 1):
        raise fail("dp.delta", "a number in (0, 1)", d["delta"])
    if d["accountant"] not in ("rdp", "prv"):
        raise fail("dp.accountant", "'rdp' or 'prv'", d["accountant"])
    if recipe.augmentation != "none":
        raise fail("dp", "no augmentation with DP-SGD (not supported here)", recipe.augmentation)
    return d


def resolve_device(device: str) -> str:
    """``"cuda"`` or ``"cpu"`` for a recipe's ``device``."""
    torch = require_torch()
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise fail("device", "a CUDA device (torch.cuda.is_available())", "none")
    return device


class TorchModel:
    """A trained torch classifier seen through its logits.

    Parameters
    ----------
    module : torch.nn.Module
        Maps float32 ``(n, d)`` to logits ``(n, C)``; used in eval mode.
    n_classes : int
    recipe : TorchRecipe, optional
        How it was built (saved with the weights so that it can be rebuilt).
    fit_info : dict, optional
    device : str
        ``"cpu"``, ``"cuda"`` or ``"auto"``.
    """

    def __init__(
        self,
        module: Any,
        n_classes: int,
        *,
        recipe: TorchRecipe | None = None,
        fit_info: dict[str, Any] | None = None,
        device: str = "auto",
    ) -> None:
        self.module = module
        self._n_classes = check_positive_int(n_classes, "n_classes", minimum=2)
        self.recipe = recipe
        self.fit_info: dict[str, Any] = dict(fit_info or {})
        self.device = device

    @property
    def n_classes(self) -> int:
        """Number of classes ``C``."""
        return self._n_classes

    def __repr__(self) -> str:
        return f"TorchModel({type(self.module).__name__}, n_classes={self._n_classes})"

    def logits(self, X: NDArray[np.float64]) -> NDArray[np.float64]:
        """Logits in eval mode (no dropout, frozen batch norm), float64 ``(n, C)``."""
        torch = require_torch()
        X = as_float_array(X, "X", ndim=2)
        dev = resolve_device(self.device)
        module = self.module.to(dev)
        was_training = module.training
        module.eval()
        out = []
        try:
            with torch.no_grad():
                for start in range(0, X.shape[0], _EVAL_BATCH):
                    xb = torch.from_numpy(
                        np.array(X[start : start + _EVAL_BATCH], dtype=np.float32)
                    )
                    out.append(module(xb.to(dev)).double().cpu().numpy())
        except PrivauditError:
            raise
        except Exception as exc:
            raise PrivauditError(
                f"{self!r}: forward pass failed: {type(exc).__name__}: {exc}"
            ) from exc
        finally:
            module.train(was_training)
        z = np.concatenate(out) if out else np.zeros((0, self._n_classes))
        if z.ndim != 2 or z.shape[1] != self._n_classes:
            raise fail(f"{self!r} output", f"logits of shape (n, {self._n_classes})", z.shape)
        return np.ascontiguousarray(z, dtype=np.float64)

    def state_dict_numpy(self) -> dict[str, NDArray[Any]]:
        """The module's state dict as NumPy arrays (CPU copies)."""
        return {k: v.detach().cpu().numpy() for k, v in self.module.state_dict().items()}


def augment_batch(
    xb: NDArray[np.float32],
    shape: tuple[int, ...],
    kind: str,
    max_shift: int,
    rng: np.random.Generator,
) -> NDArray[np.float32]:
    """Random shifts (zero padding) and/or horizontal flips of flattened images.

    The augmentations of Carlini et al. 2022 (Sec. VI-A: random flips and shifts of up to
    4 pixels for CIFAR-10) applied per record with the given generator.
    """
    if kind == "none":
        return xb
    n = xb.shape[0]
    imgs = xb.reshape((n, *shape)).copy()
    if kind in ("flip", "flip-shift"):
        flip = rng.random(n) < 0.5
        imgs[flip] = imgs[flip][..., ::-1]
    if kind in ("shift", "flip-shift"):
        imgs = shift_images(imgs, rng.integers(-max_shift, max_shift + 1, size=(n, 2)))
    return imgs.reshape(n, -1)


def shift_images(imgs: NDArray[Any], shifts: NDArray[np.int64]) -> NDArray[Any]:
    """Each image ``(C, H, W)`` moved by ``(dy, dx)`` pixels, zeros shifted in."""
    n, _, H, W = imgs.shape
    out = np.zeros_like(imgs)
    for i in range(n):
        dy, dx = int(shifts[i, 0]), int(shifts[i, 1])
        ys, yd = (slice(0, H - dy), slice(dy, H)) if dy >= 0 else (slice(-dy, H), slice(0, H + dy))
        xs, xd = (slice(0, W - dx), slice(dx, W)) if dx >= 0 else (slice(-dx, W), slice(0, W + dx))
        out[i, :, yd, xd] = imgs[i, :, ys, xs]
    return out


def make_optimizer(recipe: TorchRecipe, params: Any) -> Any:
    """The torch optimizer of the recipe."""
    torch = require_torch()
    if recipe.optimizer == "sgd":
        return torch.optim.SGD(
            params, lr=recipe.lr, momentum=recipe.momentum, weight_decay=recipe.weight_decay
        )
    if recipe.optimizer == "adam":
        return torch.optim.Adam(params, lr=recipe.lr, weight_decay=recipe.weight_decay)
    return torch.optim.AdamW(params, lr=recipe.lr, weight_decay=recipe.weight_decay)


def lr_at(recipe: TorchRecipe, step: int, n_steps: int) -> float:
    """The learning rate of step ``step`` (0-based) of an ``n_steps``-step run under the
    recipe's ``lr_schedule`` (see :class:`TorchRecipe`)."""
    if recipe.lr_schedule == "constant" or n_steps <= 1:
        return float(recipe.lr)
    t, T = float(step), float(n_steps)
    if recipe.lr_schedule == "one-cycle":
        warm = max(1, int(_WARMUP_FRACTION * n_steps))
        if step < warm:
            return float(recipe.lr) * (t + 1) / warm
        t, T = t - warm, T - warm
    return float(recipe.lr) * 0.5 * (1.0 + math.cos(math.pi * t / T))


def batch_order(
    n: int, batch_size: int, epochs: int, rng: np.random.Generator
) -> list[NDArray[np.int64]]:
    """The mini-batches of a training run: per epoch a fresh permutation, cut in
    consecutive batches of ``batch_size`` (the last one partial). Shared by the
    one-by-one and the batched trainers, so both see the same batches for a seed."""
    out: list[NDArray[np.int64]] = []
    for _ in range(epochs):
        perm = rng.permutation(n)
        out.extend(perm[s : s + batch_size] for s in range(0, n, batch_size))
    return out


def _set_worker_threads() -> None:
    n = os.environ.get(THREADS_ENV)
    if n:
        torch = require_torch()
        if torch.get_num_threads() != int(n):
            torch.set_num_threads(int(n))


def train_module(
    r: TorchRecipe,
    module: Any,
    X: NDArray[np.float64],
    y: NDArray[np.int64],
    seed: int,
    C: int,
    dev: str,
    w: NDArray[np.float64] | None = None,
) -> TorchModel:
    """The training loop of :meth:`TorchTrainer.fit` on a freshly built ``module``
    (``r.build(seed)``): the mini-batches and augmentation from ``default_rng(seed)``.
    Touches no global state, so that several threads may run it at once."""
    torch = require_torch()
    module = module.to(dev)
    module.train()
    opt = make_optimizer(r, module.parameters())
    rng = np.random.default_rng(int(seed))
    Xf = X.astype(np.float32)
    yt_all = torch.as_tensor(y, dtype=torch.long)
    wt_all = None if w is None else torch.as_tensor(w, dtype=torch.float32)
    batches = batch_order(y.size, r.batch_size, r.epochs, rng)
    for step, idx in enumerate(batches):
        if r.lr_schedule != "constant":
            for group in opt.param_groups:
                group["lr"] = lr_at(r, step, len(batches))
        xb_np = Xf[idx]
        if r.augmentation != "none" and r.input_shape is not None:
            xb_np = augment_batch(xb_np, r.input_shape, r.augmentation, r.max_shift, rng)
        xb = torch.from_numpy(np.ascontiguousarray(xb_np)).to(dev)
        yb = yt_all[idx].to(dev)
        opt.zero_grad(set_to_none=True)
        ce = torch.nn.functional.cross_entropy(module(xb), yb, reduction="none")
        if wt_all is None:
            loss = ce.mean()
        else:
            wb = wt_all[idx].to(dev)
            loss = (ce * wb).sum() / wb.sum().clamp_min(1e-12)
        loss.backward()
        opt.step()
    module.eval()
    info = {"n_train": int(y.size), "seed": int(seed), "device": dev, "epochs": r.epochs}
    return TorchModel(module.cpu(), C, recipe=r, fit_info=info, device=r.device)
