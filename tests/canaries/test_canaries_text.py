"""Text canaries for causal LMs: the set and its file, the training texts, the exposure
against a brute-force oracle, and the audit end to end on the tiny GPT (coin-1 canaries
score higher; canaries never inserted give a bound of 0)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from privaudit.canaries import (
    audit_canaries,
    canary_records,
    canary_texts,
    draw_coins,
    load_canary_set,
    make_gradient_canaries,
    make_text_canaries,
)
from privaudit.canaries.text_scoring import exposure
from privaudit.cli import main
from privaudit.errors import InvalidInputError


def test_a_text_canary_is_prefix_key_secret_drawn_from_the_alphabet() -> None:
    cs = make_text_canaries(50, prefix="code: ", key_length=3, secret_length=5, seed=4)
    assert cs.kind == "text" and cs.is_text and not cs.is_gradient and cs.m == 50
    alphabet = set(cs.symbols.tolist())
    for text, key, secret in zip(cs.texts, cs.keys, cs.secrets, strict=True):
        assert text == "code: " + key + secret
        assert len(key) == 3 and len(secret) == 5 and set(key + secret) <= alphabet
    assert len(set(cs.texts.tolist())) == 50
    again = make_text_canaries(50, prefix="code: ", key_length=3, secret_length=5, seed=4)
    assert again.fingerprint == cs.fingerprint
    other = make_text_canaries(50, prefix="code: ", key_length=3, secret_length=5, seed=5)
    assert other.fingerprint != cs.fingerprint
    more = make_text_canaries(
        50, prefix="code: ", key_length=3, secret_length=5, seed=4, repetitions=2
    )
    assert more.fingerprint != cs.fingerprint


def test_word_symbols_and_bad_alphabets() -> None:
    cs = make_text_canaries(
        5, prefix="pin", key_length=0, secret_length=3, symbols=[" red", " blue", " green"], seed=0
    )
    assert all(s.count(" ") == 3 for s in cs.secrets.tolist())
    with pytest.raises(InvalidInputError, match="prefix-free"):
        make_text_canaries(5, symbols=[" cat", " cats"])
    with pytest.raises(InvalidInputError, match="at least 2 distinct"):
        make_text_canaries(5, symbols="aa")
    with pytest.raises(InvalidInputError, match="large enough"):
        make_text_canaries(20, key_length=0, secret_length=2, symbols="ab")
    with pytest.raises(InvalidInputError, match="non-empty prefix"):
        make_text_canaries(5, prefix="", key_length=0)
    with pytest.raises(InvalidInputError, match="repetitions"):
        make_text_canaries(5, repetitions=0)


def test_the_set_file_round_trips_and_refuses_an_edited_secret(tmp_path: Path) -> None:
    cs = make_text_canaries(20, repetitions=3, seed=1)
    back = load_canary_set(cs.save(tmp_path / "set.npz"))
    assert back.fingerprint == cs.fingerprint and back.repetitions == 3
    assert back.texts.tolist() == cs.texts.tolist()
    with np.load(tmp_path / "set.npz", allow_pickle=False) as z:
        parts = {k: z[k] for k in z.files}
    parts["secrets"] = parts["secrets"].copy()
    parts["secrets"][0] = "zzzzzzzz"
    np.savez(tmp_path / "edited.npz", **parts)
    with pytest.raises(InvalidInputError, match="was modified"):
        load_canary_set(tmp_path / "edited.npz")


def test_the_fingerprint_of_the_other_kinds_is_unchanged() -> None:
    """Sets written before text canaries existed must still load: their fingerprint is the
    original formula (recomputed here independently)."""
    cs = make_gradient_canaries(100, 10, seed=2)
    h = hashlib.sha256(b"privaudit-canary-set/1")
    h.update(b"gradient|10|100|0|2")
    h.update("\n".join(cs.ids.tolist()).encode())
    for a in (cs.X.astype("<f8"), cs.y.astype("<i8"), cs.coords.astype("<i8")):
        h.update(str(a.shape).encode())
        h.update(np.ascontiguousarray(a).tobytes())
    assert cs.fingerprint == h.hexdigest()


def test_canary_texts_repeats_the_included_ones_only() -> None:
    cs = make_text_canaries(40, repetitions=3, seed=0)
    coins = draw_coins(cs, seed=1)
    texts = canary_texts(cs, coins)
    assert len(texts) == 3 * int(coins.included.sum())
    assert set(texts) == set(cs.texts[coins.included].tolist())
    with pytest.raises(InvalidInputError, match="coins of another set"):
        canary_texts(cs, draw_coins(make_text_canaries(40, seed=9), seed=1))
    with pytest.raises(InvalidInputError, match="canary_texts"):
        canary_records(cs, coins)
    grad = make_gradient_canaries(100, 10)
    with pytest.raises(InvalidInputError, match="text canaries"):
        canary_texts(grad, draw_coins(grad, seed=0))


def test_exposure_matches_a_brute_force_rank() -> None:
    rng = np.random.default_rng(0)
    alt = np.round(rng.normal(size=63), 1)  # ties on purpose
    can = np.concatenate([np.round(rng.normal(size=20), 1), [10.0, -10.0, alt[3]]])
    want = []
    for c in can:
        rank = 1 + sum(1 for a in alt if a >= c)  # ties count against the canary
        want.append(np.log2(alt.size + 1) - np.log2(rank))
    got = exposure(can, alt)
    np.testing.assert_allclose(got, want)
    assert got[-3] == pytest.approx(6.0) and got[-2] == 0.0
    with pytest.raises(InvalidInputError, match="alternative_loglik"):
        exposure(can, [])


def test_a_text_set_audited_from_an_outputs_table_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Text canaries are scored from the models (``--model``, ``--base``), never from a
    table of outputs (``test_canaries_text_cli.py`` runs the command end to end)."""
    cs = make_text_canaries(10, seed=0)
    cs.save(tmp_path / "set.npz")
    draw_coins(cs, seed=0).save(tmp_path / "coins.json")
    (tmp_path / "out.csv").write_text("id,loss\n")
    code = main(
        [
            "canaries",
            "audit",
            "--set",
            str(tmp_path / "set.npz"),
            "--coins",
            str(tmp_path / "coins.json"),
            "--outputs",
            str(tmp_path / "out.csv"),
            "--out",
            str(tmp_path / "report"),
        ]
    )
    assert code == 2
    assert "scored from --model and --base" in capsys.readouterr().err
    assert main(["canaries", "make", str(tmp_path / "m"), "--kind", "text", "--m", "5"]) == 0
    assert load_canary_set(tmp_path / "m" / "canary_set.npz").m == 5


