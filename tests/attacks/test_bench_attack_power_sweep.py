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
    # (4 families + the paper's RMIA + its prior with privaudit's score) x 2 modes x 3
    # reference counts x 1 seed
    assert len(rows) == 36
    defaults = set(default_attacks())
    for r in rows:
        assert set(r) == KEYS
        assert r["dataset"] == "cifar10-cnn" and r["seed"] == 0
        assert r["mode"] in ("online", "offline")
        assert r["attack"].split("[")[0].endswith(r["mode"])
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
    # the paper's RMIA beside privaudit's default; offline with one reference the
    # sweep keeps only records that reference is OUT for, so nothing tunes or matches a
    # and privaudit's RMIA falls back to the paper's 0.3: the two rows are the same
    for yardstick in bench.YARDSTICKS:
        for mode in ("online", "offline"):
            assert all(by[(yardstick[mode][2], k)]["default"] is False for k in (1, 2, 4))
    assert by[("rmia-offline", 1)]["auc"] == by[("rmia-offline[a=0.3]", 1)]["auc"]
    verdicts = bench.goal_verdicts(rows, [1, 2, 4])
    assert len(verdicts) == 6
    strict = bench.goal_verdicts(rows, [1, 2, 4], bench.PAPER_PRIOR_RMIA)
    assert strict["offline, 1 reference"] == "at (within noise)"


def test_the_papers_rmia_is_its_pairwise_score(bench: ModuleType) -> None:
    # the yardstick of the goal is the paper's score (the fraction of population records
    # dominated, gamma 2) and prior; the stricter one keeps the prior, privaudit's score
    for mode in ("online", "offline"):
        name, params, _ = bench.PAPER_RMIA[mode]
        assert name == f"rmia-{mode}"
        assert params["score"] == "fraction" and params["gamma"] == 2.0
        assert bench.PAPER_PRIOR_RMIA[mode][1] == {
            k: v for k, v in params.items() if k not in ("score", "gamma")
        }


def _rows(new: list[float], old: list[float], k: int = 1) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for attack, values in (("rmia-online", new), ("rmia-online[paper]", old)):
        for seed, v in enumerate(values):
            rows.append(
                {
                    "attack": attack,
                    "n_references": k,
                    "seed": seed,
                    "auc": v,
                    "tpr_at_1pct": v,
                    "tpr_at_0_1pct": None,
                }
            )
    return rows


def test_goal_verdicts_pair_seeds_and_weigh_noise(bench: ModuleType) -> None:
    def online(new: list[float], old: list[float]) -> str:
        return str(bench.goal_verdicts(_rows(new, old), [1])["online, 1 reference"])

    assert online([0.80, 0.82, 0.81], [0.70, 0.71, 0.72]) == "above"
    assert online([0.70, 0.71, 0.72], [0.80, 0.82, 0.81]) == "below"
    # a mean difference smaller than twice its standard error over seeds is noise
    assert online([0.80, 0.70, 0.75], [0.74, 0.76, 0.74]) == "at (within noise)"
    assert online([0.75, 0.75], [0.75, 0.75]) == "at (within noise)"
    rows = _rows([0.8, 0.8], [0.7, 0.7])
    rows[0]["auc"] = None  # the default is n/a on one seed
    assert bench.goal_verdicts(rows, [1])["online, 1 reference"] == "n/a"


def test_an_unknown_sweep_dataset_is_refused(bench: ModuleType) -> None:
    with pytest.raises(SystemExit, match="--datasets"):
        bench.main(["--sweep", "--datasets", "imagenet"])
