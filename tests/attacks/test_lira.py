"""LiRA against a slow per-record scipy implementation."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from privaudit.attacks import AttackData, run_attack
from privaudit.errors import DesignError
from privaudit.records import MembershipMatrix, SignalTable

from .conftest import World, make_world, pair_auc, tables


def _slow_lira(
    world: World, *, online: bool, location: str, variance: str, test: str = "one-sided"
):
    d = world.data
    obs = d.target["logit_confidence"].values[0]
    ref = d.reference["logit_confidence"].values
    keep = d.reference_membership.keep
    loc = np.mean if location == "mean" else np.median
    if variance == "fixed":
        groups = [(ref[keep[:, i], i]) for i in range(obs.size)] + [
            ref[~keep[:, i], i] for i in range(obs.size)
        ]
        if not online:
            groups = [ref[~keep[:, i], i] for i in range(obs.size)]
        ss = sum(float(((g - g.mean()) ** 2).sum()) for g in groups)
        dof = sum(g.size for g in groups) - len(groups)
        s_fixed = np.sqrt(ss / dof)
    out = []
    for i in range(obs.size):
        ins, outs = ref[keep[:, i], i], ref[~keep[:, i], i]
        s_in = np.std(ins) if variance == "per-example" else s_fixed
        s_out = np.std(outs) if variance == "per-example" else s_fixed
        if online:
            out.append(
                stats.norm.logpdf(obs[i], loc(ins), s_in)
                - stats.norm.logpdf(obs[i], loc(outs), s_out)
            )
        elif test == "one-sided":
            out.append(-stats.norm.logsf(obs[i], loc(outs), s_out))
        else:
            out.append(-stats.norm.logpdf(obs[i], loc(outs), s_out))
    return np.array(out)


@pytest.mark.parametrize("location", ["mean", "median"])
@pytest.mark.parametrize("variance", ["per-example", "fixed"])
def test_online_matches_slow_oracle(location: str, variance: str) -> None:
    w = make_world(10, n=150, n_pop=50, k=10)
    res = run_attack("lira-online", w.data, location=location, variance=variance)
    np.testing.assert_allclose(
        res.scores,
        _slow_lira(w, online=True, location=location, variance=variance),
        rtol=1e-9,
        atol=1e-9,
    )
    assert res.params["variance"] == variance and res.params["location"] == location
    assert res.params["n_in_min"] == 5 and res.params["n_out_min"] == 5


@pytest.mark.parametrize("test", ["one-sided", "two-sided"])
@pytest.mark.parametrize("variance", ["per-example", "fixed"])
def test_offline_matches_slow_oracle(test: str, variance: str) -> None:
    w = make_world(11, n=150, n_pop=50, k=10)
    res = run_attack("lira-offline", w.data, offline_test=test, variance=variance)
    np.testing.assert_allclose(
        res.scores,
        _slow_lira(w, online=False, location="mean", variance=variance, test=test),
        rtol=1e-9,
        atol=1e-12,
    )
    assert res.params["offline_test"] == test


def test_reference_code_fixed_variance_is_std_of_all_in_signals() -> None:
    w = make_world(12, n=60, n_pop=30, k=6)
    res = run_attack("lira-online", w.data, variance="fixed-reference-code")
    ref = w.data.reference["logit_confidence"].values
    keep = w.data.reference_membership.keep
    s = np.std(ref[keep])
    obs = w.data.target["logit_confidence"].values[0]
    mu_in = np.array([ref[keep[:, i], i].mean() for i in range(obs.size)])
    mu_out = np.array([ref[~keep[:, i], i].mean() for i in range(obs.size)])
    expected = stats.norm.logpdf(obs, mu_in, s) - stats.norm.logpdf(obs, mu_out, s)
    np.testing.assert_allclose(res.scores, expected, rtol=1e-9)


def test_two_sided_offline_has_no_alpha_threshold(world: World) -> None:
    from privaudit.errors import InvalidInputError

    with pytest.raises(InvalidInputError, match="alpha"):
        run_attack("lira-offline", world.data, offline_test="two-sided", alpha=0.01)
    res = run_attack("lira-offline", world.data, alpha=0.01, threshold_calibration="smoothed")
    assert res.threshold == pytest.approx(-np.log(0.01))  # the score is -log p: p <= alpha
    assert res.params["threshold"] == res.threshold
    cal = run_attack("lira-offline", world.data, alpha=0.01)
    assert cal.params["threshold_calibration"] == "population"
    assert cal.threshold == cal.params["threshold"]


def _with_keep(w: World, keep: np.ndarray) -> AttackData:
    d = w.data
    k = keep.shape[0]
    ref = {s: t.select_models([f"ref{j}" for j in range(k)]) for s, t in d.reference.items()}
    return AttackData(
        record_ids=d.record_ids,
        labels=d.labels,
        target=d.target,
        reference=ref,
        reference_membership=MembershipMatrix(
            d.record_ids, tuple(f"ref{j}" for j in range(k)), keep
        ),
    )


def test_missing_out_or_in_models_are_design_errors() -> None:
    w = make_world(13, n=20, n_pop=20, k=6)
    keep = np.array(w.data.reference_membership.keep)
    keep[:, 3] = True  # record 3 is IN for every reference model: no OUT
    d = _with_keep(w, keep)
    for name in ("lira-online", "lira-offline"):
        with pytest.raises(DesignError, match="OUT"):
            run_attack(name, d)
    keep = np.array(w.data.reference_membership.keep)
    keep[:, 5] = False  # no IN model: online fails, offline works
    d = _with_keep(w, keep)
    with pytest.raises(DesignError, match="IN"):
        run_attack("lira-online", d)
    run_attack("lira-offline", d)
    # one OUT model per record: per-example variance impossible, fixed variance fine
    keep = np.zeros((2, 20), bool)
    keep[0] = True
    d = _with_keep(w, keep)
    with pytest.raises(DesignError, match="at least 2 OUT"):
        run_attack("lira-offline", d, variance="per-example")
    res = run_attack("lira-offline", d, variance="fixed-reference-code")
    assert res.params["n_out_max"] == 1


def test_auto_variance_is_the_tuned_shrunk_variance() -> None:
    w = make_world(5, n=40, n_pop=20, k=8)
    res = run_attack("lira-online", w.data)
    assert (res.params["variance_rule"], res.params["variance"]) == ("auto", "shrunk")
    grid = res.params["shrinkage_loglik"]
    assert res.params["shrinkage"] == max(
        (float(k) for k in grid), key=lambda nu: (grid[repr(nu)], nu)
    )


def _slow_shrunk(ref: np.ndarray, keep: np.ndarray, nu: float) -> tuple[np.ndarray, np.ndarray]:
    """Per-record shrunk sigmas, record by record: (nu s_p^2 + SS_i) / (nu + n_i - 1)."""
    out = []
    for world in (keep, ~keep):
        groups = [ref[world[:, i], i] for i in range(ref.shape[1])]
        ss = [float(((g - g.mean()) ** 2).sum()) for g in groups]
        sp2 = sum(ss) / sum(g.size - 1 for g in groups)
        if np.isinf(nu):
            out.append(np.full(len(groups), np.sqrt(sp2)))
        else:
            out.append(
                np.array(
                    [
                        np.sqrt((nu * sp2 + q) / (nu + g.size - 1))
                        for q, g in zip(ss, groups, strict=True)
                    ]
                )
            )
    return out[0], out[1]


@pytest.mark.parametrize("nu", [0.0, 3.0, np.inf])
def test_shrunk_variance_matches_slow_oracle(nu: float) -> None:
    w = make_world(15, n=120, n_pop=20, k=10)
    d = w.data
    res = run_attack("lira-online", d, variance="shrunk", shrinkage=nu, clip=None)
    ref = d.reference["logit_confidence"].values
    keep = d.reference_membership.keep
    obs = d.target["logit_confidence"].values[0]
    s_in, s_out = _slow_shrunk(ref, keep, nu)
    mu_in = np.array([ref[keep[:, i], i].mean() for i in range(obs.size)])
    mu_out = np.array([ref[~keep[:, i], i].mean() for i in range(obs.size)])
    expected = stats.norm.logpdf(obs, mu_in, s_in) - stats.norm.logpdf(obs, mu_out, s_out)
    np.testing.assert_allclose(res.scores, expected, rtol=1e-9, atol=1e-9)
    assert res.params["shrinkage_rule"] == "given"


def test_shrinkage_is_tuned_by_leave_one_model_out_likelihood() -> None:
    """The tuning table against a slow loop over (held-out model, record) pairs."""
    from privaudit.attacks.lira import tune_shrinkage

    w = make_world(16, n=40, n_pop=20, k=6)
    ref = w.data.reference["logit_confidence"].values
    keep = w.data.reference_membership.keep
    grid = (0.0, 1.0, 5.0, np.inf)
    nu, table, pairs = tune_shrinkage(ref, [keep, ~keep], grid=grid)
    total = {g: 0.0 for g in grid}
    n = 0
    for world in (keep, ~keep):
        groups = [ref[world[:, i], i] for i in range(ref.shape[1])]
        sp2 = sum(float(((g - g.mean()) ** 2).sum()) for g in groups) / sum(
            g.size - 1 for g in groups
        )
        for i in range(ref.shape[1]):
            models = np.flatnonzero(world[:, i])
            for j in models:
                rest = ref[models[models != j], i]
                ss = float(((rest - rest.mean()) ** 2).sum())
                for g in grid:
                    s2 = sp2 if np.isinf(g) else (g * sp2 + ss) / (g + rest.size - 1)
                    total[g] += stats.norm.logpdf(ref[j, i], rest.mean(), np.sqrt(s2))
                n += 1
    assert pairs == n
    for g in grid:
        assert table[repr(float(g))] == pytest.approx(total[g] / n, rel=1e-9)
    assert nu == max(grid, key=lambda g: (total[g], g))


def test_clip_is_applied_to_target_and_references() -> None:
    w = make_world(17, n=100, n_pop=20, k=8, delta=4.0)
    d = w.data
    res = run_attack("lira-online", d, variance="fixed", clip=1.5)
    ref = np.clip(d.reference["logit_confidence"].values, -1.5, 1.5)
    obs = np.clip(d.target["logit_confidence"].values[0], -1.5, 1.5)
    keep = d.reference_membership.keep
    groups = [ref[keep[:, i], i] for i in range(obs.size)] + [
        ref[~keep[:, i], i] for i in range(obs.size)
    ]
    s = np.sqrt(
        sum(float(((g - g.mean()) ** 2).sum()) for g in groups)
        / (sum(g.size for g in groups) - len(groups))
    )
    mu_in = np.array([ref[keep[:, i], i].mean() for i in range(obs.size)])
    mu_out = np.array([ref[~keep[:, i], i].mean() for i in range(obs.size)])
    expected = stats.norm.logpdf(obs, mu_in, s) - stats.norm.logpdf(obs, mu_out, s)
    np.testing.assert_allclose(res.scores, expected, rtol=1e-9, atol=1e-9)
    assert res.params["clip"] == 1.5 and res.params["n_values_clipped"] > 0


def _hetero_world(seed: int, n: int = 2000, k: int = 12) -> tuple[AttackData, np.ndarray]:
    """A tenth of the records have a heavy-tailed signal 25x more spread than the rest
    (as the unbounded logit-scaled signal of an overfit network: issue 10, item 1)."""
    rng = np.random.default_rng(seed)
    ids = np.arange(n)
    member = rng.uniform(size=n) < 0.5
    keep = np.argsort(np.argsort(rng.uniform(size=(k, n)), axis=0), axis=0) < k // 2
    sd = np.where(rng.uniform(size=n) < 0.1, 40.0, 1.5)
    mu = rng.normal(5, 3, n)

    def sig(inside: np.ndarray) -> np.ndarray:
        return mu[None, :] + 2.0 * inside + sd[None, :] * rng.standard_t(4, size=inside.shape)

    mids = tuple(f"r{j}" for j in range(k))

    def t(v: np.ndarray, m: tuple[str, ...]) -> dict[str, SignalTable]:
        return {"logit_confidence": SignalTable("logit_confidence", ids, m, v)}

    data = AttackData(
        record_ids=ids,
        labels=np.zeros(n, dtype=np.int64),
        target=t(sig(member[None, :]), ("t",)),
        reference=t(sig(keep), mids),
        reference_membership=MembershipMatrix(ids, mids, keep),
    )
    return data, member


def test_defaults_are_strong_at_low_fpr_where_fixed_variance_collapses() -> None:
    """Regression (issue 10, item 1): with a pooled sigma far below some records' own
    spread, fixed-variance LiRA is at chance at 1% FPR; the defaults (shrunk variance,
    clipping, both tuned on the reference models) are not."""
    from privaudit.attacks.lira_fit import _tpr_at_fprs

    data, member = _hetero_world(0)
    fixed = run_attack("lira-online", data, variance="fixed", clip=None)
    default = run_attack("lira-online", data)
    (tpr_fixed,) = _tpr_at_fprs(fixed.scores, member, (0.01,))
    (tpr_default,) = _tpr_at_fprs(default.scores, member, (0.01,))
    assert tpr_fixed < 0.016  # about chance (1%)
    assert tpr_default > 0.02 and tpr_default > 1.7 * tpr_fixed
    assert default.params["clip_rule"].startswith("auto")


def test_tuned_clip_never_reads_the_target() -> None:
    data, _ = _hetero_world(1, n=600, k=8)
    res = run_attack("lira-online", data)
    table = res.params["clip_tuning_tpr"]
    best = max(table, key=lambda c: (table[c], np.inf if c == "None" else float(c)))
    assert repr(res.params["clip"]) == best
    scrambled = AttackData(
        record_ids=data.record_ids,
        labels=data.labels,
        target={
            s: SignalTable(s, t.record_ids, t.model_ids, t.values[:, ::-1].copy())
            for s, t in data.target.items()
        },
        reference=data.reference,
        reference_membership=data.reference_membership,
    )
    assert run_attack("lira-online", scrambled).params["clip_tuning_tpr"] == table


def test_out_models_selected_from_matrix_not_layout() -> None:
    """Permuting models (and their keep rows) never changes any score."""
    w = make_world(14, n=80, n_pop=40, k=8)
    d = w.data
    perm = np.random.default_rng(0).permutation(8)
    names = [f"ref{j}" for j in perm]
    ref = {s: t.select_models(names) for s, t in d.reference.items()}
    d2 = AttackData(
        record_ids=d.record_ids,
        labels=d.labels,
        target=d.target,
        reference=ref,
        reference_membership=d.reference_membership.select_models(names),
    )
    for name in ("lira-online", "lira-offline"):
        np.testing.assert_allclose(
            run_attack(name, d2).scores, run_attack(name, d).scores, rtol=1e-12
        )


def test_sigma_floor_guards_identical_reference_signals() -> None:
    ids = np.array(["a", "b", "c"])
    labels = np.array([0, 1, 0])
    phi_ref = np.ones((4, 3))  # every reference model gives the same signal
    keep = np.array([[1, 1, 0], [1, 0, 1], [0, 1, 1], [0, 0, 0]], bool)
    d = AttackData(
        record_ids=ids,
        labels=labels,
        target=tables(np.array([[1.0, 2.0, 0.5]]), labels, ids, "t"),
        reference=tables(phi_ref, labels, ids, "ref"),
        reference_membership=MembershipMatrix(ids, tuple(f"ref{j}" for j in range(4)), keep),
    )
    res = run_attack("lira-offline", d)
    assert np.isfinite(res.scores).all()
    assert res.params["n_sigma_floored"] == 3


def test_tpr_at_fprs_equals_the_sweep_oracle() -> None:
    """The partial-sort TPR at FPR of the clip tuning gives the full sweep's floats, with
    ties (rounded scores), few non-members, every FPR allowed, and NaN scores."""
    from privaudit.attacks.lira_fit import _tpr_at_fprs, _tpr_at_fprs_sweep

    rng = np.random.default_rng(7)
    fprs = (0.001, 0.01, 0.1, 0.5, 1.0)
    for trial in range(300):
        n = int(rng.integers(2, 3000))
        member = rng.random(n) < rng.uniform(0.05, 0.95)
        if member.all() or not member.any():
            continue
        scores = rng.normal(size=n) + 0.5 * member
        if trial % 3 == 0:
            scores = np.round(scores, 1)  # many ties across members and non-members
        if trial % 50 == 0:
            scores[0] = np.nan
        assert _tpr_at_fprs(scores, member, fprs) == _tpr_at_fprs_sweep(scores, member, fprs)


@pytest.mark.parametrize("scale", [0.02, 1.0])
def test_clip_tuning_scores_the_clips_that_change_nothing_once(
    scale: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Clips at or above the largest |signal| are scored as None (once), with the very
    floats that scoring each of them gives; with signals below every clip only one
    clip is computed."""
    from privaudit.attacks import bavaria, lira_fit

    data, _ = _hetero_world(3, n=2400, k=6)
    ref = data.reference["logit_confidence"].values * scale
    keep = data.reference_membership.keep
    tuning = dict(online=False, location="mean", variance="shrunk", shrinkage="auto", floor=1e-3)
    fast = lira_fit.tune_clip(ref, keep, **tuning)
    fast_b = bavaria.tune_clip(ref, keep, online=True, predictive="t")
    original = lira_fit._best_clip

    def every_clip(grid, mean_tpr, signals):  # the oracle: each clip scored on its own
        table = {repr(c): mean_tpr(c) for c in grid}
        if None in table.values():
            return None, {}
        best = max(grid, key=lambda c: (table[repr(c)], np.inf if c is None else c))
        return best, table

    with monkeypatch.context() as patched:
        patched.setattr(lira_fit, "_best_clip", every_clip)
        patched.setattr(bavaria, "_best_clip", every_clip)
        slow = lira_fit.tune_clip(ref, keep, **tuning)
        slow_b = bavaria.tune_clip(ref, keep, online=True, predictive="t")
    assert fast == slow and len(slow[1]) == len(lira_fit.CLIP_GRID)
    assert len(slow_b[1]) == len(lira_fit.CLIP_GRID)
    assert fast_b == slow_b

    calls: list[float | None] = []

    def counted(grid, mean_tpr, signals):
        return original(grid, lambda c: calls.append(c) or mean_tpr(c), signals)

    monkeypatch.setattr(lira_fit, "_best_clip", counted)
    lira_fit.tune_clip(ref, keep, **tuning)
    largest = float(np.abs(ref).max())
    assert calls == [c for c in lira_fit.CLIP_GRID if c is not None and c < largest] + [None]
    assert (len(calls) == 1) == (scale == 0.02)


