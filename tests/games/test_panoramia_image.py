"""PANORAMIA's image modality (games/panoramia_image.py) on a few hundred MNIST images."""

from __future__ import annotations

import numpy as np
import pytest

from privaudit.data import MNIST_SHAPE, load_mnist
from privaudit.data.dataset import Dataset
from privaudit.errors import InvalidInputError

torch = pytest.importorskip("torch")

from privaudit.models.torch_models import TorchModel, TorchRecipe  # noqa: E402
from privaudit.panoramia.image import (  # noqa: E402
    ImageGenerator,
    ImageModality,
    ImageScorer,
    image_loss_features,
)

TINY_VAE = {"epochs": 1, "channels": 4, "hidden": 32, "latent_dim": 4}
TINY_SCORER = {"epochs": 3, "channels": 4, "hidden": 16, "loss_hidden": 8, "patience": None}


def _recipe(epochs: int = 1) -> TorchRecipe:
    return TorchRecipe(
        "privaudit.models.torch_nets:small_cnn",
        {"n_classes": 10, "channels": 4, "image_shape": list(MNIST_SHAPE)},
        epochs=epochs,
        lr=3e-3,
        device="cpu",
    )


@pytest.fixture(scope="module")
def mnist() -> Dataset:
    ds = load_mnist()
    return ds.subset(ds.record_ids[:400])


@pytest.fixture(scope="module")
def modality() -> ImageModality:
    return ImageModality(_recipe(), vae=TINY_VAE, scorer=TINY_SCORER)


@pytest.fixture(scope="module")
def generator(modality, mnist) -> ImageGenerator:
    return modality.fit_generator(modality.take(mnist, modality.ids(mnist)[:200]), seed=1)


def test_records_ids_take_concat(modality, mnist):
    ids = modality.ids(mnist)
    assert ids[:2] == ("mnist-00000", "mnist-00001")
    part = modality.take(mnist, [ids[5], ids[2]])
    assert modality.ids(part) == (ids[5], ids[2])
    np.testing.assert_array_equal(part.X[0], mnist.X[5])
    both = modality.concat(part, modality.take(mnist, [ids[7]]))
    assert modality.ids(both) == (ids[5], ids[2], ids[7])
    with pytest.raises(InvalidInputError, match="ids"):
        modality.take(mnist, ["nope"])
    with pytest.raises(InvalidInputError, match="record_ids"):
        modality.concat(part, part)


def test_generator_samples_labelled_synthetic_records(modality, generator, mnist):
    synth = modality.sample(generator, 30, seed=2)
    assert modality.ids(synth)[:2] == ("synth-000000", "synth-000001")
    assert len(set(modality.ids(synth))) == 30
    assert not set(modality.ids(synth)) & set(modality.ids(mnist))
    assert synth.X.shape == (30, 784) and synth.X.min() >= 0 and synth.X.max() <= 1
    assert synth.feature_names == mnist.feature_names and synth.class_names == mnist.class_names
    again = modality.sample(generator, 30, seed=2)
    np.testing.assert_array_equal(again.X, synth.X)
    np.testing.assert_array_equal(again.y, synth.y)
    assert generator.info["fit"]["n_train"] == 200
    # the generator was fitted on D_G only: its class proportions are those of the 200
    props = np.bincount(mnist.y[:200], minlength=10) / 200
    np.testing.assert_allclose(generator.info["class_proportions"], props)


def test_helper_and_loss_features(modality, generator):
    synth = modality.sample(generator, 120, seed=3)
    helper = modality.fit_helper(synth, seed=0)
    assert isinstance(helper, TorchModel)
    assert helper.fit_info["n_train"] == 120 and helper.fit_info["epochs"] == 1
    L = modality.loss_features(helper, synth)
    assert L.shape == (120, 2) and np.isfinite(L).all()
    # column 0 is the cross-entropy, column 1 the logit of p(true class): ce = log1p(e^-phi)
    np.testing.assert_allclose(L[:, 0], np.logaddexp(0.0, -L[:, 1]), rtol=1e-10, atol=1e-12)
    z = helper.logits(synth.X)
    ce = -(z[np.arange(120), synth.y] - np.log(np.exp(z).sum(axis=1)))
    np.testing.assert_allclose(L[:, 0], ce, rtol=1e-8, atol=1e-10)
    with pytest.raises(InvalidInputError, match="model"):
        image_loss_features(object(), synth)


class _Data:
    def __init__(self, records, loss, label):
        self.records, self.loss, self.label = records, loss, label


def test_scorer_learns_from_loss_and_restores_best_epoch(modality, mnist):
    rng = np.random.default_rng(0)
    label = rng.random(mnist.n_records) < 0.5
    # a loss feature that carries membership: members have low loss
    loss = np.column_stack([np.where(label, 0.1, 1.0) + 0.3 * rng.standard_normal(label.size)])
    loss = np.column_stack([loss, -loss[:, 0]])
    ids = np.array(modality.ids(mnist))
    tr, va = slice(0, 300), slice(300, 400)
    train = _Data(modality.take(mnist, ids[tr]), loss[tr], label[tr])
    val = _Data(modality.take(mnist, ids[va]), loss[va], label[va])
    calls: list[float] = []

    def criterion(scores, lab):
        s = np.asarray(scores)
        auc = float((s[lab][:, None] > s[~lab][None, :]).mean())
        calls.append(auc)
        return auc

    fast = ImageModality(_recipe(), scorer={**TINY_SCORER, "lr": 1e-2, "batch_size": 32})
    scorer = fast.fit_scorer(train, val, seed=0, criterion=criterion)
    assert isinstance(scorer, ImageScorer)
    info = scorer.info
    assert info["loss_features"] == ["cross_entropy", "logit_confidence"]
    by_epoch = info["criterion_by_epoch"]  # epoch 0 (untrained) first
    assert len(by_epoch) == info["epochs_run"] + 1 == 4
    assert by_epoch[info["best_epoch"]] == max(by_epoch)
    s = scorer.score(val.records, val.loss)
    assert s.shape == (100,) and s.dtype == np.float64 and np.unique(s).size > 2
    assert criterion(s, label[va]) == pytest.approx(max(by_epoch), abs=1e-6)
    assert max(by_epoch) > 0.8
    with pytest.raises(InvalidInputError, match="loss"):
        scorer.score(val.records, val.loss[:, :1])


