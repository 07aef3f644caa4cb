"""LiRA's per-record Gaussians: location, variance rules, shrinkage, clipping and tuning.

The fitting half of :mod:`privaudit.attacks.lira` (Carlini et al. 2022, Sec. IV; the
variance rules are described in that module's docstring): masked locations, the
per-example / fixed / shrunk sigmas, the signal clipping, and the two defaults tuned on
the reference models by leave-one-model-out (:func:`tune_shrinkage`, :func:`tune_clip`).
Nothing here reads an :class:`~privaudit.attacks.base.AttackData`; :mod:`.lira` turns
its tables into the arrays these functions take.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import special

from privaudit._validation import check_choice, fail
from privaudit.errors import DesignError

__all__ = ["DEFAULT_CLIP", "LOCATIONS", "OFFLINE_TESTS", "VARIANCES", "tune_clip", "tune_shrinkage"]


LOCATIONS = ("mean", "median")
VARIANCES = ("auto", "shrunk", "per-example", "fixed", "fixed-reference-code")

#: Default clipping of the signal: LiRA's logit-scaled confidence is clipped to
#: ``[-30, 30]`` (see the module docstring).
DEFAULT_CLIP = 30.0

#: Candidate prior weights (pseudo-observations) of the shrunk variance; ``inf`` is the
#: pooled (fixed) variance and 0 the per-example one.
SHRINKAGE_GRID: tuple[float, ...] = (0.0, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, np.inf)


def _resolve_variance(variance: str) -> str:
    """``"auto"`` is the shrunk variance with its weight tuned on the reference models."""
    check_choice(variance, "variance", VARIANCES)
    return "shrunk" if variance == "auto" else variance


OFFLINE_TESTS = ("one-sided", "two-sided")
_LOG_SQRT_2PI = 0.5 * np.log(2.0 * np.pi)


def _masked_location(
    v: NDArray[np.float64], mask: NDArray[np.bool_], how: str
) -> NDArray[np.float64]:
    if how == "mean":
        out: NDArray[np.float64] = np.where(mask, v, 0.0).sum(axis=0) / mask.sum(axis=0)
        return out
    return np.asarray(np.nanmedian(np.where(mask, v, np.nan), axis=0), dtype=np.float64)


def _masked_mean_sq_dev(
    v: NDArray[np.float64], mask: NDArray[np.bool_]
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Per-column sum of squared deviations from the column mean, and counts."""
    n = mask.sum(axis=0)
    mean = np.where(mask, v, 0.0).sum(axis=0) / n
    dev = np.where(mask, v - mean[None, :], 0.0)
    return (dev * dev).sum(axis=0), n


def _check_counts(counts: NDArray[np.int64], world: str, minimum: int, variance: str) -> None:
    bad = counts < minimum
    if bad.any():
        raise DesignError(
            f"reference_membership: expected at least {minimum} {world} reference model(s) per "
            f"record for LiRA with variance={variance!r}, found {int(bad.sum())} record(s) with "
            f"fewer (minimum {int(counts.min())}); train more reference models or use a "
            f"layout in which every record is {world} for enough of them"
        )


def _log_normal_pdf(
    x: NDArray[np.float64], mu: NDArray[np.float64], sigma: NDArray[np.float64]
) -> NDArray[np.float64]:
    z = (x - mu) / sigma
    out: NDArray[np.float64] = -0.5 * z * z - np.log(sigma) - _LOG_SQRT_2PI
    return out


def _pooled_variance(v: NDArray[np.float64], mask: NDArray[np.bool_]) -> tuple[float, int]:
    """Within-record variance pooled over the records of one world, and its df."""
    return _pooled_from(*_masked_mean_sq_dev(v, mask))


def _pooled_from(ss: NDArray[np.float64], n: NDArray[np.int64]) -> tuple[float, int]:
    """:func:`_pooled_variance` from :func:`_masked_mean_sq_dev`'s sums and counts."""
    df = int(np.maximum(n - 1, 0).sum())
    return (float(ss.sum()) / df if df > 0 else 0.0), df


