"""The version of privaudit: the one place it is written.

``pyproject.toml`` reads it (``[tool.setuptools.dynamic]``), so the installed metadata agrees;
``privaudit.__version__`` re-exports it. A module of its own, so that the modules that record
the version in their outputs never import the package's public API (which sits above them).
"""

__version__ = "0.1.0"
