"""PANORAMIA's image modality on standardised colour images (CIFAR-10), and the tiny
version of ``benchmarks/_panoramia_cifar10.py`` (issue 31, item 4)."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import numpy as np
import pytest

from privaudit.data import CIFAR10_SHAPE, load_cifar10
from privaudit.data.dataset import Dataset
from privaudit.errors import InvalidInputError

torch = pytest.importorskip("torch")

from privaudit.models.image_vae import (  # noqa: E402
    fit_conditional_vae,
    load_conditional_vae,
)
from privaudit.models.torch_models import TorchRecipe  # noqa: E402
from privaudit.panoramia.image import (  # noqa: E402
    ChannelStandardization,
    ImageModality,
)

TINY_VAE = {"epochs": 1, "channels": 4, "hidden": 32, "latent_dim": 4}


@pytest.fixture(scope="module")
def cifar() -> Dataset:
    ds = load_cifar10()
    return ds.subset(ds.record_ids[:200])


def _recipe() -> TorchRecipe:
    return TorchRecipe(
        "privaudit.models.torch_nets:cifar10_cnn",
        {"n_classes": 10, "channels": 4, "image_shape": list(CIFAR10_SHAPE)},
        epochs=1,
        input_shape=CIFAR10_SHAPE,
        device="cpu",
    )


def test_channel_standardization_round_trip_and_checks(cifar):
    std = ChannelStandardization.from_info(cifar.info)
    assert std is not None and len(std.mean) == 3
    unit = std.to_unit(cifar.X)
    # the bundled pixels are k / 255 exactly: the inverse recovers them
    np.testing.assert_allclose(unit * 255, np.round(unit * 255), atol=1e-6)
    assert unit.min() >= 0 and unit.max() <= 1
    np.testing.assert_allclose(std.from_unit(unit), cifar.X, atol=1e-9)
    # channel c is the c-th block of 1,024 columns (CHW)
    red = cifar.X[:, :1024] * std.std[0] + std.mean[0]
    np.testing.assert_allclose(unit[:, :1024], red, atol=1e-12)
    assert ChannelStandardization.from_info({}) is None
    with pytest.raises(InvalidInputError, match="channel_std"):
        ChannelStandardization.from_info({"channel_mean": [0.5]})
    with pytest.raises(InvalidInputError, match="positive"):
        ChannelStandardization((0.5, 0.5), (0.2, 0.0))
    with pytest.raises(InvalidInputError, match="as many means"):
        ChannelStandardization((0.5, 0.5), (0.2,))
    with pytest.raises(InvalidInputError, match="3 channels"):
        ImageModality(_recipe(), input_shape=CIFAR10_SHAPE, standardization=([0.5], [0.2]))


def test_vae_matches_each_colour_channel_and_saves_its_maps(tmp_path):
    rng = np.random.default_rng(0)
    n, shape = 64, (3, 8, 8)
    # three channels with different intensity histograms
    X = np.concatenate(
        [rng.beta(a, b, size=(n, 64)) for a, b in ((0.5, 0.5), (5.0, 1.0), (1.0, 8.0))], axis=1
    )
    y = rng.integers(0, 2, size=n)
    vae = fit_conditional_vae(X, y, seed=0, input_shape=shape, n_classes=2, settings=TINY_VAE)
    assert vae.pixel_map is not None and vae.pixel_map[0].shape == (3, 1001)
    S, _ = vae.sample(400, seed=1)
    for c in range(3):
        real, gen = X[:, 64 * c : 64 * (c + 1)], S[:, 64 * c : 64 * (c + 1)]
        # each channel has its own histogram: medians within 0.1 of the real channel's
        assert abs(np.median(gen) - np.median(real)) < 0.1, c
    # a pooled map would give all three channels one histogram: their medians differ
    med = [np.median(S[:, 64 * c : 64 * (c + 1)]) for c in range(3)]
    assert med[1] - med[2] > 0.5
    again = load_conditional_vae(vae.save(tmp_path / "vae.safetensors"))
    np.testing.assert_array_equal(again.pixel_map[0], vae.pixel_map[0])
    np.testing.assert_array_equal(again.sample(5, seed=3)[0], vae.sample(5, seed=3)[0])
    with pytest.raises(InvalidInputError, match="pixel_map"):
        type(vae)(
            vae.module, input_shape=shape, n_classes=2, class_counts=[1, 1],
            vae_settings=vae.vae_settings, pixel_map=(np.zeros((2, 5)), np.zeros((2, 5))),
        )  # fmt: skip


def test_generator_on_standardised_cifar10_samples_on_the_same_scale(cifar):
    modality = ImageModality(_recipe(), input_shape=CIFAR10_SHAPE, vae=TINY_VAE)
    gen = modality.fit_generator(cifar, seed=0)  # records are not in [0, 1]
    assert cifar.X.min() < 0
    info = gen.info["standardization"]
    assert info == {"mean": cifar.info["channel_mean"], "std": cifar.info["channel_std"]}
    synth = modality.sample(gen, 50, seed=1)
    assert synth.X.shape == (50, 3072) and np.isfinite(synth.X).all()
    std = ChannelStandardization.from_info(synth.info)
    assert std == gen.standardization
    # standardised back: inside the standardised range of [0, 1] intensities, and
    # spread like the real records (matched histograms per channel)
    unit = std.to_unit(synth.X)
    np.testing.assert_allclose(std.from_unit(unit), synth.X, atol=1e-9)
    for c in range(3):
        block = slice(1024 * c, 1024 * (c + 1))
        assert abs(np.median(synth.X[:, block]) - np.median(cifar.X[:, block])) < 0.3
    # without the standardisation the VAE refuses the records (intensities in [0, 1])
    plain = Dataset(cifar.name, cifar.record_ids, cifar.X, cifar.y, cifar.feature_names,
                    cifar.class_names, {})  # fmt: skip
    with pytest.raises(InvalidInputError, match=r"\[0, 1\]"):
        modality.fit_generator(plain, seed=0)
    explicit = ImageModality(
        _recipe(), input_shape=CIFAR10_SHAPE, vae=TINY_VAE,
        standardization=(cifar.info["channel_mean"], cifar.info["channel_std"]),
    )  # fmt: skip
    assert explicit.fit_generator(plain, seed=0).standardization == gen.standardization
    assert explicit.settings()["generator"]["standardization"]["mean"] == list(std.mean)


@pytest.fixture(scope="module")
def bench(repo_module: Callable[..., ModuleType]) -> ModuleType:
    return repo_module("benchmarks/_panoramia_cifar10.py")


def test_tiny_cifar10_bench_rows_keys_dp_accountant_and_cap_diagnostic(bench: ModuleType):
    pytest.importorskip("opacus")
    lines: list[str] = []
    rows = bench.bench_cifar10_targets([0], epochs=(1,), quick=True, log=lines.append)
    assert [tuple(r) for r in rows] == [bench.CIFAR10_KEYS] * 2
    plain, dp = rows
    assert plain["dp_epsilon"] is None and plain["epochs"] == 1
    # the accountant spends the budget asked for (eps = 8 at delta 1e-5), not more
    assert 7.0 < dp["dp_epsilon"] <= 8.0 + 1e-6
    for r in rows:
        assert r["modality"] == "image" and r["seed"] == 0
        assert r["eps_tilde"] == pytest.approx(max(0.0, r["c_plus_eps_lb"] - r["c_lb"]))
        assert r["eps_rmrn"] is not None and r["eps_o1"] is not None
    assert len(lines) == 2 + 3  # a line per target, one per group, the verdict
    assert "accountant eps" in lines[1] and "cap" in lines[0] and "c_lb / cap" in lines[0]
    assert lines[-1].startswith("generator diagnostic: at the cap on")


def test_cap_diagnostic_counts_targets_at_the_cap(bench: ModuleType):
    rows = [
        {"epochs": 3, "dp_epsilon": None, "c_lb": 2.0},
        {"epochs": 3, "dp_epsilon": None, "c_lb": 1.0},
        {"epochs": 5, "dp_epsilon": 8.0, "c_lb": 1.95},
    ]
    diag = [{"cap": 2.0, "auc_baseline": 1.0, "auc_mia": 1.0}] * 3
    lines = bench.cap_diagnostic(rows, diag)
    assert "non-private 3 epochs, 2 targets" in lines[0] and "at the cap" in lines[0]
    assert lines[0].endswith("on 1") and lines[1].endswith("on 1")
    assert "below the cap on 1 of 3" in lines[-1]
    lines = bench.cap_diagnostic(rows[:1], diag[:1])
    assert "told apart" in lines[-1]


@pytest.mark.slow
def test_privaudit_panoramia_on_a_cifar10_cnn(tmp_path, capsys):
    """``privaudit panoramia`` with ``dataset: cifar10``: the standardised records reach the
    VAE as intensities (the fit would refuse them otherwise) and verify recomputes."""
    import yaml

    from privaudit.cli import main
    from privaudit.models.torch_models import TorchTrainer, save_torch_model
    from privaudit.report import load_results

    params = {
        "factory": "privaudit.models.torch_nets:cifar10_cnn",
        "factory_kwargs": {"n_classes": 10, "channels": 4, "image_shape": [3, 32, 32]},
        "epochs": 1,
        "input_shape": [3, 32, 32],
        "device": "cpu",
    }
    data = load_cifar10()
    train = data.subset(data.record_ids[:240])
    target = TorchTrainer(TorchRecipe(**{**params, "input_shape": CIFAR10_SHAPE}), n_classes=10)
    save_torch_model(target.fit(train.X, train.y, seed=0), tmp_path / "cnn.safetensors")
    (tmp_path / "members.txt").write_text("\n".join(train.record_ids) + "\n")
    cfg = {
        "modality": "image",
        "target": {"kind": "torch", "path": "cnn.safetensors"},
        "model": {"kind": "torch", "params": params},
        "data": {"dataset": "cifar10", "members": "members.txt"},
        "generator": {"vae": TINY_VAE},
        "scorer": {"epochs": 2, "channels": 4, "hidden": 16, "loss_hidden": 8, "patience": None},
        "output_dir": "rep",
    }
    (tmp_path / "c10.yaml").write_text(yaml.safe_dump(cfg))
    assert main(["panoramia", str(tmp_path / "c10.yaml"), "--no-progress"]) == 0
    assert "PANORAMIA (image)" in capsys.readouterr().out
    pano = load_results(tmp_path / "rep")["panoramia"]
    assert pano["sizes"]["n_known_members"] == 240 and pano["sizes"]["n_generator_train"] == 120
    assert pano["generator"]["standardization"]["mean"] == data.info["channel_mean"]
    assert main(["verify", str(tmp_path / "rep")]) == 0
