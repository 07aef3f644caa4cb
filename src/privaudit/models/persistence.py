"""Safe persistence of models: skops for scikit-learn, ``.npz`` for precomputed outputs.

Nothing is ever unpickled. :func:`load_model` reads a skops file only after listing the
types it would instantiate (:func:`skops.io.get_untrusted_types`) and checking that every
type skops does not trust by default is in the caller's ``trusted_types``; otherwise it
raises :class:`UntrustedModelError` naming them.

:data:`SKLEARN_STATE_TYPES` lists the few scikit-learn classes, outside skops' default
trust list, that the fitted state of common classifiers holds and that privaudit trusts
without being told: the MLP optimisers (``AdamOptimizer``, ``SGDOptimizer``: plain
holders of step sizes and moment arrays, kept by ``MLPClassifier._optimizer``), the
decision-tree ``Tree`` (random forests, gradient boosting, extra trees; restored from
arrays by its ``__setstate__``) and the histogram-boosting ``TreePredictor`` (an array of
nodes). Any other type (a user's own class, a function) must be named in
``trusted_types``.

A :class:`~privaudit.models.distill.LogitRegressionModel` (a logit-matching distilled
model) is stored in the same format with ``"model_type": "logit-regressor"`` and its
fitted regressor as ``"estimator"``; files without ``model_type`` hold a classifier.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from privaudit._validation import fail
from privaudit.errors import InvalidInputError, PrivauditError
from privaudit.models.distill import LogitRegressionModel
from privaudit.models.precomputed import PrecomputedModel, load_precomputed
from privaudit.models.sklearn import SklearnModel

__all__ = [
    "FORMAT",
    "SKLEARN_STATE_TYPES",
    "UntrustedModelError",
    "load_model",
    "save_model",
    "untrusted_types",
]

FORMAT = "privaudit-sklearn-model"
FORMAT_VERSION = 1

#: scikit-learn state classes trusted by default (see the module docstring).
SKLEARN_STATE_TYPES: tuple[str, ...] = (
    "sklearn.neural_network._stochastic_optimizers.AdamOptimizer",
    "sklearn.neural_network._stochastic_optimizers.SGDOptimizer",
    "sklearn.tree._tree.Tree",
    "sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor",
)


class UntrustedModelError(PrivauditError):
    """A model file would instantiate types the caller has not declared trusted."""


def save_model(
    model: SklearnModel | LogitRegressionModel | PrecomputedModel, path: str | Path
) -> Path:
    """Write a model without pickle.

    A :class:`SklearnModel` goes to a skops file (use the suffix ``.skops``) holding the
    fitted estimator, ``n_classes``, the logit source and ``fit_info``; a
    :class:`LogitRegressionModel` to a skops file holding its regressor, ``n_classes``
    and ``fit_info``; a
    :class:`PrecomputedModel` goes to ``.npz``. The write is atomic (temporary file then
    rename).
    """
    p = Path(path)
    if isinstance(model, PrecomputedModel):
        if p.suffix.lower() != ".npz":
            raise fail("path", "a .npz path for a PrecomputedModel", p.name)
        return model.save(p)
    if not isinstance(model, SklearnModel | LogitRegressionModel):
        raise fail(
            "model",
            "a SklearnModel, LogitRegressionModel or PrecomputedModel",
            type(model).__name__,
        )
    import skops.io as sio

    fit_info = {
        str(k): v for k, v in model.fit_info.items() if isinstance(v, bool | int | float | str)
    }
    payload: dict[str, Any]
    if isinstance(model, LogitRegressionModel):
        payload = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "model_type": "logit-regressor",
            "estimator": model.regressor,
            "n_classes": int(model.n_classes),
            "fit_info": fit_info,
        }
    else:
        payload = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "estimator": model.estimator,
            "n_classes": int(model.n_classes),
            "logit_source": model.logit_source,
            "fit_info": fit_info,
        }
    tmp = p.with_name(p.name + ".tmp")
    sio.dump(payload, tmp)
    tmp.replace(p)
    return p


def untrusted_types(path: str | Path) -> list[str]:
    """Types in a skops file that skops does not trust by default (nothing is loaded)."""
    import skops.io as sio

    try:
        return sorted(sio.get_untrusted_types(file=Path(path)))
    except Exception as exc:
        raise InvalidInputError(
            f"path: expected a readable skops model file, found {path} ({exc})"
        ) from None


def load_model(
    path: str | Path, trusted_types: Sequence[str] | None = None
) -> SklearnModel | LogitRegressionModel | PrecomputedModel:
    """Load a model written by :func:`save_model` (or per-record outputs).

    Parameters
    ----------
    path : str or Path
        ``.skops`` (scikit-learn model written by :func:`save_model`, or a fitted
        estimator written by ``skops.io.dump``) or ``.npz`` / ``.csv`` / ``.parquet``
        (per-record outputs, see :func:`~privaudit.models.load_precomputed`).
    trusted_types : sequence of str, optional
        Fully qualified type names the caller vouches for, beyond skops' defaults and
        :data:`SKLEARN_STATE_TYPES`.

    Raises
    ------
    UntrustedModelError
        If the file holds types not trusted by skops and not in ``trusted_types``.
    """
    p = Path(path)
    if not p.is_file():
        raise fail("path", "an existing model file", str(p))
    if p.suffix.lower() in (".npz", ".csv", ".parquet", ".pq"):
        return load_precomputed(p)
    import skops.io as sio

    untrusted = untrusted_types(p)
    allowed = set(SKLEARN_STATE_TYPES) | set(trusted_types or ())
    refused = [t for t in untrusted if t not in allowed]
    if refused:
        raise UntrustedModelError(
            f"{p.name}: refuses to load types that are not trusted: {refused}; "
            "inspect the file and pass them in trusted_types if you vouch for them"
        )
    payload = sio.load(p, trusted=[t for t in untrusted if t in allowed])
    if not isinstance(payload, dict) and hasattr(payload, "classes_"):
        # a fitted estimator saved with skops.io.dump by its owner (a provided target)
        return SklearnModel(payload, fit_info={"source": "skops estimator file"})
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise fail("path", f"a {FORMAT} file written by save_model", p.name)
    if int(payload.get("format_version", -1)) != FORMAT_VERSION:
        raise fail("format_version", str(FORMAT_VERSION), payload.get("format_version"))
    model_type = payload.get("model_type", "classifier")
    if model_type == "logit-regressor":
        return LogitRegressionModel(
            payload["estimator"],
            int(payload["n_classes"]),
            fit_info=dict(payload.get("fit_info", {})),
        )
    if model_type != "classifier":
        raise fail("model_type", "'classifier' or 'logit-regressor'", repr(model_type))
    model = SklearnModel(
        payload["estimator"],
        int(payload["n_classes"]),
        logit_source=str(payload["logit_source"]),
        fit_info=dict(payload.get("fit_info", {})),
    )
    return model
