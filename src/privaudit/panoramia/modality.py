"""What one kind of data implements for the PANORAMIA game (Kazmi et al. 2024, Algorithm 1).

:class:`Modality` (the generator, the helper, the loss features, the scorers; optional
``example_loss`` and ``reference_model``), :class:`Scorer` (a fitted membership
classifier) and the data a scorer is fitted on, :class:`ScorerData` (pano_api.md
section 2). The steps that call them are :mod:`privaudit.panoramia.steps`, their cache
:mod:`privaudit.panoramia.cache`, the game :mod:`privaudit.panoramia.game`; the modalities
are :mod:`~privaudit.panoramia.tabular`, :mod:`~privaudit.panoramia.image`,
:mod:`~privaudit.panoramia.text` and the exact :mod:`~privaudit.panoramia.fixture`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, Generic, Protocol, TypeVar

import numpy as np
from numpy.typing import NDArray

__all__ = ["Modality", "Scorer", "ScorerData"]

R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)


@dataclasses.dataclass(frozen=True)
class ScorerData(Generic[R]):
    """Records, their loss features (of ``f`` for the MIA, of ``h`` for the baseline), labels."""

    records: R
    loss: NDArray[np.float64]
    label: NDArray[np.bool_]


class Scorer(Protocol[R_co]):
    """A fitted membership classifier; ``score`` is continuous, higher = member."""

    info: dict[str, Any]

    def score(self, records: Any, loss: NDArray[np.float64]) -> NDArray[np.float64]: ...


class Modality(Protocol[R]):
    """What the game needs from one kind of data (pano_api.md section 2).

    ``settings()`` returns JSON-able ``{"generator": {...}, "helper": {...}, "scorer":
    {...}, ...}``; a fitted generator or helper may carry a JSON-able ``info`` dict (fit
    details), merged into the result's ``generator`` / ``helper`` sections. Optional:
    ``example_loss(features) -> (n,)``, one loss per example for the O(1) comparison's
    loss threshold (default: column 0 of the loss features); ``reference_model(generator)
    -> model or None``, a model of the real distribution that saw no audit record (e.g.
    the text generator's LM, trained on ``D_G`` only): when it returns a model, its loss
    features are appended to every classifier's (MIA, baseline, RM;RN), see
    :func:`~privaudit.panoramia.game.run_panoramia`; ``documents(records) -> tuple[str,
    ...]``, the document of each record (text chunks): when a document holds several
    records the game splits by document and each test slot is one document
    (:mod:`privaudit.panoramia.split`); without it every record is its own document.
    """

    name: str

    def ids(self, records: R) -> tuple[str, ...]: ...

    def take(self, records: R, ids: Sequence[str]) -> R: ...

    def concat(self, a: R, b: R) -> R: ...

    def fit_generator(self, records: R, *, seed: int) -> Any: ...

    def sample(self, generator: Any, n: int, *, seed: int) -> R: ...

    def fit_helper(self, records: R, *, seed: int) -> Any: ...

    def loss_features(self, model: Any, records: R) -> NDArray[np.float64]: ...

    def fit_scorer(
        self,
        train: ScorerData[R],
        val: ScorerData[R],
        *,
        seed: int,
        criterion: Callable[[NDArray[np.float64], NDArray[np.bool_]], float],
    ) -> Scorer[R]: ...

    def settings(self) -> dict[str, Any]: ...
