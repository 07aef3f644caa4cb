"""Audit a model trained outside privaudit, from Python: :func:`audit_model`.

The command line audits such a model from files (``privaudit run`` with a ``target``
section: the model file, files of member and non-member ids, the recipe in ``model``).
:func:`audit_model` takes the same things as Python objects -- the fitted model, the
data, which rows trained it -- and runs the same pipeline
(:func:`privaudit.membership.pipeline.run_given_audit`): the split's sizes come from
``members``, ``non_members`` and ``population``; the attacker's reference, shadow,
distilled and leave-one-out models are trained with the recipe the target was trained
with (Ye et al. 2022, Sec. 4, assumption 3; by default ``sklearn.base.clone(model)``);
every attack, metric and one-run bound is that of ``privaudit run``; the result's
:meth:`~privaudit.membership.result.AuditReport.save` writes the folder it writes.

Example::

    import numpy as np
    import privaudit
    from sklearn.datasets import load_digits
    from sklearn.neural_network import MLPClassifier

    X, y = load_digits(return_X_y=True)
    role = np.random.default_rng(0).integers(3, size=len(y))  # each record's own fair draw
    members, non_members = np.flatnonzero(role == 0), np.flatnonzero(role == 1)
    model = MLPClassifier((64,), max_iter=400, random_state=0).fit(X[members], y[members])
    result = privaudit.audit_model(model, X, y, members=members, non_members=non_members,
                                   attacks=["population", "lira-online", "rmia-online"],
                                   randomised_split=True)  # a fair coin per audited record
    print(result)                  # the summary `privaudit run` prints
    result.save("my-audit")        # results.json, scores.npz, report.html, bundle.json
"""

from __future__ import annotations

import hashlib
import pickle
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from privaudit._validation import as_float_array, as_label_array, check_unique_ids, fail
from privaudit.data import Dataset
from privaudit.errors import InvalidInputError
from privaudit.membership.config import GIVEN_IN_CODE, AuditConfig, validate_mapping
from privaudit.membership.inputs import GivenInputs, check_feature_names
from privaudit.membership.result import AuditReport
from privaudit.membership.summary import IN_MEMORY
from privaudit.models.provided import REFERENCE_LAYOUTS, ProvidedTarget, match_ids
from privaudit.runtime.progress import ProgressOption

__all__ = ["audit_model"]

#: The config's model kinds of the scikit-learn classes it knows (``model.kind``): a
#: target of one of them is recorded under the same kind and trainer name as
#: ``privaudit run`` records it.
_KIND_OF_CLASS: dict[str, str] = {
    "MLPClassifier": "mlp",
    "LogisticRegression": "logistic",
    "HistGradientBoostingClassifier": "gradient_boosting",
    "RandomForestClassifier": "random_forest",
}

#: Name of an in-memory dataset (``results.json["settings"]["dataset"]["name"]``).
ARRAYS_NAME = "arrays"


