r"""The exact PANORAMIA fixture: a generator with known ``c`` and a target with known ``eps``.

Kazmi et al. (2024) define c-closeness in Definition 3, whose formula is an image missing
from the text we have; it is **reconstructed** from the surrounding remarks ("c-closeness
is one-sided as we only bound ``P_G`` from below", "similar to DP") and Proposition 1 as

.. math:: P_D(x) \le e^{c} P_G(x) \quad \text{for all } x.

**Generator.** ``D = U(0, 1)`` (the real records), ``Q = U(1, 2)`` (a detectable
distribution) and ``G = (1 - lam) D + lam Q``. Then ``P_G(x) = (1 - lam) P_D(x)`` on
``[0, 1)``, so ``P_D(x) / P_G(x) = 1 / (1 - lam)`` there (and 0 on ``[1, 2)``): ``G`` is
c-close with, and not for any smaller,

.. math:: c = -\log(1 - \lambda).

In the game each slot shows a member (``x ~ D``) or a generated record (``x ~ G``) with
probability 1/2, so on the region "far from Q", ``x < 1``, the posterior is
``P(member | x) = P_D / (P_D + P_G) = 1 / (2 - lam) = e^c / (1 + e^c)``: the Bayes
baseline (score ``log P_D(x)/P_G(x)``) guesses "member" on ``x < 1`` with precision
exactly ``e^c / (1 + e^c)`` at every recall, and no baseline does better (c-closeness
caps every member guess's posterior at that value), so its bound ``c_lb`` approaches
``c`` as ``m`` grows.

**Target.** The target reveals membership by randomised response with known ``eps``:
its loss on a record is ``1 - b`` with ``b = s XOR flip``, ``flip ~ Bernoulli(1 / (1 +
e^eps))`` independently per record (``s`` = 1 for a training member); an ``eps``-DP
view of the bit. The MIA sees ``(x, b)``; on ``x < 1, b = 1`` the posterior odds are
``e^c * e^eps``, so the best MIA's precision is

.. math:: \frac{e^{c+\varepsilon}}{1 + e^{c+\varepsilon}}

at every recall up to ``p = e^eps / (1 + e^eps)``, and ``{c+eps}_lb`` approaches ``c +
eps``, ``eps_tilde`` approaches ``eps``. Both bounds are lower confidence bounds: they
exceed the truth with probability at most ``beta/2`` each (tested by simulation).

**Helper.** Trained on synthetic data, it knows nothing of membership: its "loss" is a
fair coin per record. **Scorers** (Bayes plug-in): ``log P_D(x)/P_G(x)`` (``c`` on
``[0, 1)``, ``-50`` on ``[1, 2)``) plus ``w * (1 - 2 loss)``, with ``w`` chosen on the
validation split by the game's criterion between 0 and the log-likelihood ratio of a
low loss estimated on the training split; any ``w > 0`` orders records as the Bayes
scorer does.

The per-record coins are hashes of ``(seed, record id)``: a record's loss never depends
on which other records are asked about, or in which order.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import check_positive_int, fail
from privaudit.panoramia.game import SYNTHETIC_PREFIX, ScorerData

__all__ = [
    "FixtureHelper",
    "FixtureModality",
    "FixtureRecords",
    "FixtureTarget",
    "fixture_population",
    "fixture_slots",
    "fixture_truth",
]

#: Baseline log-likelihood ratio on the detectable region ``[1, 2)`` (``-inf`` in exact
#: arithmetic; any value below ``c - w`` gives the same order).
FAR_LLR = -50.0


def fixture_truth(lam: float, eps: float) -> tuple[float, float]:
    """``(c, c + eps)`` of the fixture: ``c = -log(1 - lam)`` (module docstring)."""
    if not 0.0 < lam < 1.0:
        raise fail("lam", "a mixture weight in (0, 1)", lam)
    if not (eps >= 0.0 and math.isfinite(eps)):
        raise fail("eps", "a finite eps >= 0", eps)
    c = -math.log1p(-lam)
    return c, c + eps


def _uniform(seed: int, ids: Sequence[str], purpose: str) -> NDArray[np.float64]:
    """One U(0, 1) per record id, a hash of ``(seed, purpose, id)``."""
    out = np.empty(len(ids))
    for i, r in enumerate(ids):
        h = hashlib.sha256(f"{seed}\x1f{purpose}\x1f{r}".encode()).digest()
        out[i] = (int.from_bytes(h[:7], "little") >> 3) / float(1 << 53)
    return out


@dataclasses.dataclass(frozen=True)
class FixtureRecords:
    """Records of the fixture: ids and one feature ``x``."""

    ids: tuple[str, ...]
    x: NDArray[np.float64]

    def __post_init__(self) -> None:
        x = np.asarray(self.x, dtype=np.float64)
        if x.shape != (len(self.ids),):
            raise fail("x", f"{len(self.ids)} values", x.shape)
        object.__setattr__(self, "ids", tuple(map(str, self.ids)))
        object.__setattr__(self, "x", x)


def fixture_population(n: int, *, seed: int, prefix: str = "rec") -> FixtureRecords:
    """``n`` real records ``x ~ D = U(0, 1)`` with ids ``{prefix}-000000``, ..."""
    n = check_positive_int(n, "n")
    x = np.random.default_rng(seed).random(n)
    return FixtureRecords(tuple(f"{prefix}-{i:06d}" for i in range(n)), x)


@dataclasses.dataclass(frozen=True)
class FixtureTarget:
    """Randomised response on membership (module docstring): loss ``1 - (s XOR flip)``."""

    member_ids: frozenset[str]
    eps: float
    seed: int

    def losses(self, ids: Sequence[str]) -> NDArray[np.float64]:
        flip = _uniform(self.seed, ids, "flip") < 1.0 / (1.0 + math.exp(self.eps))
        s = np.asarray([r in self.member_ids for r in ids], dtype=bool)
        return 1.0 - (s ^ flip).astype(np.float64)


@dataclasses.dataclass(frozen=True)
class FixtureHelper:
    """A helper trained on synthetic data: its loss is a fair coin per record."""

    seed: int
    n_train: int

    def losses(self, ids: Sequence[str]) -> NDArray[np.float64]:
        return (_uniform(self.seed, ids, "helper") < 0.5).astype(np.float64)


@dataclasses.dataclass(frozen=True)
class FixtureGenerator:
    """``G = (1 - lam) U(0, 1) + lam U(1, 2)``; records what it was fitted on (its ids)."""

    lam: float
    fitted_on: tuple[str, ...]


@dataclasses.dataclass
class _PluginScorer:
    c: float
    weight: float
    info: dict[str, Any]

    def score(self, records: FixtureRecords, loss: NDArray[np.float64]) -> NDArray[np.float64]:
        llr_x = np.where(records.x < 1.0, self.c, FAR_LLR)
        return llr_x + self.weight * (1.0 - 2.0 * np.asarray(loss, dtype=np.float64)[:, 0])


class FixtureModality:
    """The :class:`~privaudit.panoramia.modality.Modality` of the exact fixture (module docstring)."""

    name = "fixture"

    def __init__(self, lam: float) -> None:
        self.lam = float(lam)
        self.c, _ = fixture_truth(self.lam, 0.0)

    def ids(self, records: FixtureRecords) -> tuple[str, ...]:
        return records.ids

    def take(self, records: FixtureRecords, ids: Sequence[str]) -> FixtureRecords:
        index = {r: i for i, r in enumerate(records.ids)}
        try:
            pos = [index[str(r)] for r in ids]
        except KeyError as exc:
            raise fail("ids", "ids of the records", f"unknown id {exc}") from None
        return FixtureRecords(tuple(records.ids[i] for i in pos), records.x[pos])

    def records_to_arrays(self, records: FixtureRecords) -> dict[str, NDArray[Any]]:
        return {"ids": np.asarray(records.ids, dtype=str), "x": records.x}

    def records_from_arrays(self, arrays: Mapping[str, NDArray[Any]]) -> FixtureRecords:
        return FixtureRecords(tuple(str(i) for i in arrays["ids"].tolist()), arrays["x"])

    def concat(self, a: FixtureRecords, b: FixtureRecords) -> FixtureRecords:
        return FixtureRecords(a.ids + b.ids, np.r_[a.x, b.x])

    def fit_generator(self, records: FixtureRecords, *, seed: int) -> FixtureGenerator:
        return FixtureGenerator(self.lam, records.ids)

    def sample(self, generator: FixtureGenerator, n: int, *, seed: int) -> FixtureRecords:
        rng = np.random.default_rng(seed)
        from_q = rng.random(n) < generator.lam
        x = rng.random(n) + from_q
        return FixtureRecords(tuple(f"{SYNTHETIC_PREFIX}{i:06d}" for i in range(n)), x)

    def fit_helper(self, records: FixtureRecords, *, seed: int) -> FixtureHelper:
        return FixtureHelper(seed, len(records.ids))

    def loss_features(self, model: Any, records: FixtureRecords) -> NDArray[np.float64]:
        if not isinstance(model, FixtureTarget | FixtureHelper):
            raise fail("model", "a FixtureTarget or FixtureHelper", type(model).__name__)
        return model.losses(records.ids)[:, None]

    def fit_scorer(
        self,
        train: ScorerData[FixtureRecords],
        val: ScorerData[FixtureRecords],
        *,
        seed: int,
        criterion: Callable[[NDArray[np.float64], NDArray[np.bool_]], float],
    ) -> _PluginScorer:
        low = train.loss[:, 0] < 0.5
        lab = np.asarray(train.label, dtype=bool)
        # log-likelihood ratio of a low loss, members vs generated (add-one smoothed)
        p1 = (np.sum(low & lab) + 1.0) / (np.sum(lab) + 2.0)
        p0 = (np.sum(low & ~lab) + 1.0) / (np.sum(~lab) + 2.0)
        w_hat = float(np.log(p1) - np.log(p0))
        candidates = [0.0] + ([w_hat] if w_hat > 0 else [])
        crit = []
        for w in candidates:
            s = _PluginScorer(self.c, w, {}).score(val.records, val.loss)
            crit.append(float(criterion(s, val.label)))
        best = int(np.argmax(crit))  # first of the best: ties keep w = 0
        info = {
            "kind": "bayes-plugin",
            "weights": candidates,
            "criterion": crit,
            "selected": best,
            "weight": candidates[best],
        }
        return _PluginScorer(self.c, candidates[best], info)

    def settings(self) -> dict[str, Any]:
        return {
            "generator": {"kind": "mixture", "lam": self.lam, "c": self.c},
            "helper": {"kind": "fair-coin loss"},
            "scorer": {"kind": "bayes-plugin", "far_llr": FAR_LLR},
        }


def fixture_slots(
    m: int, lam: float, eps: float, rng: np.random.Generator
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_]]:
    """``m`` coin-flip slots of the fixture scored by the Bayes MIA and baseline, vectorised.

    Returns ``(mia_scores, baseline_scores, member)``: ``member ~ Bernoulli(1/2)``;
    ``x ~ D`` for members, ``x ~ G`` otherwise; the MIA adds ``+-eps`` for the
    randomised-response bit. Ties within a region are broken by an independent uniform
    jitter (below the score gaps), which keeps every guess set a Bayes-optimal one.
    """
    m = check_positive_int(m, "m")
    c, _ = fixture_truth(lam, eps)
    member = rng.random(m) < 0.5
    far = ~member & (rng.random(m) < lam)
    bit = member ^ (rng.random(m) < 1.0 / (1.0 + math.exp(eps)))
    base = np.where(far, FAR_LLR, c) + 1e-6 * rng.random(m)
    mia = base + np.where(bit, eps, -eps) * (eps > 0) + 1e-6 * rng.random(m)
    return mia, base, member
