"""Membership sampling: target/population splits, keep matrices, leave-one-out designs.

Every function takes an explicit :class:`numpy.random.Generator` (or an int seed, turned
into ``numpy.random.default_rng(seed)``), works on record ids (never positions), and
returns frozen records (:class:`~privaudit.data.Dataset`,
:class:`~privaudit.records.MembershipMatrix`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privaudit._validation import check_positive_int, check_probability, check_unique_ids, fail
from privaudit.data.dataset import Dataset
from privaudit.records import MembershipMatrix

__all__ = [
    "LeaveOneOutDesign",
    "balanced_keep_matrix",
    "leave_one_out_sets",
    "sample_membership",
    "split_target_population",
]


def _rng(rng: np.random.Generator | int) -> np.random.Generator:
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, int | np.integer) and not isinstance(rng, bool):
        return np.random.default_rng(int(rng))
    raise fail("rng", "a numpy.random.Generator or an integer seed", type(rng).__name__)


def _model_ids(prefix: str, n: int) -> tuple[str, ...]:
    width = max(3, len(str(n - 1)))
    return tuple(f"{prefix}-{j:0{width}d}" for j in range(n))


def split_target_population(
    dataset: Dataset,
    n_target_pool: int,
    n_population: int,
    rng: np.random.Generator | int,
) -> tuple[Dataset, Dataset]:
    """Split a dataset into a disjoint target pool and population set.

    A uniformly random permutation of the records is drawn; its first ``n_target_pool``
    records form the target pool (from which the target's members and non-members are
    drawn) and the next ``n_population`` the population data (the attacker's data for
    reference/shadow/distilled models and Attack P). Each part keeps the dataset's
    record order. This is the data split of the inference games of Ye et al. (2022),
    Sec. 3, where population data are drawn from the same distribution as, but
    disjoint from, the target's data.

    Parameters
    ----------
    dataset : Dataset
    n_target_pool, n_population : int
        Sizes, each >= 1, with ``n_target_pool + n_population <= len(dataset)``.
    rng : numpy.random.Generator or int

    Returns
    -------
    (target_pool, population) : tuple of Dataset
    """
    n_t = check_positive_int(n_target_pool, "n_target_pool")
    n_p = check_positive_int(n_population, "n_population")
    if n_t + n_p > dataset.n_records:
        raise fail(
            "n_target_pool + n_population",
            f"at most the {dataset.n_records} records of dataset {dataset.name!r}",
            n_t + n_p,
        )
    perm = _rng(rng).permutation(dataset.n_records)
    target_mask = np.zeros(dataset.n_records, dtype=bool)
    target_mask[perm[:n_t]] = True
    pop_mask = np.zeros(dataset.n_records, dtype=bool)
    pop_mask[perm[n_t : n_t + n_p]] = True
    return dataset.subset(target_mask), dataset.subset(pop_mask)


def balanced_keep_matrix(
    record_ids: ArrayLike,
    n_models: int,
    rng: np.random.Generator | int,
    *,
    model_prefix: str = "ref",
    pkeep: float = 0.5,
) -> MembershipMatrix:
    """A keep matrix in which every record is IN for exactly ``pkeep * n_models`` models.

    The LiRA scheme (Carlini et al. 2022, S&P, Sec. VI; ``train.py`` of their code):
    draw ``U ~ Uniform(0, 1)^{n_models x n_records}`` and set
    ``keep[j, i] = rank_j(U[:, i]) < pkeep * n_models``, where ``rank_j`` is the
    position of model ``j`` in the ascending argsort of column ``i``. Each column is a
    uniformly random choice of ``pkeep * n_models`` models, independently per record,
    so every record has the same number of IN and (for ``pkeep = 0.5``) OUT models;
    each model then trains on about ``pkeep * n_records`` records (binomial).

    Parameters
    ----------
    record_ids : array of ids
        Unique ids of the records that may be used for training.
    n_models : int
        Number of models (rows); ``pkeep * n_models`` must be an integer between 1
        and ``n_models - 1``.
    rng : numpy.random.Generator or int
    model_prefix : str
        Model ids are ``f"{model_prefix}-{j:03d}"``.
    pkeep : float
        Fraction of models each record trains, in (0, 1).

    Returns
    -------
    MembershipMatrix
    """
    ids = check_unique_ids(record_ids)
    n_m = check_positive_int(n_models, "n_models", minimum=2)
    p = check_probability(pkeep, "pkeep")
    k_float = p * n_m
    k = round(k_float)
    if abs(k - k_float) > 1e-9 or not 1 <= k <= n_m - 1:
        raise fail(
            "n_models",
            f"a number of models for which pkeep * n_models is an integer in [1, n_models - 1] (pkeep={p})",
            n_m,
        )
    U = _rng(rng).uniform(size=(n_m, ids.size))
    ranks = np.argsort(np.argsort(U, axis=0, kind="stable"), axis=0, kind="stable")
    # LiRA's train.py writes ``argsort(U, axis=0) < pkeep * N``; the argsort of a column
    # is itself a uniformly random permutation, so both give an exact-k column. Ranks
    # make the meaning explicit: model j keeps record i when U[j, i] is among the k
    # smallest of column i.
    keep = ranks < k
    return MembershipMatrix(ids, _model_ids(model_prefix, n_m), keep)


def sample_membership(
    record_ids: ArrayLike,
    rng: np.random.Generator | int,
    *,
    model_id: str = "target",
    pkeep: float = 0.5,
) -> MembershipMatrix:
    """Membership of a single target model: a uniformly random subset of the records.

    Exactly ``round(pkeep * n)`` of the ``n`` records are members (drawn without
    replacement), the rest non-members: the target's training set in the inference
    games of Ye et al. (2022), Def. 3.1-3.3 (with ``pkeep = 1/2``, the balanced prior).

    Returns
    -------
    MembershipMatrix
        One row, ``model_ids == (model_id,)``.
    """
    ids = check_unique_ids(record_ids)
    p = check_probability(pkeep, "pkeep")
    k = round(p * ids.size)
    if not 1 <= k <= ids.size - 1:
        raise fail(
            "record_ids",
            f"enough records for at least one member and one non-member at pkeep={p}",
            ids.size,
        )
    keep = np.zeros(ids.size, dtype=bool)
    keep[_rng(rng).choice(ids.size, size=k, replace=False)] = True
    return MembershipMatrix(ids, (str(model_id),), keep[None, :])


@dataclasses.dataclass(frozen=True)
class LeaveOneOutDesign:
    """The training sets of Attack L's leave-one-out models.

    ``record_ids[j]`` is the j-th attacked record x_j (a member of the target's training
    set D), and row j of ``membership`` (model id ``model_ids[j]``) is the training set
    ``D \\ {x_j}``: every record of D except x_j. ``membership.record_ids`` are the ids
    of D in the order given.
    """

    record_ids: NDArray[Any]
    membership: MembershipMatrix

    @property
    def model_ids(self) -> tuple[str, ...]:
        """Id of the leave-one-out model of each attacked record."""
        return self.membership.model_ids

    def training_ids(self, record_id: Any) -> NDArray[Any]:
        """The training ids ``D \\ {x}`` of the model that leaves out ``record_id``."""
        hit = np.flatnonzero(self.record_ids == record_id)
        if hit.size != 1:
            raise fail("record_id", "one of the attacked records", repr(record_id))
        row = self.membership.keep[int(hit[0])]
        return self.membership.record_ids[row]

    def model_for(self, record_id: Any) -> str:
        """Model id of the leave-one-out model of ``record_id``."""
        hit = np.flatnonzero(self.record_ids == record_id)
        if hit.size != 1:
            raise fail("record_id", "one of the attacked records", repr(record_id))
        return self.membership.model_ids[int(hit[0])]


def leave_one_out_sets(
    train_ids: ArrayLike,
    n_records: int,
    rng: np.random.Generator | int,
    *,
    model_prefix: str = "loo",
) -> LeaveOneOutDesign:
    """Sample records of a training set and build their leave-one-out training sets.

    Attack L (Ye et al. 2022, Sec. 4.5, idealised) knows the target's training set D
    except whether x is in it; its reference models are trained on ``D \\ {x}``, so
    the only randomness left is the training algorithm's. Because that needs models
    per record, it runs on a uniform sample (without replacement) of ``n_records``
    records of D.

    Parameters
    ----------
    train_ids : array of ids
        The target's training set D (unique ids).
    n_records : int
        How many records of D to attack (1 .. len(D)); ``len(D) >= 2``.
    rng : numpy.random.Generator or int
    model_prefix : str
        Model ids are ``f"{model_prefix}-{record_id}"``.

    Returns
    -------
    LeaveOneOutDesign
    """
    ids = check_unique_ids(train_ids, "train_ids")
    if ids.size < 2:
        raise fail("train_ids", "at least 2 training records", ids.size)
    k = check_positive_int(n_records, "n_records")
    if k > ids.size:
        raise fail("n_records", f"at most the {ids.size} training records", k)
    pos = np.sort(_rng(rng).choice(ids.size, size=k, replace=False))
    keep = np.ones((k, ids.size), dtype=bool)
    keep[np.arange(k), pos] = False
    models = tuple(f"{model_prefix}-{ids[p]}" for p in pos)
    mm = MembershipMatrix(ids, models, keep)
    chosen = np.array(mm.record_ids[pos], copy=True)
    chosen.setflags(write=False)
    return LeaveOneOutDesign(chosen, mm)