def audit_model(
    model: Any,
    X: Any,
    y: ArrayLike | None = None,
    *,
    members: ArrayLike,
    non_members: ArrayLike,
    population: ArrayLike | None = None,
    ids: ArrayLike | None = None,
    recipe: Any = None,
    attacks: Sequence[str] | None = None,
    attack_params: Mapping[str, Mapping[str, Any]] | None = None,
    models: Mapping[str, int] | None = None,
    references: str = "pool",
    alpha: float = 0.05,
    seed: int = 0,
    n_jobs: int = 1,
    executor: str = "local",
    ray_address: str | None = None,
    cache_dir: str | Path | None = None,
    accuracy_tolerance: float = 0.05,
    randomised_split: bool = False,
    vulnerable: Mapping[str, Any] | None = None,
    progress: ProgressOption = None,
) -> AuditReport:
    """Audit a model trained outside privaudit for membership leakage (Ye et al. 2022,
    Def. 3.2: the fixed target model), with the attacks of ``privaudit run``.

    Parameters
    ----------
    model : fitted scikit-learn classifier, torch ``nn.Module`` or privaudit model
        The target. A scikit-learn classifier (or Pipeline) must be fitted, with integer
        classes ``0 .. C-1``; a torch module maps float32 ``(n, d)`` to logits and needs
        ``recipe`` (a :class:`~privaudit.TorchRecipe`); a
        :class:`~privaudit.PrecomputedModel` (per-record logits or losses by record id) or
        any object with ``n_classes`` and ``logits(X)`` needs ``recipe`` too.
    X : array (n, d), DataFrame or Dataset
        Every record: the audited ones and the attacker's population. A
        :class:`~privaudit.Dataset` brings its own labels and record ids (then no ``y``
        or ``ids``).
    y : array (n,) of int
        Class labels ``0 .. C-1``.
    members, non_members : array of record ids, or boolean mask of length n
        The records that trained ``model`` and audited records it never saw. Ids are
        ``ids`` (default: the row numbers ``0 .. n-1``).
    population : array of record ids or mask, optional
        The attacker's records (disjoint from both); default: every other row.
    ids : array (n,), optional
        Unique record ids of the rows of ``X`` (default ``0 .. n-1``).
    recipe : unfitted scikit-learn estimator, TorchRecipe or Trainer, optional
        How ``model`` was trained: every attacker model is trained with it (Ye et al.
        Sec. 4). Default for a scikit-learn model: ``sklearn.base.clone(model)``.
    attacks : sequence of str, optional
        Attack names (:func:`privaudit.attack_names`); default: the default attacks.
    attack_params : mapping, optional
        Extra parameters per attack name (as ``attack_params`` of ``audit.yaml``).
    models : mapping, optional
        Numbers of attacker models (``audit.yaml``'s ``models``: ``n_reference``,
        ``n_shadow``, ``n_distilled``, ``distill_size``, ``n_leave_one_out``,
        ``leave_one_out_sample``).
    references : {"pool", "population"}
        Where the reference models train: the audited pool (online and offline attacks)
        or a part of the population (offline attacks only).
    alpha : float
        The FPR of every attack's threshold.
    seed : int
        Root seed (the attacker models' seeds, the coins of the one-run bounds).
    n_jobs : int
        Worker processes for the attacker models (-1: all cores).
    executor : {"local", "ray"}
        Where the attacker models train; ``ray_address`` for an existing Ray cluster.
    ray_address : str, optional
    cache_dir : path, optional
        Artifact store of trained models and signals (a rerun reuses them).
    accuracy_tolerance : float
        Largest accepted accuracy gap between ``model`` and a model trained with
        ``recipe`` (a warning otherwise: the reference models would not resemble it).
    randomised_split : bool
        Declare that ``members`` were drawn at random, independently of the records,
        before the model was trained (each record a member by its own fair coin, as
        Steinke et al.'s proof assumes; a uniformly random half of the audited records is
        treated as such coins, which their proof does not cover): the one-run epsilon
        lower bounds rest on it.
        privaudit cannot check it; False (default): the bounds are refused (the trivial
        0, not gated), since a chosen split can make a model that never saw the audited
        records look leaky. The attacks' figures are computed either way.
    vulnerable : mapping, optional
        ``audit.yaml``'s ``vulnerable`` section (Ye et al. Sec. 5.4 analysis).
    progress : progress option, optional
        As :func:`privaudit.run_audit`'s (None: a bar on a terminal only).

    Returns
    -------
    AuditReport
        Figures as attributes (``attacks``, ``target``, ``bounds``,
        ``strongest_attack()``), ``to_dict()`` / ``to_json()`` (``results.json``),
        ``save(folder)`` (the command line's report folder), ``str()`` (its summary).

    Raises
    ------
    InvalidInputError
        A bad argument, named: mismatched lengths, overlapping ``members`` and
        ``non_members``, an unfitted model, unknown ids, a bad setting
        (``models.n_reference: ...``).
    """
    model = _unwrapped(model)
    dataset = _dataset(X, y, ids)
    split = _audited_ids(dataset, members, non_members, population)
    _check_references(references)
    config = _config(
        attacks=attacks,
        attack_params=attack_params,
        models=models,
        alpha=alpha,
        seed=seed,
        n_jobs=n_jobs,
        executor=executor,
        ray_address=ray_address,
        cache_dir=cache_dir,
        vulnerable=vulnerable,
    )
    target_model, kind = _target(model, recipe, dataset)
    _check_fits(config, kind, references)
    trainer, model_kind = _trainer(model, recipe, dataset.n_classes)
    target = _provided_target(
        model, target_model, kind, split, references, accuracy_tolerance, randomised_split
    )
    given = GivenInputs(
        dataset=dataset,
        target=target,
        trainer=trainer,
        dataset_description={"name": dataset.name, "source": IN_MEMORY},
        model_kind=model_kind,
    )
    from privaudit.membership.pipeline import run_given_audit

    return run_given_audit(config, given, progress=progress)


