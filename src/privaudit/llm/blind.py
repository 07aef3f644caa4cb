"""The "blind" baseline: membership guessed from the text alone, without the model.

Post-hoc membership-inference evaluations of language models compare member texts with
non-member texts collected separately; when the two differ in distribution (time,
topic, style, length) an attack can separate them without learning anything from the
model (Das et al. 2024, "Blind Baselines Beat Membership Inference Attacks for Foundation
Models"; Duan et al. 2024; Meeus et al. 2024; ``../shared/notes/attacks.md`` section 4.3).
This baseline measures that shift: a classifier that sees only the text predicts
membership, and its AUC is reported beside the attacks under the name ``blind-baseline``.

Classifier: character n-gram TF-IDF (within word bounds, sublinear tf), reduced by a
truncated SVD (latent semantic analysis) to at most 512 dimensions, then ridge
regression of the 0/1 label (a least-squares linear classifier). The features use no
label, so they are fitted once on all the texts without leaking membership.

Every score is **out of fold** (cross-fitting): the documents are dealt at random into
``n_folds`` folds (never splitting a document: chunks of one document share names and
phrases, and since membership is assigned by document, a classifier that had seen a
sibling chunk could recognise the document rather than a shift between the two
populations), and each record is scored by the ridge fitted on the other folds, without
a per-fold intercept (folds fitted on different label proportions would otherwise be
offset against each other, the usual downward bias of pooled out-of-fold AUCs).

Whether the AUC is "clearly above 0.5" is decided by a **permutation test at the unit of
randomisation** (:func:`blind_shift_test`): the member/non-member labels of the
*documents* are shuffled (counts kept) and the same cross-fitted baseline is re-run; the
p-value is ``(1 + #{null AUC >= observed}) / (1 + n_permutations)``, exact under the
null of no shift (document labels exchangeable) whatever the classifier's biases. Folds
do not depend on the labels, so every permutation meets the same folds and only the
ridge coefficients change (two matrix-vector products per fold). A DeLong interval
would not do: it assumes independent records, while chunks of one document are
correlated and cross-fitted scores share fitted models. Measured on Tiny Shakespeare
(100 + 120 chunks in 39 documents, 20 document permutations, the earlier
logistic-regression version of this baseline): null AUCs from 0.28 to 0.62, far wider
than a DeLong interval on 220 records.

An AUC with a small p-value means the member and non-member texts can be told apart
without the model, so the attacks' figures are not evidence of membership leakage on
their own (the Zero-Run audit, ``privaudit zero-run``, corrects the bounds for such a
shift).

The score is the out-of-fold ridge prediction of "member" (higher = member).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privaudit._validation import (
    as_bool_array,
    check_both_classes,
    check_unique_ids,
    fail,
)
from privaudit.errors import InsufficientDataError
from privaudit.metrics.shift_test import RidgeCrossFit, ShiftTest
from privaudit.records import AttackScores

__all__ = [
    "BLIND_BASELINE",
    "blind_baseline",
    "blind_baseline_and_test",
    "blind_shift_test",
]

#: The attack name of the baseline in ``results.json``.
BLIND_BASELINE = "blind-baseline"


def blind_baseline(
    record_ids: ArrayLike,
    texts: Sequence[str],
    member: ArrayLike,
    *,
    documents: Sequence[str] | None = None,
    n_folds: int = 5,
    ngram_range: tuple[int, int] = (2, 4),
    max_features: int = 20000,
    ridge: float = 1.0,
    seed: int = 0,
) -> AttackScores:
    """Cross-fitted text-only membership scores (module docstring).

    Parameters
    ----------
    record_ids : array-like
        Unique ids of the records.
    texts : sequence of str
        The records' texts (the only input of the classifier).
    member : bool array-like
        True membership (the classifier's label; each record is scored by a fit that
        never saw it).
    documents : sequence of str, optional
        Document of each record; folds never split a document. Default: each record
        its own document.
    n_folds : int
        Number of cross-fitting folds (at most the number of documents of the smaller
        class).
    ngram_range, max_features : TF-IDF settings (character n-grams within word bounds).
    ridge : float
        L2 penalty ``lambda`` of the ridge classifier (features have norm at most 1).
    seed : int
        Dealing of the documents into folds.

    Returns
    -------
    AttackScores
        Attack ``blind-baseline``: out-of-fold ridge scores of membership; ``params`` hold
        the settings and the number of folds.
    """
    fit = _BlindFit.prepare(
        record_ids, texts, member, documents, n_folds, ngram_range, max_features, ridge, seed
    )
    return _baseline_scores(fit)


def blind_baseline_and_test(
    record_ids: ArrayLike,
    texts: Sequence[str],
    member: ArrayLike,
    *,
    documents: Sequence[str] | None = None,
    n_permutations: int = 100,
    n_folds: int = 5,
    ngram_range: tuple[int, int] = (2, 4),
    max_features: int = 20000,
    ridge: float = 1.0,
    seed: int = 0,
) -> tuple[AttackScores, ShiftTest | None]:
    """:func:`blind_baseline` and :func:`blind_shift_test` (None when ``n_permutations``
    is 0) from one preparation of the features, folds and ridge solves."""
    fit = _BlindFit.prepare(
        record_ids, texts, member, documents, n_folds, ngram_range, max_features, ridge, seed
    )
    scores = _baseline_scores(fit)
    test = _shift_test(fit, scores.scores, n_permutations, seed) if n_permutations else None
    return scores, test


def _baseline_scores(fit: _BlindFit) -> AttackScores:
    """The baseline's out-of-fold scores as an attack, with its settings."""
    params: dict[str, Any] = {
        "classifier": "tf-idf character n-grams, truncated SVD, ridge on the 0/1 label",
        "ngram_range": list(fit.ngram_range),
        "max_features": int(fit.max_features),
        "svd_dimensions": int(fit.z.shape[1]),
        "ridge": float(fit.ridge),
        "n_folds": fit.k,
        "folds": "documents dealt at random (label-free)",
        "features": "fitted once on all texts (no labels)",
        "model_access": "none (text only)",
        "seed": int(fit.seed),
    }
    return AttackScores(BLIND_BASELINE, fit.ids, fit.cross_fit(fit.y), params)


