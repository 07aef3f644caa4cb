r"""Can the records alone tell members from non-members? A cross-fitted ridge classifier
and its permutation test.

When membership was drawn at random, independently of the records, nothing about a
record (its text, its features, its label) predicts whether it is a member. A classifier
that sees only the records -- never the model -- and still separates members from
non-members therefore refutes a random draw (Das et al. 2024, "Blind Baselines Beat
Membership Inference Attacks for Foundation Models"; ``../shared/notes/attacks.md``
section 4.3). The language-model audit uses it on the texts (:mod:`privaudit.llm.blind`),
the membership audit on a provided target's records
(:mod:`privaudit.membership.split_check`); both build a label-free feature matrix ``Z``
and hand it here.

**Classifier.** Ridge regression of the 0/1 membership label, cross-fitted: the groups
(units of randomisation, e.g. documents, or the records themselves) are dealt at random
into ``k`` folds, independently of the labels, and each record is scored by the ridge
fitted on the other folds, centred on its training part,

.. math::

    \beta_f = (Z_{-f}^\top Z_{-f} + \lambda I)^{-1} Z_{-f}^\top (y_{-f} - \bar y_{-f}),
    \qquad s_i = z_i^\top \beta_{f(i)},

without a per-fold intercept (folds fitted on different label proportions would otherwise
be offset against each other, the usual downward bias of pooled out-of-fold AUCs). The
features and folds use no label, so the ``k`` matrix inverses are computed once and each
refit costs two matrix-vector products per fold.

**Test.** Under the null hypothesis "membership was assigned to the groups at random,
whatever the records", the groups' labels are exchangeable. Re-running the same
cross-fitted classifier on permutations of the group labels (the number of member groups
kept) draws from the exact null distribution of its AUC, so

.. math::

    p = \frac{1 + \#\{\text{permutations with AUC} \ge \text{observed}\}}{1 + n_\text{perm}}

is a valid p-value whatever the classifier's biases (Phipson and Smyth 2010). A DeLong
interval would not do: cross-fitted scores share fitted models and are not independent.
A small p refutes a random draw; a large one does not prove it (the classifier sees only
what a linear model of ``Z`` can see).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privaudit._stats import mann_whitney_auc
from privaudit._validation import as_bool_array, check_both_classes, check_positive_int, fail
from privaudit.errors import InsufficientDataError

__all__ = ["RidgeCrossFit", "ShiftTest"]


@dataclasses.dataclass(frozen=True)
class ShiftTest:
    """Permutation test of "the records alone predict membership" (module docstring).

    ``auc``: the cross-fitted classifier's out-of-fold AUC; ``p_value``: the share of
    group-label permutations (plus the observed one) whose AUC reaches it;
    ``null_auc_95``: the 95% quantile of the permutation AUCs; ``unit``: what was permuted.
    """

    auc: float
    p_value: float
    null_auc_95: float
    n_permutations: int
    unit: str = "document"

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class RidgeCrossFit:
    """The label-free part of the cross-fitted ridge classifier (module docstring): the
    features ``z``, the labels ``y``, the groups, the folds and each fold's inverse.

    Build it with :meth:`prepare`; :meth:`cross_fit` scores any labels, :meth:`shift_test`
    runs the permutation test.
    """

    y: NDArray[np.int64]
    groups: NDArray[Any]
    z: NDArray[np.float64]  # (n_records, d) label-free features
    folds: tuple[NDArray[np.intp], ...]  # test indices of each fold
    solves: tuple[NDArray[np.float64], ...]  # (d, d) (Z_tr'Z_tr + lambda I)^-1 per fold
    k: int

    @classmethod
    def prepare(
        cls,
        z: ArrayLike,
        member: ArrayLike,
        groups: ArrayLike,
        *,
        n_folds: int,
        ridge: float,
        seed: int,
        unit: str = "document",
    ) -> RidgeCrossFit:
        """Deal the groups into ``min(n_folds, groups of the smaller class)`` folds at
        random (seeded, label-free) and invert each fold's training Gram matrix.

        Raises
        ------
        InsufficientDataError
            Fewer than 2 groups in a class (no cross-fitting possible).
        """
        m = as_bool_array(member, "member", ndim=1)
        check_both_classes(m, "member")
        zz = np.asarray(z, dtype=np.float64)
        g = np.asarray(groups, dtype=object)
        if zz.ndim != 2 or zz.shape[0] != m.size or g.shape != m.shape:
            raise fail(
                "z/member/groups",
                f"one feature row and one group per record ({m.size})",
                f"{zz.shape}, {g.shape}",
            )
        n_min = min(len(set(g[m].tolist())), len(set(g[~m].tolist())))
        if n_min < 2:
            raise InsufficientDataError(
                f"{unit}s: expected at least 2 {unit}s of each class for cross-fitting, "
                f"found {n_min} in the smaller class"
            )
        k = min(int(n_folds), n_min)
        if k < 2:
            raise fail("n_folds", "at least 2 folds", n_folds)
        docs, doc_of = np.unique(g.astype(str), return_inverse=True)
        rng = np.random.default_rng(np.random.SeedSequence([int(seed), 0xF01D]))
        fold_of = (rng.permutation(docs.size) % k)[doc_of]
        d = zz.shape[1]
        folds, solves = [], []
        for f in range(k):
            tr = fold_of != f
            folds.append(np.flatnonzero(~tr))
            solves.append(np.linalg.inv(zz[tr].T @ zz[tr] + ridge * np.eye(d)))
        return cls(m.astype(np.int64), g, zz, tuple(folds), tuple(solves), k)

    def cross_fit(self, y: NDArray[np.int64]) -> NDArray[np.float64]:
        """Out-of-fold ridge scores of labels ``y`` (higher = label 1)."""
        scores = np.full(y.size, np.nan)
        for test, solve in zip(self.folds, self.solves, strict=True):
            tr = np.ones(y.size, dtype=bool)
            tr[test] = False
            yc = y[tr] - y[tr].mean()
            beta = solve @ (self.z[tr].T @ yc)
            scores[test] = self.z[test] @ beta
        return scores

    def shift_test(
        self,
        observed_scores: NDArray[np.float64],
        n_permutations: int,
        seed: int,
        *,
        unit: str = "document",
    ) -> ShiftTest:
        """The permutation test of the module docstring, given the observed scores
        (:meth:`cross_fit` of :attr:`y`): the groups' labels permuted as units."""
        n_perm = check_positive_int(n_permutations, "n_permutations")
        observed = mann_whitney_auc(observed_scores, self.y.astype(bool))
        rng = np.random.default_rng(np.random.SeedSequence([int(seed), 0xB11D]))
        # one label per group (every record of a group shares it), permuted as a unit
        codes, index = np.unique(self.groups.astype(str), return_inverse=True)
        group_label = np.zeros(codes.size, dtype=np.int64)
        group_label[index] = self.y
        null = np.empty(n_perm)
        for i in range(n_perm):
            y = rng.permutation(group_label)[index]
            null[i] = mann_whitney_auc(self.cross_fit(y), y.astype(bool))
        return ShiftTest(
            auc=float(observed),
            p_value=float((1 + np.sum(null >= observed - 1e-12)) / (1 + n_perm)),
            null_auc_95=float(np.quantile(null, 0.95)),
            n_permutations=n_perm,
            unit=unit,
        )