# ---------------------------------------------------------------------------- the data


def _dataset(X: Any, y: ArrayLike | None, ids: ArrayLike | None) -> Dataset:
    """The records as a :class:`Dataset` (``X`` itself when it is one)."""
    if isinstance(X, Dataset):
        for name, value in (("y", y), ("ids", ids)):
            if value is not None:
                raise fail(name, "None when X is a Dataset (it holds labels and ids)", "a value")
        return X
    if y is None:
        raise fail("y", "the class labels of the rows of X", None)
    columns = getattr(X, "columns", None)
    if columns is not None:  # a DataFrame: its column names are the feature names
        try:
            values = np.asarray(X.to_numpy(dtype=np.float64))
        except (TypeError, ValueError) as exc:
            raise fail("X", "numeric feature columns", f"a DataFrame that is not ({exc})") from None
        names = tuple(str(c) for c in columns)
    else:
        values = as_float_array(X, "X", ndim=2)
        names = tuple(f"x{j}" for j in range(values.shape[1]))
    values = as_float_array(values, "X", ndim=2)
    labels = as_label_array(np.asarray(y), "y")
    n = values.shape[0]
    if labels.size != n:
        raise fail("y", f"{n} labels (one per row of X)", f"{labels.size} labels")
    if ids is None:
        record_ids: NDArray[Any] = np.arange(n, dtype=np.int64)
    else:
        record_ids = check_unique_ids(ids, "ids")
        if record_ids.size != n:
            raise fail("ids", f"{n} record ids (one per row of X)", f"{record_ids.size} ids")
    n_classes = max(2, int(labels.max()) + 1) if labels.size else 2
    return Dataset(
        ARRAYS_NAME,
        record_ids,
        values,
        labels,
        names,
        tuple(str(c) for c in range(n_classes)),
        info={"source": IN_MEMORY},
    )


def _ids(value: ArrayLike, name: str, dataset: Dataset) -> NDArray[Any]:
    """Record ids of ``value``: ids of ``dataset``, or a boolean mask over its rows."""
    a = np.asarray(value)
    if a.dtype.kind == "b":
        if a.ndim != 1 or a.size != dataset.n_records:
            raise fail(
                name,
                f"record ids or a boolean mask of {dataset.n_records} rows",
                f"a boolean array of shape {a.shape}",
            )
        return dataset.record_ids[a]
    if a.ndim != 1:
        raise fail(name, "a 1-dimensional array of record ids", f"shape {a.shape}")
    try:
        ids = match_ids(check_unique_ids(a, name), dataset.record_ids)
        dataset.positions(ids)
    except InvalidInputError as exc:
        text = str(exc)
        for prefix in ("ids: ", "record ids: ", f"{name}: "):
            text = text.removeprefix(prefix)
        raise InvalidInputError(f"{name}: {text}") from None
    return ids


class _AuditedIds(NamedTuple):
    """The record ids of the audited split: the target's ``members`` and ``non_members``,
    and the attacker's ``population`` (None: every other row)."""

    members: NDArray[Any]
    non_members: NDArray[Any]
    population: NDArray[Any] | None


def _audited_ids(
    dataset: Dataset, members: ArrayLike, non_members: ArrayLike, population: ArrayLike | None
) -> _AuditedIds:
    """The record ids of ``members``, ``non_members`` and ``population`` (ids or masks),
    checked in that order, then checked to be disjoint."""
    member_ids = _ids(members, "members", dataset)
    non_member_ids = _ids(non_members, "non_members", dataset)
    population_ids = None if population is None else _ids(population, "population", dataset)
    _check_disjoint(member_ids, non_member_ids, population_ids)
    return _AuditedIds(member_ids, non_member_ids, population_ids)


def _check_disjoint(
    members: NDArray[Any], non_members: NDArray[Any], population: NDArray[Any] | None
) -> None:
    for (a, name_a), (b, name_b) in (
        ((members, "members"), (non_members, "non_members")),
        ((members, "members"), (population, "population")),
        ((non_members, "non_members"), (population, "population")),
    ):
        if a is None or b is None:
            continue
        both = np.intersect1d(a, b)
        if both.size:
            raise fail(
                f"{name_a}/{name_b}",
                "disjoint sets of record ids",
                f"{both.size} in both, e.g. {both[:5].tolist()}",
            )


