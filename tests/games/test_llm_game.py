"""The LLM audit's steps (games/llm.py) and its results (llm_pipeline), on a fake bigram LM
of the adapter's shape (tests/games/fake_lm.py): fast, no torch."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from fake_lm import BigramLM

from privaudit.cli.verify_cmd import verify_bundle
from privaudit.data.text import TextRecords
from privaudit.errors import InvalidInputError
from privaudit.llm.audit import (
    LLMAuditSettings,
    audit_language_model,
    audited_records,
    shakespeare_split,
    token_stats_cached,
)
from privaudit.llm.pipeline import llm_results, llm_summary
from privaudit.records import AttackScores
from privaudit.report import validate_results, write_report
from privaudit.report.bundle import make_manifest


@pytest.fixture(scope="module")
def world() -> tuple[TextRecords, BigramLM, BigramLM]:
    chunks, split = shakespeare_split(
        {"members": 110, "non_members": 110, "reference": 300}, seed=0
    )
    members = chunks.subset(split.chunks["members"]).texts
    target = BigramLM(members, alpha=0.01, name="target")
    reference = BigramLM(chunks.subset(split.chunks["reference"]).texts, alpha=0.01, name="ref")
    return audited_records(chunks, split), target, reference


def _shifted(records: TextRecords) -> TextRecords:
    """A shift: every member text gets a marker the blind baseline can see."""
    return TextRecords(
        ids=records.ids,
        texts=tuple(
            t + (" ZZQ" if m else "") for t, m in zip(records.texts, records.member, strict=True)
        ),
        documents=records.documents,
        member=records.member,
    )


def test_audit_signals_metrics_and_blind_baseline(world) -> None:  # type: ignore[no-untyped-def]
    records, target, reference = world
    res = audit_language_model(target, records, reference=reference)
    assert res.signal_names == ("loss", "zlib", "min-k", "min-k++", "reference", "reference-ratio")
    m = res.metrics
    assert m["loss"].auc > 0.6 and m["reference"].auc > m["loss"].auc  # the bigram memorises
    assert m["loss"].n_positives == 110 and m["loss"].n_negatives == 110
    counts = records.counts()
    assert counts["n_non_member_documents"] < 100 <= counts["n_non_member_chunks"]
    # >= 100 non-member chunks but < 100 non-member documents: the chunks of a document are
    # not independent, so TPR at 1% FPR is n/a, with the reason, and the figures a warning
    assert m["loss"].tpr_at_fpr["0.01"] is None
    assert m["loss"].tpr_at_fpr["0.001"] is None  # < 1000: no support
    assert any("TPR at 1% FPR is n/a" in w and "documents" in w for w in m["loss"].warnings)
    assert any("documents (fewer than 100 documents" in w for w in m["loss"].warnings)
    ci = res.tpr_ci["loss"]
    assert ci["tpr_at_fpr_ci"] == {"0.001": None, "0.01": None}
    assert "blind-baseline" in m and res.blind_warning is None  # a random document split


def test_without_reference_the_reference_signals_are_left_out(world) -> None:  # type: ignore[no-untyped-def]
    records, target, _ = world
    res = audit_language_model(
        target,
        records,
        LLMAuditSettings(signals=("loss", "zlib", "min-k", "min-k++"), blind_folds=0),
    )
    assert "blind-baseline" not in res.metrics
    assert "reference" not in res.signal_names and "loss" in res.signal_names
    with pytest.raises(InvalidInputError, match="reference: expected a reference model"):
        audit_language_model(target, records, LLMAuditSettings(signals=("loss", "reference")))


def test_token_stats_are_cached(tmp_path: Path, world) -> None:  # type: ignore[no-untyped-def]
    records, target, _ = world
    before = target.calls
    a = token_stats_cached(target, records, distribution=True, store=tmp_path)
    b = token_stats_cached(target, records, distribution=True, store=tmp_path)
    assert target.calls == before + 1  # the second read comes from the store
    assert all(np.array_equal(x.logprobs, y.logprobs) for x, y in zip(a, b, strict=True))
    assert all(np.array_equal(x.dist_std, y.dist_std) for x, y in zip(a, b, strict=True))  # type: ignore[arg-type]
    token_stats_cached(target, records.subset(records.ids[:5]), distribution=True, store=tmp_path)
    assert target.calls == before + 2  # other texts: a new entry


def test_results_verify_and_blind_warning(tmp_path: Path, world) -> None:  # type: ignore[no-untyped-def]
    records, target, reference = world
    shifted = _shifted(records)
    res = audit_language_model(target, shifted, reference=reference)
    assert res.blind_warning is not None and "privaudit zero-run" in res.blind_warning
    doc, table = llm_results(res, seed=0, data={"name": "t"}, models_config={"kind": "fake"})
    names = [a["name"] for a in doc["attacks"]]
    assert names[-1] == "blind-baseline" and "min-k++" in names
    assert {a["attack"] for a in doc["audits"]} == set(res.signal_names)  # blind not audited
    assert doc["llm"]["blind_baseline"]["distribution_shift"] is True
    assert doc["llm"]["counts"]["n_member_chunks"] == 110
    manifest = make_manifest(
        kind="membership-inference", command="t", config={}, seeds={}, dataset_fingerprint=None
    )
    out = write_report(tmp_path / "rep", doc, table, bundle=manifest)
    html = (out / "report.html").read_text()
    assert "Blind baseline" in html and "privaudit zero-run" in html and "Threat model" in html
    assert verify_bundle(out).ok
    s = llm_summary(doc)
    assert set(s) == {"signals", "blind_baseline", "epsilon_lower_bound"}
    assert s["epsilon_lower_bound"] == max(a["epsilon_lower_bound"] for a in doc["audits"])


def test_results_without_blind_baseline_with_provenance(world) -> None:  # type: ignore[no-untyped-def]
    """No blind baseline: ``llm.blind_baseline`` is None and no attack entry for it; a
    reference with another tokenizer is normalised per byte; provenance and timings are
    recorded as given, and left out when not given."""
    records, target, _ = world
    other = BigramLM(records.texts[:50], alpha=0.01, name="ref2", tokenizer_id="other")
    res = audit_language_model(
        target,
        records,
        LLMAuditSettings(signals=("loss", "reference"), blind_folds=0),
        reference=other,
    )
    doc, table = llm_results(
        res,
        seed=1,
        data={"name": "t"},
        models_config={"kind": "fake"},
        provenance={"split": "by role"},
        timings={"audit": 1.5},
    )
    validate_results(doc)
    llm = doc["llm"]
    assert llm["blind_baseline"] is None and not res.same_tokenizer
    assert [a["name"] for a in doc["attacks"]] == ["loss", "reference"] == list(table.scores)
    assert [a["n_reference_models"] for a in doc["attacks"]] == [0, 1]
    assert llm["signal_settings"]["reference_normalisation"] == "per byte"
    assert llm["provenance"] == {"split": "by role"} and doc["timings"] == {"audit": 1.5}
    plain, _ = llm_results(res, seed=1, data={"name": "t"}, models_config={"kind": "fake"})
    assert "provenance" not in plain["llm"] and "timings" not in plain
    assert plain["llm"]["split"] == llm["split"] and plain["target"] == doc["target"]


def test_the_report_object_saves_prints_and_reads_its_figures(tmp_path: Path, world) -> None:  # type: ignore[no-untyped-def]
    """LLMAuditReport (what run_llm_audit returns): typed figures from its results.json, the
    headline figures, the command line's summary, and save = the folder privaudit run writes."""
    from privaudit.llm.pipeline import LLMAuditReport

    records, target, reference = world
    res = audit_language_model(target, records, reference=reference)
    doc, table = llm_results(res, seed=0, data={"name": "t"}, models_config={"kind": "fake"})
    manifest = make_manifest(
        kind="membership-inference", command="t", config={}, seeds={}, dataset_fingerprint=None
    )
    report = LLMAuditReport(results=doc, scores=table, audit=res, out_dir=None, bundle=manifest)
    assert [a.name for a in report.attacks] == [a["name"] for a in doc["attacks"]]
    assert report.attack("loss").auc == doc["attacks"][0]["auc"]
    assert report.summary() == llm_summary(doc)
    assert (
        max(b.epsilon_lower_bound for b in report.bounds) == report.summary()["epsilon_lower_bound"]
    )
    text = str(report)
    assert text.startswith("Language model") and "Membership signals" in text
    folder = report.save(tmp_path / "saved")
    assert report.out_dir == folder and report.report_path == folder / "report.html"
    assert {p.name for p in folder.iterdir()} == {
        "results.json",
        "scores.npz",
        "report.html",
        "bundle.json",
    }
    assert verify_bundle(folder).ok
    assert (folder / "results.json").read_text(encoding="utf-8") == report.to_json() + "\n"


