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
   :func:`privaudit.stats.panoramia.panoramia_audit` (``c_lb``, ``{c+eps}_lb``,
   ``eps_tilde = max(0, {c+eps}_lb - c_lb)``, the paper's sign), the per-threshold
   curves (:func:`privaudit.stats.panoramia.panoramia_curve`).

**Documents** (text chunks; the modality's optional ``documents(records)``): when a
document holds several known members or real non-members, the unit of every split is the
document (:mod:`privaudit.panoramia.split`): ``D_G``, the classifiers' training and
validation records and the test slots are unions of whole documents, each test document
shows one of its records (seeded draw) and its other records are used nowhere, so ``m``
counts documents; a document holding both known members and real non-members is refused.
Otherwise a classifier that saw other chunks of a slot's document recognises the document,
not membership, and Props. 1-2 fail (``c_lb``, ``{c+eps}_lb`` and RM;RN's bound exceed 0
most of the time at ``c = eps = 0``).

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
import functools
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import check_probability, fail
from privaudit.errors import DesignError
from privaudit.metrics.roc import auc
from privaudit.panoramia.cache import (
    PanoramiaSteps,
    dataset_from_arrays,
    dataset_to_arrays,
)
from privaudit.panoramia.modality import Modality, Scorer, ScorerData
from privaudit.panoramia.split import (
    SYNTHETIC_PREFIX,
    PanoramiaSizes,
    PanoramiaSplit,
    RealPairSplit,
    check_synthetic_ids,
    document_overlap,
    ids_sha256,
    split_members,
)
from privaudit.panoramia.steps import (
    SCORER_PURPOSE,
    Labels,
    RealComparison,
    classifier_records,
    classifier_scores,
    compare_real,
    generated_samples,
    helper_losses,
    reference_losses,
)
from privaudit.records import AuditResult, ScoreTable
from privaudit.runtime.mapping import Mapper
from privaudit.runtime.progress import ProgressOption, progress_phase
from privaudit.stats._level import resolve_beta
from privaudit.stats.panoramia import (
    panoramia_audit,
    panoramia_cap,
    panoramia_curve,
    panoramia_lb,
)

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

R = TypeVar("R")


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
    # a partial of a module function: picklable, so the classifiers can run in processes
    return functools.partial(_criterion, beta=b)


def _criterion(scores: NDArray[np.float64], label: NDArray[np.bool_], *, beta: float) -> float:
    s = np.asarray(scores, dtype=np.float64)
    lab = np.asarray(label, dtype=bool)
    lb, _ = panoramia_lb(s, lab, beta_per_test=beta / 2.0)
    return round(lb, 6) + 1e-7 * auc(s, lab)


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
        "cap": panoramia_cap(y_test, beta_per_test=beta / 2),
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


def _result_sizes(
    n_known: int, split: PanoramiaSplit, labels: Labels, documents: Documents
) -> dict[str, int]:
    """The ``sizes`` section (by document: also the documents behind each part)."""
    y_train, y_val, y_test = labels
    n_test_members = int(y_test.sum())
    by_doc: dict[str, int] = {}
    if documents is not None:
        doc = documents

        def ndocs(ids: Sequence[str]) -> int:
            return len({doc[i] for i in ids})

        by_doc = {
            "n_known_documents": ndocs(split.known_members),
            "n_generator_documents": ndocs(split.generator),
            "n_audit_documents": ndocs(split.members),
            "n_classifier_train_documents": ndocs(split.train_members),
            "n_validation_documents": ndocs(split.val_members),
            "n_test_documents": int(y_test.size),
            "n_withheld": len(split.withheld_ids),
        }
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
        **by_doc,
    }


Documents = dict[str, str] | None


def _documents(
    modality: Modality[R],
    members: R,
    member_ids: Sequence[str],
    non_members: R | None,
    nm_ids: Sequence[str],
) -> Documents:
    """Record id -> document of the known members and real non-members, from the modality's
    optional ``documents(records)``; None (every record its own document: the record-level
    game) without it or when no document holds two of these records."""
    fn = getattr(modality, "documents", None)
    if not callable(fn):
        return None
    out: dict[str, str] = {}
    for what, records, ids in (
        ("members", members, member_ids),
        ("non_members", non_members, nm_ids),
    ):
        if records is None:
            continue
        docs = tuple(fn(records))
        if len(docs) != len(ids):
            raise DesignError(
                f"{what}: the modality gave {len(docs)} documents for {len(ids)} records"
            )
        out.update(zip(map(str, ids), map(str, docs), strict=True))
    if len(set(out.values())) == len(out):
        return None
    return out


def _notes(
    documents: Documents, sizes: Mapping[str, int], rmrn: Mapping[str, Any] | None
) -> tuple[str, ...]:
    """:data:`NOTES`, and by document what a test slot is and how many documents ran."""
    if documents is None:
        return NOTES
    note = (
        f"Test slots are documents: one chunk per document shown (drawn at random), the "
        f"document's other chunks used nowhere; m = {sizes['m']} slots from {sizes['m']} "
        f"documents ({sizes['n_withheld']} chunks withheld). D_G ({sizes['n_generator_documents']} "
        f"documents), the classifiers' training ({sizes['n_classifier_train_documents']}) and "
        f"validation ({sizes['n_validation_documents']} documents) and the test slots hold "
        f"disjoint documents."
    )
    if rmrn is not None:
        note += (
            f" RM;RN and O(1) likewise: m = {rmrn['m']} slots from {rmrn['m']} documents "
            f"({rmrn['n_withheld']} chunks withheld); no document holds both known members "
            "and real non-members."
        )
    return (*NOTES, note)


def _unique_member_ids(modality: Modality[R], members: R) -> Sequence[str]:
    """The record ids of the known members, refused when one repeats."""
    member_ids = modality.ids(members)
    if len(set(member_ids)) != len(member_ids):
        raise fail("members", "unique record ids", "duplicates")
    return member_ids


def _split_and_sample(
    steps: PanoramiaSteps[R],
    members: R,
    member_ids: Sequence[str],
    nm_ids: Sequence[str],
    sizes: PanoramiaSizes,
    *,
    seed: int,
    settings: Mapping[str, Any],
    documents: Documents = None,
) -> tuple[PanoramiaSplit, Sequence[str], R, dict[str, Any]]:
    """Steps 1-2: ``D_G`` / ``D_in`` (by document with ``documents``); the generator on
    ``D_G`` only and its synthetic pool (ids checked against every real one); the game's
    split. Returns the split, ``D_G``, the synthetic records and the generator's fit record."""
    d_g, d_in = split_members(member_ids, sizes, seed=seed, documents=documents)
    n_synth = round(sizes.synthetic_per_member * len(d_in))
    synth, generator_info = generated_samples(
        steps, members, d_g, n_synth, seed=seed, settings=settings
    )
    synth_ids = steps.modality.ids(synth)
    check_synthetic_ids(synth_ids, n_synth, set(member_ids) | set(nm_ids))
    split = PanoramiaSplit.build(
        member_ids, d_g, d_in, synth_ids, sizes, seed=seed, non_members=nm_ids,
        documents=documents,
    )  # fmt: skip
    return split, d_g, synth, generator_info


def _classifier_data(
    modality: Modality[R], members: R, synth: R, split: PanoramiaSplit
) -> tuple[tuple[R, R, R], Labels]:
    """Step 3: the classifiers' (train, validation, test) records and labels, from the
    split's parts: ``D_in``'s members against ``D_out``'s generated records, the test
    records the coin-flip slots in their order."""
    return classifier_records(
        modality,
        members,
        synth,
        train=(split.train_members, split.train_synthetic),
        val=(split.val_members, split.val_synthetic),
        test_pool=(split.members, split.audit_synthetic),
        test_ids=split.test_ids,
        test_member=split.test_member,
    )


def _add_real(
    real: RealComparison | None, classifiers: dict[str, Any], curves: dict[str, Any]
) -> dict[str, Any]:
    """The ``comparisons`` section (RM;RN and O(1), ``None`` when not run); RM;RN's
    classifier record and curve go into ``classifiers`` and ``curves``."""
    classifiers["rmrn"] = None if real is None else real.classifier
    if real is not None:
        curves["rmrn"] = real.curve
    return {"rmrn": None if real is None else real.rmrn, "o1": None if real is None else real.o1}


def _generator_section(
    settings: Mapping[str, Any], generator_info: Mapping[str, Any], split: PanoramiaSplit
) -> dict[str, Any]:
    """The result's ``generator`` section: the modality's generator settings, the counts of
    records (``D_G`` it trained on, the synthetic pool it sampled), then its fit record."""
    counts = {"n_train": len(split.generator), "n_sampled": len(split.synthetic)}
    return {**dict(settings.get("generator", {})), **counts, **generator_info}


def _helper_section(
    settings: Mapping[str, Any], helper_info: Mapping[str, Any], split: PanoramiaSplit
) -> dict[str, Any]:
    """The result's ``helper`` section: the modality's helper settings, the count of
    records (the helper pool it trained on), then its fit record."""
    counts = {"n_train": len(split.helper_pool)}
    return {**dict(settings.get("helper", {})), **counts, **helper_info}


def _score_table(
    split: PanoramiaSplit, y_test: NDArray[np.bool_], test_scores: Mapping[str, NDArray[np.float64]]
) -> ScoreTable:
    """The test slots' scores: record ids, coin (``member``), ``"panoramia-mia"`` and
    ``"panoramia-baseline"``."""
    return ScoreTable(
        record_ids=np.asarray(split.test_ids),
        member=y_test,
        scores={f"panoramia-{role}": sc for role, sc in test_scores.items()},
    )


def _audited_ids(
    modality: Modality[R], members: R, non_members: R | None
) -> tuple[Sequence[str], Sequence[str], Documents]:
    """The known members' ids, the real non-members' ids and the record -> document map
    (None without multi-record documents); refuses a document on both sides
    (:func:`~privaudit.panoramia.split.document_overlap`) before any work."""
    member_ids = _unique_member_ids(modality, members)
    nm_ids = modality.ids(non_members) if non_members is not None else ()
    documents = _documents(modality, members, member_ids, non_members, nm_ids)
    overlap = document_overlap(member_ids, nm_ids, documents)
    if overlap is not None:
        raise overlap
    return member_ids, nm_ids, documents


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
    mia_reads_helper: bool = False,
    progress: ProgressOption = None,
    executor: Mapper | None = None,
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
    mia_reads_helper : bool
        The MIA also reads the helper's loss features (after the target's), so its inputs
        hold all of the baseline's, and RM;RN (the same MIA pipeline with real non-members,
        Sec. 5.2) reads h's on its records; recorded as ``classifiers[role]["reads_helper"]``.
        Off by default: the paper's MIA (x and the target's loss).
    progress : progress option
        One report per step (:func:`privaudit.runtime.progress.progress_phase`: None = none
        off a terminal; ``"plain"`` or ``"auto"`` = lines in a log; a callback).
    executor : Executor, optional
        Runs the two classifiers (the MIA and the baseline, independent given the loss
        features) as two tasks (:func:`~privaudit.panoramia.steps.classifier_scores`);
        default: one after the other here. The other steps cannot be split: the
        generator, then the helper (trained on its samples), then the classifiers (on
        both) depend on one another, and each is one fit. Same numbers either way.
    """
    steps = PanoramiaSteps(modality, store)
    beta = resolve_beta(None, confidence)
    member_ids, nm_ids, documents = _audited_ids(modality, members, non_members)
    settings = modality.settings()

    # 1-2. D_G / D_in; the generator on D_G only and the synthetic pool; the split
    with progress_phase("generator and generated records", enabled=progress):
        split, d_g, synth, generator_info = _split_and_sample(
            steps, members, member_ids, nm_ids, sizes, seed=seed, settings=settings,
            documents=documents,
        )  # fmt: skip

    # 3. classifier data
    records, labels = _classifier_data(modality, members, synth, split)
    y_test = labels[2]
    criterion = selection_criterion(beta)

    # 4-5. the helper's, the target's and the reference's losses; the classifiers (cached
    # as their scores)
    with progress_phase("helper model and loss features", enabled=progress):
        reference = reference_losses(steps, members, d_g, seed=seed, settings=settings)
        helper = helper_losses(
            steps, modality.take(synth, split.helper_pool), seed=seed, settings=settings
        )
    with progress_phase("MIA and baseline classifiers", enabled=progress):
        test_scores, classifiers, helper_info = classifier_scores(
            steps, target, helper, records, labels,
            seed=seed, criterion=criterion, beta=beta, settings=settings,
            reference=reference(records, labels, "classifier"), mia_reads_helper=mia_reads_helper,
            keep_helper=mia_reads_helper and non_members is not None, executor=executor,
        )  # fmt: skip

    # 6. measurement, and the comparisons on the same target
    audit, bounds, curves = _measure(test_scores, y_test, beta)
    real = None
    if non_members is not None:
        with progress_phase("RM;RN and O(1) on the real non-members", enabled=progress):
            real = compare_real(
                steps, target, members, non_members, split.members, sizes,
                seed=seed, beta=beta, criterion=criterion, scorer_settings=settings.get("scorer"),
                reference=reference, helper=helper if mia_reads_helper else None,
                documents=documents,
            )  # fmt: skip
    comparisons = _add_real(real, classifiers, curves)
    table = _score_table(split, y_test, test_scores)
    result_sizes = _result_sizes(len(member_ids), split, labels, documents)
    return PanoramiaResult(
        modality=modality.name,
        seed=int(seed),
        confidence=1.0 - beta,
        sizes=result_sizes,
        bounds=bounds,
        comparisons=comparisons,
        curves=curves,
        generator=_generator_section(settings, generator_info, split),
        helper=_helper_section(settings, helper_info, split),
        classifiers=classifiers,
        split=split,
        notes=_notes(documents, result_sizes, comparisons["rmrn"]),
        scores=table,
        audit=audit,
        rmrn_scores=None if real is None else real.scores,
        rmrn_split=None if real is None else real.split,
    )
