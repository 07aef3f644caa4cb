"""PANORAMIA's text modality (games/panoramia_text.py) on the tiny GPT."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from privaudit.errors import InvalidInputError

pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

from privaudit.data.text import TextRecords  # noqa: E402
from privaudit.llm.audit import shakespeare_split  # noqa: E402
from privaudit.models.causal_lm import CausalLM  # noqa: E402
from privaudit.models.lm_builders import tiny_gpt  # noqa: E402
from privaudit.models.lm_finetune import FineTuneRecipe, finetune  # noqa: E402
from privaudit.panoramia.game import ScorerData, run_panoramia  # noqa: E402
from privaudit.panoramia.text import (  # noqa: E402
    SUMMARY_FEATURES,
    TextModality,
    encode_bytes,
)
from privaudit.runtime.seeds import derive_seed  # noqa: E402
from privaudit.signals.text import mean_nll  # noqa: E402

FAST = FineTuneRecipe(steps=12, batch_size=8, learning_rate=3e-3, warmup_steps=2, max_length=128)
K = 32


@pytest.fixture(scope="module")
def records() -> TextRecords:
    chunks, split = shakespeare_split(
        {"members": 24}, seed=0, chunk_chars=96, chunks_per_document={"members": 1}
    )
    return chunks.subset(split.chunks["members"])


@pytest.fixture(scope="module")
def base() -> CausalLM:
    return tiny_gpt(seed=0, n_embd=32, max_length=128)


def modality(base: CausalLM, **kw: object) -> TextModality:
    opts: dict[str, object] = {
        "top_k": 20,
        "max_new_tokens": 96,
        "min_chars": 20,
        "max_chars": 200,
        "loss_tokens": K,
        "prompt_fraction": 0.25,
        "scorer": {"epochs": 4, "batch_size": 16, "text_bytes": 64},
    }
    opts.update(kw)
    return TextModality(base, FAST, **opts)  # type: ignore[arg-type]


def test_record_operations(base: CausalLM, records: TextRecords) -> None:
    mod = modality(base)
    a = mod.take(records, records.ids[3:1:-1])
    assert a.ids == records.ids[3:1:-1] and a.texts == records.texts[3:1:-1]
    both = mod.concat(a, mod.take(records, records.ids[:1]))
    assert mod.ids(both) == (*a.ids, records.ids[0]) and both.member is None
    with pytest.raises(InvalidInputError, match="unique"):
        mod.concat(a, a)


def test_generator_holds_out_prompt_documents_and_samples_exactly_n(
    base: CausalLM, records: TextRecords
) -> None:
    mod = modality(base)
    gen = mod.fit_generator(records, seed=0)
    assert gen.info["n_prompt_documents"] == 6 and gen.info["n_train_texts"] == 18
    assert len(gen.prompts) == 6
    # every prompt is the head of a record that G did not train on
    heads = {t: r for r, t in zip(records.ids, records.texts, strict=True)}
    prompt_records = [next(r for t, r in heads.items() if t.startswith(p)) for p in gen.prompts]
    assert len(set(prompt_records)) == 6
    syn = mod.sample(gen, 7, seed=1)
    assert syn.ids == tuple(f"synth-{i:06d}" for i in range(7)) and syn.documents == syn.ids
    assert all(20 <= len(t) <= 200 for t in syn.texts) and syn.member is None
    assert mod.sample(gen, 7, seed=1).texts == syn.texts
    assert gen.info["samples"] == [{"n": 7, **gen.info["samples"][0]}]
    assert mod.settings()["generator"]["base"]["fingerprint"] == base.fingerprint
    # G does not depend on the target's recipe: a copy for another recipe reuses it
    other = mod.with_recipe(dataclasses.replace(FAST, steps=5))
    assert other.fit_generator(records, seed=0) is gen and other.recipe.steps == 5
    assert other.sample(gen, 7, seed=1).texts == syn.texts and mod.recipe.steps == FAST.steps
    assert modality(base).fit_generator(records, seed=0).prompts == gen.prompts  # seeded split


def test_loss_features_are_the_per_token_losses(base: CausalLM, records: TextRecords) -> None:
    mod = modality(base)
    sub = mod.take(records, records.ids[:5])
    feats = mod.loss_features(base, sub)
    j = len(SUMMARY_FEATURES)
    assert feats.shape == (5, j + 2 * K)
    stats = base.token_stats(list(sub.texts))
    for i, s in enumerate(stats):
        m = min(K, s.logprobs.size)
        np.testing.assert_allclose(feats[i, j : j + m], -s.logprobs[:m], atol=1e-9)
        assert np.all(feats[i, j + m : j + K] == 0) and feats[i, j + K :].sum() == m
    np.testing.assert_allclose(feats[:, 0], mean_nll(stats), atol=1e-9)
    np.testing.assert_array_equal(mod.example_loss(feats), feats[:, 0])
    np.testing.assert_allclose(feats[:, 4], np.log([s.n_tokens for s in stats]))
    with pytest.raises(InvalidInputError, match="CausalLM"):
        mod.loss_features(object(), sub)  # type: ignore[arg-type]


def test_helper_is_the_target_recipe_on_the_helper_pool(
    base: CausalLM, records: TextRecords
) -> None:
    mod = modality(base)
    pool = mod.take(records, records.ids[:8])
    h = mod.fit_helper(pool, seed=3)
    assert mean_nll(h.token_stats(list(pool.texts))).mean() < (
        mean_nll(base.token_stats(list(pool.texts))).mean()
    )
    assert mod.settings()["helper"]["recipe"] == FAST.settings()
    h2 = mod.fit_helper(pool, seed=3)
    assert h2.fingerprint == h.fingerprint


def test_helpers_of_snapshot_targets_are_snapshots_of_one_run(
    base: CausalLM, records: TextRecords
) -> None:
    """With ``snapshot_steps``, the helper of the target ``stop_after = k`` is the step-k
    snapshot of ONE memoised run, identical to a separate ``stop_after = k`` helper run."""
    pool = records.subset(list(records.ids[:8]))
    plain = modality(base)
    snap = modality(base, snapshot_steps=(4, 12))
    calls: list[int] = []
    import privaudit.models.lm_finetune as lf

    real = lf.finetune_snapshots

    def spy(*args: object, **kw: object) -> object:
        calls.append(1)
        return real(*args, **kw)  # type: ignore[arg-type]

    lf.finetune_snapshots = spy  # type: ignore[assignment]
    try:
        for k in (4, 12):
            recipe = dataclasses.replace(FAST, stop_after=k)
            a = snap.with_recipe(recipe).fit_helper(pool, seed=3)
            b = plain.with_recipe(recipe).fit_helper(pool, seed=3)
            assert a.fingerprint == b.fingerprint, k
    finally:
        lf.finetune_snapshots = real  # type: ignore[assignment]
    assert calls == [1]  # one run for both helpers
    assert not snap._memo  # each snapshot handed out once, then freed
    four = plain.with_recipe(dataclasses.replace(FAST, stop_after=4)).fit_helper(pool, seed=3)
    assert four.fingerprint != plain.fit_helper(pool, seed=3).fingerprint


def test_scorer_learns_a_separable_loss_signal(base: CausalLM, records: TextRecords) -> None:
    mod = modality(base, scorer={"epochs": 15, "batch_size": 8, "text_bytes": 64, "lr": 3e-3})
    rng = np.random.default_rng(0)
    n = len(records)
    label = np.arange(n) % 2 == 0
    loss = rng.normal(size=(n, 2 * K + len(SUMMARY_FEATURES)))
    loss[:, 0] += 3.0 * label  # the mean-loss summary separates the classes
    tr, va = np.arange(n) < 16, np.arange(n) >= 16
    calls: list[int] = []

    def auc(scores: np.ndarray, y: np.ndarray) -> float:
        calls.append(1)
        pos, neg = scores[y], scores[~y]
        return float(np.mean(pos[:, None] > neg[None, :]))

    train = ScorerData(mod.take(records, np.asarray(records.ids)[tr].tolist()), loss[tr], label[tr])
    val = ScorerData(mod.take(records, np.asarray(records.ids)[va].tolist()), loss[va], label[va])
    scorer = mod.fit_scorer(train, val, seed=0, criterion=auc)
    assert len(calls) == scorer.info["epochs_run"] + 1
    assert scorer.info["best_criterion"] == max(scorer.info["criterion_by_epoch"])
    s = scorer.score(val.records, val.loss)
    assert s.shape == (va.sum(),) and auc(s, label[va]) >= 0.9


def test_scorer_reads_the_reference_block(base: CausalLM, records: TextRecords) -> None:
    # two blocks of loss features side by side (the model's, then the reference's): the
    # signal is in the reference's per-token losses only
    mod = modality(base, scorer={"epochs": 15, "batch_size": 8, "text_bytes": 64, "lr": 3e-3})
    rng = np.random.default_rng(1)
    n, j = len(records), len(SUMMARY_FEATURES)
    w = j + 2 * K
    label = np.arange(n) % 2 == 0
    loss = rng.normal(size=(n, 2 * w))
    loss[:, j + K : w] = loss[:, w + j + K :] = 1.0  # masks
    loss[:, w + j : w + j + K] += 3.0 * label[:, None]
    tr, va = np.arange(n) < 16, np.arange(n) >= 16
    ids = np.asarray(records.ids)

    def auc(scores: np.ndarray, y: np.ndarray) -> float:
        return float(np.mean(scores[y][:, None] > scores[~y][None, :]))

    train = ScorerData(mod.take(records, ids[tr].tolist()), loss[tr], label[tr])
    val = ScorerData(mod.take(records, ids[va].tolist()), loss[va], label[va])
    scorer = mod.fit_scorer(train, val, seed=0, criterion=auc)
    assert auc(scorer.score(val.records, val.loss), label[va]) >= 0.9
    with pytest.raises(InvalidInputError, match="multiple"):
        mod.fit_scorer(
            ScorerData(train.records, loss[tr, :-1], label[tr]), val, seed=0, criterion=auc
        )


def test_reference_is_g_and_its_features_are_computed_once_per_text_set(
    base: CausalLM, records: TextRecords
) -> None:
    mod = modality(base, scorer={"reference": "generator"})
    gen = mod.fit_generator(records, seed=1)
    ref = mod.reference_model(gen)
    assert ref is gen.lm
    calls: list[int] = []
    real = type(ref).token_stats

    def counting(self: CausalLM, texts: list[str], **kw: object) -> object:
        calls.append(len(texts))
        return real(self, texts, **kw)  # type: ignore[arg-type]

    type(ref).token_stats = counting  # type: ignore[method-assign]
    try:
        first = mod.loss_features(ref, records)
        again = mod.with_recipe(dataclasses.replace(FAST, steps=6)).loss_features(ref, records)
        mod.loss_features(base, records)
        mod.loss_features(base, records)  # any other model: not memoised
    finally:
        type(ref).token_stats = real  # type: ignore[method-assign]
    assert calls == [len(records)] * 3
    np.testing.assert_array_equal(first, again)
    assert mod.settings()["reference"] == {"model": "generator", "features": "loss_features"}
    off = modality(base, scorer={"reference": None})
    assert off.reference_model(gen) is None and off.settings()["reference"] is None


def test_target_recipe_reference_is_the_targets_recipe_on_all_of_d_g(
    base: CausalLM, records: TextRecords
) -> None:
    # G trains on D_G minus its prompt documents; the target-recipe reference on all of D_G,
    # with the target's recipe and a seed of its own (not the helper's)
    mod = modality(base, scorer={"reference": "target-recipe"})
    gen = mod.fit_generator(records, seed=3)
    ref = mod.reference_model(gen)
    assert isinstance(ref, CausalLM) and ref is not gen.lm
    want = finetune(
        base,
        list(records.texts),
        dataclasses.replace(FAST, seed=derive_seed(3, purpose="panoramia-text-reference")),
    )
    np.testing.assert_array_equal(mod.loss_features(ref, records), mod.loss_features(want, records))
    assert mod.reference_model(gen) is ref  # kept for RM;RN's records: not retrained
    with pytest.raises(InvalidInputError, match="fit_generator"):
        mod.reference_model(dataclasses.replace(gen))  # a generator it did not fit
    helper = mod.fit_helper(records, seed=3)
    assert not np.array_equal(mod.loss_features(ref, records), mod.loss_features(helper, records))
    # keyed on the target's recipe: another target's copy has other settings
    s = mod.settings()["reference"]
    assert s["model"] == "target-recipe" and s["target_recipe"]["recipe"] == FAST.settings()
    other = mod.with_recipe(dataclasses.replace(FAST, steps=6))
    assert other.settings()["reference"]["target_recipe"] != s["target_recipe"]
    # another target's reference replaces this one, whose memoised features go with it
    assert other.reference_model(gen) is not ref
    assert not [k for k in mod._memo if k[0].startswith("reference") and k[1] == id(ref)]
    # the default reads both (G's LM, then the target's recipe on D_G), keyed on the recipe
    default = modality(base).settings()["reference"]
    assert default["model"] == "generator+target-recipe"
    assert default["target_recipe"]["recipe"] == FAST.settings()


def test_both_references_read_side_by_side_and_snapshots_are_kept_for_rmrn(
    base: CausalLM, records: TextRecords
) -> None:
    steps = (3, 6)
    mod = modality(base, scorer={"reference": "generator+target-recipe"}, snapshot_steps=steps)
    gen = mod.fit_generator(records, seed=4)
    at = [mod.with_recipe(dataclasses.replace(FAST, steps=6, stop_after=k)) for k in steps]
    refs = at[0].reference_model(gen)
    assert isinstance(refs, tuple) and len(refs) == 2 and refs[0] is gen.lm
    w = len(SUMMARY_FEATURES) + 2 * K
    both = at[0].loss_features(refs, records)
    assert both.shape == (len(records), 2 * w)
    np.testing.assert_array_equal(both[:, :w], at[0].loss_features(gen.lm, records))
    # the snapshot after 3 steps of the 6-step run, seeded for the reference
    seed = derive_seed(4, purpose="panoramia-text-reference")
    want = finetune(
        base, list(records.texts), dataclasses.replace(FAST, steps=6, stop_after=3, seed=seed)
    )
    np.testing.assert_array_equal(both[:, w:], at[0].loss_features(want, records))
    # the same target's RM;RN records get the same model again (kept, not retrained)...
    again = at[0].reference_model(gen)
    assert isinstance(again, tuple) and again[1] is refs[1]
    # ... and the next target's snapshot drops the earlier one and its features
    later = at[1].reference_model(gen)
    assert isinstance(later, tuple) and later[1] is not refs[1]
    assert not [k for k in mod._memo if k[0] == "reference-loss" and k[1] == id(refs[1])]
    assert ("reference", id(later[1])) in mod._memo


def test_encode_bytes_pads_and_truncates() -> None:
    x = encode_bytes(["ab", "é" * 5], 4)
    np.testing.assert_array_equal(x[0], [97, 98, 256, 256])
    assert x.dtype == np.float32 and list(x[1]) == [0xC3, 0xA9, 0xC3, 0xA9]


def test_bad_settings(base: CausalLM) -> None:
    with pytest.raises(InvalidInputError, match="scorer"):
        modality(base, scorer={"depth": 3})
    for bad in ("target", "target-recipe+generator", ["generator"]):
        with pytest.raises(InvalidInputError, match="reference"):
            modality(base, scorer={"reference": bad})
    with pytest.raises(InvalidInputError, match="prompt_fraction"):
        modality(base, prompt_fraction=1.0)
    with pytest.raises(InvalidInputError, match="recipe"):
        TextModality(base, {"steps": 3})  # type: ignore[arg-type]


def test_run_panoramia_end_to_end_on_the_tiny_gpt(
    base: CausalLM, records: TextRecords, tmp_path: Path
) -> None:
    from privaudit.runtime.store import ArtifactStore

    target = finetune(base, list(records.texts), FAST)
    mod = modality(base)
    helper_ids: list[tuple[str, ...]] = []
    fit_helper = mod.fit_helper

    def spy(records: TextRecords, *, seed: int) -> CausalLM:
        helper_ids.append(records.ids)
        return fit_helper(records, seed=seed)

    mod.fit_helper = spy  # type: ignore[method-assign]
    res = run_panoramia(mod, target, records, seed=0, store=ArtifactStore(tmp_path))
    d = res.to_dict()
    # resume: the same store serves every step again (no generation, no fit) with the same numbers
    store = ArtifactStore(tmp_path)
    again = run_panoramia(modality(base), target, records, seed=0, store=store)
    assert store.stats.created == 0 and store.stats.hits > 0
    assert again.to_dict() == d
    assert d["modality"] == "text" and d["sizes"]["n_known_members"] == len(records)
    b = d["bounds"]
    assert b["eps_tilde"] == pytest.approx(max(0.0, b["c_plus_eps_lb"] - b["c_lb"]))
    # the helper saw the helper pool only; G's prompt documents were never trained on
    assert [set(i) for i in helper_ids] == [set(res.split.helper_pool)]
    assert not set(res.split.helper_pool) & set(res.split.audit_synthetic)
    gen = d["generator"]
    assert gen["n_train_texts"] + gen["n_prompt_documents"] == d["sizes"]["n_generator_train"]
    assert gen["samples"][0]["n"] == d["sizes"]["n_synthetic"]
    # both classifiers saw the references' loss features after their own (scorer reference,
    # default: G's LM and the target's recipe on D_G)
    assert {d["classifiers"][r]["network"]["reference"] for r in ("mia", "baseline")} == {
        "generator+target-recipe"
    }
    scores = res.scores.scores["panoramia-mia"]
    assert np.unique(scores).size > 2  # continuous scores, not 0/1 predictions
    ids = res.scores.record_ids
    synth = [i for i in ids if str(i).startswith("synth-")]
    assert len(synth) == int((~res.scores.member).sum()) and set(ids) - set(synth) <= set(
        records.ids
    )