def _shrunk_sigma(
    ss: NDArray[np.float64], n: NDArray[np.int64], pooled_var: float, nu: float
) -> NDArray[np.float64]:
    r""":math:`\sqrt{(\nu\,\sigma_p^2 + SS_i)/(\nu + n_i - 1)}`; ``nu = inf`` is :math:`\sigma_p`.

    LiRA's per-example variance (Carlini et al. 2022, Sec. IV) shrunk toward the pooled
    :math:`\sigma_p^2` with :math:`\nu` pseudo-observations. Where :math:`\nu + n_i - 1
    \le 0` (``nu = 0`` and a record with one model in the world) neither the record nor
    the prior carries a variance; the pooled :math:`\sigma_p` is used there, the limit of
    the formula as :math:`\nu \to 0^+` for :math:`n_i = 1` (:math:`SS_i = 0`), and the
    value every :math:`\nu > 0` gives such a record; never 0 (a zero sigma, floored at
    ``sigma_floor``, scores the record near :math:`-10^{14}`).
    """
    if np.isinf(nu):
        return np.full(ss.shape, np.sqrt(pooled_var))
    df = n - 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        var = (nu * pooled_var + ss) / (nu + df)
    out: NDArray[np.float64] = np.sqrt(np.where(nu + df > 0, var, pooled_var))
    return out


def tune_shrinkage(
    v: NDArray[np.float64],
    masks: list[NDArray[np.bool_]],
    grid: tuple[float, ...] = SHRINKAGE_GRID,
) -> tuple[float, dict[str, float], int]:
    r"""Choose the prior weight :math:`\nu` of the shrunk variance on the reference models.

    Leave-one-model-out predictive likelihood: for every reference model j and record
    i, the Gaussian of i's world (IN or OUT, per ``masks``) is fitted on the *other*
    models of that world (mean, and the shrunk variance for each :math:`\nu` of the
    grid, pooled variance from all models), and model j's signal on i is scored by its
    log density. The :math:`\nu` with the largest mean log density over all such
    (model, record) pairs is kept (ties: the larger :math:`\nu`). This is the
    empirical-Bayes choice of the prior weight: it asks which variance predicts a
    *new* model's signal best, which is exactly how LiRA uses the fit on the target.
    Only pairs whose world keeps at least 2 other models are scored (so that
    :math:`\nu = 0` is defined); with fewer, pairs with 1 other model are scored and
    :math:`\nu = 0` is left out: every :math:`\nu > 0` then gives each scored pair the
    pooled variance, an exact tie (a single remaining model's squared deviation is set to
    0, not left to the rounding of the leave-one-out sums), so the tie-break keeps
    :math:`\nu = \infty`, the pooled variance, for every record. The chosen weight is
    applied to every record; a record with one model in a world gets the pooled variance
    there whatever the weight
    (:func:`_shrunk_sigma`: :math:`\nu\sigma_p^2/\nu` for every :math:`\nu > 0`, and
    its limit for :math:`\nu = 0`), so :math:`\nu = 0` stays a candidate when such
    records exist. No target output is read.

    Returns ``(nu, {repr(nu): mean log density}, n_pairs)``.
    """
    pairs = 0
    need = 2 if any(int(m.sum(axis=0).min()) >= 3 for m in masks) else 1
    usable = [g for g in grid if need >= 2 or g > 0]
    total = np.zeros(len(usable))
    for mask in masks:
        n_all = mask.sum(axis=0)
        if not (n_all >= need + 1).any():
            continue
        pooled, _ = _pooled_variance(v, mask)
        sums = _LeaveOneOut(v, mask)
        vc, s1, s2 = sums.vc, sums.s1, sums.s2
        n_rem = np.broadcast_to((n_all[None, :] - 1).astype(np.float64), v.shape)
        ok = mask & (n_rem >= need)
        if not ok.any():
            continue
        r1 = (s1[None, :] - vc)[ok]
        r2 = (s2[None, :] - vc * vc)[ok]
        nr = n_rem[ok]
        mu = r1 / nr
        # one remaining model has no deviation: exactly 0 (the difference of the sums
        # leaves a rounding residue, which would break the tie between the weights)
        ss = np.where(nr > 1, np.maximum(r2 - r1 * r1 / nr, 0.0), 0.0)
        y = vc[ok]
        for g, nu in enumerate(usable):
            sig = np.maximum(_shrunk_sigma(ss, nr, pooled, nu), 1e-12)
            total[g] += float(_log_normal_pdf(y, mu, sig).sum())
        pairs += int(ok.sum())
    if pairs == 0:
        raise DesignError(
            "reference_membership: expected records with at least 2 reference models in one "
            "world to tune LiRA's variance shrinkage; pass shrinkage=<number> or "
            "variance='fixed'"
        )
    mean = {repr(float(nu)): total[g] / pairs for g, nu in enumerate(usable)}
    best = max(range(len(usable)), key=lambda g: (total[g], usable[g]))
    return float(usable[best]), mean, pairs


