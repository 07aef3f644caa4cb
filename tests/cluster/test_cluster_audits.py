"""Every audit on a REAL two-node Ray cluster on 127.0.0.1 equals the local executor's
(issue 32, item 4): ``privaudit run`` (a classifier audit and the tiny-GPT language-model
audit), ``record-risk``, ``panoramia`` (tabular) and ``zero-run``, each with ``--ray
ADDRESS``. Bit-identical where the computation is (scikit-learn fits and NumPy on one
thread, the same seeds); the language model's token statistics within 1e-6 (torch's
reductions may differ with the thread count). Slow: the cluster takes ~40 s to start.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from privaudit.cli import main

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def _yaml(path: Path, cfg: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(cfg))
    return path


def _npz(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def _on_ray() -> bool:
    import ray

    return bool(ray.is_initialized())


RUN = {
    "dataset": "digits",
    "model": {"kind": "logistic", "params": {"C": 100.0, "max_iter": 300}},
    "sizes": {"n_target_pool": 200, "n_population": 400},
    "models": {"n_reference": 4},
    "attacks": ["population", "reference", "rmia-online"],
    "alpha": 0.1,
    "seed": 5,
}


def test_run_on_the_cluster_equals_local(two_nodes: Any, tmp_path: Path) -> None:
    cfg = _yaml(tmp_path / "audit.yaml", RUN)
    assert main(["run", str(cfg), "--no-progress", "--out", str(tmp_path / "local")]) == 0
    argv = ["run", str(cfg), "--no-progress", "--out", str(tmp_path / "ray")]
    assert main([*argv, "--ray", two_nodes.address]) == 0
    assert _on_ray()
    res = json.loads((tmp_path / "ray" / "results.json").read_text())
    assert res["settings"]["executor"] == "ray"
    local, remote = _npz(tmp_path / "local" / "scores.npz"), _npz(tmp_path / "ray" / "scores.npz")
    assert local.keys() == remote.keys()
    for k in local:
        np.testing.assert_array_equal(remote[k], local[k], err_msg=k)


RECORD_RISK = {
    "dataset": "adult",
    "target": {"kind": "generator", "generator": "baynet", "params": {"degree": 1}},
    "attack": "tapas-query",
    "attack_params": {"n_trees": 20},
    "n": 100,
    "n_targets": 4,
    "n_rounds": 8,
    "n_shadow": 8,
    "n_aux": 400,
    "rounds_per_task": 2,
    "seed": 0,
}


def _record_risk(tmp_path: Path, name: str, *extra: str, cfg: dict[str, Any] | None = None) -> Any:
    path = _yaml(tmp_path / f"{name}.yaml", {**(cfg or RECORD_RISK), "cache_dir": f"cache-{name}"})
    out = tmp_path / f"rep-{name}"
    assert main(["record-risk", str(path), "--out", str(out), "--no-progress", *extra]) == 0
    return json.loads((out / "results.json").read_text())["record_risk"]


def test_record_risk_on_the_cluster_equals_local(
    two_nodes: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    local = _record_risk(tmp_path, "local")
    remote = _record_risk(tmp_path, "ray", "--ray", two_nodes.address)
    assert _on_ray()
    assert remote["records"] == local["records"] and remote["summary"] == local["summary"]
    assert remote["releases"]["trained"] == local["releases"]["trained"] > 0


def _frame(n: int = 240, seed: int = 0) -> Any:
    import pandas as pd

    rng = np.random.default_rng(seed)
    mem = np.arange(n) < n // 2
    x1 = rng.standard_normal(n) + 0.7 * mem
    return pd.DataFrame(
        {
            "x1": x1,
            "x2": rng.standard_normal(n),
            "score": rng.standard_normal(n) + 1.0 * mem + 0.5 * x1,
            "member": np.where(mem, "true", "false"),
        }
    )


def test_zero_run_on_the_cluster_equals_local(
    two_nodes: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "audit.csv"
    _frame().to_csv(path, index=False)
    argv = ["zero-run", str(path), "--estimators", "logistic-sigmoid", "--bootstrap", "4", "--json"]
    assert main(argv) == 0
    local = json.loads(capsys.readouterr().out)
    assert main([*argv, "--ray", two_nodes.address]) == 0
    assert _on_ray()
    assert json.loads(capsys.readouterr().out) == local


@pytest.fixture(scope="module")
def owner(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tabular target trained outside privaudit on 500 Adult records; 400 are known."""
    import skops.io as sio
    from sklearn.neural_network import MLPClassifier

    from privaudit.data import load_adult

    root = tmp_path_factory.mktemp("owner")
    data = load_adult()
    perm = np.random.default_rng(7).permutation(data.n_records)
    train_ids = data.record_ids[perm[:500]]
    train = data.subset(train_ids)
    clf = MLPClassifier(hidden_layer_sizes=(16,), max_iter=40, random_state=0)
    with pytest.warns(Warning):
        clf.fit(train.X, train.y)
    sio.dump(clf, root / "target.skops")
    (root / "members.txt").write_text("\n".join(map(str, train_ids[:400])) + "\n")
    return root


