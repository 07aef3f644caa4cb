"""The split step of Ye et al.'s experiment: who is audited, who is the population, who trains whom.

Ye et al. 2022 ("Enhanced Membership Inference Attacks against Machine Learning
Models", CCS'22), Def. 3.2 fixes the dataset and the target's training set; this module
draws them (:func:`draw_split`), or takes them from a target trained outside privaudit
(:func:`provided_split`), and lays out the reference models over the audited records.
Everything is by record id (:class:`~privaudit.records.MembershipMatrix`); the seeds are
the experiment's component seeds (``split``, ``membership``, ``attacker``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import fail
from privaudit.data.dataset import Dataset
from privaudit.data.sampling import balanced_keep_matrix, split_target_population
from privaudit.errors import DesignError
from privaudit.models.provided import ProvidedTarget
from privaudit.records import MembershipMatrix
from privaudit.runtime.seeds import derive_rng

if TYPE_CHECKING:
    from privaudit.membership.design import ExperimentConfig

__all__ = [
    "POOL",
    "POPULATION",
    "TARGET_ID",
    "YeSplit",
    "draw_membership",
    "draw_pool",
    "make_split",
    "population_subsets",
]

TARGET_ID = "target"
#: Names of the two evaluation sets: the audited records and the attacker's population.
POOL = "pool"
POPULATION = "population"


@dataclasses.dataclass(frozen=True)
class YeSplit:
    """The outcome of the split step.

    Attributes
    ----------
    pool : Dataset
        The audited records (the target pool).
    population : Dataset
        The attacker's population (disjoint from the pool).
    member : bool array
        The target's membership of each pool record.
    ref_source : Dataset or None
        Records set aside for the reference models (a provided target with
        ``references="population"``), else None (they train on the pool).
    ref_keep : MembershipMatrix
        The reference models' layout over the pool.
    matrix : MembershipMatrix
        Target (row ``"target"``) and reference models over the audited records.
    attacker_size : int
        The training-set size of the attacker's shadow and distilled models (Ye et al.
        App. B.2: the target's): half of the pool for a target privaudit draws, a
        constant, so that nothing the attacker builds depends on the members' coins
        (Steinke et al.'s bound needs the guesses to depend on them only through the
        model); a provided target's member count.
    """

    pool: Dataset
    population: Dataset
    member: NDArray[np.bool_]
    ref_source: Dataset | None
    ref_keep: MembershipMatrix
    matrix: MembershipMatrix
    attacker_size: int

    @property
    def eval_sets(self) -> dict[str, Dataset]:
        """The records models are evaluated on, by name."""
        return {POOL: self.pool, POPULATION: self.population}

    @property
    def n_train(self) -> int:
        """The target's training-set size."""
        return int(self.member.sum())


def draw_pool(
    dataset: Dataset, config: ExperimentConfig, seeds: Mapping[str, int]
) -> tuple[Dataset, Dataset]:
    """The target pool and the population (``split`` seed)."""
    pool, population = split_target_population(
        dataset,
        config.n_target_pool,
        config.n_population,
        derive_rng(seeds["split"], purpose="split"),
    )
    return pool, population


def draw_membership(
    pool: Dataset, config: ExperimentConfig, seeds: Mapping[str, int]
) -> NDArray[np.bool_]:
    """The target's membership of each pool record (``membership`` seed), with
    ``config.force_membership`` applied."""
    # The target's members: one fair coin per pool record, drawn independently of the
    # other records' coins (Steinke et al. 2023, Sec. 3: the one-run bounds of
    # privaudit.stats.attack_bounds need exactly this; a fixed-size half is not covered by
    # their proof) and of the reference models' layout (so the layout carries no
    # information on the bit). The number of members is Binomial(n, 1/2).
    m_rng = derive_rng(seeds["membership"], purpose="target-membership-coins")
    member = m_rng.random(pool.n_records) < 0.5
    if config.force_membership:
        pos = pool.positions(np.asarray([r for r, _ in config.force_membership]))
        member[pos] = [b for _, b in config.force_membership]
    return member