def _sigmas(
    v: NDArray[np.float64],
    masks: list[NDArray[np.bool_]],
    variance: str,
    *,
    nu: float | None = None,
    pooled: list[float] | None = None,
) -> tuple[list[NDArray[np.float64]], list[float]]:
    """Per-world sigmas (one array per mask), per the variance mode.

    Also returns the pooled variances used (``"shrunk"``; given by ``pooled`` to reuse
    the audited records' ones on calibration records), else ``[]``.
    """
    if variance == "fixed-reference-code":  # np.std of every signal of the first world
        s = float(np.std(v[masks[0]]))
        return [np.full(v.shape[1], s) for _ in masks], []
    return _sigmas_from([_masked_mean_sq_dev(v, m) for m in masks], variance, nu=nu, pooled=pooled)


def _sigmas_from(
    sq: list[tuple[NDArray[np.float64], NDArray[np.int64]]],
    variance: str,
    *,
    nu: float | None = None,
    pooled: list[float] | None = None,
) -> tuple[list[NDArray[np.float64]], list[float]]:
    """:func:`_sigmas` from each world's per-record sums of squared deviations and counts
    (:func:`_masked_mean_sq_dev`), for every mode but ``"fixed-reference-code"`` (which
    reads the signals themselves)."""
    if variance == "per-example":
        return [np.sqrt(ss / n) for ss, n in sq], []  # ddof=0, as np.std
    if variance == "shrunk":
        if nu is None:  # pragma: no cover - the attacks always resolve it
            raise DesignError("shrunk variance without a prior weight")
        # the pooled variance is made of the same squared deviations
        pv = [_pooled_from(ss, n)[0] for ss, n in sq] if pooled is None else list(pooled)
        out = [
            _shrunk_sigma(ss, n.astype(np.float64), p, nu)
            for (ss, n), p in zip(sq, pv, strict=True)
        ]
        return out, pv
    if variance != "fixed":  # pragma: no cover - _resolve_variance checked it
        raise DesignError(f"variance {variance!r} needs the signals themselves")
    total_ss = 0.0
    total_n = 0
    groups = 0
    for ss, n in sq:
        total_ss += float(ss.sum())
        total_n += int(n.sum())
        groups += int(n.size)
    if total_n <= groups:
        raise DesignError(
            "reference_membership: expected more reference signals than (record, world) groups "
            f"to pool a fixed LiRA variance, found {total_n} signal(s) in {groups} group(s); "
            "use variance='fixed-reference-code' or more reference models"
        )
    s = float(np.sqrt(total_ss / (total_n - groups)))
    return [np.full(sq[0][0].size, s) for _ in sq], []


class _LeaveOneOut:
    """One world's signals summed over every reference model, so that the world's mean and
    squared deviations *without* one model follow in O(records) instead of O(models x
    records): what leave-one-model-out tuning needs for every model in turn.

    The signals are centred on the world's mean over all models first (``vc``), so that
    ``ss = r2 - r1**2 / n`` of the remaining sums loses no precision to cancellation: the
    same numbers as computing them from the remaining models directly, up to rounding.
    """

    def __init__(self, v: NDArray[np.float64], mask: NDArray[np.bool_]) -> None:
        self.mask = mask
        self.n = mask.sum(axis=0)
        self.centre = np.where(mask, v, 0.0).sum(axis=0) / np.maximum(self.n, 1)
        self.vc = np.where(mask, v - self.centre[None, :], 0.0)
        self.s1 = self.vc.sum(axis=0)
        self.s2 = (self.vc * self.vc).sum(axis=0)

    def without(
        self, j: int, ok: NDArray[np.bool_]
    ) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.int64]]:
        """Mean, sum of squared deviations and count of the world's signals on the records
        ``ok`` over every model but ``j`` (each record of ``ok`` keeps at least one)."""
        d = self.vc[j, ok]
        n = self.n[ok] - self.mask[j, ok]
        r1 = self.s1[ok] - d
        r2 = self.s2[ok] - d * d
        mu = self.centre[ok] + r1 / n
        ss = np.where(n > 1, np.maximum(r2 - r1 * r1 / n, 0.0), 0.0)  # 1 model: exactly 0
        return mu, ss, n


