"""The PANORAMIA text generator: a causal LM fine-tuned on the generator's texts, then sampled.

Kazmi et al., "PANORAMIA: privacy auditing of machine learning models without retraining",
NeurIPS 2024, Sec. 5 and App. C (issue 14, item 2): for language models G is the base LM
fine-tuned on D_G and sampled with top-k sampling (:meth:`CausalLM.generate
<privaudit.models.causal_lm.CausalLM.generate>`, :func:`~privaudit.models.causal_lm.generate_ids`,
re-exported here) from a held-out prompt set D_G^prompt subset of D_G.

:class:`TextGenerator` (:func:`fit_text_generator`, :func:`sample_texts`): the base LM
fine-tuned on the generator's training texts (:func:`~privaudit.models.lm_finetune.finetune`),
prompts cut from held-out texts, continuations cut to lengths drawn from the training texts'
length distribution (at a line end) and length-filtered; rejected texts are counted and
refilled until exactly ``n`` texts are accepted, or an
:class:`~privaudit.errors.InsufficientDataError` says how many were rejected and why.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from privaudit._validation import check_positive_int, fail
from privaudit.errors import InsufficientDataError
from privaudit.models.causal_lm import CausalLM, _check_temperature, decode_ids, generate_ids
from privaudit.runtime.seeds import derive_rng

if TYPE_CHECKING:
    from privaudit.models.lm_finetune import FineTuneRecipe

__all__ = [
    "TextGenerator",
    "TextSampling",
    "cut_prompt",
    "decode_ids",
    "fit_text_generator",
    "generate_ids",
    "sample_texts",
]


# ---------------------------------------------------------------------------------------
# the PANORAMIA text generator


@dataclasses.dataclass(frozen=True)
class TextSampling:
    """How :func:`sample_texts` draws synthetic texts.

    Parameters
    ----------
    top_k : int
        Top-k sampling (the paper's G for text, Sec. 5).
    max_new_tokens : int
        Tokens generated per prompt (enough for ``max_chars``: one byte per token on the
        tiny GPT, ~3.5 characters per token on SmolLM2 for this English).
    prompt_chars : int
        A prompt is the first ``prompt_chars`` characters of a held-out text, extended to
        the end of that line (:func:`cut_prompt`), so a continuation starts at a line start
        like the member chunks do.
    min_chars, max_chars : int
        Length filter of the accepted texts (characters, after the cut to a target length).
    temperature : float
    batch_size : int
        Prompts per generation batch.
    start_after : str, optional
        When given, a synthetic text starts after the first occurrence of this string in
        the continuation (a continuation without it is rejected and counted in
        ``n_rejected_unaligned``). For real texts that all start at a unit boundary, e.g.
        ``"\n\n"`` when every real chunk opens a Shakespeare speech (``SPEAKER:`` line) while
        a continuation starts inside the prompt's speech: without it a classifier tells the
        synthetic texts by their first line alone.
    max_rounds : int
        Generation rounds (each for the texts still missing, plus a quarter) before giving up.
    """

    top_k: int = 50
    max_new_tokens: int = 96
    prompt_chars: int = 32
    min_chars: int = 64
    max_chars: int = 400
    temperature: float = 1.0
    batch_size: int = 16
    max_rounds: int = 6
    start_after: str | None = None

    def __post_init__(self) -> None:
        for name in ("top_k", "max_new_tokens", "prompt_chars", "min_chars", "max_chars"):
            check_positive_int(getattr(self, name), name)
        if self.start_after is not None and not (
            isinstance(self.start_after, str) and self.start_after
        ):
            raise fail("start_after", "a non-empty string or None", repr(self.start_after))
        check_positive_int(self.batch_size, "batch_size")
        check_positive_int(self.max_rounds, "max_rounds")
        _check_temperature(self.temperature)
        if self.max_chars < self.min_chars:
            raise fail("max_chars", f"at least min_chars={self.min_chars}", self.max_chars)

    def settings(self) -> dict[str, Any]:
        """JSON-able."""
        return dataclasses.asdict(self)


def cut_prompt(text: str, prompt_chars: int) -> str:
    """The first ``prompt_chars`` characters of ``text`` extended to the end of their line
    (the newline included); the first ``prompt_chars`` characters when no newline follows."""
    end = text.find("\n", prompt_chars - 1)
    return text[:prompt_chars] if end < 0 else text[: end + 1]


@dataclasses.dataclass(frozen=True)
class TextGenerator:
    """A fitted text generator: the fine-tuned LM, its prompts and the target lengths.

    ``lengths`` are the character lengths of the generator's training texts within the
    length filter: each synthetic text is cut to one of them, drawn at random, so synthetic
    and real texts have the same length distribution (a classifier would otherwise tell
    them apart by length alone).
    """

    lm: CausalLM
    prompts: tuple[str, ...]
    lengths: tuple[int, ...]
    sampling: TextSampling
    info: dict[str, Any]


def fit_text_generator(
    base: CausalLM,
    train_texts: Sequence[str],
    prompt_texts: Sequence[str],
    recipe: FineTuneRecipe,
    sampling: TextSampling,
) -> TextGenerator:
    """Fine-tune ``base`` on ``train_texts`` (G of the paper, Sec. 5) and keep the prompts
    cut from ``prompt_texts`` (the held-out D_G^prompt, never trained on).

    Raises
    ------
    InsufficientDataError
        No prompt text, or no training text whose length passes the length filter.
    """
    from privaudit.models.lm_finetune import finetune

    if not prompt_texts:
        raise InsufficientDataError("prompt_texts: expected at least one held-out text, found none")
    lengths = tuple(
        len(t) for t in train_texts if sampling.min_chars <= len(t) <= sampling.max_chars
    )
    if not lengths:
        raise InsufficientDataError(
            f"train_texts: expected texts of {sampling.min_chars}..{sampling.max_chars} "
            f"characters (the length filter), found none among {len(train_texts)}"
        )
    lm = finetune(base, train_texts, recipe)
    prompts = tuple(cut_prompt(t, sampling.prompt_chars) for t in prompt_texts)
    info = {
        "base": base.name,
        "recipe": recipe.settings(),
        "sampling": sampling.settings(),
        "n_train_texts": len(train_texts),
        "n_prompts": len(prompts),
        "mean_prompt_chars": float(np.mean([len(p) for p in prompts])),
        "n_length_targets": len(lengths),
    }
    return TextGenerator(lm=lm, prompts=prompts, lengths=lengths, sampling=sampling, info=info)


def _cut_to_length(text: str, length: int) -> str:
    """``text`` cut at the line end nearest to ``length`` characters (its end counts as one;
    a text without a line end is cut at ``length``); surrounding whitespace dropped. The
    nearest rather than the last line end before ``length``, so that cut lengths are not
    biased short by half a line."""
    text = text.strip()
    ends = [i for i, ch in enumerate(text) if ch == "\n"] + [len(text)]
    cut = min(ends, key=lambda i: (abs(i - length), i))
    if len(ends) == 1:
        cut = min(len(text), length)
    return text[:cut].rstrip()


def sample_texts(
    generator: TextGenerator, n: int, *, seed: int
) -> tuple[list[str], dict[str, Any]]:
    """Exactly ``n`` synthetic texts, and what it took (rounds, generated, rejected).

    Each round draws prompts (a seeded permutation of the prompts, cycled), generates one
    continuation per prompt, drops it up to the first ``sampling.start_after`` when that is
    set (rejecting a continuation without it), cuts each to a target length drawn from
    ``generator.lengths`` and keeps those within ``[min_chars, max_chars]``; rounds repeat
    for the missing texts.

    Raises
    ------
    InsufficientDataError
        Fewer than ``n`` texts accepted after ``max_rounds`` rounds (the message gives the
        counts of generated, too short and too long texts).
    """
    n = check_positive_int(n, "n")
    s = generator.sampling
    rng = derive_rng(seed, purpose="lm-generator-sample")
    accepted: list[str] = []
    counts = {
        "n_generated": 0,
        "n_rejected_short": 0,
        "n_rejected_long": 0,
        "n_rejected_unaligned": 0,
        "rounds": 0,
    }
    while len(accepted) < n and counts["rounds"] < s.max_rounds:
        missing = n - len(accepted)
        want = missing + max(1, missing // 4)
        reps = -(-want // len(generator.prompts))
        perm = np.concatenate([rng.permutation(len(generator.prompts)) for _ in range(reps)])
        prompts = [generator.prompts[i] for i in perm[:want]]
        targets = rng.choice(np.asarray(generator.lengths), size=want)
        round_seed = int(rng.integers(2**32))
        ids = generate_ids(
            generator.lm,
            prompts,
            max_new_tokens=s.max_new_tokens,
            top_k=s.top_k,
            seed=round_seed,
            batch_size=s.batch_size,
            temperature=s.temperature,
        )
        counts["rounds"] += 1
        counts["n_generated"] += want
        decoded = decode_ids(generator.lm, ids)
        for row_index, length in enumerate(targets):
            raw = decoded[row_index]
            if s.start_after is not None:
                at = raw.find(s.start_after)
                if at < 0:
                    counts["n_rejected_unaligned"] += 1
                    continue
                raw = raw[at + len(s.start_after) :]
            text = _cut_to_length(raw, int(length))
            if len(text) < s.min_chars or not text.strip():
                counts["n_rejected_short"] += 1
            elif len(text) > s.max_chars:
                counts["n_rejected_long"] += 1
            elif len(accepted) < n:
                accepted.append(text)
    if len(accepted) < n:
        raise InsufficientDataError(
            f"synthetic texts: expected {n} of {s.min_chars}..{s.max_chars} characters, found "
            f"{len(accepted)} after {counts['rounds']} rounds ({counts['n_generated']} generated, "
            f"{counts['n_rejected_short']} too short, {counts['n_rejected_long']} too long, "
            f"{counts['n_rejected_unaligned']} without start_after); "
            "raise max_new_tokens or lower min_chars"
        )
    return accepted, counts
