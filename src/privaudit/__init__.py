"""privaudit: audit how much a trained model leaks about its training records.

The package follows one data flow (see ``docs/architecture.md``)::

    data -> models -> signals -> attacks -> games/metrics -> audit -> report -> cli

and every layer imports only the layers to its left, plus the shared bottom modules
``records``, ``errors`` and ``_validation``.
"""

from typing import Any

from privaudit._version import __version__

__all__ = ["__version__", "log_to_mlflow", "model_card", "write_model_card"]

#: Public functions imported on first use (``import privaudit`` stays light).
_LAZY = {
    "log_to_mlflow": "privaudit.report.mlflow_run",
    "model_card": "privaudit.report.model_card",
    "write_model_card": "privaudit.report.model_card",
}


def __getattr__(name: str) -> Any:
    """``privaudit.log_to_mlflow`` (an audit as an MLflow run) and ``privaudit.model_card`` /
    ``write_model_card`` (a Hugging Face model-card section), imported when first used."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'privaudit' has no attribute {name!r}")
