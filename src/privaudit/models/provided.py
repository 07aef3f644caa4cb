"""A target model trained outside privaudit, with the auditor's own split.

The fixed-model game (Ye et al. 2022, Def. 3.2) needs, besides the target, which
records trained it. When the auditor brings a trained model, privaudit does not draw
the split: :class:`ProvidedTarget` holds the model and the ids of its members and
non-members (the audited records) and, optionally, of the population (the attacker's
data; default: every other record of the dataset). The engine
(:func:`privaudit.membership.experiment.run_experiment`) then trains only the attacker's
models, with the recipe the target was trained with (Ye et al. Sec. 4, assumption 3).

Where the reference models train (``references``):

``"pool"``
    On the audited pool with the balanced keep layout of LiRA (Carlini et al. 2022,
    Sec. IV-B / VI): every audited record is IN for exactly half of them, independently
    of its target bit; online and offline attacks.
``"population"``
    On random subsets of a part of the population set aside for them, of the target's
    training-set size (Ye et al. 2022, Sec. 4.3, attack R; offline LiRA and RMIA): every
    audited record is OUT for every reference model, so only offline attacks run. The
    rest of the population stays the attacker's population (attack P, RMIA's ``z``,
    shadow and distilled models, threshold calibration), never trained on by a reference
    model.

Before the attacks run the engine trains one model with the recipe on population records
(as many as the target's members) and compares its accuracy on the audited non-members
with the target's: reference models that do not resemble the target make every
reference-based attack silently weak (Carlini et al. 2022, Sec. VI-C, "mismatched"
reference models). A gap above ``accuracy_tolerance`` raises
:class:`RecipeMismatchWarning` with both figures.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privaudit._validation import check_probability, check_unique_ids, fail

__all__ = ["REFERENCE_LAYOUTS", "ProvidedSplit", "ProvidedTarget", "RecipeMismatchWarning"]

REFERENCE_LAYOUTS: tuple[str, ...] = ("pool", "population")


class RecipeMismatchWarning(UserWarning):
    """A model trained with the recipe is much more or less accurate than the target."""


@dataclasses.dataclass(frozen=True)
class ProvidedTarget:
    """The auditor's trained target and split.

    Parameters
    ----------
    model : Model or PrecomputedModel
        The trained target (anything with ``logits(X)``, or per-record outputs by id).
    member_ids, non_member_ids : arrays of record ids
        The audited records: the target's training records and records it never saw.
    population_ids : array of record ids, optional
        The attacker's records (disjoint from both); default: every other record.
    references : {"pool", "population"}
        Where the reference models train (module docstring).
    accuracy_tolerance : float
        Largest accepted absolute gap between the target's accuracy and that of a model
        trained with the recipe, both on the audited non-members.
    fingerprint : str
        Identifies the model's content (e.g. the SHA-256 of its file): part of every
        cache key that depends on the target.
    description : mapping
        JSON-able facts recorded in ``results.json["target"]`` (kind, file, ...).
    randomised_split : bool
        The auditor's declaration that the members were drawn at random, independently of
        the records, before the target was trained (each record a member by its own fair
        coin, as Steinke et al.'s proof assumes; a uniformly random half of the audited
        records is treated as such coins, which their proof does not cover). privaudit cannot check
        it; the one-run eps bounds rest on it and are refused without it
        (:data:`privaudit.stats.attack_bounds.SPLIT_NOT_RANDOMISED`).
    """

    model: Any
    member_ids: NDArray[Any]
    non_member_ids: NDArray[Any]
    population_ids: NDArray[Any] | None = None
    references: str = "pool"
    accuracy_tolerance: float = 0.05
    fingerprint: str = ""
    description: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    randomised_split: bool = False

    def __post_init__(self) -> None:
        if not hasattr(self.model, "n_classes"):
            raise fail(
                "model",
                "a trained model (n_classes, logits) or per-record outputs",
                type(self.model).__name__,
            )
        m, n, pop = _checked_split(self.member_ids, self.non_member_ids, self.population_ids)
        object.__setattr__(self, "member_ids", m)
        object.__setattr__(self, "non_member_ids", n)
        object.__setattr__(self, "population_ids", pop)
        if self.references not in REFERENCE_LAYOUTS:
            raise fail(
                "references", " or ".join(map(repr, REFERENCE_LAYOUTS)), repr(self.references)
            )
        check_probability(self.accuracy_tolerance, "accuracy_tolerance")
        if not isinstance(self.randomised_split, bool | np.bool_):
            raise fail("randomised_split", "True or False", repr(self.randomised_split))
        object.__setattr__(self, "randomised_split", bool(self.randomised_split))
        object.__setattr__(self, "description", dict(self.description))

    @property
    def audited_ids(self) -> NDArray[Any]:
        """Members then non-members."""
        return np.concatenate([self.member_ids, self.non_member_ids])


def _checked_split(
    member_ids: ArrayLike, non_member_ids: ArrayLike, population_ids: ArrayLike | None
) -> tuple[NDArray[Any], NDArray[Any], NDArray[Any] | None]:
    """Unique ids, at least 2 members and 2 non-members, the three sets disjoint."""
    m = check_unique_ids(member_ids)
    n = check_unique_ids(non_member_ids)
    if m.size < 2 or n.size < 2:
        raise fail(
            "member_ids/non_member_ids",
            "at least 2 members and 2 non-members",
            (m.size, n.size),
        )
    both = np.intersect1d(m.astype(str), n.astype(str))
    if both.size:
        raise fail(
            "member_ids/non_member_ids",
            "disjoint sets of ids",
            f"{both.size} in both, e.g. {both[:5].tolist()}",
        )
    if population_ids is None:
        return m, n, None
    p = check_unique_ids(population_ids)
    clash = np.intersect1d(p.astype(str), np.concatenate([m.astype(str), n.astype(str)]))
    if clash.size:
        raise fail(
            "population_ids",
            "ids outside the audited records",
            f"{clash.size} audited, e.g. {clash[:5].tolist()}",
        )
    return m, n, p


@dataclasses.dataclass(frozen=True)
class ProvidedSplit:
    """A provided target's split by record id, before its model is loaded.

    What :func:`privaudit.membership.inputs.read_provided_split` reads from the user's files (member
    and non-member ids, the population ids, None for "every other record"), so that the
    split's sizes can be checked (:func:`privaudit.membership.preflight.check_provided_split`)
    before the model file is opened or anything trains. Validated as
    :class:`ProvidedTarget`'s split is.
    """

    member_ids: NDArray[Any]
    non_member_ids: NDArray[Any]
    population_ids: NDArray[Any] | None = None

    def __post_init__(self) -> None:
        m, n, pop = _checked_split(self.member_ids, self.non_member_ids, self.population_ids)
        object.__setattr__(self, "member_ids", m)
        object.__setattr__(self, "non_member_ids", n)
        object.__setattr__(self, "population_ids", pop)

    @property
    def audited_ids(self) -> NDArray[Any]:
        """Members then non-members."""
        return np.concatenate([self.member_ids, self.non_member_ids])


def read_id_file(path: Any, what: str) -> NDArray[Any]:
    """Record ids from a text file: one id per line; blank lines and ``#`` comments
    skipped; integers when every id is one."""
    from pathlib import Path

    p = Path(path)
    if not p.is_file():
        raise fail(what, "an existing file of record ids (one per line)", str(p))
    ids = [ln.split("#", 1)[0].strip() for ln in p.read_text(encoding="utf-8").splitlines()]
    ids = [i for i in ids if i]
    if not ids:
        raise fail(what, "at least one record id", f"an empty file {p.name}")
    try:
        return np.asarray([int(i) for i in ids], dtype=np.int64)
    except ValueError:
        return np.asarray(ids, dtype=str)


def match_ids(ids: ArrayLike, like: NDArray[Any]) -> NDArray[Any]:
    """``ids`` in the dtype of the dataset's ids ``like`` (ints vs strings)."""
    a = np.asarray(ids)
    if like.dtype.kind in "iu" and a.dtype.kind not in "iu":
        try:
            return a.astype(np.int64)
        except ValueError:
            raise fail("record ids", "integer ids (as in the dataset)", a[:5].tolist()) from None
    if like.dtype.kind not in "iu":
        return a.astype(str)
    return a.astype(np.int64)