def _spread_from(mu: NDArray[np.float64], ss: NDArray[np.float64], n: NDArray[np.int64]) -> float:
    """``np.std`` of every signal of one world from its per-record means, squared
    deviations and counts (the ``"fixed-reference-code"`` sigma), up to rounding."""
    total = float(n.sum())
    grand = float((n * mu).sum()) / total
    return float(np.sqrt((float(ss.sum()) + float((n * (mu - grand) ** 2).sum())) / total))


def _check_clip(clip: float | str | None) -> float | str | None:
    if clip is None or clip == "auto":
        return clip
    if (
        isinstance(clip, bool)
        or not isinstance(clip, int | float)
        or not (np.isfinite(clip) and clip > 0)
    ):
        raise fail("clip", "'auto', a positive finite number or None", clip)
    return float(clip)


def _check_shrinkage(shrinkage: float | str) -> float | str:
    if shrinkage == "auto":
        return "auto"
    if (
        isinstance(shrinkage, bool)
        or not isinstance(shrinkage, int | float)
        or np.isnan(shrinkage)
        or shrinkage < 0
    ):
        raise fail("shrinkage", "'auto' or a number >= 0 (inf = the pooled variance)", shrinkage)
    return float(shrinkage)


def _resolve_shrinkage(
    shrinkage: float | str, variance: str, ref: NDArray[np.float64], masks: list[NDArray[np.bool_]]
) -> tuple[float | None, dict[str, Any]]:
    if variance != "shrunk":
        return None, {}
    if shrinkage == "auto":
        nu, table, pairs = tune_shrinkage(ref, masks)
        return nu, {
            "shrinkage": nu,
            "shrinkage_rule": "auto (leave-one-model-out predictive likelihood)",
            "shrinkage_loglik": table,
            "shrinkage_pairs": pairs,
        }
    return float(shrinkage), {"shrinkage": float(shrinkage), "shrinkage_rule": "given"}


def _clipped(v: NDArray[np.float64], clip: float | None) -> NDArray[np.float64]:
    return v if clip is None else np.clip(v, -clip, clip)


def _clip_both(
    raw_obs: NDArray[np.float64], raw_ref: NDArray[np.float64], clip_v: float | None
) -> tuple[NDArray[np.float64], NDArray[np.float64], int]:
    """The target's and the reference models' signals clipped at ``clip_v`` (None: as they
    are), and how many values the clipping changed."""
    obs, ref = _clipped(raw_obs, clip_v), _clipped(raw_ref, clip_v)
    n_clipped = 0 if clip_v is None else int((raw_obs != obs).sum() + (raw_ref != ref).sum())
    return obs, ref, n_clipped


def _check_floor(sigma_floor: float) -> float:
    if not (isinstance(sigma_floor, int | float) and np.isfinite(sigma_floor) and sigma_floor > 0):
        raise fail("sigma_floor", "a positive finite number", sigma_floor)
    return float(sigma_floor)


CLIP_GRID: tuple[float | None, ...] = (10.0, 20.0, 30.0, 50.0, 100.0, 300.0, 1000.0, None)
#: False-positive rates at which :func:`tune_clip` measures the pseudo-targets' TPR.
TUNING_FPRS: tuple[float, ...] = (0.001, 0.01)


