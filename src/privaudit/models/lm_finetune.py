"""Fine-tune (or pre-train) a causal LM on text, full or LoRA, on CPU (issue 13, item 4).

:func:`finetune` trains a copy of a :class:`~privaudit.models.causal_lm.CausalLM` on a list of
texts with the next-token cross-entropy, and returns the trained copy (the base is never
modified). It makes the *targets* of an LLM membership audit (members = the fine-tuning
chunks) and their *reference models* (the same recipe on disjoint chunks: the
reference-calibration signal of ``../shared/notes/attacks.md`` 4.2 assumes a reference
trained like the target on similar data without the members; Carlini et al. 2021 Sec. 6.1,
Watson et al. 2022). ``finetune(tiny_gpt(seed=s), texts, recipe)`` pre-trains the tiny GPT
from scratch.

The recipe (:class:`FineTuneRecipe`):

* texts are tokenised without BOS/EOS (as they are scored) and cut into pieces of at most
  ``max_length`` tokens; a piece of fewer than 2 tokens has no label and is skipped;
* ``steps`` optimiser steps on batches of ``batch_size`` pieces, right-padded, the loss the
  mean cross-entropy over the real (non-padding) next-token labels of the batch; the batch
  order walks through fresh random permutations of the pieces (epochs);
* AdamW (Loshchilov & Hutter 2019; betas 0.9/0.999), learning rate warmed up linearly over
  ``warmup_steps`` then cosine-decayed to 10 % at the last step, gradients clipped to norm 1;
* ``stop_after=k`` stops after ``k`` steps of that ``steps``-step schedule:
  :func:`finetune_snapshots` returns the snapshots of ONE run after several numbers of steps
  (targets fine-tuned "for more steps" at the cost of the longest), each bit for bit the
  model of a separate ``stop_after=k`` run (the tests check it);
* ``lora_rank=None``: every parameter trains (full fine-tuning). ``lora_rank=r``: LoRA (Hu et
  al., "LoRA: low-rank adaptation of large language models", ICLR 2022, Sec. 4.1): every
  ``Linear`` / GPT-2 ``Conv1D`` layer of the attention and MLP blocks (not the embeddings or
  the output head) gets ``W x + (alpha / r) B A x`` with ``A`` (r x in) initialised like a
  ``Linear`` weight (uniform +-1/sqrt(in)), ``B`` (out x r) zero, and only ``A``, ``B`` train;
  on return ``W <- W + (alpha / r) B A`` is merged into the weights, so the result is a plain
  model of the base's architecture.

Defaults, measured on SmolLM2-135M-Instruct (``benchmarks/bench_llm_finetune.py --threads 1
--members 100 --config full:1e-4:60 --config lora16:1e-3:60``; 100 member and 100
non-member Tiny Shakespeare chunks of ~80 tokens, no distribution shift; 2-core CPU under
load 3-5, one torch thread): before fine-tuning the member / non-member mean token loss is
4.51 / 4.60 (loss AUC 0.555). Full fine-tuning with the defaults (lr 1e-4, 60 steps of 8,
~4.8 epochs): 11.2 s/step, losses 1.91 / 4.34, AUC of ``loss`` 0.999 and of the
base-model reference ``L_base - L_tuned`` 1.000 (saturated). LoRA r = 16, alpha 16, lr 1e-3,
60 steps: 7.5 s/step, losses 3.03 / 4.03, AUC ``loss`` 0.898, reference 0.996. So 60 steps
memorise ~100 chunks; for an audit whose signals are not all at 1.0 use LoRA or fewer steps.

Determinism without global seeding: the batch order comes from a ``torch.Generator``, the
LoRA initialisation from another, both seeded from ``SeedSequence(seed)``; the training loop
runs inside ``torch.random.fork_rng`` with its own seed (dropout, if the model has any), so
the caller's RNG state is untouched and the same recipe and seed give the same weights bit
for bit on CPU (the tests check it).
"""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from privaudit._validation import check_positive_int, fail
from privaudit.errors import InsufficientDataError
from privaudit.models.causal_lm import CausalLM, _all_cuda_devices, _check_texts, _torch
from privaudit.runtime.progress import ProgressOption, progress_bar

