"""PyTorch adapter: :class:`TorchTrainer` and the safetensors files of its models.

What a torch model is (:class:`~privaudit.models.torch_recipe.TorchRecipe`,
:class:`~privaudit.models.torch_recipe.TorchModel`) and the training steps every torch
trainer shares live in :mod:`privaudit.models.torch_recipe`; they are re-exported here.
``torch`` is imported only inside the functions that need it (install the ``torch``
extra, ``pip install "privaudit[torch]"``); importing the module itself needs no torch,
so that configs and recipes validate on a default install.

The network comes from a **module factory** named ``"package.module:function"`` (or
``"path/to/file.py:function"``), called as ``function(**factory_kwargs)`` and returning
an ``nn.Module`` that maps a float32 batch ``X`` of shape ``(n, d)`` to logits
``(n, C)``. Images are passed flattened; the factory's module reshapes them (the recipe
says the shape, ``input_shape``, for augmentation).

Training (:meth:`TorchTrainer.fit`) follows the recipe the target was trained with, as
the reference-model attacks assume (Ye et al. 2022, Sec. 4, assumption 3; Carlini et al.
2022, Sec. IV): mini-batch SGD / Adam / AdamW on the (optionally weighted) cross-entropy,
``epochs`` passes over a fresh random permutation of the training set, batches of
``batch_size`` records (the last one partial), optional augmentation of images (random
shifts, horizontal flips). Everything random comes from the seed: the initial weights
(``torch.manual_seed(seed)`` around the factory call, inside ``fork_rng`` so the
caller's global state is untouched), the order of the mini-batches and the augmentation
(a NumPy generator seeded from ``seed``). On CPU two fits with the same seed give the
same weights bit for bit (the test suite checks it); on CUDA up to non-deterministic
kernels.

Weights are stored as **safetensors** (a flat name -> tensor map plus string metadata,
no code): :func:`save_torch_model` / :func:`load_torch_model`. A ``.pt`` / ``.pth``
state dict is read with ``torch.load(weights_only=True)``. Nothing is ever unpickled.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import as_float_array, check_positive_int, fail
from privaudit.models.base import check_fit_inputs
from privaudit.models.torch_recipe import (
    AUGMENTATIONS,
    OPTIMIZERS,
    THREADS_ENV,
    TorchModel,
    TorchRecipe,
    _set_worker_threads,
    batch_order,
    require_torch,
    resolve_device,
    resolve_factory,
    shift_images,
    train_module,
)

__all__ = [
    "AUGMENTATIONS",
    "OPTIMIZERS",
    "THREADS_ENV",
    "TorchModel",
    "TorchRecipe",
    "TorchTrainer",
    "batch_order",
    "load_torch_model",
    "require_torch",
    "resolve_factory",
    "save_torch_model",
    "shift_images",
    "train_module",
]

_FORMAT = "privaudit-torch-model"


class TorchTrainer:
    """Train a fresh network from a :class:`TorchRecipe` for each ``(X, y, seed)``.

    Satisfies the :class:`~privaudit.models.Trainer` protocol; the models it returns
    satisfy :class:`~privaudit.models.Model`. It also saves and loads its models
    (``artifact_suffix``, :meth:`save_model`, :meth:`load_model`) so that the artifact
    store can cache them as safetensors.

    Parameters
    ----------
    recipe : TorchRecipe
    n_classes : int, optional
        Size of the label space (default ``max(y) + 1``).
    name : str
    batched : bool
        Let the experiment engine train many models of this recipe at once
        (:meth:`fit_many`; the same models up to floating-point rounding). A
        convolutional network on a CPU is never batched (:attr:`batched` is false): its
        models train one per task of the executor (``n_jobs`` worker processes), because
        Python threads splitting them inside one process were measured bound by the
        interpreter lock (two threads training CIFAR-10 CNNs with batches of 32 ran
        31% of the time each; docs/cifar10.md).
    """

    artifact_suffix = ".safetensors"

    def __init__(
        self,
        recipe: TorchRecipe,
        *,
        n_classes: int | None = None,
        name: str = "torch",
        batched: bool = True,
    ) -> None:
        if not isinstance(recipe, TorchRecipe):
            raise fail("recipe", "a TorchRecipe", type(recipe).__name__)
        self.recipe = recipe
        self.n_classes = (
            None if n_classes is None else check_positive_int(n_classes, "n_classes", minimum=2)
        )
        self._name = name
        self._batched = bool(batched)
        self._conv_on_cpu: bool | None = None

    @property
    def batched(self) -> bool:
        """Whether the experiment engine trains many models of this trainer as one
        computation (:meth:`fit_many`): as asked, except for a convolutional network on
        a CPU (see the class docstring)."""
        if not self._batched:
            return False
        if self._conv_on_cpu is None:
            from privaudit.models.torch_conv_batched import has_conv

            self._conv_on_cpu = resolve_device(self.recipe.device) == "cpu" and has_conv(
                self.recipe
            )
        return not self._conv_on_cpu

    @property
    def name(self) -> str:
        """The trainer's name."""
        return self._name

    @property
    def device(self) -> str:
        """The recipe's device (``"auto"``, ``"cpu"`` or ``"cuda"``): where a Ray task that
        trains with this trainer is placed (:mod:`privaudit.runtime.task_resources`)."""
        return self.recipe.device

    def on_device(self, device: str) -> TorchTrainer:
        """The same trainer with the recipe's ``device`` set (same cache keys: the device
        is not part of :meth:`TorchRecipe.settings`)."""
        return TorchTrainer(
            dataclasses.replace(self.recipe, device=device),
            n_classes=self.n_classes,
            name=self._name,
            batched=self._batched,
        )

    def settings(self) -> dict[str, Any]:
        """The recipe (see :meth:`TorchRecipe.settings`) and ``n_classes``."""
        return {"recipe": self.recipe.settings(), "n_classes": self.n_classes}

    def accepts_sample_weight(self) -> bool:
        """Weighted cross-entropy is supported (soft-label distillation)."""
        return True

    def query_augmentation(self) -> dict[str, Any] | None:
        """The augmentation LiRA's augmented queries mirror (Carlini et al. 2022, Sec. VI-A):
        ``{"input_shape", "shift", "flip"}`` from the recipe's training augmentation
        (shifts of ``max_shift`` pixels, mirror images with flips), None without one.
        Read by :func:`privaudit.signals.views.query_views_of`."""
        r = self.recipe
        if r.augmentation == "none" or r.input_shape is None or len(r.input_shape) != 3:
            return None
        return {
            "input_shape": tuple(r.input_shape),
            "shift": int(r.max_shift) if "shift" in r.augmentation else 0,
            "flip": "flip" in r.augmentation,
        }

    def fit(
        self,
        X: NDArray[np.float64],
        y: NDArray[np.int64],
        *,
        seed: int,
        n_classes: int | None = None,
        sample_weight: NDArray[np.float64] | None = None,
        private_hook: Any = None,
    ) -> TorchModel:
        """Train the recipe's network on ``(X, y)`` with ``seed`` (see the module docstring).

        The loss of a mini-batch ``B`` is ``sum_{i in B} w_i CE_i / sum_{i in B} w_i``
        (``w = 1`` without ``sample_weight``). ``private_hook``: DP-SGD recipes only, a
        :data:`~privaudit.models.torch_dp.PrivateHook` acting inside the private run
        (gradient canaries).
        """
        require_torch()
        X, y, C = check_fit_inputs(
            X, y, seed, n_classes if n_classes is not None else self.n_classes
        )
        w = None
        if sample_weight is not None:
            w = as_float_array(sample_weight, "sample_weight", ndim=1)
            if w.size != y.size or (w < 0).any():
                raise fail("sample_weight", f"{y.size} non-negative weights", w.size)
        _set_worker_threads()
        r = self.recipe
        dev = resolve_device(r.device)
        if r.dp is not None:
            if w is not None:
                raise fail("sample_weight", "none with a DP-SGD recipe", "weights")
            from privaudit.models.torch_dp import fit_dp

            return fit_dp(r, X, y, int(seed), C, dev, private_hook=private_hook)
        if private_hook is not None:
            raise fail("private_hook", "a DP-SGD recipe (a dp section)", "a recipe without dp")
        return train_module(r, r.build(int(seed)), X, y, int(seed), C, dev, w)

    def fit_many(
        self,
        X: NDArray[np.float64],
        y: NDArray[np.int64],
        subsets: Any,
        seeds: Any,
        *,
        n_classes: int | None = None,
    ) -> list[TorchModel]:
        """One model per ``(subset, seed)`` trained as one batched computation
        (:func:`privaudit.models.torch_batched.fit_many`; convolutional networks through
        :func:`privaudit.models.torch_conv_batched.fit_many_conv`); used by the experiment
        engine for reference, shadow and leave-one-out models when ``batched`` is true."""
        from privaudit.models.torch_conv_batched import fit_many_conv, has_conv

        if has_conv(self.recipe):
            return fit_many_conv(self, X, y, subsets, seeds, n_classes=n_classes)
        from privaudit.models.torch_batched import fit_many

        return fit_many(self, X, y, subsets, seeds, n_classes=n_classes)

    # -- persistence used by the artifact store ---------------------------------------
    def save_model(self, model: Any, path: str | Path) -> Path:
        """Write ``model`` (a :class:`TorchModel`) as safetensors."""
        return save_torch_model(model, path)

    def load_model(self, path: str | Path) -> TorchModel:
        """Read a model written by :meth:`save_model` (rebuilt with this recipe)."""
        return load_torch_model(path, self.recipe, n_classes=self.n_classes)


