"""A user's own model through the YAML (issue 29, item 4): errors in the user's words, early.

The walk: a table of the user's (scikit-learn's breast-cancer data, 569 records), a model
fitted on a pandas DataFrame of it, the member and non-member id files, no population (the
rest of the table). A split too small for the attacks is refused from the files' row counts
before the model file is opened (the model file here is not even a model), naming the files;
a label class of one record is refused with its count; a DataFrame-fitted model is queried
with its feature names (no scikit-learn warning).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml

from privaudit.cli import main
from privaudit.data import load_table
from privaudit.membership.config import ConfigError, config_from_dict, load_config
from privaudit.membership.inputs import check_feature_names, read_provided_split
from privaudit.membership.preflight import check_labels, check_provided_split
from privaudit.models import SklearnModel
from privaudit.models.provided import ProvidedSplit


def _table() -> pd.DataFrame:
    from sklearn.datasets import load_breast_cancer

    frame = load_breast_cancer(as_frame=True).frame
    frame.insert(0, "id", [f"p{i:04d}" for i in range(len(frame))])
    return frame


def _walk(
    root: Path, n_members: int, n_non_members: int, *, frame: pd.DataFrame | None = None
) -> tuple[Path, pd.DataFrame]:
    """The user's files in ``root``: cancer.csv, members.txt, non_members.txt, audit.yaml
    (model.skops is written by the tests that need a real model)."""
    frame = _table() if frame is None else frame
    frame.to_csv(root / "cancer.csv", index=False)
    perm = np.random.default_rng(0).permutation(len(frame))
    ids = frame["id"].to_numpy()
    (root / "members.txt").write_text("\n".join(ids[perm[:n_members]]) + "\n")
    (root / "non_members.txt").write_text(
        "\n".join(ids[perm[n_members : n_members + n_non_members]]) + "\n"
    )
    (root / "model.skops").write_bytes(b"not a model: the size checks never open it")
    cfg = {
        "dataset": {"path": "cancer.csv", "label_column": "target", "id_column": "id"},
        "target": {
            "kind": "sklearn",
            "path": "model.skops",
            "members": "members.txt",
            "non_members": "non_members.txt",
        },
        "model": {"kind": "mlp", "params": {"hidden_layer_sizes": [16], "max_iter": 50}},
        "output_dir": "report",
        "cache_dir": "cache",
        "n_jobs": 1,
    }
    path = root / "audit.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path, frame


def test_too_small_population_is_refused_naming_the_users_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg, _ = _walk(tmp_path, 200, 200)
    assert main(["run", str(cfg), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    # what the user gave, in their words, what is needed and why
    for part in (
        "200 members (the members file members.txt)",
        "169 population records (the rest of cancer.csv: the records in neither "
        "members.txt nor non_members.txt)",
        "attack 'shadow'",
        "more population records than members",
        "target.population_table",
    ):
        assert part in err, (part, err)
    assert "sizes.n_population" not in err  # a field the user never wrote
    # refused before the model file was opened (it is not a model) or anything was written
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "audit.yaml",
        "cancer.csv",
        "members.txt",
        "model.skops",
        "non_members.txt",
    ]


def test_a_label_class_of_one_record_is_refused_with_the_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    frame = _table()
    frame.loc[7, "target"] = 2  # one record of a third class
    cfg, _ = _walk(tmp_path, 100, 100, frame=frame)
    assert main(["run", str(cfg), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "label column 'target' of cancer.csv" in err, err
    assert "'2' (1 record) of 569 records" in err, err
    assert not (tmp_path / "report").exists()


def _checked(tmp_path: Path, n_m: int, n_n: int, **extra: Any) -> None:
    cfg_path, _ = _walk(tmp_path, n_m, n_n)
    raw = yaml.safe_load(cfg_path.read_text())
    for key, value in extra.items():
        if key == "target":
            raw["target"].update(value)
        else:
            raw[key] = value
    cfg_path.write_text(yaml.safe_dump(raw))
    cfg = load_config(cfg_path)
    dataset, split = read_provided_split(cfg)
    check_provided_split(cfg, dataset, split)


@pytest.mark.parametrize(
    ("n_m", "n_n", "extra", "match"),
    [
        # R's population calibration at alpha = 0.005 needs 199 records no shadow model
        # saw; 269 - 150 are left
        (
            150,
            150,
            {"alpha": 0.005, "attacks": ["reference"]},
            r"attack 'reference' to calibrate its threshold at alpha = 0\.005 \(199 records.*"
            r"269 population records.*150 members \(the members file members\.txt\)",
        ),
        (
            150,
            150,
            {"alpha": 0.005, "attacks": ["distillation"]},
            r"attack 'distillation' to calibrate.*threshold_calibration: smoothed",
        ),
        (
            3,
            200,
            {"attacks": ["leave-one-out"], "models": {"leave_one_out_sample": 10}},
            r"models\.leave_one_out_sample: expected at most 6 records.*found 10 for 3 members "
            r"\(the members file members\.txt\) and 200 non-members \(the non-members file "
            r"non_members\.txt\)",
        ),
        (
            280,
            288,
            {"attacks": ["population"]},
            r"expected at least 2 population records .*found 1 population record \(the rest",
        ),
    ],
)
def test_provided_split_sizes_name_what_the_user_gave(
    tmp_path: Path, n_m: int, n_n: int, extra: dict[str, Any], match: str
) -> None:
    with pytest.raises(ConfigError, match=match):
        _checked(tmp_path, n_m, n_n, **extra)


def test_a_split_that_fits_passes(tmp_path: Path) -> None:
    _checked(tmp_path, 150, 150)  # the default attacks: 269 population records suffice


def test_population_attack_needs_two_population_records_of_each_audited_class(
    tmp_path: Path,
) -> None:
    frame = _table()
    cfg_path, _ = _walk(tmp_path, 100, 100, frame=frame)
    raw = yaml.safe_load(cfg_path.read_text())
    raw["attacks"] = ["population"]
    cfg_path.write_text(yaml.safe_dump(raw))
    cfg = load_config(cfg_path)
    dataset, split = read_provided_split(cfg)
    benign = dataset.record_ids[dataset.y == 1]
    audited = set(split.audited_ids.tolist())
    rest = [r for r in dataset.record_ids if r not in audited]
    keep_one = [r for r in rest if r not in set(benign.tolist())][:1] + [
        r for r in rest if r in set(benign.tolist())
    ]
    small = ProvidedSplit(split.member_ids, split.non_member_ids, np.asarray(keep_one))
    with pytest.raises(ConfigError, match=r"'0' \(1\) among 1?\d+ population records"):
        check_provided_split(cfg, dataset, small)


def test_check_labels_counts_every_small_class() -> None:
    cfg = config_from_dict({"dataset": "digits", "model": {"kind": "logistic"}})
    from privaudit.data import load_digits

    data = load_digits()
    check_labels(cfg, data)  # every digit has ~180 records


# ------------------------------------------------------------------- feature names


def _frame_fitted(estimator: Any) -> tuple[Any, pd.DataFrame, pd.Series]:
    frame = _table()
    X = frame.drop(columns=["id", "target"])
    estimator.fit(X.iloc[:300], frame["target"].iloc[:300])
    return estimator, X, frame["target"]


@pytest.mark.parametrize("kind", ["mlp", "logistic", "forest", "pipeline"])
def test_dataframe_fitted_models_are_queried_with_their_feature_names(kind: str) -> None:
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    est = {
        "mlp": MLPClassifier((8,), max_iter=20, random_state=0),
        "logistic": LogisticRegression(max_iter=50),
        "forest": RandomForestClassifier(n_estimators=5, random_state=0),
        "pipeline": make_pipeline(StandardScaler(), LogisticRegression(max_iter=50)),
    }[kind]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence while fitting the user's model
        est, X, _ = _frame_fitted(est)
    model = SklearnModel(est, 2)
    assert model.feature_names == tuple(X.columns)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any scikit-learn warning fails the test
        z = model.logits(X.to_numpy(dtype=np.float64))
    assert z.shape == (len(X), 2) and np.isfinite(z).all()
    p = est.predict_proba(X)
    q = np.exp(z - z.max(axis=1, keepdims=True))
    q /= q.sum(axis=1, keepdims=True)
    ok = (p > 1e-6) & (p < 1 - 1e-6)
    if kind != "forest":  # a forest's logits are log-probabilities (floored)
        assert np.allclose(q[ok], p[ok], atol=1e-6)


def test_a_model_fitted_on_other_columns_is_refused_before_training(tmp_path: Path) -> None:
    from sklearn.linear_model import LogisticRegression

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est, X, _ = _frame_fitted(LogisticRegression(max_iter=50))
    _walk(tmp_path, 10, 10)
    dataset = load_table(tmp_path / "cancer.csv", "target", id_column="id")
    check_feature_names(SklearnModel(est, 2), dataset, field="target.path")
    cols = list(X.columns)
    swapped = [cols[1], cols[0], *cols[2:]]
    est2 = LogisticRegression(max_iter=50)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est2.fit(X[swapped].iloc[:300], np.arange(300) % 2)
    with pytest.raises(
        Exception, match=r"target\.path: .*another order \(column 1: 'mean texture'"
    ):
        check_feature_names(SklearnModel(est2, 2), dataset, field="target.path")
    est3 = LogisticRegression(max_iter=50)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est3.fit(X[cols[:5]].iloc[:300], np.arange(300) % 2)
    with pytest.raises(
        Exception, match=r"fitted on 5 columns; not in the model: \['mean compactness'"
    ):
        check_feature_names(SklearnModel(est3, 2), dataset, field="target.path")


def test_own_model_run_warns_nothing_about_feature_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import skops.io as sio
    from sklearn.linear_model import LogisticRegression

    cfg_path, frame = _walk(tmp_path, 120, 120)
    members = set((tmp_path / "members.txt").read_text().split())
    train = frame[frame["id"].isin(members)]
    est = LogisticRegression(max_iter=200)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(train.drop(columns=["id", "target"]), train["target"])
    sio.dump(est, tmp_path / "model.skops")
    raw = yaml.safe_load(cfg_path.read_text())
    raw["model"] = {"kind": "logistic", "params": {"max_iter": 200}}
    raw["attacks"] = ["loss", "population", "label-only"]
    cfg_path.write_text(yaml.safe_dump(raw))
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*feature names")
        assert main(["run", str(cfg_path), "--no-progress"]) == 0, capsys.readouterr().err
    out = capsys.readouterr()
    assert "feature names" not in out.err + out.out
    # the target came from the user's file, not from a cache
    assert "the target read from model.skops" in out.out, out.out
