"""``privaudit panoramia CONFIG.yaml`` end to end on a tiny tabular target trained outside
privaudit: results.json validates, the section has pano_api.md's keys, the split holds,
the report shows the section, ``privaudit verify`` recomputes the bounds, errors exit 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from privaudit.cli import main
from privaudit.data import load_adult
from privaudit.errors import InvalidInputError
from privaudit.report import load_results
from privaudit.report.results import ScoreTable

SECTION_KEYS = {
    "modality",
    "seed",
    "confidence",
    "sizes",
    "bounds",
    "comparisons",
    "curves",
    "generator",
    "helper",
    "classifiers",
    "split",
    "notes",
    "threat_model",
}


@pytest.fixture(scope="module")
def owner(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """A target trained outside privaudit on 500 Adult records; 400 of them are known."""
    import skops.io as sio
    from sklearn.neural_network import MLPClassifier

    root = tmp_path_factory.mktemp("owner")
    data = load_adult()
    perm = np.random.default_rng(7).permutation(data.n_records)
    train_ids, non_ids = data.record_ids[perm[:500]], data.record_ids[perm[500:700]]
    train = data.subset(train_ids)
    clf = MLPClassifier(hidden_layer_sizes=(16,), max_iter=40, random_state=0)
    with pytest.warns(Warning):  # not converged: fine for a target that overfits a little
        clf.fit(train.X, train.y)
    sio.dump(clf, root / "target.skops")
    known = train_ids[:400]
    (root / "members.txt").write_text("\n".join(map(str, known)) + "\n")
    (root / "non_members.txt").write_text("\n".join(map(str, non_ids)) + "\n")
    return {"root": root, "known": {str(i) for i in known}}


def _config(root: Path, **over: object) -> Path:
    cfg: dict[str, object] = {
        "modality": "tabular",
        "target": {"kind": "sklearn", "path": "target.skops"},
        "model": {"kind": "mlp", "params": {"hidden_layer_sizes": [16], "max_iter": 40}},
        "data": {"dataset": "adult", "members": "members.txt", "non_members": "non_members.txt"},
        "generator": {"kind": "baynet", "params": {"degree": 1}, "n_bins": 4},
        "scorer": {"max_iter": 30},
        "seed": 3,
        "output_dir": "rep",
    }
    cfg.update(over)
    p = root / "panoramia.yaml"
    p.write_text(yaml.safe_dump(cfg))
    return p


def test_panoramia_end_to_end(
    owner: dict, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:  # type: ignore[type-arg]
    root = owner["root"]
    cfg = _config(root, output_dir=str(tmp_path / "rep"))
    figs = tmp_path / "figs.json"
    assert main(["panoramia", str(cfg), "--no-progress", "--json", str(figs)]) == 0
    shown = capsys.readouterr().out
    assert "eps_tilde" in shown and "only if c_lb is" in shown and "m = " in shown
    assert "MIA: x + target loss " in shown and "baseline: x + helper loss" in shown
    rep = tmp_path / "rep"
    res = load_results(rep)  # validates against the schema
    pano = res["panoramia"]
    assert set(pano) == SECTION_KEYS
    s = pano["sizes"]
    assert s["n_known_members"] == 400
    assert s["n_generator_train"] + s["n_audit_members"] == 400
    assert s["m"] == s["n_test_members"] + s["n_test_synthetic"]
    b = pano["bounds"]
    assert b["eps_tilde"] == pytest.approx(max(0.0, b["c_plus_eps_lb"] - b["c_lb"]))
    assert pano["split"]["checked"] is True and pano["confidence"] == pytest.approx(0.95)
    table = ScoreTable.load(rep / res["files"]["scores"])
    ids = table.record_ids.astype(str)
    assert ids.size == s["m"]
    real = ids[table.member]
    assert set(real) <= owner["known"]  # test members are known members
    assert all(i.startswith("synth-") for i in ids[~table.member])  # the rest generated
    assert res["settings"]["game"] == "panoramia" and res["target"]["origin"] == "provided"
    figures = json.loads(figs.read_text())
    assert figures["eps_tilde"] == b["eps_tilde"]
    # real non-members were given: RM;RN and O(1) ran on the same target
    rm, o1 = pano["comparisons"]["rmrn"], pano["comparisons"]["o1"]
    assert rm is not None and o1 is not None
    assert figures["eps_rmrn"] == rm["eps_lb"] and figures["eps_o1"] == o1["eps_lb"]
    assert res["files"]["rmrn_scores"] == "rmrn_scores.npz"
    rm_table = ScoreTable.load(rep / "rmrn_scores.npz")
    assert rm_table.record_ids.size == rm["m"] and "rmrn" in pano["curves"]
    html = (rep / "report.html").read_text()
    assert 'id="panoramia"' in html and "Threat model." in html
    assert main(["verify", str(rep), "--all"]) == 0
    checked = capsys.readouterr().out
    assert "verify: OK" in checked
    for name in ("panoramia.bounds.eps_tilde", "panoramia.comparisons.rmrn.eps_lb"):
        assert f"ok  {name}" in checked
    # a finished report is not replaced without --overwrite
    assert main(["panoramia", str(cfg), "--no-progress"]) == 2
    assert "--overwrite" in capsys.readouterr().err
    # the artifact store sits in the report folder; a killed run (only the store left) resumes
    # without --overwrite and recomputes nothing: no entry is rewritten, the numbers are the same
    assert res["settings"]["cache_dir"] == str(rep / "cache")
    stored = {
        p: p.stat().st_mtime_ns for p in (rep / "cache" / "objects").rglob("*") if p.is_file()
    }
    assert stored
    for p in rep.iterdir():
        if p.name != "cache":
            p.unlink()
    assert main(["panoramia", str(cfg), "--no-progress"]) == 0
    again = load_results(rep)
    assert again["panoramia"]["bounds"] == b and again["panoramia"]["split"] == pano["split"]
    now = {p: p.stat().st_mtime_ns for p in (rep / "cache" / "objects").rglob("*") if p.is_file()}
    assert now == stored


def test_panoramia_mia_reading_the_helper(
    owner: dict, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:  # type: ignore[type-arg]
    """config ``mia_reads_helper``: the MIA and RM;RN's classifier read h's loss too; recorded,
    said in the threat model, verified; a resumed run recomputes nothing (h's features on
    both record sets come from the store)."""
    rep = tmp_path / "rep"
    cfg = _config(owner["root"], output_dir=str(rep), mia_reads_helper=True)
    assert main(["panoramia", str(cfg), "--no-progress"]) == 0
    shown = capsys.readouterr().out
    assert "MIA: x + target loss + helper loss" in shown and "baseline: x + helper loss" in shown
    pano = load_results(rep)["panoramia"]
    assert pano["classifiers"]["mia"]["reads_helper"] is True
    assert pano["classifiers"]["rmrn"]["reads_helper"] is True
    assert "reads_helper" not in pano["classifiers"]["baseline"]
    assert "so does RM;RN's classifier" in pano["threat_model"]
    assert main(["verify", str(rep)]) == 0
    stored = {
        p: p.stat().st_mtime_ns for p in (rep / "cache" / "objects").rglob("*") if p.is_file()
    }
    for p in rep.iterdir():
        if p.name != "cache":
            p.unlink()
    assert main(["panoramia", str(cfg), "--no-progress"]) == 0
    assert load_results(rep)["panoramia"]["bounds"] == pano["bounds"]
    now = {p: p.stat().st_mtime_ns for p in (rep / "cache" / "objects").rglob("*") if p.is_file()}
    assert now == stored


def test_bad_inputs_exit_2_before_any_work(
    owner: dict, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:  # type: ignore[type-arg]
    root = owner["root"]
    (tmp_path / "ids.txt").write_text("not-an-id\n")
    cfg = _config(
        root,
        output_dir=str(tmp_path / "rep"),
        data={"dataset": "adult", "members": str(tmp_path / "ids.txt")},
    )
    assert main(["panoramia", str(cfg), "--no-progress"]) == 2
    assert "record ids" in capsys.readouterr().err
    assert not (tmp_path / "rep" / "results.json").exists()
    both = tmp_path / "both.txt"
    both.write_text((root / "members.txt").read_text().splitlines()[0] + "\n")
    cfg = _config(
        root,
        output_dir=str(tmp_path / "rep"),
        data={"dataset": "adult", "members": "members.txt", "non_members": str(both)},
    )
    assert main(["panoramia", str(cfg), "--no-progress"]) == 2
    assert (
        "data.non_members: expected records that are not known members" in capsys.readouterr().err
    )


def test_panoramia_image_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A tiny MNIST CNN (torch, safetensors) audited through the image modality."""
    pytest.importorskip("torch")
    from privaudit.data import load_mnist
    from privaudit.models.torch_models import TorchRecipe, TorchTrainer, save_torch_model

    params = {
        "factory": "privaudit.models.torch_nets:small_cnn",
        "factory_kwargs": {"n_classes": 10, "channels": 4, "image_shape": [1, 28, 28]},
        "epochs": 1,
        "lr": 0.003,
        "input_shape": [1, 28, 28],
        "device": "cpu",
    }
    data = load_mnist()
    train_ids = data.record_ids[:300]
    kw = {**params, "input_shape": (1, 28, 28)}
    target = TorchTrainer(TorchRecipe(**kw), n_classes=10).fit(
        data.subset(train_ids).X, data.subset(train_ids).y, seed=0
    )
    save_torch_model(target, tmp_path / "cnn.safetensors")
    (tmp_path / "members.txt").write_text("\n".join(train_ids[:240]) + "\n")
    cfg = {
        "modality": "image",
        "target": {"kind": "torch", "path": "cnn.safetensors"},
        "model": {"kind": "torch", "params": params},
        "data": {"dataset": "mnist", "members": "members.txt"},
        "generator": {"vae": {"epochs": 1, "channels": 4, "hidden": 32, "latent_dim": 4}},
        "scorer": {"epochs": 2, "channels": 4, "hidden": 16, "loss_hidden": 8, "patience": None},
        "output_dir": "rep",
    }
    p = tmp_path / "image.yaml"
    p.write_text(yaml.safe_dump(cfg))
    assert main(["panoramia", str(p), "--no-progress"]) == 0
    assert "PANORAMIA (image)" in capsys.readouterr().out
    res = load_results(tmp_path / "rep")
    pano = res["panoramia"]
    assert pano["modality"] == "image" and pano["sizes"]["n_known_members"] == 240
    assert pano["comparisons"] == {"rmrn": None, "o1": None}  # no real non-members given
    assert res["target"]["train_accuracy"] is not None
    assert main(["verify", str(tmp_path / "rep")]) == 0


