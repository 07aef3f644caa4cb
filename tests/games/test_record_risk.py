"""Record-level games (Krčo et al. 2025): plans, the planted fixture, metrics, resume."""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any, ClassVar

import numpy as np
import pytest

from privaudit.data.dataset import Dataset
from privaudit.errors import InvalidInputError
from privaudit.generators import DiscreteTable
from privaudit.metrics.roc import auc
from privaudit.record_risk.metrics import (
    auc_standard_error,
    compare_risks,
    hoeffding_width,
    miss_rate,
    per_record_auc,
    rmsd,
    rmsd_gap_test,
)
from privaudit.record_risk.risk import RecordRiskConfig, run_record_risk
from privaudit.record_risk.rounds import distance_vulnerability, make_plan
from privaudit.runtime.executor import LocalExecutor

D_ATTR, CARD = 8, 10


def universe(N: int = 900, seed: int = 0) -> tuple[Dataset, DiscreteTable]:
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, CARD, size=(N, D_ATTR))
    ids = np.asarray([f"r{i:04d}" for i in range(N)])
    ds = Dataset(
        "planted",
        ids,
        codes.astype(float),
        rng.integers(0, 2, N),
        tuple(f"a{j}" for j in range(D_ATTR)),
        ("0", "1"),
    )
    return ds, DiscreteTable(ids, codes, (CARD,) * D_ATTR, tuple(f"a{j}" for j in range(D_ATTR)))


def small_plan(ds: Dataset, **kw: Any) -> Any:
    args = {"n": 60, "n_targets": 4, "n_rounds": 20, "n_shadow": 8, "n_aux": 300, "seed": 3}
    args.update(kw)
    return make_plan(ds.X, **args)


def test_rounds_keep_size_exclude_x_and_are_recreated_from_the_seed() -> None:
    ds, _ = universe()
    plan = small_plan(ds)
    assert set(plan.targets) <= set(plan.d0)
    assert not set(plan.aux) & set(plan.d0) and not set(plan.reference) & set(plan.d0)
    for k in range(plan.n_targets):
        x = plan.targets[k]
        for key in plan.rounds("ms-out", 0)[k * plan.n_out : (k + 1) * plan.n_out]:
            spec = plan.round(*key)
            assert x not in spec.positions  # OUT datasets never contain x
            assert spec.positions.size == plan.n and np.unique(spec.positions).size == plan.n
            assert np.setdiff1d(spec.positions, plan.d0).size == 1  # D0 - x + z
    for key in plan.rounds("ms-in", 0):
        assert np.array_equal(plan.round(*key).positions, plan.d0)
    for kind in ("traditional", "shadow"):
        for key in plan.rounds(kind, 1):
            spec = plan.round(*key)
            assert spec.positions.size == plan.n and np.unique(spec.positions).size == plan.n
            inside = np.isin(plan.targets, spec.positions)
            assert np.array_equal(inside, spec.member)  # each target in iff its bit is 1
            pool = plan.background if kind == "traditional" else plan.aux
            rest = np.setdiff1d(spec.positions, plan.targets[spec.member])
            assert np.all(np.isin(rest, pool))
    # any round, re-created from the seed alone (a fresh plan from the same arguments)
    again = small_plan(ds)
    for key in [("traditional", 0, 5, -1), ("ms-out", 1, 3, 2), ("shadow", 0, 1, -1)]:
        a, b = plan.round(*key), again.round(*key)
        assert np.array_equal(a.positions, b.positions) and a.seed == b.seed
    # separate data and training streams, and independent replicates
    d0, t0 = plan.streams("traditional", 0)
    d1, t1 = plan.streams("traditional", 1)
    assert len({d0, t0, d1, t1}) == 4
    assert not np.array_equal(
        plan.round("traditional", 0, 0).positions, plan.round("traditional", 1, 0).positions
    )


def test_vulnerability_score_prefers_outliers_and_half_targets_are_random() -> None:
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(size=(50, 3)) + 5, [[-5.0, 5.0, 0.0]]])
    assert int(np.argmax(distance_vulnerability(X, 5))) == 50
    ds, _ = universe()
    plan = small_plan(ds, n_targets=6)
    assert plan.vulnerable.tolist() == [True] * 3 + [False] * 3
    score = distance_vulnerability(ds.X[plan.d0])
    assert set(plan.targets[:3]) == set(plan.d0[np.argsort(-score)[:3]])


