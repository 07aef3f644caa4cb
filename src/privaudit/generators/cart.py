"""A Synthpop-style sequential CART generator.

Synthpop (Nowok, Raab, Dibben, "synthpop: Bespoke Creation of Synthetic Data in R",
J. Stat. Softw. 74(11), 2016, Sec. 2-3) synthesises the attributes one after another in a
visit sequence: the first from its observed marginal (a bootstrap of the observed
values), each later attribute ``X_j`` by a classification tree fitted on the observed
``X_1 .. X_{j-1}``; a synthetic row is dropped down that tree with its *synthetic*
predecessors and receives the observed value of a random donor in the leaf it reaches
(method ``"cart"``, ``proper = FALSE``). Synthpop's defaults are a minimum leaf size
(``minbucket``) of 5 and the column order as the visit sequence; both are kept here.

Differences from synthpop, stated: trees are scikit-learn's CART
(:class:`~sklearn.tree.DecisionTreeClassifier`, Gini, no pruning) where synthpop uses
``rpart``; categorical predictors enter as their integer codes (ordered splits) rather
than as R factors (subset splits).

The fit is deterministic up to scikit-learn's tie-breaking of equally good splits (driven
by the seed); the sampling is random.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import check_positive_int
from privaudit.generators.base import check_codes

__all__ = ["CartGenerator", "FittedCart"]


class FittedCart:
    """Trees and donor pools of a fitted sequential CART."""

    def __init__(
        self,
        first: NDArray[np.int64],
        trees: list[tuple[Any, NDArray[np.int64], NDArray[np.int64]]],
        d: int,
    ) -> None:
        self.first = first
        self.trees = trees  # per attribute j >= 1: (tree, sorted leaf ids, donor values)
        self.d = d

    def sample(self, n: int, rng: np.random.Generator) -> NDArray[np.int64]:
        """Sequential synthesis of ``n`` rows (donor sampling within leaves)."""
        out = np.zeros((n, self.d), dtype=np.int64)
        out[:, 0] = self.first[rng.integers(self.first.size, size=n)]
        for j, (tree, leaves, donors) in enumerate(self.trees, start=1):
            if tree is None:  # constant attribute
                out[:, j] = donors[0]
                continue
            leaf = tree.apply(out[:, :j].astype(np.float32))
            lo = np.searchsorted(leaves, leaf, side="left")
            hi = np.searchsorted(leaves, leaf, side="right")
            pick = lo + np.floor(rng.random(n) * (hi - lo)).astype(np.int64)
            out[:, j] = donors[pick]
        return out


class CartGenerator:
    """Synthpop-style sequential CART (see the module docstring).

    Parameters
    ----------
    min_samples_leaf : int
        Minimum number of observed records in a leaf (synthpop's ``minbucket``, 5).

    Examples
    --------
    >>> import numpy as np
    >>> codes = np.random.default_rng(0).integers(0, 3, size=(100, 3))
    >>> CartGenerator().fit(codes, (3, 3, 3), seed=0).sample(4, np.random.default_rng(1)).shape
    (4, 3)
    """

    randomised = True

    def __init__(self, min_samples_leaf: int = 5) -> None:
        self.min_samples_leaf = check_positive_int(min_samples_leaf, "min_samples_leaf")

    @property
    def name(self) -> str:
        return "cart"

    def __repr__(self) -> str:
        return f"CartGenerator(min_samples_leaf={self.min_samples_leaf})"

    def settings(self) -> dict[str, Any]:
        return {"generator": "synthpop-cart", "min_samples_leaf": self.min_samples_leaf}

    def fit(
        self, codes: NDArray[np.int64], cardinalities: tuple[int, ...], *, seed: int
    ) -> FittedCart:
        """Fit one tree per attribute after the first, on the observed predecessors."""
        from sklearn.tree import DecisionTreeClassifier

        X = check_codes(codes, tuple(cardinalities))
        d = X.shape[1]
        trees: list[tuple[Any, NDArray[np.int64], NDArray[np.int64]]] = []
        ss = np.random.SeedSequence(seed).generate_state(max(d - 1, 1))
        Xf = X.astype(np.float32)
        for j in range(1, d):
            y = X[:, j]
            if np.all(y == y[0]):
                trees.append((None, np.zeros(1, dtype=np.int64), y[:1].copy()))
                continue
            tree = DecisionTreeClassifier(
                min_samples_leaf=self.min_samples_leaf, random_state=int(ss[j - 1])
            ).fit(Xf[:, :j], y)
            leaf = tree.apply(Xf[:, :j])
            o = np.argsort(leaf, kind="stable")
            trees.append((tree, leaf[o].astype(np.int64), y[o]))
        return FittedCart(X[:, 0].copy(), trees, d)
