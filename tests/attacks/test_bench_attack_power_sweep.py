"""``benchmarks/bench_attack_power.py --sweep``: the few-reference sweep's rows (issue 34).

A tiny CIFAR-10 CNN sweep (200 audited images, 2 epochs, 1, 2 and 4 reference models) in
the default suite: the JSON rows carry exactly the issue's keys, the attacks the
references cannot support are n/a (null), and ``default`` follows privaudit's defaults.
The full sweep (Adult MLP and the CIFAR-10 CNN, 8 references, 3 seeds) is a benchmark.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("torch")  # the CIFAR-10 CNN

KEYS = {
    "dataset", "attack", "mode", "n_references", "seed", "auc", "tpr_at_1pct", "tpr_at_0_1pct",
    "default",
}  # fmt: skip


@pytest.fixture(scope="module")
def bench(repo_module: Callable[..., ModuleType]) -> ModuleType:
    return repo_module("benchmarks/bench_attack_power.py")


def test_tiny_cifar10_sweep_writes_the_issue_rows(tmp_path: Path, bench: ModuleType) -> None:
    from privaudit.attacks import default_attacks

    out = tmp_path / "sweep.json"
    argv = ["--sweep", "--datasets", "cifar10", "--quick", "--references", "1,2,4",
            "--seeds", "0", "--n-jobs", "1", "--cache-dir", str(tmp_path / "c"),
            "--json", str(out)]  # fmt: skip
    assert bench.main(argv) == 0
    rows = json.loads(out.read_text())
    # 4 families x 2 modes x 3 reference counts x 1 seed
    assert len(rows) == 24
    defaults = set(default_attacks())
    for r in rows:
        assert set(r) == KEYS
        assert r["dataset"] == "cifar10-cnn" and r["seed"] == 0
        assert r["mode"] in ("online", "offline") and r["attack"].endswith(r["mode"])
        assert r["default"] == (r["attack"] in defaults)
        if r["auc"] is not None:
            assert 0.0 <= r["auc"] <= 1.0
    by = {(r["attack"], r["n_references"]): r for r in rows}
    # one reference model: no record has an IN and an OUT model, so LiRA and BaVarIA
    # online cannot learn their two Gaussians; RMIA needs no world split
    assert by[("lira-online", 1)]["auc"] is None
    assert by[("bavaria-online", 1)]["auc"] is None
    assert by[("rmia-online", 1)]["auc"] is not None
    # with 4 references every family runs in both modes
    assert all(by[(a, 4)]["auc"] is not None for a, _ in by)


def test_an_unknown_sweep_dataset_is_refused(bench: ModuleType) -> None:
    with pytest.raises(SystemExit, match="--datasets"):
        bench.main(["--sweep", "--datasets", "imagenet"])