class PlantedGenerator:
    """Uniform random rows; when trained on exactly D0 it also copies x with probability p."""

    randomised = True
    name = "planted"

    def __init__(self, d0: np.ndarray, x: np.ndarray, p: float) -> None:
        self.d0 = np.sort(d0.view([("", d0.dtype)] * d0.shape[1]).ravel())
        self.x, self.p = x, p

    def settings(self) -> dict[str, Any]:
        return {"p": self.p, "x": self.x.tolist()}

    def fit(self, codes: np.ndarray, cardinalities: tuple[int, ...], *, seed: int) -> Any:
        rows = np.sort(
            np.ascontiguousarray(codes).view([("", codes.dtype)] * codes.shape[1]).ravel()
        )
        copy = bool(np.array_equal(rows, self.d0)) and np.random.default_rng(seed).random() < self.p
        return _Sampler(copy, self.x)


class _Sampler:
    def __init__(self, copy: bool, x: np.ndarray) -> None:
        self.copy, self.x = copy, x

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        out = rng.integers(0, CARD, size=(n, D_ATTR))
        if self.copy:
            out[0] = self.x
        return out


def test_planted_record_has_the_known_risk_in_each_game(tmp_path: Any) -> None:
    """x is copied (probability p = 0.8) only by releases trained on D0 itself.

    Model-seeded game: IN rounds are A(D0): R_MS(x) = p * 1 + (1 - p) * 1/2 = 0.9 for the
    distance attack; no traditional round trains on D0: R_T(x) = 1/2; every other target
    has risk 1/2 in both games. So MR(0.8) = 1: the traditional game misses x.
    """
    ds, table = universe()
    cfg = RecordRiskConfig(
        n=60, n_targets=8, n_rounds=200, n_shadow=8, n_aux=300, seed=3, replicates=True
    )
    plan = small_plan(ds, n_rounds=200, n_targets=8)
    x = table.codes[plan.targets[0]]
    gen = PlantedGenerator(table.codes[plan.d0], x, 0.8)
    res = run_record_risk(ds, gen, "dcr", cfg, table=table)
    assert res.record_ids[0] == ds.record_ids[plan.targets[0]]
    ms, tr = res.risks["model-seeded"], res.risks["traditional"]
    se = float(ms["se"][0])
    assert abs(ms["auc"][0] - 0.9) < 4 * max(se, 0.02)
    assert abs(tr["auc"][0] - 0.5) < 4 * float(tr["se"][0])
    # a target sharing no attribute with x: a copied x is never its closest row
    far = [k for k in range(1, 8) if np.all(table.codes[plan.targets[k]] != x)]
    assert far
    for g in ("model-seeded", "traditional", "model-seeded-2", "traditional-2"):
        others = res.risks[g]["auc"][far]
        assert np.all(np.abs(others - 0.5) < 4 * res.risks[g]["se"][far] + 0.02)
    assert res.comparison["thresholds"]["0.8"]["miss_rate"] == 1.0
    assert res.comparison["thresholds"]["0.8"]["miss_rate_noise_ms"] == 0.0
    # each risk with its 95% interval (DeLong, logit; exact at AUC 1), x's holding 0.9
    for g, r in res.risks.items():
        assert np.all((r["auc_lo"] <= r["auc"]) & (r["auc"] <= r["auc_hi"])), g
        assert r["confidence"] == pytest.approx(0.95)
    assert ms["auc_lo"][0] <= 0.9 <= ms["auc_hi"][0]
    # the gap test's spread from a bootstrap over the releases, reproducible from the seed
    gap = res.comparison["gap_test"]
    assert gap["method"] == "release-bootstrap" and gap["n_bootstrap"] == 1000
    assert gap["p"] >= 1 / 1001
    assert res.summary()["n_rounds"] == 200
    assert ms["n_in"].tolist() == [100] * 8 and ms["n_out"].tolist() == [100] * 8
    assert res.risks["model-seeded"]["hoeffding_width"] == pytest.approx(
        math.sqrt(math.log(40) / 400)
    )
    # the result saves the folder `privaudit record-risk` writes
    folder = res.save(tmp_path / "rr", settings={"seed": 3})
    assert {p.name for p in folder.iterdir()} == {"results.json", "records.csv", "report.html"}
    saved = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    assert saved["settings"] == {"seed": 3} and saved["record_risk"]["records"] == res.table()
    assert saved["record_risk"]["auc_ci_confidence"] == pytest.approx(0.95)
    header = (folder / "records.csv").read_text(encoding="utf-8").splitlines()[0].split(",")
    for g in res.risks:
        assert {f"auc_{g}", f"auc_lo_{g}", f"auc_hi_{g}", f"se_{g}"} <= set(header)
        assert saved["record_risk"]["records"][0][f"auc_lo_{g}"] == float(res.risks[g]["auc_lo"][0])
    html = (folder / "report.html").read_text(encoding="utf-8")
    assert "95% CI" in html and "Hanley" not in html and "bootstrap over releases" in html


