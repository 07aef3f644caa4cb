"""The "blind" baseline: membership guessed from the text alone, without the model.

Post-hoc membership-inference evaluations of language models compare member texts with
non-member texts collected separately; when the two differ in distribution (time,
topic, style, length) an attack can separate them without learning anything from the
model (Das et al. 2024, "Blind Baselines Beat Membership Inference Attacks for Foundation
Models"; Duan et al. 2024; Meeus et al. 2024; ``../shared/notes/attacks.md`` section 4.3).
This baseline measures that shift: a classifier that sees only the text (character
n-gram TF-IDF features and an L2-regularised logistic regression) predicts membership,
and its AUC is reported beside the attacks under the name ``blind-baseline``.

Every score is **out of fold** (cross-fitting): the records are cut into ``n_folds``
folds and each record is scored by the classifier fitted on the other folds. Folds are
grouped **by document** (scikit-learn ``StratifiedGroupKFold``): chunks of one document
share names and phrases, and since membership is assigned by document, a classifier that
had seen a sibling chunk could recognise the document rather than a shift between the
two populations. An AUC clearly above 0.5 means the member and non-member texts can be
told apart without the model, so the attacks' figures are not evidence of membership
leakage on their own (the Zero-Run audit, ``privaudit zero-run``, corrects the bounds
for such a shift).

The score is the out-of-fold log-odds of "member" (higher = member).

Known bias: pooled out-of-fold scores of a high-dimensional classifier are biased
*downward* when there is no shift (a held-out record's own n-grams count against its
class in the fit that scores it). Measured on Tiny Shakespeare, 120 + 120 chunks of
random documents, 8 seeds: mean AUC 0.46 (sd 0.04-0.05) for C in {1, 0.1} and 0.465
(sd 0.02) for C = 0.01. The baseline therefore errs towards *not* flagging a shift; an
AUC clearly above 0.5 is all the more a shift.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from privaudit._validation import as_bool_array, check_both_classes, check_unique_ids, fail
from privaudit.errors import InsufficientDataError
from privaudit.records import AttackScores

__all__ = ["BLIND_BASELINE", "blind_baseline"]

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
    C: float = 1.0,
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
    C : float
        Inverse L2 regularisation strength of the logistic regression.
    seed : int
        Shuffling of the folds.

    Returns
    -------
    AttackScores
        Attack ``blind-baseline``: out-of-fold log-odds of membership; ``params`` hold the
        settings and the number of folds.
    """
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedGroupKFold
    from sklearn.pipeline import make_pipeline

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
    k = min(int(n_folds), n_doc_min)
    if k < 2:
        raise fail("n_folds", "at least 2 folds", n_folds)
    folds = StratifiedGroupKFold(n_splits=k, shuffle=True, random_state=seed)
    y = m.astype(np.int64)
    scores = np.full(ids.size, np.nan)
    idx = np.arange(ids.size)
    text_arr = np.asarray(list(texts), dtype=object)
    for train, test in folds.split(idx, y, groups):
        if np.unique(y[train]).size < 2:
            raise InsufficientDataError(
                "blind baseline: a cross-fitting fold's training part has one class only"
            )
        model = make_pipeline(
            TfidfVectorizer(
                analyzer="char_wb",
                ngram_range=ngram_range,
                max_features=max_features,
                sublinear_tf=True,
            ),
            LogisticRegression(C=C, max_iter=2000),
        )
        model.fit(text_arr[train].tolist(), y[train])
        scores[test] = model.decision_function(text_arr[test].tolist())
    params: dict[str, Any] = {
        "classifier": "tf-idf character n-grams + logistic regression",
        "ngram_range": list(ngram_range),
        "max_features": int(max_features),
        "C": float(C),
        "n_folds": k,
        "folds": "stratified, grouped by document",
        "model_access": "none (text only)",
        "seed": int(seed),
    }
    return AttackScores(BLIND_BASELINE, ids, scores, params)