def _tpr_at_fprs(
    scores: NDArray[np.float64], member: NDArray[np.bool_], fprs: tuple[float, ...]
) -> list[float]:
    """Largest TPR with FPR <= f for each f (ties enter together); f below 1/n_- skipped.

    The thresholds are the distinct scores; the one of the largest TPR with at most ``K``
    false positives lies just above the ``(K+1)``-th largest non-member score ``v``, so the
    TPR is ``#{members > v} / n_+``: found by a partial sort of the non-members (linear
    time), the same counts and divisions as the full sweep (:func:`_tpr_at_fprs_sweep`,
    the oracle of the tests), hence the same floats."""
    n_pos, n_neg = int(member.sum()), int((~member).sum())
    if n_pos == 0 or not np.isfinite(scores).all():
        return _tpr_at_fprs_sweep(scores, member, fprs)
    neg = scores[~member]
    pos = scores[member]
    out = []
    for f in fprs:
        if n_neg * f < 1.0 - 1e-9:
            continue
        k = _max_false_positives(n_neg, f)
        if k >= n_neg:  # every threshold is allowed: the lowest one takes every member
            out.append(float(n_pos / n_pos))
            continue
        v = -np.partition(-neg, k)[k]  # the (k+1)-th largest non-member score
        out.append(float(int((pos > v).sum()) / n_pos))
    return out


def _max_false_positives(n_neg: int, f: float) -> int:
    """The largest count ``c <= n_neg`` with ``c / n_neg <= f + 1e-12`` in floating point
    (the sweep's test)."""
    c = min(int(np.floor((f + 1e-12) * n_neg)), n_neg)
    while c < n_neg and (c + 1) / n_neg <= f + 1e-12:
        c += 1
    while c > 0 and c / n_neg > f + 1e-12:
        c -= 1
    return c


def _tpr_at_fprs_sweep(
    scores: NDArray[np.float64], member: NDArray[np.bool_], fprs: tuple[float, ...]
) -> list[float]:
    """:func:`_tpr_at_fprs` by a sweep over every distinct score (sort and cumulative
    counts): the slow, obviously correct version."""
    n_pos, n_neg = int(member.sum()), int((~member).sum())
    order = np.argsort(-scores, kind="stable")
    s, m = scores[order], member[order]
    last = np.flatnonzero(np.r_[s[1:] != s[:-1], True])
    tp = np.cumsum(m)[last] / n_pos
    fp = np.cumsum(~m)[last] / n_neg
    out = []
    for f in fprs:
        if n_neg * f < 1.0 - 1e-9:
            continue
        ok = fp <= f + 1e-12
        out.append(float(tp[ok].max()) if ok.any() else 0.0)
    return out


def _online_core(
    obs: NDArray[np.float64],
    ref: NDArray[np.float64],
    keep: NDArray[np.bool_],
    location: str,
    variance: str,
    nu: float | None,
    floor: float,
) -> tuple[NDArray[np.float64], int]:
    in_mask, out_mask = keep, ~keep
    mu_in = _masked_location(ref, in_mask, location)
    mu_out = _masked_location(ref, out_mask, location)
    (s_in, s_out), _ = _sigmas(ref, [in_mask, out_mask], variance, nu=nu)
    return _online_scores(obs, (mu_in, s_in), (mu_out, s_out), floor)


def _online_scores(
    obs: NDArray[np.float64],
    fit_in: tuple[NDArray[np.float64], NDArray[np.float64]],
    fit_out: tuple[NDArray[np.float64], NDArray[np.float64]],
    floor: float,
) -> tuple[NDArray[np.float64], int]:
    """The online log-likelihood ratio of ``obs`` under the IN and OUT Gaussians
    ``(mu, sigma)``, each sigma floored; and how many sigmas the floor raised."""
    (mu_in, s_in), (mu_out, s_out) = fit_in, fit_out
    n_floored = int((s_in < floor).sum() + (s_out < floor).sum())
    s_in, s_out = np.maximum(s_in, floor), np.maximum(s_out, floor)
    scores = _log_normal_pdf(obs, mu_in, s_in) - _log_normal_pdf(obs, mu_out, s_out)
    return scores, n_floored


