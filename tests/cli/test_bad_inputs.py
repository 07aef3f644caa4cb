"""A corpus of bad inputs (issue 8): each exits 2 naming the problem, no traceback, nothing written.

Every case builds its files in a fresh folder, runs the real entry point ``main(argv)``
with that folder as the working directory, and checks that

* the exit code is 2 (usage or input error),
* the output names the problem (an expected fragment: the config field, the option,
  the column or the file),
* no exception escaped (``main`` returned; a traceback would fail the test),
* nothing was written: the folder holds exactly the files the case wrote (no report,
  no cache directory, no temporary file), byte for byte.

``run`` cases that get past the config schema fail in :mod:`privaudit.membership.preflight`, before
any model trains (the corpus would take minutes otherwise).
"""

from __future__ import annotations

import copy
import gzip
import io
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml

from privaudit.cli import main

RUN = ["run", "audit.yaml", "--no-progress"]

BASE: dict[str, Any] = {
    "dataset": {"path": "data.csv", "label_column": "label", "id_column": "id"},
    "model": {"kind": "logistic", "params": {"max_iter": 200}},
    "attacks": ["population"],
    "sizes": {"n_target_pool": 120, "n_population": 160},
    "alpha": 0.1,
    "seed": 0,
    "n_jobs": 1,
    "output_dir": "report",
    "cache_dir": "cache",
}

DROP = object()  # a value in an override that deletes the key


