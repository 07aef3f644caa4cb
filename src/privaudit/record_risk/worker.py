"""The worker side of the record-level games (:mod:`privaudit.record_risk.risk`).

What runs in the executor's processes: :func:`release` (``A(D; seed)``: a generator's
synthetic table or a trained classifier), :class:`RoundsWorker` (the releases of a task of
rounds, summarised, or scored by the fitted per-target attacks) and :class:`AttackFitter` (one
target's attack fitted on the shadow summaries).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privaudit.data.dataset import Dataset
from privaudit.generators.base import synthesise
from privaudit.generators.discrete import DiscreteTable
from privaudit.models.train_many import fits_many
from privaudit.record_risk.attacks import RecordAttack
from privaudit.record_risk.rounds import RecordRiskPlan, RoundSpec
from privaudit.runtime.seeds import derive_seed
from privaudit.signals import model_signals

__all__ = ["AttackFitter", "RoundsWorker", "release"]

_CLASSIFIER_SIGNALS = ("loss", "logit_confidence")


def release(target: Any, kind: str, universe: Any, positions: NDArray[np.int64], seed: int) -> Any:
    """``A(D; seed)`` for ``D`` = the universe rows at ``positions``.

    A generator's release is its synthetic table (``|D|`` rows of codes); a classifier's
    is the trained model.
    """
    if kind == "generator":
        table: DiscreteTable = universe
        return synthesise(target, table.codes[positions], table.cardinalities, seed=seed)
    data: Dataset = universe
    kwargs: dict[str, Any] = {}
    try:
        import inspect

        if "n_classes" in inspect.signature(target.fit).parameters:
            kwargs["n_classes"] = data.n_classes
    except (TypeError, ValueError):  # pragma: no cover
        pass
    return target.fit(data.X[positions], data.y[positions], seed=int(seed), **kwargs)


def _digest(a: NDArray[Any]) -> int:
    return int.from_bytes(
        hashlib.blake2b(np.ascontiguousarray(a).tobytes(), digest_size=8).digest(), "little"
    )


class RoundsWorker:
    """Makes the releases of a task of rounds and returns summaries or scores."""

    def __init__(
        self,
        target: Any,
        kind: str,
        universe: Any,
        plan: RecordRiskPlan,
        attack: RecordAttack,
        targets_data: Any,
        key_base: Mapping[str, Any],
        fitted: list[Any] | None = None,
    ) -> None:
        self.target = target
        self.kind = kind
        self.universe = universe
        self.plan = plan
        self.attack = attack
        self.targets_data = targets_data
        self.key_base = dict(key_base)
        self.fitted = fitted

    def key(self, task: tuple[tuple[str, int, int, int], ...]) -> dict[str, Any]:
        return {**self.key_base, "rounds": [list(r) for r in task]}

    def summary(self, rel: Any) -> NDArray[Any]:
        if self.kind == "generator":
            return self.attack.summarise(rel)
        sig = model_signals("release", rel, self.targets_data, _CLASSIFIER_SIGNALS)
        return np.stack([np.asarray(sig[s], dtype=np.float64) for s in _CLASSIFIER_SIGNALS])

    def features(self, summary: NDArray[Any], which: NDArray[np.int64]) -> NDArray[np.float32]:
        if self.kind == "generator":
            return self.attack.features(summary, self.targets_data[which])
        return self.attack.features(summary, which)

    def releases(self, specs: list[RoundSpec]) -> list[Any]:
        """The releases of a task's rounds: one batched computation for a batched
        classifier trainer (:func:`~privaudit.models.train_many.fits_many`), else one :func:`release` each."""
        if self.kind == "classifier" and len(specs) > 1 and fits_many(self.target):
            data: Dataset = self.universe
            return list(
                self.target.fit_many(
                    data.X,
                    data.y,
                    [s.positions for s in specs],
                    [int(s.seed) for s in specs],
                    n_classes=data.n_classes,
                )
            )
        return [release(self.target, self.kind, self.universe, s.positions, s.seed) for s in specs]

    def __call__(self, task: tuple[tuple[str, int, int, int], ...]) -> dict[str, NDArray[Any]]:
        summaries, digests, members, owners, feats = [], [], [], [], []
        specs = [self.plan.round(*key) for key in task]
        for spec, rel in zip(specs, self.releases(specs), strict=True):
            s = self.summary(rel)
            digests.append(_digest(s))
            members.append(spec.member)
            if self.fitted is None:
                summaries.append(s)
            else:
                owners.append(spec.scored)
                feats.append(self.features(s, spec.scored))
        out: dict[str, NDArray[Any]] = {
            "digest": np.asarray(digests, dtype=np.uint64),
            "member": np.concatenate(members),
        }
        if self.fitted is None:
            out["summary"] = np.stack(summaries)
            return out
        owner = np.concatenate(owners)
        F = np.concatenate(feats)
        scores = np.empty(owner.size, dtype=np.float64)
        for k in np.unique(owner):
            rows = owner == k
            scores[rows] = self.attack.score(self.fitted[int(k)], F[rows])
        out["scores"] = scores
        return out


class AttackFitter:
    """Fits the attack for one target on the shadow summaries."""

    def __init__(
        self, worker: RoundsWorker, summaries: NDArray[Any], member: NDArray[np.bool_]
    ) -> None:
        self.worker = worker
        self.summaries = summaries
        self.member = member

    def __call__(self, k: int) -> Any:
        which = np.asarray([k])
        F = np.concatenate([self.worker.features(s, which) for s in self.summaries])
        seed = derive_seed(self.worker.plan.seed, purpose=f"record-risk/attack-fit/{k}")
        return self.worker.attack.fit_target(F, self.member[:, k], seed)