__all__ = [
    "FineTuneRecipe",
    "apply_lora",
    "finetune",
    "finetune_snapshots",
    "lora_targets",
    "merge_lora",
]

#: Gradient norm clip of every step.
CLIP_NORM = 1.0
#: The cosine schedule decays to this fraction of the learning rate at the last step.
FINAL_LR_FRACTION = 0.1


@dataclasses.dataclass(frozen=True)
class FineTuneRecipe:
    """How :func:`finetune` trains (see the module docstring).

    Parameters
    ----------
    steps : int
        Optimiser steps.
    batch_size : int
        Pieces (chunks of at most ``max_length`` tokens) per step.
    learning_rate : float
        Peak AdamW learning rate.
    weight_decay : float
        AdamW's decoupled weight decay.
    warmup_steps : int
        Linear warm-up steps (at most ``steps``).
    max_length : int
        Longest training piece, in tokens; longer texts are cut into consecutive pieces.
    lora_rank : int, optional
        None = full fine-tuning; ``r`` = LoRA of rank ``r`` on the attention / MLP
        projections, merged into the weights on return.
    lora_alpha : float
        LoRA scale numerator (the update is ``alpha / r * B A``).
    seed : int
        Batch order, LoRA initialisation, dropout.
    stop_after : int, optional
        Stop after this many optimiser steps (at most ``steps``) of the ``steps``-step
        schedule: the learning rate still warms up and decays over ``steps``, so the model
        is the step-``stop_after`` snapshot of the full run, bit for bit (what
        :func:`finetune_snapshots` returns). None = all ``steps``.
    """

    steps: int = 60
    batch_size: int = 8
    learning_rate: float = 1e-4
    weight_decay: float = 0.0
    warmup_steps: int = 10
    max_length: int = 128
    lora_rank: int | None = None
    lora_alpha: float = 16.0
    seed: int = 0
    stop_after: int | None = None

    def __post_init__(self) -> None:
        check_positive_int(self.steps, "steps")
        check_positive_int(self.batch_size, "batch_size")
        check_positive_int(self.max_length, "max_length", minimum=2)
        check_positive_int(self.warmup_steps, "warmup_steps", minimum=0)
        check_positive_int(self.seed, "seed", minimum=0)
        if self.warmup_steps > self.steps:
            raise fail("warmup_steps", f"at most steps={self.steps}", self.warmup_steps)
        for name in ("learning_rate", "lora_alpha"):
            v = getattr(self, name)
            if (
                isinstance(v, bool)
                or not isinstance(v, int | float)
                or not (math.isfinite(v) and v > 0)
            ):
                raise fail(name, "a positive finite number", repr(v))
        wd = self.weight_decay
        if (
            isinstance(wd, bool)
            or not isinstance(wd, int | float)
            or not (math.isfinite(wd) and wd >= 0)
        ):
            raise fail("weight_decay", "a finite number >= 0", repr(wd))
        if self.lora_rank is not None:
            check_positive_int(self.lora_rank, "lora_rank")
        if self.stop_after is not None:
            check_positive_int(self.stop_after, "stop_after")
            if self.stop_after > self.steps:
                raise fail("stop_after", f"at most steps={self.steps}", self.stop_after)

    @property
    def trained_steps(self) -> int:
        """Optimiser steps actually taken: ``stop_after``, or ``steps``."""
        return self.steps if self.stop_after is None else self.stop_after

    def settings(self) -> dict[str, Any]:
        """The recipe as a JSON-able dict (cache keys, results.json)."""
        return dataclasses.asdict(self)

    def learning_rate_at(self, step: int) -> float:
        """Learning rate of optimiser step ``step`` (0-based): linear warm-up, then cosine
        decay from ``learning_rate`` to ``FINAL_LR_FRACTION * learning_rate``."""
        if step < self.warmup_steps:
            return self.learning_rate * (step + 1) / self.warmup_steps
        span = max(self.steps - self.warmup_steps - 1, 1)
        progress = min((step - self.warmup_steps) / span, 1.0)
        cos = 0.5 * (1.0 + math.cos(math.pi * progress))
        return self.learning_rate * (FINAL_LR_FRACTION + (1.0 - FINAL_LR_FRACTION) * cos)