def test_deterministic_learner_is_flagged_and_runs_resume_from_the_store(tmp_path: Any) -> None:
    from sklearn.linear_model import LogisticRegression

    from privaudit.models.sklearn import SklearnTrainer

    ds, _ = universe(600)
    cfg = RecordRiskConfig(
        n=80, n_targets=2, n_rounds=6, n_shadow=4, n_aux=200, seed=1, replicates=False
    )
    trainer = SklearnTrainer(LogisticRegression(max_iter=200), n_classes=2, name="logreg")
    first = run_record_risk(ds, trainer, "loss", cfg, store=tmp_path)
    assert any("deterministic" in w for w in first.warnings)
    again = run_record_risk(ds, trainer, "loss", cfg, store=tmp_path, executor=LocalExecutor(1))
    assert again.releases["trained"] == 0 and again.releases["loaded"] == first.releases["trained"]
    assert np.array_equal(again.risks["model-seeded"]["auc"], first.risks["model-seeded"]["auc"])
    with pytest.raises(InvalidInputError, match="attack"):
        run_record_risk(ds, trainer, "tapas-query", cfg)


def test_per_record_auc_matches_pair_counting_and_metrics() -> None:
    rng = np.random.default_rng(0)
    S = rng.integers(0, 5, size=(6, 30)).astype(float)
    M = rng.random((6, 30)) < 0.5
    M[:, 0], M[:, 1] = True, False
    got = per_record_auc(S, M)
    for i in range(6):
        assert got[i] == pytest.approx(auc(S[i], M[i]))
    # at AUC = 1/2 Hanley-McNeil gives the exact null variance (n1 + n0 + 1) / (12 n1 n0)
    assert auc_standard_error(np.array([0.5]), [50], [50])[0] == pytest.approx(
        math.sqrt(101 / 30000)
    )
    assert hoeffding_width(200, 0.05) == pytest.approx(math.sqrt(math.log(40) / 400))
    ms = np.array([0.9, 0.85, 0.6, 0.5])
    t = np.array([0.7, 0.9, 0.6, 0.55])
    assert miss_rate(ms, t, 0.8) == 0.5
    assert miss_rate(ms, t, 0.95) is None
    assert rmsd(ms, t) == pytest.approx(np.sqrt(np.mean((ms - t) ** 2)))
    c = compare_risks(ms, t, ms, t)
    assert c["rmsd_noise_ms"] == 0.0 and c["thresholds"]["0.8"]["miss_rate_noise_ms"] == 0.0
    assert c["gap_test"]["excess_msd"] == pytest.approx(np.mean((ms - t) ** 2))
    assert compare_risks(ms, t)["gap_test"] is None


def test_rmsd_gap_test_null_calibrated_and_detects_a_gap() -> None:
    """Same risk in both games: p < 0.05 in about 5% of simulations; a planted gap: always."""
    rng = np.random.default_rng(0)
    k, reps = 64, 400
    rejections = 0
    for _ in range(reps):
        r = rng.uniform(0.5, 0.9, k)
        ms, ms2 = r + rng.normal(0, 0.03, (2, k))
        t, t2 = r + rng.normal(0, 0.05, (2, k))
        g = rmsd_gap_test(ms, t, ms2, t2)
        rejections += g["p"] < 0.05
    # beta + 3 SE: the normal approximation over 64 records is close, not exact
    assert rejections / reps <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / reps)
    r = rng.uniform(0.5, 0.9, k)
    shift = rng.choice([-0.08, 0.08], k)  # the traditional game averages over datasets
    ms, ms2 = r + rng.normal(0, 0.03, (2, k))
    t, t2 = r + shift + rng.normal(0, 0.03, (2, k))
    g = rmsd_gap_test(ms, t, ms2, t2)
    assert g["p"] < 1e-6 and g["excess_rmsd"] == pytest.approx(0.08, abs=0.02)


