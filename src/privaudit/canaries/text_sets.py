"""Text canaries for causal language models: a shared prefix, a random key, a random secret.

The Secret Sharer (Carlini, Liu, Erlingsson, Kos, Song, USENIX Security 2019, Sec. 3-4)
inserts into training a text made of a fixed format and a secret filled with symbols drawn
uniformly at random (their running example: "my social security number is" followed by 9
random digits), so the model can only score the secret well by having memorised it; the
privacy-auditing canaries of Panda et al. (ICLR 2025) are built on the same idea (random or
rare tokens after a prefix), each included in training by its own coin for the one-run audit
of Steinke, Nasr, Jagielski (NeurIPS 2023, Algorithm 1).

Canary ``i`` here is the text ``prefix + key_i + secret_i``:

* ``prefix`` is shared by every canary (the format of the Secret Sharer);
* ``key_i`` is ``key_length`` random symbols: it tells one canary from the others, so that
  greedy decoding from ``prefix + key_i`` can reproduce *this* canary's secret (with one
  shared prefix and no key, greedy decoding gives one continuation for all canaries); with
  ``key_length = 0`` the set is the plain Secret Sharer format;
* ``secret_i`` is ``secret_length`` random symbols.

Symbols are drawn uniformly and independently from ``symbols`` (default: the 10 digits and
26 lowercase letters), so the candidate space of a canary's random part has
``len(symbols) ** (key_length + secret_length)`` elements, the ``|R|`` of the Secret
Sharer's exposure. With the byte-level tokenizer of the tiny GPT every default symbol is
one token ("random-token sequences"); with a BPE tokenizer choose symbols that are single
tokens (whole words with a leading space, for instance) for the same effect:
:func:`rare_token_symbols` picks them from a model's vocabulary among the tokens that never
occur in the training texts, the rare-token secrets of Panda et al. (ICLR 2025, Sec. 3:
secret tokens drawn from the least frequent tokens of the fine-tuning data, so that the base
model gives them no head start and the fine-tuned model can only predict them by having
seen the canary). High-temperature samples from the base model are made by
:func:`~privaudit.canaries.text_sampled.sample_text_canaries`.

Each included canary goes into training ``repetitions`` times (the Secret Sharer's
insertion count; :func:`~privaudit.canaries.insert.canary_texts`). One coin then changes
``repetitions`` training records, so the audit tests that group and reports per-record
bounds by group privacy (:mod:`privaudit.canaries.group`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from privaudit._validation import check_positive_int, fail
from privaudit.canaries.sets import CanarySet, _ids

if TYPE_CHECKING:
    from privaudit.models.causal_lm import CausalLM

__all__ = ["DEFAULT_SYMBOLS", "make_text_canaries", "random_strings", "rare_token_symbols"]

#: The default alphabet of keys and secrets: digits and lowercase ASCII letters.
DEFAULT_SYMBOLS = tuple("0123456789abcdefghijklmnopqrstuvwxyz")


def random_strings(
    symbols: Sequence[str], length: int, n: int, rng: np.random.Generator
) -> list[str]:
    """``n`` strings of ``length`` symbols, each drawn uniformly from ``symbols``."""
    if length == 0:
        return [""] * n
    picks = rng.integers(0, len(symbols), size=(n, length))
    return ["".join(symbols[j] for j in row) for row in picks.tolist()]


def make_text_canaries(
    m: int,
    *,
    prefix: str = "The secret code is ",
    key_length: int = 4,
    secret_length: int = 8,
    symbols: Sequence[str] | str = DEFAULT_SYMBOLS,
    repetitions: int = 1,
    seed: int = 0,
) -> CanarySet:
    """``m`` text canaries ``prefix + key + secret`` (see the module docstring).

    Parameters
    ----------
    m : int
        Number of canaries.
    prefix : str
        The shared prefix (may be empty when ``key_length > 0``).
    key_length : int
        Random symbols after the prefix that tell the canaries apart (0: none).
    secret_length : int
        Random symbols of the secret (at least 1).
    symbols : str or sequence of str
        The alphabet (a string: one symbol per character); at least 2 distinct symbols, no
        symbol the start of another (so a key or secret parses back into its symbols).
    repetitions : int
        Copies of each included canary in training (at least 1); above 1 the audit's
        per-record bounds are its group bounds made per record (about divided by it).
    seed : int
        Seed of the draw.

    Returns
    -------
    CanarySet
        Of kind ``"text"``; :attr:`CanarySet.texts` gives the canaries' texts.

    Raises
    ------
    InvalidInputError
        Fewer than 2 distinct symbols, an empty symbol, an alphabet that is not
        prefix-free, a non-positive ``m``,
        ``secret_length`` or ``repetitions``, or two canaries with the same key and secret
        (enlarge the lengths or the alphabet).
    """
    m = check_positive_int(m, "m")
    key_length = check_positive_int(key_length, "key_length", minimum=0)
    secret_length = check_positive_int(secret_length, "secret_length")
    repetitions = check_positive_int(repetitions, "repetitions")
    if not isinstance(prefix, str):
        raise fail("prefix", "a string", type(prefix).__name__)
    alphabet = list(symbols) if isinstance(symbols, str) else [str(s) for s in symbols]
    if len(set(alphabet)) != len(alphabet) or len(alphabet) < 2 or any(not s for s in alphabet):
        raise fail("symbols", "at least 2 distinct non-empty symbols", repr(alphabet)[:60])
    if any(a != b and b.startswith(a) for a in alphabet for b in alphabet):
        raise fail("symbols", "a prefix-free alphabet (no symbol starts another)", "one")
    if not prefix and key_length == 0:
        raise fail("prefix", "a non-empty prefix or key_length >= 1", "neither")
    rng = np.random.default_rng([int(seed), 0x7E47])
    keys = random_strings(alphabet, key_length, m, rng)
    secrets = random_strings(alphabet, secret_length, m, rng)
    if len(set(zip(keys, secrets, strict=True))) != m:
        raise fail(
            "secret_length",
            f"a candidate space large enough for {m} distinct canaries",
            f"{len(alphabet)} symbols ** {key_length + secret_length}",
        )
    return text_canary_set(seed, prefix, keys, secrets, alphabet, repetitions)


def text_canary_set(
    seed: int,
    prefix: str,
    keys: Sequence[str],
    secrets: Sequence[str],
    symbols: Sequence[str],
    repetitions: int,
    **extra: Any,
) -> CanarySet:
    """The :class:`CanarySet` of text canaries ``prefix + keys[i] + secrets[i]`` (no
    input or gradient part; ``extra``: further fields, e.g. ``sampling``)."""
    return CanarySet(
        kind="text",
        ids=_ids(len(keys)),
        X=np.zeros((0, 0), dtype=np.float64),
        y=np.zeros(0, dtype=np.int64),
        coords=np.zeros(0, dtype=np.int64),
        n_params=0,
        n_classes=0,
        seed=int(seed),
        prefix=prefix,
        keys=np.array(keys, dtype=str),
        secrets=np.array(secrets, dtype=str),
        symbols=np.array(symbols, dtype=str),
        repetitions=repetitions,
        **extra,
    )


def rare_token_symbols(
    lm: CausalLM,
    texts: Iterable[str],
    n: int,
    *,
    min_chars: int = 3,
    seed: int = 0,
) -> list[str]:
    """``n`` single-token words of ``lm``'s vocabulary that never occur in ``texts``.

    A symbol is a vocabulary entry that decodes to a space followed by ``min_chars`` or more
    lowercase ASCII letters, that the tokenizer maps back to that one token, and whose word
    (case-insensitive) is not a word of ``texts`` (the fine-tuning data): the rare-token
    secrets of Panda et al. (ICLR 2025, Sec. 3), here "never seen in the training data"
    rather than a unigram-frequency ranking. The pick is uniform among the eligible tokens
    (seeded) and prefix-free (no symbol is the start of another), so
    :func:`make_text_canaries` accepts it; a leading space makes a concatenation of
    symbols tokenise symbol by symbol under byte-pair tokenizers that split on spaces.

    Parameters
    ----------
    lm : CausalLM
        The model whose tokenizer the canaries are made for (its base model's tokenizer).
    texts : iterable of str
        The training texts (their words are excluded).
    n : int
        Symbols to return (at least 2).
    min_chars : int
        Shortest word, in letters.
    seed : int
        Seed of the pick.

    Returns
    -------
    list of str

    Raises
    ------
    InvalidInputError
        Fewer than ``n`` eligible tokens.
    """
    import re

    n = check_positive_int(n, "n", minimum=2)
    min_chars = check_positive_int(min_chars, "min_chars")
    seen = {w.lower() for t in texts for w in re.findall(r"[A-Za-z]+", t)}
    word = re.compile(rf" [a-z]{{{min_chars},}}")
    vocab = sorted(lm.tokenizer.get_vocab().values())
    pieces = lm.tokenizer.convert_ids_to_tokens(vocab)
    candidates = []
    for tid, piece in zip(vocab, pieces, strict=True):
        text = lm.tokenizer.convert_tokens_to_string([piece])
        if word.fullmatch(text) and text[1:] not in seen:
            candidates.append((int(tid), text))
    ok = lm.tokenize([t for _, t in candidates]) if candidates else []
    eligible = sorted({t for (tid, t), ids in zip(candidates, ok, strict=True) if ids == [tid]})
    rng = np.random.default_rng([int(seed), 0x5A7E])
    chosen: list[str] = []
    for j in rng.permutation(len(eligible)).tolist():
        s = eligible[j]
        if all(not (a.startswith(s) or s.startswith(a)) for a in chosen):
            chosen.append(s)
            if len(chosen) == n:
                return chosen
    raise fail("n", f"at most the {len(chosen)} eligible rare tokens", n)
