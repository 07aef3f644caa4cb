"""Fixtures every test folder shares."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load(relpath: str, *, register: bool = False) -> ModuleType:
    path = ROOT / relpath
    name = "_under_test_" + path.stem
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    if register:  # dataclasses and pickling look the module up by name
        sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def repo_module() -> Callable[..., ModuleType]:
    """Import a script of the repository (a benchmark, an example) by its path from the
    repository root, e.g. ``repo_module("benchmarks/bench_cifar10.py")``; scripts are not
    a package, so the tests load them by path. ``register=True`` also puts the module in
    ``sys.modules`` (needed by dataclasses defined in it)."""
    return _load
