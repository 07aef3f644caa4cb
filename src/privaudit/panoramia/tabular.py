"""PANORAMIA on tabular classifiers (Kazmi et al. 2024, Section 5 and Appendix D.6).

Records are :class:`~privaudit.data.dataset.Dataset` objects in the **target's feature
space** (the ``X`` the target was trained on, e.g. Adult's standardised numerics and
one-hot categoricals); the target, the helper, the queries and the scorers all see that
same ``X``, and the generator's output is decoded back into it, so the preprocessing is
identical everywhere.

* **Generator** (trained on ``D_G`` only): a :mod:`privaudit.generators` model
  (:func:`~privaudit.generators.make_generator`: ``baynet``, ``privbayes``, ``cart``) on
  the attribute codes of :func:`~privaudit.generators.discretise` (one attribute per
  one-hot block, numerics cut into at most ``n_bins`` quantile bins, the label as the last
  attribute). The bins are cut on the *reference* table: ``universe`` when given (a public
  table fixing the domain, as in the record-level games), else ``D_G`` itself.
  **Decoding** a sampled row: a categorical code sets its one-hot column; the label code is
  ``y``; a numeric bin ``u`` decodes to a value drawn uniformly from the reference records'
  values of that feature in bin ``u`` (its empirical distribution within the bin), so
  decoded numerics are real values of the feature, on the target's scale, and never come
  from ``D_in`` unless the user's ``universe`` holds it. Records of ``D_G`` are encoded with
  the reference's bins (a value below the first bin goes to the first, etc.).
* **Helper**: the target's :class:`~privaudit.models.base.Trainer` (its architecture and
  recipe) fitted on the helper pool only.
* **Loss features**: the per-example cross-entropy loss of a model
  (:func:`privaudit.signals.functions.cross_entropy_loss` of its logits), one column.
* **Scorer**: :class:`~sklearn.ensemble.HistGradientBoostingClassifier` on ``[X, loss]``
  (no early stopping of its own); the number of boosting iterations is selected on the
  validation split by the game's criterion over the staged predictions (ties: the
  validation AUC, then the fewest iterations), and scoring uses exactly that iteration's
  decision function (the log-odds: continuous).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import check_positive_int, fail
from privaudit.data.dataset import Dataset
from privaudit.generators import DiscreteTable, discretise, make_generator
from privaudit.generators.base import FittedGenerator, check_codes
from privaudit.models.base import Model, Trainer
from privaudit.panoramia.game import (
    SYNTHETIC_PREFIX,
    ScorerData,
    dataset_from_arrays,
    dataset_to_arrays,
)
from privaudit.signals.functions import cross_entropy_loss

__all__ = ["TabularCodec", "TabularModality"]


@dataclasses.dataclass(frozen=True)
class TabularCodec:
    """Attribute codes <-> the target's feature space (module docstring).

    Built from a reference :class:`Dataset` with :func:`discretise`: ``attributes[j]`` is
    ``("cat", column positions)``, ``("num", column position)`` or ``("label", -1)``;
    ``bins[j]`` (numerics) the sorted lower edges (the smallest reference value of each
    bin) and ``values[j][u]`` the reference values in bin ``u``.
    """

    table: DiscreteTable
    attributes: tuple[tuple[str, Any], ...]
    lower: dict[int, NDArray[np.float64]]
    values: dict[int, tuple[NDArray[np.float64], ...]]
    n_features: int

    @classmethod
    def from_reference(cls, reference: Dataset, *, n_bins: int) -> TabularCodec:
        table = discretise(reference, n_bins=n_bins, include_label=True)
        feats = list(reference.feature_names)
        attrs: list[tuple[str, Any]] = []
        lower: dict[int, NDArray[np.float64]] = {}
        values: dict[int, tuple[NDArray[np.float64], ...]] = {}
        for j, name in enumerate(table.names):
            if j == len(table.names) - 1:
                attrs.append(("label", -1))
            elif name in feats:
                col = feats.index(name)
                attrs.append(("num", col))
                v, code = reference.X[:, col], table.codes[:, j]
                per_bin = tuple(np.sort(v[code == u]) for u in range(table.cardinalities[j]))
                values[j] = per_bin
                lower[j] = np.asarray([b[0] for b in per_bin])
            else:
                cols = [i for i, f in enumerate(feats) if f.split("=", 1)[0] == name and "=" in f]
                attrs.append(("cat", tuple(cols)))
        return cls(table, tuple(attrs), lower, values, len(feats))

    def encode(self, records: Dataset) -> NDArray[np.int64]:
        """Attribute codes of ``records`` (same features as the reference)."""
        out = np.empty((records.n_records, len(self.attributes)), dtype=np.int64)
        for j, (kind, what) in enumerate(self.attributes):
            if kind == "label":
                out[:, j] = records.y
            elif kind == "num":
                idx = np.searchsorted(self.lower[j], records.X[:, what], side="right") - 1
                out[:, j] = np.clip(idx, 0, self.lower[j].size - 1)
            else:
                block = records.X[:, list(what)]
                if not np.all(np.isin(block, (0.0, 1.0))) or not np.all(block.sum(axis=1) == 1):
                    raise fail(
                        f"features {self.table.names[j]}=*", "a one-hot block", "other values"
                    )
                out[:, j] = np.argmax(block, axis=1)
        return check_codes(out, self.table.cardinalities)

    def decode(self, codes: NDArray[np.int64], rng: np.random.Generator) -> tuple[Any, Any]:
        """``(X, y)`` in the target's feature space (numerics drawn within their bin)."""
        codes = check_codes(codes, self.table.cardinalities)
        n = codes.shape[0]
        X = np.zeros((n, self.n_features))
        y = np.zeros(n, dtype=np.int64)
        for j, (kind, what) in enumerate(self.attributes):
            c = codes[:, j]
            if kind == "label":
                y = c.copy()
            elif kind == "num":
                u: NDArray[np.float64] = np.asarray(rng.random(n))
                col = np.empty(n)
                for b, in_bin in enumerate(self.values[j]):
                    sel = c == b
                    pick = np.minimum((u[sel] * in_bin.size).astype(np.int64), in_bin.size - 1)
                    col[sel] = in_bin[pick]
                X[:, what] = col
            else:
                X[np.arange(n), np.asarray(what)[c]] = 1.0
        return X, y