def test_signals_against_the_base_and_the_top_leaking_texts(tmp_path: Path, world) -> None:  # type: ignore[no-untyped-def]
    """With a base model (what the target was fine-tuned from): ez-mia, wbc and
    informia-token are computed after the other signals, audited, and the report shows the
    top leaking texts token by token with their error positions; the blind baseline stays
    in front of every figure."""
    records, target, reference = world
    chunks, split = shakespeare_split(
        {"members": 110, "non_members": 110, "reference": 300}, seed=0
    )
    base = BigramLM(chunks.subset(split.chunks["reference"]).texts, alpha=0.05, name="base")
    res = audit_language_model(
        target,
        records,
        LLMAuditSettings(blind_folds=2, blind_permutations=0),
        reference=reference,
        base=base,
        store=tmp_path,
    )
    assert res.signal_names[-3:] == ("ez-mia", "wbc", "informia-token")
    for name in ("ez-mia", "wbc", "informia-token"):
        assert res.metrics[name].auc > 0.6, name  # the bigram target memorises its members
    assert res.token_scores is not None and len(res.token_scores) == len(records)
    lk = res.leaking
    assert lk is not None and lk["signal"] == "ez-mia" and lk["n"] == 10
    scores = dict(
        zip(records.ids, next(s for s in res.scores if s.attack == "ez-mia").scores, strict=True)
    )
    assert [t["score"] for t in lk["texts"]] == sorted(scores.values(), reverse=True)[:10]
    first = lk["texts"][0]
    assert first["tokens"] and len(first["tokens"]) == len(first["error"]) == len(first["shift"])
    assert first["error"][0] is None and first["n_error_positions"] == sum(
        bool(e) for e in first["error"][1:]
    )
    doc, table = llm_results(res, seed=0, data={"name": "t"}, models_config={"kind": "fake"})
    validate_results(doc)
    assert doc["llm"]["leaking_texts"]["texts"][0]["id"] == first["id"]
    assert "base" in doc["llm"]["models"] and "fine-tuned from" in doc["llm"]["threat_model"]
    assert {a["attack"] for a in doc["audits"]} == set(res.signal_names)
    entry = {a["name"]: a for a in doc["attacks"]}
    assert entry["ez-mia"]["n_reference_models"] == 1
    manifest = make_manifest(
        kind="membership-inference", command="t", config={}, seeds={}, dataset_fingerprint=None
    )
    out = write_report(tmp_path / "rep", doc, table, bundle=manifest)
    html = (out / "report.html").read_text()
    assert (
        html.index("Blind baseline")
        < html.index("<h3>Signals</h3>")
        < html.index("Top leaking texts")
    )
    assert "background:#ffd6a5;" in html  # an error position is highlighted (not the legend)
    assert verify_bundle(out).ok
    # cached: the second audit reads the paired statistics from the store
    before = base.calls
    audit_language_model(
        target,
        records,
        LLMAuditSettings(blind_folds=0),
        reference=reference,
        base=base,
        store=tmp_path,
    )
    assert base.calls == before


