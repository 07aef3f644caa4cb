"""Per-target attacks for the record-level games (Krčo et al. 2025, "Lost in the Averages").

In a record-level game one target record ``x`` is attacked across many releases (trained
models or synthetic datasets); the attack maps one release to one score for ``x``,
**higher = member** (the registry's convention). Each attack here has three steps, so
that the games can run the expensive part in worker processes:

1. ``summarise(release)``: what the attacker keeps of a release (the synthetic table
   itself, or a classifier's signals on the targets);
2. ``features(summary, targets)``: per-target features of one release (query counts, a
   distance, a loss);
3. ``fit_target(features, member, seed)`` on *shadow* releases made from auxiliary data
   (black-box access, no access to the training data: Krčo et al. Sec. 5, threat model of
   TAPAS), then ``score(fitted, features)``.

Built-in attacks (:data:`RECORD_ATTACKS`):

=================  ============  ========================================================
name               target kind   method
=================  ============  ========================================================
``tapas-query``    generator     the 2^d - 1 query counts of
                                 :func:`privaudit.signals.queries.query_counts` fed to a
                                 random forest trained per target on shadow synthetic
                                 datasets (the query-based attack of Meeus et al. 2023 /
                                 TAPAS, Houssiau et al. 2022, used by Krčo et al.)
``dcr``            generator     minus the Hamming distance to the closest synthetic row
                                 (no training)
``loss``           classifier    minus the target's cross-entropy loss (Yeom et al. 2018;
                                 no training)
``lira``           classifier    online LiRA (Carlini et al. 2022, Sec. IV): Gaussian
                                 IN/OUT fits of the logit-scaled confidence on shadow
                                 models, score = log-likelihood ratio
=================  ============  ========================================================

A per-record AUC is invariant under any increasing transform of a target's score, so
``loss`` equals offline LiRA with a one-sided test per target; ``lira`` differs where
the IN and OUT variances differ.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import check_positive_int, fail
from privaudit.errors import DesignError
from privaudit.signals.queries import closest_distance, query_counts

__all__ = [
    "MIN_SHADOW_PER_SIDE",
    "RECORD_ATTACKS",
    "ClassifierSignalAttack",
    "DistanceAttack",
    "QueryAttack",
    "RecordAttack",
    "check_design",
    "check_shadow_releases",
    "make_record_attack",
]

#: Fewest IN and fewest OUT shadow releases of a target that the built-in trained attacks
#: (``tapas-query``, ``lira``) fit it on.
MIN_SHADOW_PER_SIDE = 2

#: How far :func:`check_shadow_releases` looks for the fewest shadow releases that suffice.
_SHADOW_SEARCH_LIMIT = 10_000


class RecordAttack:
    """Base class of the per-target attacks (see the module docstring)."""

    name: str = ""
    target_kind: str = ""
    trained: bool = False

    def settings(self) -> dict[str, Any]:
        return {"attack": self.name}

    def summarise(self, release: Any) -> NDArray[Any]:
        return np.asarray(release)

    def features(self, summary: NDArray[Any], targets: NDArray[Any]) -> NDArray[np.float32]:
        raise NotImplementedError

    def fit_target(self, features: NDArray[Any], member: NDArray[np.bool_], seed: int) -> Any:
        return None

    def score(self, fitted: Any, features: NDArray[Any]) -> NDArray[np.float64]:
        return np.asarray(features, dtype=np.float64)[:, 0]

    def shadow_minimum(self) -> int:
        """Fewest IN and fewest OUT shadow releases of each target that ``fit_target``
        needs (0: no requirement known, as for an untrained attack)."""
        return 0


def _compact(release: Any) -> NDArray[Any]:
    """A synthetic table in the smallest integer type that holds its codes."""
    a = np.asarray(release)
    return a.astype(np.uint8 if a.max(initial=0) < 256 else np.int32)


def _check_shadow(member: NDArray[np.bool_], name: str) -> None:
    n_in = int(np.sum(member))
    p = MIN_SHADOW_PER_SIDE
    if n_in < p or len(member) - n_in < p:
        raise DesignError(
            f"{name}: a target needs at least {p} IN and {p} OUT shadow releases, found "
            f"{n_in} IN and {len(member) - n_in} OUT; raise n_shadow"
        )


def check_shadow_releases(
    attack: RecordAttack, *, n_shadow: int, n_targets: int, seed: int
) -> None:
    """Refuse ``n_shadow`` shadow releases that leave some target with fewer IN or OUT
    releases than ``attack`` fits on (:meth:`RecordAttack.shadow_minimum`), before any
    training.

    Which targets are IN which shadow release is drawn from ``seed`` alone
    (:func:`~privaudit.record_risk.rounds.shadow_membership`), so the fewest releases
    that suffice for ``n_targets`` targets is exact
    (:func:`~privaudit.record_risk.rounds.shadow_rounds_needed`), and named.

    Raises
    ------
    InvalidInputError
        Naming ``n_shadow``, the attack and the minimum.
    """
    from privaudit.record_risk.rounds import shadow_rounds_needed

    p = attack.shadow_minimum()
    if p <= 0:
        return
    limit = max(int(n_shadow), _SHADOW_SEARCH_LIMIT)
    need = shadow_rounds_needed(seed, n_targets, p, limit=limit)
    if need is not None and need <= n_shadow:
        return
    least = f"at least {need}" if need is not None else f"more than {limit}"
    fewest = (
        f"the first {need} releases are the fewest that give every target {p} of each"
        if need is not None
        else f"no number up to {limit} gives every target {p} of each"
    )
    raise fail(
        "n_shadow",
        f"{least} shadow releases for attack {attack.name!r} (it fits each target on at least "
        f"{p} IN and {p} OUT shadow releases; a target is IN a release with probability 1/2, "
        f"drawn from the seed: with seed {seed} and {n_targets} targets {fewest})",
        n_shadow,
    )


def check_design(
    attack: RecordAttack,
    *,
    n_targets: int,
    n_rounds: int,
    n_shadow: int,
    seed: int,
    traditional: str,
    replicates: bool,
) -> None:
    """Refuse, before any training, too few shadow releases for ``attack``
    (:func:`~privaudit.record_risk.attacks.check_shadow_releases`) or too few game rounds
    for every target to be IN and OUT of the traditional game and its replicate
    (:func:`~privaudit.record_risk.rounds.check_game_rounds`). The one check of the design:
    :func:`~privaudit.record_risk.risk.run_record_risk` runs it (its Python callers pass
    no YAML), and so does the YAML's validator
    (:class:`~privaudit.record_risk.config.RecordRiskFileConfig`), so both refuse the
    same designs with the same message.

    Raises
    ------
    InvalidInputError
        Naming ``n_shadow`` or ``n_rounds``, the seed, the number of targets and the
        minimum.
    """
    from privaudit.record_risk.rounds import check_game_rounds

    check_shadow_releases(attack, n_shadow=n_shadow, n_targets=n_targets, seed=seed)
    check_game_rounds(
        n_rounds=n_rounds,
        n_targets=n_targets,
        seed=seed,
        traditional=traditional,
        replicates=replicates,
    )


@dataclasses.dataclass
class QueryAttack(RecordAttack):
    """TAPAS-style query attack: query counts -> per-target random forest.

    Parameters
    ----------
    n_trees : int
        Trees of each target's :class:`~sklearn.ensemble.RandomForestClassifier`.
    min_samples_leaf : int
    """

    n_trees: int = 100
    min_samples_leaf: int = 1
    name: str = "tapas-query"
    target_kind: str = "generator"
    trained: bool = True

    def __post_init__(self) -> None:
        check_positive_int(self.n_trees, "n_trees")
        check_positive_int(self.min_samples_leaf, "min_samples_leaf")

    def settings(self) -> dict[str, Any]:
        return {
            "attack": self.name,
            "n_trees": self.n_trees,
            "min_samples_leaf": self.min_samples_leaf,
        }

    def summarise(self, release: Any) -> NDArray[Any]:
        return _compact(release)

    def features(self, summary: NDArray[Any], targets: NDArray[Any]) -> NDArray[np.float32]:
        return query_counts(np.asarray(summary, dtype=np.int64), np.asarray(targets))

    def fit_target(self, features: NDArray[Any], member: NDArray[np.bool_], seed: int) -> Any:
        from sklearn.ensemble import RandomForestClassifier

        _check_shadow(member, self.name)
        rf = RandomForestClassifier(
            n_estimators=self.n_trees,
            min_samples_leaf=self.min_samples_leaf,
            random_state=int(seed),
            n_jobs=1,
        )
        return rf.fit(np.asarray(features, dtype=np.float32), np.asarray(member, dtype=int))

    def shadow_minimum(self) -> int:
        return MIN_SHADOW_PER_SIDE

    def score(self, fitted: Any, features: NDArray[Any]) -> NDArray[np.float64]:
        X = np.ascontiguousarray(features, dtype=np.float32)
        cls = list(fitted.classes_)
        return np.asarray(forest_proba(fitted, X)[:, cls.index(1)], dtype=np.float64)


def forest_proba(forest: Any, X: NDArray[np.float32]) -> NDArray[np.float64]:
    """``forest.predict_proba(X)`` of a fitted single-output random forest, bit for bit,
    without joblib: the trees' probabilities summed in order, divided by their number
    (what scikit-learn does with ``n_jobs=1``). The per-tree dispatch of
    ``predict_proba`` costs ~0.1 ms a tree, which dominated scoring a few rows per call
    (thousands of calls per record-risk run)."""
    out = np.zeros((X.shape[0], int(forest.n_classes_)), dtype=np.float64)
    for tree in forest.estimators_:
        out += tree.predict_proba(X, check_input=False)
    out /= len(forest.estimators_)
    return out


@dataclasses.dataclass
class DistanceAttack(RecordAttack):
    """Distance to the closest synthetic record; score = minus the distance."""

    name: str = "dcr"
    target_kind: str = "generator"
    trained: bool = False

    def summarise(self, release: Any) -> NDArray[Any]:
        return _compact(release)

    def features(self, summary: NDArray[Any], targets: NDArray[Any]) -> NDArray[np.float32]:
        d = closest_distance(np.asarray(summary, dtype=np.int64), np.asarray(targets))
        return (-d).astype(np.float32)[:, None]


#: Rows of a classifier summary (signals on every target, in this order).
CLASSIFIER_SIGNALS: tuple[str, ...] = ("loss", "logit_confidence")


@dataclasses.dataclass
class ClassifierSignalAttack(RecordAttack):
    """Loss (no training) or online-LiRA (Gaussian IN/OUT fits on shadows) per target.

    A classifier's summary is the (2, K) array of :data:`CLASSIFIER_SIGNALS` on the
    targets; ``features(summary, targets)`` takes the targets' columns (``targets`` are
    positions among the K targets).
    """

    name: str = "loss"
    target_kind: str = "classifier"
    trained: bool = False
    min_std: float = 1e-3

    def __post_init__(self) -> None:
        if self.name not in ("loss", "lira"):
            raise fail("attack", "'loss' or 'lira' for a classifier target", repr(self.name))
        self.trained = self.name == "lira"

    def features(self, summary: NDArray[Any], targets: NDArray[Any]) -> NDArray[np.float32]:
        s = np.asarray(summary, dtype=np.float64)
        idx = np.asarray(targets, dtype=np.int64)
        if self.name == "loss":
            return (-s[0, idx]).astype(np.float32)[:, None]
        return s[1, idx].astype(np.float32)[:, None]

    def fit_target(self, features: NDArray[Any], member: NDArray[np.bool_], seed: int) -> Any:
        if not self.trained:
            return None
        _check_shadow(member, self.name)
        f = np.asarray(features, dtype=np.float64)[:, 0]
        m = np.asarray(member, dtype=bool)
        return (
            float(f[m].mean()),
            max(float(f[m].std(ddof=1)), self.min_std),
            float(f[~m].mean()),
            max(float(f[~m].std(ddof=1)), self.min_std),
        )

    def shadow_minimum(self) -> int:
        return MIN_SHADOW_PER_SIDE if self.trained else 0

    def score(self, fitted: Any, features: NDArray[Any]) -> NDArray[np.float64]:
        f = np.asarray(features, dtype=np.float64)[:, 0]
        if fitted is None:
            return f
        mi, si, mo, so = fitted
        return -0.5 * ((f - mi) / si) ** 2 - np.log(si) + 0.5 * ((f - mo) / so) ** 2 + np.log(so)


RECORD_ATTACKS: dict[str, tuple[str, type[RecordAttack]]] = {
    "tapas-query": ("generator", QueryAttack),
    "dcr": ("generator", DistanceAttack),
    "loss": ("classifier", ClassifierSignalAttack),
    "lira": ("classifier", ClassifierSignalAttack),
}


def make_record_attack(name: str, target_kind: str, **params: Any) -> RecordAttack:
    """A per-target attack by name, checked against the target kind."""
    if name not in RECORD_ATTACKS:
        raise fail("attack", "one of " + ", ".join(RECORD_ATTACKS), repr(name))
    kind, cls = RECORD_ATTACKS[name]
    if kind != target_kind:
        ok = [n for n, (k, _) in RECORD_ATTACKS.items() if k == target_kind]
        raise fail("attack", f"an attack on a {target_kind} ({', '.join(ok)})", repr(name))
    if cls is ClassifierSignalAttack:
        return ClassifierSignalAttack(name=name, **params)
    return cls(**params)
