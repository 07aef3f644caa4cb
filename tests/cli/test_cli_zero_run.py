"""``privaudit zero-run`` (issue 4, item 6): table(s) in, JSON + readable summary + report out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin

from privaudit.cli import main
from privaudit.zero_run import ZeroRunResult, zero_run_audit
from privaudit.zero_run import propensity as propensity_module

FAST = ["--estimators", "logistic-sigmoid"]


def _frame(n: int = 240, seed: int = 0) -> pd.DataFrame:
    """Members first, then non-members; x1 is shifted, the score leaks membership and x1."""
    rng = np.random.default_rng(seed)
    mem = np.arange(n) < n // 2
    x1 = rng.standard_normal(n) + 0.7 * mem
    return pd.DataFrame(
        {
            "x1": x1,
            "x2": rng.standard_normal(n),
            "cat": rng.choice(["a", "b", "c"], n),
            "score": rng.standard_normal(n) + 1.0 * mem + 0.5 * x1,
            "member": np.where(mem, "true", "false"),
        }
    )


@pytest.fixture
def table(tmp_path: Path) -> tuple[Path, pd.DataFrame]:
    df = _frame()
    path = tmp_path / "audit.csv"
    df.to_csv(path, index=False)
    return path, df


def _results(out: Path) -> dict[str, Any]:
    d: dict[str, Any] = json.loads((out / "results.json").read_text())
    return d


def test_table_mode_writes_results_report_and_summary(
    table: tuple[Path, pd.DataFrame], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, df = table
    out = tmp_path / "report"
    assert main(["zero-run", str(path), *FAST, "--out", str(out)]) == 0
    stdout = capsys.readouterr().out
    assert "propensity features (3): x1, x2, cat" in stdout
    assert "headline" in stdout and "Propensity diagnostics" in stdout
    assert "Falsification" in stdout and "report written to" in stdout

    d = _results(out)
    assert d["record"] == "zero_run_result" and d["privaudit_version"]
    assert d["n_members"] == 120 and d["n_non_members"] == 120
    assert d["settings"]["features"] == ["x1", "x2", "cat"]
    assert d["settings"]["estimators"] == ["logistic-sigmoid"]
    (e,) = d["estimators"]
    assert e["name"] == "logistic-sigmoid"
    for key in ("global", "pointwise", "diagnostics", "falsification", "bootstrap"):
        assert key in e
    assert e["global"]["procedure"] == "zero-run-global"
    assert e["pointwise"]["procedure"] == "zero-run-pointwise"
    assert d["uncorrected"]["procedure"] == "zero-run-uncorrected"
    for key in ("auc", "ece", "calibration_slope", "fraction_extreme", "ess", "retention_mean"):
        assert key in e["diagnostics"]
    assert (out / "report.html").is_file()

    # the same numbers as the Python API on the same data and seed
    res = ZeroRunResult.from_dict(d)
    want = zero_run_audit(
        df["score"].to_numpy(),
        df["member"] == "true",
        features=df[["x1", "x2", "cat"]],
        estimators=("logistic-sigmoid",),
    )
    assert res.headline == want.headline
    assert res.to_dict() == want.to_dict()


def test_json_to_stdout_and_two_file_mode_agree(
    table: tuple[Path, pd.DataFrame], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, df = table
    assert main(["zero-run", str(path), *FAST, "--json"]) == 0
    one = json.loads(capsys.readouterr().out)
    assert one["record"] == "zero_run_result" and "privaudit_version" in one

    mem = df["member"] == "true"
    members, non_members = tmp_path / "m.parquet", tmp_path / "n.csv"
    df[mem].drop(columns="member").to_parquet(members)
    df[~mem].to_csv(non_members, index=False)  # a consistent member column is allowed
    argv = ["zero-run", "--members", str(members), "--non-members", str(non_members), *FAST]
    assert main([*argv, "--json"]) == 0
    two = json.loads(capsys.readouterr().out)
    # the table lists members first, so the two modes see the same rows in the same order
    assert two == one


def test_bootstrap_in_summary_and_json(
    table: tuple[Path, pd.DataFrame], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, _ = table
    out = tmp_path / "boot"
    assert main(["zero-run", str(path), *FAST, "--bootstrap", "2", "--out", str(out)]) == 0
    assert "(q=0.025, n=2)" in capsys.readouterr().out
    d = _results(out)
    boot = d["estimators"][0]["bootstrap"]
    assert boot["n"] == 2 and len(boot["mu_values"]) == 2
    assert boot["mu_lower_quantile"] == min(boot["mu_values"])
    assert d["headline"]["mu_lower_bound"] == boot["mu_lower_quantile"]
    assert "Bootstrap over propensity fits" in (out / "report.html").read_text()


def test_cache_dir_resumes_the_bootstrap(
    table: tuple[Path, pd.DataFrame], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, _ = table
    cache = tmp_path / "cache"
    argv = ["zero-run", str(path), *FAST, "--bootstrap", "2", "--cache-dir", str(cache), "--json"]
    assert main(argv) == 0
    first = json.loads(capsys.readouterr().out)
    entries = list((cache / "objects").glob("*/*/manifest.json"))
    assert len(entries) == 2  # one stored replicate per bootstrap seed
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out) == first
    assert len(list((cache / "objects").glob("*/*/manifest.json"))) == 2


@pytest.mark.slow  # a local Ray instance starts in 15-60 s; CI installs ray and runs -m slow
def test_ray_bootstrap_matches_local(
    table: tuple[Path, pd.DataFrame], capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("ray")
    path, _ = table
    argv = ["zero-run", str(path), *FAST, "--bootstrap", "2", "--json"]
    assert main(argv) == 0
    local = json.loads(capsys.readouterr().out)
    try:
        assert main([*argv, "--ray", "local"]) == 0
    finally:
        import ray

        ray.shutdown()
    assert json.loads(capsys.readouterr().out) == local


def test_features_and_exclude(
    table: tuple[Path, pd.DataFrame], capsys: pytest.CaptureFixture[str]
) -> None:
    path, _ = table
    assert main(["zero-run", str(path), *FAST, "--exclude", "x2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["settings"]["features"] == ["x1", "cat"]
    assert main(["zero-run", str(path), *FAST, "--features", "cat,x2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["settings"]["features"] == ["cat", "x2"]


def _fails(argv: list[str], capsys: pytest.CaptureFixture[str], *needles: str) -> str:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    # stderr is not a terminal: the progress lines of the phases that ran come first
    err = "\n".join(x for x in captured.err.splitlines() if not x.startswith("privaudit: "))
    assert err.startswith("error: ") and "Traceback" not in err
    for needle in needles:
        assert needle in err, err
    return err


@pytest.mark.parametrize(
    ("edit", "extra", "needles"),
    [
        (lambda df: df.assign(member="true"), [], ("member", "0 non-member")),
        (lambda df: df.assign(x1=df["x1"].where(df.index != 7)), [], ("x1", "NaN")),
        (lambda df: df, ["--features", "x1,nope"], ("--features", "'nope'")),
        (lambda df: df, ["--exclude", "nope"], ("--exclude", "'nope'")),
        (lambda df: df, ["--score-col", "loss"], ("--score-col", "'loss'")),
        (lambda df: df, ["--features", "x1,score"], ("--features", "'score'")),
        (lambda df: df, ["--estimators", "logistic-sigmoid,xgboost"], ("--estimators", "xgboost")),
        (lambda df: df.assign(member="maybe"), [], ("member", "'maybe'")),
        (lambda df: df.assign(score="high"), [], ("score", "numeric")),
    ],
    ids=[
        "one-class",
        "nan-feature",
        "unknown-feature",
        "unknown-exclude",
        "unknown-score-col",
        "score-as-feature",
        "unknown-estimator",
        "bad-membership",
        "non-numeric-score",
    ],
)
def test_bad_input_exits_2_and_writes_nothing(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    edit: Any,
    extra: list[str],
    needles: tuple[str, ...],
) -> None:
    path = tmp_path / "bad.csv"
    edit(_frame()).to_csv(path, index=False)
    out = tmp_path / "out"
    _fails(["zero-run", str(path), *FAST, *extra, "--out", str(out)], capsys, *needles)
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.csv"]


class _Exploding(ClassifierMixin, BaseEstimator):  # type: ignore[misc]
    """A classifier whose fit always raises (a propensity model that cannot be fitted)."""

    def fit(self, X: Any, y: Any) -> _Exploding:
        raise np.linalg.LinAlgError("singular matrix")

    def predict_proba(self, X: Any) -> Any:  # pragma: no cover - never fitted
        raise AssertionError("not fitted")


def test_propensity_fit_failure_exits_2(
    table: tuple[Path, pd.DataFrame],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = propensity_module.make_propensity_model

    def exploding_model(*args: Any, **kwargs: Any) -> Any:
        return real(*args, **kwargs).set_params(estimator=_Exploding())

    monkeypatch.setattr(propensity_module, "make_propensity_model", exploding_model)
    path, _ = table
    out = tmp_path / "out"
    _fails(
        ["zero-run", str(path), *FAST, "--out", str(out)],
        capsys,
        "logistic-sigmoid",
        "fold",
        "singular matrix",
    )
    assert not out.exists()


def test_input_mode_errors(
    table: tuple[Path, pd.DataFrame], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, df = table
    _fails(["zero-run", *FAST], capsys, "FILE", "--members")
    _fails(["zero-run", str(path), "--members", str(path), *FAST], capsys, "not both")
    _fails(["zero-run", "--members", str(path), *FAST], capsys, "both files")
    _fails(["zero-run", str(tmp_path / "missing.csv"), *FAST], capsys, "FILE", "missing.csv")
    mem = df["member"] == "true"
    members, non_members = tmp_path / "m.csv", tmp_path / "n.csv"
    df[mem].to_csv(members, index=False)
    df[~mem].assign(member="true").to_csv(non_members, index=False)
    argv = ["zero-run", "--members", str(members), "--non-members", str(non_members), *FAST]
    _fails(argv, capsys, "--non-members", "'member'")
    df[~mem].drop(columns=["member", "x2"]).to_csv(non_members, index=False)
    _fails(argv, capsys, "--non-members", "same columns")


def test_existing_out_needs_overwrite(
    table: tuple[Path, pd.DataFrame], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, _ = table
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("earlier report")
    _fails(["zero-run", str(path), *FAST, "--out", str(out)], capsys, "--overwrite")
    assert (out / "keep.txt").read_text() == "earlier report"
    assert main(["zero-run", str(path), *FAST, "--out", str(out), "--overwrite"]) == 0
    assert sorted(p.name for p in out.iterdir()) == [
        "bundle.json",
        "features.parquet",
        "inputs.npz",
        "report.html",
        "results.json",
    ]


def _null_frame(gamma: float = 1.0, n: int = 1500, seed: int = 0) -> pd.DataFrame:
    """Issue 9's null: a 0-DP mechanism, the score is the shifted feature itself."""
    rng = np.random.default_rng(seed)
    mem = np.arange(2 * n) < n
    a = gamma * np.where(mem, 1.0, -1.0) + rng.standard_normal(2 * n)
    return pd.DataFrame(
        {
            "a": a,
            "z1": rng.standard_normal(2 * n),
            "z2": rng.standard_normal(2 * n),
            "score": a,
            "oracle": 1.0 / (1.0 + np.exp(-2.0 * gamma * a)),
            "member": mem.astype(int),
        }
    )


