"""Per-token statistics of a text under a fine-tuned target and the model it was fine-tuned
from (its *base*): what EZ-MIA, WBC and token-level InfoRMIA read (issue 34, item 1).

For a text of ``n`` tokens ``x_1..x_n`` (the target's tokenizer, no BOS/EOS added, as in
:mod:`privaudit.models.causal_lm`) and every scored position ``t = 2..n``:

* ``l_t = log p_theta(x_t | x_<t)`` (the target) and ``r_t = log p_0(x_t | x_<t)`` (the base);
* ``top1_t``: whether the target's most likely next token is ``x_t`` (EZ-MIA's *error
  positions* are the ``t`` where it is not; Ilic et al., arXiv 2601.12104);
* ``kl_t = D_KL(p_0(. | x_<t) || p_theta(. | x_<t)) = sum_v p_0(v) (log p_0(v) - log
  p_theta(v))`` >= 0, the shift of the whole next-token distribution (the population term
  of token-level InfoRMIA, Tao and Shokri, arXiv 2510.05582).

Two forward passes per text (one per model), no training. The next-token distributions of
both models at the same positions are needed together (for ``kl_t``), so each text is
scored by both models before the next one (:meth:`CausalLM.token_distributions`: the same
sliding windows as :meth:`CausalLM.token_stats` for texts longer than the context); the
``(n - 1, V)`` arrays of one text are dropped once its statistics are taken. Both models
must share a tokenizer (``tokenizer_id``) and a context (``max_length``), else the per-token
comparison is meaningless and an :class:`~privaudit.errors.InvalidInputError` says so
(:func:`check_pair`).

Top-1 ties: the target's prediction counts as correct when ``l_t`` equals the largest
log-probability at ``t`` (the true token is among the most likely ones).

This module reads numpy arrays only; the models are any objects with ``tokenize``,
``token_distributions``, ``tokenizer_id``, ``max_length`` and ``name`` (a
:class:`~privaudit.models.causal_lm.CausalLM`, or a test double).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import fail
from privaudit.runtime.progress import ProgressOption, progress_bar

__all__ = [
    "PairedTokenStats",
    "check_pair",
    "load_paired_stats",
    "paired_token_stats",
    "save_paired_stats",
]


@dataclasses.dataclass(frozen=True)
class PairedTokenStats:
    """One text's per-token statistics under a target and its base (module docstring).

    Attributes
    ----------
    ids : int64 (n,)
        The token ids of the text.
    target_logprobs, base_logprobs : float64 (n - 1,)
        ``l_t`` and ``r_t``, ``t = 2..n``.
    target_top1 : bool (n - 1,)
        Whether the target's most likely next token at ``t`` is ``x_t``.
    kl : float64 (n - 1,)
        ``D_KL(p_0(. | x_<t) || p_theta(. | x_<t))`` in nats.
    n_bytes : int
        ``len(text.encode("utf-8"))``.
    """

    ids: NDArray[np.int64]
    target_logprobs: NDArray[np.float64]
    base_logprobs: NDArray[np.float64]
    target_top1: NDArray[np.bool_]
    kl: NDArray[np.float64]
    n_bytes: int

    @property
    def n_tokens(self) -> int:
        """``n``, the number of tokens of the text."""
        return int(self.ids.size)

    @property
    def shift(self) -> NDArray[np.float64]:
        """``l_t - r_t``: how much fine-tuning raised the true token's log-probability."""
        return self.target_logprobs - self.base_logprobs

    @property
    def errors(self) -> NDArray[np.bool_]:
        """EZ-MIA's error positions: the target's top-1 prediction is not ``x_t``."""
        return ~self.target_top1


def _one(
    ids: list[int], t_dist: NDArray[np.float64], b_dist: NDArray[np.float64], n_bytes: int
) -> PairedTokenStats:
    n = len(ids)
    if n < 2:
        empty = np.zeros(0)
        return PairedTokenStats(
            np.asarray(ids, np.int64), empty, empty.copy(), np.zeros(0, bool), empty.copy(), n_bytes
        )
    labels = np.asarray(ids[1:], dtype=np.int64)
    rows = np.arange(n - 1)
    lt = t_dist[rows, labels]
    lb = b_dist[rows, labels]
    top1 = lt >= t_dist.max(axis=1)
    pb = np.exp(b_dist)
    with np.errstate(invalid="ignore"):  # 0 * (-inf - -inf): a token neither model allows
        kl = np.sum(np.where(pb > 0.0, pb * (b_dist - t_dist), 0.0), axis=1)
    return PairedTokenStats(
        ids=np.asarray(ids, np.int64),
        target_logprobs=np.asarray(lt, np.float64),
        base_logprobs=np.asarray(lb, np.float64),
        target_top1=np.asarray(top1, bool),
        kl=np.maximum(np.asarray(kl, np.float64), 0.0),  # >= 0; rounding only
        n_bytes=int(n_bytes),
    )


