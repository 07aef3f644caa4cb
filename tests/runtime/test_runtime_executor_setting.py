"""The one executor setting of every command: ``make_executor`` and the config fields
``executor`` / ``ray_address`` of record-risk, PANORAMIA and the language-model audit
(``privaudit run``'s classifier audit has had them; tests/test_pipeline_executor.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer

from privaudit.cli_common.ray_option import ray_address_of
from privaudit.config.base import ConfigError, validate_mapping
from privaudit.errors import InvalidInputError
from privaudit.llm.config import LLMAuditConfig
from privaudit.panoramia.config import PanoramiaConfig
from privaudit.record_risk.config import RecordRiskFileConfig
from privaudit.runtime.executor import LocalExecutor, RayExecutor
from privaudit.runtime.executor_setting import make_executor

RECORD_RISK = {
    "dataset": "adult",
    "target": {"kind": "generator", "generator": "baynet", "params": {"degree": 1}},
}


def test_make_executor_local_and_ray() -> None:
    local = make_executor("local", n_jobs=2, progress=False)
    assert isinstance(local, LocalExecutor) and local.n_jobs == 2
    remote = make_executor("ray", address="127.0.0.1:6379", progress=False)
    assert isinstance(remote, RayExecutor) and remote.address == "127.0.0.1:6379"
    assert remote.max_retries == 3
    assert make_executor("ray", address="local").address is None  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"kind": "slurm"}, "executor"),
        ({"kind": "local", "address": "auto"}, "ray_address"),
    ],
)
def test_make_executor_names_the_bad_setting(kw: dict, message: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(InvalidInputError, match=message):
        make_executor(**kw)


def test_ray_executor_rejects_negative_retries() -> None:
    with pytest.raises(InvalidInputError, match="max_retries"):
        RayExecutor(max_retries=-1)


def test_ray_flag_address() -> None:
    assert ray_address_of("local") is None
    assert ray_address_of("auto") == "auto"
    with pytest.raises(typer.BadParameter):
        ray_address_of(" ")


def test_record_risk_config_reads_the_executor_fields() -> None:
    cfg = validate_mapping(
        RecordRiskFileConfig, {**RECORD_RISK, "executor": "ray", "ray_address": "auto"}, source="t"
    )
    assert (cfg.executor, cfg.ray_address, cfg.n_jobs) == ("ray", "auto", 1)
    with pytest.raises(ConfigError, match="ray_address"):
        validate_mapping(RecordRiskFileConfig, {**RECORD_RISK, "ray_address": "auto"}, source="t")
    with pytest.raises(ConfigError, match="executor"):
        validate_mapping(RecordRiskFileConfig, {**RECORD_RISK, "executor": "dask"}, source="t")


def test_panoramia_and_llm_configs_read_the_executor_fields(tmp_path: Path) -> None:
    pano = {
        "modality": "tabular",
        "target": {"kind": "sklearn", "path": "t.skops"},
        "model": {"kind": "logistic"},
        "data": {"dataset": "adult", "members": "m.txt"},
    }
    cfg = validate_mapping(PanoramiaConfig, {**pano, "executor": "ray", "n_jobs": 2}, source="t")
    assert (cfg.executor, cfg.ray_address, cfg.n_jobs) == ("ray", None, 2)
    with pytest.raises(ConfigError, match="ray_address"):
        validate_mapping(PanoramiaConfig, {**pano, "ray_address": "auto"}, source="t")
    llm = {"target": {"kind": "huggingface", "path": str(tmp_path)}, "data": {"texts": "t.jsonl"}}
    cfg2 = validate_mapping(
        LLMAuditConfig, {**llm, "executor": "ray", "ray_address": "auto"}, source="t"
    )
    assert (cfg2.executor, cfg2.ray_address) == ("ray", "auto")
    with pytest.raises(ConfigError, match="ray_address"):
        validate_mapping(LLMAuditConfig, {**llm, "ray_address": "auto"}, source="t")


def test_every_config_reads_ray_gpus_per_task(tmp_path: Path) -> None:
    """``ray_gpus_per_task`` of run, record-risk, PANORAMIA and the language-model audit:
    1 by default, a fraction or a whole number taken, anything else refused by name; and
    ``make_executor`` passes it on to the Ray executor."""
    from privaudit.membership.config import AuditConfig

    configs = [
        (AuditConfig, {"dataset": "adult", "model": {"kind": "logistic"}}),
        (RecordRiskFileConfig, RECORD_RISK),
        (
            PanoramiaConfig,
            {
                "modality": "tabular",
                "target": {"kind": "sklearn", "path": "t.skops"},
                "model": {"kind": "logistic"},
                "data": {"dataset": "adult", "members": "m.txt"},
            },
        ),
        (
            LLMAuditConfig,
            {
                "target": {"kind": "huggingface", "path": str(tmp_path)},
                "data": {"texts": "t.jsonl"},
            },
        ),
    ]
    for cls, base in configs:
        assert validate_mapping(cls, base, source="t").ray_gpus_per_task == 1.0
        for ok in (0.25, 1, 2):
            cfg = validate_mapping(cls, {**base, "ray_gpus_per_task": ok}, source="t")
            assert cfg.ray_gpus_per_task == float(ok)
        for bad in (0, -1, 1.5, "two"):
            with pytest.raises(ConfigError, match="ray_gpus_per_task"):
                validate_mapping(cls, {**base, "ray_gpus_per_task": bad}, source="t")
    ex = make_executor("ray", address="auto", gpus_per_task=0.25, progress=False)
    assert isinstance(ex, RayExecutor) and ex.gpus_per_task == 0.25


def test_every_command_passes_ray_gpus_per_task_to_its_executor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """record-risk and the language-model audit build their Ray executor with the config's
    ``ray_gpus_per_task`` (``privaudit run``'s: tests/cluster/test_cluster_gpu.py;
    PANORAMIA's: tests/cli/test_panoramia_run.py)."""
    from privaudit.llm.pipeline import _scoring_executor
    from privaudit.runtime import executor_setting

    llm = {"target": {"kind": "huggingface", "path": str(tmp_path)}, "data": {"texts": "t.jsonl"}}
    cfg = validate_mapping(
        LLMAuditConfig, {**llm, "executor": "ray", "ray_gpus_per_task": 0.5}, source="t"
    )
    ex = _scoring_executor(cfg)
    assert isinstance(ex, RayExecutor) and ex.gpus_per_task == 0.5

    class _Seen(Exception):
        pass

    def spy(*_: object, **kw: object) -> None:
        raise _Seen(kw.get("gpus_per_task"))

    # record-risk: the command builds its executor from the config (imported at call time)
    monkeypatch.setattr(executor_setting, "make_executor", spy)
    from privaudit.record_risk import cli as rr_cli

    path = tmp_path / "rr.yaml"
    import yaml

    path.write_text(yaml.safe_dump({**RECORD_RISK, "n": 40, "n_aux": 80, "n_targets": 2,
                                    "executor": "ray", "ray_gpus_per_task": 0.25,
                                    "output_dir": str(tmp_path / "out")}))  # fmt: skip
    with pytest.raises(_Seen) as info:
        rr_cli.record_risk_command(
            path, out=None, overwrite=False, as_json=False, progress="none",
            no_progress=True, mlflow=None, ray=None,
        )  # fmt: skip
    assert info.value.args == (0.25,)
