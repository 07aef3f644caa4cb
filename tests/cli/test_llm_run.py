"""``privaudit run`` with ``target.kind: huggingface``: a language-model audit of a local
tiny-GPT directory; errors name the field and exit 2; ``privaudit verify`` passes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from privaudit.cli import main
from privaudit.data.text import write_text_records
from privaudit.llm.audit import audited_records, shakespeare_split

pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def lm_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from privaudit.models.lm_builders import tiny_gpt

    root = tmp_path_factory.mktemp("lms")
    chunks, split = shakespeare_split({"members": 24, "non_members": 24}, seed=1)
    texts = write_text_records(audited_records(chunks, split), root / "texts.jsonl")
    return {
        "target": tiny_gpt(seed=0, max_length=128).save(root / "target"),
        "reference": tiny_gpt(seed=1, max_length=128).save(root / "reference"),
        "texts": texts,
    }


def _config(tmp_path: Path, lm_dirs: dict[str, Path], **over: object) -> Path:
    cfg: dict[str, object] = {
        "target": {"kind": "huggingface", "path": str(lm_dirs["target"])},
        "reference": {"path": str(lm_dirs["reference"])},
        "data": {"texts": str(lm_dirs["texts"])},
        "batch_size": 16,
        "blind_folds": 3,
        "device": "cpu",
        "output_dir": "rep",
    }
    cfg.update(over)
    p = tmp_path / "llm.yaml"
    p.write_text(yaml.safe_dump(cfg))
    return p


def test_run_huggingface_directory(tmp_path: Path, lm_dirs: dict[str, Path], capsys) -> None:  # type: ignore[no-untyped-def]
    cfg = _config(tmp_path, lm_dirs, cache_dir="cache")
    assert main(["run", str(cfg), "--no-progress"]) == 0
    shown = capsys.readouterr().out
    assert "reference-ratio" in shown and "blind-baseline" in shown
    res = json.loads((tmp_path / "rep" / "results.json").read_text())
    names = [a["name"] for a in res["attacks"]]
    assert names == [
        "loss",
        "zlib",
        "min-k",
        "min-k++",
        "reference",
        "reference-ratio",
        "blind-baseline",
    ]
    llm = res["llm"]
    assert llm["counts"] == {
        "n_member_chunks": 24,
        "n_non_member_chunks": 24,
        "n_member_documents": llm["counts"]["n_member_documents"],
        "n_non_member_documents": llm["counts"]["n_non_member_documents"],
    }
    assert llm["same_tokenizer"] is True and set(llm["models"]) == {"target", "reference"}
    assert res["settings"]["alpha"] is None and res["target"]["origin"] == "provided"
    with np.load(tmp_path / "rep" / "scores.npz", allow_pickle=False) as z:
        assert z["record_ids"].tolist()[:1] == [
            json.loads(lm_dirs["texts"].read_text().splitlines()[0])["id"]
        ]
    assert "Language-model audit" in (tmp_path / "rep" / "report.html").read_text()
    assert main(["verify", str(tmp_path / "rep")]) == 0
    # resume: the token statistics come from the cache; same numbers
    assert main(["run", str(cfg), "--no-progress", "--out", str(tmp_path / "rep2")]) == 0
    res2 = json.loads((tmp_path / "rep2" / "results.json").read_text())
    assert [a["auc"] for a in res2["attacks"]] == [a["auc"] for a in res["attacks"]]


@pytest.mark.parametrize(
    ("over", "match"),
    [
        (
            {"target": {"kind": "huggingface", "path": "no/such/dir"}},
            "target.path: expected a local Hugging Face model directory, found nothing",
        ),
        ({"reference": {"path": "missing-ref"}}, "reference.path: expected a local"),
        ({"data": {"texts": "none.jsonl"}}, "data.texts: expected an existing JSONL file"),
        ({"signals": ["loss", "perplexity"]}, "signals: expected signal names among"),
        ({"batch_size": 0}, "batch_size: Input should be greater than or equal to 1"),
        ({"device": "tpu"}, "device: expected auto, cpu, cuda or cuda:N"),
        ({"epochs": 3}, "epochs: unknown field"),
        ({"reference": None, "signals": ["loss", "reference"]}, "need a reference model"),
        (
            {"signals": ["loss", "ez-mia"]},
            "signals: ez-mia need the model the target was fine-tuned from",
        ),
        ({"base": {"path": "missing-base"}}, "base.path: expected a local"),
    ],
)
def test_config_errors_exit_2_naming_the_field(
    tmp_path: Path,
    lm_dirs: dict[str, Path],
    capsys,
    over: dict[str, object],
    match: str,  # type: ignore[no-untyped-def]
) -> None:
    cfg = _config(tmp_path, lm_dirs, **over)
    assert main(["run", str(cfg), "--no-progress"]) == 2
    assert match in capsys.readouterr().err
    assert not (tmp_path / "rep").exists()


def test_run_with_the_base_model(tmp_path: Path, lm_dirs: dict[str, Path], capsys) -> None:  # type: ignore[no-untyped-def]
    """``base:`` adds ez-mia, wbc and informia-token after the other signals, the base to
    the models and the top leaking texts to results.json and the report; verify passes;
    the blind baseline's verdict is printed before the table."""
    cfg = _config(
        tmp_path,
        lm_dirs,
        base={"path": str(lm_dirs["reference"])},
        blind_folds=2,
        blind_permutations=0,
    )
    assert main(["run", str(cfg), "--no-progress"]) == 0
    shown = capsys.readouterr().out
    assert shown.index("blind baseline") < shown.index("Membership signals")
    res = json.loads((tmp_path / "rep" / "results.json").read_text())
    names = [a["name"] for a in res["attacks"]]
    assert names[-4:] == ["ez-mia", "wbc", "informia-token", "blind-baseline"]
    assert set(res["llm"]["models"]) == {"target", "reference", "base"}
    assert res["settings"]["model"]["base"]["path"] == str(lm_dirs["reference"])
    lk = res["llm"]["leaking_texts"]
    assert lk["signal"] == "ez-mia" and lk["n"] == 10 and lk["texts"][0]["tokens"]
    html = (tmp_path / "rep" / "report.html").read_text()
    assert "Top leaking texts" in html and "ez-mia" in html
    assert main(["verify", str(tmp_path / "rep")]) == 0


