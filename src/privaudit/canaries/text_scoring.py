"""Scores of text canaries under a fine-tuned causal LM, calibrated by its base model.

Three per-canary measurements, all computed without the coins (so each is a valid score for
the one-run audit: any function of the released model and the public canary set is
post-processing):

* **calibrated log-likelihood** (the audit score): ``log p_target(text) - log
  p_reference(text)``, the sum of the per-token log-probabilities of the canary's text
  (:meth:`~privaudit.models.causal_lm.CausalLM.token_stats`, no BOS/EOS) under the
  fine-tuned model minus the same under the base (reference) model: the reference-calibrated
  loss of Carlini et al. (2022, LiRA's offline variant with one reference) and of the text
  membership signals (``../shared/notes/attacks.md`` section 4). The prefix is the same for
  every canary and comes first, so its log-probabilities are one constant per model; the
  ranking is that of the random key and secret. The raw log-likelihood under the target
  (:attr:`TextCanaryScores.loglik`) is also a valid score, and for random-symbol canaries
  on a fine-tune that has seen many of them it is the stronger one. A calibration removes
  only the variation the two models share, and here they share none: after training on
  thousands of canary texts the fine-tuned model has learned the canaries' format (after
  the prefix, each symbol about equally likely), so its likelihood of an *excluded* canary
  no longer follows the base model's preferences, which dominate the base's likelihood
  of a random string (a base pre-trained on Shakespeare finds digits very unlikely, so the
  digits in a canary set its base log-likelihood). ``benchmarks/bench_text_canaries.py``
  measures it on the tiny GPT: over the excluded canaries, the correlation of the
  target's and the base's log-likelihoods is about 0, the base's spread is twice the
  target's, and subtracting it keeps the included-minus-excluded gap but multiplies the
  spread of the excluded scores by 2.5, so the calibrated score loses most of its power
  (TPR at 1% FPR 0.17 against 0.99). Neither the score's sign nor the tokenisation (one
  byte, one symbol, one token) nor the prefix (a constant) is the cause. On SmolLM2-135M
  with rare-token canaries (two epochs, eight exposures of each included canary) the
  correlation is 0.11 and the calibrated score is again the weaker (TPR 0.15 against
  0.27): calibration pays only where the fine-tuned model keeps the base's preferences
  over the canaries' symbols. Choose the score before looking at the coins: picking the
  one with the best bound afterwards is a selection the bounds do not pay for.
* **exposure** (Carlini et al., "The Secret Sharer", USENIX Security 2019, Sec. 4: exposure
  ``= log2 |R| - log2 rank``, ``rank`` the position of the canary's random part among all
  ``|R|`` candidates ordered by the model's log-perplexity). ``|R|`` is far too large to
  enumerate (``36**12`` by default), so the rank is estimated as the Secret Sharer does by
  sampling (their Sec. 4.3 approximates exposure by ``-log2 Pr_t[log-perplexity(t) <=
  log-perplexity(canary)]`` over random candidates ``t``): ``n_alternatives`` random
  candidates (key and secret drawn from the same alphabet, seeded, the same for every
  canary) are scored under the fine-tuned model and

  .. math:: \\mathrm{exposure} = \\log_2 (n + 1) - \\log_2 \\big(1 + \\#\\{t : \\log p(t) \\ge
     \\log p(\\mathrm{canary})\\}\\big),

  the exposure within the sampled candidate space of size ``n + 1``: 0 when every
  alternative is at least as likely as the canary, at most ``log2(n + 1)`` (the canary is
  the most likely). Ties count against the canary. The raw (uncalibrated) log-likelihood is
  what the Secret Sharer ranks; the Secret Sharer's extrapolation beyond the sampled
  candidates (a skew-normal fit of the log-perplexity distribution) is not done here.
* **sampled canaries** (:func:`~privaudit.canaries.sample_text_canaries`: key and secret
  a high-temperature sample of the base model): the same three measurements; the exposure's
  alternatives are then samples of the reference model drawn by the same procedure as the
  canaries (so ``reference`` must be the model they were sampled from: its fingerprint is
  checked), and the base-calibrated log-likelihood is the natural score, since the base
  model's likelihood of a sample of its own varies from canary to canary and the fine-tune
  keeps much of that variation (``privaudit canaries audit`` uses it by default for such
  sets; ``benchmarks/bench_text_canaries.py --sources sampled`` measures it).
* **greedy reproduction**: greedy decoding (top-1) from ``prefix + key`` for as many tokens
  as the secret has in context, and whether the decoded continuation starts with the
  secret: the extraction test of the Secret Sharer (Sec. 8) with the key as the known
  context. Reported beside the bounds; it is not the audit score.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privaudit._validation import as_float_array, check_positive_int, fail
from privaudit.canaries.sets import CanarySet
from privaudit.canaries.text_sets import random_strings

if TYPE_CHECKING:
    from privaudit.models.causal_lm import CausalLM

__all__ = ["TextCanaryScores", "exposure", "text_canary_scores"]


@dataclasses.dataclass(frozen=True)
class TextCanaryScores:
    """Per-canary measurements of a text canary set (rows in the order of its ids).

    Attributes
    ----------
    calibrated : float64 (m,)
        ``loglik - reference_loglik``: the audit score (higher = more likely included).
    loglik, reference_loglik : float64 (m,)
        Sum of the text's token log-probabilities under the fine-tuned / reference model.
    exposure : float64 (m,)
        Sampled Secret Sharer exposure, in bits, in ``[0, log2(n_alternatives + 1)]``.
    greedy_match : bool (m,)
        Greedy decoding from ``prefix + key`` reproduces the secret.
    n_alternatives : int
        Random candidates the exposure is estimated from.
    """

    calibrated: NDArray[np.float64]
    loglik: NDArray[np.float64]
    reference_loglik: NDArray[np.float64]
    exposure: NDArray[np.float64]
    greedy_match: NDArray[np.bool_]
    n_alternatives: int

    def summary(self) -> dict[str, float]:
        """Mean exposure, the exposure's ceiling and the fraction reproduced greedily."""
        return {
            "mean_exposure_bits": float(self.exposure.mean()),
            "max_exposure_bits": math.log2(self.n_alternatives + 1),
            "greedy_match_rate": float(self.greedy_match.mean()),
        }


