"""Guesses from scores, and how the number of guesses is chosen.

One-run audits (Steinke et al. 2023; Mahloujifar et al. 2024) turn per-example scores
into guesses: +1 ("member") for the ``k_pos`` highest scores, -1 ("non-member") for the
``k_neg`` lowest, 0 (abstain) for the rest. Choosing the guesses from the attacker's own
scores is allowed (they are a post-processing of the mechanism's output); choosing
``k`` by looking at the membership labels is not, unless it is paid for
(audit-math.md section 6, item 1). Two ways are offered:

* ``"union-bound"``: every candidate ``(k_pos, k_neg)`` is audited on all the data at
  level ``beta / K`` (Bonferroni over the ``K`` candidates); the largest bound is valid
  at level ``beta`` because the union of the ``K`` failure events has probability at
  most ``beta``.
* ``"held-out"``: a random part of the examples (independent of everything else) picks
  the candidate; the other part is audited with it at level ``beta``. Only the audited
  part counts as ``m``.

Ties: when the k-th highest (lowest) score is tied with the next one, the whole tied
block at the boundary abstains, so the guesses depend on the scores only through
their order (invariant to strictly increasing transforms and to permuting rows) and
never exceed ``k``. Dropping guesses is a function of the output only, so it keeps
validity.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privaudit._validation import (
    as_bool_array,
    as_float_array,
    check_both_classes,
    check_choice,
    check_positive_int,
    check_probability,
    check_same_length,
    fail,
)

__all__ = [
    "SELECTIONS",
    "GuessCounts",
    "GuessSelection",
    "SortedScores",
    "default_candidates",
    "make_guesses",
    "prepare_scores",
    "run_guess_selection",
]

SELECTIONS = ("union-bound", "held-out")


def prepare_scores(
    scores: ArrayLike, member: ArrayLike, *, scores_name: str = "scores"
) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """Validate one score and one membership bit per audit example.

    Raises :class:`~privaudit.errors.InvalidInputError` on NaN or infinite scores,
    non-1-D input, mismatched lengths, non-boolean membership, or only one class.
    """
    s = as_float_array(scores, scores_name, ndim=1)
    mem = as_bool_array(member, "member", ndim=1)
    check_same_length(**{scores_name: s, "member": mem})
    check_both_classes(mem, "member")
    return s, mem


@dataclasses.dataclass(frozen=True)
class GuessCounts:
    """The counts a one-run bound is computed from.

    ``m`` audit examples, ``r`` guesses (``n_pos`` "member" + ``n_neg`` "non-member")
    of which ``v`` are correct (``v_pos`` + ``v_neg``); ``k_pos``/``k_neg`` are the
    requested counts (``n_pos <= k_pos`` when ties at the boundary abstain).
    """

    m: int
    r: int
    v: int
    k_pos: int
    k_neg: int
    n_pos: int
    n_neg: int
    v_pos: int
    v_neg: int

    def as_dict(self) -> dict[str, int]:
        """The counts as a JSON-compatible dict."""
        return {f.name: int(getattr(self, f.name)) for f in dataclasses.fields(self)}


class SortedScores:
    """Scores sorted once, so that counts for many ``(k_pos, k_neg)`` are O(log m)."""

    def __init__(self, scores: NDArray[np.float64], member: NDArray[np.bool_]) -> None:
        order = np.argsort(scores, kind="stable")
        self.s = scores[order]
        mem = member[order]
        self.m = int(scores.size)
        # cum_mem[j] = number of members among the j lowest scores.
        self.cum_mem = np.concatenate(([0], np.cumsum(mem, dtype=np.int64)))

    def counts(self, k_pos: int, k_neg: int) -> GuessCounts:
        """Counts of the guesses "top k_pos = member, bottom k_neg = non-member"."""
        m, s = self.m, self.s
        check_guess_counts(k_pos, k_neg, m)
        start = m  # positive guesses are s[start:]
        if k_pos > 0:
            t = s[m - k_pos]
            if k_pos == m or s[m - k_pos - 1] < t:
                start = m - k_pos
            else:
                start = int(np.searchsorted(s, t, side="right"))
        stop = 0  # negative guesses are s[:stop]
        if k_neg > 0:
            t = s[k_neg - 1]
            if k_neg == m or s[k_neg] > t:
                stop = k_neg
            else:
                stop = int(np.searchsorted(s, t, side="left"))
        n_pos, n_neg = m - start, stop
        v_pos = int(self.cum_mem[m] - self.cum_mem[start])
        v_neg = int(stop - self.cum_mem[stop])
        return GuessCounts(
            m=m,
            r=n_pos + n_neg,
            v=v_pos + v_neg,
            k_pos=int(k_pos),
            k_neg=int(k_neg),
            n_pos=n_pos,
            n_neg=n_neg,
            v_pos=v_pos,
            v_neg=v_neg,
        )


def check_guess_counts(k_pos: int, k_neg: int, m: int) -> None:
    """Check ``k_pos, k_neg >= 0``, at least one guess and ``k_pos + k_neg <= m``."""
    check_positive_int(k_pos, "k_pos", minimum=0)
    check_positive_int(k_neg, "k_neg", minimum=0)
    if k_pos + k_neg > m:
        raise fail(
            "k_pos + k_neg",
            f"at most the number of audit examples ({m})",
            f"{k_pos} + {k_neg} = {k_pos + k_neg}",
        )
    if k_pos + k_neg == 0:
        raise fail("k_pos + k_neg", "at least one guess", 0)


def make_guesses(scores: ArrayLike, k_pos: int, k_neg: int) -> NDArray[np.int8]:
    """Guesses +1 for the ``k_pos`` highest scores, -1 for the ``k_neg`` lowest, else 0.

    A tied block of scores at either boundary abstains (see the module docstring).

    Examples
    --------
    >>> make_guesses([0.1, 0.9, 0.5, 0.3], 1, 1).tolist()
    [-1, 1, 0, 0]
    """
    s = as_float_array(scores, "scores", ndim=1)
    m = s.size
    check_guess_counts(k_pos, k_neg, m)
    srt = np.sort(s)
    out = np.zeros(m, dtype=np.int8)
    if k_pos > 0:
        t = srt[m - k_pos]
        tied = k_pos < m and srt[m - k_pos - 1] == t
        out[(s > t) if tied else (s >= t)] = 1
    if k_neg > 0:
        t = srt[k_neg - 1]
        tied = k_neg < m and srt[k_neg] == t
        out[(s < t) if tied else (s <= t)] = -1
    return out


def default_candidates(m: int) -> list[tuple[int, int]]:
    """Default candidate guess counts: ``k_pos = k_neg = floor(m / 2^(j+1))``, ``j >= 0``.

    Halving from "guess everything" down to 5 guesses per side (at most 12 candidates):
    the union-bound price ``log K`` stays small while covering attacks that are
    confident on a few examples as well as on many.
    """
    out: list[tuple[int, int]] = []
    k = m // 2
    while k >= 5 and len(out) < 12:
        out.append((k, k))
        k //= 2
    if not out:
        out.append((m // 2, m - m // 2) if m >= 2 else (1, 0))
    return out


@dataclasses.dataclass(frozen=True)
class GuessSelection:
    """The outcome of choosing the guess counts: the bound and how it was obtained."""

    value: float
    counts: GuessCounts
    level: float
    description: str
    notes: tuple[str, ...]
    extra: dict[str, Any]


BoundFn = Callable[[GuessCounts, float], float]


def _whole(x: object, name: str) -> int:
    """``x`` as an int when it is a whole number (``3``, ``np.int64(3)``, ``3.0``), else the
    error naming ``name``: a guess count is never truncated (2.7 is not 2)."""
    whole = isinstance(x, int | np.integer) or (
        isinstance(x, float | np.floating) and float(x).is_integer()
    )
    if isinstance(x, bool) or not whole:
        raise fail(name, "a whole number of guesses", repr(x))
    return int(x)  # type: ignore[call-overload]


def _unique_candidates(cands: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for c in cands:
        try:
            a, b = c
        except (TypeError, ValueError):
            raise fail("candidates", "a list of (k_pos, k_neg) pairs", repr(c)) from None
        kp, kn = _whole(a, "candidates: k_pos"), _whole(b, "candidates: k_neg")
        if (kp, kn) not in out:
            out.append((kp, kn))
    if not out:
        raise fail("candidates", "at least one (k_pos, k_neg) pair", "none")
    return out


def run_guess_selection(
    scores: NDArray[np.float64],
    member: NDArray[np.bool_],
    bound: BoundFn,
    beta: float,
    *,
    k_pos: int | None,
    k_neg: int | None,
    selection: str = "union-bound",
    candidates: Sequence[tuple[int, int]] | None = None,
    holdout_fraction: float = 0.5,
    rng: np.random.Generator | int | None = None,
) -> GuessSelection:
    """Choose the guess counts and compute ``bound(counts, level)`` accordingly.

    ``bound`` maps counts and a failure probability to a lower bound (larger is
    better). With fixed ``k_pos``/``k_neg`` it is evaluated once at ``beta``;
    otherwise as described in the module docstring. The returned ``level`` is the
    failure probability at which the reported bound was computed.
    """
    if k_pos is not None or k_neg is not None:
        return _fixed_selection(scores, member, bound, beta, k_pos, k_neg)
    check_choice(selection, "selection", SELECTIONS)
    cands = _checked_candidates(candidates, int(scores.size))
    if selection == "union-bound":
        return _union_bound_selection(scores, member, bound, beta, cands)
    return _held_out_selection(scores, member, bound, beta, cands, holdout_fraction, rng)


def _fixed_selection(
    scores: NDArray[np.float64],
    member: NDArray[np.bool_],
    bound: BoundFn,
    beta: float,
    k_pos: int | None,
    k_neg: int | None,
) -> GuessSelection:
    """The bound of guess counts fixed in advance, at ``beta`` (a missing one is 0)."""
    kp = 0 if k_pos is None else _whole(k_pos, "k_pos")
    kn = 0 if k_neg is None else _whole(k_neg, "k_neg")
    counts = SortedScores(scores, member).counts(kp, kn)
    notes: tuple[str, ...] = ()
    if counts.r < kp + kn:
        notes = (
            f"{kp + kn - counts.r} guess(es) abstained because of tied scores at the k boundary.",
        )
    return GuessSelection(bound(counts, beta), counts, beta, "fixed", notes, {})


def _checked_candidates(
    candidates: Sequence[tuple[int, int]] | None, m: int
) -> list[tuple[int, int]]:
    """The distinct candidate ``(k_pos, k_neg)`` (default :func:`default_candidates`), checked."""
    cands = _unique_candidates(candidates if candidates is not None else default_candidates(m))
    for kp, kn in cands:
        check_guess_counts(kp, kn, m)
    return cands


def _union_bound_selection(
    scores: NDArray[np.float64],
    member: NDArray[np.bool_],
    bound: BoundFn,
    beta: float,
    cands: list[tuple[int, int]],
) -> GuessSelection:
    """The best candidate on all the data, each tested at ``beta / K`` (Bonferroni)."""
    srt = SortedScores(scores, member)
    level = beta / len(cands)
    all_counts = [srt.counts(kp, kn) for kp, kn in cands]
    values = [bound(c, level) for c in all_counts]
    best = int(np.argmax(values))
    return GuessSelection(
        values[best],
        all_counts[best],
        level,
        f"union-bound over {len(cands)} candidate (k_pos, k_neg)",
        (
            f"(k_pos, k_neg) chosen among {len(cands)} candidates on the audit labels; "
            f"each candidate was tested at beta/{len(cands)} = {level:.3g} (Bonferroni).",
        ),
        {
            "candidates": [list(c) for c in cands],
            "candidate_bounds": [float(x) for x in values],
        },
    )


def _held_out_selection(
    scores: NDArray[np.float64],
    member: NDArray[np.bool_],
    bound: BoundFn,
    beta: float,
    cands: list[tuple[int, int]],
    holdout_fraction: float,
    rng: np.random.Generator | int | None,
) -> GuessSelection:
    """The candidate chosen on a random part of the examples, audited on the rest at beta."""
    m = int(scores.size)
    n_sel, sel_idx, aud_idx = _held_out_split(m, holdout_fraction, rng)
    srt_sel = SortedScores(scores[sel_idx], member[sel_idx])
    srt_aud = SortedScores(scores[aud_idx], member[aud_idx])
    best_c = _best_candidate_on(srt_sel, cands, bound, beta, m)
    counts = srt_aud.counts(*_audit_guess_counts(best_c, m - n_sel, m))
    return GuessSelection(
        bound(counts, beta),
        counts,
        beta,
        f"held-out: k chosen on {n_sel} examples, audited on {m - n_sel}",
        (
            f"(k_pos, k_neg) chosen on a random {n_sel} of {m} examples; the bound uses "
            f"only the other {m - n_sel} (m = {m - n_sel}).",
        ),
        {"candidates": [list(c) for c in cands], "selected_candidate": list(best_c)},
    )


def _held_out_split(
    m: int, holdout_fraction: float, rng: np.random.Generator | int | None
) -> tuple[int, NDArray[np.intp], NDArray[np.intp]]:
    """A random split: the size of the selection part, its indices, the audit part's."""
    frac = check_probability(holdout_fraction, "holdout_fraction")
    gen = np.random.default_rng(rng)
    perm = gen.permutation(m)
    n_sel = round(frac * m)
    if n_sel < 1 or n_sel > m - 1:
        raise fail("holdout_fraction", f"a split leaving both parts non-empty (m={m})", frac)
    return n_sel, perm[:n_sel], perm[n_sel:]