def _loo_world(seed: int, k: int = 7, n: int = 600):
    rng = np.random.default_rng(seed)
    ref = rng.normal(size=(k, n)) * rng.uniform(0.3, 3.0, size=n) + 40.0 * rng.normal(size=n)
    keep = rng.random((k, n)).argsort(axis=0) < k // 2  # each record IN for half the models
    return ref, keep


@pytest.mark.parametrize("online", [False, True])
@pytest.mark.parametrize("variance", ["shrunk", "per-example", "fixed", "fixed-reference-code"])
def test_left_out_fits_equal_fitting_the_other_models(online: bool, variance: str) -> None:
    """The leave-one-model-out sums give each pseudo-target the mean, squared deviations
    and scores that fitting the other models' signals directly gives (up to rounding)."""
    from privaudit.attacks import lira_fit

    ref, keep = _loo_world(1)
    masks = [keep, ~keep] if online else [~keep]
    core = lira_fit._online_core if online else lira_fit._offline_core
    sums = [lira_fit._LeaveOneOut(ref, m) for m in masks]
    nu = 4.0 if variance == "shrunk" else None
    need = 2 if variance == "per-example" else 1
    seen = 0
    for j, others, ok, _ in lira_fit._pseudo_targets(keep, online, need, keep.shape[0]):
        fits = [w.without(j, ok) for w in sums]
        for (mu, ss, n), m in zip(fits, masks, strict=True):
            direct_ss, direct_n = lira_fit._masked_mean_sq_dev(ref[others][:, ok], m[others][:, ok])
            direct_mu = lira_fit._masked_location(ref[others][:, ok], m[others][:, ok], "mean")
            np.testing.assert_array_equal(n, direct_n)
            np.testing.assert_allclose(mu, direct_mu, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(ss, direct_ss, rtol=1e-9, atol=1e-9)
        fast = lira_fit._left_out_scores(ref[j, ok], fits, variance, nu, 1e-6)
        slow, _ = core(
            ref[j, ok], ref[others][:, ok], keep[others][:, ok], "mean", variance, nu, 1e-6
        )
        np.testing.assert_allclose(fast, slow, rtol=1e-9, atol=1e-12)
        seen += 1
    assert seen == keep.shape[0]


@pytest.mark.parametrize("online", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_clip_tuning_equals_refitting_the_other_models(online: bool, seed: int) -> None:
    """tune_clip's table and choice equal the slow oracle that fits every pseudo-target's
    Gaussians on the other models' clipped signals directly."""
    from privaudit.attacks import lira_fit

    ref, keep = _loo_world(seed, k=8, n=3000)
    masks = [keep, ~keep] if online else [~keep]
    core = lira_fit._online_core if online else lira_fit._offline_core
    table = {}
    for c in lira_fit.CLIP_GRID:
        rc = lira_fit._clipped(ref, c)
        nu, _ = lira_fit._resolve_shrinkage("auto", "shrunk", rc, masks)
        found = []
        for j, others, ok, member in lira_fit._pseudo_targets(keep, online, 1, 16):
            sc, _ = core(
                rc[j, ok], rc[others][:, ok], keep[others][:, ok], "mean", "shrunk", nu, 1e-6
            )
            found.append(float(np.mean(lira_fit._tpr_at_fprs(sc, member, lira_fit.TUNING_FPRS))))
        table[repr(c)] = sum(found, 0.0) / len(found)
    best = max(lira_fit.CLIP_GRID, key=lambda c: (table[repr(c)], np.inf if c is None else c))
    fast = lira_fit.tune_clip(
        ref, keep, online=online, location="mean", variance="shrunk", shrinkage="auto", floor=1e-6
    )
    assert fast == (best, table)
    assert len(set(table.values())) > 1  # the clips matter in this world


def _one_signal_data(obs: np.ndarray, ref: np.ndarray, keep: np.ndarray) -> AttackData:
    """LiRA's inputs with the logit-scaled confidence alone, as given."""
    ids = np.arange(obs.size)
    mids = tuple(f"ref{j}" for j in range(keep.shape[0]))
    sig = "logit_confidence"
    return AttackData(
        record_ids=ids,
        labels=np.zeros(obs.size, dtype=int),
        target={sig: SignalTable(sig, ids, ("t",), obs[None, :])},
        reference={sig: SignalTable(sig, ids, mids, ref)},
        reference_membership=MembershipMatrix(ids, mids, keep),
    )


def test_shrunk_sigma_of_a_record_with_one_model_is_the_pooled_one() -> None:
    """nu = 0 and one model in the world: no variance from the record nor from the prior;
    the pooled sigma (every nu > 0 gives it too), not 0."""
    from privaudit.attacks.lira_fit import _shrunk_sigma

    ss, n = np.array([0.0, 2.0, 0.0]), np.array([1, 3, 1])
    for nu in (0.0, 0.5, 4.0):
        sig = _shrunk_sigma(ss, n, 1.5, nu)
        np.testing.assert_allclose(sig[[0, 2]], np.sqrt(1.5), rtol=1e-12)
    np.testing.assert_allclose(_shrunk_sigma(ss, n, 1.5, 0.0)[1], 1.0, rtol=1e-12)


@pytest.mark.parametrize("shrinkage", ["auto", 0.0])
def test_online_records_with_one_in_model_keep_a_finite_variance(shrinkage: str | float) -> None:
    """An unbalanced layout: most records IN for 6-15 of 32 models, a tenth IN for one.
    Per-record spreads differ by a factor up to e^4, so the tuning picks nu = 0; the
    records with one IN model used to get sigma_in = 0 (floored: scores near -1e14, their
    AUC near 0.6); they get the pooled sigma, as with any nu > 0."""
    rng = np.random.default_rng(11)
    k, n = 32, 1500
    cnt = rng.integers(6, 16, n)
    cnt[: n // 10] = 1
    keep = np.zeros((k, n), dtype=bool)
    for i in range(n):
        keep[rng.permutation(k)[: cnt[i]], i] = True
    mu, sd = rng.normal(2.0, 2.0, n), np.exp(rng.uniform(-2.0, 2.0, n))
    ref = mu + sd * rng.normal(size=(k, n)) + keep * 2.0 * sd
    member = rng.random(n) < 0.5
    obs = mu + sd * rng.normal(size=n) + member * 2.0 * sd
    d = _one_signal_data(obs, ref, keep)
    res = run_attack("lira-online", d, clip=None, shrinkage=shrinkage)
    ref_res = run_attack("lira-online", d, clip=None, shrinkage=0.5)
    if shrinkage == "auto":
        assert res.params["shrinkage"] == 0.0  # the case at issue
    one = cnt == 1
    assert res.params["n_sigma_floored"] == 0
    assert res.scores[one].min() > -1e6
    assert (
        pair_auc(res.scores[one], member[one]) > pair_auc(ref_res.scores[one], member[one]) - 0.05
    )


def test_offline_one_sided_score_keeps_strong_records_apart() -> None:
    """Standardised signals of 1, 45 and 70 OUT sigmas: Pr[Z > phi] rounds to 0 above
    about 38 sigmas, so -p tied the two strong records (at -0.0); -log p orders all three,
    exactly as the Gaussian's log survival function, and the smoothed threshold -log(alpha)
    is the paper's p <= alpha."""
    out = np.array([-1.5, -0.5, 0.5, 1.5])  # mean 0, np.std sqrt(1.25)
    keep = np.zeros((8, 3), dtype=bool)
    keep[:4] = True
    ref = np.vstack([np.full((4, 3), 100.0), np.repeat(out[:, None], 3, axis=1)])
    s = np.sqrt(1.25)
    obs = np.array([1.0, 45.0, 70.0]) * s
    d = _one_signal_data(obs, ref, keep)
    res = run_attack(
        "lira-offline",
        d,
        variance="per-example",
        clip=None,
        alpha=0.01,
        threshold_calibration="smoothed",
    )
    assert np.all(np.isfinite(res.scores)) and np.all(np.diff(res.scores) > 0)
    np.testing.assert_allclose(res.scores, -stats.norm.logsf(obs / s), rtol=1e-12)
    np.testing.assert_array_equal(res.decisions(), stats.norm.sf(obs / s) <= 0.01)


def test_shrinkage_tuning_without_two_other_models_is_an_exact_tie() -> None:
    """With 3 references, each record IN for 1 or 2 and OUT for the rest, no world keeps
    2 other models: every scored pair has 1, whose Gaussian has the pooled variance for
    every nu > 0. The leave-one-out sums used to leave a rounding residue as that one
    model's squared deviation, and the "tie" fell to nu = 0.5, 1 or 2 by that noise
    (5 of 30 layouts here; those weights then set the 2-model records' variance). Now
    the table is one value and the tie-break keeps the pooled variance (nu = inf)."""
    from privaudit.attacks.lira import tune_shrinkage

    for seed in range(30):
        rng = np.random.default_rng(seed)
        keep = np.argsort(rng.random((8, 3000)), axis=0) < 4  # IN for 4 of 8 models
        keep = keep[:3]
        keep = keep[:, keep.any(axis=0) & (~keep).any(axis=0)]
        v = rng.normal(3.0, 2.0, keep.shape[1]) + rng.normal(size=keep.shape) * np.exp(
            rng.normal(0.0, 0.6, keep.shape[1])
        )
        nu, table, _ = tune_shrinkage(v, [keep, ~keep])
        assert nu == np.inf, seed
        assert len(set(table.values())) == 1, seed