def _offline_core(
    obs: NDArray[np.float64],
    ref: NDArray[np.float64],
    keep: NDArray[np.bool_],
    location: str,
    variance: str,
    nu: float | None,
    floor: float,
) -> tuple[NDArray[np.float64], int]:
    """The one-sided offline score on member-oriented signals."""
    out_mask = ~keep
    mu = _masked_location(ref, out_mask, location)
    (sigma,), _ = _sigmas(ref, [out_mask], variance, nu=nu)
    return _offline_scores(obs, mu, sigma, floor)


def _offline_scores(
    obs: NDArray[np.float64], mu: NDArray[np.float64], sigma: NDArray[np.float64], floor: float
) -> tuple[NDArray[np.float64], int]:
    r"""The one-sided offline score :math:`-\log\Pr[Z > obs]` of ``obs`` under the OUT
    Gaussian (Carlini et al. 2022, Sec. IV-C; the log keeps strong records apart), sigma
    floored; and how many sigmas the floor raised."""
    n_floored = int((sigma < floor).sum())
    sigma = np.maximum(sigma, floor)
    scores: NDArray[np.float64] = -special.log_ndtr(-(obs - mu) / sigma)
    return scores, n_floored


def _left_out_scores(
    obs: NDArray[np.float64],
    fits: list[tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.int64]]],
    variance: str,
    nu: float | None,
    floor: float,
) -> NDArray[np.float64]:
    """The mean-location score of ``obs`` from each world's ``(mean, squared deviations,
    count)`` (:meth:`_LeaveOneOut.without`; IN then OUT online, OUT alone offline): what
    :func:`_online_core` / :func:`_offline_core` compute from the models' signals."""
    if variance == "fixed-reference-code":
        spread = _spread_from(*fits[0])
        sigmas = [np.full(obs.size, spread) for _ in fits]
    else:
        sigmas, _ = _sigmas_from([(ss, n) for _, ss, n in fits], variance, nu=nu)
    if len(fits) == 2:
        return _online_scores(obs, (fits[0][0], sigmas[0]), (fits[1][0], sigmas[1]), floor)[0]
    return _offline_scores(obs, fits[0][0], sigmas[0], floor)[0]


def tune_clip(
    ref: NDArray[np.float64],
    keep: NDArray[np.bool_],
    *,
    online: bool,
    location: str,
    variance: str,
    shrinkage: float | str,
    floor: float,
    grid: tuple[float | None, ...] = CLIP_GRID,
    max_models: int = 16,
) -> tuple[float | None, dict[str, float]]:
    r"""Choose the clipping of the signal on the reference models (leave one model out).

    Each of up to ``max_models`` reference models j in turn plays the target: its
    signal on the audited records is attacked with the *other* reference models
    (their IN/OUT split from ``keep``), and its own membership of the records is the
    ground truth. For every clip ``c`` of the grid (None = no clipping) the attack is
    run exactly as configured (location, variance, and the shrinkage weight, tuned on
    the clipped signals when ``"auto"``) and scored by the mean TPR at the FPRs of
    :data:`TUNING_FPRS` (those with enough non-members), averaged over the
    pseudo-targets; the best ``c`` wins (ties: the largest ``c``, None counting as
    infinite). The real target is never read. ``ref`` must be member-oriented for the
    offline attack. When no pseudo-target can be scored (fewer than
    ``1 / max(TUNING_FPRS)`` non-members, or records without IN/OUT models among the
    others) nothing is clipped (the paper's rule) and the table is empty.

    Returns ``(clip, {repr(clip): mean TPR})``.
    """
    core = _online_core if online else _offline_core
    need = 2 if variance == "per-example" else 1
    masks = [keep, ~keep] if online else [~keep]
    targets = list(_pseudo_targets(keep, online, need, max_models))
    # the pseudo-targets' slices of the signals do not depend on the clip (which acts
    # elementwise): cut once and clipped per clip, unless they would take much memory
    cut_once = location != "mean" and len(targets) * ref.size <= _SLICE_CACHE_ELEMENTS
    slices = [(ref[j, ok], ref[others][:, ok]) for j, others, ok, _ in targets] if cut_once else []

    def mean_tpr(c: float | None) -> float | None:
        rc = _clipped(ref, c)
        nu, _ = _resolve_shrinkage(shrinkage, variance, rc, masks)
        # a mean's fit without model j follows from sums over all models (O(records) per
        # pseudo-target): the same numbers as fitting the other models, up to rounding
        sums = [_LeaveOneOut(rc, m) for m in masks] if location == "mean" else []
        found: list[float] = []
        for t, (j, others, ok, member) in enumerate(targets):
            if sums:
                fits = [w.without(j, ok) for w in sums]
                sc = _left_out_scores(rc[j, ok], fits, variance, nu, floor)
            else:
                if cut_once:
                    obs, others_ref = _clipped(slices[t][0], c), _clipped(slices[t][1], c)
                else:
                    obs, others_ref = rc[j, ok], rc[others][:, ok]
                sc, _ = core(obs, others_ref, keep[others][:, ok], location, variance, nu, floor)
            tprs = _tpr_at_fprs(sc, member, TUNING_FPRS)
            if tprs:
                found.append(float(np.mean(tprs)))
        return sum(found, 0.0) / len(found) if found else None

    return _best_clip(grid, mean_tpr, ref)


