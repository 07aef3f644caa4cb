"""Checks before training (issue 8, items 3, 4 and 6): preflight, suspicious data, the summary."""

from __future__ import annotations

import json
import sys
import types
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml

from privaudit.cli import main
from privaudit.data import table_from_frame
from privaudit.errors import InvalidInputError, PrivauditWarning
from privaudit.membership import inputs, pipeline
from privaudit.membership.cli import render_summary, summary_lines
from privaudit.membership.config import ConfigError, config_from_dict, load_config
from privaudit.membership.preflight import check_executor, check_memory, dry_run_attacks, preflight
from privaudit.runtime.executor import LocalExecutor, RayExecutor

SMALL: dict[str, Any] = {
    "dataset": "digits",
    "model": {"kind": "logistic", "params": {"max_iter": 200}},
    "attacks": ["loss", "population"],
    "sizes": {"n_target_pool": 60, "n_population": 120},
    "alpha": 0.1,
    "n_jobs": 1,
}


def _cfg(tmp_path: Path, **over: Any) -> Any:
    return config_from_dict(
        {**SMALL, "output_dir": str(tmp_path / "report"), **over}, source="test config"
    )


def _prepared(cfg: Any) -> tuple[Any, Any, Any]:
    data = inputs.load_dataset(cfg)
    exp = pipeline.experiment_config(cfg, data.n_records)
    return data, exp, inputs.build_trainer(cfg.model, data.n_classes)


