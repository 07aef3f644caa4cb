"""``benchmarks/bench_dp_cifar10.py``: the one-run audit of a DP-SGD CIFAR-10 CNN (issue 31).

A tiny end-to-end run (a few hundred images, one epoch) in the default suite; the check
that flags a bound above the accountant; the perfect-guesser ceiling against the
statistics; and, marked slow, a run large enough that the non-private model's
mislabelled canaries are told apart while the DP-SGD model's bound stays below the
accountant.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

pytest.importorskip("torch")  # the benchmark trains the torch CNN

KEYS = {"canary", "accountant_eps", "eps_lb", "mu_lb", "m", "seed"}


@pytest.fixture(scope="module")
def bench(repo_module: Callable[..., ModuleType]) -> ModuleType:
    return repo_module("benchmarks/bench_dp_cifar10.py")


def test_tiny_run_writes_the_rows_and_stays_below_the_accountant(
    tmp_path: Path, bench: ModuleType
) -> None:
    pytest.importorskip("opacus")
    out = tmp_path / "dp.json"
    argv = ["--seeds", "1", "--m", "100", "--n-base", "200", "--epochs", "1",
            "--non-private-epochs", "1", "--batch-size", "64", "--json", str(out)]  # fmt: skip
    assert bench.main(argv) == 0
    doc = json.loads(out.read_text())
    assert set(doc) == {"rows", "non_private", "runs", "settings"}
    assert [r["canary"] for r in doc["rows"]] == ["natural", "mislabelled"]
    assert [r["canary"] for r in doc["non_private"]] == ["natural", "mislabelled"]
    for r in doc["rows"] + doc["non_private"]:
        assert set(r) == KEYS and r["m"] == 100 and r["seed"] == 0
        assert r["eps_lb"] >= 0.0 and r["mu_lb"] >= 0.0
    for r in doc["rows"]:  # Opacus spent the target eps 8 (RDP accountant, delta 1e-5)
        assert 7.5 < r["accountant_eps"] <= 8.0 + 1e-6
        assert r["eps_lb"] <= r["accountant_eps"]
    assert all(r["accountant_eps"] is None for r in doc["non_private"])
    dp_run, np_run = doc["runs"]
    assert dp_run["model"] == "DP-SGD" and dp_run["noise_multiplier"] > 0.3
    assert np_run["model"] == "non-private" and np_run["noise_multiplier"] is None
    # the training set: 200 base images plus the included canaries of both sets
    assert 200 < dp_run["n_train"] == np_run["n_train"] < 400
    for run in doc["runs"]:
        assert run["cpu_s"] > 0.0 and run["wall_s"] > 0.0
        for canary in ("natural", "mislabelled"):
            assert 0.0 <= run["fdp_eps_lb"][canary] <= run["ceiling"][canary] + 1e-9


def test_violations_flag_a_bound_above_the_accountant(bench: ModuleType) -> None:
    ok = bench._row("natural", 8.0, 0.4, 0.1, 100, 0)
    over = bench._row("mislabelled", 8.0, 8.2, 2.0, 100, 3)
    free = bench._row("mislabelled", None, 50.0, 9.0, 100, 0)  # non-private: nothing claimed
    assert bench.violations([ok, free], []) == []
    got = bench.violations([ok, over], [])
    assert (
        len(got) == 1 and "seed 3 mislabelled" in got[0] and "8.2000 > accountant 8.0000" in got[0]
    )
    runs = [{"seed": 1, "accountant_eps": 1.0, "fdp_eps_lb": {"natural": 1.5, "mislabelled": 0.2}}]
    got = bench.violations([], runs)
    assert len(got) == 1 and "seed 1 natural: f-DP eps_lb 1.5000" in got[0]


def test_main_exits_1_on_a_violation_and_2_on_bad_sizes(
    monkeypatch: pytest.MonkeyPatch, bench: ModuleType
) -> None:

    def fake_seed(data: Any, *, seed: int, m: int, **_: Any) -> tuple[list[Any], ...]:
        rows = [
            bench._row(c, 1.0, e, 0.5, m, seed) for c, e in (("natural", 0.2), ("mislabelled", 1.3))
        ]
        non_private = [bench._row(c, None, 3.0, 1.0, m, seed) for c in ("natural", "mislabelled")]
        runs = [
            {"seed": seed, "model": name, "accountant_eps": acc, "noise_multiplier": nm,
             "n_train": 10, "train_accuracy": 0.5, "test_accuracy": 0.5,
             "fdp_eps_lb": {"natural": 0.1, "mislabelled": 0.1},
             "ceiling": {"natural": 4.5, "mislabelled": 4.5}, "wall_s": 0.0, "cpu_s": 0.0}
            for name, acc, nm in (("DP-SGD", 1.0, 1.0), ("non-private", None, None))
        ]  # fmt: skip
        return rows, non_private, runs

    monkeypatch.setattr(bench, "one_seed", fake_seed)
    monkeypatch.setattr(bench, "load_cifar10", lambda: type("D", (), {"n_records": 6102})())
    assert bench.main(["--seeds", "1"]) == 1
    with pytest.raises(SystemExit) as exc:
        bench.main(["--m", "3000"])  # 2 m + n_base + 1,000 test images > 6,102
    assert exc.value.code == 2
    assert bench.check_sizes(6102, 1000, 2000) is None
    assert "found 7000" in str(bench.check_sizes(6102, 2000, 2000))


def test_ceiling_is_the_perfect_guessers_bound_and_grows_with_m(bench: ModuleType) -> None:
    from privaudit import one_run_audit

    rng = np.random.default_rng(0)
    tops = []
    for m in (100, 1000):
        inc = rng.integers(0, 2, size=m).astype(bool)
        eps_top, mu_top = bench.ceiling(inc)
        # any scores: never above the perfect guesser's bound on the same coins
        s = inc + rng.normal(scale=0.7, size=m)
        assert (
            one_run_audit(s, inc, delta=bench.DELTA, confidence=0.95).epsilon_lower_bound <= eps_top
        )
        assert mu_top > 0.0
        tops.append(eps_top)
    assert 0.0 < tops[0] < tops[1] < bench.TARGET_EPS  # m = 1,000 cannot certify eps 8 (see docs)


@pytest.mark.slow  # several minutes on two shared cores: 1,200 training images, 20 epochs
def test_non_private_canaries_are_told_apart_and_dp_stays_below(bench: ModuleType) -> None:
    pytest.importorskip("opacus")
    from privaudit import load_cifar10

    rows, non_private, runs = bench.one_seed(
        load_cifar10(), seed=0, m=400, n_base=800, epochs=5, batch_size=256, lr=0.5,
        momentum=0.9, non_private_epochs=20,
    )  # fmt: skip
    dp = {r["canary"]: r for r in rows}
    npv = {r["canary"]: r for r in non_private}
    assert all(r["eps_lb"] <= r["accountant_eps"] for r in rows)
    # a non-private CNN fits its mislabelled canaries: their loss gives them away
    assert npv["mislabelled"]["eps_lb"] > 0.5
    assert npv["mislabelled"]["eps_lb"] > dp["mislabelled"]["eps_lb"]
    assert runs[1]["train_accuracy"] > 0.9
