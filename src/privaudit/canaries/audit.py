"""The one-run bounds of a canary audit: the existing eps and f-DP statistics on canary scores.

Each canary's score (higher = more likely included) and its coin go to the one-run audit of
Steinke, Nasr, Jagielski (2023; :func:`privaudit.stats.one_run.one_run_audit`: eps at
``delta``) and to the f-DP one-run audit of Mahloujifar, Melis, Chaudhuri (2024;
:func:`privaudit.stats.fdp.fdp_one_run_audit`: mu-GDP and an assumption-free eps). The
guesses are the ``k_pos`` highest and ``k_neg`` lowest scores, fixed in advance
(``threshold_selection = "fixed"``), or chosen among the default candidates with the
Bonferroni correction paid (``"union-bound"``). Each bound holds at the stated confidence
on its own. Nothing here is re-implemented: this module only wires the canaries in.

Text canaries trained on ``repetitions = k > 1`` times are audited as groups of ``k``
training records; the reported bounds are per training record, by group privacy
(:mod:`privaudit.canaries.group`), with the group bounds kept in ``extra``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from privaudit._validation import as_float_array, fail
from privaudit.canaries.result import CanaryAuditResult
from privaudit.canaries.sets import CanaryCoins, CanarySet
from privaudit.stats.fdp import fdp_one_run_audit
from privaudit.stats.one_run import one_run_audit

if TYPE_CHECKING:
    from privaudit.records import AuditResult

__all__ = ["audit_canaries", "canary_bounds", "canary_repetitions"]


def canary_bounds(
    scores: ArrayLike,
    included: ArrayLike,
    *,
    k_pos: int | None = None,
    k_neg: int | None = None,
    confidence: float = 0.95,
    delta: float = 0.0,
    repetitions: int = 1,
) -> tuple[AuditResult, AuditResult]:
    """``(one_run, fdp)``: the two one-run audits of the scores and coins.

    With ``k_pos``/``k_neg`` (either one; the other defaults to 0) the guesses are fixed
    in advance; with neither, the union bound over the default candidates is paid.
    ``repetitions``: the number of times each included canary was trained on; above 1 the
    audits test groups of that many records and their bounds are made per record
    (:func:`privaudit.canaries.group.record_level_bounds`).
    """
    from privaudit._validation import check_positive_int
    from privaudit.canaries.group import record_level_bounds

    k = check_positive_int(repetitions, "repetitions")
    sel = "union-bound"
    common = {
        "k_pos": k_pos,
        "k_neg": k_neg,
        "confidence": confidence,
        "delta": delta,
        "selection": sel,
    }
    one = one_run_audit(scores, included, **common)  # type: ignore[arg-type]
    fdp = fdp_one_run_audit(scores, included, **common)  # type: ignore[arg-type]
    return record_level_bounds(one, fdp, k)


def audit_canaries(
    canaries: CanarySet,
    coins: CanaryCoins,
    scores: ArrayLike,
    *,
    access: str,
    k_pos: int | None = None,
    k_neg: int | None = None,
    confidence: float = 0.95,
    delta: float = 0.0,
    accountant_epsilon: float | None = None,
    settings: dict[str, object] | None = None,
) -> CanaryAuditResult:
    """One-run DP lower bounds from the scores of a canary set (the canaries' facade).

    Parameters
    ----------
    canaries, coins : CanarySet, CanaryCoins
        The set and its coins (they must match: :meth:`CanaryCoins.check_matches`).
    scores : array_like, shape (m,)
        Per-canary scores in the order of ``canaries.ids``, higher = more likely included
        (:func:`~privaudit.canaries.input_canary_scores`,
        :func:`~privaudit.canaries.gradient_canary_scores`); they must be computed
        without the coins.
    access : str
        ``"black-box"`` (input canaries, final model), ``"final"`` or ``"iterates"``
        (gradient canaries).
    k_pos, k_neg : int, optional
        Guesses fixed in advance; default: chosen with the union bound paid.
    confidence : float
        Confidence of each bound (default 0.95).
    delta : float
        delta of the audited (eps, delta)-DP hypothesis (the run's delta).
    accountant_epsilon : float, optional
        The accountant's eps of the run, reported beside the bounds (never used by them).
    settings : dict, optional
        Extra settings to record (training recipe, file names).

    Returns
    -------
    CanaryAuditResult
        Per training record: for text canaries with ``repetitions = k > 1`` each coin adds
        ``k`` records, the audits test that group, and the bounds are made per record by
        group privacy (eps and mu divided by ``k`` at ``delta = 0``; with ``delta > 0`` the
        largest eps whose group guarantee ``(k eps, delta sum_{i<k} e^{i eps})`` is
        rejected); the group bounds are in each audit's ``extra``.

    Examples
    --------
    >>> import numpy as np
    >>> from privaudit.canaries import make_gradient_canaries, draw_coins, audit_canaries
    >>> cs = make_gradient_canaries(5000, 1000, seed=0)
    >>> coins = draw_coins(cs, seed=1)
    >>> s = coins.included * 4.0 + np.random.default_rng(2).normal(size=1000)
    >>> r = audit_canaries(cs, coins, s, access="iterates", k_pos=100)
    >>> round(r.epsilon_lower_bound, 2) > 2
    True
    """
    coins.check_matches(canaries)
    s = as_float_array(scores, "scores", ndim=1)
    if s.size != canaries.m:
        raise fail("scores", f"{canaries.m} scores (one per canary)", s.size)
    want = ("final", "iterates") if canaries.is_gradient else ("black-box",)
    if access not in want:
        raise fail(
            "access",
            " or ".join(repr(a) for a in want) + f" for {canaries.kind} canaries",
            repr(access),
        )
    if accountant_epsilon is not None and not accountant_epsilon >= 0:
        raise fail("accountant_epsilon", "a number >= 0 (inf allowed)", accountant_epsilon)
    repetitions = canary_repetitions(canaries)
    one, fdp = canary_bounds(
        s,
        coins.included,
        k_pos=k_pos,
        k_neg=k_neg,
        confidence=confidence,
        delta=delta,
        repetitions=repetitions,
    )
    return CanaryAuditResult(
        canary_kind=canaries.kind,
        access=access,
        ids=canaries.ids.copy(),
        scores=np.asarray(s, dtype=np.float64),
        included=coins.included.copy(),
        one_run=one,
        fdp=fdp,
        accountant_epsilon=accountant_epsilon,
        k_pos=k_pos,
        k_neg=k_neg,
        confidence=float(confidence),
        delta=float(delta),
        set_fingerprint=canaries.fingerprint,
        coins_fingerprint=coins.fingerprint,
        settings=dict(settings or {}),
        repetitions=repetitions,
    )


def canary_repetitions(canaries: CanarySet) -> int:
    """How many training records one canary's coin adds: ``repetitions`` for text canaries,
    1 for the others."""
    return max(1, int(canaries.repetitions)) if canaries.is_text else 1
