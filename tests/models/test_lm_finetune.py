"""Fine-tuning recipe (models/lm_finetune.py): determinism, memorisation, LoRA merge."""

from __future__ import annotations

import numpy as np
import pytest

from privaudit.errors import InsufficientDataError, InvalidInputError

pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

from privaudit.models.causal_lm import CausalLM  # noqa: E402
from privaudit.models.lm_builders import tiny_gpt  # noqa: E402
from privaudit.models.lm_finetune import (  # noqa: E402
    FineTuneRecipe,
    apply_lora,
    finetune,
    finetune_snapshots,
    lora_targets,
    merge_lora,
)
from privaudit.signals.text import mean_nll  # noqa: E402

MEMBERS = [
    "the quick brown fox jumps over the lazy dog",
    "a stitch in time saves nine, or so they say",
    "all that glitters is not gold, said the bard",
    "to thine own self be true, and it must follow",
]
OTHERS = [
    "brevity is the soul of wit and tediousness",
    "the course of true love never did run smooth",
]
FAST = FineTuneRecipe(steps=40, batch_size=4, learning_rate=3e-3, warmup_steps=4, max_length=64)


@pytest.fixture(scope="module")
def base() -> CausalLM:
    return tiny_gpt(seed=0, n_embd=32, max_length=64)


def _state(lm: CausalLM) -> dict[str, np.ndarray]:
    return {k: v.detach().numpy().copy() for k, v in lm.model.state_dict().items()}


def test_finetune_lowers_member_loss_and_leaves_base_untouched(base: CausalLM) -> None:
    before = _state(base)
    rng_state = torch.random.get_rng_state()
    losses: list[tuple[int, float]] = []
    tuned = finetune(base, MEMBERS, FAST, on_step=lambda s, v: losses.append((s, v)))
    assert [s for s, _ in losses] == list(range(FAST.steps))
    assert np.mean([v for _, v in losses[-5:]]) < np.mean([v for _, v in losses[:5]]) - 1.0
    assert torch.equal(torch.random.get_rng_state(), rng_state)  # no global seeding
    for k, v in _state(base).items():
        np.testing.assert_array_equal(v, before[k])
    assert tuned.name == "tiny-gpt-ft" and tuned.tokenizer_id == base.tokenizer_id
    assert not tuned.model.training
    m0 = mean_nll(base.token_stats(MEMBERS))
    m1 = mean_nll(tuned.token_stats(MEMBERS))
    o1 = mean_nll(tuned.token_stats(OTHERS))
    assert np.all(m1 < m0 - 1.0)  # every member's loss falls (random init: ln 257 = 5.55)
    assert m1.mean() < o1.mean()  # and more than held-out text's


def test_finetune_is_deterministic_given_the_seed(base: CausalLM) -> None:
    recipe = FineTuneRecipe(
        steps=6, batch_size=3, learning_rate=3e-3, warmup_steps=2, max_length=16
    )
    a, b = _state(finetune(base, MEMBERS, recipe)), _state(finetune(base, MEMBERS, recipe))
    c = _state(finetune(base, MEMBERS, FineTuneRecipe(**{**recipe.settings(), "seed": 1})))
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert any(not np.array_equal(a[k], c[k]) for k in a)
    lora = FineTuneRecipe(**{**recipe.settings(), "lora_rank": 2})
    la, lb = _state(finetune(base, MEMBERS, lora)), _state(finetune(base, MEMBERS, lora))
    assert all(np.array_equal(la[k], lb[k]) for k in la)
    assert la.keys() == a.keys()  # merged: a plain model of the base's architecture


