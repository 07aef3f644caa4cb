"""The language-model audit facade: :func:`run_llm_audit` turns an
:class:`~privaudit.llm.config.LLMAuditConfig` into ``results.json``, ``scores.npz``,
``report.html`` and ``bundle.json`` (``privaudit run`` with ``target.kind: huggingface``).

Steps (each timed; the times go to ``results.json["timings"]``):

1. check that the report directory can be written (before any work);
2. read the texts (:func:`privaudit.data.text.read_text_records`: JSONL, validated);
3. load the target and the optional reference model from local directories
   (:meth:`privaudit.models.causal_lm.CausalLM.from_directory`; nothing downloaded);
4. the audit (:func:`privaudit.llm.audit.audit_language_model`: token stats, cached ->
   signals -> metrics + blind baseline -> one-run bounds);
5. the results document (:func:`llm_results`) and the report, written atomically.

``results.json``: ``attacks`` holds one entry per text signal and the
``blind-baseline`` (a text-only classifier, :mod:`privaudit.llm.blind`); ``audits``
the one-run eps lower bound of each signal (Bonferroni over the signals; the blind
baseline is not audited, it is not an attack on the model); ``llm`` the models and
tokenizers, numbers of member and non-member chunks and documents, the split (ids and
fingerprints), the signal settings, the blind baseline's verdict and the threat model in
words. ``scores.npz`` holds every record's score with its id, so ``privaudit verify``
recomputes every figure.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from privaudit._validation import fail
from privaudit.data.text import TextRecords, read_text_records
from privaudit.llm.audit import (
    BASE_SIGNALS,
    REFERENCE_SIGNALS,
    SHIFT_TEST_LEVEL,
    LLMAuditResult,
    LLMAuditSettings,
    audit_language_model,
)
from privaudit.llm.blind import BLIND_BASELINE
from privaudit.llm.config import LLMAuditConfig, LLMModelConfig
from privaudit.metrics.shift_test import ShiftTest
from privaudit.models.provided import file_sha256
from privaudit.records import AttackScores
from privaudit.report import check_output_dir, write_report
from privaudit.report.bundle import make_manifest
from privaudit.report.figures import ResultsFigures
from privaudit.report.results import ScoreTable, attack_entry, build_results
from privaudit.runtime.executor_setting import make_executor
from privaudit.runtime.progress import ProgressOption, check_progress, progress_phase
from privaudit.runtime.timings import timed
from privaudit.stats.attack_bounds import SPLIT_NOT_RANDOMISED, grouped_one_run_bounds

__all__ = [
    "LLM_BASE_THREAT_MODEL",
    "LLM_GAME",
    "LLM_SAMPLING_NOTE",
    "LLM_SAMPLING_NOTE_ONE_RECORD_PER_DOCUMENT",
    "LLM_THREAT_MODEL",
    "LLMAuditReport",
    "llm_one_run_bounds",
    "llm_results",
    "llm_sampling_note",
    "llm_score_table",
    "load_lm",
    "run_llm_audit",
]

#: How membership was drawn in a language-model audit, and what the one-run bound assumes.
LLM_SAMPLING_NOTE = (
    "Members and non-members were assigned by document (all chunks of a document share "
    "its role). Steinke et al. need one independent inclusion coin per audited example, so "
    "the examples are the documents (score: the mean over its chunks); a document of k "
    "chunks bounds the chunk-level eps by the document bound / k (group privacy). The bound "
    "assumes the documents were assigned at random, as the auditor declared "
    "(data.randomised_split; privaudit cannot check it, and refuses the bound without it "
    "or when the blind baseline finds the two samples differ); a seeded uniformly random "
    "subset of fixed size is treated as independent coins, which Steinke et al.'s proof "
    "does not cover (split_by_document draws coins only with coins=(members, non_members), "
    "as the LLM example does)."
)

#: :data:`LLM_SAMPLING_NOTE` when every document holds one record: no ``document`` field
#: was given in the JSONL (each record is then its own document), or each document was
#: cut into one chunk.
LLM_SAMPLING_NOTE_ONE_RECORD_PER_DOCUMENT = (
    "Every audited record is its own document (no document field was given, or each "
    "document holds one record), so members and non-members were treated as assigned "
    "record by record, each record its own unit. Steinke et al. need one independent "
    "inclusion coin per audited example: if records were cut from shared documents, give "
    "each its document field, else the bound and the intervals treat dependent records as "
    "independent. The bound assumes the records were assigned at random, as the auditor "
    "declared (data.randomised_split; privaudit cannot check it, and refuses the bound "
    "without it or when the blind baseline finds the two samples differ); a seeded "
    "uniformly random subset of fixed size is treated as independent coins, which "
    "Steinke et al.'s proof does not cover."
)


def llm_sampling_note(records: TextRecords) -> str:
    """How membership was drawn, as the records show it: by document
    (:data:`LLM_SAMPLING_NOTE`) when some document holds several records, else record by
    record (:data:`LLM_SAMPLING_NOTE_ONE_RECORD_PER_DOCUMENT`)."""
    if len(set(records.documents)) < len(records.documents):
        return LLM_SAMPLING_NOTE
    return LLM_SAMPLING_NOTE_ONE_RECORD_PER_DOCUMENT


#: ``settings.game`` of a language-model audit.
LLM_GAME = "llm-fixed-model"

#: What the threat model adds when the signals against the base model ran.
LLM_BASE_THREAT_MODEL = (
    " For ez-mia, wbc and informia-token the attacker also holds the model the target was "
    "fine-tuned from (its base: a public pretrained checkpoint, or a LoRA adapter's base "
    "model) and compares the two models token by token; no model is trained."
)

#: The threat model of the report, in one paragraph.
LLM_THREAT_MODEL = (
    "One fixed language model (the target) was fine-tuned on the member texts. The "
    "attacker queries it for the log-probability of every token of a text (min-k%++ also "
    "reads the full next-token distribution) and, for the reference signals, holds a "
    "reference model trained with the same recipe on text of the same source that excludes "
    "the target's training text. The attacker does not see the training set: for each "
    "audited text it outputs a score, higher meaning 'member'. Members are the target's "
    "fine-tuning chunks, non-members are held-out chunks of the same source, assigned by "
    "document (all chunks of a document are on the same side). The blind baseline sees the "
    "texts only, never the model: whatever it achieves comes from differences between the "
    "two text samples, not from the model."
)


def llm_score_table(result: LLMAuditResult) -> ScoreTable:
    """``scores.npz``: every record's score under each signal and the blind baseline."""
    return ScoreTable.from_attack_scores(
        list(result.scores),
        np.asarray(result.records.ids),
        result.member,
        groups=np.asarray(result.records.documents, dtype=object),
    )


