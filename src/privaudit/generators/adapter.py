"""Audit a user's own generator: any object with ``fit`` and ``sample``.

:class:`UserGenerator` wraps an object ``obj`` (e.g. an SDV or synthcity model, or a
homemade one) so that the record-level games can fit it on many datasets:

* every fit works on a fresh ``copy.deepcopy(obj)`` (the original is never fitted);
* ``fit`` receives the training table as a :class:`pandas.DataFrame` of integer codes
  with the attribute names as columns (``levels=True``: the human-readable values);
* the seed is passed as ``seed=`` or ``random_state=`` when ``fit``/``sample`` accept
  such a keyword, or set as an attribute ``random_state``/``seed`` when the object has
  one; ``randomised`` says whether any of these was possible (if not, the model-seeded
  game cannot vary the release and the result carries a warning);
* ``sample(n)`` must return ``n`` rows with the same columns (a DataFrame or an array);
  values are mapped back to codes and checked against the domain.
"""

from __future__ import annotations

import copy
import inspect
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from privaudit._validation import fail
from privaudit.generators.base import check_codes

__all__ = ["UserGenerator"]

_SEED_NAMES = ("seed", "random_state")


def _seed_kw(fn: Any) -> str | None:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):  # pragma: no cover - builtins
        return None
    return next((s for s in _SEED_NAMES if s in params), None)


class _FittedUser:
    def __init__(self, obj: Any, wrapper: UserGenerator) -> None:
        self.obj = obj
        self.wrapper = wrapper

    def sample(self, n: int, rng: np.random.Generator) -> NDArray[np.int64]:
        kw = _seed_kw(self.obj.sample)
        kwargs = {kw: int(rng.integers(2**32))} if kw else {}
        out = self.obj.sample(int(n), **kwargs)
        return self.wrapper._to_codes(out)


class UserGenerator:
    """Adapter for an object with ``fit(DataFrame)`` and ``sample(n)`` (module docstring).

    Parameters
    ----------
    obj : object
        The unfitted generator (copied before every fit).
    names : sequence of str
        Attribute names (columns of the DataFrame it is fitted on).
    name : str
        Name in reports and cache keys.
    settings : dict or None
        JSON-able description of the generator's configuration (part of cache keys).
    levels : sequence of sequence of str or None
        Give the object human-readable values instead of codes.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> class Bootstrap:
    ...     def fit(self, df, seed=None): self.df, self.rng = df, np.random.default_rng(seed)
    ...     def sample(self, n): return self.df.sample(n, replace=True, random_state=self.rng)
    >>> g = UserGenerator(Bootstrap(), ["a", "b"], name="bootstrap")
    >>> g.fit(np.zeros((3, 2), dtype=int), (2, 2), seed=0).sample(2, np.random.default_rng(0))
    array([[0, 0],
           [0, 0]])
    """

    def __init__(
        self,
        obj: Any,
        names: Any,
        *,
        name: str = "user-generator",
        settings: dict[str, Any] | None = None,
        levels: Any = None,
    ) -> None:
        for attr in ("fit", "sample"):
            if not callable(getattr(obj, attr, None)):
                raise fail(
                    "generator", "an object with fit(table) and sample(n)", type(obj).__name__
                )
        self.obj = obj
        self.names = tuple(str(n) for n in names)
        self._name = str(name)
        self._settings = dict(settings or {"class": type(obj).__qualname__})
        self.levels = None if levels is None else tuple(tuple(str(v) for v in lv) for lv in levels)
        self.randomised = (
            _seed_kw(obj.fit) is not None
            or _seed_kw(obj.sample) is not None
            or any(hasattr(obj, s) for s in _SEED_NAMES)
        )

    @property
    def name(self) -> str:
        return self._name

    def settings(self) -> dict[str, Any]:
        return {"generator": "user", "name": self._name, **self._settings}

    def _to_codes(self, out: Any) -> NDArray[np.int64]:
        if isinstance(out, pd.DataFrame):
            missing = [c for c in self.names if c not in out.columns]
            if missing:
                raise fail(
                    f"{self._name}.sample()", f"columns {list(self.names)}", f"missing {missing}"
                )
            out = out[list(self.names)]
            if self.levels is not None:
                cols = []
                for j, lv in enumerate(self.levels):
                    pos = {v: i for i, v in enumerate(lv)}
                    vals = out.iloc[:, j].astype(str).tolist()
                    bad = [v for v in vals if v not in pos]
                    if bad:
                        raise fail(f"{self._name}.sample()", f"values of {self.names[j]}", bad[:3])
                    cols.append([pos[v] for v in vals])
                return np.asarray(cols, dtype=np.int64).T.reshape(len(out), len(self.names))
            out = out.to_numpy()
        return np.asarray(out)

    def fit(
        self, codes: NDArray[np.int64], cardinalities: tuple[int, ...], *, seed: int
    ) -> _FittedUser:
        X = check_codes(codes, tuple(cardinalities))
        if X.shape[1] != len(self.names):
            raise fail("codes", f"{len(self.names)} attributes", X.shape[1])
        df = pd.DataFrame(X, columns=list(self.names))
        if self.levels is not None:
            df = pd.DataFrame(
                {
                    c: np.asarray(lv)[X[:, j]]
                    for j, (c, lv) in enumerate(zip(self.names, self.levels, strict=True))
                }
            )
        obj = copy.deepcopy(self.obj)
        kw = _seed_kw(obj.fit)
        if kw is None:
            for s in _SEED_NAMES:
                if hasattr(obj, s):
                    setattr(obj, s, int(seed))
                    break
            obj.fit(df)
        else:
            obj.fit(df, **{kw: int(seed)})
        return _FittedUser(obj, self)
