"""The error hierarchy of privaudit.

Every error the library raises on purpose derives from :class:`PrivauditError`, so a
caller (and the CLI, which maps them to exit code 2) can catch them all at once.
"""

from __future__ import annotations


class PrivauditError(Exception):
    """Base class of every error privaudit raises on purpose."""


class InvalidInputError(PrivauditError, ValueError):
    """An input has the wrong type, shape, values (NaN, inf, duplicates) or is empty."""


class DesignError(PrivauditError):
    """The experiment as configured cannot give a valid answer.

    For example: a membership matrix in which some record is never OUT, so an
    offline attack has no reference signal for it.
    """


class InsufficientDataError(DesignError):
    """Too few records, models or positives/negatives for the requested statistic."""


class CacheError(PrivauditError):
    """The artifact store is unreadable or inconsistent."""


class EstimationError(PrivauditError):
    """An auxiliary model the audit relies on could not be fitted.

    For example: a propensity-score classifier of the Zero-Run audit that raises while
    fitting or returns non-finite probabilities.
    """


class PrivauditWarning(UserWarning):
    """Something in the inputs is suspicious but not invalid.

    For example: a categorical feature column with hundreds of distinct values, or a
    target pool too small for any TPR at a low FPR. The pipeline also records these
    warnings in ``results.json["settings"]["warnings"]`` and the CLI prints them.
    """


class CacheWarning(UserWarning):
    """An artifact-store entry failed to load (truncated, damaged) and is recomputed.

    Not a :class:`PrivauditWarning` (those are about the inputs, and the CLI gathers them
    into its summary): this one is shown as it happens.
    """