def _split_sha256(ids: tuple[str, ...], member: np.ndarray) -> str:
    lines = ["members", *sorted(np.asarray(ids, dtype=object)[member].tolist())]
    lines += ["non_members", *sorted(np.asarray(ids, dtype=object)[~member].tolist())]
    return hashlib.sha256("\n".join(map(str, lines)).encode()).hexdigest()


def split_refusal(randomised_split: bool, blind_test: ShiftTest | None) -> str | None:
    """Why the one-run bounds of an LLM audit are refused, or None: the member documents
    were not declared drawn at random, or the blind baseline's shift test rejects that
    member and non-member texts come from one source (which a random draw would give)."""
    if not randomised_split:
        return SPLIT_NOT_RANDOMISED.replace("randomised_split", "data.randomised_split")
    if blind_test is not None and blind_test.p_value < SHIFT_TEST_LEVEL:
        return (
            "refused: the split was declared random, but the blind baseline separates member "
            f"from non-member texts (AUC {blind_test.auc:.3f}, permutation p = "
            f"{blind_test.p_value:.3f} < {SHIFT_TEST_LEVEL:g}), which a random draw of the "
            f"{blind_test.unit}s from one source rarely gives; audit with 'privaudit "
            "zero-run', made for shifted splits"
        )
    return None


def llm_one_run_bounds(
    signal_scores: Sequence[AttackScores],
    records: TextRecords,
    *,
    confidence: float = 0.95,
    refused: str | None = None,
) -> list[dict[str, Any]]:
    """Steinke et al.'s one-run eps lower bound from each signal's scores, Bonferroni over
    the signals, with the documents as the audited examples
    (:func:`privaudit.stats.attack_bounds.grouped_one_run_bounds`: a document is scored by
    the mean of its chunks' scores; with several chunks per document the chunk-level bound
    is the document bound divided by the most chunks in one document), under
    :func:`llm_sampling_note`. The blind baseline is not a privacy attack on the model and
    is not audited. ``refused`` (:func:`split_refusal`): every bound the trivial 0, not
    gated, with the reason."""
    if records.member is None:
        raise fail("records.member", "known membership", "None")
    cols = {s.attack: (s.scores, records.member) for s in signal_scores}
    return grouped_one_run_bounds(
        cols,
        np.asarray(records.documents, dtype=object),
        unit="document",
        confidence=confidence,
        sampling_assumption=llm_sampling_note(records),
        refused=refused,
    )


