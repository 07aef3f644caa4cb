"""The language-model membership audit as a composition of named steps (DESIGN 2.1).

::

    records (ids, texts, documents, member)
      -> token stats per model (target; optional reference LM)      token_stats_cached
      -> text signals (loss, zlib, min-k, min-k++, reference, ...)  score_signals
      -> signals against the base (ez-mia, wbc, informia-token)     paired_stats_cached,
         + per-token scores of the top leaking texts                 leaking_texts
      -> attack metrics per signal (ROC, AUC, TPR at low FPR)        signal_metrics
         + the blind baseline (text only, cross-fitted)              blind_metrics

:func:`audit_language_model` runs them in that order and returns an
:class:`LLMAuditResult`; the pipeline layer (:mod:`privaudit.llm.pipeline`, above
``audit/`` in the layering) adds the one-run eps lower bounds from the signals' scores
and turns it into ``results.json``, ``scores.npz`` and ``report.html``. For the bundled corpus the steps before it are
:func:`shakespeare_split` (documents -> split by document -> chunks, see
:mod:`privaudit.data.text`) and :func:`finetuned_model_dir` (a fine-tuned target or reference
model, cached in the artifact store as a Hugging Face directory).

Signals are higher = member; their definitions and papers are in
:mod:`privaudit.signals.text`. Token statistics (one forward pass per text and model)
are cached in the artifact store keyed by the model's fingerprint, the hash of the texts
and the scoring settings, so a killed run resumes with the models already scored.

The signals against the base (:mod:`privaudit.signals.text_finetune`: EZ-MIA, WBC,
token-level InfoRMIA) compare the target with the model it was fine-tuned from, position by
position (:mod:`privaudit.models.lm_paired`: two forward passes per text, one tokenizer);
their per-token scores are kept (:attr:`LLMAuditResult.token_scores`) and the texts they
rank highest are shown token by token in the report, their error positions highlighted.

Threat model. The attacker queries the target for token log-probabilities of a text (and,
for min-k%++, the full next-token distribution), and for the reference signals holds a
reference model trained on text of the same source that excludes the target's training
text. Members are the target's fine-tuning chunks; non-members are held-out chunks of
the same source, split by document. Since members and non-members are not drawn by
privaudit from one population record by record, a shift between the two text samples can
inflate every signal: the blind baseline measures it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import fail
from privaudit.data.text import (
    TextRecords,
    TextSplit,
    chunk_documents,
    shakespeare_documents,
    split_by_document,
    strings_sha256,
)
from privaudit.llm.blind import (
    BLIND_BASELINE,
    blind_baseline_and_test,
)
from privaudit.metrics.auc_ci import auc_ci_fields
from privaudit.metrics.roc import (
    DEFAULT_FPRS,
    TPR_CI_METHOD,
    AttackMetrics,
    attack_metrics,
    tpr_at_fpr_bootstrap_ci,
)
from privaudit.metrics.shift_test import ShiftTest
from privaudit.records import AttackScores
from privaudit.runtime import interrupts
from privaudit.runtime.mapping import InlineMapper, Mapper
from privaudit.runtime.progress import ProgressOption
from privaudit.runtime.store import ArtifactStore

if TYPE_CHECKING:
    from privaudit.models.causal_lm import CausalLM, TokenStats
    from privaudit.models.lm_finetune import FineTuneRecipe
    from privaudit.models.lm_paired import PairedTokenStats

__all__ = [
    "BASE_SIGNALS",
    "N_LEAKING_TEXTS",
    "REFERENCE_SIGNALS",
    "LLMAuditResult",
    "LLMAuditSettings",
    "audit_language_model",
    "audited_records",
    "blind_metrics",
    "blind_warning",
    "finetuned_model_dir",
    "leaking_texts",
    "model_info",
    "paired_stats_cached",
    "score_signals",
    "shakespeare_split",
    "signal_metrics",
    "token_stats_cached",
    "tpr_ci_fields",
]

#: Signals that need a reference model.
REFERENCE_SIGNALS = ("reference", "reference-ratio")
#: Signals that need the base model (the model the target was fine-tuned from).
BASE_SIGNALS = ("ez-mia", "wbc", "informia-token")
#: Texts shown token by token in the report (the highest scores of the leading base signal).
N_LEAKING_TEXTS = 10
#: Most tokens of one leaking text kept in results.json.
_MAX_SHOWN_TOKENS = 256
_ALL_SIGNALS = ("loss", "zlib", "min-k", "min-k++", "reference", "reference-ratio", *BASE_SIGNALS)


@dataclasses.dataclass(frozen=True)
class LLMAuditSettings:
    """What the audit computes.

    ``signals``: names from :data:`privaudit.signals.text.TEXT_SIGNALS` (the reference
    signals need a reference model) and :data:`BASE_SIGNALS` (they need the base model); ``k``: the fraction of min-k% and min-k%++;
    ``batch_size``, ``stride``: scoring (texts longer than the model's context are scored
    with a sliding window of this stride); ``blind_folds``: cross-fitting folds of the
    blind baseline (0 = no baseline); ``blind_permutations``: document-label permutations
    of its shift test (:func:`privaudit.llm.blind.blind_shift_test`; 0 = no test);
    ``confidence``: of the one-run bounds (jointly, over the signals); ``seed``: the blind
    baseline's folds and permutations.
    """

    signals: tuple[str, ...] = _ALL_SIGNALS
    k: float = 0.2
    batch_size: int = 8
    stride: int | None = None
    blind_folds: int = 5
    blind_permutations: int = 100
    confidence: float = 0.95
    seed: int = 0

    def __post_init__(self) -> None:
        if not self.signals:
            raise fail("signals", "at least one signal", "none")
        unknown = [s for s in self.signals if s not in _ALL_SIGNALS]
        if unknown:
            raise fail("signals", "names among " + ", ".join(_ALL_SIGNALS), unknown)
        if len(set(self.signals)) != len(self.signals):
            raise fail("signals", "each signal once", list(self.signals))
        if not 0.0 < self.k <= 1.0:
            raise fail("k", "a fraction in (0, 1]", self.k)
        if self.batch_size < 1:
            raise fail("batch_size", "a positive integer", self.batch_size)
        if self.blind_folds == 1 or self.blind_folds < 0:
            raise fail("blind_folds", "0 (no baseline) or at least 2 folds", self.blind_folds)
        if self.blind_permutations < 0:
            raise fail("blind_permutations", "0 (no test) or more", self.blind_permutations)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class LLMAuditResult:
    """What :func:`audit_language_model` computed (everything the results document holds)."""

    records: TextRecords
    scores: tuple[AttackScores, ...]  # one per signal, then the blind baseline (if any)
    metrics: dict[str, AttackMetrics]
    auc_ci: dict[str, dict[str, Any]]
    models: dict[str, dict[str, Any]]
    settings: LLMAuditSettings
    same_tokenizer: bool
    blind_warning: str | None
    token_counts: dict[str, int]
    blind_test: ShiftTest | None = None
    #: Per-token scores of every text against the base (``shift``, ``error``,
    #: ``informia``: :func:`privaudit.signals.text_finetune.token_scores`); None without
    #: a base signal.
    token_scores: tuple[dict[str, NDArray[Any]], ...] | None = None
    #: The top leaking texts token by token (:func:`leaking_texts`); None without a base
    #: signal.
    leaking: dict[str, Any] | None = None
    #: Each attack's TPR-at-FPR intervals (:func:`tpr_ci_fields`), by name.
    tpr_ci: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)

    @property
    def member(self) -> NDArray[np.bool_]:
        assert self.records.member is not None  # checked by audit_language_model
        return self.records.member

    @property
    def signal_names(self) -> tuple[str, ...]:
        return tuple(s.attack for s in self.scores if s.attack != BLIND_BASELINE)


# --------------------------------------------------------------------------------------
# step: token statistics (cached)
# --------------------------------------------------------------------------------------


def model_info(model: CausalLM) -> dict[str, Any]:
    """The model's identity for ``results.json`` and cache keys."""
    return {
        "name": str(model.name),
        "fingerprint": str(model.fingerprint),
        "tokenizer_id": str(model.tokenizer_id),
        "device": str(model.device),
        "max_length": int(model.max_length),
    }