@pytest.mark.parametrize(
    ("reference", "words", "mia_reads"),
    [
        (None, "a model fine-tuned with the target's recipe, both on D_G", "2 reference losses"),
        (
            "generator",
            "the generator's own language model, fine-tuned on D_G only",
            "reference loss",
        ),
    ],
)
def test_panoramia_text_end_to_end(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    reference: str | None,
    words: str,
    mia_reads: str,
) -> None:
    """A tiny GPT fine-tuned on 20 Tiny Shakespeare chunks, audited through the text modality
    from a JSONL (member true = known member, false = real non-member: RM;RN and O(1) run);
    with the default references (both) and with G's LM alone."""
    pytest.importorskip("transformers")
    from privaudit.data.text import write_text_records
    from privaudit.llm.audit import audited_records, shakespeare_split
    from privaudit.models.lm_builders import tiny_gpt
    from privaudit.models.lm_finetune import FineTuneRecipe, finetune

    recipe = {"steps": 12, "batch_size": 8, "learning_rate": 3e-3, "warmup_steps": 2}
    chunks, split = shakespeare_split(
        {"members": 20, "non_members": 16},
        seed=0,
        chunk_chars=96,
        chunks_per_document={"members": 1, "non_members": 1},
    )
    records = audited_records(chunks, split)
    write_text_records(records, tmp_path / "texts.jsonl")
    base = tiny_gpt(seed=0, n_embd=32, max_length=128)
    base.save(tmp_path / "base")
    members = [t for t, m in zip(records.texts, records.member, strict=True) if m]
    finetune(base, members, FineTuneRecipe(**recipe, seed=0)).save(tmp_path / "target")
    cfg = {
        "modality": "text",
        "target": {"kind": "huggingface", "path": "target"},
        "base": {"path": "base"},
        "finetune": recipe,
        "data": {"texts": "texts.jsonl"},
        "generator": {"top_k": 20, "max_new_tokens": 64, "min_chars": 20, "max_chars": 200},
        "scorer": {"epochs": 2, "batch_size": 16, "text_bytes": 32},
        "device": "cpu",
        "output_dir": "rep",
    }
    if reference is not None:
        cfg["scorer"]["reference"] = reference  # type: ignore[index]
    p = tmp_path / "text.yaml"
    p.write_text(yaml.safe_dump(cfg))
    assert main(["panoramia", str(p), "--no-progress"]) == 0
    shown = capsys.readouterr().out
    assert "PANORAMIA (text)" in shown
    assert f"MIA: x + target loss + {mia_reads}" in " ".join(shown.split())
    res = load_results(tmp_path / "rep")
    pano = res["panoramia"]
    assert pano["modality"] == "text" and pano["sizes"]["n_known_members"] == 20
    assert pano["comparisons"]["rmrn"] is not None and pano["comparisons"]["o1"] is not None
    assert res["settings"]["model"]["recipe"]["finetune"] == recipe
    # every classifier sees the references' loss too (default: G's LM and the target's
    # recipe on D_G), and the report says so
    want = reference or "generator+target-recipe"
    assert pano["classifiers"]["baseline"]["network"]["reference"] == want
    assert pano["classifiers"]["mia"]["network"]["reference"] == want
    assert words in pano["threat_model"]
    assert main(["verify", str(tmp_path / "rep")]) == 0


