"""The PyTorch trainer behind the Trainer / Model protocols (models/torch_models.py)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from privaudit.errors import InvalidInputError
from privaudit.models import Model, Trainer
from privaudit.models.torch_models import (
    TorchRecipe,
    TorchTrainer,
    batch_order,
    load_torch_model,
    save_torch_model,
    shift_images,
)

FACTORY = str(Path(__file__).with_name("torch_factories.py")) + ":mlp"


def _data(n: int = 120, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = (X[:, 0] > 0).astype(np.int64) + (X[:, 1] > 1).astype(np.int64)
    return X, y


def _recipe(**kw: object) -> TorchRecipe:
    base: dict[str, object] = {"factory": FACTORY, "epochs": 5, "batch_size": 16, "lr": 0.01}
    base.update(kw)
    return TorchRecipe(**base)  # type: ignore[arg-type]


def test_recipe_validates_without_training() -> None:
    with pytest.raises(InvalidInputError, match="optimizer"):
        _recipe(optimizer="lbfgs")
    with pytest.raises(InvalidInputError, match="input_shape"):
        _recipe(augmentation="shift")
    with pytest.raises(InvalidInputError, match="factory"):
        TorchRecipe(factory="no_colon")
    assert "base_dir" not in _recipe().settings()


def test_batch_order_covers_every_record_each_epoch() -> None:
    batches = batch_order(10, 4, 3, np.random.default_rng(0))
    assert [b.size for b in batches] == [4, 4, 2] * 3
    for e in range(3):
        assert sorted(np.concatenate(batches[3 * e : 3 * e + 3]).tolist()) == list(range(10))


def test_shift_images_moves_pixels_and_zero_fills() -> None:
    img = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    out = shift_images(img, np.array([[1, -1]]))
    assert out[0, 0, 0].tolist() == [0, 0, 0, 0]  # a zero row shifted in at the top
    assert out[0, 0, 1].tolist() == [1, 2, 3, 0]  # row 0 moved down one, left one


def test_fit_is_a_trainer_and_reproducible_on_cpu() -> None:
    pytest.importorskip("torch")
    X, y = _data()
    tr = TorchTrainer(_recipe(device="cpu"), n_classes=3)
    assert isinstance(tr, Trainer)
    m1 = tr.fit(X, y, seed=7)
    m2 = tr.fit(X, y, seed=7)
    m3 = tr.fit(X, y, seed=8)
    assert isinstance(m1, Model)
    z1, z2, z3 = m1.logits(X), m2.logits(X), m3.logits(X)
    assert z1.shape == (120, 3) and z1.dtype == np.float64
    np.testing.assert_array_equal(z1, z2)  # same seed: bit for bit
    assert not np.allclose(z1, z3)
    acc = np.mean(z1.argmax(1) == y)
    assert acc > 0.7  # it learned something


def test_sample_weights_change_the_fit() -> None:
    pytest.importorskip("torch")
    X, y = _data()
    tr = TorchTrainer(_recipe(device="cpu"), n_classes=3)
    w = np.where(y == 0, 5.0, 0.1)
    z_w = tr.fit(X, y, seed=1, sample_weight=w).logits(X)
    z = tr.fit(X, y, seed=1).logits(X)
    assert np.mean(z_w.argmax(1) == 0) > np.mean(z.argmax(1) == 0)


def test_safetensors_roundtrip_and_pt_state_dict(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    X, y = _data()
    rec = _recipe(device="cpu")
    m = TorchTrainer(rec, n_classes=3).fit(X, y, seed=3)
    p = save_torch_model(m, tmp_path / "m.safetensors")
    back = load_torch_model(p, rec)
    assert back.n_classes == 3
    np.testing.assert_array_equal(back.logits(X), m.logits(X))
    torch.save(m.module.state_dict(), tmp_path / "m.pt")
    np.testing.assert_array_equal(load_torch_model(tmp_path / "m.pt", rec).logits(X), m.logits(X))
    # a pickle of a whole module is refused by weights_only loading
    torch.save(m.module, tmp_path / "whole.pt")
    with pytest.raises(InvalidInputError, match="weights_only"):
        load_torch_model(tmp_path / "whole.pt", rec)
    # weights of another architecture: named clearly
    other = _recipe(factory_kwargs={"hidden": 5})
    with pytest.raises(InvalidInputError, match="state dict matching"):
        load_torch_model(p, other)


def test_factory_errors_are_clear() -> None:
    pytest.importorskip("torch")
    bad = _recipe(factory=FACTORY.replace(":mlp", ":not_a_module"))
    with pytest.raises(InvalidInputError, match=r"torch\.nn\.Module"):
        TorchTrainer(bad).fit(*_data(), seed=0)
    with pytest.raises(InvalidInputError, match="importable module"):
        _recipe(factory="no_such_module_xyz:f").build()


def test_augmented_training_runs_on_images() -> None:
    pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    X = rng.random((40, 16))
    y = rng.integers(0, 2, 40)
    rec = _recipe(
        factory_kwargs={"n_features": 16, "n_classes": 2},
        augmentation="flip-shift",
        input_shape=(1, 4, 4),
        max_shift=1,
        device="cpu",
    )
    m1 = TorchTrainer(rec).fit(X, y, seed=0)
    m2 = TorchTrainer(rec).fit(X, y, seed=0)
    np.testing.assert_array_equal(m1.logits(X), m2.logits(X))


@pytest.mark.parametrize("kernel", ["mlp", "vmap"])
@pytest.mark.parametrize("opt", ["adam", "sgd", "adamw"])
def test_batched_training_equals_one_by_one(opt: str, kernel: str) -> None:
    pytest.importorskip("torch")
    from privaudit.models.torch_batched import fit_many

    X, y = _data(200, seed=1)
    rec = _recipe(
        optimizer=opt, momentum=0.9 if opt == "sgd" else 0.0, weight_decay=0.01, device="cpu"
    )
    tr = TorchTrainer(rec, n_classes=3)
    rng = np.random.default_rng(2)
    # unequal sizes: partial batches and models that stop early (masked updates)
    subsets = [np.sort(rng.choice(200, size=n, replace=False)) for n in (90, 100, 77)]
    seeds = [4, 5, 6]
    batched = fit_many(tr, X, y, subsets, seeds, n_classes=3, kernel=kernel)
    for s, sd, m in zip(subsets, seeds, batched, strict=True):
        one = tr.fit(X[s], y[s], seed=sd, n_classes=3)
        np.testing.assert_allclose(m.logits(X), one.logits(X), atol=1e-5)
        assert m.fit_info["batched"] is True


@pytest.mark.parametrize("sizes", [(64, 64), (64, 50)])
def test_batched_mlp_kernel_on_deeper_networks(sizes: tuple[int, int]) -> None:
    # two hidden layers, equal sizes (the fused optimizer path) and unequal ones
    pytest.importorskip("torch")
    from privaudit.models.torch_batched import fit_many, mlp_layers

    X, y = _data(120, seed=3)
    rec = _recipe(
        factory="privaudit.models.torch_nets:mlp",
        factory_kwargs={"n_features": 4, "n_classes": 3, "hidden": [8, 6]},
        optimizer="adam",
        device="cpu",
    )
    tr = TorchTrainer(rec, n_classes=3)
    assert mlp_layers(rec.build(0)) == [(f"{i}.weight", f"{i}.bias") for i in (0, 2, 4)]
    subsets = [np.arange(sizes[0]), np.arange(120 - sizes[1], 120)]
    fast = fit_many(tr, X, y, subsets, [7, 8], n_classes=3, kernel="mlp")
    for s, sd, m in zip(subsets, [7, 8], fast, strict=True):
        one = tr.fit(X[s], y[s], seed=sd, n_classes=3)
        np.testing.assert_allclose(m.logits(X), one.logits(X), atol=1e-5)


def test_batched_mlp_kernel_splits_models_over_threads() -> None:
    # with 2 torch threads the models are split between 2 Python threads (one torch
    # thread each): the same models as all trained together on one thread
    torch = pytest.importorskip("torch")
    from privaudit.models.torch_batched import fit_many

    X, y = _data(150, seed=4)
    tr = TorchTrainer(_recipe(optimizer="adam", device="cpu"), n_classes=3)
    subsets = [np.arange(k, k + 100) for k in range(0, 50, 10)]
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = fit_many(tr, X, y, subsets, list(range(5)), n_classes=3)
        torch.set_num_threads(2)
        two = fit_many(tr, X, y, subsets, list(range(5)), n_classes=3)
        assert torch.get_num_threads() == 2  # restored
    finally:
        torch.set_num_threads(before)
    for a, b in zip(one, two, strict=True):
        np.testing.assert_allclose(a.logits(X), b.logits(X), atol=1e-6)


def test_batched_mlp_kernel_covers_tanh_networks() -> None:
    # the hand-written kernel takes a tanh MLP too (once the vmap kernel's job)
    pytest.importorskip("torch")
    from privaudit.models.torch_batched import fit_many, mlp_layers

    X, y = _data(60)
    rec = _recipe(factory=FACTORY.replace(":mlp", ":tanh_mlp"), epochs=2, device="cpu")
    tr = TorchTrainer(rec, n_classes=3)
    assert mlp_layers(rec.build(0)) == [("0.weight", "0.bias"), ("2.weight", "2.bias")]
    fast = fit_many(tr, X, y, [np.arange(30), np.arange(30, 60)], [1, 2], kernel="mlp")
    one = tr.fit(X[30:], y[30:], seed=2, n_classes=3)
    np.testing.assert_allclose(fast[1].logits(X), one.logits(X), atol=1e-5)


def test_batched_training_falls_back_for_modules_with_buffers() -> None:
    pytest.importorskip("torch")
    from privaudit.models.torch_batched import fit_many

    X, y = _data(60)
    rec = _recipe(factory=FACTORY.replace(":mlp", ":bn_mlp"), epochs=2, device="cpu")
    tr = TorchTrainer(rec, n_classes=3)
    subsets = [np.arange(0, 40), np.arange(20, 60)]
    ms = fit_many(tr, X, y, subsets, [1, 2], n_classes=3)
    assert all("batched" not in m.fit_info for m in ms)
    np.testing.assert_array_equal(ms[1].logits(X), tr.fit(X[20:60], y[20:60], seed=2).logits(X))


def test_experiment_trains_torch_references_batched_and_caches_them(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from privaudit.data import load_digits
    from privaudit.membership.experiment import ExperimentConfig, run_experiment

    ds = load_digits()
    rec = _recipe(factory_kwargs={"n_features": 64, "hidden": 16, "n_classes": 10}, epochs=3)
    cfg = ExperimentConfig(
        attacks=("loss", "lira-online"),
        n_target_pool=80,
        n_population=40,
        n_reference=4,
        seed=1,
        attack_params={"lira-online": {"variance": "fixed"}},  # no data-tuned setting
    )
    runs = [
        run_experiment(ds, TorchTrainer(rec, n_classes=10, batched=b), cfg, store=tmp_path / str(b))
        for b in (True, False)
    ]
    np.testing.assert_allclose(
        runs[0].scores["lira-online"].scores, runs[1].scores["lira-online"].scores, atol=1e-4
    )
    again = run_experiment(ds, TorchTrainer(rec, n_classes=10), cfg, store=tmp_path / "True")
    assert again.models_trained.get("reference", 0) == 0 and again.models_loaded["reference"] == 4
    np.testing.assert_array_equal(
        again.scores["lira-online"].scores, runs[0].scores["lira-online"].scores
    )


def test_dp_recipe_is_validated() -> None:
    with pytest.raises(InvalidInputError, match="exactly one of noise_multiplier"):
        _recipe(dp={"max_grad_norm": 1.0})
    with pytest.raises(InvalidInputError, match=r"dp\.delta"):
        _recipe(dp={"noise_multiplier": 1.0, "delta": 2})
    with pytest.raises(InvalidInputError, match="augmentation"):
        _recipe(dp={"noise_multiplier": 1.0}, augmentation="shift", input_shape=(1, 2, 2))
    assert _recipe(dp={"noise_multiplier": 1.0}).settings()["dp"]["delta"] == 1e-5


def test_dp_sgd_fit_is_seeded_and_reports_the_accountant_epsilon() -> None:
    pytest.importorskip("torch")
    pytest.importorskip("opacus")
    X, y = _data(200)
    rec = _recipe(
        dp={"target_epsilon": 2.0, "delta": 1e-5}, optimizer="sgd", lr=0.1, epochs=2, device="cpu"
    )
    tr = TorchTrainer(rec, n_classes=3)
    a, b = tr.fit(X, y, seed=3), tr.fit(X, y, seed=3)
    np.testing.assert_array_equal(a.logits(X), b.logits(X))
    eps = a.fit_info["accountant_epsilon"]
    assert 0 < eps <= 2.0 + 1e-6 and a.fit_info["delta"] == 1e-5
    # a fixed noise multiplier: more epochs spend more privacy
    loose = TorchTrainer(
        _recipe(dp={"noise_multiplier": 1.0}, optimizer="sgd", epochs=1, device="cpu")
    )
    more = TorchTrainer(
        _recipe(dp={"noise_multiplier": 1.0}, optimizer="sgd", epochs=3, device="cpu")
    )
    e1 = loose.fit(X, y, seed=0, n_classes=3).fit_info["accountant_epsilon"]
    e3 = more.fit(X, y, seed=0, n_classes=3).fit_info["accountant_epsilon"]
    assert e3 > e1 > 0


def test_batched_adam_without_a_fused_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    # torch builds without the fused CPU Adam kernel: the stacked-tensor formulas instead
    torch = pytest.importorskip("torch")
    from privaudit.models.torch_batched import fit_many

    def missing(*args: object, **kwargs: object) -> None:
        raise NotImplementedError("no fused kernel here")

    X, y = _data(100, seed=5)
    tr = TorchTrainer(_recipe(optimizer="adam", device="cpu"), n_classes=3)
    subsets = [np.arange(0, 64), np.arange(36, 100)]
    monkeypatch.setattr(torch, "_fused_adam_", missing)
    ms = fit_many(tr, X, y, subsets, [3, 4], n_classes=3)
    for s, sd, m in zip(subsets, [3, 4], ms, strict=True):
        one = tr.fit(X[s], y[s], seed=sd, n_classes=3)
        np.testing.assert_allclose(m.logits(X), one.logits(X), atol=1e-5)


def test_target_trains_in_the_batch_of_its_references(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a batching trainer fits the target with its reference models (one computation):
    # the audit's numbers are today's (target trained alone) up to float32 rounding, a
    # run resumed from the store and a run without a store give them bit for bit
    pytest.importorskip("torch")
    from privaudit.data import load_digits
    from privaudit.membership.experiment import (
        ExperimentConfig,
        ExperimentResult,
        run_experiment,
    )
    from privaudit.membership.ye import YeModels

    ds = load_digits()
    rec = _recipe(
        factory_kwargs={"n_features": 64, "hidden": 16, "n_classes": 10}, epochs=3, device="cpu"
    )
    cfg = ExperimentConfig(
        attacks=("lira-offline", "rmia-offline"),
        n_target_pool=80,
        n_population=40,
        n_reference=4,
        seed=1,
        attack_params={"lira-offline": {"variance": "fixed"}},
    )

    def run(store: Path | None) -> ExperimentResult:
        return run_experiment(ds, TorchTrainer(rec, n_classes=10), cfg, store=store)

    joint = run(tmp_path / "joint")
    assert joint.target_info["batched"] is True
    monkeypatch.setattr(YeModels, "cobatch_target", False)
    today = run(tmp_path / "today")
    assert "batched" not in today.target_info
    assert joint.models_trained == today.models_trained
    assert today.target_signals is not None
    for name, sig in today.target_signals.items():
        assert joint.target_signals is not None
        np.testing.assert_allclose(joint.target_signals[name], sig, rtol=1e-4, atol=1e-5)
    for a in cfg.attacks:
        # the reference models too differ in the last bits (another batch composition)
        np.testing.assert_allclose(
            joint.scores[a].scores, today.scores[a].scores, rtol=1e-4, atol=1e-5
        )
    monkeypatch.setattr(YeModels, "cobatch_target", True)
    again = run(tmp_path / "joint")
    assert again.models_trained.get("target", 0) == 0
    assert again.models_trained.get("reference", 0) == 0
    without_store = run(None)
    # a new target with the same reference models (a game trial that keeps the
    # attacker's seed): the stored references are used, the target trains alone
    other = run_experiment(
        ds,
        TorchTrainer(rec, n_classes=10),
        replace(cfg, target_seed=12345),
        store=tmp_path / "joint",
    )
    assert other.models_trained.get("target") == 1
    assert other.models_trained.get("reference", 0) == 0
    assert "batched" not in other.target_info
    for a in cfg.attacks:
        np.testing.assert_array_equal(again.scores[a].scores, joint.scores[a].scores)
        np.testing.assert_array_equal(without_store.scores[a].scores, joint.scores[a].scores)


def test_lr_schedules_follow_their_formulas() -> None:
    from privaudit.models.torch_recipe import lr_at

    const, cos, cycle = (
        _recipe(lr=0.1, lr_schedule=s) for s in ("constant", "cosine", "one-cycle")
    )
    T = 100
    assert [lr_at(const, t, T) for t in (0, 50, 99)] == [0.1, 0.1, 0.1]
    assert lr_at(cos, 0, T) == pytest.approx(0.1)
    assert lr_at(cos, 50, T) == pytest.approx(0.05)
    assert lr_at(cos, 99, T) == pytest.approx(0.1 * 0.5 * (1 + np.cos(np.pi * 0.99)))
    # one-cycle: linear warm-up over the first 15 steps to the peak, then the cosine decay
    assert [lr_at(cycle, t, T) for t in (0, 7, 14)] == pytest.approx([0.1 / 15, 0.8 / 15, 0.1])
    assert lr_at(cycle, 15, T) == pytest.approx(0.1)
    assert lr_at(cycle, 15 + 85 // 2, T) < lr_at(cycle, 15, T) / 1.9
    with pytest.raises(InvalidInputError, match="lr_schedule"):
        _recipe(lr_schedule="step")
    # the cache key of a constant-rate recipe is the one it had before the field existed
    assert "lr_schedule" not in const.settings()
    assert cos.settings()["lr_schedule"] == "cosine"


def test_scheduled_training_differs_and_is_reproducible() -> None:
    pytest.importorskip("torch")
    X, y = _data()
    fits = {
        s: TorchTrainer(_recipe(lr_schedule=s, lr=0.05), n_classes=3).fit(X, y, seed=1)
        for s in ("constant", "one-cycle")
    }
    again = TorchTrainer(_recipe(lr_schedule="one-cycle", lr=0.05), n_classes=3).fit(X, y, seed=1)
    np.testing.assert_array_equal(fits["one-cycle"].logits(X), again.logits(X))
    assert not np.allclose(fits["constant"].logits(X), fits["one-cycle"].logits(X))


@pytest.mark.parametrize("opt", ["sgd", "adam", "adamw"])
def test_stacked_training_follows_each_models_schedule(opt: str) -> None:
    # models of different training-set sizes take different numbers of steps: each one
    # follows the schedule over its own run, as its one-by-one fit does
    pytest.importorskip("torch")
    from privaudit.models.torch_batched import fit_many

    X, y = _data()
    recipe = _recipe(lr_schedule="one-cycle", lr=0.05, optimizer=opt, momentum=0.5 * (opt == "sgd"))
    trainer = TorchTrainer(recipe, n_classes=3)
    subsets = [np.arange(0, 80), np.arange(30, 120), np.arange(0, 120)]
    many = fit_many(trainer, X, y, subsets, [1, 2, 3], n_classes=3, kernel="vmap")
    for s, seed, model in zip(subsets, [1, 2, 3], many, strict=True):
        one = trainer.fit(X[s], y[s], seed=seed, n_classes=3)
        np.testing.assert_allclose(model.logits(X), one.logits(X), rtol=0, atol=1e-4)
    # the same models at a constant rate are other models
    flat = fit_many(
        TorchTrainer(_recipe(lr=0.05, optimizer=opt), n_classes=3),
        X,
        y,
        subsets[:1],
        [1],
        n_classes=3,
    )[0]
    assert not np.allclose(flat.logits(X), many[0].logits(X), atol=1e-3)
    with pytest.raises(InvalidInputError, match="constant"):
        fit_many(trainer, X, y, subsets, [1, 2, 3], n_classes=3, kernel="mlp")