def _save_stats(stats: Sequence[TokenStats], path: Path) -> None:
    lengths = np.asarray([s.logprobs.size for s in stats], dtype=np.int64)
    has_dist = all(s.dist_mean is not None and s.dist_std is not None for s in stats)
    arrays: dict[str, Any] = {
        "lengths": lengths,
        "n_tokens": np.asarray([s.n_tokens for s in stats], dtype=np.int64),
        "n_bytes": np.asarray([s.n_bytes for s in stats], dtype=np.int64),
        "logprobs": np.concatenate([s.logprobs for s in stats]) if stats else np.zeros(0),
    }
    if has_dist and stats:
        arrays["dist_mean"] = np.concatenate([s.dist_mean for s in stats])
        arrays["dist_std"] = np.concatenate([s.dist_std for s in stats])
    with path.open("wb") as fh:
        np.savez(fh, **arrays)


def _load_stats(path: Path) -> list[TokenStats]:
    from privaudit.models.causal_lm import TokenStats

    with np.load(path, allow_pickle=False) as z:
        cuts = np.cumsum(z["lengths"])[:-1]
        lp = np.split(z["logprobs"], cuts)
        dm = np.split(z["dist_mean"], cuts) if "dist_mean" in z.files else [None] * len(lp)
        ds = np.split(z["dist_std"], cuts) if "dist_std" in z.files else [None] * len(lp)
        return [
            TokenStats(
                logprobs=lp[i],
                dist_mean=dm[i],
                dist_std=ds[i],
                n_tokens=int(z["n_tokens"][i]),
                n_bytes=int(z["n_bytes"][i]),
            )
            for i in range(len(lp))
        ]


