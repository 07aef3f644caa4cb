"""Every attack on signals of real (small, overfit) scikit-learn models."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.linear_model import Ridge, SGDClassifier

from privaudit.attacks import AttackData, attack_names, run_attack
from privaudit.records import MembershipMatrix, SignalTable
from privaudit.signals import SIGNALS, compute_signal, label_robustness

from .conftest import balanced_keep, pair_auc


def _fit(X: np.ndarray, y: np.ndarray, seed: int) -> SGDClassifier:
    return SGDClassifier(
        loss="log_loss", alpha=1e-5, max_iter=200, tol=None, random_state=seed
    ).fit(X, y)


class _Margin:
    """A regressor of the target's margin, seen as a 2-class model."""

    def __init__(self, reg: Ridge) -> None:
        self.reg = reg

    def decision_function(self, X: np.ndarray) -> np.ndarray:
        return np.asarray(self.reg.predict(X))


class _Logits:
    """A fitted SGDClassifier as a privaudit Model (logits [0, f])."""

    n_classes = 2

    def __init__(self, m: SGDClassifier) -> None:
        self.m = m

    def logits(self, X: np.ndarray) -> np.ndarray:
        f = self.m.decision_function(X)
        return np.stack([np.zeros_like(f), f], axis=1)


def _tables(
    models: list[SGDClassifier] | list[_Margin],
    X: np.ndarray,
    y: np.ndarray,
    ids: np.ndarray,
    prefix: str,
):
    out: dict[str, list[np.ndarray]] = {s: [] for s in (*SIGNALS, "label_robustness")}
    for m in models:
        logits = _Logits(m).logits(X)
        for s in SIGNALS:
            out[s].append(compute_signal(s, logits, y))
        out["label_robustness"].append(label_robustness(_Logits(m), X, y, ids))
    names = tuple(f"{prefix}{j}" for j in range(len(models)))
    return {s: SignalTable(s, ids, names, np.array(v)) for s, v in out.items()}


