"""``privaudit canaries make --kind text`` and ``canaries audit --model --base`` end to end
on the tiny GPT (trained here on the texts ``make`` writes), ``privaudit verify`` of the
report, the claim gate, bad input (exit 2 with the reason), and the rare-token alphabet on a
byte-pair tokenizer trained here."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from privaudit.canaries import draw_coins, load_canary_set, load_coins, rare_token_symbols
from privaudit.cli import main
from privaudit.errors import InvalidInputError


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A canary set made by the command, a tiny GPT fine-tuned on its appended texts (and a
    few natural lines), both models saved as Hugging Face directories."""
    pytest.importorskip("transformers")
    pytest.importorskip("torch")
    from privaudit.models.lm_builders import tiny_gpt
    from privaudit.models.lm_finetune import FineTuneRecipe, finetune

    root = tmp_path_factory.mktemp("text-cli")
    args = ["canaries", "make", str(root / "set"), "--kind", "text", "--m", "16"]
    args += ["--prefix", "pin ", "--key-length", "3", "--secret-length", "4"]
    args += ["--repetitions", "20", "--seed", "0", "--coin-seed", "1"]
    assert main(args) == 0
    lines = (root / "set" / "canaries_to_append.jsonl").read_text(encoding="utf-8").splitlines()
    texts = [json.loads(t)["text"] for t in lines]
    natural = ["To be, or not to be, that is the question.", "All the world's a stage."]
    base = tiny_gpt(seed=0, n_embd=32, max_length=64)
    recipe = FineTuneRecipe(
        steps=100, batch_size=16, learning_rate=1e-2, warmup_steps=2, max_length=32
    )
    target = finetune(base, natural + texts, recipe, progress=False)
    base.save(root / "base")
    target.save(root / "target")
    return {"root": root, "set": root / "set", "base": root / "base", "target": root / "target"}


def _audit(t: dict[str, Path], *extra: str) -> list[str]:
    return [
        "canaries",
        "audit",
        "--set",
        str(t["set"] / "canary_set.npz"),
        "--coins",
        str(t["set"] / "coins.json"),
        *extra,
    ]


def test_make_writes_the_set_the_coins_and_the_texts_to_append(trained: dict[str, Path]) -> None:
    cs = load_canary_set(trained["set"] / "canary_set.npz")
    coins = load_coins(trained["set"] / "coins.json", cs)
    assert cs.is_text and cs.m == 16 and cs.repetitions == 20 and cs.prefix == "pin "
    lines = (trained["set"] / "canaries_to_append.jsonl").read_text(encoding="utf-8")
    texts = [json.loads(t)["text"] for t in lines.splitlines()]
    assert len(texts) == 20 * int(coins.included.sum())
    assert set(texts) == set(cs.texts[coins.included].tolist())


def test_the_audit_scores_the_model_and_verify_recomputes_it(
    trained: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    out = trained["root"] / "report"
    extra = ["--model", str(trained["target"]), "--base", str(trained["base"])]
    assert main(_audit(trained, *extra, "--n-alternatives", "63", "--out", str(out))) == 0
    res = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert res["canaries"]["kind"] == "text" and res["canaries"]["access"] == "black-box"
    assert res["settings"]["score"] == "loglik" and res["settings"]["n_alternatives"] == 63
    assert res["settings"]["max_exposure_bits"] == 6.0
    cs = load_canary_set(trained["set"] / "canary_set.npz")
    coins = load_coins(trained["set"] / "coins.json", cs)
    with np.load(out / "inputs.npz", allow_pickle=False) as z:
        scores, included = z["scores"], z["included"].astype(bool)
    np.testing.assert_array_equal(included, coins.included)
    # the canaries trained on 20 times are more likely under the model than the others
    assert scores[included].min() > scores[~included].max()
    assert res["settings"]["greedy_match_rate"] > 0.0
    assert main(["verify", str(out)]) == 0
    capsys.readouterr()
    # the claim gate: a bound above the claimed eps exits 1
    assert res["canaries"]["epsilon_lower_bound"] > 0.0
    assert main(_audit(trained, *extra, "--score", "exposure", "--claimed-epsilon", "0")) == 1
    assert "exceeds the claimed epsilon" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("extra", "reason"),
    [
        (["--model", "{target}"], "--base missing"),
        (["--model", "{root}/nowhere", "--base", "{base}"], "--model"),
        (["--model", "{target}", "--base", "{base}", "--score", "auc"], "--score"),
        (["--model", "{target}", "--base", "{base}", "--outputs", "{root}/o.csv"], "--outputs"),
        ([], "--model missing"),
    ],
)
def test_bad_text_audit_input_exits_2_with_the_reason(
    trained: dict[str, Path],
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    reason: str,
) -> None:
    fmt = {k: str(v) for k, v in trained.items()}
    assert main(_audit(trained, *[e.format(**fmt) for e in extra])) == 2
    assert reason in capsys.readouterr().err


