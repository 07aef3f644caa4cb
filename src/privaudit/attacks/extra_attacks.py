r"""Attacks users expect beyond Ye et al.: calibrated loss, a learned classifier, label-only.

=====================  ===================================================================
name                   score (higher = member)
=====================  ===================================================================
``calibrated-loss``    Watson, Guo, Cormode and Sablayrolles, "On the Importance of
                       Difficulty Calibration in Membership Inference Attacks" (ICLR 2022),
                       Sec. 3: :math:`s_{cal}(x) = s(\theta, x) - \frac{1}{|O_x|}\sum_{j \in
                       O_x} s(\theta_j, x)`, the target's signal (oriented, default minus the
                       loss) minus its mean over the reference models :math:`O_x` that did
                       not train on x.
``learned``            An attack classifier on several signals (Shokri et al. 2017's attack
                       model, on per-record features): for each (model, record) pair the
                       raw signals and their difficulty-calibrated versions (minus, and
                       standardised by, the record's OUT reference mean and spread); it is
                       trained on the *reference* models' IN/OUT pairs (each pair's
                       statistics from the other OUT reference models), never on the
                       target's membership, and applied to the target.
``label-only``         Choquette-Choo, Tramèr, Carlini and Papernot, "Label-Only Membership
                       Inference Attacks" (ICML 2021), Sec. 4.2: the robustness of the
                       target's predicted label to input noise
                       (:mod:`privaudit.signals.perturb`), a proxy of the record's distance
                       to the decision boundary; reads predicted labels only.
=====================  ===================================================================

Alpha decision. None of these scores is a p-value (``params["score_kind"] ==
"statistic"``): with a requested ``alpha`` the threshold is the conformal quantile of
the same score computed on population records, known non-members of the target
(:func:`~privaudit.attacks.calibration.conformal_threshold`), which holds FPR <= alpha
when the population is exchangeable with the audited non-members; each population
record is scored against a random subset of its OUT reference models of the size an
audited record gets (:func:`~privaudit.attacks.calibration.population_reference_inputs`).
Without population records the attack runs without an alpha decision.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import check_choice, fail
from privaudit.attacks._orient import member_oriented
from privaudit.attacks.base import AttackData, register, require
from privaudit.attacks.calibration import (
    calibrate_threshold,
    out_count_params,
    random_out_subsets,
)
from privaudit.errors import InsufficientDataError

__all__ = ["calibrated_loss_attack", "label_only_attack", "learned_attack"]

Result = tuple[NDArray[Any], NDArray[np.float64], dict[str, Any]]

#: Classifiers of the learned attack.
LEARNED_CLASSIFIERS: tuple[str, ...] = ("logistic", "gradient-boosting")


def _masked_mean_sd(
    values: NDArray[np.float64], mask: NDArray[np.bool_]
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.int64]]:
    """Per column, mean and sample sd of ``values`` where ``mask`` (sd 0 with < 2 values)."""
    n = mask.sum(axis=0).astype(np.int64)
    w = mask.astype(np.float64)
    mean = (values * w).sum(axis=0) / np.maximum(n, 1)
    ss = (((values - mean[None, :]) ** 2) * w).sum(axis=0)
    sd = np.sqrt(ss / np.maximum(n - 1, 1))
    return mean, sd, n


def _population_setup(
    data: AttackData, signals: tuple[str, ...], n_out: NDArray[np.int64], rng: np.random.Generator
) -> tuple[dict[str, NDArray[np.float64]], dict[str, NDArray[np.float64]], NDArray[np.bool_]]:
    """Population records set up like audited ones: one OUT-subset mask for every signal."""
    first = data.table("reference_population", signals[0]).values
    pm = data.reference_population_membership
    out_z = np.ones(first.shape, dtype=bool) if pm is None else ~pm.keep
    sizes = rng.choice(n_out, size=first.shape[1]).astype(np.int64)
    mask, usable = random_out_subsets(out_z, sizes, rng)
    obs = {s: data.table("population_target", s).values[0][usable] for s in signals}
    ref = {s: data.table("reference_population", s).values[:, usable] for s in signals}
    return obs, ref, mask[:, usable]


def _has_population(data: AttackData) -> bool:
    return data.population_target is not None and data.reference_population is not None


def _threshold(
    info: dict[str, Any],
    alpha: float | None,
    calibration: NDArray[np.float64] | None,
    n_out: NDArray[np.int64] | None = None,
) -> dict[str, Any]:
    """The population-calibrated threshold; ``n_out`` are the audited records' OUT counts
    the calibration drew its subset sizes from (:func:`out_count_params`)."""
    info["score_kind"] = "statistic"
    if alpha is None:
        info["threshold_calibration"] = None
        return info
    if calibration is None:
        info["alpha_calibrated"] = False  # run_attack refuses the alpha
        return info
    info["threshold_calibration"] = "population"
    extra = {} if n_out is None else out_count_params(n_out)
    return calibrate_threshold(info, calibration, alpha, **extra)


def _out_mask(data: AttackData) -> NDArray[np.bool_]:
    membership = require(data.reference_membership, "reference_membership")
    mask = ~membership.keep
    few = int((mask.sum(axis=0) < 1).sum())
    if few:
        raise InsufficientDataError(
            f"reference_membership: expected every audited record to have an OUT reference "
            f"model, found {few} without one"
        )
    return mask


_REFERENCE_OPTIONAL = (
    "population_target",
    "reference_population",
    "reference_population_membership",
)


@register(
    "calibrated-loss",
    fields=("target", "reference", "reference_membership"),
    optional_fields=_REFERENCE_OPTIONAL,
    default_signal="loss",
    alpha_threshold=True,
    description="Calibrated loss (Watson et al. 2022): target loss minus the record's mean OUT reference loss",
)
def calibrated_loss_attack(
    data: AttackData,
    *,
    rng: np.random.Generator,
    signal: str = "loss",
    alpha: float | None = None,
) -> Result:
    r"""Difficulty-calibrated score :math:`s(\theta, x) - \bar s_{OUT}(x)` (Watson et al. 2022).

    With the loss, ``score = -(loss_target(x) - mean_{j OUT for x} loss_j(x))``: a record
    the target fits better than models that never saw it is a member.
    """
    mask = _out_mask(data)
    x = member_oriented(signal, data.table("target", signal).values[0])
    ref = member_oriented(signal, data.table("reference", signal).values)
    mean, _, n_out = _masked_mean_sd(ref, mask)
    scores = x - mean
    cal = None
    if alpha is not None and _has_population(data):
        obs, pref, pmask = _population_setup(data, (signal,), n_out, rng)
        pmean, _, _ = _masked_mean_sd(member_oriented(signal, pref[signal]), pmask)
        cal = member_oriented(signal, obs[signal]) - pmean
    info: dict[str, Any] = {
        "n_models": int(mask.shape[0]),
        "min_out_models": int(n_out.min()),
        "reference_models": "out",
    }
    return data.record_ids, scores, _threshold(info, alpha, cal, n_out)


def _features(
    values: dict[str, NDArray[np.float64]],
    ref: dict[str, NDArray[np.float64]],
    mask: NDArray[np.bool_],
    pooled_sd: dict[str, float],
) -> NDArray[np.float64]:
    """(n, 3 * n_signals): per signal the raw value, minus the OUT mean, and standardised.

    The per-record spread is shrunk toward the pooled one (two pseudo-observations at
    ``pooled_sd``), so a record with one OUT model gets the pooled spread.
    """
    cols = []
    for s, v in values.items():
        mean, sd, n = _masked_mean_sd(ref[s], mask)
        dof = np.maximum(n - 1, 0)
        sd = np.sqrt((dof * sd**2 + 2.0 * pooled_sd[s] ** 2) / (dof + 2.0))
        cols += [v, v - mean, (v - mean) / sd]
    return np.stack(cols, axis=1)


def _pooled_sd(ref: NDArray[np.float64], mask: NDArray[np.bool_], floor: float) -> float:
    _, sd, n = _masked_mean_sd(ref, mask)
    ok = n >= 2
    if not ok.any():
        return max(float(np.std(ref[mask])), floor)
    dof = n[ok] - 1
    return max(float(np.sqrt(np.sum(dof * sd[ok] ** 2) / np.sum(dof))), floor)


def _leave_one_out_mask(
    out: NDArray[np.bool_], keep: NDArray[np.bool_], j: int, rng: np.random.Generator
) -> NDArray[np.bool_]:
    """OUT models of each record other than model j, one fewer for records j trained on,
    so that IN and OUT training pairs get statistics from equally many models."""
    others = out.copy()
    others[j] = False
    for i in np.flatnonzero(keep[j] & (others.sum(axis=0) > 0)):
        rows = np.flatnonzero(others[:, i])
        others[rows[rng.integers(rows.size)], i] = False
    return others


def _classifier(kind: str, seed: int) -> Any:
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if kind == "logistic":
        return make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=2000))
    return HistGradientBoostingClassifier(max_iter=100, random_state=seed)


@register(
    "learned",
    fields=("target", "reference", "reference_membership"),
    optional_fields=_REFERENCE_OPTIONAL,
    default_signal="logit_confidence",
    extra_signals=("modified_entropy",),
    alpha_threshold=True,
    description="Attack classifier on several signals, trained on reference models' IN/OUT pairs",
)
def learned_attack(
    data: AttackData,
    *,
    rng: np.random.Generator,
    signal: str = "logit_confidence",
    extra_signals: tuple[str, ...] = ("modified_entropy",),
    classifier: str = "logistic",
    sd_floor: float = 1e-3,
    alpha: float | None = None,
) -> Result:
    """Learned attack: a classifier on per-record features, trained on reference models only.

    Features of a (model, record) pair, per signal (oriented higher = member): the
    value, the value minus the record's mean over OUT reference models, and that
    difference over their spread (shrunk toward the pooled spread, floored at
    ``sd_floor``). Training pairs: every (reference model j, audited record i), label
    ``keep[j, i]``, with the OUT statistics of record i computed from its OUT reference
    models *other than j*, one dropped at random when j trained on i so that IN and OUT
    pairs see equally many models. The target's score is the
    classifier's log-odds on its own features (OUT statistics from every OUT model).
    The target's membership is never read.
    """
    check_choice(classifier, "classifier", LEARNED_CLASSIFIERS)
    sigs = tuple(dict.fromkeys((signal, *extra_signals)))
    membership = require(data.reference_membership, "reference_membership")
    keep = membership.keep
    out = _out_mask(data)
    target = {s: member_oriented(s, data.table("target", s).values[0]) for s in sigs}
    ref = {s: member_oriented(s, data.table("reference", s).values) for s in sigs}
    pooled = {s: _pooled_sd(ref[s], out, sd_floor) for s in sigs}

    X_train, y_train = [], []
    for j in range(keep.shape[0]):
        others = _leave_one_out_mask(out, keep, j, rng)
        ok = others.sum(axis=0) >= 1
        if not ok.any():
            continue
        vals = {s: ref[s][j, ok] for s in sigs}
        X_train.append(_features(vals, {s: ref[s][:, ok] for s in sigs}, others[:, ok], pooled))
        y_train.append(keep[j, ok])
    X = np.concatenate(X_train) if X_train else np.zeros((0, 3 * len(sigs)))
    y = np.concatenate(y_train) if y_train else np.zeros(0, dtype=bool)
    if y.all() or not y.any():
        raise InsufficientDataError(
            "reference_membership: the learned attack needs IN and OUT training pairs "
            "(records with at least 2 OUT reference models)"
        )
    seed = int(rng.integers(0, 2**31 - 1))
    clf = _classifier(classifier, seed).fit(X, y)

    def score(feats: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.asarray(clf.decision_function(feats), dtype=np.float64)

    scores = score(_features(target, ref, out, pooled))
    cal = None
    if alpha is not None and _has_population(data):
        obs, pref, pmask = _population_setup(data, sigs, out.sum(axis=0).astype(np.int64), rng)
        pvals = {s: member_oriented(s, obs[s]) for s in sigs}
        prefs = {s: member_oriented(s, pref[s]) for s in sigs}
        cal = score(_features(pvals, prefs, pmask, pooled))
    info: dict[str, Any] = {
        "n_models": int(keep.shape[0]),
        "signals": list(sigs),
        "classifier": classifier,
        "n_training_pairs": int(y.size),
        "n_training_in_pairs": int(y.sum()),
        "sd_floor": sd_floor,
        "features": ["value", "value - OUT mean", "(value - OUT mean) / OUT sd"],
    }
    return data.record_ids, scores, _threshold(info, alpha, cal, out.sum(axis=0))


@register(
    "label-only",
    fields=("target",),
    optional_fields=("population_target",),
    default_signal="label_robustness",
    signal_choices=("label_robustness",),
    alpha_threshold=True,
    description="Label-only attack (Choquette-Choo et al. 2021): robustness of the predicted label to input noise",
)
def label_only_attack(
    data: AttackData,
    *,
    rng: np.random.Generator,
    signal: str = "label_robustness",
    tie_break: bool = True,
    alpha: float | None = None,
) -> Result:
    """Label-only attack: the target's label robustness (higher = member).

    Threshold at alpha: the conformal quantile of the robustness of the target on
    population records (``population_target``), known non-members.

    The robustness is a fraction of queries (a grid of ``1 / (1 + n_queries)``), so many
    records tie. With ``tie_break`` (default) each score, audited or calibration, gets
    an independent uniform jitter in ``[0, 1e-6)``, far below the grid step: the order
    between different robustness values is kept, and ties are broken at random, which
    makes the threshold decision the randomised test whose FPR is alpha (Neyman-Pearson
    for a discrete statistic), not the conservative one (measured under a null: FPR
    2.3% at alpha 5% without it).
    """
    if signal != "label_robustness":  # pragma: no cover - the registry checks it
        raise fail("signal", "'label_robustness'", repr(signal))

    def jitter(v: NDArray[np.float64]) -> NDArray[np.float64]:
        return v + rng.uniform(0.0, 1e-6, size=v.shape) if tie_break else v.copy()

    scores = jitter(data.table("target", signal).values[0])
    cal = None
    if alpha is not None and data.population_target is not None:
        cal = jitter(data.table("population_target", signal).values[0])
    info: dict[str, Any] = {
        "n_models": 0,
        "access": "predicted labels only",
        "tie_break": bool(tie_break),
    }
    return data.record_ids, scores, _threshold(info, alpha, cal)