class _CountingTorchTrainer:
    """A torch trainer that records the size of each batched ``fit_many`` call."""

    calls: ClassVar[list[int]] = []

    def __new__(cls, batched: bool) -> Any:
        from privaudit.models.torch_models import TorchRecipe, TorchTrainer

        class Counting(TorchTrainer):
            def fit_many(self, X: Any, y: Any, subsets: Any, seeds: Any, **kw: Any) -> Any:
                cls.calls.append(len(subsets))
                return super().fit_many(X, y, subsets, seeds, **kw)

        recipe = TorchRecipe(
            factory="privaudit.models.torch_nets:mlp",
            factory_kwargs={"n_features": D_ATTR, "n_classes": 2, "hidden": 8},
            epochs=3,
            batch_size=20,
            lr=1e-2,
            device="cpu",
        )
        return Counting(recipe, n_classes=2, name="mlp", batched=batched)


def test_batched_torch_classifier_trains_tasks_as_one_fit_and_matches_one_by_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("torch")
    monkeypatch.setenv("PRIVAUDIT_THREADS_PER_WORKER", "1")
    ds, _ = universe(600)
    cfg = RecordRiskConfig(
        n=80,
        n_targets=3,
        n_rounds=8,
        n_shadow=16,
        n_aux=200,
        seed=2,
        replicates=False,
        rounds_per_task=8,
    )
    _CountingTorchTrainer.calls.clear()
    batched = run_record_risk(ds, _CountingTorchTrainer(batched=True), "lira", cfg)
    # shadow 16 -> 8 + 8; traditional 8; model-seeded IN 4; OUT 3 x 4 = 12 -> 8 + 4
    assert sorted(_CountingTorchTrainer.calls) == [4, 4, 8, 8, 8, 8]
    assert batched.releases["trained"] == 16 + 8 + 4 + 12
    _CountingTorchTrainer.calls.clear()
    single = run_record_risk(ds, _CountingTorchTrainer(batched=False), "lira", cfg)
    assert _CountingTorchTrainer.calls == []
    # each round is re-created from its seed alone: the batched fits equal the
    # one-by-one fits up to floating-point rounding, so every per-record AUC agrees
    for game in ("model-seeded", "traditional"):
        assert np.allclose(batched.risks[game]["auc"], single.risks[game]["auc"])
    assert batched.summary()["rmsd"] == pytest.approx(single.summary()["rmsd"])


def test_per_target_traditional_rounds_are_plain_draws() -> None:
    """Issue 28: traditional: per-target plays Def. 2 (one target per round, the rest a plain
    draw from the evaluation pool minus x); the amortised rounds hold about half the targets."""
    ds, _ = universe()
    plan = small_plan(ds, n_targets=6, n_rounds=40)
    evaluation = np.union1d(plan.d0, plan.reference)
    keys = plan.rounds("traditional-target", 0)
    assert len(keys) == plan.n_targets * plan.n_rounds
    others_amortised, others_plain, bits = [], [], []
    for key in keys:
        spec = plan.round(*key)
        k = spec.target
        x = plan.targets[k]
        assert spec.positions.size == plan.n and np.unique(spec.positions).size == plan.n
        assert spec.scored.tolist() == [k] and (x in spec.positions) == bool(spec.member[0])
        assert np.all(np.isin(spec.positions, evaluation))
        bits.append(bool(spec.member[0]))
        others_plain.append(np.isin(np.delete(plan.targets, k), spec.positions).mean())
    for key in plan.rounds("traditional", 0):
        spec = plan.round(*key)
        others_amortised.append(spec.member.mean())
    # a plain draw holds another target about as often as any record: n / |evaluation|
    share = plan.n / evaluation.size
    assert abs(np.mean(others_plain) - share) < 0.05 < abs(np.mean(others_amortised) - share)
    assert abs(np.mean(others_amortised) - 0.5) < 0.1 and abs(np.mean(bits) - 0.5) < 0.1
    again = small_plan(ds, n_targets=6, n_rounds=40)
    a, b = plan.round("traditional-target", 1, 7, 2), again.round("traditional-target", 1, 7, 2)
    assert np.array_equal(a.positions, b.positions) and a.seed == b.seed
    assert not np.array_equal(a.positions, plan.round("traditional-target", 0, 7, 2).positions)


