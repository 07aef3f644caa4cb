"""The PANORAMIA facade: :func:`run_panoramia_audit` turns a
:class:`~privaudit.panoramia.config.PanoramiaConfig` into ``results.json``,
``panoramia_scores.npz`` (and ``rmrn_scores.npz``), ``report.html`` and ``bundle.json``
(``privaudit panoramia CONFIG.yaml``).

PANORAMIA (Kazmi et al., NeurIPS 2024, Sec. 3-4) audits a released model with no retraining
and no real non-members. Steps (each timed; the times go to ``results.json["timings"]``):

1. check the report directory (before any work) and every input path;
2. read the auditor's records and who is a known member (an id file or a member column;
   optional real non-members for the RM;RN and O(1) comparisons), checked disjoint;
3. load the released target without running its code (skops / safetensors /
   ``torch.load(weights_only=True)``, :func:`privaudit.models.provided.load_target_model`);
4. build the modality (:class:`~privaudit.panoramia.tabular.TabularModality`,
   :class:`~privaudit.panoramia.image.ImageModality` or
   :class:`~privaudit.panoramia.text.TextModality`: the target's recipe for the helper
   model, the generator and classifier settings) and play the game
   (:func:`privaudit.panoramia.game.run_panoramia`) with an artifact store (``cache_dir``,
   default ``<output_dir>/cache``; a folder holding only the store of an unfinished run is
   resumed, and the store is carried into the finished report folder) when the modality can
   cache its records (``records_to_arrays``: every modality of privaudit does);
5. the results document (:func:`privaudit.panoramia.report.panoramia_results`) and the
   report, written atomically (:func:`privaudit.panoramia.report.write_panoramia_report`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from privaudit._validation import fail
from privaudit.config.build import (
    build_trainer,
    load_dataset,
    provided_torch_recipe,
    table_with_member_column,
)
from privaudit.config.sections import torch_recipe
from privaudit.data import Dataset
from privaudit.errors import InvalidInputError
from privaudit.models.provided import (
    file_sha256,
    load_target_model,
    match_ids,
    read_id_file,
)
from privaudit.panoramia.config import PanoramiaConfig
from privaudit.panoramia.report import panoramia_results, write_panoramia_report
from privaudit.panoramia.result import PanoramiaReport
from privaudit.report import RESULTS_FILE, check_output_dir
from privaudit.report.bundle import make_manifest
from privaudit.runtime.executor_setting import make_executor
from privaudit.runtime.progress import ProgressOption, check_progress, progress_phase
from privaudit.runtime.timings import timed

__all__ = [
    "CACHE_NAME",
    "KnownRecords",
    "build_modality",
    "load_known",
    "load_known_records",
    "load_known_texts",
    "load_panoramia_target",
    "run_panoramia_audit",
]


def load_known_records(config: PanoramiaConfig) -> tuple[Dataset, Dataset | None, Dataset]:
    """``(known members, real non-members or None, the whole table)`` of a table config.

    Members come from ``data.members`` (an id file) or ``data.member_column`` (1 known
    member, 0 real non-member, empty not used; the column is dropped from the features);
    real non-members from ``data.non_members`` or the column's 0 rows. The two are checked
    disjoint; every id must be a record of the table.
    """
    d = config.data
    if d.dataset is None:
        raise fail("data.dataset", f"a table for modality {config.modality!r}", None)
    if d.member_column is not None:
        table, members, non_members = table_with_member_column(
            d.dataset, d.member_column, field="data.member_column"
        )
    else:
        table = load_dataset(d.dataset)
        if d.members is None:  # the config checks it
            raise fail("data.members", "a file of known member ids", None)
        members = match_ids(read_id_file(d.members, "data.members"), table.record_ids)
        non_members = (
            match_ids(read_id_file(d.non_members, "data.non_members"), table.record_ids)
            if d.non_members is not None
            else np.asarray([], dtype=table.record_ids.dtype)
        )
    shared = np.intersect1d(members, non_members)
    if shared.size:
        raise fail(
            "data.non_members",
            "records that are not known members",
            f"{shared.size} id(s) in both, e.g. {shared[:3].tolist()}",
        )
    out = []
    for what, ids in (("members", members), ("non_members", non_members)):
        try:
            out.append(table.subset(ids) if ids.size else None)
        except InvalidInputError as exc:
            raise fail(f"data.{what}", "ids of records of the table", str(exc)) from None
    if out[0] is None:
        raise fail("data.members", "at least one known member", "none")
    return out[0], out[1], table


@dataclasses.dataclass(frozen=True)
class KnownRecords:
    """The auditor's records: known members, optional real non-members, the number of classes
    (tables), and the fingerprint of the data they came from (``settings.dataset``)."""

    members: Any
    non_members: Any | None
    n_classes: int | None
    fingerprint: str


def _check_documents(members: Any, non: Any | None, field: str) -> None:
    """Refuse a document that holds both known members and real non-members: the game splits
    by document (:mod:`privaudit.panoramia.split`), and such a document's chunks would be told
    apart by their document, not by membership."""
    if non is None:
        return
    shared = sorted(set(members.documents) & set(non.documents))
    if shared:
        n_mem = sum(d in shared for d in members.documents)
        n_non = sum(d in shared for d in non.documents)
        raise fail(
            field,
            "known members and real non-members from different documents (every chunk of a "
            "document on one side)",
            f"{len(shared)} document(s) with both ({n_mem} member and {n_non} non-member "
            f"chunks), e.g. {shared[:3]}",
        )


def load_known_texts(config: PanoramiaConfig) -> KnownRecords:
    """text: the bundled Tiny Shakespeare chunks (members / non-members by id file) or a JSONL
    (``member`` true = known member, false = real non-member). A document may not hold both
    known members and real non-members (the game splits by document; the JSONL reader
    refuses it too)."""
    from privaudit.data.text import (
        chunk_documents,
        read_text_records,
        shakespeare_documents,
    )
    from privaudit.panoramia.config import TINY_SHAKESPEARE

    d = config.data
    if d.texts == TINY_SHAKESPEARE:
        records = chunk_documents(shakespeare_documents())
        if d.members is None:  # the config checks it
            raise fail("data.members", "a file of known member ids", None)
        members = records.subset([str(i) for i in read_id_file(d.members, "data.members")])
        non = None
        if d.non_members is not None:
            ids = [str(i) for i in read_id_file(d.non_members, "data.non_members")]
            non = records.subset(ids)
            shared = set(ids) & set(members.ids)
            if shared:
                raise fail(
                    "data.non_members",
                    "records that are not known members",
                    f"{len(shared)} id(s) in both, e.g. {sorted(shared)[:3]}",
                )
            _check_documents(members, non, "data.non_members")
    else:
        if d.texts is None:  # the config checks it
            raise fail("data.texts", "the texts of a text audit", None)
        records = read_text_records(d.texts, name="data.texts", require_both=False)
        is_member = np.asarray(records.member, dtype=bool)
        member_ids = [i for i, m in zip(records.ids, is_member, strict=True) if m]
        other_ids = [i for i, m in zip(records.ids, is_member, strict=True) if not m]
        members = records.subset(member_ids)
        non = records.subset(other_ids) if other_ids else None
    return KnownRecords(members, non, None, records.texts_hash())


def load_known(config: PanoramiaConfig) -> KnownRecords:
    """The known members (and real non-members) of any modality."""
    if config.modality == "text":
        return load_known_texts(config)
    members, non, table = load_known_records(config)
    return KnownRecords(members, non, table.n_classes, table.fingerprint())


def load_panoramia_target(config: PanoramiaConfig, *, n_classes: int | None) -> tuple[Any, str]:
    """The released target, loaded without running its code, and its fingerprint (SHA-256 of
    the model file; a language model's weights + tokenizer fingerprint)."""
    t = config.target
    if t.kind == "huggingface":
        from privaudit.models.causal_lm import CausalLM

        t.as_lm().check_exists("target")
        lm = CausalLM.from_directory(t.path, gguf_file=t.gguf_file, device=config.device)
        return lm, str(lm.fingerprint)
    if n_classes is None:  # a table always has classes
        raise fail("data", "a table with class labels", None)
    recipe = (
        provided_torch_recipe(t, config.model, config.config_dir) if t.kind == "torch" else None
    )
    model = load_target_model(
        t.kind, t.path, n_classes=n_classes, recipe=recipe, trusted_types=t.trusted_types
    )
    return model, file_sha256(t.path)


def build_modality(config: PanoramiaConfig, n_classes: int | None) -> Any:
    """The game's modality: its generator settings and the target's recipe for the helper."""
    g = config.generator_config()
    scorer = None if config.scorer is None else dict(config.scorer)
    if config.modality == "text":
        from privaudit.models.causal_lm import CausalLM
        from privaudit.panoramia.text import TextModality

        if config.base is None:  # the config checks it
            raise fail("base", "the base model the target was fine-tuned from", None)
        config.base.check_exists("base")
        base = CausalLM.from_directory(
            config.base.path, gguf_file=config.base.gguf_file, device=config.device
        )
        kw = {k: v for k, v in g.model_dump().items() if v is not None}
        return TextModality(base, config.finetune_recipe(), scorer=scorer, **kw)
    if config.model is None or n_classes is None:  # the config checks it
        raise fail("model", "the target's recipe", None)
    if config.modality == "image":
        from privaudit.panoramia.image import ImageModality

        recipe = torch_recipe(config.model.params, config.config_dir)
        shape = {} if recipe.input_shape is None else {"input_shape": recipe.input_shape}
        return ImageModality(recipe, n_classes=n_classes, vae=g.vae, scorer=scorer, **shape)
    from privaudit.panoramia.tabular import TabularModality

    kw = {"generator": g.kind, "generator_params": dict(g.params)}
    if g.n_bins is not None:
        kw["n_bins"] = g.n_bins
    trainer = build_trainer(config.model, n_classes, config_dir=config.config_dir)
    return TabularModality(trainer, scorer=scorer, **kw)


def _accuracy(model: Any, records: Any) -> float | None:
    if not isinstance(records, Dataset) or not hasattr(model, "logits"):
        return None
    pred = np.argmax(np.asarray(model.logits(records.X)), axis=1)
    return float(np.mean(pred == records.y))


#: Name of the artifact store inside the report folder (when ``cache_dir`` is not given).
CACHE_NAME = "cache"


def _replace(out_dir: Path, overwrite: bool) -> bool:
    """Whether writing may replace ``out_dir``: with ``overwrite``, or when it holds no report
    (only the artifact store of this or an unfinished run, which is resumed, not refused)."""
    return overwrite or (out_dir.is_dir() and not (out_dir / RESULTS_FILE).exists())


def _store(config: PanoramiaConfig, out_dir: Path | None, modality: Any) -> Any:
    """The game's artifact store, or None when the modality cannot cache its records."""
    from privaudit.runtime.store import ArtifactStore

    root = config.cache_dir
    if root is None and out_dir is not None:
        root = out_dir / CACHE_NAME
    if root is None or not hasattr(modality, "records_to_arrays"):
        return None
    return ArtifactStore(root)


def _report_dir(config: PanoramiaConfig, *, overwrite: bool, write: bool) -> Path | None:
    """The report folder, checked before any work (None when not writing); a folder holding
    only the store of an unfinished run is resumed (:func:`_replace`)."""
    if not write:
        return None
    out = Path(config.output_dir)
    return check_output_dir(out, overwrite=_replace(out, overwrite))


def _settings_section(config: PanoramiaConfig, known: KnownRecords, store: Any) -> dict[str, Any]:
    """``results["settings"]``: the data (with its fingerprint), the released target and its
    recipe (text: the fine-tuning recipe and the base model), the modality, generator, sizes,
    confidence and the artifact store."""
    dataset_desc = {**config.data.describe(), "fingerprint": known.fingerprint}
    if config.data.dataset is not None and config.data.dataset.name is not None:
        dataset_desc["name"] = config.data.dataset.name
    recipe: Any = None if config.model is None else config.model.model_dump(mode="json")
    if config.modality == "text":
        recipe = {
            "finetune": config.finetune or {},
            "base": config.base.describe() if config.base else None,
        }
    return {
        "dataset": dataset_desc,
        "model": {"target": config.target.describe(), "recipe": recipe},
        "modality": config.modality,
        "generator": dict(config.generator),
        "sizes": config.sizes.model_dump(exclude_none=True),
        "confidence": config.confidence,
        "cache_dir": None if store is None else str(store.root),
    }


def _target_section(target: Any, known: KnownRecords, fingerprint: str) -> dict[str, Any]:
    """``results["target"]``: accuracy on the known members (training records) and the real
    non-members, and the model's fingerprint."""
    return {
        "train_accuracy": _accuracy(target, known.members),
        "test_accuracy": _accuracy(target, known.non_members),
        "model_sha256": fingerprint,
    }


def _manifest(config: PanoramiaConfig, known: KnownRecords) -> dict[str, Any]:
    """The ``bundle.json`` manifest of the audit's report folder."""
    return make_manifest(
        kind="membership-inference",
        command="run_panoramia_audit",
        config=config.model_dump(mode="json"),
        seeds={"root": config.seed},
        dataset_fingerprint=known.fingerprint,
    )


def _write_report(
    config: PanoramiaConfig,
    out_dir: Path,
    results: dict[str, Any],
    result: Any,
    manifest: dict[str, Any],
    *,
    overwrite: bool,
) -> None:
    """The report folder, written atomically with its bundle manifest; the default store
    (``<output_dir>/cache``) is carried into it."""
    write_panoramia_report(
        out_dir,
        results,
        result.scores,
        rmrn_table=result.rmrn_scores,
        overwrite=_replace(out_dir, overwrite),
        bundle=manifest,
        carry=(CACHE_NAME,) if config.cache_dir is None else (),
    )


def run_panoramia_audit(
    config: PanoramiaConfig,
    *,
    provenance: Mapping[str, Any] | None = None,
    overwrite: bool = False,
    write: bool = True,
    progress: ProgressOption = None,
) -> PanoramiaReport:
    """Run the PANORAMIA audit of ``config`` (module docstring); return ``results.json``
    (a :class:`~privaudit.panoramia.result.PanoramiaReport`: the document, with
    ``summary()``, ``to_dict()`` and ``save(folder)``).

    Parameters
    ----------
    config : PanoramiaConfig
        From :func:`privaudit.panoramia.config.load_panoramia_config` (or built in code).
    provenance : mapping, optional
        How privaudit made the target (the example's training run), recorded as
        ``results["panoramia"]["provenance"]``.
    overwrite : bool
        Replace an existing finished report in ``config.output_dir``.
    write : bool
        Write the report folder.
    progress : progress option
        One report per step (:mod:`privaudit.runtime.progress`: None = nothing off a
        terminal; ``"auto"`` / ``"plain"`` = lines in a log, as the command line does; a
        callback ``fn(event)``; a tqdm-style class).
    """
    from privaudit.panoramia.game import run_panoramia

    progress = check_progress(progress)
    timings: dict[str, float] = {}
    with timed(timings, "data"), progress_phase("loading the data", enabled=progress):
        out_dir = _report_dir(config, overwrite=overwrite, write=write)
        config.check_paths()
        known = load_known(config)
    with timed(timings, "target"), progress_phase("target and modality", enabled=progress):
        target, fingerprint = load_panoramia_target(config, n_classes=known.n_classes)
        modality = build_modality(config, known.n_classes)
    with timed(timings, "game"):  # step 4: the game
        store = _store(config, out_dir, modality)
        executor = make_executor(
            config.executor,
            n_jobs=config.n_jobs,
            address=config.ray_address,
            gpus_per_task=config.ray_gpus_per_task,
            progress=False,
        )
        result = run_panoramia(
            modality,
            target,
            known.members,
            non_members=known.non_members,
            sizes=config.sizes.to_sizes(),
            seed=config.seed,
            confidence=config.confidence,
            store=store,
            mia_reads_helper=config.mia_reads_helper,
            progress=progress,
            executor=executor,
        )
        executor.close()
    results = panoramia_results(  # step 5: the results document and the report
        result.to_dict(),
        result.scores,
        seed=config.seed,
        settings=_settings_section(config, known, store),
        target=_target_section(target, known, fingerprint),
        provenance=provenance,
        timings=timings,
        rmrn=result.rmrn_scores is not None,
    )
    manifest = _manifest(config, known)
    if write and out_dir is not None:
        with progress_phase("writing the report", enabled=progress):
            _write_report(config, out_dir, results, result, manifest, overwrite=overwrite)
    return PanoramiaReport(
        results,
        scores=result.scores,
        rmrn_scores=result.rmrn_scores,
        bundle=manifest,
        out_dir=out_dir if write else None,
    )
