"""``target.population_table``: the attacker's population as a table file of its own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import skops.io as sio
import yaml
from sklearn.linear_model import LogisticRegression

from privaudit.cli import main
from privaudit.data import encode_like, table_from_frame
from privaudit.errors import InvalidInputError
from privaudit.membership.config import config_from_dict


def _frame(n: int, rng: np.random.Generator, start: int) -> pd.DataFrame:
    x1 = rng.normal(size=n)
    colour = rng.choice(["red", "green", "blue"], size=n)
    y = ((x1 + (colour == "red") + rng.normal(scale=0.8, size=n)) > 0.5).astype(int)
    return pd.DataFrame(
        {
            "rid": [f"r{start + k:05d}" for k in range(n)],
            "x1": x1,
            "x2": rng.normal(size=n),
            "colour": colour,
            "label": np.where(y == 1, "yes", "no"),
        }
    )


@pytest.fixture()
def setup(tmp_path: Path) -> dict[str, Any]:
    rng = np.random.default_rng(0)
    data = _frame(200, rng, 0)
    pop = _frame(300, rng, 10_000)
    data.to_csv(tmp_path / "data.csv", index=False)
    pop.to_csv(tmp_path / "pop.csv", index=False)
    ds = table_from_frame(data, "label", name="data", id_column="rid", standardize=True)
    members, non_members = ds.record_ids[:100], ds.record_ids[100:]
    clf = LogisticRegression(C=100.0, max_iter=300).fit(ds.X[:100], ds.y[:100])
    sio.dump(clf, tmp_path / "target.skops")
    (tmp_path / "m.txt").write_text("\n".join(members))
    (tmp_path / "n.txt").write_text("\n".join(non_members))
    cfg = {
        "dataset": {
            "path": "data.csv",
            "label_column": "label",
            "id_column": "rid",
            "standardize": True,
        },
        "target": {
            "kind": "sklearn",
            "path": "target.skops",
            "members": "m.txt",
            "non_members": "n.txt",
            "population_table": "pop.csv",
        },
        "model": {"kind": "logistic", "params": {"C": 100.0, "max_iter": 300}},
        "attacks": ["loss", "population", "lira-offline"],
        "models": {"n_reference": 4},
        "attack_params": {"lira-offline": {"variance": "fixed"}},
        "alpha": 0.1,
        "n_jobs": 1,
    }
    return {"dir": tmp_path, "cfg": cfg, "pop": pop, "data": data, "ds": ds}


def _run(setup: dict[str, Any], cfg: dict[str, Any]) -> int:
    p = setup["dir"] / "audit.yaml"
    p.write_text(yaml.safe_dump(cfg))
    return int(main(["run", str(p), "--no-progress", "--out", str(setup["dir"] / "rep")]))


def test_population_table_is_the_attackers_population(setup: dict[str, Any]) -> None:
    assert _run(setup, setup["cfg"]) == 0
    res = json.loads((setup["dir"] / "rep" / "results.json").read_text())
    t = res["target"]
    assert t["origin"] == "provided" and t["n_members"] == 100 and t["n_non_members"] == 100
    assert t["n_population"] == 300  # every row of the table, none of the dataset's
    assert t["population_table"].endswith("pop.csv")
    assert res["settings"]["sizes"]["n_population"] == 300


def test_population_table_is_encoded_as_the_dataset() -> None:
    rng = np.random.default_rng(1)
    data, pop = _frame(50, rng, 0), _frame(40, rng, 500)
    ds = table_from_frame(data, "label", name="d", id_column="rid", standardize=True)
    enc = encode_like(pop[["label", "colour", "x2", "x1", "rid"]], ds, name="population")
    assert enc.feature_names == ds.feature_names and enc.class_names == ds.class_names
    # standardised with the dataset's mean and std, not the population's
    mean, std = data["x1"].mean(), data["x1"].std(ddof=0)
    np.testing.assert_allclose(enc.X[:, 0], (pop["x1"] - mean) / std)
    np.testing.assert_array_equal(enc.record_ids, pop["rid"].to_numpy())


def test_labels_written_as_whole_floats_match_the_dataset_s_classes() -> None:
    # a label column read as floats (0.0 / 1.0) keeps its classes as the text "0.0" and
    # "1.0"; a table whose labels are 0.0 / 1.0, 0 / 1 or "0" / "1" is encoded with the same
    # classes (before: every one of them was an unseen label), an unseen one is still refused,
    # and text classes that only differ as numbers ("1", "1.0") are matched by their text
    frame = pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0], "label": [0.0, 1.0, 0.0, 1.0]})
    ds = table_from_frame(frame, "label", name="d")
    assert ds.class_names == ("0.0", "1.0")
    for labels in ([1.0, 0.0], [1, 0], ["1", "0"], ["1.0", "0.0"]):
        enc = encode_like(pd.DataFrame({"x": [5.0, 6.0], "label": labels}), ds, name="p")
        np.testing.assert_array_equal(enc.y, [1, 0])
    with pytest.raises(InvalidInputError, match=r"unseen \['2.0'\]"):
        encode_like(pd.DataFrame({"x": [5.0], "label": [2.0]}), ds, name="p")
    text = table_from_frame(frame.assign(label=["1", "1.0", "1", "1.0"]), "label", name="t")
    enc = encode_like(pd.DataFrame({"x": [5.0, 6.0], "label": ["1.0", "1"]}), text, name="p")
    np.testing.assert_array_equal(enc.y, [1, 0])


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (lambda p, d: p.assign(colour="purple"), "unseen"),
        (lambda p, d: p.assign(extra=1.0), "extra"),
        (lambda p, d: p.drop(columns=["x2"]), "missing"),
        (lambda p, d: p.assign(x1="a"), "numbers"),
        (lambda p, d: p.assign(label="maybe"), "unseen"),
        (lambda p, d: p.assign(rid=d["rid"].iloc[:300].tolist() + list(p["rid"][200:])), "audited"),
    ],
)
def test_bad_population_tables_exit_2_before_training(
    setup: dict[str, Any], change: Any, match: str, capsys: pytest.CaptureFixture[str]
) -> None:
    change(setup["pop"], setup["data"]).to_csv(setup["dir"] / "pop.csv", index=False)
    assert _run(setup, setup["cfg"]) == 2
    err = capsys.readouterr().err
    assert "target.population_table" in err and match in err
    assert not (setup["dir"] / "rep").exists()


def test_population_table_config_rules() -> None:
    base: dict[str, Any] = {
        "dataset": "adult",
        "model": {"kind": "logistic"},
        "target": {
            "kind": "sklearn",
            "path": "t.skops",
            "members": "m",
            "non_members": "n",
            "population_table": "p.csv",
        },
    }
    with pytest.raises(ValueError, match="needs a dataset table"):
        config_from_dict(base)
    both = {**base, "dataset": {"path": "d.csv", "label_column": "y"}}
    both["target"] = {**base["target"], "population": "p.txt"}
    with pytest.raises(ValueError, match="not both"):
        config_from_dict(both)