class PairGenerator:
    """Uniform random rows; copies x into its release when trained on both x and y."""

    randomised = True
    name = "pair"

    def __init__(self, x: np.ndarray, y: np.ndarray) -> None:
        self.x, self.y = x, y

    def settings(self) -> dict[str, Any]:
        return {"x": self.x.tolist(), "y": self.y.tolist()}

    def fit(self, codes: np.ndarray, cardinalities: tuple[int, ...], *, seed: int) -> Any:
        both = all(bool(np.any(np.all(codes == r, axis=1))) for r in (self.x, self.y))
        return _Sampler(both, self.x)


def test_amortised_traditional_rounds_change_r_t_where_targets_interact(tmp_path: Any) -> None:
    """Issue 28: x leaks only when another target y is in the training set. The amortised
    traditional game holds y with probability 1/2, so R_T(x) = 1/2 + 1/4 = 0.75; the
    paper's plain draws hold it with probability (n - 1)/(|evaluation| - 1) ~ 0.1, so
    R_T(x) ~ 0.55. The model-seeded game (D0 holds y) gives R_MS(x) = 1 either way."""
    ds, table = universe()
    base = {"n": 60, "n_targets": 4, "n_rounds": 400, "n_shadow": 8, "n_aux": 300, "seed": 3}
    plan = small_plan(ds, n_targets=4, n_rounds=400)
    gen = PairGenerator(table.codes[plan.targets[0]], table.codes[plan.targets[1]])
    amortised = run_record_risk(
        ds, gen, "dcr", RecordRiskConfig(**base, replicates=False), table=table, store=tmp_path
    )
    plain = run_record_risk(
        ds,
        gen,
        "dcr",
        RecordRiskConfig(**base, replicates=False, traditional="per-target"),
        table=table,
        store=tmp_path,
    )
    n_eval = ds.n_records - base["n_aux"]
    q_plain = (base["n"] - 1) / (n_eval - 1)
    for res, q in ((amortised, 0.5), (plain, q_plain)):
        t = res.risks["traditional"]
        assert abs(t["auc"][0] - (0.5 + q / 2)) < 4 * float(t["se"][0]) + 0.01
        assert t["n_in"][0] + t["n_out"][0] == base["n_rounds"]
        assert res.risks["model-seeded"]["auc"][0] == pytest.approx(1.0)
    assert plain.risks["traditional"]["auc"][0] < amortised.risks["traditional"]["auc"][0] - 0.1
    # the model-seeded rounds came from the store; only the K n_rounds plain rounds trained
    assert plain.releases["trained"] == base["n_targets"] * base["n_rounds"]
    assert plain.to_dict()["constructions"]["traditional"].startswith("per-target")
    with pytest.raises(InvalidInputError, match="traditional"):
        RecordRiskConfig(**base, traditional="plain")


def _shadow_rounds_needed(ds: Dataset, seed: int, n_targets: int, limit: int = 200) -> int:
    """Fewest shadow releases giving every target at least 2 IN and 2 OUT, read off the
    plan's own shadow rounds (round r's membership does not depend on n_shadow)."""
    plan = small_plan(ds, n=80, n_aux=200, n_targets=n_targets, n_shadow=limit, seed=seed)
    member = np.asarray([plan.round(*key).member for key in plan.rounds("shadow")])
    ok = np.all((np.cumsum(member, 0) >= 2) & (np.cumsum(~member, 0) >= 2), axis=1)
    assert ok.any()
    return int(np.argmax(ok)) + 1


class _CountingLogReg:
    """A logistic-regression trainer that counts its fits."""

    name = "logreg"

    def __init__(self) -> None:
        from sklearn.linear_model import LogisticRegression

        from privaudit.models.sklearn import SklearnTrainer

        self.inner = SklearnTrainer(LogisticRegression(max_iter=200), n_classes=2, name="logreg")
        self.fits = 0

    def settings(self) -> dict[str, Any]:
        return self.inner.settings()

    def fit(self, X: Any, y: Any, *, seed: int, **kw: Any) -> Any:
        self.fits += 1
        return self.inner.fit(X, y, seed=seed, **kw)


class _NeverFits:
    """A generator that must not be trained."""

    randomised = True
    name = "never"

    def settings(self) -> dict[str, Any]:
        return {}

    def fit(self, codes: Any, cardinalities: Any, *, seed: int) -> Any:
        raise AssertionError("trained before the shadow design was checked")