def exposure(canary_loglik: ArrayLike, alternative_loglik: ArrayLike) -> NDArray[np.float64]:
    """Sampled exposure of each canary among the alternatives (see the module docstring).

    Parameters
    ----------
    canary_loglik : array_like, shape (m,)
        Log-likelihood of each canary (higher = more likely).
    alternative_loglik : array_like, shape (n,)
        Log-likelihood of ``n >= 1`` random candidates from the same space.

    Returns
    -------
    ndarray, shape (m,)
        ``log2(n + 1) - log2(1 + #{alternatives with loglik >= the canary's})``.
    """
    c = as_float_array(canary_loglik, "canary_loglik", ndim=1)
    a = np.sort(as_float_array(alternative_loglik, "alternative_loglik", ndim=1))
    if a.size == 0:
        raise fail("alternative_loglik", "at least one alternative", 0)
    at_least = a.size - np.searchsorted(a, c, side="left")
    return np.asarray(np.log2(a.size + 1) - np.log2(1 + at_least), dtype=np.float64)


def _total_loglik(lm: CausalLM, texts: list[str], batch_size: int) -> NDArray[np.float64]:
    stats = lm.token_stats(texts, batch_size=batch_size, progress=False)
    return np.array([float(s.logprobs.sum()) for s in stats], dtype=np.float64)


def _greedy_match(target: CausalLM, canaries: CanarySet, batch_size: int) -> NDArray[np.bool_]:
    from privaudit.models.causal_lm import decode_ids, generate_ids

    contexts = [canaries.prefix + k for k in canaries.keys.tolist()]
    n_ctx = [len(t) for t in target.tokenize(contexts)]
    n_all = [len(t) for t in target.tokenize(canaries.texts.tolist())]
    steps = max(max(b - a for a, b in zip(n_ctx, n_all, strict=True)), 1) + 1
    steps = min(steps, target.max_length - 1)
    rows = generate_ids(
        target, contexts, max_new_tokens=steps, top_k=1, seed=0, batch_size=batch_size
    )
    out = decode_ids(target, rows)
    return np.array(
        [o.startswith(s) for o, s in zip(out, canaries.secrets.tolist(), strict=True)],
        dtype=bool,
    )


