"""Text membership signals (signals/text.py) against slow, obvious implementations."""

from __future__ import annotations

import math
import zlib

import numpy as np
import pytest

from privaudit.errors import InsufficientDataError, InvalidInputError
from privaudit.models.causal_lm import TokenStats
from privaudit.signals import TEXT_SIGNALS, text_signals
from privaudit.signals.text import (
    min_k,
    min_k_plus_plus,
    reference_difference,
    reference_ratio,
    text_loss,
    zlib_ratio,
)


def _stats(text: str, logprobs: list[float], mu=None, sd=None, n_tokens=None) -> TokenStats:
    lp = np.array(logprobs, dtype=float)
    return TokenStats(
        logprobs=lp,
        dist_mean=None if mu is None else np.array(mu, dtype=float),
        dist_std=None if sd is None else np.array(sd, dtype=float),
        n_tokens=len(lp) + 1 if n_tokens is None else n_tokens,
        n_bytes=len(text.encode("utf-8")),
    )


def _random_stats(rng: np.random.Generator, texts: list[str]) -> list[TokenStats]:
    out = []
    for t in texts:
        n = len(t.encode("utf-8"))
        lp = -rng.exponential(2.0, size=n - 1)
        mu = lp - rng.normal(0, 1, size=n - 1)
        sd = rng.uniform(0.5, 2.0, size=n - 1)
        out.append(_stats(t, list(lp), list(mu), list(sd)))
    return out


TEXTS = ["ab", "abc", "hello world", "a longer sentence with more tokens in it, é", "x" * 40]


def slow_signal(name: str, st: TokenStats, text: str, ref: TokenStats | None, k: float) -> float:
    """Each signal written out with plain Python loops, straight from attacks.md 4.2."""
    lp = [float(v) for v in st.logprobs]
    nll = -sum(lp) / len(lp)
    if name == "loss":
        return -nll
    if name == "zlib":
        return -nll / len(zlib.compress(text.encode("utf-8")))
    if name in ("min-k", "min-k++"):
        if name == "min-k":
            vals = lp
        else:
            vals = [
                (lp[i] - st.dist_mean[i]) / st.dist_std[i]  # type: ignore[index]
                for i in range(len(lp))
            ]
        kk = max(1, math.floor(k * len(vals)))
        return sum(sorted(vals)[:kk]) / kk
    assert ref is not None
    ref_nll = -sum(float(v) for v in ref.logprobs) / len(ref.logprobs)
    if name == "reference":
        return ref_nll - nll
    return -(nll / ref_nll)


@pytest.mark.parametrize("k", [0.2, 0.5, 1.0])
def test_every_signal_matches_slow_implementation(k: float) -> None:
    rng = np.random.default_rng(0)
    stats = _random_stats(rng, TEXTS)
    ref = _random_stats(rng, TEXTS)
    got = text_signals(stats, TEXTS, reference=ref, k=k)
    assert tuple(got) == TEXT_SIGNALS
    for name in TEXT_SIGNALS:
        want = [slow_signal(name, s, t, r, k) for s, t, r in zip(stats, TEXTS, ref, strict=True)]
        np.testing.assert_allclose(got[name], want, rtol=1e-12, atol=1e-12, err_msg=name)
        assert got[name].dtype == np.float64 and got[name].shape == (len(TEXTS),)


def test_individual_functions_agree_with_text_signals() -> None:
    rng = np.random.default_rng(1)
    stats = _random_stats(rng, TEXTS)
    ref = _random_stats(rng, TEXTS)
    got = text_signals(stats, TEXTS, reference=ref)
    np.testing.assert_array_equal(got["loss"], text_loss(stats))
    np.testing.assert_array_equal(got["zlib"], zlib_ratio(stats, TEXTS))
    np.testing.assert_array_equal(got["min-k"], min_k(stats))
    np.testing.assert_array_equal(got["min-k++"], min_k_plus_plus(stats))
    np.testing.assert_array_equal(got["reference"], reference_difference(stats, ref))
    np.testing.assert_array_equal(got["reference-ratio"], reference_ratio(stats, ref))
    only = text_signals(stats, TEXTS, names=["loss", "min-k"])
    assert list(only) == ["loss", "min-k"]


def test_higher_means_member() -> None:
    """A text the model predicts better (higher log-probs) scores higher on every signal."""
    text = "same text"
    low = _stats(text, [-3.0, -2.0, -4.0, -1.0], mu=[-2.0] * 4, sd=[1.0] * 4)
    high = _stats(text, [-1.0, -0.5, -2.0, -0.2], mu=[-2.0] * 4, sd=[1.0] * 4)
    ref = _stats(text, [-2.5] * 4)
    got = text_signals([low, high], [text, text], reference=[ref, ref])
    for name, v in got.items():
        assert v[1] > v[0], name