# ---------------------------------------------------------------------------- the model


def _unwrapped(model: Any) -> Any:
    """The model to audit: the estimator that privaudit's own scikit-learn adapter
    (:class:`~privaudit.models.sklearn.SklearnModel`) wraps, any other model itself."""
    from privaudit.models.sklearn import SklearnModel

    if isinstance(model, SklearnModel):
        return model.estimator
    return model


def _is_sklearn(obj: Any) -> bool:
    return hasattr(obj, "get_params") and hasattr(obj, "fit")


def _is_torch_module(obj: Any) -> bool:
    return type(obj).__module__.split(".")[0] == "torch" or (
        hasattr(obj, "state_dict") and hasattr(obj, "parameters") and callable(obj)
    )


def _target(model: Any, recipe: Any, dataset: Dataset) -> tuple[Any, str]:
    """The target as privaudit queries it, and its kind (``results.json["target"]["kind"]``)."""
    from privaudit.models.precomputed import PrecomputedModel

    if _is_sklearn(model):
        from privaudit.models.sklearn import SklearnModel

        _check_fitted(model)
        try:
            wrapped = SklearnModel(model, dataset.n_classes)
        except InvalidInputError as exc:
            raise InvalidInputError(f"model: {exc}") from None
        check_feature_names(wrapped, dataset, field="model")
        return wrapped, "sklearn"
    from privaudit.models.torch_models import TorchModel, TorchRecipe

    if isinstance(model, PrecomputedModel):
        return model, "precomputed"
    if isinstance(model, TorchModel):
        if recipe is None:
            recipe = model.recipe
        if not isinstance(recipe, TorchRecipe):
            raise fail("recipe", "the TorchRecipe the torch model was trained with", None)
        return model, "torch"
    if _is_torch_module(model):
        if not isinstance(recipe, TorchRecipe):
            raise fail(
                "recipe",
                "a TorchRecipe for a torch model (how it was built and trained)",
                type(recipe).__name__,
            )
        return TorchModel(model, dataset.n_classes, recipe=recipe, device=recipe.device), "torch"
    if hasattr(model, "n_classes") and hasattr(model, "logits"):
        return model, "model"
    raise fail(
        "model",
        "a fitted scikit-learn classifier, a torch module (with recipe=TorchRecipe(...)), "
        "a PrecomputedModel or a model with n_classes and logits(X)",
        type(model).__name__,
    )


def _check_fitted(model: Any) -> None:
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.validation import check_is_fitted

    try:
        check_is_fitted(model)
    except NotFittedError:
        raise fail(
            "model",
            "a fitted scikit-learn classifier (call model.fit first)",
            f"an unfitted {type(model).__name__}",
        ) from None
    except TypeError as exc:  # not an estimator scikit-learn recognises
        raise fail(
            "model", "a fitted scikit-learn classifier", f"{type(model).__name__} ({exc})"
        ) from None


def _trainer(model: Any, recipe: Any, n_classes: int) -> tuple[Any, str]:
    """The trainer of every attacker model, and the model kind of ``results.json``."""
    from sklearn.base import clone

    from privaudit.models import SklearnTrainer
    from privaudit.models.torch_models import TorchRecipe, TorchTrainer

    if recipe is None and isinstance(getattr(model, "recipe", None), TorchRecipe):
        recipe = model.recipe  # a TorchModel knows how it was built and trained
    if recipe is None:
        if not _is_sklearn(model):
            raise fail(
                "recipe",
                "how the model was trained (an unfitted scikit-learn estimator, a TorchRecipe "
                "or a Trainer): only a scikit-learn model's recipe defaults to a clone of it",
                None,
            )
        recipe = model
    if isinstance(recipe, TorchRecipe):
        return TorchTrainer(recipe, n_classes=n_classes), "torch"
    if _is_sklearn(recipe):
        kind = _KIND_OF_CLASS.get(type(recipe).__name__, type(recipe).__name__.lower())
        try:
            estimator = clone(recipe)
        except Exception as exc:
            raise fail(
                "recipe", "a scikit-learn estimator sklearn.base.clone accepts", exc
            ) from None
        return SklearnTrainer(estimator, name=kind, n_classes=n_classes), kind
    if callable(getattr(recipe, "fit", None)) and callable(getattr(recipe, "settings", None)):
        return recipe, str(getattr(recipe, "name", type(recipe).__name__))
    raise fail(
        "recipe",
        "an unfitted scikit-learn estimator, a TorchRecipe or a Trainer (fit, settings)",
        type(recipe).__name__,
    )