@dataclasses.dataclass(frozen=True)
class _TabularGenerator:
    codec: TabularCodec
    fitted: FittedGenerator
    template: Dataset
    info: dict[str, Any]


class _StagedScorer:
    """A boosted model scored at its selected iteration (its decision function)."""

    def __init__(self, model: Any, n_iter: int, info: dict[str, Any]) -> None:
        self.model = model
        self.n_iter = int(n_iter)
        self.info = info

    def score(self, records: Dataset, loss: NDArray[np.float64]) -> NDArray[np.float64]:
        Z = np.hstack([records.X, np.asarray(loss, dtype=np.float64)])
        for i, out in enumerate(self.model.staged_decision_function(Z), start=1):
            if i == self.n_iter:
                return np.asarray(out, dtype=np.float64).ravel()
        raise fail("n_iter", f"at most {self.model.n_iter_} iterations", self.n_iter)


class TabularModality:
    """The tabular :class:`~privaudit.panoramia.modality.Modality` (module docstring).

    Parameters
    ----------
    trainer : Trainer
        The target's recipe; the helper is ``trainer.fit`` on the helper pool.
    generator : str
        ``"cart"`` (default), ``"baynet"`` or ``"privbayes"``. CART is the default because
        its records are not told from real ones through the target: on Adult MLP targets
        that never saw the "members" (``benchmarks/bench_panoramia.py --null-check --pool 8000``, 3
        seeds, 200 epochs) ``eps_tilde`` was 0.011 / 0.000 / 0.008 with CART and 0.247 /
        0.148 / 0.086 with BayNet (degree 2), whose labels the target flags as inconsistent
        while the synthetic-data helper cannot: ``eps_tilde`` with BayNet counts generator
        detection as leakage.
    generator_params : dict, optional
        Keyword arguments of :func:`~privaudit.generators.make_generator`.
    n_bins : int
        Maximum number of bins of a numeric feature.
    universe : Dataset, optional
        Public reference table for the bins and the within-bin values (default: ``D_G``).
    scorer : dict, optional
        ``HistGradientBoostingClassifier`` keyword arguments; defaults ``max_iter=200``,
        ``learning_rate=0.1``, ``max_leaf_nodes=15``, ``l2_regularization=1.0``.
    """

    name = "tabular"

    def __init__(
        self,
        trainer: Trainer,
        *,
        generator: str = "cart",
        generator_params: Mapping[str, Any] | None = None,
        n_bins: int = 8,
        universe: Dataset | None = None,
        scorer: Mapping[str, Any] | None = None,
    ) -> None:
        self.trainer = trainer
        self.generator_kind = str(generator)
        self.generator_params = dict(generator_params or {})
        self.generator = make_generator(self.generator_kind, **self.generator_params)
        self.n_bins = check_positive_int(n_bins, "n_bins", minimum=2)
        self.universe = universe
        self.scorer_params: dict[str, Any] = {
            "max_iter": 200,
            "learning_rate": 0.1,
            "max_leaf_nodes": 15,
            "l2_regularization": 1.0,
            **dict(scorer or {}),
        }
        if "early_stopping" in self.scorer_params:
            raise fail(
                "scorer.early_stopping", "not set (iterations are selected by the bound)", True
            )

    # -- records --------------------------------------------------------------------
    def ids(self, records: Dataset) -> tuple[str, ...]:
        return tuple(str(i) for i in records.record_ids.tolist())

    def take(self, records: Dataset, ids: Sequence[str]) -> Dataset:
        rid = records.record_ids
        want = np.asarray(list(ids))
        if rid.dtype.kind in "iu":
            want = want.astype(np.int64)
        return records.subset(want)

    def records_to_arrays(self, records: Dataset) -> dict[str, NDArray[Any]]:
        return dataset_to_arrays(records)

    def records_from_arrays(self, arrays: Mapping[str, NDArray[Any]]) -> Dataset:
        return dataset_from_arrays(arrays)

    def concat(self, a: Dataset, b: Dataset) -> Dataset:
        if a.feature_names != b.feature_names or a.class_names != b.class_names:
            raise fail("records", "the same features and classes", "different tables")
        ids = np.r_[a.record_ids.astype(str), b.record_ids.astype(str)]
        return Dataset(
            a.name,
            ids,
            np.vstack([a.X, b.X]),
            np.r_[a.y, b.y],
            a.feature_names,
            a.class_names,
            dict(a.info),
        )

    # -- generator ------------------------------------------------------------------
    def fit_generator(self, records: Dataset, *, seed: int) -> _TabularGenerator:
        reference = self.universe if self.universe is not None else records
        codec = TabularCodec.from_reference(reference, n_bins=self.n_bins)
        codes = codec.encode(records)
        fitted = self.generator.fit(codes, codec.table.cardinalities, seed=seed)
        info = {
            "n_attributes": len(codec.attributes),
            "cardinalities": list(codec.table.cardinalities),
            "reference": "universe" if self.universe is not None else "D_G",
        }
        return _TabularGenerator(codec, fitted, records, info)

    def sample(self, generator: _TabularGenerator, n: int, *, seed: int) -> Dataset:
        rng = np.random.default_rng(seed)
        codes = check_codes(
            generator.fitted.sample(int(n), rng), generator.codec.table.cardinalities
        )
        if codes.shape[0] != n:
            raise fail(f"{self.generator.name}.sample()", f"{n} rows", codes.shape[0])
        X, y = generator.codec.decode(codes, rng)
        t = generator.template
        ids = np.asarray([f"{SYNTHETIC_PREFIX}{i:06d}" for i in range(n)])
        return Dataset(t.name, ids, X, y, t.feature_names, t.class_names, {"synthetic": True})

    # -- helper and losses ----------------------------------------------------------
    def fit_helper(self, records: Dataset, *, seed: int) -> Model:
        return self.trainer.fit(records.X, records.y, seed=seed)

    def loss_features(self, model: Model, records: Dataset) -> NDArray[np.float64]:
        return cross_entropy_loss(model.logits(records.X), records.y)[:, None]

    # -- scorer ---------------------------------------------------------------------
    def fit_scorer(
        self,
        train: ScorerData[Dataset],
        val: ScorerData[Dataset],
        *,
        seed: int,
        criterion: Callable[[NDArray[np.float64], NDArray[np.bool_]], float],
    ) -> _StagedScorer:
        from sklearn.ensemble import HistGradientBoostingClassifier

        model = HistGradientBoostingClassifier(
            early_stopping=False, random_state=seed, **self.scorer_params
        )
        model.fit(np.hstack([train.records.X, train.loss]), np.asarray(train.label, dtype=bool))
        Zv = np.hstack([val.records.X, val.loss])
        crit = [
            float(criterion(np.asarray(s).ravel(), val.label))
            for s in model.staged_decision_function(Zv)
        ]
        best = int(np.argmax(crit))  # first of the best: the fewest iterations on ties
        info = {
            "kind": "hist-gradient-boosting",
            "params": {k: v for k, v in self.scorer_params.items()},
            "n_iter_fitted": int(model.n_iter_),
            "best_iteration": best + 1,
            "criterion_by_iteration": crit,
            "n_train": int(train.label.size),
            "n_val": int(val.label.size),
        }
        return _StagedScorer(model, best + 1, info)

    def settings(self) -> dict[str, Any]:
        return {
            "generator": {
                "kind": self.generator_kind,
                "params": self.generator_params,
                "settings": self.generator.settings(),
                "n_bins": self.n_bins,
            },
            "helper": {"trainer": self.trainer.name, "settings": self.trainer.settings()},
            "scorer": {"kind": "hist-gradient-boosting", "params": dict(self.scorer_params)},
        }
