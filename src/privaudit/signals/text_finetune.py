"""Membership signals of a fine-tuned language model against the model it was fine-tuned
from (its *base*): EZ-MIA, WBC and token-level InfoRMIA (issue 34, item 1).

Each signal maps the :class:`~privaudit.models.lm_paired.PairedTokenStats` of a text (two
forward passes: the target and its base, one tokenizer) to one number, **higher = more
likely member**. With ``l_t`` and ``r_t`` the true token's log-probability under the target
and the base at the scored positions ``t = 2..n``, ``d_t = l_t - r_t`` the shift that
fine-tuning gave it, ``E`` the *error positions* (the target's top-1 prediction is not
``x_t``) and ``kl_t = D_KL(p_0(. | x_<t) || p_theta(. | x_<t))``:

=============== ======================================================= ====================
name            score (higher = member)                                 source
=============== ======================================================= ====================
ez-mia          ``(P - N) / (P + N)``, ``P = sum_{t in E, d_t > 0} d_t``,  Ilic et al. 2026,
                ``N = sum_{t in E, d_t < 0} -d_t``                        arXiv 2601.12104
wbc             mean over window sizes ``w`` of the share of windows of   Chen et al. 2026
                ``w`` consecutive tokens with ``sum d_t > 0``             (USENIX Security),
                                                                          arXiv 2601.02751
informia-token  mean over ``t`` of ``(d_t + kl_t) / ln 2`` (bits)         Tao and Shokri
                                                                          (ICLR 2026),
                                                                          arXiv 2510.05582
=============== ======================================================= ====================

**EZ-MIA** (the Error Zone score). The paper's observation: at the positions the
fine-tuned model gets right both models give the true token high probability, so they say
little; at the error positions a member's true token has still been pushed up by
fine-tuning. The EZ score is the directional imbalance of those shifts, the ratio ``P / N``
of the upward to the downward mass (the authors' code,
``JetBrains-Research/ez-mia@aa0b6b7``, ``mia/ez_score.py``, was read, not copied). Here it
is reported as the *balance* ``(P - N) / (P + N)`` in ``[-1, 1]``, a strictly increasing
function of ``P / N`` (``P / N = (1 + s) / (1 - s)``), so the ROC is the same wherever the
ratio is defined, and it stays finite where the ratio is not: all shifts upward (``N = 0``)
gives 1, the most member-like value, whatever their size, so such texts tie at 1 (the
authors' code returns 0 there). A text with one error position scores the sign of its
shift, +-1 (the authors' code returns 0 for fewer than 2 error positions); a text with no
error position, or no non-zero shift on one, gets the neutral 0, the balance of a ratio of
1. The authors' code also drops the first scored position (``ignore_bos=True``, ``x_2``
given ``x_1`` here) whatever the tokenizer; privaudit keeps it, so every scored position
counts. Compared on ``benchmarks/bench_llm_signals.py``'s cached models (2026-12-07),
TPR at 1% FPR of EZ-MIA against the base with privaudit's choices and with the authors'
three: SmolLM2-135M seed 0, 43.3% against 28.4%; the tiny GPT, mean of 3 seeds, 6.5%
against 5.2%; dropping the first position is all of the difference (the other two changed
no figure). The reference is the pretrained model the target was fine-tuned from (the
paper's "base" reference variant); a reference trained on other data is a different attack.

**WBC** (Window-Based Comparison). Each window of ``w`` consecutive scored tokens casts a
binary vote, "member" when the target's summed loss over the window is below the base's
(``sum_window d_t > 0``; a tie is no vote for member), and the score is the share of
member votes, averaged over geometrically spaced window sizes. Sign voting is robust to
the heavy-tailed per-token loss differences that dominate a global average (the paper's
motivation). Default sizes ``(2, 3, 4, 6, 9, 13, 18, 25, 32, 40)``, those of the authors'
example configuration (``Stry233/WBC``, ``configs/example.yaml``, ``attacks/wbc.py``,
read, not copied); a text shorter than ``w`` scored tokens uses one window of all of them
(as the authors' code does). The reference is a pretrained model (the paper uses the
target's pre-fine-tuning checkpoint family); here the base.

**Token-level InfoRMIA.** InfoRMIA scores a query ``x`` by the information its membership
carries, ``log p(x | theta) / p(x)``, corrected by the population term
``D_KL(p(z) || p(z | theta))``: the expectation over population points ``z`` of RMIA's
log-likelihood ratio ``log [p(x | theta) / p(x)] / [p(z | theta) / p(z)]`` for ``z ~ p``.
Token level, as read here: the query is the true next token ``x_t`` at its context, the
"out" world ``p`` is the base's next-token distribution there and the population is the
vocabulary drawn from it, so the per-token score is ``d_t + kl_t`` (nats; divided by
``ln 2`` for bits): how much more fine-tuning raised the true token than a token drawn from
the base. The sequence score is the mean per-token score. **Not settled from the sources
available here:** the paper's exact token-level aggregation (mean, sum, or a share of
tokens above a threshold) and whether its population term is taken over the vocabulary at
each context or over population texts; the mean over tokens with the per-context
vocabulary is this implementation's choice, stated so that a reader can compare.

Sources and what could not be settled: the papers' full texts (and so their section and
equation numbers) were not readable here; the definitions follow their abstracts and
summaries (EZ-MIA: the EZ score at error positions against the pretrained base, two
forward passes; WBC: sign votes of windows, geometrically spaced sizes; InfoRMIA: the
information-gain statistic with the KL population term and its token-level variant) and,
for EZ-MIA and WBC, the authors' public code named above. Each paper is cited by its arXiv
number; a section is named only where a source here showed it.

Per-token scores (:func:`token_scores`) are what the report shows for the top leaking
texts: ``d_t``, the error positions and the InfoRMIA token scores.

Short texts: as in :mod:`privaudit.signals.text`, a text of fewer than 2 tokens has no
scored token and every signal raises :class:`~privaudit.errors.InsufficientDataError`
naming how many and where (never dropped silently). Non-finite log-probabilities are
refused with a message naming the text.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import check_choice, fail
from privaudit.errors import InsufficientDataError
from privaudit.models.lm_paired import PairedTokenStats

__all__ = [
    "FINETUNE_SIGNALS",
    "WBC_WINDOWS",
    "ez_mia",
    "finetune_signals",
    "informia_token",
    "informia_token_scores",
    "token_scores",
    "wbc",
]

#: The signals against the base model, higher = member.
FINETUNE_SIGNALS: tuple[str, ...] = ("ez-mia", "wbc", "informia-token")
#: WBC's window sizes (the authors' example configuration).
WBC_WINDOWS: tuple[int, ...] = (2, 3, 4, 6, 9, 13, 18, 25, 32, 40)


def _check_paired(stats: Sequence[PairedTokenStats], name: str = "stats") -> list[PairedTokenStats]:
    if isinstance(stats, PairedTokenStats) or not isinstance(stats, Sequence):
        raise fail(name, "a sequence of PairedTokenStats", type(stats).__name__)
    if not stats:
        raise fail(name, "at least one text", "none")
    bad = [i for i, s in enumerate(stats) if not isinstance(s, PairedTokenStats)]
    if bad:
        raise fail(
            name, "PairedTokenStats only", f"{type(stats[bad[0]]).__name__} at index {bad[0]}"
        )
    short = [i for i, s in enumerate(stats) if s.n_tokens < 2]
    if short:
        raise InsufficientDataError(
            f"{name}: expected every text to have at least 2 tokens (one scored token), found "
            f"{len(short)} shorter text(s), e.g. at indices {short[:5]}; drop or merge them "
            "before scoring (they are not dropped silently, which would change the evaluated set)"
        )
    for i, s in enumerate(stats):
        m = s.n_tokens - 1
        for attr in ("target_logprobs", "base_logprobs", "target_top1", "kl"):
            if getattr(s, attr).shape != (m,):
                raise fail(f"{name}[{i}].{attr}", f"shape ({m},)", getattr(s, attr).shape)
        if not (np.all(np.isfinite(s.target_logprobs)) and np.all(np.isfinite(s.base_logprobs))):
            raise fail(f"{name}[{i}]", "finite log-probabilities", "inf or NaN")
        if not np.all(np.isfinite(s.kl)):
            raise fail(
                f"{name}[{i}].kl",
                "a finite divergence (the target gives probability to every token the base does)",
                "inf or NaN",
            )
    return list(stats)


def _ez_balance(s: PairedTokenStats) -> float:
    d = s.shift[s.errors]
    pos = float(d[d > 0].sum())
    neg = float(-d[d < 0].sum())
    total = pos + neg
    return 0.0 if total <= 0.0 else (pos - neg) / total


def ez_mia(stats: Sequence[PairedTokenStats]) -> NDArray[np.float64]:
    """Signal ``ez-mia``: the Error Zone balance ``(P - N) / (P + N)`` of each text (module
    docstring; Ilic, Stanojevic and Cvejoski, "Powerful training-free membership inference
    against autoregressive language models", arXiv 2601.12104, the EZ score). A strictly
    increasing function of the paper's ratio ``P / N``. Higher = member."""
    return np.array([_ez_balance(s) for s in _check_paired(stats)])


def _check_windows(windows: Sequence[int]) -> tuple[int, ...]:
    if isinstance(windows, int | str) or not isinstance(windows, Sequence) or not windows:
        raise fail("windows", "a non-empty sequence of positive integers", repr(windows))
    bad = [w for w in windows if isinstance(w, bool) or not isinstance(w, int) or w < 1]
    if bad:
        raise fail("windows", "positive integers", repr(bad[0]))
    return tuple(int(w) for w in windows)


def _wbc_one(d: NDArray[np.float64], windows: tuple[int, ...]) -> float:
    csum = np.concatenate([[0.0], np.cumsum(d)])
    votes = []
    for w in windows:
        w = min(w, d.size)
        sums = csum[w:] - csum[:-w]
        votes.append(float(np.mean(sums > 0.0)))
    return float(np.mean(votes))


def wbc(
    stats: Sequence[PairedTokenStats], *, windows: Sequence[int] = WBC_WINDOWS
) -> NDArray[np.float64]:
    """Signal ``wbc``: the mean over window sizes of the share of windows where the target's
    summed loss is below the base's (module docstring; Chen, Du, Zhang, Kundu, Fleming,
    Ribeiro and Li, "Window-based membership inference attacks against fine-tuned large
    language models", USENIX Security 2026, arXiv 2601.02751). In ``[0, 1]``. Higher =
    member."""
    ws = _check_windows(windows)
    return np.array([_wbc_one(s.shift, ws) for s in _check_paired(stats)])


def informia_token_scores(s: PairedTokenStats) -> NDArray[np.float64]:
    """Token-level InfoRMIA scores of one text, in bits: ``(d_t + kl_t) / ln 2`` (module
    docstring)."""
    return (s.shift + s.kl) / math.log(2.0)


def informia_token(stats: Sequence[PairedTokenStats]) -> NDArray[np.float64]:
    """Signal ``informia-token``: the mean token-level InfoRMIA score of each text, in bits
    (module docstring; Tao and Shokri, "(Token-level) InfoRMIA: stronger membership
    inference and memorization assessment for LLMs", ICLR 2026, arXiv 2510.05582; the
    aggregation is this implementation's choice, see the module docstring). Higher =
    member."""
    return np.array([float(np.mean(informia_token_scores(s))) for s in _check_paired(stats)])


def token_scores(s: PairedTokenStats) -> dict[str, NDArray[np.float64] | NDArray[np.bool_]]:
    """What the report shows per token of one text: ``shift`` (``d_t``, nats), ``error``
    (EZ-MIA's error positions) and ``informia`` (bits), each ``(n - 1,)``, position ``i``
    scoring token ``i + 1``."""
    return {"shift": s.shift, "error": s.errors, "informia": informia_token_scores(s)}


def finetune_signals(
    stats: Sequence[PairedTokenStats],
    *,
    names: Sequence[str] = FINETUNE_SIGNALS,
    windows: Sequence[int] = WBC_WINDOWS,
) -> dict[str, NDArray[np.float64]]:
    """The named signals against the base, float64 ``(n_texts,)`` each, higher = member.

    Parameters
    ----------
    stats : sequence of PairedTokenStats
        From :func:`privaudit.models.lm_paired.paired_token_stats`.
    names : sequence of str
        Subset of :data:`FINETUNE_SIGNALS`.
    windows : sequence of int
        WBC's window sizes.

    Raises
    ------
    InsufficientDataError
        A text has fewer than 2 tokens.
    InvalidInputError
        Unknown names, misaligned or non-finite statistics.
    """
    if isinstance(names, str):
        names = [names]
    for n in names:
        check_choice(n, "names", FINETUNE_SIGNALS)
    stats = _check_paired(stats)
    out: dict[str, NDArray[np.float64]] = {}
    for n in names:
        if n == "ez-mia":
            out[n] = ez_mia(stats)
        elif n == "wbc":
            out[n] = wbc(stats, windows=windows)
        else:
            out[n] = informia_token(stats)
    return out
