"""A module only the ``preload`` object of a pool test imports (nothing else does)."""

from __future__ import annotations


class Marker:
    """Pickled as a reference to this module: loading it imports the module."""