def test_trained_attack_refuses_too_few_shadow_releases_before_training() -> None:
    """lira (and tapas-query) fit each target on its IN and OUT shadow releases and need 2
    of each. Target k is IN shadow release r with probability 1/2, drawn from the seed
    alone, so whether n_shadow releases give every target 2 IN and 2 OUT is known before
    any training: too few is refused then, naming n_shadow, the attack and the minimum."""
    ds, table = universe(600)
    seed, K = 1, 4
    need = _shadow_rounds_needed(ds, seed, K)
    assert need == 12  # > 4, the smallest n_shadow allowed at all
    cfg = RecordRiskConfig(
        n=80, n_targets=K, n_rounds=8, n_shadow=need - 1, n_aux=200, seed=seed, replicates=False
    )
    trainer = _CountingLogReg()
    message = rf"n_shadow: expected at least {need} .*'lira'.*found {need - 1}"
    with pytest.raises(InvalidInputError, match=message):
        run_record_risk(ds, trainer, "lira", cfg)
    assert trainer.fits == 0
    with pytest.raises(
        InvalidInputError, match=rf"n_shadow: expected at least {need} .*'tapas-query'"
    ):
        run_record_risk(ds, _NeverFits(), "tapas-query", cfg, table=table)
    # untrained attacks take any n_shadow
    run_record_risk(ds, trainer, "loss", dataclasses.replace(cfg, n_shadow=4))
    # the minimum is enough: every target's attack fits
    trainer.fits = 0
    res = run_record_risk(ds, trainer, "lira", dataclasses.replace(cfg, n_shadow=need))
    assert trainer.fits == need + 8 + 4 + K * 4
    assert res.risks["model-seeded"]["auc"].shape == (K,)


def test_shadow_membership_is_the_plans_and_the_minimum_is_exact() -> None:
    """The shadow bits computed from the seed alone are the plan's, whatever the data and
    n_shadow; the fewest releases giving every target 2 IN and 2 OUT is the first prefix
    that does (and 2 of each needs at least 4)."""
    from privaudit.record_risk.rounds import shadow_membership, shadow_rounds_needed

    ds, _ = universe(600)
    other, _ = universe(700, seed=9)
    for seed, K in [(0, 1), (1, 4), (2, 3), (3, 16), (5, 64)]:
        plan = small_plan(ds, n=80, n_aux=200, n_targets=K, n_shadow=40, seed=seed)
        bits = shadow_membership(seed, K, 40)
        assert np.array_equal(bits, [plan.round(*key).member for key in plan.rounds("shadow")])
        again = small_plan(other, n=80, n_aux=200, n_targets=K, n_shadow=6, seed=seed)
        assert np.array_equal(bits[:6], [again.round(*k).member for k in again.rounds("shadow")])
        need = shadow_rounds_needed(seed, K, 2, limit=1000)
        assert need == _shadow_rounds_needed(ds, seed, K) and need >= 4
        ins = bits[:need].sum(axis=0)
        assert ins.min() >= 2 and need - ins.max() >= 2
        assert shadow_rounds_needed(seed, K, 2, limit=need - 1) is None
        assert shadow_rounds_needed(seed, K, 0, limit=10) == 0


def _game_rounds_needed(ds: Dataset, seed: int, n_targets: int, kind: str, replicate: int) -> int:
    """Fewest rounds of a traditional game (``kind`` "traditional" or
    "traditional-target") giving every target at least 1 IN and 1 OUT round, read off the
    plan's own rounds (round r's membership does not depend on n_rounds)."""
    limit = 60
    plan = small_plan(ds, n=80, n_aux=200, n_targets=n_targets, n_rounds=limit, seed=seed)
    member = _plan_membership(plan, kind, replicate)
    ok = np.all((np.cumsum(member, 0) >= 1) & (np.cumsum(~member, 0) >= 1), axis=1)
    assert ok.any()
    return int(np.argmax(ok)) + 1


def _plan_membership(plan: Any, kind: str, replicate: int) -> Any:
    """(round, target) membership of one traditional game of ``plan``, from its rounds."""
    keys = plan.rounds(kind, replicate)
    if kind == "traditional":
        return np.asarray([plan.round(*key).member for key in keys])
    # per target: the keys run target by target
    bits = np.asarray([plan.round(*key).member[0] for key in keys])
    return bits.reshape(plan.n_targets, plan.n_rounds).T


