"""The failure probability ``beta`` of an audit, taken exactly.

Every audit in :mod:`privaudit.stats` is parameterised by ``beta`` (the probability that
the reported lower bound exceeds the truth). ``confidence = 1 - beta`` is accepted as a
convenience, but ``1 - (1 - beta)`` is not ``beta`` in floating point: for ``beta = 7.06e-13``
the rebuilt value differs by a relative ~1e-4, which moves a Clopper-Pearson bound and can
put the reported bound *above* the exact one. So ``beta`` wins whenever it is given, and
the procedures never rebuild it from ``confidence``.
"""

from __future__ import annotations

from privaudit._validation import check_probability, fail

__all__ = ["resolve_beta"]


def resolve_beta(beta: float | None, confidence: float | None) -> float:
    """The failure probability from ``beta`` (exact) or ``confidence`` (``1 - confidence``).

    Exactly one should be given; when both are, they must agree to 1e-12 (the given
    ``beta`` is then used). Neither: ``beta = 0.05``.

    Raises
    ------
    InvalidInputError
        A value outside (0, 1), or ``beta`` and ``confidence`` that disagree.
    """
    if beta is not None:
        b = check_probability(beta, "beta")
        if confidence is not None:
            c = check_probability(confidence, "confidence")
            if abs((1.0 - c) - b) > 1e-12:
                raise fail("confidence", f"1 - beta = {1.0 - b!r} (or omit it)", confidence)
        return b
    if confidence is None:
        return 0.05
    return 1.0 - check_probability(confidence, "confidence")