def test_null_data_reports_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`privaudit zero-run` (default estimators) on a 0-DP score under strong shift: 0."""
    path = tmp_path / "null.csv"
    _null_frame().to_csv(path, index=False)
    argv = ["zero-run", str(path), "--exclude", "oracle", "--seed", "0", "--json"]
    assert main(argv) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["headline"]["rule"] == "max" and d["headline"]["beta_per_estimator"] == 0.025
    assert d["headline"]["epsilon_lower_bound"] == 0.0
    assert d["headline"]["mu_lower_bound"] == 0.0
    by = {e["name"]: e for e in d["estimators"]}
    assert set(by) == {"logistic", "logistic-quadratic"}
    assert d["settings"]["challengers"] == ["hist-gb"] and d["settings"]["placebo"] is True
    for e in by.values():
        assert e["pointwise"]["epsilon_lower_bound"] == 0.0
        assert e["pointwise"]["mu_lower_bound"] == 0.0
        assert e["pointwise"]["extra"]["correction"] == "split"
        assert [f["challenger"] for f in e["falsification"]] == [
            "logistic",
            "logistic-quadratic",
            "hist-gb",
        ]
        assert e["placebo"]["beta"] == 0.025
    # the paper's plug-in correction (no margin) is what the issue measured as invalid
    plug_argv = [*argv, "--estimators", "hist-gb", "--margin-z", "0"]
    assert main(plug_argv) == 0
    plug = json.loads(capsys.readouterr().out)
    assert plug["estimators"][0]["pointwise"]["extra"]["margin_z"] == 0.0
    assert plug["estimators"][0]["pointwise"]["epsilon_lower_bound"] > 0.0
    # ... and the placebo check catches it: the headline leaves it out (here: refused)
    assert plug["estimators"][0]["placebo"]["failed"] is True
    assert plug["headline"]["refused"] is True and plug["headline"]["epsilon_lower_bound"] == 0.0


def _spread_frame(seed: int, sd: float = 1.6, n: int = 1500) -> pd.DataFrame:
    """Issue 28's null: members differ only in the spread of x1; the score |x1| is 0-DP."""
    rng = np.random.default_rng(seed)
    mem = np.arange(2 * n) < n
    x1 = np.where(mem, sd, 1.0) * rng.standard_normal(2 * n)
    return pd.DataFrame(
        {"x1": x1, "x2": rng.standard_normal(2 * n), "score": np.abs(x1), "member": mem.astype(int)}
    )


