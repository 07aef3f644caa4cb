"""The steps of the PANORAMIA game (Kazmi et al. 2024, Algorithm 1) that
:func:`privaudit.panoramia.game.run_panoramia` composes, and the interfaces they call.

* the steps, each seeded with ``derive_seed(seed, purpose=...)`` and, where costly, run
  through :class:`~privaudit.panoramia.cache.PanoramiaSteps` (cache and resume):
  :func:`generated_samples` (G on ``D_G`` only, the synthetic pool),
  :func:`classifier_records` (train / validation / test records and labels),
  :func:`reference_losses` (the loss features of a reference model of the real
  distribution that saw no audit record, appended to every classifier's),
  :func:`helper_losses` (h on the helper pool only, its loss features on any record set),
  :func:`classifier_scores` (the target's and the helper's loss features, the MIA and the
  baseline with one scorer seed), :func:`compare_real` (RM;RN and O(1) on the
  same target, with real non-members).

What a data kind implements (:class:`~privaudit.panoramia.modality.Modality`,
:class:`~privaudit.panoramia.modality.Scorer`,
:class:`~privaudit.panoramia.modality.ScorerData`; re-exported here) is in
:mod:`privaudit.panoramia.modality`. The game, its result and the measurement are in
:mod:`privaudit.panoramia.game`.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

import numpy as np
from numpy.typing import NDArray

from privaudit.errors import DesignError
from privaudit.panoramia.cache import (
    INFO,
    Arrays,
    PanoramiaSteps,
    info_array,
    read_info,
)
from privaudit.panoramia.modality import Modality, Scorer, ScorerData
from privaudit.panoramia.split import PanoramiaSizes, RealPairSplit
from privaudit.records import ScoreTable
from privaudit.runtime.mapping import InlineMapper, Mapper
from privaudit.runtime.seeds import derive_seed
from privaudit.stats.one_run import one_run_audit
from privaudit.stats.panoramia import panoramia_curve, panoramia_lb

__all__ = [
    "PARTS",
    "SCORER_PURPOSE",
    "HelperLosses",
    "Labels",
    "Modality",
    "RealComparison",
    "Scorer",
    "ScorerData",
    "classifier_records",
    "classifier_scores",
    "compare_real",
    "dict_info",
    "generated_samples",
    "helper_losses",
    "reference_losses",
]

#: ``derive_seed(seed, purpose=SCORER_PURPOSE)`` seeds every classifier of a run (MIA,
#: baseline, RM;RN): common random numbers, so that the MIA and the baseline differ only
#: in whose loss features they see.
SCORER_PURPOSE = "panoramia/scorer"

R = TypeVar("R")
R_contra = TypeVar("R_contra", contravariant=True)


def dict_info(obj: Any) -> dict[str, Any]:
    info = getattr(obj, "info", None)
    return dict(info) if isinstance(info, Mapping) else {}


def _labels(n_pos: int, n_neg: int) -> NDArray[np.bool_]:
    return np.r_[np.ones(n_pos, dtype=bool), np.zeros(n_neg, dtype=bool)]


Pair = tuple[Sequence[str], Sequence[str]]
PARTS = ("train", "val", "test")
Labels = tuple[NDArray[np.bool_], NDArray[np.bool_], NDArray[np.bool_]]


def classifier_records(
    modality: Modality[R],
    real: R,
    other: R,
    *,
    train: Pair,
    val: Pair,
    test_pool: Pair,
    test_ids: Sequence[str],
    test_member: Sequence[bool],
) -> tuple[tuple[R, R, R], tuple[NDArray[np.bool_], NDArray[np.bool_], NDArray[np.bool_]]]:
    """The classifiers' (train, validation, test) records and labels.

    Each pair is ``(ids of real members, ids of the other side)`` (generated records for
    PANORAMIA, real non-members for RM;RN); train and validation hold the members first
    (label True), the test records are the coin-flip slots in their order.
    """

    def part(pair: Pair) -> R:
        return modality.concat(modality.take(real, pair[0]), modality.take(other, pair[1]))

    records = (part(train), part(val), modality.take(part(test_pool), test_ids))
    labels = (
        _labels(len(train[0]), len(train[1])),
        _labels(len(val[0]), len(val[1])),
        np.asarray(test_member, dtype=bool),
    )
    return records, labels


def _loss(modality: Modality[R], model: Any, records: R, n: int, who: str) -> NDArray[np.float64]:
    a = np.asarray(modality.loss_features(model, records), dtype=np.float64)
    if a.ndim == 1:
        a = a[:, None]
    if a.ndim != 2 or a.shape[0] != n or not np.all(np.isfinite(a)):
        raise DesignError(f"{who}: expected ({n}, k) finite loss features, found {a.shape}")
    return a


def _example_loss(modality: Modality[Any], loss: NDArray[np.float64]) -> NDArray[np.float64]:
    """One loss per example for O(1): ``modality.example_loss(features)`` or column 0."""
    fn = getattr(modality, "example_loss", None)
    out = fn(loss) if callable(fn) else loss[:, 0]
    return np.asarray(out, dtype=np.float64).ravel()


@dataclasses.dataclass(frozen=True)
class RealComparison:
    rmrn: dict[str, Any]
    o1: dict[str, Any]
    curve: dict[str, list[float]]
    classifier: dict[str, Any]
    scores: ScoreTable
    split: RealPairSplit


def compare_real(
    steps: PanoramiaSteps[R],
    target: Any,
    members: R,
    non_members: R,
    d_in: Sequence[str],
    sizes: PanoramiaSizes,
    *,
    seed: int,
    beta: float,
    criterion: Callable[[NDArray[np.float64], NDArray[np.bool_]], float],
    scorer_settings: Any,
    reference: Callable[[Sequence[R], Labels, str], Arrays | None],
    helper: HelperLosses[R] | None = None,
    documents: Mapping[str, str] | None = None,
) -> RealComparison:
    """RM;RN and O(1) on the same target (Kazmi et al. 2024, Section 5.2).

    RM;RN: the MIA pipeline (x + loss of f, the same scorer and selection) with real
    non-members in place of generated ones; ``c = 0``, so one test at ``beta`` over the
    same quantile thresholds (``panoramia_lb(..., beta_per_test=beta)``). O(1) (Steinke
    et al. 2023): a loss threshold of the target on the same coin-flip slots, two-sided
    guesses, ``one_run_audit(selection="union-bound")`` (the search over guess counts
    paid by a union bound). RM;RN's classifier reads what the MIA reads, in its order: the
    helper's loss features when ``helper`` is given (the MIA reads the helper,
    :func:`classifier_scores`), then the reference's (:func:`reference_losses`); O(1)
    reads the target's loss only. ``documents`` (record id -> document): the split is by
    document (:class:`RealPairSplit`).
    """
    modality = steps.modality
    nm_ids = modality.ids(non_members)
    rs = RealPairSplit.build(d_in, nm_ids, sizes, seed=seed, documents=documents)

    records, labels = classifier_records(
        modality,
        members,
        non_members,
        train=(rs.train_members, rs.train_non_members),
        val=(rs.val_members, rs.val_non_members),
        test_pool=(rs.members, rs.non_members),
        test_ids=rs.test_ids,
        test_member=rs.test_member,
    )
    y_te = labels[2]
    own = _losses(modality, target, records, labels, "rmrn")
    loss = own if helper is None else _appended(own, helper(records, labels, "rmrn helper")[0])
    loss = _appended(loss, reference(records, labels, "rmrn"))
    sc, classifier = steps.scores(
        "rmrn",
        *(ScorerData(r, loss[p], y) for p, r, y in zip(PARTS, records, labels, strict=True)),
        seed=derive_seed(seed, purpose=SCORER_PURPOSE),
        criterion=criterion,
        beta=beta,
        scorer_settings=scorer_settings,
    )
    eps, info = panoramia_lb(sc, y_te, beta_per_test=beta)
    rmrn = {
        "eps_lb": float(eps),
        "m": int(y_te.size),
        "n_test_members": int(y_te.sum()),
        "r": int(info["r"]),
        "v": int(info["v"]),
        "n_thresholds": int(info["n_thresholds"]),
        "beta_per_threshold": float(info["beta_per_threshold"]),
        **({"n_withheld": len(rs.withheld_ids)} if documents is not None else {}),
    }
    o1_res = one_run_audit(
        -_example_loss(modality, own["test"]), y_te, beta=beta, selection="union-bound"
    )
    o1 = {
        "eps_lb": float(o1_res.epsilon_lower_bound),
        "m": int(o1_res.counts["m"]),
        "k_pos": int(o1_res.counts["k_pos"]),
        "k_neg": int(o1_res.counts["k_neg"]),
        "r": int(o1_res.counts["r"]),
        "v": int(o1_res.counts["v"]),
        "selection": o1_res.threshold_selection,
    }
    table = ScoreTable(record_ids=np.asarray(rs.test_ids), member=y_te, scores={"rmrn-mia": sc})
    return RealComparison(
        rmrn=rmrn,
        o1=o1,
        curve=panoramia_curve(sc, y_te, beta_per_test=beta),
        classifier=classifier if helper is None else {**classifier, "reads_helper": True},
        scores=table,
        split=rs,
    )


def generated_samples(
    steps: PanoramiaSteps[R],
    members: R,
    d_g: Sequence[str],
    n: int,
    *,
    seed: int,
    settings: Mapping[str, Any],
) -> tuple[R, dict[str, Any]]:
    """The generator fitted on ``D_G`` only and ``n`` records sampled from it (cached as
    the samples, its only use), with the generator's fit record."""
    modality = steps.modality
    d_g_rec = modality.take(members, d_g)
    gen_seed = derive_seed(seed, purpose="panoramia/generator")
    sample_seed = derive_seed(seed, purpose="panoramia/generator-sample")

    def make() -> tuple[R, dict[str, Any]]:
        generator = modality.fit_generator(d_g_rec, seed=gen_seed)
        return modality.sample(generator, n, seed=sample_seed), dict_info(generator)

    key = {
        "step": "panoramia/samples",
        "modality": modality.name,
        "generator": settings.get("generator"),
        "d_g": steps.fingerprint(d_g_rec),
        "n": n,
        "seeds": [gen_seed, sample_seed],
    }
    return steps.records(key, make)


