"""Module-level task functions (picklable for process pools)."""

from __future__ import annotations

import os
import time


def square(x: int) -> int:
    return x * x


def slow_reverse(x: int) -> tuple[int, int]:
    # later items finish first, so completion order differs from input order
    time.sleep(0.02 * (5 - x % 5))
    return x, os.getpid()


def fail_on_three(x: int) -> int:
    if x == 3:
        raise ValueError(f"bad item {x}")
    return x


def die_on_two(x: int) -> int:
    if x == 2:
        os._exit(17)
    return x


class Multiplier:
    def __init__(self, factor: int) -> None:
        self.factor = factor

    def __call__(self, x: int) -> int:
        return self.factor * x


def loaded(module: str) -> tuple[bool, int]:
    """Whether ``module`` is imported in the process running the task, and its pid."""
    import sys

    return module in sys.modules, os.getpid()


class ArrayTask:
    """A task closing over a (large) array: returns the array's sum plus the item."""

    def __init__(self, data: object, offset: float = 0.0) -> None:
        import numpy as np

        self.data = np.asarray(data)
        self.offset = offset

    def __call__(self, x: int) -> tuple[float, bool, int]:
        self.data[0] = self.data[0]  # the array rebuilt in the worker is writable
        return (
            float(self.data.sum()) + self.offset + x,
            bool(self.data.flags.writeable),
            os.getpid(),
        )