def _spread_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str], seeds: range) -> list[dict]:
    runs = []
    for r in seeds:
        path = tmp_path / f"spread{r}.csv"
        _spread_frame(1000 + r).to_csv(path, index=False)
        assert main(["zero-run", str(path), "--json", "--seed", str(r)]) == 0
        runs.append(json.loads(capsys.readouterr().out))
    return runs


def _check_spread_runs(runs: list[dict], max_positive: int) -> None:
    """At most ``max_positive`` headlines eps > 0.02; the shift still shown as visible."""
    assert sum(d["headline"]["epsilon_lower_bound"] > 0.02 for d in runs) <= max_positive
    for d in runs:
        assert d["headline"]["mu_lower_bound"] == 0.0
        # the logit-linear model is misspecified here and must be caught
        assert (
            "logistic"
            in d["headline"]["falsified_estimators"] + d["headline"]["placebo_failed_estimators"]
        )
        assert d["uncorrected"]["mu_lower_bound"] > 0.0
        assert any("distribution shift" in w for w in d["warnings"])


def test_spread_shift_null_is_not_reported_as_leakage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 28, fast: 3 of the 20 data seeds of the slow test (where the old defaults gave
    eps > 0 in 9 of 20): no headline above 0.02; the shift still reported as visible."""
    _check_spread_runs(_spread_runs(tmp_path, capsys, range(3)), max_positive=0)


@pytest.mark.slow
def test_spread_shift_null_20_seeds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 28's Done-when: sd 1.6, 1,500 per class, 20 data seeds through `privaudit
    zero-run`: a headline eps > 0.02 in at most 3 of 20 runs."""
    _check_spread_runs(_spread_runs(tmp_path, capsys, range(20)), max_positive=3)