def _losses(
    modality: Modality[R], model: Any, records: Sequence[R], labels: Labels, who: str
) -> Arrays:
    """``model``'s loss features on the classifier records (train, val, test)."""
    return {
        name: _loss(modality, model, rec, lab.size, f"{who} loss ({name})")
        for name, rec, lab in zip(PARTS, records, labels, strict=True)
    }


def reference_losses(
    steps: PanoramiaSteps[R],
    members: R,
    d_g: Sequence[str],
    *,
    seed: int,
    settings: Mapping[str, Any],
) -> Callable[[Sequence[R], Labels, str], Arrays | None]:
    """The shared side features: ``records, labels, who -> `` the loss features of the
    modality's ``reference_model(G)`` on those records, or ``None`` when the modality has
    none. G is fitted on ``D_G`` with the seed of :func:`generated_samples` (a modality that
    memoises G, like the text one, fits it once); cached like the helper's features."""
    modality = steps.modality
    reference_model = getattr(modality, "reference_model", None)
    gen_seed = derive_seed(seed, purpose="panoramia/generator")
    d_g_rec = modality.take(members, d_g)

    def losses(records: Sequence[R], labels: Labels, who: str) -> Arrays | None:
        if not callable(reference_model):
            return None

        def make() -> Arrays:
            model = reference_model(modality.fit_generator(d_g_rec, seed=gen_seed))
            if model is None:
                return {}
            return _losses(modality, model, records, labels, f"{who} reference")

        key = {
            "step": "panoramia/reference-losses",
            "modality": modality.name,
            "generator": settings.get("generator"),
            "reference": settings.get("reference"),
            "d_g": steps.fingerprint(d_g_rec),
            "seed": gen_seed,
            "records": [steps.fingerprint(r) for r in records],
        }
        out = steps.run(key, make)
        return out if out else None

    return losses


