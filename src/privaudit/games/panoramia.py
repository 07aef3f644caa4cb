"""PANORAMIA: audit a released model with generated non-members (Kazmi et al., NeurIPS 2024).

The game (paper Section 3, Definition 2; Algorithm 1), as a composition of steps that a
:class:`Modality` (tabular, image, text, the exact fixture) implements:

1. **Split the known members** ``D_f`` (a subset of the target's training data) into
   ``D_G`` (trains the generator) and ``D_in`` (the audit's members), disjoint, by a
   seeded permutation (:func:`split_members`).
2. **Generator** ``G`` trained on ``D_G`` only; it samples a synthetic pool (ids
   ``synth-000000``, ...) of ``synthetic_per_member * |D_in|`` records, split
   (seeded, disjoint) into a **helper pool** and the **audit pool** ``D_out``.
3. **Helper** ``h``: the target's architecture and recipe trained on the helper pool
   only (Section 5.1: the baseline's loss feature comes from a model trained on
   synthetic data; ``h`` never sees ``D_out``, ``D_in`` or ``D_G``).
4. **Coin-flip test pairs** (Definition 2): ``m = round(test_fraction * |D_in|)``
   members of ``D_in`` are paired with ``m`` records of ``D_out``; an independent fair
   coin ``s_i`` per pair decides which one slot ``i`` shows; the partner that is not
   shown is used nowhere. The other records of ``D_in`` and ``D_out`` train the
   classifiers (``val_fraction`` of each held out for model selection).
5. **Classifiers**: the MIA sees ``(x, loss of f on x)``, the baseline ``(x, loss of h
   on x)``; when the modality has a reference model of the real distribution that saw no
   audit record (``reference_model``: the text generator's LM, trained on ``D_G``), both
   also see its loss on ``x``, so that the MIA's only extra input is the target's loss.
   Each is selected on the validation split by :func:`selection_criterion` (the
   PANORAMIA bound itself at ``beta/2``, ties broken by the validation AUC). They
   differ in nothing else: same training and validation records, same scorer seed
   (:data:`SCORER_PURPOSE`: same initial weights, same batch order; RM;RN's classifier
   too), so that the training noise of ``c_lb`` and ``{c+eps}_lb`` is shared (common
   random numbers) instead of adding up in their difference ``eps_tilde``.
6. **Measurement**: continuous scores on the test slots ->
   :func:`privaudit.audit.panoramia.panoramia_audit` (``c_lb``, ``{c+eps}_lb``,
   ``eps_tilde = max(0, {c+eps}_lb - c_lb)``, the paper's sign), the per-threshold
   curves (:func:`privaudit.audit.panoramia.panoramia_curve`).

Every part of the split is checked (:meth:`PanoramiaSplit.check`: disjoint, ``D_G`` and
``D_in`` subsets of the given members, synthetic ids never real ids, test slots paired
and labelled correctly) and recorded by record id; a violated check raises
:class:`~privaudit.errors.DesignError`, it is never assumed. The defects of the authors'
released code that this runner avoids by construction: ``eps_tilde`` printed negated,
hard 0/1 predictions in place of scores, "members" taken from an unsplit table, the
helper trained on the audit's own non-members, an unseeded generator split overlapping
``D_in``, early stopping keeping the last model instead of the best.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import check_probability, fail
from privaudit.audit._level import resolve_beta
from privaudit.audit.one_run import one_run_audit
from privaudit.audit.panoramia import panoramia_audit, panoramia_curve, panoramia_lb
from privaudit.errors import DesignError
from privaudit.games.metrics import auc
from privaudit.games.panoramia_cache import (
    INFO,
    Arrays,
    PanoramiaSteps,
    dataset_from_arrays,
    dataset_to_arrays,
    info_array,
    read_info,
)
from privaudit.games.panoramia_split import (
    SYNTHETIC_PREFIX,
    PanoramiaSizes,
    PanoramiaSplit,
    RealPairSplit,
    check_synthetic_ids,
    ids_sha256,
    split_members,
)
from privaudit.records import AuditResult, ScoreTable
from privaudit.runtime.seeds import derive_seed

if TYPE_CHECKING:
    from privaudit.runtime.store import ArtifactStore

__all__ = [
    "SCORER_PURPOSE",
    "SYNTHETIC_PREFIX",
    "Modality",
    "PanoramiaResult",
    "PanoramiaSizes",
    "PanoramiaSplit",
    "RealPairSplit",
    "Scorer",
    "ScorerData",
    "check_synthetic_ids",
    "dataset_from_arrays",
    "dataset_to_arrays",
    "ids_sha256",
    "run_panoramia",
    "selection_criterion",
    "split_members",
]

#: ``derive_seed(seed, purpose=SCORER_PURPOSE)`` seeds every classifier of a run (MIA,
#: baseline, RM;RN): common random numbers, so that the MIA and the baseline differ only
#: in whose loss features they see.
SCORER_PURPOSE = "panoramia/scorer"

R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)


# --------------------------------------------------------------------------------------
# sizes, data and the modality protocol (the interfaces of pano_api.md section 2)
# --------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ScorerData(Generic[R]):
    """Records, their loss features (of ``f`` for the MIA, of ``h`` for the baseline), labels."""

    records: R
    loss: NDArray[np.float64]
    label: NDArray[np.bool_]


class Scorer(Protocol[R_co]):
    """A fitted membership classifier; ``score`` is continuous, higher = member."""

    info: dict[str, Any]

    def score(self, records: Any, loss: NDArray[np.float64]) -> NDArray[np.float64]: ...


class Modality(Protocol[R]):
    """What the game needs from one kind of data (pano_api.md section 2).

    ``settings()`` returns JSON-able ``{"generator": {...}, "helper": {...}, "scorer":
    {...}, ...}``; a fitted generator or helper may carry a JSON-able ``info`` dict (fit
    details), merged into the result's ``generator`` / ``helper`` sections. Optional:
    ``example_loss(features) -> (n,)``, one loss per example for the O(1) comparison's
    loss threshold (default: column 0 of the loss features); ``reference_model(generator)
    -> model or None``, a model of the real distribution that saw no audit record (e.g.
    the text generator's LM, trained on ``D_G`` only): when it returns a model, its loss
    features are appended to every classifier's (MIA, baseline, RM;RN), see
    :func:`run_panoramia`.
    """

    name: str

    def ids(self, records: R) -> tuple[str, ...]: ...

    def take(self, records: R, ids: Sequence[str]) -> R: ...

    def concat(self, a: R, b: R) -> R: ...

    def fit_generator(self, records: R, *, seed: int) -> Any: ...

    def sample(self, generator: Any, n: int, *, seed: int) -> R: ...

    def fit_helper(self, records: R, *, seed: int) -> Any: ...

    def loss_features(self, model: Any, records: R) -> NDArray[np.float64]: ...

    def fit_scorer(
        self,
        train: ScorerData[R],
        val: ScorerData[R],
        *,
        seed: int,
        criterion: Callable[[NDArray[np.float64], NDArray[np.bool_]], float],
    ) -> Scorer[R]: ...

    def settings(self) -> dict[str, Any]: ...


# --------------------------------------------------------------------------------------
# model selection and the result
# --------------------------------------------------------------------------------------


def selection_criterion(
    beta: float,
) -> Callable[[NDArray[np.float64], NDArray[np.bool_]], float]:
    """The model-selection criterion: the PANORAMIA bound on the validation split.

    ``panoramia_lb(scores, label, beta_per_test=beta/2)`` (quantile thresholds), rounded
    to 1e-6, plus ``1e-7 * AUC``: lexicographic (bound first, AUC on ties; bounds closer
    than 1e-6 are ties) as one float, so any "higher is better" selector can use it.
    """
    b = check_probability(beta, "beta")

    def criterion(scores: NDArray[np.float64], label: NDArray[np.bool_]) -> float:
        s = np.asarray(scores, dtype=np.float64)
        lab = np.asarray(label, dtype=bool)
        lb, _ = panoramia_lb(s, lab, beta_per_test=b / 2.0)
        return round(lb, 6) + 1e-7 * auc(s, lab)

    return criterion


def _dict_info(obj: Any) -> dict[str, Any]:
    info = getattr(obj, "info", None)
    return dict(info) if isinstance(info, Mapping) else {}


@dataclasses.dataclass(frozen=True)
class PanoramiaResult:
    """The outcome of :func:`run_panoramia`: ``to_dict()`` is results.json's ``panoramia`` section.

    ``scores``: the test slots (record ids, coin ``member``, scores ``"panoramia-mia"``
    and ``"panoramia-baseline"``); ``rmrn_scores`` RM;RN's test slots when run;
    ``audit`` the :class:`~privaudit.records.AuditResult` of ``panoramia_audit``;
    ``split`` every part by record id.
    """

    modality: str
    seed: int
    confidence: float
    sizes: dict[str, int]
    bounds: dict[str, Any]
    comparisons: dict[str, Any]
    curves: dict[str, Any]
    generator: dict[str, Any]
    helper: dict[str, Any]
    classifiers: dict[str, Any]
    split: PanoramiaSplit
    notes: tuple[str, ...]
    scores: ScoreTable
    audit: AuditResult
    rmrn_scores: ScoreTable | None = None
    rmrn_split: RealPairSplit | None = None

    @property
    def eps_tilde(self) -> float:
        return float(self.bounds["eps_tilde"])

    @property
    def c_lb(self) -> float:
        return float(self.bounds["c_lb"])

    @property
    def c_plus_eps_lb(self) -> float:
        return float(self.bounds["c_plus_eps_lb"])

    def to_dict(self) -> dict[str, Any]:
        """JSON-able, with exactly the keys of pano_api.md section 2."""
        return {
            "modality": self.modality,
            "seed": self.seed,
            "confidence": self.confidence,
            "sizes": dict(self.sizes),
            "bounds": self.bounds,
            "comparisons": self.comparisons,
            "curves": self.curves,
            "generator": self.generator,
            "helper": self.helper,
            "classifiers": self.classifiers,
            "split": self.split.record(),
            "notes": list(self.notes),
        }


NOTES = (
    "eps_tilde = max(0, {c+eps}_lb - c_lb) is a lower bound on eps only if c_lb is tight "
    "(Kazmi et al. 2024, Section 4.2).",
    "Member guesses only; beta/2 per test (Corollary 1), then a union bound over the same "
    "L = min(100, m) score-quantile thresholds for every compared method.",
    "Each test slot shows a real member or a generated record by an independent fair coin "
    "(Definition 2); scores are the classifiers' continuous outputs.",
)


# --------------------------------------------------------------------------------------
# the runner
# --------------------------------------------------------------------------------------


def _labels(n_pos: int, n_neg: int) -> NDArray[np.bool_]:
    return np.r_[np.ones(n_pos, dtype=bool), np.zeros(n_neg, dtype=bool)]


Pair = tuple[Sequence[str], Sequence[str]]
_PARTS = ("train", "val", "test")
Labels = tuple[NDArray[np.bool_], NDArray[np.bool_], NDArray[np.bool_]]


def _classifier_records(
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
class _RealComparison:
    rmrn: dict[str, Any]
    o1: dict[str, Any]
    curve: dict[str, list[float]]
    classifier: dict[str, Any]
    scores: ScoreTable
    split: RealPairSplit


def _compare_real(
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
) -> _RealComparison:
    """RM;RN and O(1) on the same target (Kazmi et al. 2024, Section 5.2).

    RM;RN: the MIA pipeline (x + loss of f, the same scorer and selection) with real
    non-members in place of generated ones; ``c = 0``, so one test at ``beta`` over the
    same quantile thresholds (``panoramia_lb(..., beta_per_test=beta)``). O(1) (Steinke
    et al. 2023): a loss threshold of the target on the same coin-flip slots, two-sided
    guesses, ``one_run_audit(selection="union-bound")`` (the search over guess counts
    paid by a union bound). RM;RN's classifier sees the reference's loss features too, when
    the MIA does (``reference``, :func:`_reference_losses`); O(1) reads the target's loss only.
    """
    modality = steps.modality
    nm_ids = modality.ids(non_members)
    rs = RealPairSplit.build(d_in, nm_ids, sizes, seed=seed)

    (tr, va, te), (y_tr, y_va, y_te) = _classifier_records(
        modality,
        members,
        non_members,
        train=(rs.train_members, rs.train_non_members),
        val=(rs.val_members, rs.val_non_members),
        test_pool=(rs.members, rs.non_members),
        test_ids=rs.test_ids,
        test_member=rs.test_member,
    )
    records, labels = (tr, va, te), (y_tr, y_va, y_te)
    own = _losses(modality, target, records, labels, "rmrn")
    loss = _with_reference(own, reference(records, labels, "rmrn"))
    sc, classifier = steps.scores(
        "rmrn",
        *(ScorerData(r, loss[p], y) for p, r, y in zip(_PARTS, records, labels, strict=True)),
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
    return _RealComparison(
        rmrn=rmrn,
        o1=o1,
        curve=panoramia_curve(sc, y_te, beta_per_test=beta),
        classifier=classifier,
        scores=table,
        split=rs,
    )


def _samples(
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
        return modality.sample(generator, n, seed=sample_seed), _dict_info(generator)

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
        for name, rec, lab in zip(_PARTS, records, labels, strict=True)
    }


def _reference_losses(
    steps: PanoramiaSteps[R],
    members: R,
    d_g: Sequence[str],
    *,
    seed: int,
    settings: Mapping[str, Any],
) -> Callable[[Sequence[R], Labels, str], Arrays | None]:
    """The shared side features: ``records, labels, who -> `` the loss features of the
    modality's ``reference_model(G)`` on those records, or ``None`` when the modality has
    none. G is fitted on ``D_G`` with the seed of :func:`_samples` (a modality that
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


def _with_reference(losses: Arrays, reference: Arrays | None) -> Arrays:
    """``losses`` with the reference's columns appended (the model's own columns first:
    column 0 stays the per-example loss O(1) reads)."""
    if reference is None:
        return losses
    return {
        name: np.hstack([np.asarray(losses[name]), np.asarray(reference[name])]) for name in _PARTS
    }


def _helper_losses(
    steps: PanoramiaSteps[R],
    helper_rec: R,
    records: Sequence[R],
    labels: Labels,
    *,
    seed: int,
    settings: Mapping[str, Any],
) -> tuple[Arrays, dict[str, Any]]:
    """The helper (the target's recipe on the helper pool only) and its loss features on
    the classifier records, cached as those features (the helper's only use)."""
    modality = steps.modality
    helper_seed = derive_seed(seed, purpose="panoramia/helper")

    def make() -> Arrays:
        helper = modality.fit_helper(helper_rec, seed=helper_seed)
        out = _losses(modality, helper, records, labels, "baseline")
        return {**out, INFO: info_array(_dict_info(helper))}

    key = {
        "step": "panoramia/helper-losses",
        "modality": modality.name,
        "helper": settings.get("helper"),
        "helper_pool": steps.fingerprint(helper_rec),
        "seed": helper_seed,
        "records": [steps.fingerprint(r) for r in records],
    }
    out = steps.run(key, make)
    return out, read_info(out)


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
        for name, rec, lab in zip(_PARTS, records, labels, strict=True)
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


def _classifier_scores(
    steps: PanoramiaSteps[R],
    target: Any,
    helper_pool: R,
    records: Sequence[R],
    labels: Labels,
    *,
    seed: int,
    criterion: Callable[[NDArray[np.float64], NDArray[np.bool_]], float],
    beta: float,
    settings: Mapping[str, Any],
    reference: Arrays | None,
) -> tuple[dict[str, NDArray[np.float64]], dict[str, Any], dict[str, Any]]:
    """Steps 4-5: the helper on the helper pool only (cached as its loss features) and the
    target's loss features; the MIA (target's) and the baseline (helper's), each selected on
    validation by ``criterion`` with the one scorer seed. Returns their test scores, their
    selection records and the helper's record. With ``reference`` (the reference model's
    loss features on the same records) both classifiers see it after their own features, so
    the MIA's only extra input is the target's loss."""
    helper_losses, helper_info = _helper_losses(
        steps, helper_pool, records, labels, seed=seed, settings=settings
    )
    target_losses = _losses(steps.modality, target, records, labels, "mia")
    test_scores: dict[str, NDArray[np.float64]] = {}
    classifiers: dict[str, Any] = {}
    for role, losses in (("mia", target_losses), ("baseline", helper_losses)):
        test_scores[role], classifiers[role] = _scores(
            steps, role, records, labels, _with_reference(losses, reference),
            seed=seed, criterion=criterion, beta=beta, settings=settings,
        )  # fmt: skip
    return test_scores, classifiers, helper_info


def _measure(
    test_scores: Mapping[str, NDArray[np.float64]], y_test: NDArray[np.bool_], beta: float
) -> tuple[AuditResult, dict[str, Any], dict[str, Any]]:
    """``panoramia_audit`` of the test slots, the ``bounds`` section and the curves."""
    audit = panoramia_audit(test_scores["mia"], test_scores["baseline"], y_test, beta=beta)
    _, info_mia = panoramia_lb(test_scores["mia"], y_test, beta_per_test=beta / 2)
    _, info_base = panoramia_lb(test_scores["baseline"], y_test, beta_per_test=beta / 2)
    bounds = {
        "c_lb": float(audit.extra["c_lower_bound"]),
        "c_plus_eps_lb": float(audit.extra["c_plus_epsilon_lower_bound"]),
        "eps_tilde": float(audit.extra["epsilon_tilde"]),
        "n_thresholds": int(info_mia["n_thresholds"]),
        "beta_per_threshold": float(info_mia["beta_per_threshold"]),
        "mia": {"r": int(info_mia["r"]), "v": int(info_mia["v"])},
        "baseline": {"r": int(info_base["r"]), "v": int(info_base["v"])},
    }
    curves: dict[str, Any] = {
        role: panoramia_curve(test_scores[role], y_test, beta_per_test=beta / 2)
        for role in ("mia", "baseline")
    }
    return audit, bounds, curves


def _result_sizes(n_known: int, split: PanoramiaSplit, labels: Labels) -> dict[str, int]:
    """The ``sizes`` section."""
    y_train, y_val, y_test = labels
    n_test_members = int(y_test.sum())
    return {
        "n_known_members": n_known,
        "n_generator_train": len(split.generator),
        "n_audit_members": len(split.members),
        "n_synthetic": len(split.synthetic),
        "n_helper_pool": len(split.helper_pool),
        "n_audit_synthetic": len(split.audit_synthetic),
        "n_classifier_train": int(y_train.size),
        "n_validation": int(y_val.size),
        "m": int(y_test.size),
        "n_test_members": n_test_members,
        "n_test_synthetic": int(y_test.size) - n_test_members,
    }


def _section(
    settings: Mapping[str, Any], name: str, info: Mapping[str, Any], **counts: int
) -> dict[str, Any]:
    """The result's ``generator`` / ``helper`` section: the modality's settings, the
    counts of records, then the fitted model's own record."""
    return {**dict(settings.get(name, {})), **counts, **info}


def run_panoramia(
    modality: Modality[R],
    target: Any,
    members: R,
    *,
    non_members: R | None = None,
    sizes: PanoramiaSizes = PanoramiaSizes(),
    seed: int,
    confidence: float = 0.95,
    store: ArtifactStore | None = None,
) -> PanoramiaResult:
    """Run the PANORAMIA game on ``target`` (Kazmi et al. 2024, Algorithm 1; module docstring).

    Parameters
    ----------
    modality : Modality
        The data kind's steps (generator, helper, loss features, scorers).
    target : object
        Whatever ``modality.loss_features(target, records)`` accepts.
    members : records
        KNOWN members of the target (a subset of its training data).
    non_members : records, optional
        Real records NOT in the target's training data: RM;RN and O(1) run on the same
        target (``comparisons``, ``curves["rmrn"]``, ``rmrn_scores``), on coin-flip pairs
        of ``D_in`` members and these (:class:`RealPairSplit`).
    sizes : PanoramiaSizes
    seed : int
        Drives every split, the generator, the helper and the scorers
        (``derive_seed(seed, purpose=...)``): same inputs and seed, same numbers.
    confidence : float
        ``1 - beta`` of the measurement (``beta/2`` per test, Corollary 1).
    store : ArtifactStore, optional
        Cache the samples, the helper's loss features and the scorers' outputs by
        content (:class:`PanoramiaSteps`), so a killed run resumes; the modality must then have
        ``records_to_arrays`` / ``records_from_arrays``.
    """
    steps = PanoramiaSteps(modality, store)
    beta = resolve_beta(None, confidence)
    member_ids = modality.ids(members)
    if len(set(member_ids)) != len(member_ids):
        raise fail("members", "unique record ids", "duplicates")
    nm_ids = modality.ids(non_members) if non_members is not None else ()
    settings = modality.settings()

    # 1-2. D_G / D_in; the generator on D_G only and the synthetic pool; the split
    d_g, d_in = split_members(member_ids, sizes, seed=seed)
    n_synth = round(sizes.synthetic_per_member * len(d_in))
    synth, generator_info = _samples(steps, members, d_g, n_synth, seed=seed, settings=settings)
    synth_ids = modality.ids(synth)
    check_synthetic_ids(synth_ids, n_synth, set(member_ids) | set(nm_ids))
    split = PanoramiaSplit.build(
        member_ids, d_g, d_in, synth_ids, sizes, seed=seed, non_members=nm_ids
    )

    # 3. classifier data
    records, labels = _classifier_records(
        modality,
        members,
        synth,
        train=(split.train_members, split.train_synthetic),
        val=(split.val_members, split.val_synthetic),
        test_pool=(split.members, split.audit_synthetic),
        test_ids=split.test_ids,
        test_member=split.test_member,
    )
    y_test = labels[2]
    criterion = selection_criterion(beta)

    # 4-5. the helper's, the target's and the reference's losses; the classifiers (cached
    # as their scores)
    reference = _reference_losses(steps, members, d_g, seed=seed, settings=settings)
    test_scores, classifiers, helper_info = _classifier_scores(
        steps, target, modality.take(synth, split.helper_pool), records, labels,
        seed=seed, criterion=criterion, beta=beta, settings=settings,
        reference=reference(records, labels, "classifier"),
    )  # fmt: skip

    # 6. measurement, and the comparisons on the same target
    audit, bounds, curves = _measure(test_scores, y_test, beta)
    real = None if non_members is None else _compare_real(
        steps, target, members, non_members, split.members, sizes,
        seed=seed, beta=beta, criterion=criterion, scorer_settings=settings.get("scorer"),
        reference=reference,
    )  # fmt: skip
    comparisons = {
        "rmrn": None if real is None else real.rmrn,
        "o1": None if real is None else real.o1,
    }
    classifiers["rmrn"] = None if real is None else real.classifier
    if real is not None:
        curves["rmrn"] = real.curve
    table = ScoreTable(
        record_ids=np.asarray(split.test_ids),
        member=y_test,
        scores={f"panoramia-{role}": sc for role, sc in test_scores.items()},
    )
    return PanoramiaResult(
        modality=modality.name,
        seed=int(seed),
        confidence=1.0 - beta,
        sizes=_result_sizes(len(member_ids), split, labels),
        bounds=bounds,
        comparisons=comparisons,
        curves=curves,
        generator=_section(
            settings,
            "generator",
            generator_info,
            n_train=len(split.generator),
            n_sampled=len(split.synthetic),
        ),
        helper=_section(settings, "helper", helper_info, n_train=len(split.helper_pool)),
        classifiers=classifiers,
        split=split,
        notes=NOTES,
        scores=table,
        audit=audit,
        rmrn_scores=None if real is None else real.scores,
        rmrn_split=None if real is None else real.split,
    )