def _pieces(lm: CausalLM, texts: Sequence[str], max_length: int) -> list[list[int]]:
    out: list[list[int]] = []
    for ids in lm.tokenize(texts):
        for start in range(0, len(ids), max_length):
            piece = ids[start : start + max_length]
            if len(piece) >= 2:
                out.append(piece)
    return out


def _seeds(seed: int) -> tuple[int, int, int]:
    order, lora, loop = (
        int(s.generate_state(1, dtype=np.uint64)[0] >> np.uint64(1))
        for s in np.random.SeedSequence(seed).spawn(3)
    )
    return order, lora, loop


def lora_targets(model: Any) -> list[str]:
    """Names of the layers LoRA adapts: every ``nn.Linear`` and GPT-2 ``Conv1D`` of the
    model except its output head (the attention and MLP projections of each block)."""
    torch = _torch()
    from transformers.pytorch_utils import Conv1D

    head = model.get_output_embeddings()
    return [
        name
        for name, mod in model.named_modules()
        if isinstance(mod, torch.nn.Linear | Conv1D) and mod is not head
    ]


def _lora_layer_type() -> Any:
    """The LoRA wrapper class (defined on first use: torch is imported lazily)."""
    global _LORA_TYPE
    if _LORA_TYPE is not None:
        return _LORA_TYPE
    torch = _torch()
    from transformers.pytorch_utils import Conv1D

    class LoRALayer(torch.nn.Module):  # type: ignore[name-defined]
        """``base(x) + scale * (x A^T) B^T`` with ``base`` frozen (Hu et al. 2022, Eq. 3)."""

        def __init__(self, base: Any, rank: int, alpha: float, generator: Any) -> None:
            super().__init__()
            self.base = base
            self.conv1d = isinstance(base, Conv1D)  # weight (in, out) instead of (out, in)
            w = base.weight
            n_in, n_out = (w.shape[0], w.shape[1]) if self.conv1d else (w.shape[1], w.shape[0])
            bound = 1.0 / math.sqrt(n_in)
            a = torch.rand((rank, n_in), generator=generator, dtype=torch.float64)
            self.lora_a = torch.nn.Parameter((a * 2 * bound - bound).to(w.dtype).to(w.device))
            self.lora_b = torch.nn.Parameter(
                torch.zeros((n_out, rank), dtype=w.dtype, device=w.device)
            )
            self.scale = alpha / rank

        def forward(self, x: Any) -> Any:
            return self.base(x) + (x @ self.lora_a.T @ self.lora_b.T) * self.scale

        def merged(self) -> Any:
            """The base layer with ``scale * B A`` added to its weight."""
            with torch.no_grad():
                delta = (self.lora_b @ self.lora_a) * self.scale
                self.base.weight += delta.T if self.conv1d else delta
            return self.base

    _LORA_TYPE = LoRALayer
    return LoRALayer


_LORA_TYPE: Any = None


def _set_module(model: Any, name: str, module: Any) -> None:
    parent_name, _, child = name.rpartition(".")
    parent = model.get_submodule(parent_name) if parent_name else model
    setattr(parent, child, module)


def apply_lora(model: Any, rank: int, alpha: float, generator: Any) -> list[Any]:
    """Freeze ``model`` and wrap each layer of :func:`lora_targets` in a LoRA layer (in
    place, in name order); returns the trainable LoRA parameters."""
    layer_type = _lora_layer_type()
    for p in model.parameters():
        p.requires_grad_(False)
    params = []
    for name in lora_targets(model):
        layer = layer_type(model.get_submodule(name), rank, alpha, generator)
        _set_module(model, name, layer)
        params += [layer.lora_a, layer.lora_b]
    return params


def merge_lora(model: Any) -> Any:
    """Replace every LoRA layer by its base layer with the update merged (in place)."""
    layer_type = _lora_layer_type()
    names = [n for n, m in model.named_modules() if isinstance(m, layer_type)]
    for name in names:
        _set_module(model, name, model.get_submodule(name).merged())
    for p in model.parameters():
        p.requires_grad_(True)
    return model


