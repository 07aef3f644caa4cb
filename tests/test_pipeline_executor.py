"""The executor a config asks for, and a small audit on a real local Ray instance."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from privaudit.membership.config import ConfigError, config_from_dict
from privaudit.membership.pipeline import build_executor, run_audit
from privaudit.runtime.executor import LocalExecutor, RayExecutor

SMALL = {
    "dataset": "digits",
    "model": {"kind": "logistic", "params": {"C": 100.0, "max_iter": 300}},
    "sizes": {"n_target_pool": 200, "n_population": 400},
    "models": {"n_reference": 4},
    "attacks": ["population", "reference", "rmia-online"],
    "alpha": 0.1,
    "seed": 5,
    "n_jobs": 1,
}


def test_build_executor_local_and_ray() -> None:
    local = build_executor(config_from_dict(SMALL), 2, progress=False)
    assert isinstance(local, LocalExecutor) and local.n_jobs == 2
    ray_cfg = config_from_dict({**SMALL, "executor": "ray", "ray_address": "auto"})
    ray_ex = build_executor(ray_cfg, 2, progress=False)
    assert isinstance(ray_ex, RayExecutor) and ray_ex.address == "auto"


def test_unknown_executor_names_the_field() -> None:
    with pytest.raises(ConfigError, match="executor"):
        config_from_dict({**SMALL, "executor": "slurm"})


@pytest.mark.slow  # a local Ray instance starts in 15-60 s; CI installs ray and runs -m slow
def test_ray_audit_matches_local(tmp_path: Path) -> None:
    """The same config and seed give the same scores on Ray as in local processes."""
    ray = pytest.importorskip("ray")
    local = run_audit(
        config_from_dict({**SMALL, "output_dir": str(tmp_path / "local")}), progress=False
    )
    ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1")
    try:
        remote = run_audit(
            config_from_dict({**SMALL, "executor": "ray", "output_dir": str(tmp_path / "ray")}),
            progress=False,
        )
    finally:
        ray.shutdown()
    assert remote.results["settings"]["executor"] == "ray"
    np.testing.assert_array_equal(remote.scores.record_ids, local.scores.record_ids)
    for name, sc in local.scores.scores.items():
        np.testing.assert_allclose(remote.scores.scores[name], sc, rtol=1e-9, atol=1e-12)


def test_early_workers_only_when_attacker_models_train_locally() -> None:
    """run_audit starts its worker processes before the data loads only when they will
    train attacker models (local executor, several jobs, a non-torch model)."""
    from privaudit.membership.pipeline import _early_executor

    assert _early_executor(config_from_dict(SMALL), progress=False) is None  # n_jobs 1
    loss_only = config_from_dict({**SMALL, "n_jobs": 2, "attacks": ["population"]})
    assert _early_executor(loss_only, progress=False) is None  # no attacker models
    early = _early_executor(config_from_dict({**SMALL, "n_jobs": 2}), progress=False)
    assert isinstance(early, LocalExecutor)
    try:
        assert early.n_jobs == 2 and len(early.worker_pids()) >= 1
    finally:
        early.close()
    assert early.worker_pids() == ()


def test_early_workers_are_closed_when_the_audit_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    import privaudit.membership.pipeline as pipeline

    started: list[LocalExecutor] = []
    original = pipeline._early_executor

    def spy(config: object, progress: object) -> object:
        ex = original(config, progress)  # type: ignore[arg-type]
        started.append(ex)  # type: ignore[arg-type]
        return ex

    def fail_after_start(*args: object, **kwargs: object) -> None:
        raise RuntimeError("the data could not load")

    monkeypatch.setattr(pipeline, "_early_executor", spy)
    monkeypatch.setattr(pipeline, "_run_audit", fail_after_start)
    with pytest.raises(RuntimeError, match="could not load"):
        run_audit(config_from_dict({**SMALL, "n_jobs": 2}), progress=False, write=False)
    assert len(started) == 1 and isinstance(started[0], LocalExecutor)
    assert started[0].worker_pids() == ()