def token_stats_cached(
    model: CausalLM,
    records: TextRecords,
    *,
    distribution: bool,
    batch_size: int = 8,
    stride: int | None = None,
    store: ArtifactStore | str | Path | None = None,
    progress: ProgressOption = None,
) -> list[TokenStats]:
    """Per-token statistics of every record's text under ``model`` (one forward pass each).

    With a ``store`` the result is cached under the model's fingerprint, the hash of the
    records' ids and texts, ``distribution`` and the scoring window, so a killed run
    resumes without scoring again.
    """
    texts = list(records.texts)

    def create() -> list[TokenStats]:
        return model.token_stats(
            texts,
            batch_size=batch_size,
            distribution=distribution,
            stride=stride,
            progress=progress,
        )

    if store is None:
        return create()
    st = store if isinstance(store, ArtifactStore) else ArtifactStore(store)
    key = {
        "kind": "llm-token-stats",
        "model": str(model.fingerprint),
        "texts": records.texts_hash(),
        "distribution": bool(distribution),
        "max_length": int(model.max_length),
        "stride": stride,
        "device": str(model.device).split(":")[0],
    }
    out: list[TokenStats] = st.get_or_create(key, create, _save_stats, _load_stats, suffix=".npz")
    return out


def paired_stats_cached(
    target: CausalLM,
    base: CausalLM,
    records: TextRecords,
    *,
    stride: int | None = None,
    store: ArtifactStore | str | Path | None = None,
    progress: ProgressOption = None,
) -> list[PairedTokenStats]:
    """Per-token statistics of every record's text under ``target`` and its ``base``
    (:func:`privaudit.models.lm_paired.paired_token_stats`: two forward passes per text),
    cached under both models' fingerprints, the hash of the texts and the scoring window."""
    from privaudit.models.lm_paired import (
        check_pair,
        load_paired_stats,
        paired_token_stats,
        save_paired_stats,
    )

    check_pair(target, base)  # before the store: a stored entry must not hide a mismatch
    texts = list(records.texts)

    def create() -> list[PairedTokenStats]:
        return paired_token_stats(target, base, texts, stride=stride, progress=progress)

    if store is None:
        return create()
    st = store if isinstance(store, ArtifactStore) else ArtifactStore(store)
    key = {
        "kind": "llm-paired-token-stats",
        "target": str(target.fingerprint),
        "base": str(base.fingerprint),
        "texts": records.texts_hash(),
        "max_length": int(target.max_length),
        "stride": stride,
        "device": str(target.device).split(":")[0],
    }
    out: list[PairedTokenStats] = st.get_or_create(
        key, create, save_paired_stats, load_paired_stats, suffix=".npz"
    )
    return out