def test_inputs_are_validated(modality, mnist):
    with pytest.raises(InvalidInputError, match="recipe"):
        ImageModality("cnn")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="input_shape"):
        ImageModality(_recipe(), input_shape=(1, 30, 30))
    with pytest.raises(InvalidInputError, match="vae: expected keys"):
        ImageModality(_recipe(), vae={"epoch": 2})
    with pytest.raises(InvalidInputError, match="scorer: expected keys"):
        ImageModality(_recipe(), scorer={"layers": 2})
    wrong = Dataset("t", np.array(["a", "b"]), np.zeros((2, 5)), np.array([0, 1]),
                    tuple("abcde"), tuple("0123456789"))  # fmt: skip
    with pytest.raises(InvalidInputError, match="784 pixels"):
        modality.ids(wrong)
    s = modality.settings()
    assert s["modality"] == "image" and s["generator"]["kind"] == "conditional-conv-vae"
    assert s["helper"]["recipe"]["epochs"] == 1


def test_run_panoramia_end_to_end_on_a_small_mnist_cnn(mnist, tmp_path):
    from privaudit.models.torch_models import TorchTrainer
    from privaudit.panoramia.game import run_panoramia
    from privaudit.runtime.store import ArtifactStore

    ids = np.array(mnist.record_ids)
    members, non_members = mnist.subset(ids[:300]), mnist.subset(ids[300:])
    recipe = _recipe(epochs=3)
    target = TorchTrainer(recipe, n_classes=10).fit(members.X, members.y, seed=0, n_classes=10)
    cache: dict = {}
    modality = ImageModality(recipe, vae=TINY_VAE, scorer=TINY_SCORER, generator_cache=cache)
    res = run_panoramia(
        modality, target, members, non_members=non_members, seed=0, store=ArtifactStore(tmp_path)
    )
    d = res.to_dict()
    assert d["modality"] == "image" and d["seed"] == 0
    # resume: a second run on the same store refits nothing and gives the same numbers
    store = ArtifactStore(tmp_path)
    fresh = ImageModality(recipe, vae=TINY_VAE, scorer=TINY_SCORER)
    again = run_panoramia(fresh, target, members, non_members=non_members, seed=0, store=store)
    assert store.stats.created == 0 and store.stats.hits > 0
    assert again.to_dict() == d
    assert np.array_equal(again.scores.scores["panoramia-mia"], res.scores.scores["panoramia-mia"])
    sizes = d["sizes"]
    assert sizes["n_known_members"] == 300 and sizes["n_generator_train"] == 150
    assert sizes["n_synthetic"] == 300 and sizes["n_helper_pool"] == 150
    assert sizes["m"] == sizes["n_test_members"] + sizes["n_test_synthetic"]
    b = d["bounds"]
    assert b["eps_tilde"] == pytest.approx(max(0.0, b["c_plus_eps_lb"] - b["c_lb"]))
    assert b["c_lb"] >= 0 and b["c_plus_eps_lb"] >= 0
    # the generator saw D_G only, the helper the helper pool only
    assert d["generator"]["fit"]["n_train"] == 150
    assert d["helper"]["n_train"] == 150 and d["helper"]["recipe"]["epochs"] == 3
    assert d["split"]["checked"] is True
    for role in ("mia", "baseline"):
        info = d["classifiers"][role]
        assert info["criterion_by_epoch"][info["best_epoch"]] == max(info["criterion_by_epoch"])
    table = res.scores
    test_ids = [str(i) for i in table.record_ids]
    real = set(modality.ids(members))
    assert all(i in real or i.startswith("synth-") for i in test_ids)
    assert {i for i in test_ids if i in real} <= set(res.split.members)
    assert np.unique(table.scores["panoramia-mia"]).size > 2  # continuous scores, not 0/1
    assert len(cache) == 1


@pytest.mark.slow
def test_bench_image_targets_quick_rows_have_exactly_the_issue_keys():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "_panoramia_image.py"
    spec = importlib.util.spec_from_file_location("_panoramia_image_under_test", path)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    lines: list[str] = []
    rows = bench.bench_image_targets([0], epochs=(1, 2), quick=True, log=lines.append)
    assert [tuple(r) for r in rows] == [bench.IMAGE_KEYS] * 2
    assert [r["epochs"] for r in rows] == [1, 2] and len(lines) == 2
    for r in rows:
        assert r["modality"] == "image" and r["dp_epsilon"] is None and r["seed"] == 0
        assert r["eps_tilde"] == pytest.approx(max(0.0, r["c_plus_eps_lb"] - r["c_lb"]))
        assert r["eps_rmrn"] is not None and r["eps_o1"] is not None