def finetune(
    base: CausalLM,
    texts: Sequence[str],
    recipe: FineTuneRecipe,
    *,
    progress: ProgressOption = None,
    on_step: Callable[[int, float], None] | None = None,
) -> CausalLM:
    """Train a copy of ``base`` on ``texts`` with ``recipe``; ``base`` is untouched.

    Parameters
    ----------
    base : CausalLM
        The starting model (pretrained, or :func:`~privaudit.models.lm_builders.tiny_gpt`).
    texts : sequence of str
        The training texts (the members of an audit).
    recipe : FineTuneRecipe
    progress : progress option, optional
        Progress over the steps (:mod:`privaudit.runtime.progress`; None = a bar on a
        terminal only).
    on_step : callable, optional
        Called after every optimiser step with ``(step, training loss of the batch)``
        (a loss curve, progress in logs).

    Returns
    -------
    CausalLM
        Named ``"<base name>-ft"``, same tokenizer and scoring context as ``base``, in eval
        mode; LoRA updates merged into the weights.

    Raises
    ------
    InsufficientDataError
        No text has 2 tokens or more.
    InvalidInputError
        ``recipe`` is not a :class:`FineTuneRecipe`, or ``recipe.max_length`` exceeds the
        base model's context.
    """
    if not isinstance(recipe, FineTuneRecipe):  # before recipe.trained_steps is read
        raise fail("recipe", "a FineTuneRecipe", type(recipe).__name__)
    (snapshot,) = _run(base, texts, recipe, (recipe.trained_steps,), progress, on_step).values()
    return snapshot


def finetune_snapshots(
    base: CausalLM,
    texts: Sequence[str],
    recipe: FineTuneRecipe,
    at: Sequence[int],
    *,
    progress: ProgressOption = None,
    on_step: Callable[[int, float], None] | None = None,
) -> dict[int, CausalLM]:
    """Snapshots of ONE run of ``recipe`` after each number of optimiser steps in ``at``.

    The run takes ``max(at)`` steps of the ``recipe.steps``-step schedule (warm-up and
    cosine decay defined over ``recipe.steps``, not over each snapshot), so the snapshot
    after ``k`` steps is, bit for bit on CPU, ``finetune(base, texts,
    dataclasses.replace(recipe, stop_after=k))``: targets "fine-tuned for more steps" of one
    recipe at the cost of its longest run. ``recipe.stop_after`` is ignored.

    Returns
    -------
    dict
        ``{k: model}`` for each distinct ``k`` of ``at`` (``1 <= k <= recipe.steps``), each
        as :func:`finetune` returns it.
    """
    if not isinstance(recipe, FineTuneRecipe):
        raise fail("recipe", "a FineTuneRecipe", type(recipe).__name__)
    ks = sorted({check_positive_int(k, "at") for k in at})
    if not ks:
        raise fail("at", "at least one number of steps", "none")
    if ks[-1] > recipe.steps:
        raise fail("at", f"steps of at most recipe.steps={recipe.steps}", ks[-1])
    return _run(base, texts, recipe, tuple(ks), progress, on_step)


def _finished(model: Any, base: CausalLM, lora: bool) -> CausalLM:
    """``model`` as :func:`finetune` returns it: LoRA merged, eval mode, wrapped (in place)."""
    if lora:
        merge_lora(model)
    model.eval()
    for p in model.parameters():
        p.requires_grad_(True)
    return CausalLM.from_pretrained_objects(
        model,
        base.tokenizer,
        name=f"{base.name}-ft",
        max_length=base.max_length,
        requested_device=base.requested_device,
    )