def _token_pieces(model: Any, ids: Sequence[int]) -> list[str]:
    """The text of each token (a byte-level token that is part of a UTF-8 character shows
    as the replacement character)."""
    own = getattr(model, "token_pieces", None)
    if callable(own):
        return [str(p) for p in own(ids)]
    from privaudit.models.causal_lm import decode_ids

    return decode_ids(model, [[int(i)] for i in ids])


def leaking_texts(
    model: Any,
    records: TextRecords,
    paired: Sequence[PairedTokenStats],
    scores: Mapping[str, NDArray[np.float64]],
    *,
    n: int = N_LEAKING_TEXTS,
) -> dict[str, Any]:
    """The ``n`` texts the leading base signal scores highest, token by token.

    The leading signal is the first of :data:`BASE_SIGNALS` computed (``ez-mia`` when it
    is). Every text is shown whatever its membership (a non-member near the top is a
    false positive the auditor should see), with, per token (the first
    ``_MAX_SHOWN_TOKENS``): its text, whether it is an error position of the target (its
    top-1 prediction is wrong: EZ-MIA's zone), the shift ``l_t - r_t`` of its
    log-probability (nats) and its token-level InfoRMIA score (bits). The first token is
    context only (no score).
    """
    from privaudit.signals.text_finetune import token_scores

    signal = next(s for s in BASE_SIGNALS if s in scores)
    values = np.asarray(scores[signal], dtype=np.float64)
    order = np.argsort(-values, kind="stable")[: max(0, int(n))]
    member = records.member
    out: list[dict[str, Any]] = []
    for i in order.tolist():
        p = paired[i]
        ts = token_scores(p)
        k = min(p.n_tokens, _MAX_SHOWN_TOKENS)
        pieces = _token_pieces(model, p.ids[:k].tolist())
        out.append(
            {
                "id": str(records.ids[i]),
                "member": None if member is None else bool(member[i]),
                "score": float(values[i]),
                "rank": len(out) + 1,
                "n_tokens": p.n_tokens,
                "n_error_positions": int(np.sum(ts["error"])),
                "tokens": pieces,
                # position j >= 1 scores token j; token 0 is context only
                "error": [None, *[bool(e) for e in ts["error"][: k - 1]]],
                "shift": [None, *[round(float(d), 4) for d in ts["shift"][: k - 1]]],
                "informia": [None, *[round(float(d), 4) for d in ts["informia"][: k - 1]]],
                "truncated": p.n_tokens > k,
            }
        )
    return {"signal": signal, "n": len(out), "texts": out}


# --------------------------------------------------------------------------------------
# step: signals, metrics, blind baseline, bounds
# --------------------------------------------------------------------------------------


def score_signals(
    target_stats: Sequence[TokenStats],
    records: TextRecords,
    settings: LLMAuditSettings,
    *,
    reference_stats: Sequence[TokenStats] | None = None,
    same_tokenizer: bool = True,
) -> dict[str, NDArray[np.float64]]:
    """The configured signals of every record (higher = member), :mod:`privaudit.signals.text`."""
    from privaudit.signals.text import text_signals

    names = tuple(settings.signals)
    missing_ref = [n for n in names if n in REFERENCE_SIGNALS] if reference_stats is None else []
    if missing_ref:
        raise fail("reference", f"a reference model for the signals {missing_ref}", "none")
    return text_signals(
        target_stats,
        list(records.texts),
        names=names,
        reference=reference_stats,
        same_tokenizer=same_tokenizer,
        k=settings.k,
    )


#: The unit of randomisation of the audited texts (``params["group_unit"]`` of every attack).
GROUP_UNIT = "document"
#: Document-bootstrap samples of each TPR at low FPR's interval.
TPR_CI_RESAMPLES = 400
#: Level of the TPR intervals (as the AUC's).
TPR_CI_CONFIDENCE = 0.95


def signal_metrics(
    scores: Mapping[str, NDArray[np.float64]], records: TextRecords
) -> tuple[list[AttackScores], dict[str, AttackMetrics]]:
    """One attack per signal: its scores and metrics (ROC, AUC, TPR at low FPR).

    The chunks of a document share its membership, so the documents are the independent
    units (:func:`privaudit.metrics.roc.attack_metrics` with ``groups``): a TPR at FPR
    ``f`` is reported only with at least ``1 / f`` non-member documents, and the figures
    are a warning with fewer than 100 documents of one kind. With one chunk per document
    this is the rule over chunks."""
    if records.member is None:
        raise fail("records.member", "known membership", "None")
    ids = np.asarray(records.ids)
    out: list[AttackScores] = []
    metrics: dict[str, AttackMetrics] = {}
    for name, s in scores.items():
        params = {"signal": name, "group_unit": GROUP_UNIT}
        a = AttackScores(name, ids, np.asarray(s, dtype=np.float64), params)
        out.append(a)
        metrics[name] = attack_metrics(a, records.member, groups=records.documents)
    return out, metrics


