"""Text canaries sampled from the base model at a high temperature (issue 33, item 1c), on the
tiny GPT pre-trained here for a few steps: seeded reproducibility, faithful texts, the set
file and its coins kept apart, bad input, a fine-tune on some of them that ranks them above
the others (calibrated score, exposure against alternatives sampled the same way), and the
command line end to end (``make --source sampled``, ``audit``, ``verify``, exit 2 on bad
input)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from privaudit.canaries import (
    CanarySampling,
    audit_canaries,
    canary_texts,
    draw_coins,
    load_canary_set,
    load_coins,
    sample_text_canaries,
    text_canary_scores,
)
from privaudit.cli import main
from privaudit.errors import InsufficientDataError, InvalidInputError

PREFIX = "The code is "
M = 32
KEY, SECRET = 3, 8


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """A tiny GPT pre-trained briefly on Tiny Shakespeare (the base), a sampled canary set
    made by the command from it, and the base fine-tuned on natural text plus the texts the
    command wrote to append; both models saved as Hugging Face directories."""
    pytest.importorskip("transformers")
    pytest.importorskip("torch")
    from privaudit.llm.audit import shakespeare_split
    from privaudit.models.causal_lm import CausalLM
    from privaudit.models.lm_builders import tiny_gpt
    from privaudit.models.lm_finetune import FineTuneRecipe, finetune

    root = tmp_path_factory.mktemp("sampled")
    chunks, split = shakespeare_split(
        {"members": 120}, seed=0, chunk_chars=64, chunks_per_document={"members": 1}
    )
    texts = list(chunks.subset(split.chunks["members"]).texts)
    recipe = FineTuneRecipe(
        steps=50, batch_size=16, learning_rate=1e-2, warmup_steps=2, max_length=48
    )
    base = finetune(tiny_gpt(seed=0, n_embd=32, max_length=48), texts[:100], recipe, progress=False)
    base.save(root / "base")
    base = CausalLM.from_directory(root / "base", device="cpu")
    args = ["canaries", "make", str(root / "set"), "--kind", "text", "--m", str(M)]
    args += ["--source", "sampled", "--base", str(root / "base"), "--temperature", "2"]
    args += ["--prefix", PREFIX, "--key-length", str(KEY), "--secret-length", str(SECRET)]
    args += ["--repetitions", "12", "--seed", "3", "--coin-seed", "1"]
    assert main(args) == 0
    lines = (root / "set" / "canaries_to_append.jsonl").read_text(encoding="utf-8").splitlines()
    appended = [json.loads(t)["text"] for t in lines]
    ft = FineTuneRecipe(steps=80, batch_size=16, learning_rate=1e-2, warmup_steps=2, max_length=48)
    target = finetune(base, texts[100:] + appended, ft, progress=False)
    target.save(root / "target")
    return {"root": root, "base": base, "target": target, "appended": appended}


def _set(setup: dict[str, object]) -> object:
    return load_canary_set(Path(str(setup["root"])) / "set" / "canary_set.npz")


def test_sampled_canaries_are_seeded_faithful_samples(setup: dict[str, object]) -> None:
    base = setup["base"]
    cs = sample_text_canaries(base, 20, prefix=PREFIX, key_tokens=KEY, secret_tokens=SECRET, seed=5)  # type: ignore[arg-type]
    assert cs.kind == "text" and cs.is_text and cs.source == "sampled" and cs.m == 20
    assert cs.symbols.size == 0 and cs.repetitions == 1
    assert cs.sampling == CanarySampling(2.0, 0, KEY, SECRET, base.fingerprint)  # type: ignore[attr-defined]
    n_prefix = len(base.tokenize([PREFIX])[0])  # type: ignore[attr-defined]
    full = base.tokenize(cs.texts.tolist())  # type: ignore[attr-defined]
    ctx = base.tokenize([PREFIX + k for k in cs.keys.tolist()])  # type: ignore[attr-defined]
    for text, ids, c in zip(cs.texts.tolist(), full, ctx, strict=True):
        assert text.startswith(PREFIX) and len(ids) == n_prefix + KEY + SECRET
        assert ids[: n_prefix + KEY] == c  # the key is its own first tokens
    assert len(set(cs.texts.tolist())) == 20
    again = sample_text_canaries(
        base, 20, prefix=PREFIX, key_tokens=KEY, secret_tokens=SECRET, seed=5
    )  # type: ignore[arg-type]
    assert again.fingerprint == cs.fingerprint and again.texts.tolist() == cs.texts.tolist()
    other = sample_text_canaries(
        base, 20, prefix=PREFIX, key_tokens=KEY, secret_tokens=SECRET, seed=6
    )  # type: ignore[arg-type]
    assert other.fingerprint != cs.fingerprint
    assert len(set(other.texts.tolist()) & set(cs.texts.tolist())) <= 1
    hot = sample_text_canaries(
        base,  # type: ignore[arg-type]
        20,
        prefix=PREFIX,
        key_tokens=KEY,
        secret_tokens=SECRET,
        seed=5,
        temperature=3.0,
    )
    assert hot.fingerprint != cs.fingerprint and hot.sampling.temperature == 3.0  # type: ignore[union-attr]


def test_a_hotter_sample_is_less_likely_under_the_base(setup: dict[str, object]) -> None:
    """The temperature reaches the sampler: at T = 0.5 the samples are far more likely under
    the base than at T = 3 (their mean log-likelihood per text, 40 canaries each)."""
    base = setup["base"]

    def mean_loglik(t: float) -> float:
        cs = sample_text_canaries(
            base, 40, prefix=PREFIX, key_tokens=2, secret_tokens=6, temperature=t, seed=0
        )  # type: ignore[arg-type]
        stats = base.token_stats(cs.texts.tolist(), progress=False)  # type: ignore[attr-defined]
        return float(np.mean([s.logprobs.sum() for s in stats]))

    assert mean_loglik(0.5) > mean_loglik(3.0) + 5.0


def test_the_set_file_keeps_the_sampling_and_the_coins_apart(
    setup: dict[str, object], tmp_path: Path
) -> None:
    root = Path(str(setup["root"]))
    cs = _set(setup)
    coins = load_coins(root / "set" / "coins.json", cs)  # type: ignore[arg-type]
    assert cs.source == "sampled" and cs.m == M and cs.repetitions == 12  # type: ignore[attr-defined]
    assert cs.sampling.base_fingerprint == setup["base"].fingerprint  # type: ignore[attr-defined]
    # the set holds no coin, the coin file no canary text
    with np.load(root / "set" / "canary_set.npz", allow_pickle=False) as z:
        parts = {k: z[k] for k in z.files}
    assert "included" not in parts
    coin_text = (root / "set" / "coins.json").read_text(encoding="utf-8")
    assert not any(s in coin_text for s in cs.secrets.tolist() if len(s.strip()) > 3)  # type: ignore[attr-defined]
    # the appended texts are the included canaries, 12 times each
    appended = setup["appended"]
    assert len(appended) == 12 * int(coins.included.sum())  # type: ignore[arg-type]
    assert set(appended) == set(cs.texts[coins.included].tolist())  # type: ignore[attr-defined, arg-type]
    assert canary_texts(cs, coins) == appended  # type: ignore[arg-type]
    # an edited temperature no longer matches the fingerprint
    edited = json.loads(str(parts["sampling"]))
    edited["temperature"] = 1.0
    parts["sampling"] = np.array(json.dumps(edited, sort_keys=True))
    np.savez(tmp_path / "edited.npz", **parts)
    with pytest.raises(InvalidInputError, match="was modified"):
        load_canary_set(tmp_path / "edited.npz")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"temperature": 0.0}, "temperature"),
        ({"temperature": -2.0}, "temperature"),
        ({"temperature": float("nan")}, "temperature"),
        ({"top_k": 0}, "top_k"),
        ({"prefix": ""}, "at least one token"),
        ({"secret_tokens": 0}, "secret_tokens"),
        ({"secret_tokens": 40}, "context"),
        ({"repetitions": 0}, "repetitions"),
    ],
)
def test_bad_sampling_arguments_are_refused(
    setup: dict[str, object], kwargs: dict[str, object], match: str
) -> None:
    args: dict[str, object] = {"prefix": PREFIX, "key_tokens": KEY, "secret_tokens": SECRET}
    with pytest.raises(InvalidInputError, match=match):
        sample_text_canaries(setup["base"], 4, **{**args, **kwargs})  # type: ignore[arg-type]


def test_an_untrained_byte_model_gives_no_faithful_text_and_says_why() -> None:
    """A randomly initialised byte-level GPT samples bytes >= 128 about half the time, so a
    sample of 30 bytes is almost never valid UTF-8: the draw gives up with the reason."""
    pytest.importorskip("transformers")
    from privaudit.models.lm_builders import tiny_gpt

    lm = tiny_gpt(seed=0, n_embd=16, n_layer=1, max_length=48)
    with pytest.raises(InsufficientDataError, match="not a faithful text"):
        sample_text_canaries(lm, 8, prefix=PREFIX, key_tokens=0, secret_tokens=30, max_rounds=2)


def test_a_finetune_on_some_sampled_canaries_ranks_them_above_the_others(
    setup: dict[str, object],
) -> None:
    from privaudit.models.lm_builders import tiny_gpt

    base, target = setup["base"], setup["target"]
    cs = _set(setup)
    coins = load_coins(Path(str(setup["root"])) / "set" / "coins.json", cs)  # type: ignore[arg-type]
    inc = coins.included
    sc = text_canary_scores(target, base, cs, n_alternatives=63)  # type: ignore[arg-type]
    auc = (sc.calibrated[inc][:, None] > sc.calibrated[~inc][None, :]).mean()
    assert auc > 0.9
    np.testing.assert_allclose(sc.calibrated, sc.loglik - sc.reference_loglik)
    # the exposure ranks each canary among samples of the base drawn like the canaries
    assert sc.exposure[inc].mean() > sc.exposure[~inc].mean() + 1.0
    assert 0.0 <= sc.exposure.min() and sc.exposure.max() <= 6.0
    assert not sc.greedy_match[~inc].any()
    r = audit_canaries(cs, coins, sc.calibrated, access="black-box")  # type: ignore[arg-type]
    assert r.epsilon_lower_bound > 0.0
    # the exposure needs the model the canaries were sampled from
    with pytest.raises(InvalidInputError, match="sampled from"):
        text_canary_scores(target, tiny_gpt(seed=1, n_embd=32, max_length=48), cs)  # type: ignore[arg-type]


def test_canaries_never_inserted_give_a_bound_of_zero(setup: dict[str, object]) -> None:
    """The control: scores from the base itself (a model independent of every coin draw);
    the 95% bound may exceed 0 in at most 5 of 100 coin draws."""
    base = setup["base"]
    cs = _set(setup)
    sc = text_canary_scores(base, base, cs, n_alternatives=15, greedy=False)  # type: ignore[arg-type]
    positive = sum(
        audit_canaries(
            cs, draw_coins(cs, seed=50 + s), sc.loglik, access="black-box"
        ).epsilon_lower_bound  # type: ignore[arg-type]
        > 0.0
        for s in range(100)
    )
    assert positive <= 5


# -- the command line -------------------------------------------------------------------


def _audit(root: Path, *extra: str) -> list[str]:
    return [
        "canaries",
        "audit",
        "--set",
        str(root / "set" / "canary_set.npz"),
        "--coins",
        str(root / "set" / "coins.json"),
        "--model",
        str(root / "target"),
        *extra,
    ]


def test_the_audit_reads_the_sampled_set_back_and_verify_recomputes_it(
    setup: dict[str, object], capsys: pytest.CaptureFixture[str]
) -> None:
    root = Path(str(setup["root"]))
    out = root / "report"
    args = _audit(root, "--base", str(root / "base"), "--n-alternatives", "31", "--out", str(out))
    assert main(args) == 0
    res = json.loads((out / "results.json").read_text(encoding="utf-8"))
    cs = _set(setup)
    coins = load_coins(root / "set" / "coins.json", cs)  # type: ignore[arg-type]
    s = res["settings"]
    assert s["score"] == "calibrated" and s["canary_source"] == "sampled"
    assert s["sampling_temperature"] == 2.0 and s["sampling_top_k"] == 0
    assert res["canaries"]["set_fingerprint"] == cs.fingerprint  # type: ignore[attr-defined]
    assert res["canaries"]["coins_fingerprint"] == coins.fingerprint
    with np.load(out / "inputs.npz", allow_pickle=False) as z:
        np.testing.assert_array_equal(z["included"].astype(bool), coins.included)
    assert main(["verify", str(out)]) == 0
    capsys.readouterr()


def test_bad_sampled_input_exits_2_with_the_reason(
    setup: dict[str, object], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = Path(str(setup["root"]))
    base = str(root / "base")
    make = ["canaries", "make", "--kind", "text", "--m", "4", "--source", "sampled"]
    cases = [
        ([*make, str(tmp_path / "a"), "--base", base, "--temperature", "0"], "--temperature"),
        ([*make, str(tmp_path / "b"), "--base", base, "--temperature", "-1"], "--temperature"),
        ([*make, str(tmp_path / "c")], "--base: expected the base model"),
        ([*make, str(tmp_path / "d"), "--base", str(tmp_path / "nowhere")], "--base"),
        ([*make, str(tmp_path / "e"), "--base", base, "--symbols", "ab"], "--symbols"),
        ([*make, str(tmp_path / "f"), "--base", base, "--top-k", "0"], "--top-k"),
        (["canaries", "make", str(tmp_path / "g"), "--kind", "text", "--temperature", "2"],
         "--temperature"),
        (["canaries", "make", str(tmp_path / "h"), "--kind", "gradient", "--n-params", "9",
          "--m", "2", "--source", "sampled"], "--source"),
    ]  # fmt: skip
    for args, reason in cases:
        assert main(args) == 2, args
        assert reason in capsys.readouterr().err, args
    assert not list(tmp_path.rglob("canary_set.npz"))  # nothing half-done
    # the audit of a sampled set against another base model
    other = tmp_path / "other"
    from privaudit.models.lm_builders import tiny_gpt

    tiny_gpt(seed=7, n_embd=32, max_length=48).save(other)
    assert main(_audit(root, "--base", str(other))) == 2
    assert "sampled from" in capsys.readouterr().err