def _run(
    base: CausalLM,
    texts: Sequence[str],
    recipe: FineTuneRecipe,
    at: tuple[int, ...],
    progress: ProgressOption,
    on_step: Callable[[int, float], None] | None,
) -> dict[int, CausalLM]:
    """Train ``max(at)`` steps of ``recipe``'s schedule; the model after each step in ``at``."""
    torch = _torch()
    pieces = _training_pieces(base, texts, recipe)
    order_seed, lora_seed, loop_seed = _seeds(recipe.seed)
    model = copy.deepcopy(base.model)
    lora = recipe.lora_rank is not None
    params = _trainable_parameters(model, recipe, lora_seed)
    optimizer = torch.optim.AdamW(
        params, lr=recipe.learning_rate, weight_decay=recipe.weight_decay, betas=(0.9, 0.999)
    )
    batches = _batches(len(pieces), recipe.batch_size, torch.Generator().manual_seed(order_seed))
    out: dict[int, CausalLM] = {}
    model.train()
    with (
        torch.random.fork_rng(devices=_all_cuda_devices()),
        progress_bar(f"fine-tuning ({base.name})", at[-1], enabled=progress) as bar,
    ):
        torch.manual_seed(loop_seed)
        for step in range(at[-1]):
            batch = [pieces[i] for i in next(batches)]
            loss = _step(
                model, optimizer, params, batch, recipe.learning_rate_at(step), base.device
            )
            bar.advance()
            if on_step is not None:
                on_step(step, float(loss.detach()))
            if step + 1 in at[:-1]:  # a copy: training goes on
                out[step + 1] = _finished(copy.deepcopy(model), base, lora)
    out[at[-1]] = _finished(model, base, lora)
    return out


def _training_pieces(
    base: CausalLM, texts: Sequence[str], recipe: FineTuneRecipe
) -> list[list[int]]:
    """The pieces ``recipe`` trains on, after checking the arguments (at least one piece)."""
    if not isinstance(base, CausalLM):
        raise fail("base", "a CausalLM", type(base).__name__)
    if not isinstance(recipe, FineTuneRecipe):
        raise fail("recipe", "a FineTuneRecipe", type(recipe).__name__)
    texts = _check_texts(texts)
    if recipe.max_length > base.max_length:
        raise fail(
            "recipe.max_length",
            f"at most the model's context ({base.max_length})",
            recipe.max_length,
        )
    pieces = _pieces(base, texts, recipe.max_length)
    if not pieces:
        raise InsufficientDataError(
            f"texts: expected at least one text of 2 tokens or more to train on, found none "
            f"among {len(texts)} text(s)"
        )
    return pieces


def _trainable_parameters(model: Any, recipe: FineTuneRecipe, lora_seed: int) -> list[Any]:
    """What trains: every parameter (full fine-tuning), or the LoRA factors wrapped into
    ``model`` with ``A`` drawn from ``lora_seed`` (Hu et al. 2022, Sec. 4.1)."""
    torch = _torch()
    if recipe.lora_rank is None:
        return [p for p in model.parameters() if p.requires_grad]
    gen = torch.Generator().manual_seed(lora_seed)
    return apply_lora(model, recipe.lora_rank, recipe.lora_alpha, gen)


def _batches(n_pieces: int, batch_size: int, generator: Any) -> Iterator[list[int]]:
    """Endless batches of piece indices walking through fresh random permutations of the
    pieces (epochs) from ``generator``; a batch may straddle two permutations."""
    torch = _torch()
    queue: list[int] = []
    while True:
        while len(queue) < batch_size:
            queue += torch.randperm(n_pieces, generator=generator).tolist()
        batch, queue = queue[:batch_size], queue[batch_size:]
        yield batch


def _step(
    model: Any, optimizer: Any, params: list[Any], batch: list[list[int]], lr: float, device: str
) -> Any:
    """One AdamW step at learning rate ``lr`` on the mean cross-entropy of the real
    next-token labels of ``batch`` (right-padded), gradients clipped to ``CLIP_NORM``;
    returns the loss."""
    torch = _torch()
    ids, mask = _pad(batch)
    ids, mask = ids.to(device), mask.to(device)
    for group in optimizer.param_groups:
        group["lr"] = lr
    logits = model(input_ids=ids, attention_mask=mask).logits
    labels_mask = (mask[:, 1:] * mask[:, :-1]).bool()
    loss = torch.nn.functional.cross_entropy(
        logits[:, :-1][labels_mask].float(), ids[:, 1:][labels_mask]
    )
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(params, CLIP_NORM)
    optimizer.step()
    return loss


def _pad(pieces: list[list[int]]) -> tuple[Any, Any]:
    torch = _torch()
    width = max(len(p) for p in pieces)
    ids = torch.zeros((len(pieces), width), dtype=torch.long)
    mask = torch.zeros((len(pieces), width), dtype=torch.long)
    for r, p in enumerate(pieces):
        ids[r, : len(p)] = torch.tensor(p, dtype=torch.long)
        mask[r, : len(p)] = 1
    return ids, mask
