"""Membership signals of texts under a causal language model (issue 13, item 2).

Each signal maps the :class:`~privaudit.models.causal_lm.TokenStats` of a text (one forward
pass of :meth:`CausalLM.token_stats`) to one number, **higher = more likely member**. The
definitions are those of ``../shared/notes/attacks.md`` section 4.2, after MIMIR
(``iamgroot42/mimir@1b6fd64``, ``mimir/attacks/*.py``), whose scores run the other way
("lower = member"; its ROC code negates). With ``l_t`` the token log-probabilities
(``t = 2..n``) and ``L(x) = -(1/(n-1)) sum_t l_t`` the mean token negative log-likelihood:

============== ============================================== ===============================
name           score (higher = member)                        source
============== ============================================== ===============================
loss           ``-L(x)``                                      Yeom et al. 2018; ``loss.py``
zlib           ``-L(x) / Z(x)``, ``Z`` = zlib-compressed       Carlini et al. 2021 (USENIX
               UTF-8 bytes (default level)                    Security), Sec. 6.1; ``zlib.py``
min-k          mean of the ``K = max(1, floor(k (n-1)))``     Shi et al. 2024 (ICLR), Sec. 3;
               smallest ``l_t``                               ``min_k.py``
min-k++        mean of the ``K`` smallest                     Zhang et al. 2024, Eq. 2-3;
               ``s_t = (l_t - mu_t) / sigma_t``               ``min_k_plus_plus.py``
reference      ``L_ref(x) - L(x)``                            Carlini et al. 2021 ("small",
                                                              "medium"); Watson et al. 2022;
                                                              ``reference.py``
reference-     ``-(L(x) / L_ref(x))``                         Carlini et al. 2021 (ratio of
ratio                                                         log-perplexities)
============== ============================================== ===============================

Reference calibration compares two models' losses; that is only meaningful per token when
both use the same tokenizer (``CausalLM.tokenizer_id``). With ``same_tokenizer=False`` both
losses are taken per byte, ``L_bytes = sum_t -l_t / len(x.encode())``, each with its own
model's tokenization (``attacks.md`` 4.2). (For the ratio the byte counts cancel: it is the
ratio of the summed token NLLs.)

Short texts (``attacks.md`` 4.3): a text of fewer than 2 tokens has no scored token, and
MIMIR's NaN, silently dropped per class by ``filter_out_nan``, changes the evaluated set.
Here every signal raises :class:`~privaudit.errors.InsufficientDataError` naming how many
texts are too short and the first indices; Min-K's ``K`` is at least 1. ``sigma_t = 0``
(a next-token distribution uniform on its support) gives ``s_t = 0``.

This module reads numpy arrays only; it never imports transformers (``TokenStats`` lives in
``models/``, which ``signals/`` may import).
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import check_choice, fail
from privaudit.errors import InsufficientDataError
from privaudit.models.causal_lm import TokenStats

__all__ = [
    "DEFAULT_K",
    "TEXT_SIGNALS",
    "mean_nll",
    "min_k",
    "min_k_plus_plus",
    "reference_difference",
    "reference_ratio",
    "text_loss",
    "text_signals",
    "zlib_entropy",
    "zlib_ratio",
]

#: The text signals, higher = member (attacks.md 4.2).
TEXT_SIGNALS: tuple[str, ...] = ("loss", "zlib", "min-k", "min-k++", "reference", "reference-ratio")
#: Default fraction of the lowest-scoring tokens averaged by Min-K% and Min-K%++.
DEFAULT_K = 0.2


def _check_stats(stats: Sequence[TokenStats], name: str = "stats") -> list[TokenStats]:
    if isinstance(stats, TokenStats) or not isinstance(stats, Sequence):
        raise fail(name, "a sequence of TokenStats", type(stats).__name__)
    bad = [i for i, s in enumerate(stats) if not isinstance(s, TokenStats)]
    if bad:
        raise fail(name, "TokenStats only", f"{type(stats[bad[0]]).__name__} at index {bad[0]}")
    if not stats:
        raise fail(name, "at least one text", "none")
    short = [i for i, s in enumerate(stats) if s.n_tokens < 2 or s.logprobs.size == 0]
    if short:
        raise InsufficientDataError(
            f"{name}: expected every text to have at least 2 tokens (one scored token), found "
            f"{len(short)} shorter text(s), e.g. at indices {short[:5]}; drop or merge them "
            "before scoring (they are not dropped silently, which would change the evaluated set)"
        )
    wrong = [i for i, s in enumerate(stats) if s.logprobs.shape != (s.n_tokens - 1,)]
    if wrong:
        i = wrong[0]
        raise fail(
            f"{name}[{i}].logprobs", f"shape ({stats[i].n_tokens - 1},)", stats[i].logprobs.shape
        )
    return list(stats)


def _check_k(k: float) -> float:
    if isinstance(k, bool) or not isinstance(k, int | float) or not 0.0 < float(k) <= 1.0:
        raise fail("k", "a fraction in (0, 1]", repr(k))
    return float(k)


def mean_nll(stats: Sequence[TokenStats]) -> NDArray[np.float64]:
    """``L(x) = -(1/(n-1)) sum_t l_t``, the mean token negative log-likelihood of each text
    (``attacks.md`` 4.2; MIMIR ``models.py:get_ll``, negated)."""
    return np.array([-float(np.mean(s.logprobs)) for s in _check_stats(stats)])


def _nll_per_byte(stats: Sequence[TokenStats], name: str) -> NDArray[np.float64]:
    stats = _check_stats(stats, name)
    zero = [i for i, s in enumerate(stats) if s.n_bytes <= 0]
    if zero:
        raise fail(f"{name}[{zero[0]}].n_bytes", "a positive byte count", stats[zero[0]].n_bytes)
    return np.array([-float(np.sum(s.logprobs)) / s.n_bytes for s in stats])


def text_loss(stats: Sequence[TokenStats]) -> NDArray[np.float64]:
    """Signal ``loss``: ``-L(x)`` (Yeom et al. 2018; perplexity ``exp(L)`` gives the same
    ROC). Higher = member."""
    return -mean_nll(stats)


def zlib_entropy(texts: Sequence[str]) -> NDArray[np.float64]:
    """``Z(x) = len(zlib.compress(x.encode("utf-8")))`` (default level), in bytes."""
    if isinstance(texts, str):
        raise fail("texts", "a sequence of strings", "str")
    return np.array([float(len(zlib.compress(t.encode("utf-8")))) for t in texts])


def zlib_ratio(stats: Sequence[TokenStats], texts: Sequence[str]) -> NDArray[np.float64]:
    """Signal ``zlib``: ``-L(x) / Z(x)`` (Carlini et al. 2021, "Extracting training data
    from large language models", Sec. 6.1; MIMIR ``zlib.py``). Higher = member."""
    nll = mean_nll(stats)
    _check_texts_match(stats, texts)
    return -nll / zlib_entropy(texts)


def _lowest_k_mean(values: NDArray[np.float64], k: float) -> float:
    n_k = max(1, int(k * values.size))  # floor, guarded (attacks.md 4.3)
    return float(np.mean(np.sort(values)[:n_k]))


def min_k(stats: Sequence[TokenStats], *, k: float = DEFAULT_K) -> NDArray[np.float64]:
    """Signal ``min-k``: mean of the ``K = max(1, floor(k (n-1)))`` smallest token
    log-probabilities (Shi et al., "Detecting pretraining data from large language models",
    ICLR 2024, Sec. 3; MIMIR ``min_k.py`` with window 1). Higher = member."""
    k = _check_k(k)
    return np.array([_lowest_k_mean(s.logprobs, k) for s in _check_stats(stats)])


def min_k_plus_plus(stats: Sequence[TokenStats], *, k: float = DEFAULT_K) -> NDArray[np.float64]:
    """Signal ``min-k++``: mean of the ``K`` smallest ``s_t = (l_t - mu_t) / sigma_t``, with
    ``mu_t``, ``sigma_t`` the mean and standard deviation of ``log p_t(.)`` under ``p_t``
    (Zhang et al., "Min-K%++: improved baseline for detecting pre-training data from large
    language models", 2024, Eq. 2-3; MIMIR ``min_k_plus_plus.py``). Needs
    ``token_stats(..., distribution=True)``. ``sigma_t = 0`` gives ``s_t = 0``. Higher =
    member."""
    k = _check_k(k)
    out = []
    for i, s in enumerate(_check_stats(stats)):
        if s.dist_mean is None or s.dist_std is None:
            raise fail(
                f"stats[{i}].dist_mean",
                "next-token distribution statistics for min-k++ (token_stats(..., distribution=True))",
                "None",
            )
        diff = s.logprobs - s.dist_mean
        safe = np.where(s.dist_std > 0.0, s.dist_std, 1.0)
        z = np.where(s.dist_std > 0.0, diff / safe, 0.0)
        out.append(_lowest_k_mean(z, k))
    return np.array(out)


def _check_same(
    stats: Sequence[TokenStats], reference: Sequence[TokenStats], attr: str, why: str
) -> None:
    for i, (a, b) in enumerate(zip(stats, reference, strict=True)):
        if getattr(a, attr) != getattr(b, attr):
            want = f"{getattr(a, attr)} ({why.format(i=i)})"
            raise fail(f"reference[{i}].{attr}", want, getattr(b, attr))


def _reference_losses(
    stats: Sequence[TokenStats], reference: Sequence[TokenStats], same_tokenizer: bool
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    stats = _check_stats(stats)
    reference = _check_stats(reference, "reference")
    if len(reference) != len(stats):
        raise fail("reference", f"{len(stats)} TokenStats (one per text)", len(reference))
    _check_same(stats, reference, "n_bytes", "the same text as stats[{i}]")
    if not same_tokenizer:
        return _nll_per_byte(stats, "stats"), _nll_per_byte(reference, "reference")
    _check_same(
        stats,
        reference,
        "n_tokens",
        "as in stats[{i}] (same_tokenizer=True; pass same_tokenizer=False for byte-normalised losses)",
    )
    return mean_nll(stats), mean_nll(reference)


def reference_difference(
    stats: Sequence[TokenStats], reference: Sequence[TokenStats], *, same_tokenizer: bool = True
) -> NDArray[np.float64]:
    """Signal ``reference``: ``L_ref(x) - L(x)`` (reference-model calibration: Carlini et al.
    2021, Sec. 6.1; Watson et al., "On the importance of difficulty calibration in membership
    inference attacks", ICLR 2022; MIMIR ``reference.py``). Per byte when the tokenizers
    differ (``same_tokenizer=False``). Higher = member."""
    target, ref = _reference_losses(stats, reference, same_tokenizer)
    return ref - target


def reference_ratio(
    stats: Sequence[TokenStats], reference: Sequence[TokenStats], *, same_tokenizer: bool = True
) -> NDArray[np.float64]:
    """Signal ``reference-ratio``: ``-(L(x) / L_ref(x))``, the ratio of log-perplexities
    (Carlini et al. 2021, Sec. 6.1). Per byte when the tokenizers differ (the byte counts
    cancel). Higher = member. A reference loss of exactly 0 is refused."""
    target, ref = _reference_losses(stats, reference, same_tokenizer)
    zero = np.flatnonzero(ref <= 0.0)
    if zero.size:
        raise fail(
            "reference", "a positive loss on every text", f"loss 0 at indices {zero[:5].tolist()}"
        )
    return -(target / ref)


def _check_texts_match(stats: Sequence[TokenStats], texts: Sequence[str]) -> None:
    if isinstance(texts, str) or not isinstance(texts, Sequence):
        raise fail("texts", "a sequence of strings", type(texts).__name__)
    if len(texts) != len(stats):
        raise fail("texts", f"{len(stats)} strings (one per TokenStats)", len(texts))
    for i, (s, t) in enumerate(zip(stats, texts, strict=True)):
        if not isinstance(t, str) or len(t.encode("utf-8")) != s.n_bytes:
            raise fail(f"texts[{i}]", f"the text of stats[{i}] ({s.n_bytes} bytes)", repr(t)[:40])


def text_signals(
    stats: Sequence[TokenStats],
    texts: Sequence[str],
    *,
    names: Sequence[str] = TEXT_SIGNALS,
    reference: Sequence[TokenStats] | None = None,
    same_tokenizer: bool = True,
    k: float = DEFAULT_K,
) -> dict[str, NDArray[np.float64]]:
    """The named text signals of each text, float64 ``(n_texts,)`` each, higher = member.

    Parameters
    ----------
    stats : sequence of TokenStats
        The target model's token statistics, one per text (``distribution=True`` for
        ``min-k++``).
    texts : sequence of str
        The texts themselves (``zlib``; checked against ``stats[i].n_bytes``).
    names : sequence of str
        Subset of :data:`TEXT_SIGNALS`.
    reference : sequence of TokenStats, optional
        The reference model's statistics of the same texts (``reference``,
        ``reference-ratio``).
    same_tokenizer : bool
        Whether target and reference share a tokenizer (``CausalLM.tokenizer_id``); False
        byte-normalises both losses.
    k : float
        Fraction for ``min-k`` and ``min-k++`` (default 0.2).

    Raises
    ------
    InsufficientDataError
        A text has fewer than 2 tokens (attacks.md 4.3: never dropped silently).
    InvalidInputError
        Unknown names, missing reference or distribution statistics, misaligned inputs.
    """
    if isinstance(names, str):
        names = [names]
    for n in names:
        check_choice(n, "names", TEXT_SIGNALS)
    stats = _check_stats(stats)
    _check_texts_match(stats, texts)
    needs_ref = [n for n in names if n.startswith("reference")]
    if needs_ref and reference is None:
        raise fail("reference", f"reference TokenStats for {needs_ref}", "None")
    ref: Sequence[TokenStats] = reference if reference is not None else []
    out: dict[str, NDArray[np.float64]] = {}
    for n in names:
        if n == "loss":
            out[n] = text_loss(stats)
        elif n == "zlib":
            out[n] = zlib_ratio(stats, texts)
        elif n == "min-k":
            out[n] = min_k(stats, k=k)
        elif n == "min-k++":
            out[n] = min_k_plus_plus(stats, k=k)
        elif n == "reference":
            out[n] = reference_difference(stats, ref, same_tokenizer=same_tokenizer)
        else:
            out[n] = reference_ratio(stats, ref, same_tokenizer=same_tokenizer)
    return out
