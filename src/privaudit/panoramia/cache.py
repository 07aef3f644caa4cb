"""PANORAMIA's expensive steps through an artifact store (cache and resume).

:class:`PanoramiaSteps` runs the game's costly steps (the synthetic samples, the helper's
loss features, each scorer's test scores) through an
:class:`~privaudit.runtime.store.ArtifactStore` keyed by content, so a killed run resumes
and a new target refits only what depends on it. Records enter the store as arrays
(a modality's ``records_to_arrays`` / ``records_from_arrays``; :func:`dataset_to_arrays`
for the :class:`~privaudit.data.dataset.Dataset` modalities). The game is
:mod:`privaudit.panoramia.game`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import fail
from privaudit.data.dataset import Dataset
from privaudit.errors import DesignError
from privaudit.models.train_many import NPZ, cached

if TYPE_CHECKING:
    from privaudit.panoramia.modality import Modality, ScorerData
    from privaudit.runtime.store import ArtifactStore

__all__ = [
    "INFO",
    "Arrays",
    "PanoramiaSteps",
    "dataset_from_arrays",
    "dataset_to_arrays",
    "finite_scores",
    "info_array",
    "read_info",
]

R = TypeVar("R")


def finite_scores(s: Any, n: int, who: str) -> NDArray[np.float64]:
    a = np.asarray(s, dtype=np.float64)
    if a.shape != (n,) or not np.all(np.isfinite(a)):
        raise DesignError(f"{who}: expected {n} finite scores, found shape {a.shape}")
    return a


def dataset_to_arrays(records: Dataset) -> dict[str, NDArray[Any]]:
    """A :class:`~privaudit.data.dataset.Dataset` as arrays (``records_to_arrays`` of the
    Dataset-based modalities; ``info`` is not kept)."""
    return {
        "name": np.asarray(records.name),
        "record_ids": np.asarray(records.record_ids),
        "X": records.X,
        "y": records.y,
        "feature_names": np.asarray(records.feature_names, dtype=str),
        "class_names": np.asarray(records.class_names, dtype=str),
    }


def dataset_from_arrays(arrays: Mapping[str, NDArray[Any]]) -> Dataset:
    """The inverse of :func:`dataset_to_arrays`."""
    return Dataset(
        str(arrays["name"][()]),
        np.asarray(arrays["record_ids"]),
        np.asarray(arrays["X"], dtype=np.float64),
        np.asarray(arrays["y"], dtype=np.int64),
        tuple(str(f) for f in arrays["feature_names"].tolist()),
        tuple(str(c) for c in arrays["class_names"].tolist()),
    )


INFO = "__info__"
Arrays = dict[str, NDArray[Any]]


def info_array(info: Mapping[str, Any]) -> NDArray[Any]:
    return np.asarray(json.dumps(info, sort_keys=True, allow_nan=False))


def read_info(arrays: Arrays) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(str(arrays[INFO][()]))
    return out


def _sha(a: NDArray[Any]) -> str:
    a = np.ascontiguousarray(a)
    h = hashlib.sha256(f"{a.dtype.str}{a.shape}".encode())
    h.update(a.tobytes() if a.dtype.kind != "U" else "\x1f".join(a.ravel().tolist()).encode())
    return h.hexdigest()


class PanoramiaSteps(Generic[R]):
    """The game's expensive steps through an :class:`ArtifactStore` (when given).

    Cached by content (never by name): the synthetic samples (the generator's only
    use; key: its settings, ``D_G``'s content, the size and seeds), the helper's loss
    features on the classifier records (its only use; key: its settings, the helper
    pool's content, the seed, the records' content) and each scorer's test scores and
    selection record (key: the scorer settings, the content of its train / validation
    / test records, their loss features and labels, the seed and beta). A killed run
    resumes from what was stored. Records go into the store through the modality's
    ``records_to_arrays`` / ``records_from_arrays`` (required only with a store; see
    :func:`dataset_to_arrays`).
    """

    def __init__(self, modality: Modality[R], store: ArtifactStore | None) -> None:
        self.modality = modality
        self.store = store
        if store is not None:
            for name in ("records_to_arrays", "records_from_arrays"):
                if not callable(getattr(modality, name, None)):
                    raise fail(
                        "store", f"a modality with {name}() (to cache its records)", modality.name
                    )

    def records(
        self, key: Mapping[str, Any], create: Callable[[], tuple[R, dict[str, Any]]]
    ) -> tuple[R, dict[str, Any]]:
        """``create() -> (records, info)`` through the store (records as arrays)."""
        if self.store is None:
            return create()
        to_arrays = getattr(self.modality, "records_to_arrays")  # noqa: B009
        from_arrays = getattr(self.modality, "records_from_arrays")  # noqa: B009

        def make() -> Arrays:
            rec, info = create()
            arrays = to_arrays(rec)
            return {
                **{f"rec:{k}": np.asarray(v) for k, v in arrays.items()},
                INFO: info_array(info),
            }

        out = self.run(key, make)
        rec = from_arrays({k[4:]: v for k, v in out.items() if k.startswith("rec:")})
        return rec, read_info(out)

    def fingerprint(self, records: R) -> str:
        if self.store is None:
            return ""
        arrays = getattr(self.modality, "records_to_arrays")(records)  # noqa: B009
        return hashlib.sha256(
            "\x1e".join(f"{k}={_sha(np.asarray(arrays[k]))}" for k in sorted(arrays)).encode()
        ).hexdigest()

    def run(self, key: Mapping[str, Any], create: Callable[[], Arrays]) -> Arrays:
        if self.store is None:
            return create()
        value, _ = cached(self.store, key, create, NPZ)
        return value

    def scores(
        self,
        role: str,
        train: ScorerData[R],
        val: ScorerData[R],
        test: ScorerData[R],
        *,
        seed: int,
        criterion: Callable[[NDArray[np.float64], NDArray[np.bool_]], float],
        beta: float,
        scorer_settings: Any,
    ) -> tuple[NDArray[np.float64], dict[str, Any]]:
        """Fit a scorer on ``train``, select on ``val``, score ``test`` (continuous)."""

        def make() -> Arrays:
            scorer = self.modality.fit_scorer(train, val, seed=seed, criterion=criterion)
            sc = finite_scores(scorer.score(test.records, test.loss), test.label.size, role)
            return {"scores": sc, INFO: info_array(dict(scorer.info))}

        key = {
            "step": "panoramia/scorer",
            "modality": self.modality.name,
            "role": role,
            "scorer": scorer_settings,
            "seed": seed,
            "beta": beta,
            "data": [
                [self.fingerprint(d.records), _sha(np.asarray(d.loss)), _sha(np.asarray(d.label))]
                for d in (train, val, test)
            ],
        }
        out = self.run(key, make)
        return np.asarray(out["scores"], dtype=np.float64), read_info(out)