def text_canary_scores(
    target: CausalLM,
    reference: CausalLM,
    canaries: CanarySet,
    *,
    n_alternatives: int = 255,
    seed: int = 0,
    batch_size: int = 32,
    greedy: bool = True,
) -> TextCanaryScores:
    """Score every text canary under the fine-tuned ``target``, calibrated by ``reference``.

    Parameters
    ----------
    target : CausalLM
        The fine-tuned model (trained with the included canaries appended:
        :func:`~privaudit.canaries.canary_texts`).
    reference : CausalLM
        The base model the fine-tuning started from (same tokenizer).
    canaries : CanarySet
        Text canaries (:func:`~privaudit.canaries.make_text_canaries` or
        :func:`~privaudit.canaries.sample_text_canaries`).
    n_alternatives : int
        Random candidates for the exposure (its ceiling is ``log2(n_alternatives + 1)``).
    seed : int
        Seed of the alternatives (independent of the coins; non-negative for a sampled set).
    batch_size : int
        Texts per forward pass.
    greedy : bool
        Also run greedy decoding from each canary's ``prefix + key`` (False: all False).

    Returns
    -------
    TextCanaryScores

    Raises
    ------
    InvalidInputError
        Not a text set, the two models' tokenizers differ, or (sampled set) ``reference``
        is not the model the canaries were sampled from.
    """
    if not canaries.is_text:
        raise fail("canaries", "text canaries", f"a {canaries.kind!r} set")
    n_alternatives = check_positive_int(n_alternatives, "n_alternatives")
    batch_size = check_positive_int(batch_size, "batch_size")
    if target.tokenizer_id != reference.tokenizer_id:
        raise fail(
            "reference",
            f"a model with the target's tokenizer ({target.tokenizer_id})",
            f"tokenizer {reference.tokenizer_id}",
        )
    texts = canaries.texts.tolist()
    loglik = _total_loglik(target, texts, batch_size)
    ref = _total_loglik(reference, texts, batch_size)
    alt = _total_loglik(
        target, _alternatives(reference, canaries, n_alternatives, seed, batch_size), batch_size
    )
    match = (
        _greedy_match(target, canaries, batch_size) if greedy else np.zeros(canaries.m, dtype=bool)
    )
    return TextCanaryScores(
        calibrated=loglik - ref,
        loglik=loglik,
        reference_loglik=ref,
        exposure=exposure(loglik, alt),
        greedy_match=match,
        n_alternatives=n_alternatives,
    )


def _alternatives(
    reference: CausalLM, canaries: CanarySet, n: int, seed: int, batch_size: int
) -> list[str]:
    """The exposure's ``n`` random candidates, drawn like the canaries: uniform symbols for a
    random-symbol set; for a sampled set, samples of the reference (which must be the model
    the canaries were sampled from) by the same procedure, with a stream of their own."""
    if canaries.sampling is None:
        rng = np.random.default_rng([int(seed), 0xA17])
        parts = random_strings(canaries.symbols.tolist(), _n_symbols(canaries), n, rng)
        return [canaries.prefix + p for p in parts]
    from privaudit.canaries.text_sampled import sample_continuations

    if reference.fingerprint != canaries.sampling.base_fingerprint:
        raise fail(
            "reference",
            "the base model the canaries were sampled from (fingerprint "
            f"{canaries.sampling.base_fingerprint})",
            f"a model with fingerprint {reference.fingerprint}",
        )
    pairs = sample_continuations(
        reference,
        canaries.prefix,
        n,
        canaries.sampling,
        seed=check_positive_int(seed, "seed", minimum=0),
        purpose="text-canary-exposure-alternatives",
        batch_size=batch_size,
    )
    return [canaries.prefix + k + s for k, s in pairs]


def _n_symbols(canaries: CanarySet) -> int:
    """Symbols in a canary's random part (key + secret), read off the first canary.

    Symbols may be several characters long; the alphabet is prefix-free
    (:func:`~privaudit.canaries.make_text_canaries` refuses others), so the left-to-right
    parse is unique.
    """
    symbols = sorted(canaries.symbols.tolist(), key=len, reverse=True)
    text = canaries.keys[0] + canaries.secrets[0]
    count, i = 0, 0
    while i < len(text):
        for s in symbols:
            if text.startswith(s, i):
                i += len(s)
                count += 1
                break
        else:  # pragma: no cover - impossible for a set made by make_text_canaries
            raise fail("canaries", "keys and secrets made of the set's symbols", repr(text))
    return count
