"""The two record-level games as round plans: who trains on what, from the seed alone.

Krčo, Guépin, Meeus, Kulynych, de Montjoye, "Lost in the Averages: Reassessing
Record-Specific Privacy Risk Evaluation" (DPM @ ESORICS 2025; arXiv 2405.15423):

* **Traditional game** (Def. 2): each round draws a fresh dataset ``D_bar ~ D^n`` from
  the data distribution and the target enters with probability 1/2; its empirical error
  rate converges to the risk *averaged over datasets* (Prop. 2). Two constructions
  (``RecordRiskConfig.traditional``):

  - ``"amortised"`` (default, kind ``"traditional"``): one round draws, for every target
    independently, a bit ``b_k ~ Bernoulli(1/2)``, and the dataset is the IN targets plus
    ``n - sum_k b_k`` records drawn without replacement from the evaluation pool minus all
    targets, so ``|D| = n`` always; one release serves every target. **Not plain draws
    from the data distribution**: seen from target ``x``, each of the other ``K - 1``
    targets is in the dataset with probability 1/2 (a plain draw would hold it with
    probability about ``n / |evaluation pool|``), and half of the targets are the most
    isolated records of ``D0``, so a dataset holds about ``(K - 1) / 2`` fixed records
    of ``D0``, half of them among its most isolated, instead of a plain draw's share. ``b_x`` is
    independent of them, so Prop. 2 still holds with ``D^n`` replaced by this dataset
    distribution: R_T is ``x``'s risk averaged over datasets in which the same ``K - 1``
    records of ``D0`` recur (with K = 64, n = 1,000: about 32 of them, 3 % of ``D``),
    not over ``D^n``. It differs from the paper's R_T where targets interact: a release
    that leaks ``x`` only when another target ``y`` is in it has R_T(x) = 0.74 amortised
    and 0.56 with plain draws (the planted test of ``tests/games/test_record_risk.py``).
    On Adult with BayNet (k = 2) and the TAPAS query attack
    (``benchmarks/bench_record_risk.py --traditional both``, |D| = 1,000, 200 rounds,
    100 shadow releases, seed 0), with K = 16 targets the two agree within the games'
    replicate noise (RMSD(R_T amortised, R_T per-target) 0.048 against noise floors
    RMSD(T, T') 0.043 / 0.044; gap test of the difference p = 0.31; mean shift +0.014,
    paired z = 1.16). With the default K = 64 (about 32 targets in every dataset) the
    amortised R_T is lower: mean shift -0.013 (-0.017 on the most vulnerable half,
    -0.010 on the random half; paired z = -1.93), RMSD 0.055 against floors 0.049 /
    0.039, excess beyond replicate noise 0.033 (gap test p = 0.015). The headline moves
    less than its own noise: MR(0.8) 0.44 amortised vs 0.36 per-target (over 25
    high-risk records; noise floors MR(T, T') 0.13 / 0.00), RMSD(MS, T) 0.077 vs 0.071,
    and the gap test of MS vs T finds a real gap either way (p = 0.0017 / 0.0005). The
    default stays amortised (the per-target game costs K times the traditional
    releases: 77,000 instead of 27,000 fits at K = 64, 400 rounds); ``per-target``
    gives the paper's R_T.
  - ``"per-target"`` (kind ``"traditional-target"``): the paper's construction, one
    target per round; the dataset is ``x`` (when ``b = 1``) plus ``n - b`` records
    drawn without replacement from the evaluation pool minus ``x``, a plain draw in
    which the other targets appear only as often as any record. ``K`` times the
    traditional rounds (``K n_rounds`` releases per replicate instead of ``n_rounds``).

  Both keep ``|D| = n`` (the target replaces a drawn record instead of being added to
  ``n`` of them as in Def. 2), so that the size of a release never tells ``b``.
* **Model-seeded game** (Def. 3): the released dataset ``D0`` is fixed and only the
  training seed varies; its error rate converges to the risk of ``x`` *in* ``D0``
  (Prop. 1, the DP distinguisher's risk). IN rounds are ``A(D0; s)`` with a fresh seed
  ``s``, shared by every target (all targets are records of ``D0``); OUT rounds for
  target ``x`` are ``A(D0 - x + z; s)`` with ``z`` a fresh *reference* record (the
  evaluation pool minus ``D0``) each round, so ``|D| = n`` and ``x`` is never in an OUT
  dataset. **This differs from Def. 3**, whose OUT dataset is the partial dataset
  ``D_bar = D0 - x`` itself (IN: ``D_bar + x = D0``), the same ``n - 1`` records in every
  OUT round. privaudit replaces ``x`` by a record ``z`` instead of removing it because a
  generator's release has ``|D|`` rows (:func:`~privaudit.generators.base.synthesise`):
  with ``|D_bar| = n - 1`` the row count alone would tell ``b`` (AUC 1 for every record);
  it is the replace-one neighbouring relation of fixed-size (bounded) DP, which the
  traditional rounds also use. ``z`` is fresh in every round so that the OUT world is
  "x replaced by a random record of the population", not "x replaced by one particular
  z", whose similarity to ``x`` would decide the risk. What is measured is then the risk
  of telling ``A(D0; s)`` from the mixture over ``z`` of ``A(D0 - x + z; s)``: the other
  ``n - 1`` records stay fixed (the point of the game), only the record in ``x``'s slot
  varies, and Prop. 1's Hoeffding width holds unchanged (the rounds are i.i.d.).
* **Shadow rounds** (the attacker's training data): like traditional rounds, but the
  background comes from the auxiliary pool, disjoint from the evaluation pool. Each
  target is IN a shadow release with probability 1/2, so no ``n_shadow`` guarantees a
  trained attack the 2 IN and 2 OUT releases of every target that it fits on; but the
  bits come from the seed alone (:func:`shadow_membership`), so the fewest releases that
  give them (:func:`shadow_rounds_needed`) is known before any training, and a smaller
  ``n_shadow`` is refused then.

Which rounds draw their membership: the traditional rounds (amortised: one bit per target
per round; per-target: one bit per round of that target) and the shadow rounds, each bit
IN with probability 1/2 (:func:`round_membership`). The model-seeded rounds do not:
``n_rounds // 2`` IN rounds (``D0``, every target IN) and ``n_rounds - n_rounds // 2``
OUT rounds per target, so with ``n_rounds >= 4`` every target has at least 2 of each. The
per-record AUC of a game (:func:`~privaudit.record_risk.metrics.per_record_auc`) needs
every target IN at least once and OUT at least once in that game's rounds, separately in
the traditional game and in its replicate; as for the shadow releases the bits come from
the seed alone, so the fewest rounds that give them (:func:`rounds_needed`) is exact,
and a smaller ``n_rounds`` is refused before any training (:func:`check_game_rounds`).

Randomness: the split (auxiliary / evaluation pool, ``D0``, random targets) comes from
``derive_rng(seed, "record-risk/split")``; each game ``g`` and replicate has a *data*
stream and an independent *training* stream; round ``r`` of it uses
``derive_rng(data_seed, f"round/{r}")`` (or ``f"out/{k}/{r}"``) for its dataset and
``derive_seed(train_seed, ...)`` for its release, so :meth:`RecordRiskPlan.round`
re-creates any single round from the seed alone. Replicate 1 of each game is an
independent copy (MS' and T') whose disagreement with replicate 0 is the noise floor.

Target selection: half the targets are the most vulnerable records of ``D0`` by the
distance score of Meeus et al. 2023 ("Achilles' Heels", Sec. 4; used by Krčo et al.):
the mean distance from a record to its ``k = 5`` nearest neighbours in ``D0``; the
distance here is the cosine distance between feature vectors (one-hot categorical,
standardised numeric), our reading of that paper. The other half are drawn uniformly from
the rest of ``D0``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import check_positive_int, fail
from privaudit.runtime.seeds import derive_rng, derive_seed

__all__ = [
    "DRAWN_KINDS",
    "GAME_KINDS",
    "MIN_GAME_PER_SIDE",
    "PER_TARGET_KINDS",
    "ROUNDS_SEARCH_LIMIT",
    "RecordRiskPlan",
    "RoundSpec",
    "check_game_rounds",
    "distance_vulnerability",
    "game_constructions",
    "make_plan",
    "round_membership",
    "rounds_needed",
    "shadow_membership",
    "shadow_rounds_needed",
]

#: Round kinds: traditional (amortised), traditional per target, model-seeded IN,
#: model-seeded OUT, shadow (attacker).
GAME_KINDS: tuple[str, ...] = ("traditional", "traditional-target", "ms-in", "ms-out", "shadow")
#: Round kinds with one target per round (their rounds score that target only).
PER_TARGET_KINDS: tuple[str, ...] = ("traditional-target", "ms-out")
#: Round kinds whose membership is drawn from the seed (each target IN with probability
#: 1/2); the model-seeded rounds are IN (``ms-in``) or OUT (``ms-out``) by construction.
DRAWN_KINDS: tuple[str, ...] = ("traditional", "traditional-target", "shadow")
#: Fewest IN and fewest OUT rounds of each target in one game (and in its replicate) that
#: the per-record AUC needs (:func:`~privaudit.record_risk.metrics.per_record_auc`).
MIN_GAME_PER_SIDE = 1
#: How far :func:`rounds_needed` looks by default for the fewest rounds that suffice.
ROUNDS_SEARCH_LIMIT = 10_000


@dataclasses.dataclass(frozen=True)
class RoundSpec:
    """One round: the training set (positions in the universe), the release seed, and
    which targets it scores with which true membership."""

    kind: str
    replicate: int
    index: int
    target: int  # the target of an ms-out or traditional-target round, else -1
    positions: NDArray[np.int64]
    seed: int
    scored: NDArray[np.int64]
    member: NDArray[np.bool_]


def _streams(seed: int, kind: str, replicate: int) -> tuple[int, int]:
    """(data seed, training seed) of a game and replicate of the experiment ``seed``."""
    game = "model-seeded" if kind.startswith("ms") else kind
    base = f"record-risk/{game}/{replicate}"
    return (
        derive_seed(seed, purpose=base + "/data"),
        derive_seed(seed, purpose=base + "/train"),
    )


def _amortised_draw(
    data_seed: int, index: int, n_targets: int
) -> tuple[np.random.Generator, NDArray[np.bool_]]:
    """The data generator of amortised round ``index`` (traditional or shadow) after
    drawing its membership bits, and the bits: each target IN with probability 1/2."""
    rng = derive_rng(data_seed, purpose=f"round/{index}")
    return rng, rng.random(n_targets) < 0.5


def _target_draw(data_seed: int, target: int, index: int) -> tuple[np.random.Generator, bool]:
    """The data generator of per-target traditional round ``index`` of ``target`` after
    drawing its membership bit, and the bit: IN with probability 1/2."""
    rng = derive_rng(data_seed, purpose=f"target/{target}/{index}")
    return rng, bool(rng.random() < 0.5)


def _bits(
    seed: int, kind: str, replicate: int, n_targets: int
) -> Callable[[int, NDArray[np.int64]], NDArray[np.bool_]]:
    """``draw(index, which)``: the membership bits of targets ``which`` in round ``index``
    of a drawn round kind (:data:`DRAWN_KINDS`) and replicate, as
    :meth:`RecordRiskPlan.round` draws them (the same functions, so they cannot drift)."""
    if kind not in DRAWN_KINDS:
        raise fail(
            "kind", "a round kind with drawn membership: " + ", ".join(DRAWN_KINDS), repr(kind)
        )
    data_seed, _ = _streams(seed, kind, replicate)
    if kind == "traditional-target":
        return lambda index, which: np.fromiter(
            (_target_draw(data_seed, int(k), index)[1] for k in which), dtype=bool, count=len(which)
        )
    return lambda index, which: _amortised_draw(data_seed, index, n_targets)[1][which]


def round_membership(
    seed: int, kind: str, n_targets: int, n_rounds: int, replicate: int = 0
) -> NDArray[np.bool_]:
    """Which targets are IN each round of a drawn round kind (:data:`DRAWN_KINDS`):
    ``(n_rounds, n_targets)`` bool, entry ``[r, k]`` the membership of target ``k`` in
    :meth:`RecordRiskPlan.round` ``(kind, replicate, r)`` (amortised, shadow) or
    ``(kind, replicate, r, k)`` (``traditional-target``).

    It depends on ``seed`` and the target positions ``0..n_targets-1`` only (not on the
    data, nor on ``n_rounds``: the first ``m`` rows are the same for every
    ``n_rounds >= m``), so it is known before any release is trained.
    """
    draw = _bits(seed, kind, replicate, n_targets)
    every = np.arange(n_targets, dtype=np.int64)
    out = np.empty((n_rounds, n_targets), dtype=bool)
    for r in range(n_rounds):
        out[r] = draw(r, every)
    return out


def shadow_membership(seed: int, n_targets: int, n_shadow: int) -> NDArray[np.bool_]:
    """Which targets are IN each shadow release: ``(n_shadow, n_targets)`` bool, row ``r``
    the ``member`` of :meth:`RecordRiskPlan.round` ``("shadow", 0, r)``
    (:func:`round_membership` of the shadow rounds)."""
    return round_membership(seed, "shadow", n_targets, n_shadow)


def rounds_needed(
    seed: int,
    kind: str,
    n_targets: int,
    per_side: int,
    *,
    limit: int = ROUNDS_SEARCH_LIMIT,
    replicate: int = 0,
) -> int | None:
    """The fewest rounds of a drawn round kind (:data:`DRAWN_KINDS`) and replicate in
    which every target is IN at least ``per_side`` times and OUT at least ``per_side``
    times (``0`` when ``per_side <= 0``), or ``None`` when ``limit`` rounds are not enough.

    Each target is IN a round with probability 1/2 independently, so no number of rounds
    guarantees it a priori (target ``k`` misses it at ``m`` rounds with probability
    ``2 P(Bin(m, 1/2) < per_side)``); but the draws come from ``seed`` alone
    (:func:`round_membership`), so for a given seed and number of targets the answer is
    exact, and every number of rounds at least this one gives every target its rounds.
    """
    if per_side <= 0:
        return 0
    draw = _bits(seed, kind, replicate, n_targets)
    open_ = np.arange(n_targets, dtype=np.int64)  # the targets still short of a side
    n_in = np.zeros(n_targets, dtype=np.int64)
    for r in range(limit):
        n_in += draw(r, open_)
        m = r + 1
        done = (n_in >= per_side) & (m - n_in >= per_side)
        if done.all():
            return m
        open_, n_in = open_[~done], n_in[~done]
    return None


def shadow_rounds_needed(seed: int, n_targets: int, per_side: int, *, limit: int) -> int | None:
    """The fewest shadow releases in which every target is IN at least ``per_side`` times
    and OUT at least ``per_side`` times (``0`` when ``per_side <= 0``), or ``None`` when
    ``limit`` releases are not enough (:func:`rounds_needed` of the shadow rounds)."""
    return rounds_needed(seed, "shadow", n_targets, per_side, limit=limit)


def check_game_rounds(
    *, n_rounds: int, n_targets: int, seed: int, traditional: str, replicates: bool
) -> None:
    """Refuse ``n_rounds`` rounds that leave some target of the traditional game (or of
    its replicate) never IN or never OUT, which its per-record AUC needs
    (:data:`MIN_GAME_PER_SIDE`), before any training.

    ``traditional`` is ``"amortised"`` or ``"per-target"`` (``RecordRiskConfig``). The
    model-seeded game needs no check: ``n_rounds // 2`` IN and ``n_rounds - n_rounds // 2``
    OUT rounds of every target by construction. The traditional bits come from ``seed``
    alone (:func:`round_membership`), so the fewest rounds that suffice for ``n_targets``
    targets is exact (:func:`rounds_needed`, the larger over the replicates), and named.

    Raises
    ------
    InvalidInputError
        Naming ``n_rounds``, the seed, the number of targets and the minimum.
    """
    kind = "traditional" if traditional == "amortised" else "traditional-target"
    p = MIN_GAME_PER_SIDE
    limit = max(int(n_rounds), ROUNDS_SEARCH_LIMIT)
    needs = {
        rep: rounds_needed(seed, kind, n_targets, p, limit=limit, replicate=rep)
        for rep in ((0, 1) if replicates else (0,))
    }
    short = [rep for rep, need in needs.items() if need is None or need > n_rounds]
    if not short:
        return
    counts = [need for need in needs.values() if need is not None]
    need = max(counts) if len(counts) == len(needs) else None
    least = f"at least {need}" if need is not None else f"more than {limit}"
    games = " and its replicate" if replicates else ""
    fewest = (
        f"the first {need} rounds are the fewest that give every target both in the game{games}"
        if need is not None
        else f"no number up to {limit} gives every target both in the game{games}"
    )
    where = " and in ".join(("the game", "its replicate")[rep] for rep in short)
    raise fail(
        "n_rounds",
        f"{least} rounds per game (the per-record AUC needs every target IN at least {p} and "
        f"OUT at least {p} of the rounds of each game; in the {traditional} traditional game "
        f"a target is IN each of its rounds with probability 1/2, drawn from the seed: with "
        f"seed {seed} and {n_targets} targets, {n_rounds} rounds leave some target always IN "
        f"or always OUT in {where}; {fewest})",
        n_rounds,
    )


def game_constructions(traditional: str = "amortised") -> dict[str, str]:
    """How each game's datasets were drawn, in the words the report shows beside R_MS and
    R_T (``results.json["record_risk"]["constructions"]``; the module docstring explains
    each choice against Krčo et al.'s Def. 2-3)."""
    ms = (
        "IN rounds train on D0, OUT rounds for record x on D0 - x + z with a fresh reference "
        "record z (not in D0) each round. Krčo et al.'s Def. 3 trains OUT rounds on D0 - x "
        "(n - 1 records, the same every round); privaudit replaces x instead of removing it so "
        "that |D| = n in both worlds (a generator's release has |D| rows, which would tell b), "
        "and draws z afresh so that R_MS is x's risk against a random replacement, not against "
        "one chosen z"
    )
    if traditional == "amortised":
        t = (
            "amortised: every round draws each of the K targets into the dataset with "
            "probability 1/2 and fills it to n records from the evaluation pool minus the "
            "targets; one release serves every target. These datasets are not plain draws "
            "from the data distribution (Krčo et al.'s Def. 2): each holds about half of the "
            "K targets, and half of the targets are the most isolated records of D0, so R_T "
            "averages x's risk over datasets that share about (K - 1)/2 records of D0, and "
            "differs from the paper's R_T where targets interact (on Adult with BayNet at "
            "K = 64: 0.013 lower on average); traditional: per-target plays the paper's plain "
            "draws"
        )
    else:
        t = (
            "per-target: one target x per round, in the dataset with probability 1/2, the "
            "other records a plain draw from the evaluation pool minus x (Krčo et al.'s "
            "Def. 2, with |D| = n: x replaces a drawn record)"
        )
    return {"model-seeded": ms, "traditional": t}


def distance_vulnerability(features: NDArray[np.float64], k: int = 5) -> NDArray[np.float64]:
    """Mean cosine distance of each row to its ``k`` nearest other rows (Meeus et al. 2023).

    Higher = more isolated = more vulnerable.
    """
    X = np.asarray(features, dtype=np.float64)
    k = check_positive_int(k, "k")
    if X.ndim != 2 or X.shape[0] <= k:
        raise fail("features", f"a 2-d array with more than k={k} rows", X.shape)
    norm = np.linalg.norm(X, axis=1, keepdims=True)
    U = X / np.where(norm > 0, norm, 1.0)
    D = 1.0 - U @ U.T
    np.fill_diagonal(D, np.inf)
    near = np.partition(D, k - 1, axis=1)[:, :k]
    return np.asarray(near.mean(axis=1), dtype=np.float64)


@dataclasses.dataclass(frozen=True)
class RecordRiskPlan:
    """The split and the seeds of a record-risk experiment (see the module docstring).

    Attributes (positions index the universe, i.e. the dataset's record order)
    ----------
    n : int
        |D| of every training set.
    aux, d0, targets, background, reference : int arrays
        Auxiliary pool; the released dataset; the targets (a subset of ``d0``); the
        traditional game's background (evaluation pool minus the targets); the
        model-seeded game's replacement records (evaluation pool minus ``d0``).
    n_rounds : int
        Rounds per game per target (model-seeded: ``n_rounds // 2`` IN and the rest OUT).
    n_shadow : int
        Shadow releases for the attacker.
    seed : int
    vulnerable : bool array (K,)
        Whether each target was chosen by the distance score (else at random).
    """

    n: int
    aux: NDArray[np.int64]
    d0: NDArray[np.int64]
    targets: NDArray[np.int64]
    background: NDArray[np.int64]
    reference: NDArray[np.int64]
    n_rounds: int
    n_shadow: int
    seed: int
    vulnerable: NDArray[np.bool_]
    vulnerability: NDArray[np.float64]

    @property
    def n_targets(self) -> int:
        return int(self.targets.size)

    @property
    def n_in(self) -> int:
        return self.n_rounds // 2

    @property
    def n_out(self) -> int:
        return self.n_rounds - self.n_rounds // 2

    def streams(self, kind: str, replicate: int) -> tuple[int, int]:
        """(data seed, training seed) of a game and replicate; independent streams."""
        return _streams(self.seed, kind, replicate)

    def rounds(self, kind: str, replicate: int = 0) -> list[tuple[str, int, int, int]]:
        """Round keys ``(kind, replicate, index, target)`` of one game."""
        if kind == "traditional":
            return [(kind, replicate, r, -1) for r in range(self.n_rounds)]
        if kind == "shadow":
            return [(kind, replicate, r, -1) for r in range(self.n_shadow)]
        if kind == "ms-in":
            return [(kind, replicate, r, -1) for r in range(self.n_in)]
        if kind == "ms-out":
            return [
                (kind, replicate, r, k) for k in range(self.n_targets) for r in range(self.n_out)
            ]
        if kind == "traditional-target":
            return [
                (kind, replicate, r, k) for k in range(self.n_targets) for r in range(self.n_rounds)
            ]
        raise fail("kind", "one of " + ", ".join(GAME_KINDS), repr(kind))

    def round(self, kind: str, replicate: int, index: int, target: int = -1) -> RoundSpec:
        """Re-create one round from the seed alone."""
        data_seed, train_seed = self.streams(kind, replicate)
        K = self.n_targets
        if kind in ("traditional", "shadow"):
            rng, bits = _amortised_draw(data_seed, index, K)
            pool = self.background if kind == "traditional" else self.aux
            rest = rng.choice(pool, size=self.n - int(bits.sum()), replace=False)
            pos = np.concatenate([self.targets[bits], rest]).astype(np.int64)
            seed = derive_seed(train_seed, purpose=f"round/{index}")
            return RoundSpec(kind, replicate, index, -1, pos, seed, np.arange(K), bits)
        if kind == "traditional-target":
            if not 0 <= target < K:
                raise fail("target", f"a target index in 0..{K - 1}", target)
            rng, bit = _target_draw(data_seed, target, index)
            x = self.targets[target]
            evaluation = np.concatenate([self.d0, self.reference])
            pool = evaluation[evaluation != x]
            rest = rng.choice(pool, size=self.n - int(bit), replace=False)
            pos = (np.concatenate([[x], rest]) if bit else rest).astype(np.int64)
            seed = derive_seed(train_seed, purpose=f"target/{target}/{index}")
            member = np.asarray([bit])
            return RoundSpec(
                kind, replicate, index, target, pos, seed, np.asarray([target]), member
            )
        if kind == "ms-in":
            seed = derive_seed(train_seed, purpose=f"in/{index}")
            return RoundSpec(
                kind, replicate, index, -1, self.d0, seed, np.arange(K), np.ones(K, dtype=bool)
            )
        if kind == "ms-out":
            if not 0 <= target < K:
                raise fail("target", f"a target index in 0..{K - 1}", target)
            rng = derive_rng(data_seed, purpose=f"out/{target}/{index}")
            z = self.reference[rng.integers(self.reference.size)]
            pos = self.d0.copy()
            pos[self.d0 == self.targets[target]] = z
            seed = derive_seed(train_seed, purpose=f"out/{target}/{index}")
            return RoundSpec(
                kind, replicate, index, target, pos, seed, np.asarray([target]), np.zeros(1, bool)
            )
        raise fail("kind", "one of " + ", ".join(GAME_KINDS), repr(kind))

    def to_dict(self, ids: NDArray[Any]) -> dict[str, Any]:
        """JSON summary (target record ids from the universe ``ids``)."""
        return {
            "n": self.n,
            "n_aux": int(self.aux.size),
            "n_reference": int(self.reference.size),
            "n_rounds": self.n_rounds,
            "n_shadow": self.n_shadow,
            "n_targets": self.n_targets,
            "seed": self.seed,
            "target_ids": [v.item() if isinstance(v, np.generic) else v for v in ids[self.targets]],
        }


def make_plan(
    features: NDArray[np.float64],
    *,
    n: int,
    n_targets: int,
    n_rounds: int,
    n_shadow: int,
    n_aux: int,
    seed: int,
    vulnerable_fraction: float = 0.5,
    k_neighbours: int = 5,
) -> RecordRiskPlan:
    """Split the universe (rows of ``features``) and pick the targets.

    ``n_aux`` records form the auxiliary pool, the rest the evaluation pool; ``D0`` is a
    uniform draw of ``n`` evaluation records; of the ``n_targets`` targets,
    ``round(vulnerable_fraction * n_targets)`` are the most vulnerable records of ``D0``
    (:func:`distance_vulnerability`) and the rest a uniform draw from the others.
    """
    X = np.asarray(features, dtype=np.float64)
    N = X.shape[0]
    n = check_positive_int(n, "n", minimum=k_neighbours + 2)
    K = check_positive_int(n_targets, "n_targets", minimum=1)
    check_positive_int(n_rounds, "n_rounds", minimum=4)
    check_positive_int(n_shadow, "n_shadow", minimum=4)
    check_positive_int(n_aux, "n_aux", minimum=n)
    if K > n:
        raise fail("n_targets", f"at most n={n} (targets are records of D0)", K)
    if not 0.0 <= vulnerable_fraction <= 1.0:
        raise fail("vulnerable_fraction", "a fraction in [0, 1]", vulnerable_fraction)
    if N < n_aux + 2 * n:
        raise fail("dataset", f"at least n_aux + 2 n = {n_aux + 2 * n} records", N)
    rng = derive_rng(seed, purpose="record-risk/split")
    perm = rng.permutation(N)
    aux = np.sort(perm[:n_aux])
    evaluation = perm[n_aux:]
    d0 = np.sort(evaluation[:n])
    reference = np.sort(evaluation[n:])
    score = distance_vulnerability(X[d0], k_neighbours)
    n_vul = round(vulnerable_fraction * K)
    by_risk = np.argsort(-score, kind="stable")
    chosen = list(by_risk[:n_vul])
    others = by_risk[n_vul:]
    chosen += list(rng.choice(others, size=K - n_vul, replace=False))
    vulnerable = np.zeros(K, dtype=bool)
    vulnerable[:n_vul] = True
    targets = d0[np.asarray(chosen, dtype=np.int64)]
    background = np.sort(np.setdiff1d(np.asarray(evaluation), targets))
    return RecordRiskPlan(
        n=n,
        aux=aux.astype(np.int64),
        d0=d0.astype(np.int64),
        targets=targets.astype(np.int64),
        background=background.astype(np.int64),
        reference=reference.astype(np.int64),
        n_rounds=int(n_rounds),
        n_shadow=int(n_shadow),
        seed=int(seed),
        vulnerable=vulnerable,
        vulnerability=score[np.asarray(chosen, dtype=np.int64)],
    )
