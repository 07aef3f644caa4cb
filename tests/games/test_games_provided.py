"""A target trained outside privaudit, with the auditor's split (games/provided.py)."""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from privaudit.data import load_digits
from privaudit.errors import InvalidInputError
from privaudit.membership.experiment import ExperimentConfig, run_experiment
from privaudit.models import PrecomputedModel, SklearnTrainer
from privaudit.models.provided import (
    ProvidedTarget,
    RecipeMismatchWarning,
    membership_from_column,
    read_id_file,
)


@pytest.fixture(scope="module")
def setup():  # type: ignore[no-untyped-def]
    ds = load_digits()
    rng = np.random.default_rng(0)
    perm = rng.permutation(ds.n_records)
    members, non_members, pop = perm[:80], perm[80:160], perm[160:400]
    trainer = SklearnTrainer(LogisticRegression(C=100.0, max_iter=200), n_classes=10)
    target = trainer.fit(ds.X[members], ds.y[members], seed=11)
    return (
        ds,
        trainer,
        target,
        ds.record_ids[members],
        ds.record_ids[non_members],
        ds.record_ids[pop],
    )


def _cfg(**kw: object) -> ExperimentConfig:
    base: dict[str, object] = {
        "attacks": ("loss", "reference", "lira-online", "rmia-offline"),
        "n_target_pool": 160,
        "n_population": 240,
        "n_reference": 4,
        "alpha": 0.1,
        "seed": 5,
    }
    base.update(kw)
    return ExperimentConfig(**base)  # type: ignore[arg-type]


def test_provided_split_is_used_as_given(setup) -> None:  # type: ignore[no-untyped-def]
    ds, trainer, target, m, n, p = setup
    prov = ProvidedTarget(target, m, n, p, fingerprint="t1")
    res = run_experiment(ds, trainer, _cfg(), provided=prov, progress=False)
    assert res.target_origin == "provided"
    assert set(res.record_ids[res.membership].tolist()) == set(m.tolist())
    assert set(res.record_ids[~res.membership].tolist()) == set(n.tolist())
    assert set(res.population_ids.tolist()) == set(p.tolist())
    assert res.models_trained["target"] == 0
    # the target was not retrained: its accuracy on its members is the given model's
    acc = np.mean(target.logits(ds.subset(m).X).argmax(1) == ds.subset(m).y)
    assert res.train_accuracy == pytest.approx(acc)
    # a leaky target (C=100 logistic regression on 80 digits) is detected
    assert res.recipe_check is not None and res.recipe_check["ok"] is True
    from privaudit.metrics.roc import auc

    assert auc(res.scores["lira-online"].scores, res.membership) > 0.6


def test_references_on_population_are_out_for_every_audited_record(setup) -> None:  # type: ignore[no-untyped-def]
    ds, trainer, target, m, n, p = setup
    prov = ProvidedTarget(target, m, n, p, references="population", fingerprint="t1")
    res = run_experiment(
        ds,
        trainer,
        # RMIA's a cannot be tuned without IN reference models: fixed (Zarifzadeh et al.)
        _cfg(attacks=("reference", "rmia-offline"), attack_params={"rmia-offline": {"a": 0.3}}),
        provided=prov,
        progress=False,
    )
    refs = [r for r in res.membership_matrix.model_ids if r != "target"]
    assert not any(res.membership_matrix.row(r).any() for r in refs)
    # half the population is set aside for the references; the rest stays population
    assert res.population_ids.size == p.size - max(p.size // 2, m.size)


def test_recipe_mismatch_warns_with_both_figures(setup) -> None:  # type: ignore[no-untyped-def]
    ds, _, target, m, n, p = setup
    weak = SklearnTrainer(LogisticRegression(C=1e-4, max_iter=50), n_classes=10)
    prov = ProvidedTarget(target, m, n, p, fingerprint="t1", accuracy_tolerance=0.05)
    with pytest.warns(RecipeMismatchWarning, match=r"reaches 0\.\d+ .* the target 0\.\d+"):
        res = run_experiment(ds, weak, _cfg(attacks=("loss",)), provided=prov, progress=False)
    assert res.recipe_check is not None and res.recipe_check["ok"] is False


def test_precomputed_target_by_record_id(setup) -> None:  # type: ignore[no-untyped-def]
    ds, trainer, target, m, n, p = setup
    audited = np.concatenate([m, n])
    pm = PrecomputedModel(audited, logits=target.logits(ds.subset(audited).X))
    prov = ProvidedTarget(pm, m, n, p, fingerprint="pm")
    with warnings.catch_warnings():
        warnings.simplefilter("error", RecipeMismatchWarning)
        res = run_experiment(ds, trainer, _cfg(attacks=("loss",)), provided=prov, progress=False)
    direct = run_experiment(
        ds,
        trainer,
        _cfg(attacks=("loss",)),
        provided=dataclasses.replace(prov, model=target),
        progress=False,
    )
    np.testing.assert_allclose(res.scores["loss"].scores, direct.scores["loss"].scores)
    losses = PrecomputedModel(
        audited, losses=pm.losses_for(audited, ds.subset(audited).y), n_classes=10
    )
    res2 = run_experiment(
        ds,
        trainer,
        _cfg(attacks=("loss",)),
        provided=dataclasses.replace(prov, model=losses),
        progress=False,
    )
    assert np.isnan(res2.test_accuracy) and res2.recipe_check is not None
    assert res2.recipe_check["ok"] is None


def test_bad_splits_are_named(setup, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _ds, _trainer, target, m, n, p = setup
    with pytest.raises(InvalidInputError, match="disjoint"):
        ProvidedTarget(target, m, np.concatenate([n, m[:1]]))
    with pytest.raises(InvalidInputError, match="population_ids"):
        ProvidedTarget(target, m, n, np.concatenate([p, n[:1]]))
    with pytest.raises(InvalidInputError, match="references"):
        ProvidedTarget(target, m, n, references="shadow")
    f = tmp_path / "ids.txt"
    f.write_text("# members\n3\n\n5  # five\n")
    assert read_id_file(f, "members").tolist() == [3, 5]
    mem, non = membership_from_column(
        np.array([1, 0, None, "true", "no"], dtype=object), np.array(["a", "b", "c", "d", "e"])
    )
    assert mem.tolist() == ["a", "d"] and non.tolist() == ["b", "e"]