def _scaled(c: tuple[int, int], n: int, m: int) -> tuple[int, int]:
    """A candidate for ``m`` examples scaled down to ``n`` examples (rounded down)."""
    return (c[0] * n) // m, (c[1] * n) // m


def _best_candidate_on(
    srt_sel: SortedScores,
    cands: list[tuple[int, int]],
    bound: BoundFn,
    beta: float,
    m: int,
) -> tuple[int, int]:
    """The candidate with the largest bound on the selection part (first one on ties)."""
    best_val, best_c = -np.inf, None
    for c in cands:
        kp, kn = _scaled(c, srt_sel.m, m)
        if kp + kn == 0:
            continue
        val = bound(srt_sel.counts(kp, kn), beta)
        if val > best_val:
            best_val, best_c = val, c
    if best_c is None:
        raise fail("candidates", "at least one candidate with a guess on the selection part", 0)
    return best_c


def _audit_guess_counts(best_c: tuple[int, int], n_aud: int, m: int) -> tuple[int, int]:
    """The chosen candidate scaled to the audit part; one guess if that leaves none."""
    kp, kn = _scaled(best_c, n_aud, m)
    if kp + kn == 0:
        kp = 1 if best_c[0] > 0 else 0
        kn = 1 - kp
    return kp, kn