def frame(n: int = 320, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    return pd.DataFrame(
        {
            "id": [f"r{k:04d}" for k in range(n)],
            "f1": rng.normal(size=n) + y,
            "f2": rng.normal(size=n),
            "colour": rng.choice(["red", "green", "blue"], n),
            "label": y,
        }
    )


def merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for k, v in over.items():
        if v is DROP:
            out.pop(k, None)
        elif isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = merge(out[k], v)
        else:
            out[k] = v
    return out


Builder = Callable[[Path], list[str]]


def cfg(data: pd.DataFrame | None = None, **over: Any) -> Builder:
    """A run of BASE with ``over`` merged in (and data.csv, optionally replaced)."""

    def build(tmp: Path) -> list[str]:
        (frame() if data is None else data).to_csv(tmp / "data.csv", index=False)
        (tmp / "audit.yaml").write_text(yaml.safe_dump(merge(BASE, over), sort_keys=False))
        return list(RUN)

    return build


def yaml_text(text: str | bytes) -> Builder:
    def build(tmp: Path) -> list[str]:
        frame().to_csv(tmp / "data.csv", index=False)
        p = tmp / "audit.yaml"
        p.write_bytes(text.encode() if isinstance(text, str) else text)
        return list(RUN)

    return build


def data_file(name: str, content: bytes | Callable[[Path], None], **over: Any) -> Builder:
    """A run whose dataset is the file ``name`` with raw ``content`` (or written by it)."""

    def build(tmp: Path) -> list[str]:
        path = tmp / name
        if callable(content):
            content(path)
        else:
            path.write_bytes(content)
        ds = {"path": name, "label_column": "label", "id_column": "id", **over}
        (tmp / "audit.yaml").write_text(yaml.safe_dump(merge(BASE, {"dataset": ds})))
        return list(RUN)

    return build


def args(*argv: str, files: dict[str, bytes | pd.DataFrame] | None = None) -> Builder:
    def build(tmp: Path) -> list[str]:
        for name, content in (files or {}).items():
            if isinstance(content, pd.DataFrame):
                content.to_csv(tmp / name, index=False)
            else:
                (tmp / name).write_bytes(content)
        return list(argv)

    return build


def with_file(builder: Builder, name: str, content: bytes = b"x") -> Builder:
    def build(tmp: Path) -> list[str]:
        argv = builder(tmp)
        (tmp / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp / name).write_bytes(content)
        return argv

    return build


def csv_bytes(df: pd.DataFrame, encoding: str = "utf-8") -> bytes:
    return df.to_csv(index=False).encode(encoding)


def parquet_bytes(df: pd.DataFrame) -> bytes:
    buf = io.BytesIO()
    df.to_parquet(buf)
    return buf.getvalue()


def npz_bytes(**arrays: Any) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def scores(n: int = 60) -> pd.DataFrame:
    rng = np.random.default_rng(1)
    m = np.arange(n) % 2 == 0
    return pd.DataFrame({"score": rng.normal(size=n) + m, "member": m.astype(int)})


def _latin1_header() -> bytes:
    df = frame().rename(columns={"f2": "größe"})
    return csv_bytes(df, "latin-1")


def _latin1_body() -> bytes:
    df = frame()
    df.loc[5, "colour"] = "café"
    return csv_bytes(df, "latin-1")


def _stray(df: pd.DataFrame) -> pd.DataFrame:
    df = df.astype({"f1": object})
    df.loc[17, "f1"] = "12,5a"
    return df


def _continuous(df: pd.DataFrame) -> pd.DataFrame:
    return df.assign(label=np.linspace(0.0, 1.0, len(df)))


def _many_classes(df: pd.DataFrame) -> pd.DataFrame:
    return df.assign(label=np.arange(len(df)) % 150)


def _dup_ids(df: pd.DataFrame) -> pd.DataFrame:
    return df.assign(id=["same"] * 2 + list(df["id"][2:]))


def _nan_feature(df: pd.DataFrame) -> pd.DataFrame:
    return df.assign(f2=df["f2"].where(df.index != 9))


def _missing_label(df: pd.DataFrame) -> pd.DataFrame:
    return df.assign(label=df["label"].astype(float).where(df.index != 4))


def _write_bad_npz_object(path: Path) -> None:
    np.savez(path, X=np.array([[1, "a"]], dtype=object), label=np.array([0]))


CASES: list[tuple[str, Builder, str]] = [
    # ---- usage errors (typer's own messages) -------------------------------------------
    ("no-arguments", args(), "Usage"),
    ("unknown-command", args("bogus"), "No such command"),
    ("unknown-root-option", args("--bogus"), "No such option"),
    ("run-without-config", args("run"), "Missing argument"),
    ("run-unknown-option", args("run", "audit.yaml", "--bogus"), "No such option"),
    ("run-out-without-value", args("run", "audit.yaml", "--out"), "requires an argument"),
    ("run-two-configs", args("run", "a.yaml", "b.yaml"), "unexpected extra argument"),
    ("audit-without-file", args("audit"), "Missing argument"),
    (
        "audit-confidence-not-number",
        args("audit", "s.csv", "--confidence", "abc", files={"s.csv": scores()}),
        "--confidence",
    ),
    (
        "audit-delta-not-number",
        args("audit", "s.csv", "--delta", "tiny", files={"s.csv": scores()}),
        "--delta",
    ),
    ("demo-seed-not-int", args("demo", "--seed", "x"), "--seed"),
    ("demo-n-jobs-not-int", args("demo", "--n-jobs", "many"), "--n-jobs"),
    ("demo-extra-argument", args("demo", "extra"), "unexpected extra argument"),
    ("zero-run-unknown-option", args("zero-run", "--bogus"), "No such option"),
    ("demo-unknown-option", args("demo", "--fast"), "No such option"),
    # ---- the config file itself ---------------------------------------------------------
    ("config-missing", args(*RUN), "no file at"),
    ("config-is-directory", lambda t: (t / "audit.yaml").mkdir() or list(RUN), "directory"),
    ("config-empty", yaml_text(""), "mapping"),
    ("config-list", yaml_text("- a\n- b\n"), "mapping"),
    ("config-scalar", yaml_text("hello\n"), "mapping"),
    ("config-latin1", yaml_text("dataset: digits # größe\n".encode("latin-1")), "UTF-8"),
    ("config-binary", yaml_text(b"\x00\x01\xff\xfe" * 8), "UTF-8"),
    ("config-syntax", yaml_text("dataset: [digits\n"), "valid YAML"),
    ("config-tab-indent", yaml_text("model:\n\tkind: mlp\n"), "valid YAML"),
    (
        "config-duplicate-top-key",
        yaml_text("dataset: digits\nmodel: {kind: logistic}\nalpha: 0.1\nalpha: 0.2\n"),
        "'alpha' twice",
    ),
    (
        "config-duplicate-nested-key",
        yaml_text("dataset: digits\nmodel: {kind: logistic, kind: mlp}\n"),
        "'kind' twice",
    ),
    ("config-python-tag", yaml_text("dataset: !!python/object:os.system x\n"), "valid YAML"),
    # ---- the dataset file -------------------------------------------------------------
    ("csv-empty-file", data_file("d.csv", b""), "0 bytes"),
    ("csv-header-only", data_file("d.csv", b"id,f1,label\n"), "at least one row"),
    ("csv-blank-lines", data_file("d.csv", b"\n\n\n"), "no columns"),
    ("csv-latin1-header", data_file("d.csv", _latin1_header()), "UTF-8"),
    ("csv-latin1-body", data_file("d.csv", _latin1_body()), "UTF-8"),
    ("csv-utf16", data_file("d.csv", csv_bytes(frame(20), "utf-16")), "UTF-8"),
    ("parquet-named-csv", data_file("d.csv", parquet_bytes(frame())), "Parquet file named"),
    ("npz-named-csv", data_file("d.csv", npz_bytes(X=np.zeros((3, 2)))), "npz"),
    ("gzip-named-csv", data_file("d.csv", gzip.compress(csv_bytes(frame()))), "gzip"),
    ("csv-named-csv-gz", data_file("d.csv.gz", csv_bytes(frame())), "gzip"),
    (
        "csv-ragged-rows",
        data_file("d.csv", b"id,f1,label\nr1,1,0\nr2,2,1,7,8\n"),
        "readable CSV",
    ),
    ("csv-named-parquet", data_file("d.parquet", csv_bytes(frame())), "Parquet"),
    ("empty-parquet", data_file("d.parquet", b""), "Parquet"),
    ("truncated-parquet", data_file("d.parquet", parquet_bytes(frame())[:200]), "Parquet"),
    ("text-named-npz", data_file("d.npz", b"not an archive"), "npz"),
    ("npz-object-array", data_file("d.npz", _write_bad_npz_object), "array 'X'"),
    ("npz-without-X", data_file("d.npz", npz_bytes(Z=np.zeros((3, 2)))), "'X'"),
    ("xlsx-file", data_file("d.xlsx", b"PK\x03\x04"), ".csv"),
    ("npy-file", data_file("d.npy", b"\x93NUMPY"), ".npz"),
    ("dataset-missing-file", cfg(dataset={"path": "absent.csv"}), "absent.csv"),
    (
        "dataset-path-is-directory",
        lambda t: (t / "dir.csv").mkdir() or cfg(dataset={"path": "dir.csv"})(t),
        "dir.csv",
    ),
    # ---- the dataset's content ----------------------------------------------------------
    ("label-column-unknown", cfg(dataset={"label_column": "income"}), "label_column"),
    ("id-column-unknown", cfg(dataset={"id_column": "key"}), "id_column"),
    ("id-equals-label", cfg(dataset={"id_column": "label"}), "id_column"),
    ("duplicate-ids", cfg(_dup_ids(frame())), "unique ids"),
    ("missing-ids", cfg(frame().assign(id=None)), "missing ids"),
    ("nan-feature", cfg(_nan_feature(frame())), "'f2'"),
    ("missing-label", cfg(_missing_label(frame())), "missing labels"),
    ("single-class", cfg(frame().assign(label=1)), "at least 2 classes"),
    ("stray-string-in-numeric-column", cfg(_stray(frame())), "'12,5a'"),
    ("continuous-label", cfg(_continuous(frame())), "continuous target"),
    ("hundreds-of-classes", cfg(_many_classes(frame())), "150 distinct values"),
    ("missing-categorical", cfg(frame().assign(colour=None).astype({"colour": object})), "f"),
    ("no-feature-columns", cfg(frame()[["id", "label"]]), "feature"),
    ("duplicate-column-names", data_file("d.csv", b"id,a,a,label\nr1,1,2,0\nr2,3,4,1\n"), "unique"),
    # ---- config fields --------------------------------------------------------------------
    ("unknown-top-field", cfg(typo_field=1), "typo_field"),
    ("dataset-unknown-name", cfg(dataset="cifar100"), "dataset"),
    ("dataset-no-label", cfg(dataset={"label_column": DROP}), "label_column"),
    ("dataset-name-and-path", cfg(dataset={"name": "adult"}), "dataset"),
    ("dataset-unknown-key", cfg(dataset={"sep": ";"}), "dataset.sep"),
    ("dataset-standardize-text", cfg(dataset={"standardize": "maybe"}), "standardize"),
    ("model-missing", cfg(model=DROP), "model"),
    ("model-kind-unknown", cfg(model={"kind": "svm"}), "model.kind"),
    ("model-param-unknown", cfg(model={"params": {"hidden_units": 3}}), "hidden_units"),
    ("model-random-state", cfg(model={"params": {"random_state": 1}}), "random_state"),
    ("model-C-negative", cfg(model={"params": {"C": -1.0}}), "model.params"),
    ("model-max-iter-negative", cfg(model={"params": {"max_iter": -5}}), "model.params"),
    ("model-C-text", cfg(model={"params": {"C": "large"}}), "model.params"),
    (
        "mlp-negative-layer",
        cfg(model={"kind": "mlp", "params": {"hidden_layer_sizes": [-4]}}),
        "model.params",
    ),
    (
        "mlp-learning-rate-text",
        cfg(model={"kind": "mlp", "params": {"learning_rate_init": "fast"}}),
        "model.params",
    ),
    (
        "forest-zero-trees",
        cfg(model={"kind": "random_forest", "params": {"n_estimators": 0}}),
        "model.params",
    ),
    (
        "boosting-bad-loss",
        cfg(model={"kind": "gradient_boosting", "params": {"loss": "hinge"}}),
        "model.params",
    ),
    ("alpha-zero", cfg(alpha=0.0), "alpha"),
    ("alpha-one", cfg(alpha=1.0), "alpha"),
    ("alpha-text", cfg(alpha="five percent"), "alpha"),
    ("alpha-nan", cfg(alpha=float("nan")), "alpha"),
    ("seed-negative", cfg(seed=-1), "seed"),
    ("seed-too-large", cfg(seed=2**40), "seed"),
    ("seed-float", cfg(seed=1.5), "seed"),
    ("n-jobs-zero", cfg(n_jobs=0), "n_jobs"),
    ("n-jobs-below-minus-one", cfg(n_jobs=-3), "n_jobs"),
    ("executor-unknown", cfg(executor="spark"), "executor"),
    ("ray-address-with-local", cfg(ray_address="10.0.0.1:10001"), "ray_address"),
    ("attacks-empty", cfg(attacks=[]), "attacks"),
    ("attacks-unknown", cfg(attacks=["population", "lira"]), "'lira'"),
    ("attacks-duplicate", cfg(attacks=["population", "population"]), "attacks"),
    ("attacks-not-list", cfg(attacks="population"), "attacks"),
    (
        "attack-params-for-attack-not-run",
        cfg(attack_params={"reference": {"smoothing": "linear"}}),
        "reference",
    ),
    (
        "attack-param-unknown-name",
        cfg(attack_params={"population": {"smothing": "linear"}}),
        "attack_params.population",
    ),
    (
        "attack-param-bad-smoothing",
        cfg(attack_params={"population": {"smoothing": "cubic"}}),
        "attack_params.population",
    ),
    (
        "attack-param-bad-signal",
        cfg(attack_params={"population": {"signal": "gradient"}}),
        "signal",
    ),
    (
        "attack-param-negative-floor",
        cfg(attack_params={"population": {"sigma_floor": -1.0}}),
        "attack_params.population",
    ),
    (
        "attack-param-bad-variance",
        cfg(
            attacks=["lira-online"],
            models={"n_reference": 4},
            attack_params={"lira-online": {"variance": "wild"}},
        ),
        "attack_params.lira-online",
    ),
    (
        "attack-param-bad-calibration",
        cfg(
            attacks=["reference"],
            models={"n_reference": 4},
            attack_params={"reference": {"threshold_calibration": "magic"}},
        ),
        "attack_params.reference",
    ),
    (
        "attack-param-rmia-a-text",
        cfg(
            attacks=["rmia-offline"],
            models={"n_reference": 4},
            attack_params={"rmia-offline": {"a": "high"}},
        ),
        "attack_params.rmia-offline",
    ),
    (
        "attack-params-not-mapping",
        cfg(attack_params={"population": "linear"}),
        "attack_params",
    ),
    ("n-reference-odd", cfg(models={"n_reference": 5}), "models.n_reference"),
    ("n-reference-two", cfg(models={"n_reference": 2}), "models.n_reference"),
    ("n-shadow-zero", cfg(models={"n_shadow": 0}), "models.n_shadow"),
    ("n-distilled-one", cfg(models={"n_distilled": 1}), "models.n_distilled"),
    ("n-leave-one-out-one", cfg(models={"n_leave_one_out": 1}), "models.n_leave_one_out"),
    # the distillation objective is an attack name now (distillation / distillation-logits)
    ("distill-method-removed", cfg(models={"distill_method": "logits"}), "distill_method"),
    (
        "distill-logits-for-logistic",
        cfg(attacks=["distillation-logits"]),
        "distillation-logits",
    ),
    ("distill-size-one", cfg(models={"distill_size": 1}), "distill_size"),
    ("distill-size-above-population", cfg(models={"distill_size": 500}), "distill_size"),
    (
        "leave-one-out-sample-above-pool",
        cfg(attacks=["leave-one-out"], models={"leave_one_out_sample": 500}),
        "leave_one_out_sample",
    ),
    ("models-unknown-key", cfg(models={"n_references": 8}), "models.n_references"),
    ("pool-three", cfg(sizes={"n_target_pool": 3}), "sizes.n_target_pool"),
    ("pool-and-population-above-data", cfg(sizes={"n_population": 400}), "sizes"),
    (
        "population-too-small-for-shadow",
        cfg(attacks=["shadow"], sizes={"n_population": 40}),
        "sizes.n_population",
    ),
    (
        "population-too-small-for-distillation-calibration",
        cfg(attacks=["distillation"], sizes={"n_population": 30}, alpha=0.05),
        "sizes.n_population",
    ),
    (
        "population-too-small-for-calibration",
        cfg(
            attacks=["reference"],
            models={"n_reference": 4},
            sizes={"n_population": 10},
            alpha=0.05,
        ),
        "attacks",
    ),
    ("too-many-models-for-memory", cfg(models={"n_reference": 10**9}), "models"),
    (
        "too-many-reference-models-for-memory",
        cfg(attacks=["lira-online"], models={"n_reference": 10**7}),
        "models",
    ),
    ("sizes-unknown-key", cfg(sizes={"pool": 100}), "sizes.pool"),
    ("game-unknown", cfg(game="def-9.9"), "game"),
    ("game-zero-trials", cfg(game={"name": "def-3.1", "n_trials": 0}), "game.n_trials"),
    (
        "game-fixed-record-not-in-pool",
        cfg(game={"name": "def-3.3", "n_trials": 2, "fixed_records": ["nope"]}),
        "fixed_records",
    ),
    # ---- output and cache folders -------------------------------------------------------
    ("output-dir-is-file", with_file(cfg(), "report"), "report"),
    ("output-dir-inside-file", with_file(cfg(output_dir="blocker/report"), "blocker"), "blocker"),
    ("cache-dir-is-file", with_file(cfg(), "cache"), "cache_dir"),
    ("cache-dir-inside-file", with_file(cfg(cache_dir="blocker/cache"), "blocker"), "cache_dir"),
    ("cache-dir-equals-output", cfg(cache_dir="report"), "cache_dir"),
    (
        "output-dir-exists",
        lambda t: (t / "report").mkdir() or cfg()(t),
        "--overwrite",
    ),
    (
        "out-option-inside-file",
        lambda t: [*with_file(cfg(), "blocker")(t), "--out", "blocker/rep"],
        "blocker",
    ),
    # ---- CI formats and verify (issue 8 items 8-9) ---------------------------------------
    ("run-format-unknown", lambda t: [*cfg()(t), "--format", "xml"], "--format"),
    ("run-claimed-epsilon-negative", lambda t: [*cfg()(t), "--claimed-epsilon", "-1"], "epsilon"),
    ("run-claimed-epsilon-text", lambda t: [*cfg()(t), "--claimed-epsilon", "big"], "epsilon"),
    (
        "run-format-file-with-text",
        lambda t: [*cfg()(t), "--format-file", "o.json"],
        "--format-file",
    ),
    ("verify-without-bundle", args("verify"), "Missing argument"),
    ("verify-missing-bundle", args("verify", "absent-bundle"), "absent-bundle"),
    (
        "verify-not-a-bundle",
        lambda t: (t / "folder").mkdir() or ["verify", "folder"],
        "folder",
    ),
    # ---- audit and zero-run ----------------------------------------------------------------
    ("audit-missing-file", args("audit", "absent.csv"), "absent.csv"),
    ("audit-empty-file", args("audit", "s.csv", files={"s.csv": b""}), "FILE"),
    (
        "audit-parquet-named-csv",
        args("audit", "s.csv", files={"s.csv": parquet_bytes(scores())}),
        "FILE",
    ),
    (
        "audit-no-score-column",
        args("audit", "s.csv", files={"s.csv": scores().rename(columns={"score": "s"})}),
        "--score-col",
    ),
    (
        "audit-text-score",
        args("audit", "s.csv", files={"s.csv": scores().assign(score="high")}),
        "numeric scores",
    ),
    (
        "audit-bad-membership",
        args("audit", "s.csv", files={"s.csv": scores().assign(member="maybe")}),
        "membership",
    ),
    (
        "audit-confidence-out-of-range",
        args("audit", "s.csv", "--confidence", "1.5", files={"s.csv": scores()}),
        "confidence",
    ),
    (
        "zero-run-file-and-members",
        args("zero-run", "s.csv", "--members", "s.csv", files={"s.csv": scores()}),
        "not both",
    ),
    ("zero-run-nothing", args("zero-run"), "FILE"),
    (
        "zero-run-latin1",
        args("zero-run", "s.csv", files={"s.csv": "score,member,größe\n1,1,2\n".encode("latin-1")}),
        "FILE",
    ),
]


def _snapshot(root: Path) -> dict[str, bytes | None]:
    out: dict[str, bytes | None] = {}
    for p in sorted(root.rglob("*")):
        out[str(p.relative_to(root))] = None if p.is_dir() else p.read_bytes()
    return out


def test_corpus_has_at_least_100_distinct_cases() -> None:
    names = [c[0] for c in CASES]
    assert len(names) >= 100 and len(set(names)) == len(names)


@pytest.mark.parametrize(("name", "build", "expected"), CASES, ids=[c[0] for c in CASES])
def test_bad_input_exits_2_names_problem_writes_nothing(
    name: str,
    build: Builder,
    expected: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "200")  # typer's error box: keep the message on one line
    argv = build(tmp_path)
    before = _snapshot(tmp_path)
    rc = main(argv)
    captured = capsys.readouterr()
    text = captured.err + captured.out
    assert rc == 2, text
    assert expected.lower() in text.lower(), text
    assert "Traceback" not in text
    assert _snapshot(tmp_path) == before, "the failed command wrote files"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_read_only_output_parent_fails_before_training(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    argv = cfg(output_dir="locked/report", cache_dir=None)(tmp_path)
    (tmp_path / "locked").mkdir()
    (tmp_path / "locked").chmod(0o500)
    try:
        assert main(argv) == 2
        assert "read-only" in capsys.readouterr().err
    finally:
        (tmp_path / "locked").chmod(0o700)
