"""Reproducible, independent seeds for every stochastic step of an audit.

Every model an audit trains (target, reference, shadow, distilled, leave-one-out) and
every sampling step gets its own seed, derived from one user seed and a *purpose*
string with :class:`numpy.random.SeedSequence`. The derivation is

.. math::

    \\text{root}(s, p) = \\mathrm{SeedSequence}\\big([s, w_1(p), \\dots, w_8(p)]\\big),
    \\qquad \\text{seed}_i = \\mathrm{state}_{32}\\big(\\text{root}(s, p).\\mathrm{spawn}(n)[i]\\big),

where :math:`w_1(p), \\dots, w_8(p)` are the eight 32-bit words of ``sha256(p)``
(Python's built-in ``hash`` is salted per process, so it would not be reproducible)
and :math:`\\mathrm{state}_{32}` is the first 32-bit word of the child's generated
state. Properties:

* **reproducible**: the same ``(seed, purpose, i)`` gives the same integer in every
  process and on every platform (``SeedSequence`` is specified bit-for-bit);
* **independent across purposes**: different purposes hash to different entropy, so
  the reference models and the shadow models of one audit never share a stream;
* **prefix-stable**: ``spawn_seeds(s, n, purpose=p)`` is a prefix of
  ``spawn_seeds(s, m, purpose=p)`` for ``n <= m``, so asking for more reference models
  keeps (and, through the artifact store, reuses) the ones already trained.

Seeds are 32-bit because scikit-learn's ``random_state`` accepts integers below
:math:`2^{32}`; two of ``n`` seeds coincide with probability about
:math:`n^2 / 2^{33}` (about 1e-4 for 1,000 models), which is harmless since models
with equal seeds still train on different data.
"""

from __future__ import annotations

import hashlib

import numpy as np

from privaudit._validation import check_positive_int, fail

__all__ = ["derive_rng", "derive_seed", "spawn_seeds"]


def _check_seed(seed: int, name: str = "seed") -> int:
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise fail(name, "a non-negative integer", repr(seed))
    if seed < 0:
        raise fail(name, "a non-negative integer", seed)
    return int(seed)


def _root(seed: int, purpose: str) -> np.random.SeedSequence:
    if not isinstance(purpose, str) or not purpose:
        raise fail("purpose", "a non-empty string", repr(purpose))
    digest = hashlib.sha256(purpose.encode("utf-8")).digest()
    words = [int.from_bytes(digest[i : i + 4], "little") for i in range(0, 32, 4)]
    return np.random.SeedSequence([_check_seed(seed), *words])


def spawn_seeds(seed: int, n: int, *, purpose: str) -> list[int]:
    """Derive ``n`` independent 32-bit integer seeds for one purpose.

    Parameters
    ----------
    seed : int
        The user's seed (non-negative).
    n : int
        Number of seeds (>= 1).
    purpose : str
        What the seeds are for, e.g. ``"reference-models"``; different purposes give
        independent streams.

    Returns
    -------
    list of int
        ``n`` integers in ``[0, 2**32)``; child ``i`` of
        ``SeedSequence([seed, *sha256(purpose) words]).spawn(n)``.

    Examples
    --------
    >>> spawn_seeds(0, 3, purpose="ref") == spawn_seeds(0, 3, purpose="ref")
    True
    >>> spawn_seeds(0, 2, purpose="ref") == spawn_seeds(0, 5, purpose="ref")[:2]
    True
    """
    n = check_positive_int(n, "n")
    children = _root(seed, purpose).spawn(n)
    return [int(c.generate_state(1, dtype=np.uint32)[0]) for c in children]


def derive_seed(seed: int, *, purpose: str) -> int:
    """One 32-bit seed for one purpose: ``spawn_seeds(seed, 1, purpose=purpose)[0]``."""
    return spawn_seeds(seed, 1, purpose=purpose)[0]


def derive_rng(seed: int, *, purpose: str) -> np.random.Generator:
    """A :class:`numpy.random.Generator` (PCG64) seeded from ``(seed, purpose)``.

    The generator is built on the root sequence itself (not a 32-bit reduction), so
    it carries the full 128 bits of entropy of the derivation in the module docstring.
    """
    return np.random.Generator(np.random.PCG64(_root(seed, purpose)))