def check_pair(target: Any, base: Any) -> None:
    """Refuse a base that cannot be compared token by token with the target: another
    tokenizer (``tokenizer_id``), or another context (``max_length``). Each model cuts a
    text longer than its context into its own sliding windows, so with a longer context the
    base would predict each token from more of the text than the target does, and the
    shifts ``l_t - r_t`` would lean toward non-member; load both with one ``max_length``.

    Raises
    ------
    InvalidInputError
        The tokenizers or the contexts differ.
    """
    if str(base.tokenizer_id) != str(target.tokenizer_id):
        raise fail(
            "base",
            f"the target's tokenizer ({target.tokenizer_id}): per-token comparisons need one "
            "tokenization",
            f"tokenizer {base.tokenizer_id}",
        )
    if int(base.max_length) != int(target.max_length):
        raise fail(
            "base.max_length",
            f"the target's context ({target.max_length}), so that both models score the same "
            "windows (load both with one max_length)",
            base.max_length,
        )


def paired_token_stats(
    target: Any,
    base: Any,
    texts: Sequence[str],
    *,
    stride: int | None = None,
    progress: ProgressOption = None,
) -> list[PairedTokenStats]:
    """:class:`PairedTokenStats` of every text under ``target`` and its ``base``.

    Parameters
    ----------
    target, base : CausalLM
        The audited model and the model it was fine-tuned from (same tokenizer).
    texts : sequence of str
    stride : int, optional
        Sliding-window stride for texts longer than the context (as in
        :meth:`CausalLM.token_stats`).
    progress : progress option, optional
        Progress over the texts (:mod:`privaudit.runtime.progress`).

    Raises
    ------
    InvalidInputError
        The tokenizers or the contexts differ (:func:`check_pair`).
    """
    if isinstance(texts, str) or not isinstance(texts, Sequence):
        raise fail("texts", "a sequence of strings", type(texts).__name__)
    check_pair(target, base)
    texts = list(texts)
    ids = target.tokenize(texts)
    out: list[PairedTokenStats] = []
    with progress_bar(
        f"scoring against the base ({base.name})", len(texts), enabled=progress
    ) as bar:
        for text, tid in zip(texts, ids, strict=True):
            n_bytes = len(text.encode("utf-8"))
            if len(tid) < 2:
                out.append(_one(tid, np.zeros((0, 0)), np.zeros((0, 0)), n_bytes))
            else:
                t_dist = target.token_distributions(text, stride=stride)
                b_dist = base.token_distributions(text, stride=stride)
                if t_dist.shape != b_dist.shape:
                    raise fail(
                        "base", f"next-token distributions of shape {t_dist.shape}", b_dist.shape
                    )
                out.append(_one(tid, t_dist, b_dist, n_bytes))
            bar.advance()
    return out


def save_paired_stats(stats: Sequence[PairedTokenStats], path: Any) -> None:
    """Write paired statistics as one ``.npz`` (concatenated arrays and their lengths)."""
    cat = np.concatenate
    arrays: dict[str, Any] = {
        "n_ids": np.asarray([s.ids.size for s in stats], np.int64),
        "n_bytes": np.asarray([s.n_bytes for s in stats], np.int64),
        "ids": cat([s.ids for s in stats]) if stats else np.zeros(0, np.int64),
        "target_logprobs": cat([s.target_logprobs for s in stats]) if stats else np.zeros(0),
        "base_logprobs": cat([s.base_logprobs for s in stats]) if stats else np.zeros(0),
        "target_top1": cat([s.target_top1 for s in stats]) if stats else np.zeros(0, bool),
        "kl": cat([s.kl for s in stats]) if stats else np.zeros(0),
    }
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)


def load_paired_stats(path: Any) -> list[PairedTokenStats]:
    """Read what :func:`save_paired_stats` wrote."""
    with np.load(path, allow_pickle=False) as z:
        n_ids = z["n_ids"]
        n_scored = np.maximum(n_ids - 1, 0)
        ids = np.split(z["ids"], np.cumsum(n_ids)[:-1])
        cuts = np.cumsum(n_scored)[:-1]
        parts = {
            k: np.split(z[k], cuts)
            for k in ("target_logprobs", "base_logprobs", "target_top1", "kl")
        }
        return [
            PairedTokenStats(
                ids=ids[i].astype(np.int64),
                target_logprobs=parts["target_logprobs"][i],
                base_logprobs=parts["base_logprobs"][i],
                target_top1=parts["target_top1"][i].astype(bool),
                kl=parts["kl"][i],
                n_bytes=int(z["n_bytes"][i]),
            )
            for i in range(n_ids.size)
        ]