def test_panoramia_on_the_cluster_equals_local(
    two_nodes: Any, owner: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = {
        "modality": "tabular",
        "target": {"kind": "sklearn", "path": str(owner / "target.skops")},
        "model": {"kind": "mlp", "params": {"hidden_layer_sizes": [16], "max_iter": 40}},
        "data": {"dataset": "adult", "members": str(owner / "members.txt")},
        "generator": {"kind": "baynet", "params": {"degree": 1}, "n_bins": 4},
        "scorer": {"max_iter": 30},
        "seed": 3,
    }
    outs = {}
    runs = (("local", {}, []), ("processes", {"n_jobs": 2}, []),
            ("ray", {}, ["--ray", two_nodes.address]))  # fmt: skip
    for name, over, extra in runs:
        path = _yaml(tmp_path / f"{name}.yaml", {**cfg, **over})
        out = tmp_path / name
        assert main(["panoramia", str(path), "--no-progress", "--out", str(out), *extra]) == 0
        outs[name] = json.loads((out / "results.json").read_text())["panoramia"]
    assert _on_ray()
    local = _npz(tmp_path / "local" / "panoramia_scores.npz")
    for name in ("processes", "ray"):  # the two classifiers in 2 local processes, on Ray
        for key in ("bounds", "classifiers", "sizes"):
            assert outs[name][key] == outs["local"][key], (name, key)
        other = _npz(tmp_path / name / "panoramia_scores.npz")
        for k in local:
            np.testing.assert_array_equal(other[k], local[k], err_msg=f"{name}: {k}")


@pytest.fixture(scope="module")
def lm_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    pytest.importorskip("torch")
    from privaudit.data.text import write_text_records
    from privaudit.llm.audit import audited_records, shakespeare_split
    from privaudit.models.lm_builders import tiny_gpt

    root = tmp_path_factory.mktemp("lms")
    chunks, split = shakespeare_split({"members": 24, "non_members": 24}, seed=1)
    return {
        "target": tiny_gpt(seed=0, max_length=128).save(root / "target"),
        "reference": tiny_gpt(seed=1, max_length=128).save(root / "reference"),
        "texts": write_text_records(audited_records(chunks, split), root / "texts.jsonl"),
    }


def test_llm_audit_on_the_cluster_equals_local(
    two_nodes: Any, lm_dirs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = {
        "target": {"kind": "huggingface", "path": str(lm_dirs["target"])},
        "reference": {"path": str(lm_dirs["reference"])},
        "data": {"texts": str(lm_dirs["texts"])},
        "batch_size": 16,
        "blind_folds": 3,
        "device": "cpu",
    }
    path = _yaml(tmp_path / "llm.yaml", cfg)
    for name, extra in (("local", []), ("ray", ["--ray", two_nodes.address])):
        assert main(["run", str(path), "--no-progress", "--out", str(tmp_path / name), *extra]) == 0
    assert _on_ray()
    local = _npz(tmp_path / "local" / "scores.npz")
    remote = _npz(tmp_path / "ray" / "scores.npz")
    assert local.keys() == remote.keys()
    for k in local:
        if local[k].dtype.kind == "f":
            np.testing.assert_allclose(remote[k], local[k], rtol=1e-6, atol=1e-6, err_msg=k)
        else:
            np.testing.assert_array_equal(remote[k], local[k], err_msg=k)