def test_known_texts_from_the_bundled_corpus(tmp_path: Path) -> None:
    """data.texts: tiny-shakespeare takes members and non-members from id files, disjoint."""
    from privaudit.data.text import chunk_documents, shakespeare_documents
    from privaudit.panoramia.pipeline import load_known

    ids = chunk_documents(shakespeare_documents()).ids
    cfg = _tiny_shakespeare_config(tmp_path, list(ids[:5]), list(ids[-3:]))
    known = load_known(cfg)
    assert known.members.ids == tuple(ids[:5]) and known.non_members.ids == tuple(ids[-3:])
    (tmp_path / "n.txt").write_text(ids[0] + "\n")
    with pytest.raises(
        InvalidInputError, match=r"data\.non_members: expected records that are not"
    ):
        load_known(cfg)


def _tiny_shakespeare_config(tmp_path: Path, members: list[str], non: list[str]) -> Any:
    from privaudit.panoramia.config import panoramia_config_from_dict

    (tmp_path / "m.txt").write_text("\n".join(members) + "\n")
    (tmp_path / "n.txt").write_text("\n".join(non) + "\n")
    return panoramia_config_from_dict(
        {
            "modality": "text",
            "target": {"kind": "huggingface", "path": "t"},
            "base": {"path": "b"},
            "data": {
                "texts": "tiny-shakespeare",
                "members": str(tmp_path / "m.txt"),
                "non_members": str(tmp_path / "n.txt"),
            },
        }
    )