def provided_split(
    dataset: Dataset, provided: ProvidedTarget, config: ExperimentConfig, seeds: Mapping[str, int]
) -> tuple[Dataset, Dataset, NDArray[np.bool_], Dataset | None]:
    """Pool, population, membership and reference source of a provided target."""
    if config.force_membership:
        raise fail(
            "force_membership", "none with a provided target (its split is given)", "overrides"
        )
    pool = dataset.subset(provided.audited_ids)
    member = np.zeros(pool.n_records, dtype=bool)
    member[: provided.member_ids.size] = True
    if provided.population_ids is not None:
        population = dataset.subset(provided.population_ids)
    else:
        rest = ~np.isin(dataset.record_ids, pool.record_ids)
        if not rest.any():
            raise DesignError("a provided target needs population records (none left)")
        population = dataset.subset(rest)
    if pool.n_records != config.n_target_pool:
        raise fail("n_target_pool", f"the {pool.n_records} audited records", config.n_target_pool)
    if population.n_records != config.n_population:
        raise fail(
            "n_population", f"the {population.n_records} population records", config.n_population
        )
    ref_source = None
    if provided.references == "population":
        # set aside half of the population (at least the target's training-set size when
        # possible) for the reference models; the rest stays the attacker's population
        n_src = max(population.n_records // 2, min(int(member.sum()), population.n_records - 2))
        if n_src < 2 or population.n_records - n_src < 2:
            raise DesignError(
                f"references: 'population' needs population records for the reference models "
                f"and for the attacker's population; found {population.n_records}"
            )
        perm = derive_rng(seeds["split"], purpose="reference-source").permutation(
            population.n_records
        )
        src = np.zeros(population.n_records, dtype=bool)
        src[perm[:n_src]] = True
        ref_source, population = population.subset(src), population.subset(~src)
    return pool, population, member, ref_source


def make_split(
    dataset: Dataset,
    config: ExperimentConfig,
    seeds: Mapping[str, int],
    provided: ProvidedTarget | None = None,
) -> YeSplit:
    """The split step: pool, population, the target's members and the reference layout.

    Drawn from the seeds (:func:`draw_pool`, each pool record a member by its own fair
    coin) or, for a provided target, taken from it (:func:`provided_split`).
    """
    ref_source: Dataset | None = None
    if provided is None:
        pool, population = draw_pool(dataset, config, seeds)
        member = draw_membership(pool, config, seeds)
    else:
        pool, population, member, ref_source = provided_split(dataset, provided, config, seeds)
    if provided is not None and provided.references == "population":
        # Reference models train on the part of the population set aside for them (every
        # audited record OUT for all of them: offline attacks only).
        ref_keep = MembershipMatrix(
            pool.record_ids,
            tuple(f"ref-{j:03d}" for j in range(config.n_reference)),
            np.zeros((config.n_reference, pool.n_records), dtype=bool),
        )
    else:
        # Reference models: a balanced keep matrix over the reference models only (every
        # pool record IN for exactly n_reference / 2 of them, whatever its target bit).
        ref_keep = balanced_keep_matrix(
            pool.record_ids,
            config.n_reference,
            derive_rng(seeds["attacker"], purpose="reference-keep-matrix"),
            model_prefix="ref",
        )
    matrix = MembershipMatrix(
        pool.record_ids,
        (TARGET_ID, *ref_keep.model_ids),
        np.vstack([member[None, :], ref_keep.keep]),
    )
    if member.sum() < 2 or (~member).sum() < 2:
        raise DesignError("the target needs at least 2 members and 2 non-members in the pool")
    size = pool.n_records // 2 if provided is None else int(member.sum())
    return YeSplit(pool, population, member, ref_source, ref_keep, matrix, size)


def population_subsets(source: Dataset, size: int, n_models: int, seed: int) -> list[NDArray[Any]]:
    """``n_models`` uniformly random subsets of ``min(size, n)`` records of ``source``."""
    rng = derive_rng(seed, purpose="reference-population-subsets")
    k = min(size, source.n_records)
    return [
        source.record_ids[np.sort(rng.choice(source.n_records, size=k, replace=False))]
        for _ in range(n_models)
    ]
