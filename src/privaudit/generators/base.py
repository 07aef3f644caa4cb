"""The generator protocol: a trainer whose "model" samples tables.

A synthetic-data generator is fitted on a discretised table and released as a synthetic
table of ``n`` rows (Krčo et al. 2025, "Lost in the Averages", Sec. 2: the target is
``A(D)``, the synthetic dataset; the attacker sees only that). Everything random in
``A`` is driven by one integer seed, so a release ``A(D; s)`` is re-created exactly from
``(D, s)``; the model-seeded game varies only ``s``.

Protocol (structural, so any object with these members works):

* ``name: str`` and ``settings() -> dict`` (JSON-able; part of every cache key);
* ``fit(codes, cardinalities, *, seed) -> FittedGenerator``; ``codes`` is an int64 array
  ``(n, d)`` of attribute codes, ``cardinalities`` their public domain sizes;
* ``FittedGenerator.sample(n, rng) -> int64 array (n, d)``.
* ``randomised: bool`` -- False when ``A(D; s)`` does not depend on ``s`` (the
  model-seeded game then has a single outcome per dataset and degenerates).

:func:`synthesise` is the one place where a release is made from a seed: the fit and the
sampling draw from two independent children of the seed.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import fail
from privaudit.runtime.seeds import derive_rng, derive_seed

__all__ = ["FittedGenerator", "Generator", "check_codes", "synthesise"]


@runtime_checkable
class FittedGenerator(Protocol):
    """A fitted generator: draws synthetic rows."""

    def sample(self, n: int, rng: np.random.Generator) -> NDArray[np.int64]:
        """``n`` synthetic rows of attribute codes."""
        ...


@runtime_checkable
class Generator(Protocol):
    """A synthetic-data generator (see the module docstring)."""

    @property
    def name(self) -> str: ...

    @property
    def randomised(self) -> bool: ...

    def settings(self) -> dict[str, Any]: ...

    def fit(
        self, codes: NDArray[np.int64], cardinalities: tuple[int, ...], *, seed: int
    ) -> FittedGenerator: ...


def check_codes(
    codes: NDArray[Any], cardinalities: tuple[int, ...], name: str = "codes"
) -> NDArray[np.int64]:
    """``codes`` as a (n, d) int64 array within the domain, else InvalidInputError."""
    if not cardinalities:
        raise fail("cardinalities", "at least one attribute", "none")
    a = np.asarray(codes)
    if a.ndim != 2 or a.shape[1] != len(cardinalities):
        raise fail(name, f"an array of shape (n, {len(cardinalities)})", f"shape {a.shape}")
    if a.size and not np.issubdtype(a.dtype, np.integer):
        if not np.all(np.isfinite(a)) or not np.all(a == np.round(a)):
            raise fail(name, "integer attribute codes", f"dtype {a.dtype} with non-integers")
    a = a.astype(np.int64, copy=False)
    if a.size and (a.min() < 0 or np.any(a.max(axis=0) >= np.asarray(cardinalities))):
        raise fail(name, "codes in 0 .. cardinality - 1 for every attribute", "codes out of range")
    return a


def synthesise(
    generator: Generator,
    codes: NDArray[np.int64],
    cardinalities: tuple[int, ...],
    *,
    seed: int,
    n: int | None = None,
) -> NDArray[np.int64]:
    """The release ``A(D; seed)``: fit on ``codes`` and sample ``n`` rows (default |D|).

    The fit gets ``derive_seed(seed, purpose="generator/fit")`` and the sampling the
    generator ``derive_rng(seed, purpose="generator/sample")``.
    """
    fitted = generator.fit(codes, cardinalities, seed=derive_seed(seed, purpose="generator/fit"))
    n_out = len(codes) if n is None else int(n)
    out = fitted.sample(n_out, derive_rng(seed, purpose="generator/sample"))
    out = check_codes(out, cardinalities, name=f"{generator.name}.sample()")
    if out.shape[0] != n_out:
        raise fail(f"{generator.name}.sample()", f"{n_out} rows", out.shape[0])
    return out