def _provided_target(
    model: Any,
    target_model: Any,
    kind: str,
    split: _AuditedIds,
    references: str,
    accuracy_tolerance: float,
    randomised_split: bool,
) -> ProvidedTarget:
    """The target as the pipeline takes it: the model as privaudit queries it
    (``target_model``), the audited split, where the references train, and what
    ``results.json["target"]`` records of it (its kind, an in-memory source, the class of
    ``model`` and the fingerprint that keys its cache entries), and whether its split was
    declared random."""
    return ProvidedTarget(
        model=target_model,
        member_ids=split.members,
        non_member_ids=split.non_members,
        population_ids=split.population,
        references=references,
        accuracy_tolerance=accuracy_tolerance,
        fingerprint=_fingerprint(model),
        description={
            "kind": kind,
            "source": IN_MEMORY,
            "model": f"{type(model).__module__}.{type(model).__qualname__}",
            "references": references,
        },
        randomised_split=randomised_split,
    )


def _fingerprint(model: Any) -> str:
    """SHA-256 of the model's pickled state (never unpickled): it keys the cache entries
    that depend on the target, as a model file's SHA-256 does for ``privaudit run``."""
    try:
        payload = pickle.dumps(model, protocol=4)
    except Exception as exc:
        raise fail("model", "a model whose state can be fingerprinted (picklable)", exc) from None
    return hashlib.sha256(payload).hexdigest()


# ---------------------------------------------------------------------------- settings


def _config(**settings: Any) -> AuditConfig:
    """The audit settings, validated as ``audit.yaml``'s (a bad one is named)."""
    data: dict[str, Any] = {"dataset": None, "model": None}
    for key, value in settings.items():
        if value is None and key in ("attacks", "ray_address", "cache_dir"):
            data[key] = None
        elif value is None:
            continue  # the schema's default
        elif isinstance(value, Mapping):
            data[key] = {
                str(k): (dict(v) if isinstance(v, Mapping) else v) for k, v in value.items()
            }
        elif key == "attacks":
            if isinstance(value, str):
                raise fail("attacks", "a sequence of attack names", repr(value))
            data[key] = list(value)
        else:
            data[key] = value
    return validate_mapping(
        AuditConfig,
        data,
        source="audit_model",
        what="audit setting",
        context={GIVEN_IN_CODE: True},
    )


def _check_references(references: str) -> None:
    """``references`` names where the reference models train (``REFERENCE_LAYOUTS``)."""
    if references not in REFERENCE_LAYOUTS:
        raise fail("references", " or ".join(map(repr, REFERENCE_LAYOUTS)), repr(references))


def _check_fits(config: AuditConfig, kind: str, references: str) -> None:
    """What ``audit.yaml`` refuses for a provided target (its ``target`` checks), named by
    the arguments of :func:`audit_model`."""
    if references == "population":
        online = [a for a in config.attack_names() if a.endswith("-online")]
        if online:
            raise InvalidInputError(
                "references: expected 'pool' for online attacks ('population' leaves every "
                f"audited record OUT of all reference models), found 'population' with "
                f"{', '.join(online)}; drop them or use references='pool'"
            )
        a = config.attack_params.get("rmia-offline", {}).get("a")
        if "rmia-offline" in config.attack_names() and not isinstance(a, int | float):
            raise InvalidInputError(
                "attack_params: expected {'rmia-offline': {'a': number}} with "
                "references='population' (RMIA's a is tuned on reference models that trained "
                "on audited records; e.g. 0.3 for tabular data, Zarifzadeh et al. 2024), "
                "found none"
            )
    distilling = [a for a in config.attack_names() if a.startswith("distillation")]
    if kind == "precomputed" and distilling:
        raise InvalidInputError(
            "attacks: expected no distillation attack for a PrecomputedModel (they query the "
            f"target on population records, which precomputed outputs cannot answer), found "
            f"{', '.join(distilling)}"
        )
