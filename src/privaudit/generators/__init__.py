"""Synthetic-data generators audited as targets (a trainer whose model samples tables).

* :mod:`~privaudit.generators.discrete` -- :class:`DiscreteTable`, :func:`discretise`;
* :mod:`~privaudit.generators.base` -- the :class:`Generator` protocol, :func:`synthesise`;
* :mod:`~privaudit.generators.baynet` -- BayNet and PrivBayes (Zhang et al. 2017);
* :mod:`~privaudit.generators.cart` -- Synthpop-style sequential CART (Nowok et al. 2016);
* :mod:`~privaudit.generators.adapter` -- :class:`UserGenerator` for any fit/sample object.
"""

from __future__ import annotations

from typing import Any

from privaudit._validation import fail
from privaudit.generators.adapter import UserGenerator
from privaudit.generators.base import FittedGenerator, Generator, check_codes, synthesise
from privaudit.generators.baynet import (
    BayesianNetwork,
    BayesianNetworkGenerator,
    choose_degree,
    mutual_information_sensitivity,
    theta_usefulness,
)
from privaudit.generators.cart import CartGenerator
from privaudit.generators.discrete import DiscreteTable, discretise

__all__ = [
    "GENERATORS",
    "BayesianNetwork",
    "BayesianNetworkGenerator",
    "CartGenerator",
    "DiscreteTable",
    "FittedGenerator",
    "Generator",
    "UserGenerator",
    "check_codes",
    "choose_degree",
    "discretise",
    "make_generator",
    "mutual_information_sensitivity",
    "synthesise",
    "theta_usefulness",
]

#: Built-in generator kinds accepted by :func:`make_generator`.
GENERATORS: tuple[str, ...] = ("baynet", "privbayes", "cart")


def make_generator(kind: str, **params: Any) -> Generator:
    """A built-in generator by name: ``baynet`` (``degree``), ``privbayes`` (``epsilon``,
    ``degree`` -- default ``"auto"``, Zhang et al.'s theta-usefulness rule --, ``theta``,
    ``beta``) or ``cart`` (``min_samples_leaf``)."""
    if kind == "baynet":
        if "epsilon" in params:
            raise fail(
                "generator.epsilon", "no epsilon for baynet (use privbayes)", params["epsilon"]
            )
        return BayesianNetworkGenerator(**params)
    if kind == "privbayes":
        if params.get("epsilon") is None:
            raise fail("generator.epsilon", "a positive epsilon for privbayes", None)
        return BayesianNetworkGenerator(**{"degree": "auto", **params})
    if kind == "cart":
        return CartGenerator(**params)
    raise fail("generator", "one of " + ", ".join(GENERATORS), repr(kind))