def tpr_ci_fields(
    scores: NDArray[np.float64], records: TextRecords, *, seed: int
) -> dict[str, Any]:
    """The ``results.json`` fields of an attack's TPR-at-FPR intervals: ``tpr_at_fpr_ci``
    (``{"0.001": [lo, hi] or None, "0.01": ...}``, None where the TPR is n/a), its
    confidence, method and number of samples
    (:func:`privaudit.metrics.roc.tpr_at_fpr_bootstrap_ci`: documents resampled whole,
    members and non-members apart; seeded by the audit's seed)."""
    if records.member is None:
        raise fail("records.member", "known membership", "None")
    ci = tpr_at_fpr_bootstrap_ci(
        scores,
        records.member,
        DEFAULT_FPRS,
        groups=records.documents,
        confidence=TPR_CI_CONFIDENCE,
        n_resamples=TPR_CI_RESAMPLES,
        seed=seed,
    )
    return {
        "tpr_at_fpr_ci": {k: None if v is None else list(v) for k, v in ci.items()},
        "tpr_at_fpr_ci_confidence": TPR_CI_CONFIDENCE,
        "tpr_at_fpr_ci_method": f"{TPR_CI_METHOD} ({GROUP_UNIT}s resampled)",
        "tpr_at_fpr_ci_resamples": TPR_CI_RESAMPLES,
    }


def blind_metrics(
    records: TextRecords, settings: LLMAuditSettings
) -> tuple[AttackScores, AttackMetrics, ShiftTest | None]:
    """The blind baseline (:mod:`privaudit.llm.blind`), its metrics and its
    document-level permutation test (None when ``blind_permutations`` is 0)."""
    if records.member is None:
        raise fail("records.member", "known membership", "None")
    a, test = blind_baseline_and_test(
        np.asarray(records.ids),
        records.texts,
        records.member,
        documents=records.documents,
        n_permutations=settings.blind_permutations,
        n_folds=settings.blind_folds,
        seed=settings.seed,
    )
    a = dataclasses.replace(a, params={**a.params, "group_unit": GROUP_UNIT})
    return a, attack_metrics(a, records.member, groups=records.documents), test


#: Level of the blind baseline's shift test.
SHIFT_TEST_LEVEL = 0.05


def blind_warning(test: ShiftTest | None) -> str | None:
    """The warning when the blind baseline's AUC is significantly above what member and
    non-member texts drawn from one source give: its document-permutation p-value below
    :data:`SHIFT_TEST_LEVEL`. None without a test."""
    if test is None or not test.p_value < SHIFT_TEST_LEVEL:
        return None
    return (
        f"The blind baseline (a text-only classifier, no access to the model) separates "
        f"member from non-member texts: AUC {test.auc:.3f}, above what random assignment of "
        f"the {test.unit}s gives (permutation p = {test.p_value:.3f}, {test.n_permutations} "
        f"permutations; 95% of permuted AUCs below {test.null_auc_95:.3f}). The two text "
        "samples differ in distribution, so the attacks' figures are not evidence of "
        "membership leakage on their own; the Zero-Run audit (privaudit zero-run) corrects "
        "the bounds for such a shift."
    )


def _placement_device(models: Sequence[CausalLM]) -> str | None:
    """The device the scoring passes name for a Ray executor's placement: ``"auto"`` when
    every model was asked for ``auto`` and sits on the CPU (so that a task placed on a GPU
    node moves its model there, and one placed elsewhere scores it where it is); None
    otherwise (an explicit ``cpu`` / ``cuda[:N]``, or models the driver put on a GPU:
    they travel as loaded, and CUDA weights load only where that GPU exists), and the
    passes then reserve no GPU (:mod:`privaudit.runtime.task_resources`)."""
    ok = all(
        getattr(m, "requested_device", None) == "auto" and getattr(m, "device", None) == "cpu"
        for m in models
    )
    return "auto" if ok and models else None