def save_torch_model(model: TorchModel, path: str | Path) -> Path:
    """Write the weights of ``model`` as safetensors, atomically; metadata: format,
    ``n_classes``, the recipe's settings and ``fit_info`` (strings only, no code)."""
    if not isinstance(model, TorchModel):
        raise fail("model", "a TorchModel", type(model).__name__)
    from safetensors.numpy import save_file

    p = Path(path)
    tensors = {k: np.ascontiguousarray(v) for k, v in model.state_dict_numpy().items()}
    meta = {
        "format": _FORMAT,
        "n_classes": str(model.n_classes),
        "recipe": json.dumps(model.recipe.settings() if model.recipe else None, sort_keys=True),
        "fit_info": json.dumps(
            {k: v for k, v in model.fit_info.items() if isinstance(v, bool | int | float | str)}
        ),
    }
    tmp = p.with_name(p.name + ".tmp")
    save_file(tensors, str(tmp), metadata=meta)
    tmp.replace(p)
    return p


def read_state_dict(path: str | Path) -> tuple[dict[str, Any], dict[str, str]]:
    """``(state_dict of torch tensors, metadata)`` from ``.safetensors`` or a ``.pt`` /
    ``.pth`` state dict (``torch.load(weights_only=True)``: no code is run)."""
    torch = require_torch()
    p = Path(path)
    if not p.is_file():
        raise fail("path", "an existing weights file", str(p))
    suffix = p.suffix.lower()
    if suffix == ".safetensors":
        from safetensors import safe_open

        try:
            with safe_open(str(p), framework="pt") as fh:
                meta = dict(fh.metadata() or {})
                state = {k: fh.get_tensor(k) for k in fh.keys()}
        except Exception as exc:
            raise fail("path", "a readable safetensors file", f"{p.name} ({exc})") from None
        return state, meta
    if suffix in (".pt", ".pth"):
        try:
            obj = torch.load(p, map_location="cpu", weights_only=True)
        except Exception as exc:
            raise fail(
                "path", "a state dict loadable with weights_only=True", f"{p.name} ({exc})"
            ) from None
        if not isinstance(obj, Mapping) or not all(
            isinstance(v, torch.Tensor) for v in obj.values()
        ):
            raise fail("path", "a state dict (name -> tensor)", type(obj).__name__)
        return dict(obj), {}
    raise fail("path", "a .safetensors, .pt or .pth weights file", p.name)


