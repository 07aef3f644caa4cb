"""LiRA's augmented queries in the experiment engine (Carlini et al. 2022, Sec. VI-A).

An attack asks for them with ``augmented_queries=True`` (``attack_params`` in the
config; the LiRA attacks accept it). The views are those of the trainer's training
augmentation (:func:`privaudit.signals.views.query_views_of`): the engine evaluates the
target and the reference models on one extra set of records per non-identity view
(:func:`view_eval_sets`, named ``"<set>@<view>"``, so their signals are cached like any
other) and passes them to the attacks as :attr:`privaudit.attacks.AttackData.views`
(:func:`view_attack_data`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from privaudit.attacks.base import AttackData
from privaudit.data.dataset import Dataset
from privaudit.errors import DesignError
from privaudit.records import SignalTable
from privaudit.signals.views import QueryViews, query_views_of, view_datasets

__all__ = ["augmented_query_attacks", "requested_views", "view_attack_data", "view_eval_sets"]


def augmented_query_attacks(attack_params: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The attacks whose parameters ask for augmented queries."""
    return [a for a, p in attack_params.items() if p.get("augmented_queries") is True]


def requested_views(
    attacks: tuple[str, ...], attack_params: Mapping[str, Mapping[str, Any]], trainer: Any
) -> QueryViews | None:
    """The query views the run needs: None when no attack asks for augmented queries.

    Raises
    ------
    DesignError
        An attack asks for them and the trainer has no image augmentation to mirror.
    """
    asking = [a for a in augmented_query_attacks(attack_params) if a in attacks]
    if not asking:
        return None
    views = query_views_of(trainer)
    if views is None:
        raise DesignError(
            f"augmented_queries (attack {asking[0]!r}) needs an image model trained with an "
            f"augmentation whose views can be queried (model kind torch with input_shape "
            f"and augmentation shift, flip or flip-shift); trainer {trainer.name!r} has none"
        )
    return views


def view_eval_sets(views: QueryViews, sets: Mapping[str, Dataset]) -> dict[str, Dataset]:
    """``"<set>@<view>"`` -> the set's records on that view, for every non-identity view."""
    out: dict[str, Dataset] = {}
    for set_name, data in sets.items():
        for view, vdata in view_datasets(views, data):
            out[f"{set_name}@{view}"] = vdata
    return out


def with_views(views: QueryViews | None, sets: tuple[str, ...]) -> tuple[str, ...]:
    """``sets`` followed by their views' set names."""
    if views is None:
        return sets
    return sets + tuple(f"{s}@{v}" for v in views.names[1:] for s in sets)


def view_attack_data(
    views: QueryViews,
    data_kw: Mapping[str, Any],
    tables: Callable[[str, str], dict[str, SignalTable]],
    set_names: Mapping[str, str],
) -> dict[str, AttackData]:
    """One :class:`AttackData` per non-identity view.

    ``data_kw`` holds the identity view's fields; for each table field among
    ``target``, ``population_target``, ``reference``, ``reference_population`` present
    there, ``tables(field, "<set>@<view>")`` gives its tables on the view, where
    ``set_names[field]`` is the field's evaluation set.
    """
    out: dict[str, AttackData] = {}
    copied = ("record_ids", "labels", "population_labels", "reference_membership")
    for view in views.names[1:]:
        kw: dict[str, Any] = {k: data_kw[k] for k in copied if k in data_kw}
        for field, set_name in set_names.items():
            if field in data_kw:
                kw[field] = tables(field, f"{set_name}@{view}")
        out[view] = AttackData(**kw)
    return out