class _ScoringPass:
    """One executor task of :func:`audit_language_model`: a model's token statistics.

    It names ``"auto"`` where the models may move (:func:`_placement_device`), so that a
    Ray executor reserves a GPU for it where the cluster has one and pins it
    (``on_device``) to the device it was placed for; the task then moves the model there
    before scoring (:meth:`~privaudit.models.causal_lm.CausalLM.on_device`). Here, one
    pass after the other, it scores the models where they are."""

    def __init__(
        self, records: TextRecords, device: str | None, pinned: str | None = None, **kw: Any
    ) -> None:
        self.records = records
        self.device = device
        self.pinned = pinned
        self.kw = kw

    def on_device(self, device: str) -> _ScoringPass:
        return _ScoringPass(self.records, device, device, **self.kw)

    def __call__(self, model_distribution: tuple[CausalLM, bool]) -> list[TokenStats]:
        model, distribution = model_distribution
        if self.pinned is not None and callable(getattr(model, "on_device", None)):
            model = model.on_device(self.pinned)
        return token_stats_cached(model, self.records, distribution=distribution, **self.kw)


def _default_settings(reference: CausalLM | None, base: CausalLM | None) -> LLMAuditSettings:
    """The default settings: every signal that the given reference and base models allow."""
    names = tuple(
        n
        for n in LLMAuditSettings().signals
        if (reference is not None or n not in REFERENCE_SIGNALS)
        and (base is not None or n not in BASE_SIGNALS)
    )
    return LLMAuditSettings(signals=names)


def _checked_membership(records: TextRecords) -> NDArray[np.bool_]:
    """The records' true membership, known and with members and non-members."""
    from privaudit._validation import check_both_classes

    if records.member is None:
        raise fail("records.member", "known membership (members and non-members)", "None")
    check_both_classes(records.member, "records.member")
    return records.member


def _check_base_model(settings: LLMAuditSettings, base: CausalLM | None) -> None:
    """Refuse the signals against the base without a base model."""
    base_names = [n for n in settings.signals if n in BASE_SIGNALS]
    if base_names and base is None:
        raise fail(
            "base",
            f"the model the target was fine-tuned from, for the signals {base_names}",
            "none",
        )


def _scoring_passes(
    target: CausalLM,
    reference: CausalLM | None,
    records: TextRecords,
    settings: LLMAuditSettings,
    *,
    store: ArtifactStore | str | Path | None,
    progress: ProgressOption,
    executor: Mapper | None,
) -> tuple[list[TokenStats], list[TokenStats] | None]:
    """Token statistics of the target and of ``reference`` (unless None), one task per model."""
    passes: list[tuple[CausalLM, bool]] = [(target, "min-k++" in settings.signals)]
    if reference is not None:
        passes.append((reference, False))
    scoring = _ScoringPass(
        records,
        _placement_device([m for m, _ in passes]),
        batch_size=settings.batch_size,
        stride=settings.stride,
        store=store if store is None or isinstance(store, ArtifactStore) else ArtifactStore(store),
        progress=progress if executor is None else None,
    )
    mapper = executor if executor is not None else InlineMapper(progress=False)
    stats = mapper.map(
        scoring,
        passes,
        desc="scoring passes",
        label=lambda p: "target" if p[0] is target else "reference",
    )
    return stats[0], stats[1] if len(stats) > 1 else None


def _model_infos(
    target: CausalLM, reference: CausalLM | None, base: CausalLM | None
) -> dict[str, dict[str, Any]]:
    """:func:`model_info` of every model given, by role."""
    models = {"target": model_info(target)}
    if reference is not None:
        models["reference"] = model_info(reference)
    if base is not None:
        models["base"] = model_info(base)
    return models


def _text_signals(
    target_stats: Sequence[TokenStats],
    reference_stats: Sequence[TokenStats] | None,
    records: TextRecords,
    settings: LLMAuditSettings,
    *,
    same_tokenizer: bool,
) -> dict[str, NDArray[np.float64]]:
    """The configured signals other than the base ones (:func:`score_signals`)."""
    text_names = tuple(n for n in settings.signals if n not in BASE_SIGNALS)
    if not text_names:
        return {}
    return score_signals(
        target_stats,
        records,
        dataclasses.replace(settings, signals=text_names),
        reference_stats=reference_stats,
        same_tokenizer=same_tokenizer,
    )