#: Signal values :func:`tune_clip` keeps cut per pseudo-target across the clips (64 MiB).
_SLICE_CACHE_ELEMENTS = 1 << 23


def _pseudo_targets(
    keep: NDArray[np.bool_], online: bool, need: int, max_models: int
) -> Iterator[tuple[int, NDArray[np.bool_], NDArray[np.bool_], NDArray[np.bool_]]]:
    """Each of the first ``max_models`` reference models j that can play the target in a
    clip's tuning: ``(j, others, ok, member)``, ``others`` the mask of the other models,
    ``ok`` the records with at least ``need`` OUT (and, online, IN) models among them,
    ``member`` j's membership of those; skipped when fewer than two records, or one class."""
    k = keep.shape[0]
    for j in range(min(k, max_models)):
        others = np.arange(k) != j
        ko = keep[others]
        counts = [(~ko).sum(axis=0)] + ([ko.sum(axis=0)] if online else [])
        ok = np.all([cnt >= need for cnt in counts], axis=0)
        member = keep[j, ok]
        if ok.sum() < 2 or member.all() or not member.any():
            continue
        yield j, others, ok, member


def _best_clip(
    grid: tuple[float | None, ...],
    mean_tpr: Callable[[float | None], float | None],
    signals: NDArray[np.float64],
) -> tuple[float | None, dict[str, float]]:
    """The clip of ``grid`` with the largest ``mean_tpr`` (ties: the larger clip, None
    counting as infinite) and the table ``{repr(clip): mean TPR}``; ``(None, {})`` when a
    clip has no pseudo-target to score it (``mean_tpr`` None): then nothing is clipped.

    A clip at or above the largest ``|value|`` of ``signals`` (every value ``mean_tpr``
    reads) changes no value, so its score is None's, computed once: the same floats as
    scoring it again, at a fraction of the cost when the signals are small."""
    table: dict[str, float] = {}
    best: tuple[float, float] | None = None
    chosen: float | None = None
    largest = float(np.abs(signals).max()) if signals.size else 0.0
    scored: dict[float | None, float | None] = {}
    for c in grid:
        acting = c if c is not None and not c >= largest else None  # nan / inf: every clip acts
        if acting not in scored:
            scored[acting] = mean_tpr(acting)
        score = scored[acting]
        if score is None:
            return None, {}
        table[repr(c)] = score
        key = (score, np.inf if c is None else float(c))
        if best is None or key > best:
            best, chosen = key, c
    return chosen, table


def _resolve_clip(
    clip_rule: float | str | None,
    ref: NDArray[np.float64],
    keep: NDArray[np.bool_],
    **tuning: Any,
) -> tuple[float | None, dict[str, Any]]:
    """The clip to use (tuned by :func:`tune_clip` for ``"auto"``) and what to record."""
    if clip_rule != "auto":
        return (None if clip_rule is None else float(clip_rule)), {}
    clip_v, table = tune_clip(ref, keep, **tuning)
    return clip_v, {
        "clip_rule": "auto (leave-one-model-out TPR)"
        if table
        else "auto: too few records to tune, not clipped",
        "clip_tuning_tpr": table,
    }
