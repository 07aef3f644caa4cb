"""Build :class:`~privaudit.records.SignalTable` records for many models on a dataset."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import check_choice, check_positive_int, fail
from privaudit.data import Dataset
from privaudit.errors import PrivauditError
from privaudit.models import Model, PrecomputedModel, TrainingError
from privaudit.records import SignalTable
from privaudit.signals.functions import (
    LOSS_DERIVABLE,
    SIGNALS,
    compute_signal,
    compute_signal_from_loss,
)
from privaudit.signals.perturb import QUERY_SIGNALS, label_robustness

__all__ = ["ALL_SIGNALS", "DEFAULT_BATCH_SIZE", "model_signals", "signal_table"]

DEFAULT_BATCH_SIZE = 4096
#: Records per batch of a query signal (each record becomes ~40 noisy queries).
_QUERY_BATCH = 256

#: Every signal :func:`model_signals` computes: from logits, then from label queries.
ALL_SIGNALS: tuple[str, ...] = (*SIGNALS, *QUERY_SIGNALS)

#: The function of each query signal (:data:`~privaudit.signals.perturb.QUERY_SIGNALS`):
#: ``f(model, X, y, record_ids, *, scale) -> float64 (n,)``, called in batches of
#: ``_QUERY_BATCH`` records.
_QUERY_FUNCTIONS: dict[str, Callable[..., NDArray[np.float64]]] = {
    "label_robustness": label_robustness,
}


def _batch_logits(model_id: str, model: Any, dataset: Dataset, sl: slice) -> NDArray[np.float64]:
    if isinstance(model, PrecomputedModel):
        z = model.logits_for(dataset.record_ids[sl])
    else:
        try:
            z = model.logits(dataset.X[sl])
        except PrivauditError:
            raise
        except Exception as exc:
            raise TrainingError(
                f"model {model_id!r}: logits failed: {type(exc).__name__}: {exc}"
            ) from exc
    z = np.asarray(z, dtype=np.float64)
    n = sl.stop - sl.start
    if z.shape != (n, model.n_classes):
        raise fail(f"logits of model {model_id!r}", f"shape ({n}, {model.n_classes})", z.shape)
    bad = ~np.isfinite(z)
    if bad.any():
        rows = np.flatnonzero(bad.any(axis=1))
        ex = dataset.record_ids[sl][rows[:3]].tolist()
        raise fail(
            f"logits of model {model_id!r}",
            "finite values",
            f"{int(bad.sum())} NaN/inf value(s) in {rows.size} record(s), e.g. {ex}",
        )
    return z


def model_signals(
    model_id: str,
    model: Model | PrecomputedModel,
    dataset: Dataset,
    signals: Sequence[str],
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    feature_scale: NDArray[np.float64] | None = None,
) -> dict[str, NDArray[np.float64]]:
    """Every requested signal of one model on every record of ``dataset``.

    The logit signals (:data:`~privaudit.signals.SIGNALS`) are computed in batches of
    ``batch_size`` records; each batch needs one call of ``model.logits`` (or one
    look-up of a precomputed model), shared by all of them, and none is made when no
    logit signal is requested. A losses-only :class:`PrecomputedModel` gives the
    :data:`LOSS_DERIVABLE` signals and refuses the others. The query signals
    (:data:`~privaudit.signals.perturb.QUERY_SIGNALS`, label-only) query the model on
    noisy copies of the records, with noise in units of ``feature_scale`` (default: the
    columns' standard deviation in ``dataset``; pass the whole dataset's so that every
    evaluated subset is perturbed alike); a precomputed model cannot answer them.

    ``signals`` are names from :data:`ALL_SIGNALS`, no duplicates (as
    :func:`signal_table`).

    Returns
    -------
    dict signal name -> float64 array (n_records,), in the order of ``signals``.
    """
    bs = check_positive_int(batch_size, "batch_size")
    requested = list(signals)
    names, queried = _requested_signals(model_id, model, requested)
    _check_labels(model_id, model, dataset)
    losses_only = _gives_losses_only(model_id, model, names)
    out: dict[str, NDArray[np.float64]] = {}
    if names:
        out.update(_logit_signals(model_id, model, dataset, names, bs, losses_only=losses_only))
    for s in queried:
        out[s] = _queried_signal(model_id, model, dataset, s, feature_scale)
    _check_finite(model_id, out)
    return {s: out[s] for s in requested}


def _requested_signals(
    model_id: str, model: Model | PrecomputedModel, signals: Sequence[str]
) -> tuple[list[str], list[str]]:
    """The requested signals, checked (known, no duplicates): those computed from logits,
    and the query signals (refused for a precomputed model)."""
    requested = list(signals)
    if len(set(requested)) != len(requested):
        raise fail("signals", "unique signal names", requested)
    names = [check_choice(s, "signals", ALL_SIGNALS) for s in requested]
    queried = [s for s in names if s in QUERY_SIGNALS]
    names = [s for s in names if s not in QUERY_SIGNALS]
    if queried and isinstance(model, PrecomputedModel):
        raise fail(
            f"signals for model {model_id!r}",
            "signals computable from stored outputs (a precomputed model cannot be queried "
            "on perturbed records)",
            queried,
        )
    return names, queried


def _check_labels(model_id: str, model: Model | PrecomputedModel, dataset: Dataset) -> None:
    """Refuse a dataset with a label beyond the model's classes."""
    y = dataset.y
    C = int(model.n_classes)
    if y.size and int(y.max()) >= C:
        raise fail(
            f"labels of dataset {dataset.name!r}",
            f"labels below the {C} classes of model {model_id!r}",
            f"maximum label {int(y.max())}",
        )