@pytest.fixture(scope="module")
def sk_world() -> tuple[AttackData, np.ndarray]:
    rng = np.random.default_rng(0)
    X, y = make_classification(
        n_samples=1000, n_features=60, n_informative=10, flip_y=0.15, random_state=0
    )
    aud, pop, shadow_pool = np.arange(0, 300), np.arange(300, 700), np.arange(700, 1000)
    ids = np.array([f"a{i}" for i in aud])
    pop_ids = np.array([f"p{i}" for i in pop])
    sh_ids = np.array([f"s{i}" for i in shadow_pool])
    member = np.zeros(aud.size, bool)
    member[rng.permutation(aud.size)[:150]] = True
    target = _fit(X[aud[member]], y[aud[member]], 0)
    k = 8
    keep = balanced_keep(k, aud.size, rng)
    refs = [_fit(X[aud[keep[j]]], y[aud[keep[j]]], 100 + j) for j in range(k)]
    sh_keep = balanced_keep(4, shadow_pool.size, rng)
    shadows = [
        _fit(X[shadow_pool[sh_keep[j]]], y[shadow_pool[sh_keep[j]]], 200 + j) for j in range(4)
    ]
    # distillation: population labelled by the target; logit-matching students regress
    # its decision function (the margin, its only logit) on the same subsets
    distilled, distilled_logits = [], []
    for j in range(k):
        idx = pop[rng.permutation(pop.size)[:150]]
        distilled.append(_fit(X[idx], target.predict(X[idx]), 300 + j))
        # a regularised regressor: 150 records, 60 features
        student = Ridge(alpha=100.0).fit(X[idx], target.decision_function(X[idx]))
        distilled_logits.append(_Margin(student))
    # leave-one-out (Ye et al. Sec. 4.5): for 20 sampled members x, 3 models on the
    # member set without x; plus 3 models on the full member set (OUT for non-members).
    members = np.flatnonzero(member)
    loo_keep_rows, loo, serve_rows = [], [], []
    for x in [*rng.choice(members, 20, replace=False), -1]:
        row = member.copy()
        serves = np.zeros(member.size, dtype=bool)
        if x >= 0:
            row[x] = False
            serves[x] = True  # a model on D \ {x} serves x only
        else:
            serves = ~member  # the models on D serve the non-members
        for _ in range(3):
            loo_keep_rows.append(row)
            serve_rows.append(serves)
            loo.append(_fit(X[aud[row]], y[aud[row]], 400 + len(loo)))
    loo_keep = np.array(loo_keep_rows)
    # attack R's reference models: trained on population subsets of the target's size
    out_refs = []
    for j in range(k):
        idx = pop[rng.permutation(pop.size)[:150]]
        out_refs.append(_fit(X[idx], y[idx], 500 + j))
    data = AttackData(
        record_ids=ids,
        labels=y[aud],
        target=_tables([target], X[aud], y[aud], ids, "target"),
        population_target=_tables([target], X[pop], y[pop], pop_ids, "target"),
        population_labels=y[pop],
        reference=_tables(refs, X[aud], y[aud], ids, "ref"),
        reference_membership=MembershipMatrix(ids, tuple(f"ref{j}" for j in range(k)), keep),
        reference_population=_tables(refs, X[pop], y[pop], pop_ids, "ref"),
        shadow=_tables(shadows, X[shadow_pool], y[shadow_pool], sh_ids, "sh"),
        shadow_membership=MembershipMatrix(sh_ids, tuple(f"sh{j}" for j in range(4)), sh_keep),
        shadow_labels=y[shadow_pool],
        distilled=_tables(distilled, X[aud], y[aud], ids, "dist"),
        distilled_logits=_tables(distilled_logits, X[aud], y[aud], ids, "dlog"),
        outside_reference=_tables(out_refs, X[aud], y[aud], ids, "oref"),
        leave_one_out=_tables(loo, X[aud], y[aud], ids, "loo"),
        leave_one_out_membership=MembershipMatrix(
            ids, tuple(f"loo{j}" for j in range(len(loo))), loo_keep
        ),
        leave_one_out_serves=np.array(serve_rows),
    )
    return data, member


@pytest.mark.parametrize("name", attack_names())
def test_attack_beats_chance_on_overfit_sklearn_model(sk_world, name: str) -> None:
    data, member = sk_world
    res = run_attack(name, data, seed=0)
    pos = {r: i for i, r in enumerate(data.record_ids.tolist())}
    m = member[[pos[r] for r in res.record_ids.tolist()]]
    auc = pair_auc(res.scores, m)
    n_pos, n_neg = int(m.sum()), int((~m).sum())
    sd_null = np.sqrt((n_pos + n_neg + 1) / (12.0 * n_pos * n_neg))  # AUC sd under chance
    # lira-online's default clipping is tuned for TPR at low FPR (on these linear models,
    # whose logits run into the thousands, it trades some AUC for it)
    # label-only reads predicted labels only: measured 0.589 here (the loss attack 0.601)
    assert auc > 0.5 + 2.5 * sd_null, (name, auc)


def test_learned_and_calibrated_beat_the_loss_attack(sk_world) -> None:
    """The difficulty-calibrated attacks use reference models: on this overfit linear
    model (measured: loss 0.601, calibrated-loss 0.634, learned 0.659) both beat the
    uncalibrated loss threshold."""
    data, member = sk_world
    pos = {r: i for i, r in enumerate(data.record_ids.tolist())}

    def auc_of(name: str) -> float:
        res = run_attack(name, data, seed=0)
        return pair_auc(res.scores, member[[pos[r] for r in res.record_ids.tolist()]])

    base = auc_of("loss")
    assert auc_of("calibrated-loss") > base + 0.01
    assert auc_of("learned") > base + 0.02