def test_propensity_col_uses_given_propensities(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    df = _null_frame(n=400)
    path = tmp_path / "null.csv"
    df.to_csv(path, index=False)
    assert main(["zero-run", str(path), "--propensity-col", "oracle", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["settings"]["propensity"] == "given"
    assert [e["name"] for e in d["estimators"]] == ["oracle"]
    assert d["headline"]["mu_lower_bound"] == 0.0
    assert d["headline"]["epsilon_lower_bound"] == 0.0
    want = zero_run_audit(
        df["score"].to_numpy(), df["member"] == 1, propensity={"oracle": df["oracle"]}
    )
    assert d["headline"] == want.to_dict()["headline"]


@pytest.mark.parametrize(
    ("value", "extra", "message"),
    [
        (0.0, [], "strictly between 0 and 1"),
        (1.2, [], "strictly between 0 and 1"),
        ("high", [], "strictly between 0 and 1"),
        (None, ["--estimators", "hist-gb"], "--propensity-col"),
    ],
)
def test_propensity_col_is_validated(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    value: Any,
    extra: list[str],
    message: str,
) -> None:
    df = _null_frame(n=60)
    if value is not None:
        df["oracle"] = df["oracle"].astype(object)
        df.loc[5, "oracle"] = value
    path = tmp_path / "bad.csv"
    df.to_csv(path, index=False)
    assert main(["zero-run", str(path), "--propensity-col", "oracle", *extra]) == 2
    assert message in capsys.readouterr().err


def test_headline_rule_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    df = _null_frame(gamma=0.5, n=400)
    df["score"] = df["score"] + 2.0 * df["member"]  # leaks beyond the shift
    path = tmp_path / "leaky.csv"
    df.to_csv(path, index=False)
    base = ["zero-run", str(path), "--propensity-col", "oracle", "--json"]
    assert main([*base, "--headline", "min"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["headline"]["rule"] == "min" and d["settings"]["headline_rule"] == "min"
    # one given propensity: J = 1, so both rules give the same bound
    assert d["headline"]["beta_per_estimator"] == 0.05
    assert main(base) == 0
    mx = json.loads(capsys.readouterr().out)
    assert mx["headline"]["rule"] == "max"
    assert mx["headline"]["mu_lower_bound"] == d["headline"]["mu_lower_bound"] > 0
    assert main([*base, "--headline", "mean"]) == 2
    assert "headline_rule" in capsys.readouterr().err