def _gives_losses_only(model_id: str, model: Model | PrecomputedModel, names: list[str]) -> bool:
    """Whether ``model`` is a losses-only precomputed model (which refuses the signals
    not in :data:`LOSS_DERIVABLE`)."""
    losses_only = isinstance(model, PrecomputedModel) and not model.has_logits
    if losses_only:
        refused = [s for s in names if s not in LOSS_DERIVABLE]
        if refused:
            raise fail(
                f"signals for model {model_id!r}",
                f"signals computable from losses only ({', '.join(LOSS_DERIVABLE)})",
                refused,
            )
    return losses_only


def _logit_signals(
    model_id: str,
    model: Model | PrecomputedModel,
    dataset: Dataset,
    names: list[str],
    batch_size: int,
    *,
    losses_only: bool,
) -> dict[str, NDArray[np.float64]]:
    """The signals ``names`` batch by batch, from one logits call per batch (or from the
    stored losses of a losses-only model)."""
    y = dataset.y
    n = dataset.n_records
    out = {s: np.empty(n, dtype=np.float64) for s in names}
    for start in range(0, n, batch_size):
        sl = slice(start, min(start + batch_size, n))
        if losses_only:
            loss = cast(PrecomputedModel, model).losses_for(dataset.record_ids[sl])
            for s in names:
                out[s][sl] = compute_signal_from_loss(s, loss)
        else:
            z = _batch_logits(model_id, model, dataset, sl)
            for s in names:
                out[s][sl] = compute_signal(s, z, y[sl])
    return out


def _queried_signal(
    model_id: str,
    model: Model | PrecomputedModel,
    dataset: Dataset,
    signal: str,
    feature_scale: NDArray[np.float64] | None,
) -> NDArray[np.float64]:
    """The query signal ``signal`` (:data:`_QUERY_FUNCTIONS`) of every record, in batches
    of noisy queries (noise in units of ``feature_scale``, default the columns' standard
    deviation in ``dataset``)."""
    function = _QUERY_FUNCTIONS[signal]
    y = dataset.y
    n = dataset.n_records
    scale = dataset.X.std(axis=0) if feature_scale is None else feature_scale
    values = np.empty(n, dtype=np.float64)
    for start in range(0, n, _QUERY_BATCH):
        sl = slice(start, min(start + _QUERY_BATCH, n))
        try:
            values[sl] = function(model, dataset.X[sl], y[sl], dataset.record_ids[sl], scale=scale)
        except PrivauditError:
            raise
        except Exception as exc:
            raise TrainingError(
                f"model {model_id!r}: logits on perturbed records failed: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
    return values


def _check_finite(model_id: str, out: dict[str, NDArray[np.float64]]) -> None:
    """Refuse a NaN or infinite signal value (the signal functions already guard against them)."""
    for s, v in out.items():
        if not np.all(np.isfinite(v)):  # pragma: no cover - guarded by the signal functions
            raise fail(f"signal {s!r} of model {model_id!r}", "finite values", "NaN/inf")


def signal_table(
    models: Mapping[str, Model | PrecomputedModel],
    dataset: Dataset,
    signals: Sequence[str],
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
) -> dict[str, SignalTable]:
    """Signals of several models on every record of a dataset, one table per signal.

    Parameters
    ----------
    models : mapping model id -> Model or PrecomputedModel
        Rows of every table follow the mapping's order.
    dataset : Dataset
        Records (columns of every table, in dataset order) and their true labels.
    signals : sequence of str
        Names from :data:`~privaudit.signals.SIGNALS`, no duplicates.
    batch_size : int
        Records per model call.

    Returns
    -------
    dict signal name -> SignalTable with ``values[j, i]`` = signal of model j on record i.
    """
    if not models:
        raise fail("models", "at least one model", "none")
    names = list(signals)
    if not names:
        raise fail("signals", "at least one signal name", "none")
    if len(set(names)) != len(names):
        raise fail("signals", "unique signal names", names)
    for s in names:
        check_choice(s, "signals", ALL_SIGNALS)
    model_ids = [str(m) for m in models]
    per_model = [
        model_signals(mid, models[key], dataset, names, batch_size=batch_size)
        for mid, key in zip(model_ids, models, strict=True)
    ]
    return {
        s: SignalTable(
            s, dataset.record_ids, tuple(model_ids), np.stack([pm[s] for pm in per_model])
        )
        for s in names
    }