def blind_shift_test(
    record_ids: ArrayLike,
    texts: Sequence[str],
    member: ArrayLike,
    *,
    documents: Sequence[str] | None = None,
    n_permutations: int = 100,
    n_folds: int = 5,
    ngram_range: tuple[int, int] = (2, 4),
    max_features: int = 20000,
    ridge: float = 1.0,
    seed: int = 0,
) -> ShiftTest:
    """Permutation p-value of the blind baseline's AUC, permuting document labels.

    Under the null hypothesis "membership was assigned to documents at random, whatever
    their text" the documents' labels are exchangeable, so re-running the same
    cross-fitted baseline (same folds' seed, same settings) on label permutations that keep
    the number of member documents draws from the AUC's exact null distribution. Each
    permutation refits only the ridge coefficients (features, folds and the ridge solves
    use no labels).

    Parameters
    ----------
    n_permutations : int
        Number of permutations (p-values are multiples of ``1 / (n_permutations + 1)``).
    seed : int
        Randomness of the folds (as :func:`blind_baseline`) and of the permutations.
    Other parameters as :func:`blind_baseline` (same defaults).
    """
    fit = _BlindFit.prepare(
        record_ids, texts, member, documents, n_folds, ngram_range, max_features, ridge, seed
    )
    return _shift_test(fit, fit.cross_fit(fit.y), n_permutations, seed)


def _shift_test(
    fit: _BlindFit, observed_scores: NDArray[np.float64], n_permutations: int, seed: int
) -> ShiftTest:
    """The permutation test of :func:`blind_shift_test` given the observed scores."""
    return fit.crossfit.shift_test(observed_scores, n_permutations, seed, unit="document")


@dataclasses.dataclass(frozen=True)
class _BlindFit:
    """The label-free part of the baseline, computed once: the texts' features and the
    cross-fitted ridge (:class:`~privaudit.metrics.shift_test.RidgeCrossFit`: folds of
    whole documents, one inverse per fold); :meth:`cross_fit` then costs two small
    matrix-vector products per fold, so a permutation test is cheap.

    Features: TF-IDF of character n-grams (fitted on all texts, no labels), reduced to at
    most ``_MAX_DIM`` dimensions by a truncated SVD (latent semantic analysis; with fewer
    texts than that it keeps their whole span).
    """

    ids: NDArray[Any]
    crossfit: RidgeCrossFit
    ngram_range: tuple[int, int]
    max_features: int
    ridge: float
    seed: int

    @property
    def y(self) -> NDArray[np.int64]:
        return self.crossfit.y

    @property
    def k(self) -> int:
        return self.crossfit.k

    @property
    def z(self) -> NDArray[np.float64]:
        return self.crossfit.z

    def cross_fit(self, y: NDArray[np.int64]) -> NDArray[np.float64]:
        """Out-of-fold ridge scores of labels ``y`` (higher = label 1)."""
        return self.crossfit.cross_fit(y)

    @classmethod
    def prepare(
        cls,
        record_ids: ArrayLike,
        texts: Sequence[str],
        member: ArrayLike,
        documents: Sequence[str] | None,
        n_folds: int,
        ngram_range: tuple[int, int],
        max_features: int,
        ridge: float,
        seed: int,
    ) -> _BlindFit:
        from sklearn.decomposition import TruncatedSVD
        from sklearn.feature_extraction.text import TfidfVectorizer

        ids = check_unique_ids(record_ids, "record_ids")
        m = as_bool_array(member, "member", ndim=1)
        if len(texts) != ids.size or m.size != ids.size:
            raise fail(
                "texts/member",
                f"one text and one membership per id ({ids.size})",
                f"{len(texts)} texts, {m.size} memberships",
            )
        check_both_classes(m, "member")
        groups = np.asarray(
            [str(i) for i in ids.tolist()] if documents is None else [str(d) for d in documents],
            dtype=object,
        )
        if groups.size != ids.size:
            raise fail("documents", f"one document per record ({ids.size})", groups.size)
        n_doc_min = min(len(set(groups[m].tolist())), len(set(groups[~m].tolist())))
        if n_doc_min < 2:
            raise InsufficientDataError(
                f"documents: expected at least 2 documents of each class for cross-fitting, "
                f"found {n_doc_min} in the smaller class"
            )
        if min(int(n_folds), n_doc_min) < 2:
            raise fail("n_folds", "at least 2 folds", n_folds)
        vec = TfidfVectorizer(
            analyzer="char_wb",
            ngram_range=ngram_range,
            max_features=max_features,
            sublinear_tf=True,
        )
        x = vec.fit_transform(list(texts))
        d = int(min(_MAX_DIM, x.shape[0] - 1, x.shape[1] - 1))
        if d < 1:
            raise InsufficientDataError("blind baseline: the texts give fewer than 2 features")
        z = TruncatedSVD(n_components=d, random_state=0).fit_transform(x)
        crossfit = RidgeCrossFit.prepare(z, m, groups, n_folds=n_folds, ridge=ridge, seed=seed)
        return cls(ids, crossfit, tuple(ngram_range), int(max_features), float(ridge), int(seed))  # type: ignore[arg-type]


#: Largest number of SVD dimensions of the blind baseline's features.
_MAX_DIM = 512