@pytest.mark.parametrize(
    ("traditional", "seed", "K", "replicates", "need", "short"),
    [
        # seed 1, 4 targets: some target is IN (or OUT) of all 4 first amortised rounds
        ("amortised", 1, 4, False, 5, "in the game;"),
        # seed 3: the game has both by round 4, its replicate only by round 6
        ("amortised", 3, 4, True, 6, "in its replicate;"),
        # seed 1, per-target rounds: the game by round 4, the replicate by round 8
        ("per-target", 1, 4, True, 8, "in its replicate;"),
    ],
)
def test_too_few_game_rounds_are_refused_before_training(
    traditional: str, seed: int, K: int, replicates: bool, need: int, short: str
) -> None:
    """The per-record AUC of a game needs every target IN at least once and OUT at least
    once in that game (and in its replicate). The traditional rounds draw each target IN
    with probability 1/2 from the seed alone, so whether n_rounds rounds give that is known
    before any training: too few is refused then, naming n_rounds, the seed, the number of
    targets and the minimum (the run used to train every round and fail in the metrics)."""
    ds, table = universe(600)
    kind = "traditional" if traditional == "amortised" else "traditional-target"
    reps = (0, 1) if replicates else (0,)
    assert max(_game_rounds_needed(ds, seed, K, kind, r) for r in reps) == need
    cfg = RecordRiskConfig(
        n=80,
        n_targets=K,
        n_rounds=need - 1,
        n_shadow=16,
        n_aux=200,
        seed=seed,
        replicates=replicates,
        traditional=traditional,
    )
    message = (
        rf"n_rounds: expected at least {need} rounds per game .*{traditional} traditional "
        rf"game.*seed {seed} and {K} targets, {need - 1} rounds .*{short} the first {need} "
        rf"rounds are the fewest.*found {need - 1}$"
    )
    trainer = _CountingLogReg()
    with pytest.raises(InvalidInputError, match=message):
        run_record_risk(ds, trainer, "loss", cfg)
    assert trainer.fits == 0
    with pytest.raises(InvalidInputError, match=message):
        run_record_risk(ds, trainer, "lira", cfg)
    assert trainer.fits == 0
    with pytest.raises(InvalidInputError, match=message):
        run_record_risk(ds, _NeverFits(), "dcr", cfg, table=table)
    # the minimum is enough: every target IN and OUT of every game, and the model-seeded
    # game half IN and half OUT by construction
    res = run_record_risk(ds, trainer, "loss", dataclasses.replace(cfg, n_rounds=need))
    for game, r in res.risks.items():
        assert r["auc"].shape == (K,) and np.all(r["n_in"] >= 1) and np.all(r["n_out"] >= 1)
        assert np.all(r["n_in"] + r["n_out"] == need), game
        if game.startswith("model-seeded"):
            assert np.all(r["n_in"] == need // 2)
    assert trainer.fits == res.releases["trained"]


def test_game_membership_is_the_plans_and_the_minimum_is_exact() -> None:
    """The traditional bits computed from the seed alone are the plan's, in either
    construction and replicate, whatever the data and n_rounds; the fewest rounds giving
    every target 1 IN and 1 OUT is the first prefix that does. The model-seeded rounds
    draw nothing: n_rounds // 2 IN and the rest OUT for every target."""
    from privaudit.record_risk.rounds import round_membership, rounds_needed

    ds, _ = universe(600)
    other, _ = universe(700, seed=9)
    for seed, K in [(0, 1), (1, 4), (2, 3), (3, 16)]:
        plan = small_plan(ds, n=80, n_aux=200, n_targets=K, n_rounds=24, seed=seed)
        again = small_plan(other, n=80, n_aux=200, n_targets=K, n_rounds=6, seed=seed)
        for kind in ("traditional", "traditional-target"):
            for rep in (0, 1):
                bits = round_membership(seed, kind, K, 24, rep)
                assert np.array_equal(bits, _plan_membership(plan, kind, rep))
                assert np.array_equal(bits[:6], _plan_membership(again, kind, rep))
                need = rounds_needed(seed, kind, K, 1, replicate=rep)
                assert need == _game_rounds_needed(ds, seed, K, kind, rep) and need is not None
                ins = bits[:need].sum(axis=0)
                assert ins.min() >= 1 and need - ins.max() >= 1
                assert rounds_needed(seed, kind, K, 1, limit=need - 1, replicate=rep) is None
    plan = small_plan(ds, n_rounds=5)
    ms_in = [plan.round(*key).member for key in plan.rounds("ms-in")]
    ms_out = [plan.round(*key).member for key in plan.rounds("ms-out")]
    assert len(ms_in) == 2 and all(m.all() for m in ms_in)
    assert len(ms_out) == 3 * plan.n_targets and not any(m.any() for m in ms_out)
    with pytest.raises(InvalidInputError, match="kind"):
        round_membership(0, "ms-in", 4, 4)


@pytest.mark.parametrize(
    ("change", "name"),
    [
        # seed 3, 4 targets: the amortised replicate has every target IN and OUT from round 6
        ({"seed": 3, "n_rounds": 5, "n_shadow": 16}, "n_rounds"),
        # seed 1, 4 targets: 12 shadow releases give every target 2 IN and 2 OUT
        ({"seed": 1, "n_rounds": 8, "n_shadow": 11}, "n_shadow"),
    ],
)
def test_yaml_validator_and_run_record_risk_refuse_a_design_with_one_message(
    tmp_path: Any, change: dict[str, int], name: str
) -> None:
    """One check of the design (privaudit.record_risk.attacks.check_design): the Python API,
    which takes no YAML, refuses too few rounds or shadow releases before any training,
    and the YAML's validator refuses the same design with the same message."""
    import yaml

    from privaudit.config.base import ConfigError
    from privaudit.record_risk.config import load_record_risk_config

    ds, table = universe(600)
    sizes = {"n": 80, "n_targets": 4, "n_aux": 200, **change}
    with pytest.raises(InvalidInputError, match=rf"^{name}: expected at least ") as api:
        run_record_risk(ds, _NeverFits(), "tapas-query", RecordRiskConfig(**sizes), table=table)
    yaml_cfg = {
        "dataset": "adult",
        "target": {"kind": "generator", "generator": "baynet"},
        "attack": "tapas-query",
        **sizes,
    }
    path = tmp_path / "rr.yaml"
    path.write_text(yaml.safe_dump(yaml_cfg))
    with pytest.raises(ConfigError) as validator:
        load_record_risk_config(path)
    assert " ".join(str(api.value).split()) in " ".join(str(validator.value).split())
    # the minimum the message names passes the validator
    need = int(str(api.value).split("expected at least ")[1].split()[0])
    path.write_text(yaml.safe_dump({**yaml_cfg, name: need}))
    assert getattr(load_record_risk_config(path), name) == need


def test_result_keeps_the_gap_tests_null_for_other_pairs_of_games() -> None:
    """gap_null holds each game's bootstrap errors over its releases, the null of the MS-vs-T
    gap test: rmsd_gap_test on them gives the product's test exactly (what the benchmark
    uses to test two runs' traditional games against each other). A per-target traditional
    game draws its bootstrap from a stream of its own; the model-seeded games' stay."""
    ds, table = universe(600)
    cfg = RecordRiskConfig(n=60, n_targets=4, n_rounds=24, n_shadow=8, n_aux=200, seed=3)
    plan = small_plan(ds, n_rounds=24, n_aux=200)
    gen = PlantedGenerator(table.codes[plan.d0], table.codes[plan.targets[0]], 0.5)
    res = run_record_risk(ds, gen, "dcr", cfg, table=table)
    games = ("model-seeded", "traditional", "model-seeded-2", "traditional-2")
    assert set(res.gap_null) == set(games)
    assert all(res.gap_null[g].shape == (1000, 4) for g in games)
    again = rmsd_gap_test(
        *(res.risks[g]["auc"] for g in games), null_deviations=[res.gap_null[g] for g in games]
    )
    assert again == res.comparison["gap_test"]
    assert "gap_null" not in res.to_dict()
    per = run_record_risk(
        ds, gen, "dcr", dataclasses.replace(cfg, traditional="per-target"), table=table
    )
    for g in ("model-seeded", "model-seeded-2"):
        np.testing.assert_array_equal(per.gap_null[g], res.gap_null[g])
    assert not np.array_equal(per.gap_null["traditional"], res.gap_null["traditional"])
    # without replicates there is no gap test and no null
    solo = run_record_risk(ds, gen, "dcr", dataclasses.replace(cfg, replicates=False), table=table)
    assert solo.comparison["gap_test"] is None and dict(solo.gap_null) == {}