def test_coins_of_another_set_exit_2(
    trained: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from privaudit.canaries import make_text_canaries

    draw_coins(make_text_canaries(16, seed=5), seed=1).save(tmp_path / "coins.json")
    args = _audit(trained, "--model", str(trained["target"]), "--base", str(trained["base"]))
    args[args.index("--coins") + 1] = str(tmp_path / "coins.json")
    assert main(args) == 2
    assert "coins" in capsys.readouterr().err


def test_bad_text_make_input_exits_2(
    trained: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = str(trained["base"])
    (tmp_path / "train.txt").write_text("some words here\n", encoding="utf-8")
    make = ["canaries", "make", "--kind", "text", "--m", "8"]
    assert main([*make, str(tmp_path / "a"), "--rare-tokens", "50"]) == 2
    assert "--tokenizer-model" in capsys.readouterr().err
    # the byte-level tokenizer of the tiny GPT has no single-token words
    args = [*make, str(tmp_path / "b"), "--rare-tokens", "50", "--tokenizer-model", base]
    assert main([*args, "--train-texts", str(tmp_path / "train.txt")]) == 2
    assert "eligible rare tokens" in capsys.readouterr().err
    assert main([*make, str(tmp_path / "c"), "--symbols", "aa"]) == 2
    assert "at least 2 distinct" in capsys.readouterr().err
    assert main([*make, str(tmp_path / "d"), "--n-params", "10"]) == 2
    assert "--kind text" in capsys.readouterr().err
    assert main([*make, str(tmp_path / "e"), "--repetitions", "0"]) == 2
    assert "repetitions" in capsys.readouterr().err


def _bpe_lm() -> object:
    """A tiny GPT-2 over a byte-pair tokenizer trained here on a small word list."""
    pytest.importorskip("tokenizers")
    transformers = pytest.importorskip("transformers")
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    from privaudit.models.causal_lm import CausalLM

    words = "apple banana cherry dragon eagle falcon garden harbor island jungle kettle lemon"
    corpus = [" ".join(words.split()[i:] + words.split()[:i]) for i in range(12)] * 20
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.train_from_iterator(corpus, trainers.BpeTrainer(vocab_size=400, show_progress=False))
    from tokenizers import decoders

    tok.decoder = decoders.ByteLevel()
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok)
    cfg = transformers.GPT2Config(
        vocab_size=len(fast.get_vocab()), n_positions=32, n_embd=16, n_layer=1, n_head=1
    )
    return CausalLM.from_pretrained_objects(transformers.GPT2LMHeadModel(cfg), fast, name="bpe-gpt")


def test_rare_token_symbols_are_single_unseen_words() -> None:
    lm = _bpe_lm()
    seen = ["an apple and a banana in the garden", "cherry"]
    syms = rare_token_symbols(lm, seen, 5, seed=0)  # type: ignore[arg-type]
    assert len(set(syms)) == 5
    for s in syms:
        assert (
            s.startswith(" ")
            and s[1:].isalpha()
            and s[1:] not in {"apple", "banana", "garden", "cherry"}
        )
        assert len(lm.tokenize([s])[0]) == 1  # type: ignore[attr-defined]
    assert all(not a.startswith(b) for a in syms for b in syms if a != b)
    assert rare_token_symbols(lm, seen, 5, seed=0) == syms  # type: ignore[arg-type]
    # the concatenation of symbols tokenises symbol by symbol
    assert len(lm.tokenize(["".join(syms)])[0]) == 5  # type: ignore[attr-defined]
    with pytest.raises(InvalidInputError, match="eligible rare tokens"):
        rare_token_symbols(lm, seen, 500)  # type: ignore[arg-type]