def test_base_signals_need_a_base(world) -> None:  # type: ignore[no-untyped-def]
    records, target, _ = world
    with pytest.raises(
        InvalidInputError, match="base: expected the model the target was fine-tuned from"
    ):
        audit_language_model(target, records, LLMAuditSettings(signals=("loss", "ez-mia")))
    res = audit_language_model(
        target, records, LLMAuditSettings(signals=("wbc",), blind_folds=0), base=target
    )
    # the target against itself: no shift anywhere, no window votes member
    assert np.all(res.scores[0].scores == 0.0) and res.leaking is not None


def test_bounds_need_a_split_declared_random_that_the_blind_baseline_does_not_refute(
    tmp_path: Path,
    world,  # type: ignore[no-untyped-def]
) -> None:
    """The one-run bounds rest on member documents drawn at random: refused (0, not
    gated) unless the auditor declares it, and refused too when the blind baseline finds
    the two text samples differ, which a random draw would rarely give."""
    records, target, reference = world
    res = audit_language_model(target, records, reference=reference)
    assert res.blind_test is not None and res.blind_test.p_value >= 0.05
    kw = {"seed": 0, "data": {"name": "t"}, "models_config": {"kind": "fake"}}
    declared, table = llm_results(res, randomised_split=True, **kw)  # type: ignore[arg-type]
    undeclared, _ = llm_results(res, **kw)  # type: ignore[arg-type]
    assert max(a["epsilon_lower_bound"] for a in declared["audits"]) > 0.0
    assert all("gated" not in (a.get("extra") or {}) for a in declared["audits"])
    assert declared["target"]["randomised_split"] is True
    assert undeclared["target"]["randomised_split"] is False
    for a in undeclared["audits"]:
        assert a["epsilon_lower_bound"] == 0.0 and a["extra"]["gated"] is False
        assert "declared" not in a["extra"]["not_gated_reason"]
        assert "data.randomised_split" in a["extra"]["not_gated_reason"]
    assert llm_summary(undeclared)["epsilon_lower_bound"] == 0.0
    # the counts behind the refused bounds are those of the declared ones
    assert [a["counts"] for a in undeclared["audits"]] == [a["counts"] for a in declared["audits"]]
    manifest = make_manifest(
        kind="membership-inference", command="t", config={}, seeds={}, dataset_fingerprint=None
    )
    out = write_report(tmp_path / "rep", undeclared, table, bundle=manifest)
    assert verify_bundle(out).ok  # the refusal is recomputed, not only recorded
    assert "refused<sup>&Dagger;</sup>" in (out / "report.html").read_text()
    shifted = _shifted(records)
    res2 = audit_language_model(target, shifted, reference=reference)
    refuted, _ = llm_results(res2, randomised_split=True, **kw)  # type: ignore[arg-type]
    for a in refuted["audits"]:
        assert a["epsilon_lower_bound"] == 0.0 and a["extra"]["gated"] is False
        assert "blind baseline separates" in a["extra"]["not_gated_reason"]