def _signals_against_base(
    target: CausalLM,
    base: CausalLM | None,
    records: TextRecords,
    settings: LLMAuditSettings,
    signals: Mapping[str, NDArray[np.float64]],
    *,
    store: ArtifactStore | str | Path | None,
    progress: ProgressOption,
) -> tuple[
    dict[str, NDArray[np.float64]],
    tuple[dict[str, NDArray[Any]], ...] | None,
    dict[str, Any] | None,
]:
    """All signals in the configured order, per-token scores and leaking texts (None: no base)."""
    base_names = [n for n in settings.signals if n in BASE_SIGNALS]
    if not base_names or base is None:
        return dict(signals), None, None
    from privaudit.signals.text_finetune import finetune_signals, token_scores

    paired = paired_stats_cached(
        target, base, records, stride=settings.stride, store=store, progress=progress
    )
    every = {**signals, **finetune_signals(paired, names=base_names)}
    ordered = {n: every[n] for n in settings.signals}
    token_level = tuple(token_scores(p) for p in paired)
    return ordered, token_level, leaking_texts(target, records, paired, ordered)


def _attacks(
    signals: Mapping[str, NDArray[np.float64]],
    records: TextRecords,
    settings: LLMAuditSettings,
) -> tuple[list[AttackScores], dict[str, AttackMetrics], ShiftTest | None, str | None]:
    """Each attack's scores and metrics (signals, then the blind baseline), its test and warning."""
    scores, metrics = signal_metrics(signals, records)
    if not settings.blind_folds:
        return scores, metrics, None, None
    b, bm, test = blind_metrics(records, settings)
    scores.append(b)
    metrics[BLIND_BASELINE] = bm
    return scores, metrics, test, blind_warning(test)


def audit_language_model(
    target: CausalLM,
    records: TextRecords,
    settings: LLMAuditSettings | None = None,
    *,
    reference: CausalLM | None = None,
    base: CausalLM | None = None,
    store: ArtifactStore | str | Path | None = None,
    progress: ProgressOption = None,
    executor: Mapper | None = None,
) -> LLMAuditResult:
    """Audit ``target`` on member and non-member ``records`` (module docstring).

    Parameters
    ----------
    target : CausalLM
        The audited model (:mod:`privaudit.models.causal_lm`).
    records : TextRecords
        Texts with ids, documents and the true membership (both classes).
    settings : LLMAuditSettings, optional
        Signals and scoring; default all signals (the reference ones only with a
        ``reference`` model, the base ones only with a ``base``).
    reference : CausalLM, optional
        The reference model of the calibrated signals; when its tokenizer differs from
        the target's, the reference signals are per byte.
    base : CausalLM, optional
        The model the target was fine-tuned from: the reference of ``ez-mia``, ``wbc``
        and ``informia-token`` (same tokenizer as the target).
    store : ArtifactStore or path, optional
        Cache of token statistics (resume).
    progress : progress option, optional
        Progress of the scoring passes (:mod:`privaudit.runtime.progress`).
    executor : Executor, optional
        Runs the target's and the reference's scoring passes as independent tasks (one
        per model; each pass is cached in ``store``); default: here, one after the other.
        A pass is one model over every text: it is not split further (the model would be
        shipped to every shard). Per-text statistics do not depend on where they run, up
        to floating-point noise of the thread count (``torch`` reductions).
    """
    if settings is None:
        settings = _default_settings(reference, base)
    member = _checked_membership(records)
    _check_base_model(settings, base)
    read_reference = reference if any(n in REFERENCE_SIGNALS for n in settings.signals) else None
    t_stats, r_stats = _scoring_passes(
        target,
        read_reference,
        records,
        settings,
        store=store,
        progress=progress,
        executor=executor,
    )
    models = _model_infos(target, reference, base)
    same_tok = read_reference is None or (
        str(read_reference.tokenizer_id) == str(target.tokenizer_id)
    )
    signals = _text_signals(t_stats, r_stats, records, settings, same_tokenizer=same_tok)
    signals, token_level, leaking = _signals_against_base(
        target, base, records, settings, signals, store=store, progress=progress
    )
    scores, metrics, test, warning = _attacks(signals, records, settings)
    cis = {s.attack: auc_ci_fields(s.scores, member, groups=records.documents) for s in scores}
    tpr_cis = {s.attack: tpr_ci_fields(s.scores, records, seed=settings.seed) for s in scores}
    counts = {
        "target_tokens": int(sum(s.n_tokens for s in t_stats)),
        "reference_tokens": int(sum(s.n_tokens for s in r_stats)) if r_stats else 0,
    }
    return LLMAuditResult(
        records=records,
        scores=tuple(scores),
        metrics=metrics,
        auc_ci=cis,
        tpr_ci=tpr_cis,
        models=models,
        settings=settings,
        same_tokenizer=same_tok,
        blind_warning=warning,
        token_counts=counts,
        blind_test=test,
        token_scores=token_level,
        leaking=leaking,
    )