def test_min_k_guard_for_short_texts() -> None:
    # n - 1 = 2 scored tokens, k = 0.2: floor(0.4) = 0 would average nothing; K = 1 is used
    st = _stats("abc", [-1.0, -5.0], mu=[0.0, 0.0], sd=[1.0, 2.0])
    assert min_k([st])[0] == -5.0
    assert min_k_plus_plus([st])[0] == -2.5
    assert min_k([st], k=1.0)[0] == -3.0


def test_texts_too_short_are_refused_with_indices() -> None:
    ok = _stats("ab", [-1.0])
    one = _stats("a", [], n_tokens=1)
    empty = _stats("", [], n_tokens=0)
    for fn in (text_loss, min_k, lambda s: zlib_ratio(s, ["ab", "a", "ab", ""])):
        with pytest.raises(InsufficientDataError, match=r"2 shorter text\(s\).*\[1, 3\]"):
            fn([ok, one, ok, empty])
    with pytest.raises(InsufficientDataError, match="reference"):
        reference_difference([ok], [one])


def test_min_k_plus_plus_needs_distribution_and_handles_zero_sigma() -> None:
    st = _stats("abc", [-1.0, -2.0])
    with pytest.raises(InvalidInputError, match="distribution=True"):
        min_k_plus_plus([st])
    flat = _stats("abc", [-1.0, -2.0], mu=[-1.0, -1.0], sd=[0.0, 1.0])
    assert min_k_plus_plus([flat], k=1.0)[0] == pytest.approx((0.0 + -1.0) / 2)


def test_reference_byte_normalisation() -> None:
    """Different tokenizers: each loss per byte of the text (sum of token NLLs / bytes)."""
    text = "hello there"  # 11 bytes
    target = _stats(text, [-1.0, -2.0, -3.0])  # 4 tokens
    ref = _stats(text, [-0.5] * 9)  # 10 tokens under another tokenizer
    with pytest.raises(InvalidInputError, match="same_tokenizer=False"):
        reference_difference([target], [ref])
    got = reference_difference([target], [ref], same_tokenizer=False)[0]
    assert got == pytest.approx(4.5 / 11 - 6.0 / 11)
    ratio = reference_ratio([target], [ref], same_tokenizer=False)[0]
    assert ratio == pytest.approx(-(6.0 / 4.5))
    per_token = reference_difference([target], [_stats(text, [-0.5, -1.0, -1.5])])[0]
    assert per_token == pytest.approx(1.0 - 2.0)


def test_misaligned_inputs_are_refused() -> None:
    st = _stats("abc", [-1.0, -2.0])
    with pytest.raises(InvalidInputError, match="texts"):
        text_signals([st], ["abcd"])
    with pytest.raises(InvalidInputError, match="texts"):
        text_signals([st], ["abc", "abc"])
    with pytest.raises(InvalidInputError, match="reference"):
        text_signals([st], ["abc"], names=["reference"])
    with pytest.raises(InvalidInputError, match="reference"):
        reference_difference([st], [st, st])
    with pytest.raises(InvalidInputError, match="n_bytes"):
        reference_difference([st], [_stats("abcd", [-1.0, -2.0])], same_tokenizer=False)
    with pytest.raises(InvalidInputError, match="names"):
        text_signals([st], ["abc"], names=["perplexity"])
    with pytest.raises(InvalidInputError, match="k"):
        min_k([st], k=0.0)
    with pytest.raises(InvalidInputError, match="reference"):
        reference_ratio([st], [_stats("abc", [0.0, 0.0])])
    with pytest.raises(InvalidInputError, match="stats"):
        text_loss([])


def test_signals_of_a_real_model_match_the_slow_loop() -> None:
    """End to end on the tiny GPT: min-k++ from the full distributions of each text."""
    pytest.importorskip("transformers")
    pytest.importorskip("torch")
    from privaudit.models.lm_builders import tiny_gpt

    lm = tiny_gpt(seed=0, n_embd=32)
    ref_lm = tiny_gpt(seed=1, n_embd=32)
    texts = TEXTS[1:]
    stats = lm.token_stats(texts, distribution=True)
    ref = ref_lm.token_stats(texts)
    got = text_signals(stats, texts, reference=ref)
    for i, text in enumerate(texts):
        ids = lm.tokenize([text])[0]
        d = lm.token_distributions(text)
        lp = d[np.arange(len(ids) - 1), ids[1:]]
        p = np.exp(d)
        mu = (p * d).sum(axis=1)
        sd = np.sqrt((p * (d - mu[:, None]) ** 2).sum(axis=1))
        full = TokenStats(lp, mu, sd, len(ids), len(text.encode()))
        rd = ref_lm.token_distributions(text)
        rfull = TokenStats(rd[np.arange(len(ids) - 1), ids[1:]], None, None, len(ids), full.n_bytes)
        for name in TEXT_SIGNALS:
            want = slow_signal(name, full, text, rfull, 0.2)
            assert got[name][i] == pytest.approx(want, abs=1e-6), name