def test_failed_preflight_trains_nothing_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_training(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("run_experiment was called although preflight should fail")

    monkeypatch.setattr(pipeline, "run_experiment", no_training)
    cfg = _cfg(
        tmp_path,
        attacks=["population"],
        attack_params={"population": {"smoothing": "cubic"}},
        cache_dir=str(tmp_path / "cache"),
    )
    with pytest.raises(ConfigError, match=r"attack_params\.population.*smoothing"):
        pipeline.run_audit(cfg, progress=False)
    assert list(tmp_path.iterdir()) == []


def test_preflight_passes_a_good_config_quickly_and_warns_on_small_pool(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path, attacks=None, models={"n_reference": 4, "leave_one_out_sample": 4})
    data, exp, trainer = _prepared(cfg)
    with pytest.warns(PrivauditWarning, match="30 non-members"):
        found = preflight(cfg, data, exp, trainer)
    assert any("too few for any TPR" in w for w in found)
    assert not (tmp_path / "report").exists()


def test_shadow_models_that_would_all_train_on_the_same_records_are_flagged(
    tmp_path: Path,
) -> None:
    """Each shadow model draws the target's 30 members' worth of records from
    max(30, n_population // 2) population records: with 50 of them that is all 30, the
    same for every shadow model, where Ye et al. draw each at random."""
    cfg = _cfg(tmp_path, attacks=["shadow"], sizes={"n_target_pool": 60, "n_population": 50})
    data, exp, trainer = _prepared(cfg)
    with pytest.warns(PrivauditWarning) as caught:  # and the small pool's warning
        found = preflight(cfg, data, exp, trainer)
    assert any("every shadow model trains on the same 30" in str(w.message) for w in caught)
    assert any("at least 120 population records" in w for w in found)
    roomy = _cfg(tmp_path, attacks=["shadow"])  # 120 population records: 60 to draw from
    data, exp, trainer = _prepared(roomy)
    with pytest.warns(PrivauditWarning, match="30 non-members"):  # the small pool's only
        assert not any("same" in w for w in preflight(roomy, data, exp, trainer))


def test_a_leave_one_out_sample_larger_than_the_pool_allows_is_refused(tmp_path: Path) -> None:
    # 30 members and 30 non-members: at most 60 records (30 of each); 61 would need 31
    # members, and the check names the pool
    # (the seed's coins give this 60-record pool exactly 30 members)
    from privaudit.membership.preflight import check_sizes, member_range

    for sample, ok in ((60, True), (61, False)):
        cfg = _cfg(tmp_path, attacks=["leave-one-out"], models={"leave_one_out_sample": sample})
        data, exp, _ = _prepared(cfg)
        members = member_range(cfg, data, exp)
        assert members == (30, 30)
        if ok:
            check_sizes(cfg, exp, members)
            continue
        with pytest.raises(
            ConfigError,
            match=r"leave_one_out_sample: expected at most 60 records \(half members, half "
            r"non-members of a pool with 30 members and 30 non-members\), found 61$",
        ):
            check_sizes(cfg, exp, members)


def test_dry_run_finds_the_attack_with_a_bad_setting(tmp_path: Path) -> None:
    cfg = _cfg(
        tmp_path,
        attacks=["loss", "lira-online", "rmia-online"],
        models={"n_reference": 4},
        attack_params={"rmia-online": {"gamma": -1.0}},
    )
    _, exp, _ = _prepared(cfg)
    with pytest.raises(ConfigError, match=r"attack_params\.rmia-online"):
        dry_run_attacks(exp, 10)


def test_ray_requested_but_missing_or_unreachable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    with pytest.raises(ConfigError, match="executor: expected Ray installed"):
        check_executor(_cfg(tmp_path, executor="ray"))
    monkeypatch.setitem(sys.modules, "ray", types.ModuleType("ray"))
    cfg = _cfg(tmp_path, executor="ray", ray_address="ray://127.0.0.1:1")
    with pytest.raises(ConfigError, match="ray_address: expected a Ray cluster answering"):
        check_executor(cfg, timeout=2.0)
    with pytest.raises(ConfigError, match="ray_address"):
        check_executor(_cfg(tmp_path, executor="ray", ray_address="no-port"))
    check_executor(_cfg(tmp_path, executor="ray"))  # a local Ray instance: nothing to reach


def test_executor_recorded_is_the_one_that_ran(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path, executor="ray")
    ray = RayExecutor(progress=False)
    assert pipeline.executor_settings(cfg, ray)["executor"] == "local"  # no task ran on Ray
    ray.tasks_run = 3
    got = pipeline.executor_settings(cfg, ray)
    assert got["executor"] == "ray" and got["executor_requested"] == "ray"
    local = pipeline.executor_settings(_cfg(tmp_path), LocalExecutor(1))
    assert local["executor"] == "local" and local["threads_per_worker"] >= 1


def test_memory_check_names_models(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path, attacks=["lira-online"], models={"n_reference": 64})
    _, exp, _ = _prepared(cfg)
    check_memory(exp, available=2**34)
    with pytest.raises(ConfigError, match="models: expected numbers of models"):
        check_memory(exp, available=2**16)
    enough_for_one = 3_000_000  # one trial of 65 models needs about 1.44 MB
    check_memory(exp, available=enough_for_one)
    with pytest.raises(ConfigError, match="found 650 models"):  # 10 trials of a game
        check_memory(exp, trials=10, available=enough_for_one)


def test_duplicate_yaml_key_is_an_error(tmp_path: Path) -> None:
    p = tmp_path / "audit.yaml"
    p.write_text("dataset: digits\nmodel:\n  kind: logistic\n  kind: mlp\n")
    with pytest.raises(ConfigError, match="'kind' twice"):
        load_config(p)


def test_relative_paths_resolve_against_the_config_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sub = tmp_path / "project"
    sub.mkdir()
    (sub / "audit.yaml").write_text(
        yaml.safe_dump(
            {
                "dataset": {"path": "data/t.csv", "label_column": "y"},
                "model": {"kind": "logistic"},
                "output_dir": "out",
                "cache_dir": "cache",
            }
        )
    )
    monkeypatch.chdir(tmp_path)
    cfg = load_config(Path("project/audit.yaml"))
    assert cfg.dataset.path == Path("project/data/t.csv")
    assert cfg.output_dir == Path("project/out") and cfg.cache_dir == Path("project/cache")


# ---------------------------------------------------------------------- suspicious data


def _frame(n: int = 200) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({"a": rng.normal(size=n), "y": rng.integers(0, 2, n)})


def test_stray_string_in_numeric_column_is_an_error() -> None:
    df = _frame().astype({"a": object})
    df.loc[3, "a"] = "n/a"
    with pytest.raises(InvalidInputError, match=r"feature column 'a'.*'n/a' in data row 4"):
        table_from_frame(df, "y", name="t")


def test_text_codes_with_few_numbers_stay_categorical_with_a_warning() -> None:
    df = _frame().assign(code=["1", "2", "x", "3"] * 50)
    with pytest.warns(PrivauditWarning, match=r"'code': 150 values are numbers and 50 are not"):
        ds = table_from_frame(df, "y", name="t")
    assert {"code=1", "code=x"} <= set(ds.feature_names)


def test_many_categories_warn() -> None:
    df = _frame().assign(name=[f"person {k}" for k in range(200)])
    with pytest.warns(PrivauditWarning, match="200 distinct text values"):
        table_from_frame(df, "y", name="t")


@pytest.mark.parametrize(
    ("labels", "match"),
    [
        (np.linspace(0, 1, 200), "continuous target"),
        (np.arange(200) % 60, "60 distinct values among 200"),
        (np.array([f"id{k}" for k in range(200)]), "200 distinct values"),
    ],
)
def test_continuous_or_id_like_label_is_an_error(labels: np.ndarray, match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        table_from_frame(_frame().assign(y=labels), "y", name="t")


def test_float_labels_that_are_integers_are_classes() -> None:
    ds = table_from_frame(_frame().assign(y=lambda d: d["y"].astype(float)), "y", name="t")
    assert ds.n_classes == 2


# --------------------------------------------------------------- legitimate odd inputs


def test_constant_and_categorical_columns_still_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = np.random.default_rng(3)
    n = 240
    y = rng.integers(0, 2, n)
    pd.DataFrame(
        {
            "x": rng.normal(size=n) + y,
            "constant": 1.0,
            "constant_text": "same",
            "colour": rng.choice(["r", "g", "b"], n),
            "y": y,
        }
    ).to_csv(tmp_path / "t.csv", index=False)
    (tmp_path / "audit.yaml").write_text(
        yaml.safe_dump(
            {
                **SMALL,
                "dataset": {"path": "t.csv", "label_column": "y", "standardize": True},
                "output_dir": "report",
            }
        )
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivauditWarning)  # the CLI prints them once, itself
        assert main(["run", str(tmp_path / "audit.yaml"), "--no-progress"]) == 0
    results = json.loads((tmp_path / "report" / "results.json").read_text())
    assert results["settings"]["dataset"]["n_features"] == 6
    assert results["settings"]["executor"] == "local"
    assert any("non-members" in w for w in results["settings"]["warnings"])
    out = capsys.readouterr().out
    assert out.count("too few for any TPR") == 1 and "Models: 1 trained" in out


def test_huge_scores_still_audit(tmp_path: Path) -> None:
    m = np.arange(400) % 2 == 0
    pd.DataFrame({"score": np.where(m, 1e300, -1e300), "member": m.astype(int)}).to_csv(
        tmp_path / "s.csv", index=False
    )
    out = tmp_path / "b.json"
    assert main(["audit", str(tmp_path / "s.csv"), "--json", str(out)]) == 0
    assert json.loads(out.read_text())["epsilon_lower_bound"] > 0


def test_zero_run_with_categorical_and_constant_propensity_features(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    n = 240
    mem = np.arange(n) < n // 2
    pd.DataFrame(
        {
            "x": rng.normal(size=n) + 0.5 * mem,
            "cat": rng.choice(["a", "b", "c"], n),
            "flat": 7.0,
            "score": rng.normal(size=n) + mem,
            "member": mem.astype(int),
        }
    ).to_csv(tmp_path / "z.csv", index=False)
    argv = ["zero-run", str(tmp_path / "z.csv"), "--estimators", "logistic-sigmoid"]
    assert main([*argv, "--out", str(tmp_path / "zr")]) == 0


# ------------------------------------------------------------------------------ summary


def _results(**over: Any) -> dict[str, Any]:
    def attack(name: str, n_neg: int, tpr: dict[str, Any], fpr: Any) -> dict[str, Any]:
        return {
            "name": name,
            "auc": 0.61,
            "tpr_at_fpr": tpr,
            "n_positives": n_neg,
            "n_negatives": n_neg,
            "achieved_fpr": fpr,
            "achieved_fpr_ci": None if fpr is None else [0.031, 0.072],
            "alpha_within_error": True,
            "n_reference_models": 16,
        }

    res: dict[str, Any] = {
        "target": {
            "train_accuracy": 0.99,
            "test_accuracy": 0.81,
            "n_members": 1200,
            "n_non_members": 1200,
        },
        "settings": {
            "alpha": 0.05,
            "model": {"kind": "gradient_boosting"},
            "dataset": {"path": "/some/long/folder/with/a/table_name.csv"},
            "models_trained": {"target": 0, "reference": 2},
            "models_loaded": {"target": 1, "reference": 14},
            "cache_dir": ".privaudit-cache",
            "executor": "local",
            "warnings": ["sizes.n_target_pool: something suspicious"],
        },
        "attacks": [
            attack("leave-one-out", 5, {"0.001": None, "0.01": None}, 0.0),
            *(
                attack(n, 800, {"0.001": None, "0.01": 0.125}, 0.0475)
                for n in ("reference", "lira-offline", "distillation")
            ),
            attack("rmia-online", 800, {"0.001": None, "0.01": 0.1}, None),
        ],
    }
    res.update(over)
    return res


def test_summary_fits_80_columns_and_explains_n_a(capsys: pytest.CaptureFixture[str]) -> None:
    render_summary(_results(), Path("privaudit-results/demo-20260101-000000"), width=80)
    raw = capsys.readouterr().out
    assert max(len(line) for line in raw.splitlines()) <= 80
    assert "…" not in raw  # no truncated cell
    out = " ".join(raw.split())
    assert "TPR@0.1% n/a: a TPR at 0.1% FPR needs >= 1,000 non-members" in out
    assert "the attacks scored 800 (leave-one-out: 5)" in out
    assert "TPR@1% n/a" in out and "leave-one-out scored 5" in out
    assert "800+800" in out and "5+5" in out  # the records each figure rests on
    assert "2 trained, 15 loaded from the cache at .privaudit-cache" in out
    assert "rmia-online: no threshold" in out
    assert "warning: sizes.n_target_pool" in out


def test_summary_says_when_everything_came_from_the_cache() -> None:
    res = _results()
    res["settings"]["models_trained"] = {"target": 0, "reference": 0}
    _notes, warns = summary_lines(res)
    assert warns == ["sizes.n_target_pool: something suspicious"]
    from privaudit.membership.cli import _models_line

    assert "all 15 models loaded from the cache" in _models_line(res["settings"])


def test_dry_run_checks_distillation_logits_settings_on_soft_label_students(
    tmp_path: Path,
) -> None:
    """The dry trainer cannot regress logits; distillation-logits' settings (D's) are still
    checked, and good ones pass (the demo lists this attack)."""
    good = _cfg(
        tmp_path,
        model={"kind": "mlp", "params": {"hidden_layer_sizes": [8], "max_iter": 20}},
        attacks=["loss", "distillation-logits"],
        attack_params={"distillation-logits": {"smoothing": "linear"}},
    )
    _, exp, _ = _prepared(good)
    dry_run_attacks(exp, 10)
    bad = _cfg(
        tmp_path,
        model={"kind": "mlp", "params": {"hidden_layer_sizes": [8], "max_iter": 20}},
        attacks=["loss", "distillation-logits"],
        attack_params={"distillation-logits": {"smoothing": "kde"}},
    )
    _, exp, _ = _prepared(bad)
    with pytest.raises(ConfigError, match=r"attack_params\.distillation-logits.*smoothing"):
        dry_run_attacks(exp, 10)


def test_augmented_queries_need_an_augmented_image_model(tmp_path: Path) -> None:
    # LiRA's augmented queries: refused before training for a model without image
    # augmentation, and for records that are not images of the recipe's shape
    lira = {"lira-online": {"variance": "fixed", "augmented_queries": True}}
    cfg = _cfg(tmp_path, attacks=["lira-online"], models={"n_reference": 4}, attack_params=lira)
    with pytest.raises(ConfigError, match=r"attack_params\.lira-online\.augmented_queries"):
        pipeline.run_audit(cfg, progress=False)
    assert list(tmp_path.iterdir()) == []
    pytest.importorskip("torch")
    from privaudit.membership.preflight import check_query_views

    recipe = {"factory": "privaudit.models.torch_nets:mlp", "epochs": 1}
    for params, match in (
        (recipe, "without one"),
        ({**recipe, "augmentation": "shift", "input_shape": [1, 4, 4]}, "16 features"),
    ):
        cfg = _cfg(
            tmp_path,
            model={"kind": "torch", "params": params},
            attacks=["lira-online"],
            models={"n_reference": 4},
            attack_params=lira,
        )
        data, exp, trainer = _prepared(cfg)
        with pytest.raises(ConfigError, match=match):
            check_query_views(exp, data, trainer)
    good = {**recipe, "augmentation": "flip-shift", "input_shape": [1, 8, 8], "max_shift": 1}
    cfg = _cfg(
        tmp_path,
        model={"kind": "torch", "params": good},
        attacks=["lira-online", "lira-offline"],
        models={"n_reference": 4},
        attack_params={**lira, "lira-offline": {"augmented_queries": True}},
    )
    data, exp, trainer = _prepared(cfg)
    check_query_views(exp, data, trainer)
    dry_run_attacks(exp, 10)  # the dry run queries views of its own 2 x 2 "images"


def test_summary_names_rmia_score_form(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 28: the terminal summary says RMIA's score is the log likelihood ratio."""
    res = _results()
    (rmia,) = [a for a in res["attacks"] if a["name"] == "rmia-online"]
    rmia["params"] = {"score": "ratio", "score_name": "log likelihood ratio"}
    notes, _ = summary_lines(res)
    (line,) = [n for n in notes if n.startswith("score:")]
    assert "rmia-online = log likelihood ratio" in line and "pairwise-comparison" in line
    render_summary(res, None, width=80)
    raw = capsys.readouterr().out
    assert max(len(x) for x in raw.splitlines()) <= 80


def test_sizes_are_checked_against_the_members_the_seed_draws(tmp_path: Path) -> None:
    """The target's membership is one fair coin per pool record, so its size is the
    draw's, not half the pool: Attack L's sample of members and non-members must fit in
    the fewest members and non-members any trial of the game draws (here trials that draw
    different counts), and preflight says so before anything trains. The shadow models
    train on half the pool's size whatever the coins (YeSplit.attacker_size)."""
    from privaudit.membership.preflight import check_sizes, member_range

    game = {"name": "average", "n_trials": 6}
    sizes = {"n_target_pool": 200, "n_population": 300}
    cfg = _cfg(tmp_path, attacks=["leave-one-out"], sizes=sizes, game=game)
    data, exp, _ = _prepared(cfg)
    lo, hi = member_range(cfg, data, exp)
    assert lo < hi  # the trials' coins differ
    fits = 2 * min(lo, 200 - hi)  # half members (rounded up), half non-members
    for sample, ok in ((fits, True), (fits + 2, False)):
        c = _cfg(
            tmp_path,
            attacks=["leave-one-out"],
            sizes=sizes,
            game=game,
            models={"leave_one_out_sample": sample},
        )
        d, e, _ = _prepared(c)
        assert member_range(c, d, e) == (lo, hi)
        if ok:
            check_sizes(c, e, (lo, hi))
            continue
        with pytest.raises(ConfigError, match=rf"pool with {lo} to {hi} members and "):
            check_sizes(c, e, (lo, hi))
    for n_pop, ok in ((100, False), (101, True)):
        c = _cfg(tmp_path, attacks=["shadow"], sizes={"n_target_pool": 200, "n_population": n_pop})
        d, e, _ = _prepared(c)
        if ok:
            check_sizes(c, e, member_range(c, d, e))
            continue
        with pytest.raises(ConfigError, match="expected more than 100 records"):
            check_sizes(c, e, member_range(c, d, e))


def test_a_lopsided_provided_split_passes_the_dry_run(tmp_path: Path) -> None:
    """A provided split may have few members or few non-members (2 of each is enough):
    scaled to the dry pool, each side keeps at least 2 records."""
    cfg = _cfg(tmp_path, sizes={"n_target_pool": 1005, "n_population": 400})
    _, exp, _ = _prepared(cfg)
    for n_members in (2, 1003):
        dry_run_attacks(exp, 10, (n_members, n_members))


def test_the_dry_run_trains_as_many_members_as_the_largest_trial(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With pool 200 the dry pool is the real one; its target gets the most members any
    trial of the game draws (not the count of the dry run's own seed, which no trial of
    def-3.1 uses), so it fails where the run would and passes where every trial fits."""
    from privaudit.membership import preflight as pf

    game = {"name": "average", "n_trials": 4}
    cfg = _cfg(tmp_path, attacks=["shadow"], sizes={"n_target_pool": 200}, game=game, seed=1)
    data, exp, trainer = _prepared(cfg)
    lo, hi = pf.member_range(cfg, data, exp)
    seen: list[int] = []
    real = pf.run_experiment

    def spy(dataset: Any, trainer: Any, config: Any, **kw: Any) -> Any:
        seen.append(sum(b for _, b in config.force_membership))
        return real(dataset, trainer, config, **kw)

    monkeypatch.setattr(pf, "run_experiment", spy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pf.preflight(cfg, data, exp, trainer, write=False)
    assert seen and set(seen) == {hi} and lo < hi


def test_a_provided_targets_warnings_count_its_own_non_members(tmp_path: Path) -> None:
    """A provided split's counts are known: the 'too few non-members' warning counts them,
    not half the pool."""
    cfg = _cfg(tmp_path, sizes={"n_target_pool": 1200, "n_population": 400})
    data, exp, trainer = _prepared(cfg)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        half = preflight(cfg, data, exp, trainer, write=False, provided=True)
        few = preflight(cfg, data, exp, trainer, write=False, provided=True, provided_members=1150)
    assert not any("too few for any TPR" in w for w in half)  # 600 non-members
    assert any("non_members: the split has 50 non-members" in w for w in few)


def test_run_audit_gives_the_checks_a_provided_targets_own_member_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The public audit of a provided target hands its member count to the checks before
    training (their warnings and dry run count its own members and non-members), not
    None (half the pool)."""
    from sklearn.linear_model import LogisticRegression

    import privaudit

    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 5))
    y = (X[:, 0] + rng.normal(size=400) > 0).astype(np.int64)
    members, non_members = np.arange(0, 230), np.arange(230, 300)
    model = LogisticRegression().fit(X[members], y[members])
    seen: list[Any] = []

    def recording(*args: Any, **kwargs: Any) -> Any:
        seen.append((kwargs.get("provided"), kwargs.get("provided_members")))
        return preflight(*args, **kwargs)

    monkeypatch.setattr(pipeline, "preflight", recording)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        privaudit.audit_model(
            model,
            X,
            y,
            members=members,
            non_members=non_members,
            attacks=["population"],
            seed=0,
            progress=False,
        )
    assert seen == [(True, 230)]