def load_torch_model(
    path: str | Path, recipe: TorchRecipe, *, n_classes: int | None = None
) -> TorchModel:
    """Rebuild the recipe's module and load the weights at ``path`` into it (strict).

    ``n_classes`` defaults to the file's metadata, else to the module's output width on
    one zero record.
    """
    torch = require_torch()
    state, meta = read_state_dict(path)
    module = recipe.build(seed=0)
    try:
        module.load_state_dict(state, strict=True)
    except Exception as exc:
        raise fail(
            "weights",
            f"a state dict matching factory {recipe.factory!r}",
            f"{Path(path).name}: {exc}",
        ) from None
    module.eval()
    C = n_classes
    if C is None and "n_classes" in meta:
        C = int(meta["n_classes"])
    if C is None:
        d = _input_width(module)
        with torch.no_grad():
            C = int(module(torch.zeros(1, d)).shape[1]) if d else None
    if C is None:
        raise fail("n_classes", "the number of classes of the model", None)
    info = json.loads(meta.get("fit_info", "{}"))
    return TorchModel(module, C, recipe=recipe, fit_info=info, device=recipe.device)


def _input_width(module: Any) -> int | None:
    for p in module.parameters():
        if p.ndim == 2:
            return int(p.shape[1])
        return None
    return None
