"""``--ray ADDRESS``: run a command's independent units as Ray tasks on that cluster.

The one flag of every command that takes flags (``run``, ``record-risk``, ``panoramia``,
``zero-run``); it sets the config's ``executor: ray`` and ``ray_address``
(:func:`ray_address_of`: ``local`` starts an instance
here, ``auto`` joins this machine's cluster, else ``host:port`` or ``ray://host:10001``).
"""

from __future__ import annotations

from typing import Any

import typer

__all__ = ["RAY_HELP", "ray_address_of", "ray_option"]

RAY_HELP = (
    "Run the independent units (models, rounds, replicates, classifiers) as Ray tasks on "
    "the cluster at this address ('auto' for this machine's cluster, 'local' to start one "
    "here, or host:port); needs `pip install 'privaudit[ray]'` and a cache every node sees."
)


def ray_option() -> Any:
    """The ``--ray ADDRESS`` option (default: the config's ``executor``)."""
    return typer.Option(None, "--ray", metavar="ADDRESS", help=RAY_HELP)


def ray_address_of(flag: str) -> str | None:
    """The cluster address of a ``--ray ADDRESS`` flag: ``"local"`` (start an instance
    here) is None, anything else as given (``"auto"``, ``"host:port"``, ``"ray://..."``)."""
    if not flag.strip():
        raise typer.BadParameter("--ray: expected a cluster address ('auto', 'local', host:port)")
    return None if flag == "local" else flag