def test_a_peft_adapter_target_without_peft_exits_2(
    tmp_path: Path, lm_dirs: dict[str, Path], capsys, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    from privaudit.llm.adapter import peft_available

    # peft ships with the llm extra: hide it (a None entry makes find_spec and import fail)
    monkeypatch.setitem(sys.modules, "peft", None)
    assert not peft_available()
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text(
        json.dumps({"base_model_name_or_path": str(lm_dirs["target"]), "peft_type": "LORA"})
    )
    cfg = _config(tmp_path, lm_dirs, target={"kind": "huggingface", "path": str(adapter)})
    assert main(["run", str(cfg), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "is a PEFT/LoRA adapter" in err and "pip install peft" in err
    assert not (tmp_path / "rep").exists()


def test_bad_jsonl_exits_2(tmp_path: Path, lm_dirs: dict[str, Path], capsys) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"id": 1, "text": "a b c", "member": true}\n{"id": 1, "text": "d", "member": false}\n'
    )
    cfg = _config(tmp_path, lm_dirs, data={"texts": str(bad)})
    assert main(["run", str(cfg), "--no-progress"]) == 2
    assert "data.texts (bad.jsonl line 2).id: expected unique ids" in capsys.readouterr().err
    assert not (tmp_path / "rep").exists()


def test_game_options_refused_for_a_language_model(
    tmp_path: Path, lm_dirs: dict[str, Path], capsys
) -> None:  # type: ignore[no-untyped-def]
    cfg = _config(tmp_path, lm_dirs)
    assert main(["run", str(cfg), "--game", "def-3.1", "--no-progress"]) == 2
    assert "--game/--game-trials" in capsys.readouterr().err


def test_run_huggingface_shows_plain_progress(
    tmp_path: Path, lm_dirs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """The language-model path of ``run`` reports its phases as plain lines (issue 29)."""
    cfg = _config(tmp_path, lm_dirs, signals=["loss"])
    assert main(["run", str(cfg), "--progress", "plain"]) == 0
    lines = [x for x in capsys.readouterr().err.splitlines() if x.startswith("privaudit: ")]
    assert lines[0] == "privaudit: loading the models..."
    assert any(x.startswith("privaudit: scoring (") for x in lines), lines
    assert lines[-1].startswith("privaudit: writing the report")


def test_a_peft_adapter_target_is_merged_into_its_base(
    tmp_path: Path, lm_dirs: dict[str, Path], capsys
) -> None:  # type: ignore[no-untyped-def]
    """With peft installed, a LoRA adapter directory is a target: merged into the base its
    adapter_config.json names (a local directory), which is the base signals' reference."""
    peft = pytest.importorskip("peft")
    import torch

    from privaudit.llm.adapter import adapter_base_dir, load_adapter_target
    from privaudit.models.causal_lm import CausalLM

    base = CausalLM.from_directory(lm_dirs["target"], device="cpu")
    cfg_lora = peft.LoraConfig(r=4, lora_alpha=8, target_modules=["c_attn"], fan_in_fan_out=True)
    wrapped = peft.get_peft_model(base.model, cfg_lora)
    torch.manual_seed(0)
    for name, p in wrapped.named_parameters():
        if "lora_B" in name:
            torch.nn.init.normal_(p, std=0.5)  # a non-trivial adapter
    adapter = tmp_path / "adapter"
    wrapped.save_pretrained(str(adapter))
    cfg_path = adapter / "adapter_config.json"
    raw = json.loads(cfg_path.read_text())
    raw["base_model_name_or_path"] = str(lm_dirs["target"])
    cfg_path.write_text(json.dumps(raw))
    assert adapter_base_dir(adapter) == lm_dirs["target"].resolve()
    text = "To be, or not to be, that is the question"
    with torch.no_grad():
        ids = torch.tensor([base.tokenize([text])[0]])
        want = wrapped(input_ids=ids).logits
    merged = load_adapter_target(adapter, lm_dirs["target"], device="cpu", max_length=128)
    with torch.no_grad():
        got = merged.model(input_ids=ids).logits
    assert torch.allclose(got, want, atol=1e-4)
    # the device as asked is kept (a Ray pass reserves a GPU for "auto"), the model loaded
    # where one is: here the CPU
    auto = load_adapter_target(adapter, lm_dirs["target"], device="auto", max_length=128)
    assert (auto.requested_device, auto.device) == ("auto", "cpu")
    assert merged.requested_device == "cpu"
    cfg = _config(
        tmp_path,
        lm_dirs,
        target={"kind": "huggingface", "path": str(adapter)},
        signals=["loss", "ez-mia"],
        blind_folds=0,
    )
    assert main(["run", str(cfg), "--no-progress"]) == 0
    res = json.loads((tmp_path / "rep" / "results.json").read_text())
    assert [a["name"] for a in res["attacks"]] == ["loss", "ez-mia"]
    assert res["llm"]["models"]["target"]["name"] == "adapter"
    assert "base" in res["llm"]["models"]