def _one_chunk_per_document(records: TextRecords) -> TextRecords:
    """The same texts as a JSONL without a ``document`` field reads: each its own document."""
    return TextRecords(
        ids=records.ids, texts=records.texts, documents=records.ids, member=records.member
    )


def test_one_chunk_per_document_counts_chunks_and_says_so(tmp_path: Path, world) -> None:  # type: ignore[no-untyped-def]
    """Each record its own document: the support rule and warnings are those over records
    (as before documents were counted), the TPR has a seeded interval in results.json, the
    summary and the report, the sampling note says records were the units, verify passes."""
    from privaudit.llm.pipeline import (
        LLM_SAMPLING_NOTE,
        LLM_SAMPLING_NOTE_ONE_RECORD_PER_DOCUMENT,
        LLMAuditReport,
    )
    from privaudit.metrics.roc import attack_metrics

    records, target, reference = world
    flat = _one_chunk_per_document(records)
    settings = LLMAuditSettings(signals=("loss", "reference"), blind_permutations=20)
    res = audit_language_model(target, flat, settings, reference=reference)
    for s in res.scores:
        plain = attack_metrics(
            AttackScores(s.attack, s.record_ids, s.scores, s.params), flat.member
        )
        assert res.metrics[s.attack].to_dict() == plain.to_dict()
    assert res.metrics["loss"].tpr_at_fpr["0.01"] is not None  # 110 non-member documents
    ci = res.tpr_ci["loss"]["tpr_at_fpr_ci"]
    assert ci["0.001"] is None and ci["0.01"] is not None
    assert ci["0.01"][0] <= ci["0.01"][1]
    again = audit_language_model(target, flat, settings, reference=reference)
    assert again.tpr_ci == res.tpr_ci  # seeded
    doc, table = llm_results(res, seed=0, data={"name": "t"}, models_config={"kind": "fake"})
    assert doc["llm"]["sampling_assumption"] == LLM_SAMPLING_NOTE_ONE_RECORD_PER_DOCUMENT
    assert all(
        a["sampling_assumption"] == LLM_SAMPLING_NOTE_ONE_RECORD_PER_DOCUMENT for a in doc["audits"]
    )
    entry = next(a for a in doc["attacks"] if a["name"] == "loss")
    assert entry["tpr_at_fpr_ci"] == ci and entry["tpr_at_fpr_ci_resamples"] > 0
    assert llm_summary(doc)["signals"]["loss"]["tpr_at_fpr_ci"] == {"0.01": ci["0.01"]}
    manifest = make_manifest(
        kind="membership-inference", command="t", config={}, seeds={}, dataset_fingerprint=None
    )
    out = write_report(tmp_path / "rep", doc, table, bundle=manifest)
    html = (out / "report.html").read_text()
    assert "TPR @ 1% FPR [95% CI]" in html and "documents)" not in html
    report = verify_bundle(out)
    assert report.ok
    assert any(
        c.name.endswith(".tpr_at_fpr_ci") for c in report.checks if c.status == "not-recomputable"
    )
    text = str(LLMAuditReport(results=doc, scores=table, audit=res, out_dir=None))
    assert "TPR@1% [CI]" in text and "record by record" in text
    # by document: the other note, and the report says chunks and documents
    res2 = audit_language_model(target, records, settings, reference=reference)
    doc2, table2 = llm_results(res2, seed=0, data={"name": "t"}, models_config={"kind": "fake"})
    assert doc2["llm"]["sampling_assumption"] == LLM_SAMPLING_NOTE
    out2 = write_report(tmp_path / "rep2", doc2, table2, bundle=manifest)
    c = doc2["llm"]["counts"]
    assert (
        f"chunks ({c['n_member_documents']} / {c['n_non_member_documents']} documents)"
        in (out2 / "report.html").read_text()
    )
    assert verify_bundle(out2).ok  # the document rule is recomputed from the saved groups
    text2 = str(LLMAuditReport(results=doc2, scores=table2, audit=res2, out_dir=None))
    assert "non-member documents" in text2 and "by document" in text2