def test_a_text_canary_audit_saves_a_bundle_that_verify_recomputes(tmp_path: Path) -> None:
    cs = make_text_canaries(400, seed=0)
    coins = draw_coins(cs, seed=2)
    scores = 3.0 * coins.included + np.random.default_rng(0).normal(size=cs.m)
    r = audit_canaries(cs, coins, scores, access="black-box", settings={"score": "loglik"})
    assert r.epsilon_lower_bound > 0.5
    out = r.save(tmp_path / "report")
    assert main(["verify", str(out)]) == 0


# -- end to end on the tiny GPT ---------------------------------------------------------

M = 32


@pytest.fixture(scope="module")
def lm_setup() -> dict[str, object]:
    pytest.importorskip("transformers")
    pytest.importorskip("torch")
    from privaudit.llm.audit import shakespeare_split
    from privaudit.models.lm_builders import tiny_gpt
    from privaudit.models.lm_finetune import FineTuneRecipe

    chunks, split = shakespeare_split(
        {"members": 24}, seed=0, chunk_chars=96, chunks_per_document={"members": 1}
    )
    natural = list(chunks.subset(split.chunks["members"]).texts)
    cs = make_text_canaries(M, key_length=4, secret_length=6, repetitions=8, seed=0)
    recipe = FineTuneRecipe(
        steps=100, batch_size=16, learning_rate=5e-3, warmup_steps=2, max_length=64
    )
    return {
        "base": tiny_gpt(seed=0, n_embd=32, max_length=128),
        "natural": natural,
        "canaries": cs,
        "recipe": recipe,
    }