def _appended(losses: Arrays, extra: Arrays | None) -> Arrays:
    """``losses`` with ``extra``'s columns (another model's loss features on the same
    records) appended: the model's own columns first, so column 0 stays the per-example loss
    O(1) reads."""
    if extra is None:
        return losses
    return {name: np.hstack([np.asarray(losses[name]), np.asarray(extra[name])]) for name in PARTS}


class HelperLosses(Protocol[R_contra]):
    """What :func:`helper_losses` returns: ``helper(records, labels, who, keep=False)`` ->
    the helper's loss features on ``records`` and its record."""

    def __call__(
        self, records: Sequence[R_contra], labels: Labels, who: str, *, keep: bool = False
    ) -> tuple[Arrays, dict[str, Any]]: ...


def helper_losses(
    steps: PanoramiaSteps[R],
    helper_rec: R,
    *,
    seed: int,
    settings: Mapping[str, Any],
) -> HelperLosses[R]:
    """The helper h (the target's recipe on the helper pool only) as ``records, labels,
    who, keep=False -> `` its loss features on those records and its record, cached as
    those features (the helper's only use). h is fitted at the first call that misses the
    cache and dropped after it unless ``keep`` (a later call needs it: RM;RN's records when
    the MIA reads the helper), so one h serves every record set of a run."""
    modality = steps.modality
    helper_seed = derive_seed(seed, purpose="panoramia/helper")
    fitted: list[Any] = []

    def losses(
        records: Sequence[R], labels: Labels, who: str, *, keep: bool = False
    ) -> tuple[Arrays, dict[str, Any]]:
        def make() -> Arrays:
            if not fitted:
                fitted.append(modality.fit_helper(helper_rec, seed=helper_seed))
            out = _losses(modality, fitted[0], records, labels, who)
            return {**out, INFO: info_array(dict_info(fitted[0]))}

        key = {
            "step": "panoramia/helper-losses",
            "modality": modality.name,
            "helper": settings.get("helper"),
            "helper_pool": steps.fingerprint(helper_rec),
            "seed": helper_seed,
            "records": [steps.fingerprint(r) for r in records],
        }
        out = steps.run(key, make)
        if not keep:
            fitted.clear()
        return out, read_info(out)

    return losses