# --------------------------------------------------------------------------------------
# steps before the audit: the bundled corpus split by document, cached fine-tuning
# --------------------------------------------------------------------------------------


def shakespeare_split(
    sizes: Mapping[str, int | None],
    *,
    seed: int,
    doc_chars: int = 1200,
    chunk_chars: int = 256,
    chunks_per_document: Mapping[str, int] | None = None,
    coins: tuple[str, str] | None = None,
) -> tuple[TextRecords, TextSplit]:
    """Tiny Shakespeare -> documents -> chunks -> disjoint roles by document.

    ``sizes`` maps a role (``members``, ``non_members``, ``reference``, ``base``, ...) to
    its number of chunks (``None``: every document left); ``chunks_per_document`` caps
    the chunks a role takes from each document (e.g. 1 for the audited roles);
    ``coins=("members", "non_members")`` gives each audited document its own fair coin
    (what the one-run bound needs); see :func:`privaudit.data.text.split_by_document`.
    Returns all chunks and the split.
    """
    chunks = chunk_documents(shakespeare_documents(doc_chars=doc_chars), chunk_chars=chunk_chars)
    split = split_by_document(
        chunks, sizes, seed=seed, chunks_per_document=chunks_per_document, coins=coins
    )
    return chunks, split


def audited_records(chunks: TextRecords, split: TextSplit) -> TextRecords:
    """The audited records of a split: its ``members`` then its ``non_members``."""
    ids = [*split.chunks["members"], *split.chunks["non_members"]]
    member = np.r_[
        np.ones(len(split.chunks["members"]), bool),
        np.zeros(len(split.chunks["non_members"]), bool),
    ]
    return chunks.subset(ids).with_member(member)


def finetuned_model_dir(
    base: Callable[[], CausalLM],
    base_id: str,
    texts: Sequence[str],
    recipe: FineTuneRecipe,
    *,
    store: ArtifactStore | str | Path,
    purpose: str,
    progress: ProgressOption = None,
) -> Path:
    """The Hugging Face directory of ``finetune(base(), texts, recipe)`` (llm-core's recipe,
    :mod:`privaudit.models.lm_finetune`), cached in the artifact store.

    The entry is keyed by ``base_id`` (what identifies the starting weights: a file's
    sha256, or the key of a pre-training entry), the recipe, the texts and ``purpose``
    (e.g. ``"target"``, ``"reference"``, ``"pretrain"``); ``base`` is called only when the
    entry is missing, so a resumed run loads nothing it does not need. The directory
    loads with :meth:`privaudit.models.causal_lm.CausalLM.from_directory`.
    """
    from privaudit.models.lm_finetune import finetune

    st = store if isinstance(store, ArtifactStore) else ArtifactStore(store)
    key = {
        "kind": "llm-finetuned",
        "purpose": str(purpose),
        "base": str(base_id),
        "recipe": dataclasses.asdict(recipe),
        "texts": strings_sha256(texts),
    }

    def save(model: CausalLM, path: Path) -> None:
        model.save(path.parent)
        path.write_text(str(model.name), encoding="utf-8")

    if not st.contains(key):
        with interrupts.watching() as since:  # a fine-tune a signal cut short is not kept
            model = finetune(base(), texts, recipe, progress=progress)
            st.put(key, model, save, suffix=".name", since=since)
    return st.entry_dir(st.key(key))