def llm_results(
    result: LLMAuditResult,
    *,
    seed: int,
    data: Mapping[str, Any],
    models_config: Mapping[str, Any],
    provenance: Mapping[str, Any] | None = None,
    timings: Mapping[str, float] | None = None,
    randomised_split: bool = False,
) -> tuple[dict[str, Any], ScoreTable]:
    """The results document and the score table of a language-model audit.

    Parameters
    ----------
    result : LLMAuditResult
        From :func:`privaudit.llm.audit.audit_language_model`.
    seed : int
        The audit's root seed.
    data : mapping
        Where the texts came from (``settings.dataset``), e.g. ``{"name": "texts",
        "path": ...}``.
    models_config : mapping
        The models as configured (``settings.model``: target and reference paths).
    provenance : mapping, optional
        How the target and reference were made, when privaudit made them (the example's
        split of Tiny Shakespeare by role, the fine-tuning recipes): ``llm.provenance``.
    timings : mapping, optional
        Seconds per step.
    randomised_split : bool
        The auditor's declaration that the member documents were drawn at random
        (``data.randomised_split``): without it the one-run bounds are refused
        (:func:`split_refusal`).
    """
    table = llm_score_table(result)
    entries = _attack_entries(result)
    counts = result.records.counts()
    settings = _llm_settings(result, data, models_config)
    target = {**_llm_target(result, counts), "randomised_split": bool(randomised_split)}
    llm = _llm_section(result, counts, provenance)
    doc = build_results(
        seed=seed,
        settings=settings,
        target=target,
        attacks=entries,
        audits=llm_one_run_bounds(
            [s for s in result.scores if s.attack != BLIND_BASELINE],
            result.records,
            confidence=result.settings.confidence,
            refused=split_refusal(randomised_split, result.blind_test),
        ),
        timings=timings,
        sections={"llm": llm},
    )
    return doc, table


def _attack_entries(result: LLMAuditResult) -> list[dict[str, Any]]:
    """``results["attacks"]``: each signal's and the blind baseline's metrics with its AUC
    confidence interval and its TPR-at-FPR intervals (the reference signals learned from
    one reference model)."""
    entries = []
    for s in result.scores:
        n_ref = 1 if s.attack in REFERENCE_SIGNALS or s.attack in BASE_SIGNALS else 0
        entry = attack_entry(result.metrics[s.attack], n_reference_models=n_ref)
        entry.update(result.auc_ci[s.attack])
        entry.update(result.tpr_ci.get(s.attack, {}))
        entries.append(entry)
    return entries


def _llm_settings(
    result: LLMAuditResult, data: Mapping[str, Any], models_config: Mapping[str, Any]
) -> dict[str, Any]:
    """``results["settings"]``: the game, where the texts came from, the models as
    configured, the attacks in order and the signal settings."""
    return {
        "game": LLM_GAME,
        "alpha": None,
        "dataset": dict(data),
        "model": dict(models_config),
        "attacks": [s.attack for s in result.scores],
        "signals": result.settings.to_dict(),
    }


def _llm_target(result: LLMAuditResult, counts: Mapping[str, int]) -> dict[str, Any]:
    """``results["target"]``: a provided model (no accuracy), the numbers of member and
    non-member chunks, the model's fingerprint and the split's."""
    return {
        "train_accuracy": None,
        "test_accuracy": None,
        "n_members": counts["n_member_chunks"],
        "n_non_members": counts["n_non_member_chunks"],
        "origin": "provided",
        "model_sha256": result.models["target"]["fingerprint"],
        "split_sha256": _split_sha256(result.records.ids, result.member),
    }