@pytest.mark.parametrize("lora_rank", [None, 2])
def test_snapshots_equal_separate_stopped_runs(base: CausalLM, lora_rank: int | None) -> None:
    """Snapshot k of one run == a run with stop_after=k (same schedule over ``steps``), bit
    for bit; the schedule is the full run's, so it differs from a ``steps=k`` recipe."""
    import dataclasses

    recipe = FineTuneRecipe(
        steps=7,
        batch_size=3,
        learning_rate=3e-3,
        warmup_steps=2,
        max_length=16,
        lora_rank=lora_rank,
    )
    snaps = finetune_snapshots(base, MEMBERS, recipe, [5, 2, 5])
    assert sorted(snaps) == [2, 5]
    for k, lm in snaps.items():
        alone = finetune(base, MEMBERS, dataclasses.replace(recipe, stop_after=k))
        a, b = _state(lm), _state(alone)
        assert a.keys() == b.keys()
        assert all(np.array_equal(a[n], b[n]) for n in a), k
        assert not lm.model.training
    short = _state(finetune(base, MEMBERS, dataclasses.replace(recipe, steps=5)))
    five = _state(snaps[5])
    assert any(not np.array_equal(five[n], short[n]) for n in five)
    two = _state(snaps[2])
    assert any(not np.array_equal(two[n], five[n]) for n in five)
    with pytest.raises(InvalidInputError, match="at"):
        finetune_snapshots(base, MEMBERS, recipe, [8])
    with pytest.raises(InvalidInputError, match="stop_after"):
        dataclasses.replace(recipe, stop_after=8)


def test_lora_merged_equals_unmerged_forward(base: CausalLM) -> None:
    import copy

    model = copy.deepcopy(base.model)
    blocks = ("attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj")
    assert sorted(lora_targets(model)) == sorted(
        f"transformer.h.{i}.{m}" for i in range(2) for m in blocks
    )
    gen = torch.Generator().manual_seed(0)
    params = apply_lora(model, 4, 8.0, gen)
    assert len(params) == 16 and all(p.requires_grad for p in params)
    assert not any(p.requires_grad for n, p in model.named_parameters() if "lora" not in n)
    with torch.no_grad():
        for p in params[1::2]:  # B starts at zero: give it values so the update matters
            p.normal_(0, 0.5, generator=gen)
    ids = torch.tensor([base.tokenize(MEMBERS[:1])[0]])
    with torch.no_grad():
        unmerged = model(input_ids=ids).logits
        plain = base.model(input_ids=ids).logits
        merged = merge_lora(model)(input_ids=ids).logits
    assert not torch.allclose(unmerged, plain, atol=1e-3)
    torch.testing.assert_close(merged, unmerged, atol=1e-5, rtol=1e-5)
    assert sorted(lora_targets(model)) == sorted(lora_targets(base.model))  # bases back in place
    assert all(p.requires_grad for p in model.parameters())


def test_lora_finetune_lowers_member_loss(base: CausalLM) -> None:
    """Only the adapters train (embeddings and head frozen), so a random base moves less."""
    recipe = FineTuneRecipe(**{**FAST.settings(), "lora_rank": 8, "learning_rate": 1e-2})
    tuned = finetune(base, MEMBERS, recipe)
    assert np.all(mean_nll(tuned.token_stats(MEMBERS)) < mean_nll(base.token_stats(MEMBERS)) - 0.2)


def test_recipe_and_input_validation(base: CausalLM) -> None:
    with pytest.raises(InvalidInputError, match="warmup_steps"):
        FineTuneRecipe(steps=5, warmup_steps=6)
    with pytest.raises(InvalidInputError, match="learning_rate"):
        FineTuneRecipe(learning_rate=0.0)
    with pytest.raises(InvalidInputError, match="lora_rank"):
        FineTuneRecipe(lora_rank=0)
    with pytest.raises(InvalidInputError, match="max_length"):
        finetune(base, MEMBERS, FineTuneRecipe(max_length=65))
    with pytest.raises(InsufficientDataError, match="2 tokens"):
        finetune(base, ["a", ""], FAST)
    r = FineTuneRecipe(steps=100, warmup_steps=10, learning_rate=1.0)
    got = [r.learning_rate_at(s) for s in (0, 9, 10, 99)]
    assert got == pytest.approx([0.1, 1.0, 1.0, 0.1])


@pytest.mark.parametrize("recipe", ["x", None, {"steps": 5}])
def test_finetune_checks_the_recipe_type_first(base: CausalLM, recipe: object) -> None:
    """The type is checked before any field is read (not an AttributeError on
    ``recipe.trained_steps``): the same error as finetune_snapshots."""
    with pytest.raises(InvalidInputError, match="recipe: expected a FineTuneRecipe"):
        finetune(base, MEMBERS, recipe)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="recipe: expected a FineTuneRecipe"):
        finetune_snapshots(base, MEMBERS, recipe, [1])  # type: ignore[arg-type]
