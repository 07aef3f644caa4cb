"""A small, fast run of examples/zero_run_adult.py (issue 4, "Done when" item 2)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pandas as pd
import pytest

from privaudit.data import load_adult
from privaudit.data.adult import COLUMNS
from privaudit.zero_run.result import ZeroRunResult

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "zero_run_adult.py"

ADULT_COLUMNS = set(COLUMNS) - {"income"}  # the features, not the task label


@pytest.fixture(scope="module")
def example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("zero_run_adult_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses need the module registered
    spec.loader.exec_module(mod)
    return mod


def test_adult_frame_inverts_the_preprocessing(example: ModuleType) -> None:
    ds = load_adult()
    sub = ds.subset(ds.record_ids[:50])
    frame = example.adult_frame(sub)
    assert set(frame.columns) == ADULT_COLUMNS
    # the first record of adult.data: 39, State-gov, 77516, Bachelors, 13, Never-married, ...
    row = frame.iloc[0]
    assert (row["age"], row["workclass"], row["fnlwgt"]) == (39, "State-gov", 77516)
    assert (row["education"], row["education-num"], row["hours-per-week"]) == ("Bachelors", 13, 40)
    assert (row["sex"], row["native-country"]) == ("Male", "United-States")


def test_tilted_sample(example: ModuleType) -> None:
    z = np.linspace(-2, 2, 2000)
    rng = np.random.default_rng(0)
    none = example.tilted_sample(z, 500, 0.0, rng)
    strong = example.tilted_sample(z, 500, 2.0, rng)
    assert np.unique(strong).size == 500
    assert abs(z[none].mean()) < 0.15 and z[strong].mean() > 0.8


def test_small_end_to_end_run(
    example: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "adult"
    argv = [
        "--out",
        str(out),
        "--n-train",
        "800",
        "--n-members",
        "200",
        "--n-non-members",
        "200",
        "--tilt",
        "2.5",
        "--hidden",
        "16",
        "--max-iter",
        "40",
        "--estimators",
        "logistic-sigmoid",
    ]
    assert example.main(argv) == 0
    stdout = capsys.readouterr().out
    assert "uncorrected mu >=" in stdout and "Propensity diagnostics" in stdout

    table = pd.read_csv(out / "adult_zero_run.csv")
    assert set(table.columns) == ADULT_COLUMNS | {"record_id", "score", "member"}
    assert table["member"].sum() == 200 and len(table) == 400
    assert table["record_id"].is_unique
    assert (table["score"] <= 0).all()  # minus a cross-entropy loss
    mem = table["member"] == 1
    # the non-members are tilted towards older, longer-working people
    assert table.loc[~mem, "age"].mean() > table.loc[mem, "age"].mean() + 3
    assert table.loc[~mem, "hours-per-week"].mean() > table.loc[mem, "hours-per-week"].mean() + 3

    res = ZeroRunResult.load(out / "report")
    assert (out / "report" / "report.html").is_file()
    assert set(res.settings["features"]) == ADULT_COLUMNS  # never score, loss or income
    (e,) = res.estimators
    assert e["diagnostics"]["auc"] > 0.6  # the shift is visible from the features alone
    unc = res.uncorrected["mu_lower_bound"]
    assert unc >= e["pointwise"]["mu_lower_bound"]
    assert unc >= res.headline["mu_lower_bound"]