def file_sha256(path: Any) -> str:
    """SHA-256 hex digest of a file (the fingerprint of a provided model)."""
    import hashlib
    from pathlib import Path

    h = hashlib.sha256()
    with open(Path(path), "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def load_target_model(
    kind: str,
    path: Any,
    *,
    n_classes: int,
    recipe: Any = None,
    trusted_types: Any = (),
    precomputed_n_classes: int | None = None,
) -> Any:
    """Load a provided target without running its code.

    ``kind``: ``"sklearn"`` (skops file, :func:`privaudit.models.load_model` with
    ``trusted_types``), ``"torch"`` (safetensors or a ``.pt`` state dict loaded with
    ``weights_only=True`` into ``recipe.build()``), ``"precomputed"`` (per-record
    logits or losses by record id, :func:`privaudit.models.load_precomputed`).
    """
    from privaudit.models.persistence import load_model
    from privaudit.models.precomputed import PrecomputedModel, load_precomputed
    from privaudit.models.sklearn import SklearnModel

    if kind == "sklearn":
        model = load_model(path, trusted_types=list(trusted_types))
        if isinstance(model, PrecomputedModel):
            raise fail("target.path", "a .skops file for kind 'sklearn'", str(path))
        if isinstance(model, SklearnModel) and model.n_classes != n_classes:
            model = SklearnModel(
                model.estimator, n_classes, logit_source=model.logit_source, fit_info=model.fit_info
            )
        return model
    if kind == "torch":
        from privaudit.models.torch_models import load_torch_model

        if recipe is None:
            raise fail("target.factory", "a module factory for a torch target", None)
        return load_torch_model(path, recipe, n_classes=n_classes)
    if kind == "precomputed":
        return load_precomputed(path, n_classes=precomputed_n_classes or n_classes)
    raise fail("target.kind", "sklearn, torch or precomputed", repr(kind))


def membership_from_column(
    values: Any, record_ids: NDArray[Any]
) -> tuple[NDArray[Any], NDArray[Any]]:
    """Member and non-member ids from a member column (1/true, 0/false; empty: not audited)."""
    import pandas as pd

    s = pd.Series(values)
    audited = s.notna().to_numpy()
    raw = s[audited]
    mapping = {"1": True, "true": True, "yes": True, "0": False, "false": False, "no": False}
    try:
        bits = np.asarray(
            [mapping[str(v).strip().lower().removesuffix(".0")] for v in raw], dtype=bool
        )
    except KeyError as exc:
        raise fail(
            "target.member_column", "1/0, true/false or empty values", repr(exc.args[0])
        ) from None
    ids = record_ids[audited]
    return ids[bits], ids[~bits]
