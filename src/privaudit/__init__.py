"""privaudit: audit how much a trained model leaks about its training records.

The package follows one data flow (see ``docs/architecture.md``)::

    data -> models -> signals -> attacks -> games/metrics -> audit -> report -> cli

and every layer imports only the layers to its left, plus the shared bottom modules
``records``, ``errors`` and ``_validation``.
"""

# The one place the version is written: pyproject.toml reads it (``[tool.setuptools.dynamic]``),
# so the installed metadata agrees; a literal keeps ``import privaudit`` (and the command
# line's start-up) free of importlib.metadata's cost (benchmarks/bench_startup.py).
__version__ = "0.1.0"

__all__ = ["__version__"]