def _scores(
    steps: PanoramiaSteps[R],
    role: str,
    records: Sequence[R],
    labels: Labels,
    losses: Arrays,
    *,
    seed: int,
    criterion: Callable[[NDArray[np.float64], NDArray[np.bool_]], float],
    beta: float,
    settings: Mapping[str, Any],
) -> tuple[NDArray[np.float64], dict[str, Any]]:
    """``role``'s classifier (records + these loss features), selected on validation by
    ``criterion``: its continuous scores on the test slots and its selection record.
    Every role gets the same seed (:data:`SCORER_PURPOSE`, common random numbers)."""
    train, val, test = (
        ScorerData(rec, np.asarray(losses[name]), lab)
        for name, rec, lab in zip(PARTS, records, labels, strict=True)
    )
    return steps.scores(
        role,
        train,
        val,
        test,
        seed=derive_seed(seed, purpose=SCORER_PURPOSE),
        criterion=criterion,
        beta=beta,
        scorer_settings=settings.get("scorer"),
    )


def _role_scores(
    steps: PanoramiaSteps[R],
    records: Sequence[R],
    labels: Labels,
    reference: Arrays | None,
    role_losses: tuple[str, Arrays],
    **kw: Any,
) -> tuple[NDArray[np.float64], dict[str, Any]]:
    """One executor task of :func:`classifier_scores`: ``role``'s classifier."""
    role, losses = role_losses
    return _scores(steps, role, records, labels, _appended(losses, reference), **kw)


def classifier_scores(
    steps: PanoramiaSteps[R],
    target: Any,
    helper: HelperLosses[R],
    records: Sequence[R],
    labels: Labels,
    *,
    seed: int,
    criterion: Callable[[NDArray[np.float64], NDArray[np.bool_]], float],
    beta: float,
    settings: Mapping[str, Any],
    reference: Arrays | None,
    mia_reads_helper: bool = False,
    keep_helper: bool = False,
    executor: Mapper | None = None,
) -> tuple[dict[str, NDArray[np.float64]], dict[str, Any], dict[str, Any]]:
    """Steps 4-5: the helper's loss features (:func:`helper_losses`; ``keep_helper``: h is
    kept for a later record set) and the target's; the MIA (target's) and the baseline (helper's), each selected on
    validation by ``criterion`` with the one scorer seed. Returns their test scores, their
    selection records and the helper's record. With ``reference`` (the reference model's
    loss features on the same records) both classifiers see it after their own features, so
    the MIA's only extra input is the target's loss. With ``mia_reads_helper`` the MIA also
    reads the helper's features (after the target's): its inputs then hold all of the
    baseline's, so it is at least as strong a detector of generated records and eps_tilde
    measures what the target's loss adds to them. The two classifiers are independent
    given their loss features: ``executor`` runs them as two tasks (default: here, one
    after the other; the same numbers either way)."""
    helper_losses, helper_info = helper(records, labels, "baseline", keep=keep_helper)
    target_losses = _losses(steps.modality, target, records, labels, "mia")
    if mia_reads_helper:
        target_losses = _appended(target_losses, helper_losses)
    task = functools.partial(
        _role_scores, steps, records, labels, reference,
        seed=seed, criterion=criterion, beta=beta, settings=settings,
    )  # fmt: skip
    roles = [("mia", target_losses), ("baseline", helper_losses)]
    mapper = executor if executor is not None else InlineMapper(progress=False)
    outs = mapper.map(task, roles, desc="PANORAMIA classifiers", label=lambda r: r[0])
    test_scores = {role: out[0] for (role, _), out in zip(roles, outs, strict=True)}
    classifiers = {role: out[1] for (role, _), out in zip(roles, outs, strict=True)}
    if mia_reads_helper:
        classifiers["mia"] = {**classifiers["mia"], "reads_helper": True}
    return test_scores, classifiers, helper_info