def _llm_section(
    result: LLMAuditResult,
    counts: Mapping[str, int],
    provenance: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """``results["llm"]``: models and tokenizers, counts, the split by document, the signals
    and their settings, the blind baseline's verdict, the sampling assumption and threat
    model, and the provenance when given."""
    llm: dict[str, Any] = {
        "models": result.models,
        "same_tokenizer": result.same_tokenizer,
        "counts": counts,
        "token_counts": result.token_counts,
        "split": _split_section(result.records, result.member),
        "signals": list(result.signal_names),
        "signal_settings": {
            "min_k_fraction": result.settings.k,
            "batch_size": result.settings.batch_size,
            "stride": result.settings.stride,
            "reference_normalisation": "per token" if result.same_tokenizer else "per byte",
        },
        "blind_baseline": _blind_baseline_section(result),
        "sampling_assumption": llm_sampling_note(result.records),
        "threat_model": LLM_THREAT_MODEL
        + (LLM_BASE_THREAT_MODEL if "base" in result.models else ""),
    }
    if result.leaking is not None:
        llm["leaking_texts"] = result.leaking
    if provenance is not None:
        llm["provenance"] = dict(provenance)
    return llm


def _split_section(records: TextRecords, member: np.ndarray) -> dict[str, Any]:
    """``llm.split``: by document; the fingerprints of the member and non-member chunk ids
    and the documents on each side."""
    documents = np.asarray(records.documents, dtype=object)
    return {
        "by": "document",
        "member_sha256": _ids_sha(records.ids, member),
        "non_member_sha256": _ids_sha(records.ids, ~member),
        "member_documents": sorted(set(documents[member].tolist())),
        "non_member_documents": sorted(set(documents[~member].tolist())),
    }


def _blind_baseline_section(result: LLMAuditResult) -> dict[str, Any] | None:
    """``llm.blind_baseline`` (None when it did not run): its AUC and interval, whether the
    two text samples differ (the shift test and its warning) and the corrected alternative."""
    blind = result.metrics.get(BLIND_BASELINE)
    if blind is None:
        return None
    return {
        "auc": blind.auc,
        "auc_ci": result.auc_ci[BLIND_BASELINE]["auc_ci"],
        "distribution_shift": result.blind_warning is not None,
        "shift_test": None if result.blind_test is None else result.blind_test.to_dict(),
        "warning": result.blind_warning,
        "corrected_alternative": "privaudit zero-run (the Zero-Run audit)",
    }


def _ids_sha(ids: tuple[str, ...], mask: np.ndarray) -> str:
    chosen = sorted(map(str, np.asarray(ids, dtype=object)[mask].tolist()))
    return hashlib.sha256("\n".join(chosen).encode()).hexdigest()


@dataclasses.dataclass(frozen=True)
class LLMAuditReport(ResultsFigures):
    """What :func:`run_llm_audit` returns: the results document, the scores, the audit.

    Figures as attributes (:class:`~privaudit.report.figures.ResultsFigures`: ``attacks``
    = one per signal and the blind baseline, ``bounds``, ``strongest_attack()``),
    :meth:`summary` (the headline figures), :meth:`save` (the report folder),
    ``to_dict()`` / ``to_json()`` (``results.json``), ``str()`` (the command line's summary).

    Attributes
    ----------
    results : dict
        The ``results.json`` document.
    scores : ScoreTable
        Per-text scores of every signal, with membership and documents.
    audit : LLMAuditResult
        The audit's signals, metrics and blind baseline.
    out_dir : Path or None
        The report folder (None while none was written; :meth:`save` sets it).
    bundle : mapping or None
        The manifest of ``bundle.json``.
    """

    results: dict[str, Any]
    scores: ScoreTable
    audit: LLMAuditResult
    out_dir: Path | None
    bundle: Mapping[str, Any] | None = None

    def summary(self) -> dict[str, Any]:
        """The headline figures (:func:`llm_summary`): AUC and TPR at 1% FPR of every signal
        and of the blind baseline, and the largest one-run epsilon lower bound."""
        return llm_summary(self.results)

    def save(self, folder: str | Path, *, overwrite: bool = False) -> Path:
        """Write the report folder ``privaudit run`` writes (``results.json``,
        ``scores.npz``, ``report.html``, ``bundle.json``), atomically; returns ``folder``
        (:attr:`out_dir` afterwards)."""
        out = write_report(
            Path(folder), self.results, self.scores, overwrite=overwrite, bundle=self.bundle
        )
        object.__setattr__(self, "out_dir", out)
        return out

    def __str__(self) -> str:
        import io

        from rich.console import Console

        from privaudit.llm.summary import render_llm_summary

        buf = io.StringIO()
        console = Console(file=buf, width=80, highlight=False, color_system=None)
        render_llm_summary(self.results, self.out_dir, console=console)
        return buf.getvalue().rstrip("\n")


def load_lm(model: LLMModelConfig, *, device: str, max_length: int | None, field: str) -> Any:
    """A :class:`~privaudit.models.causal_lm.CausalLM` from a local directory (never downloads)."""
    from privaudit.models.causal_lm import CausalLM

    model.check_exists(field)
    kw: dict[str, Any] = {} if max_length is None else {"max_length": max_length}
    return CausalLM.from_directory(model.path, gguf_file=model.gguf_file, device=device, **kw)


def _adapter_target(config: LLMAuditConfig) -> tuple[LLMAuditConfig, LLMModelConfig | None]:
    """A PEFT adapter target (:mod:`privaudit.llm.adapter`): the config with the adapter's
    base as ``base`` when none is named, and the base to merge the adapter into (None for a
    full model directory). Refused without peft, or when the base is not local."""
    from privaudit.config.base import ConfigError
    from privaudit.llm.adapter import adapter_base_dir, is_adapter_dir, peft_available

    if not is_adapter_dir(config.target.path):
        return config, None
    if not peft_available():
        raise ConfigError(
            f"target.path: {config.target.path} is a PEFT/LoRA adapter (adapter_config.json); "
            "loading it needs the peft package, found none installed (pip install peft), or "
            "give a merged model directory"
        )
    base = config.base
    if base is None:
        found = adapter_base_dir(config.target.path)
        if found is None:
            raise ConfigError(
                "base: expected the PEFT adapter's base model as a local directory "
                "('base: {path: DIR}'), found none (its base_model_name_or_path is not a "
                "local directory and nothing is downloaded)"
            )
        base = LLMModelConfig(path=found)
        config = config.model_copy(update={"base": base})
    return config, base


def run_llm_audit(
    config: LLMAuditConfig,
    *,
    overwrite: bool = False,
    progress: ProgressOption = None,
    write: bool = True,
    provenance: Mapping[str, Any] | None = None,
) -> LLMAuditReport:
    """Run the language-model audit of ``config`` (module docstring) and write its report.

    Parameters
    ----------
    config : LLMAuditConfig
        From :func:`privaudit.llm.config.load_llm_config` (or built in code).
    overwrite : bool
        Replace an existing report directory.
    progress : progress option, optional
        Progress of the fine-tuning and scoring passes (:mod:`privaudit.runtime.progress`:
        None = a bar on a terminal only; ``"auto"`` = plain lines off a terminal, as the
        command line does; ``"plain"``; a callback ``fn(event)``; a tqdm-style class).
    write : bool
        Write the report directory (``config.output_dir``).
    provenance : mapping, optional
        How privaudit made the target and reference (the example's split and recipes),
        recorded as ``results["llm"]["provenance"]``.
    """
    progress = check_progress(progress)
    timings: dict[str, float] = {}
    with timed(timings, "data"):  # steps 1-2: the report folder, the paths, the texts
        out_dir = check_output_dir(config.output_dir, overwrite=overwrite) if write else None
        config.check_paths()
        config, adapter_base = _adapter_target(config)
        records = read_text_records(config.data.texts, name="data.texts")
        settings = _audit_settings(config)
    with timed(timings, "models"), progress_phase("loading the models", enabled=progress):
        target, reference, base = _load_models(config, adapter_base)
    with timed(timings, "audit"):
        result = audit_language_model(
            target,
            records,
            settings,
            reference=reference,
            base=base,
            store=config.cache_dir,
            progress=progress,
            executor=_scoring_executor(config),
        )
    models_cfg = _models_config(config)
    results, table = llm_results(
        result,
        seed=config.seed,
        data=_texts_source(config),
        models_config=models_cfg,
        provenance=provenance,
        timings=timings,
        randomised_split=config.data.randomised_split,
    )
    manifest = _bundle_manifest(config, results)
    if write and out_dir is not None:
        with progress_phase("writing the report", enabled=progress):
            write_report(out_dir, results, table, overwrite=overwrite, bundle=manifest)
    return LLMAuditReport(
        results=results, scores=table, audit=result, out_dir=out_dir, bundle=manifest
    )


def _audit_settings(config: LLMAuditConfig) -> LLMAuditSettings:
    """The signal settings of the audit (:class:`~privaudit.llm.audit.LLMAuditSettings`):
    the signals, min-k fraction, batch size, stride, blind baseline, confidence and seed
    of ``config``."""
    return LLMAuditSettings(
        signals=config.signal_names(),
        k=config.min_k_fraction,
        batch_size=config.batch_size,
        stride=config.stride,
        blind_folds=config.blind_folds,
        blind_permutations=config.blind_permutations,
        confidence=config.confidence,
        seed=config.seed,
    )


def _load_models(
    config: LLMAuditConfig, adapter_base: LLMModelConfig | None
) -> tuple[Any, Any | None, Any | None]:
    """Step 3: the target, the reference and the base, in that order, from local
    directories (:func:`load_lm`). The target is merged into ``adapter_base`` when it is a
    PEFT adapter (:func:`privaudit.llm.adapter.load_adapter_target`); the reference is None
    without ``config.reference``; the base is None unless ``config.base`` is set and a base
    signal (ez-mia, wbc, informia-token) runs."""
    if adapter_base is not None:
        from privaudit.llm.adapter import load_adapter_target

        target = load_adapter_target(
            config.target.path,
            adapter_base.path,
            gguf_file=adapter_base.gguf_file,
            device=config.device,
            max_length=config.max_length,
        )
    else:
        target = load_lm(
            config.target, device=config.device, max_length=config.max_length, field="target"
        )
    reference = None
    if config.reference is not None:
        reference = load_lm(
            config.reference,
            device=config.device,
            max_length=config.max_length,
            field="reference",
        )
    base = None
    if config.base is not None and any(s in BASE_SIGNALS for s in config.signal_names()):
        base = load_lm(
            config.base, device=config.device, max_length=config.max_length, field="base"
        )
    return target, reference, base


def _scoring_executor(config: LLMAuditConfig) -> Any:
    """Where the scoring passes run (a pass is one model over every text): ``ray`` sends
    them to the cluster (:func:`privaudit.runtime.executor_setting.make_executor`); None
    (``local``) scores them here, one after the other with their progress."""
    if config.executor == "ray":
        return make_executor(
            "ray",
            address=config.ray_address,
            gpus_per_task=config.ray_gpus_per_task,
            progress=False,
        )
    return None


def _models_config(config: LLMAuditConfig) -> dict[str, Any]:
    """``results["settings"]["model"]``: the models as configured (target, and reference
    and base when given)."""
    models_cfg: dict[str, Any] = {"kind": "huggingface", "target": config.target.describe()}
    if config.reference is not None:
        models_cfg["reference"] = config.reference.describe()
    if config.base is not None:
        models_cfg["base"] = config.base.describe()
    return models_cfg


def _texts_source(config: LLMAuditConfig) -> dict[str, Any]:
    """``results["settings"]["dataset"]``: where the texts came from, with the SHA-256 of
    the JSONL file."""
    return {
        "name": "texts",
        "path": str(config.data.texts),
        "sha256": file_sha256(config.data.texts),
    }


def _bundle_manifest(config: LLMAuditConfig, results: Mapping[str, Any]) -> dict[str, Any]:
    """The manifest of ``bundle.json`` (:func:`privaudit.report.bundle.make_manifest`): the
    config as JSON, the root seed and the texts' fingerprint from ``results``."""
    return make_manifest(
        kind="membership-inference",
        command="run_llm_audit",
        config=config.model_dump(mode="json"),
        seeds={"root": config.seed},
        dataset_fingerprint=results["settings"]["dataset"]["sha256"],
    )


def llm_summary(results: Mapping[str, Any]) -> dict[str, Any]:
    """The headline figures of a language-model results document.

    ``{"signals": {name: {"auc", "tpr_at_fpr": {"0.01": ...}}}, "blind_baseline": {...} or
    None, "epsilon_lower_bound": ...}``: AUC and TPR at 1% FPR (None without 100
    non-member documents; with ``"tpr_at_fpr_ci": {"0.01": [lo, hi]}``, its document
    bootstrap interval, when results.json has it) of every signal and of the blind
    baseline, and the largest one-run eps
    lower bound over the signals (each at ``beta / K``, so the largest holds at the
    family confidence, :func:`privaudit.stats.attack_bounds.attack_one_run_bounds`).
    """
    signals: dict[str, Any] = {}
    blind: dict[str, Any] | None = None
    for a in results["attacks"]:
        entry = {"auc": a["auc"], "tpr_at_fpr": {"0.01": a["tpr_at_fpr"].get("0.01")}}
        if "tpr_at_fpr_ci" in a:
            entry["tpr_at_fpr_ci"] = {"0.01": a["tpr_at_fpr_ci"].get("0.01")}
        if a["name"] == BLIND_BASELINE:
            blind = entry
        else:
            signals[a["name"]] = entry
    bounds = [a["epsilon_lower_bound"] for a in results["audits"] if "attack" in a]
    return {
        "signals": signals,
        "blind_baseline": blind,
        "epsilon_lower_bound": max(bounds) if bounds else None,
    }
