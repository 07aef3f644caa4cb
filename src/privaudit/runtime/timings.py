"""The timed steps of a command's ``results.json["timings"]``: seconds of wall time per step.

The audit pipelines time their steps (loading the data, the models, the game, ...) with
:func:`timed` and record the seconds in the results they write, so that a report says
where a run's time went.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

__all__ = ["timed"]


@contextlib.contextmanager
def timed(timings: dict[str, float], step: str) -> Iterator[None]:
    """Time the block: its seconds of wall time go to ``timings[step]`` (when it finishes;
    a block that raises records nothing)."""
    t0 = time.perf_counter()
    yield
    timings[step] = time.perf_counter() - t0
