"""A deliberately leaky synthetic world for the attack tests.

Every (model, record) pair gets a LiRA logit confidence
``phi = mu_record + delta * [record in model's training set] + noise``, i.e. members
are fitted better; the logits of a 2-class model are ``z_y = phi, z_other = 0`` so that
all five signals come from ``privaudit.signals.compute_signal`` consistently.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray

from privaudit.attacks import AttackData
from privaudit.records import MembershipMatrix, SignalTable
from privaudit.signals import SIGNALS, compute_signal


def balanced_keep(n_models: int, n_records: int, rng: np.random.Generator) -> NDArray[np.bool_]:
    """Every record IN for exactly half of the models (LiRA's layout, randomised)."""
    u = rng.uniform(size=(n_models, n_records))
    return np.argsort(np.argsort(u, axis=0), axis=0) < n_models // 2


def tables(
    phi: NDArray[np.float64], labels: NDArray[np.int64], ids: Any, model_prefix: str
) -> dict[str, SignalTable]:
    """All five logit signals of every model (rows of ``phi``) on the records ``ids``, and a
    label-only robustness: the fraction of 40 noisy copies (logistic noise of scale 2 on
    phi) still classified correctly, plus the clean prediction, as
    :func:`privaudit.signals.label_robustness` would measure it."""
    model_ids = tuple(f"{model_prefix}{j}" for j in range(phi.shape[0]))
    vals: dict[str, list[NDArray[np.float64]]] = {s: [] for s in (*SIGNALS, "label_robustness")}
    for row in phi:
        logits = np.zeros((row.size, 2))
        logits[np.arange(row.size), labels] = row
        for s in SIGNALS:
            vals[s].append(compute_signal(s, logits, labels))
        # deterministic in phi: P(correct under noise) = sigmoid(phi / 2), on a 1/41 grid
        p = 1.0 / (1.0 + np.exp(-row / 2.0))
        vals["label_robustness"].append(((row > 0) + np.round(40 * p)) / 41.0)
    return {s: SignalTable(s, ids, model_ids, np.array(v)) for s, v in vals.items()}


@dataclasses.dataclass
class World:
    data: AttackData
    member: NDArray[np.bool_]  # target membership of the audited records


def make_world(
    seed: int = 0,
    *,
    n: int = 400,
    n_pop: int = 600,
    k: int = 8,
    n_shadow_models: int = 4,
    n_shadow_records: int = 300,
    n_loo: int = 6,
    delta: float = 2.0,
    noise: float = 0.6,
) -> World:
    rng = np.random.default_rng(seed)
    ids = np.array([f"r{i}" for i in range(n)])
    pop_ids = np.array([f"p{i}" for i in range(n_pop)])
    sh_ids = np.array([f"s{i}" for i in range(n_shadow_records)])
    labels = rng.integers(0, 2, size=n)
    pop_labels = rng.integers(0, 2, size=n_pop)
    sh_labels = rng.integers(0, 2, size=n_shadow_records)
    mu = rng.normal(1.0, 2.0, size=n)
    mu_pop = rng.normal(1.0, 2.0, size=n_pop)
    mu_sh = rng.normal(1.0, 2.0, size=n_shadow_records)
    member = np.zeros(n, dtype=bool)
    member[rng.permutation(n)[: n // 2]] = True

    def sig(mu_: NDArray[np.float64], keep: NDArray[np.bool_]) -> NDArray[np.float64]:
        return mu_[None, :] + delta * keep + noise * rng.normal(size=keep.shape)

    target = sig(mu, member[None, :])
    pop_target = sig(mu_pop, np.zeros((1, n_pop), bool))
    keep_ref = balanced_keep(k, n, rng)
    ref = sig(mu, keep_ref)
    keep_ref_pop = balanced_keep(k, n_pop, rng)
    ref_pop = sig(mu_pop, keep_ref_pop)
    keep_sh = balanced_keep(n_shadow_models, n_shadow_records, rng)
    sh = sig(mu_sh, keep_sh)
    distilled = sig(mu, np.zeros((k, n), bool))
    # Leave-one-out models: the target's training set minus a random third of its
    # members each, so some members are left out by < 2 models (and are skipped).
    keep_loo = np.repeat(member[None, :], n_loo, axis=0)
    for j in range(n_loo):
        drop = rng.permutation(np.flatnonzero(member))[: member.sum() // 3]
        keep_loo[j, drop] = False
    loo = sig(mu, keep_loo)
    # calibration inputs: distilled models trained on a third of the population each,
    # leave-one-out models on the population (all OUT; the toy models all serve it)
    keep_dist_pop = rng.uniform(size=(k, n_pop)) < 1 / 3
    dist_pop = sig(mu_pop, np.zeros((k, n_pop), bool))
    loo_pop = sig(mu_pop, np.zeros((n_loo, n_pop), bool))

    # logit-matching students (drawn last: the draws above keep their values)
    distilled_logits = sig(mu, np.zeros((k, n), bool))
    dist_logits_pop = sig(mu_pop, np.zeros((k, n_pop), bool))
    # attack R's reference models, trained on population data (each on a third of it)
    keep_out_ref_pop = rng.uniform(size=(k, n_pop)) < 1 / 3
    out_ref = sig(mu, np.zeros((k, n), bool))
    out_ref_pop = sig(mu_pop, keep_out_ref_pop)

    data = AttackData(
        record_ids=ids,
        labels=labels,
        target=tables(target, labels, ids, "target"),
        population_target=tables(pop_target, pop_labels, pop_ids, "target"),
        population_labels=pop_labels,
        reference=tables(ref, labels, ids, "ref"),
        reference_membership=MembershipMatrix(ids, tuple(f"ref{j}" for j in range(k)), keep_ref),
        reference_population=tables(ref_pop, pop_labels, pop_ids, "ref"),
        reference_population_membership=MembershipMatrix(
            pop_ids, tuple(f"ref{j}" for j in range(k)), keep_ref_pop
        ),
        shadow=tables(sh, sh_labels, sh_ids, "shadow"),
        shadow_membership=MembershipMatrix(
            sh_ids, tuple(f"shadow{j}" for j in range(n_shadow_models)), keep_sh
        ),
        shadow_labels=sh_labels,
        distilled=tables(distilled, labels, ids, "dist"),
        leave_one_out=tables(loo, labels, ids, "loo"),
        leave_one_out_membership=MembershipMatrix(
            ids, tuple(f"loo{j}" for j in range(n_loo)), keep_loo
        ),
        # toy layout: each model is the training set minus some members, and serves
        # every record it excludes
        leave_one_out_serves=~keep_loo,
        distilled_population=tables(dist_pop, pop_labels, pop_ids, "dist"),
        distilled_population_membership=MembershipMatrix(
            pop_ids, tuple(f"dist{j}" for j in range(k)), keep_dist_pop
        ),
        leave_one_out_population=tables(loo_pop, pop_labels, pop_ids, "loo"),
        leave_one_out_population_serves=np.ones((n_loo, n_pop), dtype=bool),
        distilled_logits=tables(distilled_logits, labels, ids, "dlog"),
        distilled_logits_population=tables(dist_logits_pop, pop_labels, pop_ids, "dlog"),
        distilled_logits_population_membership=MembershipMatrix(
            pop_ids, tuple(f"dlog{j}" for j in range(k)), keep_dist_pop
        ),
        outside_reference=tables(out_ref, labels, ids, "oref"),
        outside_reference_population=tables(out_ref_pop, pop_labels, pop_ids, "oref"),
        outside_reference_population_membership=MembershipMatrix(
            pop_ids, tuple(f"oref{j}" for j in range(k)), keep_out_ref_pop
        ),
    )
    return World(data=data, member=member)


def pair_auc(scores: NDArray[np.float64], member: NDArray[np.bool_]) -> float:
    """AUC by pair counting (ties count 1/2)."""
    pos, neg = scores[member], scores[~member]
    gt = (pos[:, None] > neg[None, :]).sum()
    eq = (pos[:, None] == neg[None, :]).sum()
    return float((gt + 0.5 * eq) / (pos.size * neg.size))


@pytest.fixture(scope="session")
def world() -> World:
    return make_world(0)
