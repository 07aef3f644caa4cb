"""Package attributes imported on first use, so that importing a package stays light.

A package whose modules need NumPy, pandas or scikit-learn re-exports its public names
through :func:`lazy_exports`; ``import privaudit.zero_run`` (what ``privaudit --help`` does
when it registers the commands) then imports nothing heavy, and
``from privaudit.zero_run import zero_run_audit`` imports exactly the module that defines it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, where: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package`` for the names of ``where``.

    ``where`` maps each exported name to the module (absolute, or relative to ``package``
    with a leading dot) that defines it. Use::

        __getattr__, __dir__ = lazy_exports(__name__, {"zero_run_audit": ".audit", ...})
    """

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        importlib.import_module(package).__dict__[name] = value  # later lookups are plain
        return value

    def __dir__() -> list[str]:
        return sorted({*where, *importlib.import_module(package).__dict__})

    return __getattr__, __dir__