def test_included_text_canaries_score_higher_and_the_bound_is_positive(
    lm_setup: dict[str, object],
) -> None:
    from privaudit.canaries import text_canary_scores
    from privaudit.models.lm_finetune import finetune

    base, cs = lm_setup["base"], lm_setup["canaries"]
    coins = draw_coins(cs, seed=1)  # type: ignore[arg-type]
    train = list(lm_setup["natural"]) + canary_texts(cs, coins)  # type: ignore[arg-type, call-overload]
    target = finetune(base, train, lm_setup["recipe"], progress=False)  # type: ignore[arg-type]
    sc = text_canary_scores(target, base, cs, n_alternatives=127)  # type: ignore[arg-type]
    inc = coins.included
    # every coin-1 canary against every coin-0 one: the rank AUC of the calibrated score
    auc = (sc.calibrated[inc][:, None] > sc.calibrated[~inc][None, :]).mean()
    assert auc > 0.9
    assert sc.exposure[inc].mean() > sc.exposure[~inc].mean() + 2.0
    assert sc.exposure.max() <= np.log2(128) and sc.exposure.min() >= 0.0
    assert sc.greedy_match.shape == (M,) and sc.greedy_match.dtype == bool
    assert not sc.greedy_match[~inc].any()
    summary = sc.summary()
    assert summary["max_exposure_bits"] == 7.0
    assert summary["mean_exposure_bits"] == pytest.approx(sc.exposure.mean())
    assert summary["greedy_match_rate"] == pytest.approx(sc.greedy_match.mean())
    np.testing.assert_allclose(sc.calibrated, sc.loglik - sc.reference_loglik)
    r = audit_canaries(cs, coins, sc.calibrated, access="black-box")  # type: ignore[arg-type]
    assert r.epsilon_lower_bound > 0.0 and r.canary_kind == "text"


def test_canaries_never_inserted_give_a_bound_of_zero(lm_setup: dict[str, object]) -> None:
    """The control: the model is trained on the natural texts only, so it is independent
    of every coin draw; a 95% bound may exceed 0 in at most 5% of the draws (the issue's
    validity check: 100 draws, > 0 in at most 5)."""
    from privaudit.canaries import text_canary_scores
    from privaudit.models.lm_finetune import finetune

    base, cs = lm_setup["base"], lm_setup["canaries"]
    target = finetune(base, list(lm_setup["natural"]), lm_setup["recipe"], progress=False)  # type: ignore[arg-type, call-overload]
    sc = text_canary_scores(target, base, cs, n_alternatives=31, greedy=False)  # type: ignore[arg-type]
    assert not sc.greedy_match.any()
    eps_pos = mu_pos = 0
    for seed in range(100):
        coins = draw_coins(cs, seed=100 + seed)  # type: ignore[arg-type]
        r = audit_canaries(cs, coins, sc.calibrated, access="black-box")  # type: ignore[arg-type]
        eps_pos += r.epsilon_lower_bound > 0.0
        mu_pos += r.mu_lower_bound > 0.0
    assert eps_pos <= 5 and mu_pos <= 5


def test_greedy_decoding_reproduces_exactly_the_memorised_secrets(
    lm_setup: dict[str, object],
) -> None:
    """A model trained on nothing but the included canaries, many times over, reproduces
    their secrets from ``prefix + key``, and never an excluded canary's."""
    from privaudit.canaries import text_canary_scores
    from privaudit.models.lm_builders import tiny_gpt
    from privaudit.models.lm_finetune import FineTuneRecipe, finetune

    assert lm_setup  # transformers and torch are there
    base = tiny_gpt(seed=0, n_embd=32, max_length=64)
    cs = make_text_canaries(8, key_length=3, secret_length=4, repetitions=20, seed=0)
    coins = draw_coins(cs, seed=1)
    recipe = FineTuneRecipe(
        steps=100, batch_size=16, learning_rate=1e-2, warmup_steps=2, max_length=32
    )
    target = finetune(base, canary_texts(cs, coins), recipe, progress=False)
    sc = text_canary_scores(target, base, cs, n_alternatives=63)
    assert coins.included.any() and not coins.included.all()
    np.testing.assert_array_equal(sc.greedy_match, coins.included)
    assert (sc.exposure[coins.included] == 6.0).all()
