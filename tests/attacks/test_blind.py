"""The blind baseline: a text-only membership classifier, cross-fitted by document."""

from __future__ import annotations

import numpy as np
import pytest

from privaudit.errors import InsufficientDataError, InvalidInputError
from privaudit.llm.blind import BLIND_BASELINE, blind_baseline, blind_shift_test
from privaudit.metrics.roc import auc

WORDS = "the of and to in a is that for it as was with be by on not he this are or his".split()


def _texts(rng: np.random.Generator, n: int, extra: str = "") -> list[str]:
    return [" ".join(rng.choice(WORDS, size=30)) + extra for _ in range(n)]


def test_detects_a_distribution_shift() -> None:
    rng = np.random.default_rng(0)
    texts = _texts(rng, 60, " zebra quantum") + _texts(rng, 60)
    member = np.r_[np.ones(60, bool), np.zeros(60, bool)]
    s = blind_baseline(np.arange(120), texts, member, seed=0)
    assert s.attack == BLIND_BASELINE
    assert auc(s.scores, member) > 0.95
    assert s.params["model_access"].startswith("none")


def test_no_shift_gives_no_separation() -> None:
    """Under no shift the pooled out-of-fold AUC is near 0.5 or somewhat below (the known
    downward bias of cross-validated scores, see the module docstring), never clearly above."""
    rng = np.random.default_rng(1)
    texts = _texts(rng, 200)
    member = rng.permutation(np.r_[np.ones(100, bool), np.zeros(100, bool)])
    s = blind_baseline(np.arange(200), texts, member, seed=0)
    assert 0.3 < auc(s.scores, member) < 0.6


def test_folds_never_split_a_document() -> None:
    """Membership by document, each document with its own marker word and no shift between
    the classes: with folds grouped by document the classifier cannot recognise a sibling
    chunk's document, so it stays near chance (ungrouped folds would not)."""
    rng = np.random.default_rng(2)
    texts, docs, member = [], [], []
    for d in range(40):
        marker = "".join(rng.choice(list("bcdfghjklmnpqrstvwxz"), size=8))
        for _ in range(4):
            texts.append(" ".join(rng.choice(WORDS, size=20)) + " " + marker)
            docs.append(f"d{d}")
            member.append(d % 2 == 0)
    m = np.asarray(member)
    grouped = blind_baseline(np.arange(m.size), texts, m, documents=docs, seed=0)
    ungrouped = blind_baseline(np.arange(m.size), texts, m, seed=0)
    assert auc(grouped.scores, m) < 0.7
    assert auc(ungrouped.scores, m) > 0.85  # what the grouping protects against


def test_every_score_is_out_of_fold() -> None:
    """A record alone in its class signature is scored by a fit that never saw it: a
    unique member text identical to no other gets no credit for its own words."""
    rng = np.random.default_rng(3)
    texts = _texts(rng, 40)
    texts[0] = "unique unique unique words nobody else uses"
    member = np.r_[np.ones(20, bool), np.zeros(20, bool)]
    s = blind_baseline(np.arange(40), texts, member, n_folds=4, seed=0)
    assert np.isfinite(s.scores).all()
    assert s.scores[0] < np.sort(s.scores)[-1]


def test_bad_inputs() -> None:
    with pytest.raises(InvalidInputError, match="member"):
        blind_baseline(np.arange(4), ["a", "b", "c", "d"], np.ones(4, bool))
    with pytest.raises(InvalidInputError, match="texts/member"):
        blind_baseline(np.arange(4), ["a", "b"], np.array([1, 0, 1, 0], bool))
    with pytest.raises(InsufficientDataError, match="at least 2 documents of each class"):
        blind_baseline(
            np.arange(4),
            ["a b", "b c", "c d", "d e"],
            np.array([1, 1, 0, 0], bool),
            documents=["x", "x", "y", "z"],
        )


def test_shift_test_flags_a_shift_with_a_small_p_value() -> None:
    rng = np.random.default_rng(2)
    texts = _texts(rng, 40, " zebra") + _texts(rng, 40)
    member = np.r_[np.ones(40, bool), np.zeros(40, bool)]
    t = blind_shift_test(np.arange(80), texts, member, n_permutations=50, seed=0)
    assert t.auc > 0.9 and t.p_value == pytest.approx(1 / 51)
    assert t.null_auc_95 < t.auc and t.unit == "document" and t.n_permutations == 50
    # the observed AUC is the baseline's own
    assert t.auc == pytest.approx(auc(blind_baseline(np.arange(80), texts, member).scores, member))


def test_shift_test_p_values_are_calibrated_without_a_shift() -> None:
    """No shift, membership by document (5 chunks each, sharing a document marker): the
    permutation p-value is uniform, so p < 0.1 in about 10% of runs; DeLong-style
    independence would be far too optimistic here (chunks of a document are alike)."""
    rng = np.random.default_rng(3)
    p = []
    for rep in range(40):
        docs = np.repeat(np.arange(24), 5)
        doc_words = rng.choice(WORDS, size=24)
        texts = [
            t + f" {doc_words[d]} {doc_words[d]}"
            for t, d in zip(_texts(rng, 120), docs, strict=True)
        ]
        member = np.repeat(rng.permutation(np.r_[np.ones(12, bool), np.zeros(12, bool)]), 5)
        t = blind_shift_test(
            np.arange(120), texts, member, documents=docs.astype(str), n_permutations=19, seed=rep
        )
        p.append(t.p_value)
    p_arr = np.asarray(p)
    assert (p_arr <= 0.1).mean() <= 0.1 + 2 * np.sqrt(0.09 / 40)
    assert 0.35 < p_arr.mean() < 0.65  # uniform on {1/20, ..., 1}: mean 0.525
