"""privaudit: audit how much a trained model leaks about its training records.

The package follows one data flow (see ``docs/architecture.md``)::

    data -> models -> signals -> attacks -> games/metrics -> audit -> report -> cli

and every layer imports only the layers to its left, plus the shared bottom modules
``records``, ``errors`` and ``_validation``.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("privaudit")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0"

__all__ = ["__version__"]