def test_loader_refuses_a_document_split_between_members_and_non_members(
    tmp_path: Path,
) -> None:
    from privaudit.data.text import (
        TextRecords,
        chunk_documents,
        shakespeare_documents,
        write_text_records,
    )
    from privaudit.panoramia.config import panoramia_config_from_dict
    from privaudit.panoramia.pipeline import load_known

    chunks = chunk_documents(shakespeare_documents())
    first = [
        i for i, d in zip(chunks.ids, chunks.documents, strict=True) if d == chunks.documents[0]
    ]
    assert len(first) >= 2
    # whole documents on each side: accepted
    known = load_known(_tiny_shakespeare_config(tmp_path, first, list(chunks.ids[-3:])))
    assert known.members.ids == tuple(first)
    # one chunk of the members' document among the non-members: refused
    cfg = _tiny_shakespeare_config(tmp_path, first[:-1], [first[-1]])
    with pytest.raises(
        InvalidInputError,
        match=rf"data\.non_members: expected known members and real non-members from "
        rf"different documents .* found 1 document\(s\) with both \({len(first) - 1} member "
        r"and 1 non-member chunks\)",
    ):
        load_known(cfg)
    # a JSONL whose document holds a member and a non-member
    recs = TextRecords(
        ids=("a", "b", "c"),
        texts=("one text", "two text", "three text"),
        documents=("D1", "D1", "D2"),
        member=np.array([True, False, True]),
    )
    write_text_records(recs, tmp_path / "t.jsonl")
    jcfg = panoramia_config_from_dict(
        {
            "modality": "text",
            "target": {"kind": "huggingface", "path": "t"},
            "base": {"path": "b"},
            "data": {"texts": str(tmp_path / "t.jsonl")},
        }
    )
    with pytest.raises(InvalidInputError, match=r"data\.texts\.document: .* 1 document\(s\)"):
        load_known(jcfg)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_member_column_of_a_user_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A user's CSV whose ``member`` column marks known members (1), real non-members (0) and
    records not used (empty); the column is not a feature."""
    import pandas as pd
    import skops.io as sio
    from sklearn.neural_network import MLPClassifier

    from privaudit.config.build import table_with_member_column
    from privaudit.membership.config import DatasetConfig

    rng = np.random.default_rng(0)
    n = 700
    a, b = rng.normal(size=n), rng.normal(size=n)
    frame = pd.DataFrame(
        {
            "id": [f"r{i}" for i in range(n)],
            "a": a,
            "b": b,
            "c": rng.choice(["x", "y", "z"], size=n),
            "label": np.where(a + b + rng.normal(scale=0.5, size=n) > 0, "hi", "lo"),
            "member": ["1"] * 400 + ["0"] * 200 + [""] * 100,
        }
    )
    frame.to_csv(tmp_path / "t.csv", index=False)
    ds_cfg = DatasetConfig(path=tmp_path / "t.csv", label_column="label", id_column="id")
    table, members, non = table_with_member_column(ds_cfg, "member", field="member")
    assert "member" not in table.feature_names and members.size == 400 and non.size == 200
    train = table.subset(members)
    clf = MLPClassifier(hidden_layer_sizes=(8,), max_iter=300, random_state=0).fit(train.X, train.y)
    sio.dump(clf, tmp_path / "target.skops")
    cfg = {
        "modality": "tabular",
        "target": {"kind": "sklearn", "path": "target.skops"},
        "model": {"kind": "mlp", "params": {"hidden_layer_sizes": [8], "max_iter": 300}},
        "data": {
            "dataset": {"path": "t.csv", "label_column": "label", "id_column": "id"},
            "member_column": "member",
        },
        "generator": {"kind": "cart", "params": {"min_samples_leaf": 5}, "n_bins": 4},
        "scorer": {"max_iter": 20},
        "output_dir": "rep",
    }
    p = tmp_path / "p.yaml"
    p.write_text(yaml.safe_dump(cfg))
    assert main(["panoramia", str(p), "--no-progress"]) == 0, capsys.readouterr().err
    pano = load_results(tmp_path / "rep")["panoramia"]
    assert pano["sizes"]["n_known_members"] == 400
    assert pano["comparisons"]["rmrn"]["n_test_members"] > 0


def test_no_write_and_an_explicit_store(owner: dict, tmp_path: Path) -> None:  # type: ignore[type-arg]
    """write=False: the results come back and nothing is written (no report, no store);
    an explicit cache_dir holds the store outside the report folder, which stays without one."""
    from privaudit.panoramia.config import load_panoramia_config
    from privaudit.panoramia.pipeline import run_panoramia_audit

    root = owner["root"]
    cfg = load_panoramia_config(_config(root, output_dir=str(tmp_path / "rep")))
    res = run_panoramia_audit(cfg, write=False)
    assert res["settings"]["cache_dir"] is None and set(res["timings"]) == {
        "data",
        "target",
        "game",
    }
    assert not (tmp_path / "rep").exists()
    store = tmp_path / "store"
    cfg = load_panoramia_config(
        _config(root, output_dir=str(tmp_path / "rep"), cache_dir=str(store))
    )
    again = run_panoramia_audit(cfg)
    assert again["settings"]["cache_dir"] == str(store)
    assert again["panoramia"]["bounds"] == res["panoramia"]["bounds"]
    assert any(p.is_file() for p in (store / "objects").rglob("*"))
    assert not (tmp_path / "rep" / "cache").exists()
    assert load_results(tmp_path / "rep")["panoramia"]["bounds"] == res["panoramia"]["bounds"]


def test_the_result_saves_the_report_folder(owner: dict, tmp_path: Path) -> None:  # type: ignore[type-arg]
    """run_panoramia_audit's result is the results.json document (a dict) that saves the
    folder the command line writes: privaudit verify passes on it."""
    import privaudit

    cfg = privaudit.load_panoramia_config(_config(owner["root"], output_dir=str(tmp_path / "r")))
    res = privaudit.run_panoramia_audit(cfg, write=False)
    assert isinstance(res, privaudit.PanoramiaReport) and isinstance(res, dict)
    assert res.out_dir is None and res.report_path is None
    folder = res.save(tmp_path / "saved")
    names = {p.name for p in folder.iterdir()}
    assert {"results.json", "report.html", "bundle.json", "panoramia_scores.npz"} <= names
    assert res.report_path == folder / "report.html"
    assert (folder / "results.json").read_text(encoding="utf-8") == res.to_json() + "\n"
    assert json.loads(res.to_json()) == res.to_dict() == dict(res)
    assert res.summary()["eps_tilde"] == res["panoramia"]["bounds"]["eps_tilde"]
    report = privaudit.verify_bundle(folder)
    assert report.ok and report.count("mismatch") == 0


def test_the_ray_executor_gets_the_configs_gpus_per_task(
    owner: dict,  # type: ignore[type-arg]
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``executor: ray`` with ``ray_gpus_per_task: 0.25``: the game's executor is built
    with that fraction (stopped there: no Ray needed)."""
    import privaudit.panoramia.pipeline as pipeline
    from privaudit.panoramia.config import load_panoramia_config

    class _Seen(Exception):
        pass

    def spy(*_: object, **kw: object) -> None:
        raise _Seen(kw.get("gpus_per_task"))

    monkeypatch.setattr(pipeline, "make_executor", spy)
    cfg = load_panoramia_config(
        _config(
            owner["root"],
            output_dir=str(tmp_path / "rep"),
            executor="ray",
            ray_gpus_per_task=0.25,
        )
    )
    with pytest.raises(_Seen) as info:
        pipeline.run_panoramia_audit(cfg, write=False)
    assert info.value.args == (0.25,)
