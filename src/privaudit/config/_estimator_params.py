"""The parameter names of a scikit-learn classifier, read from its source without importing it.

``model.params`` is checked against the estimator's parameters when a config is read, so
that a misspelt name fails before any data loads. Importing scikit-learn (and, through it,
SciPy and pandas) costs about 1.4 s of CPU, most of the time a command needs to report a
problem in the user's files (issue 29: the own-model walk's size error within 2 s). By
scikit-learn's estimator contract, ``get_params(deep=False)`` is exactly the keyword
parameters of the class's ``__init__`` (no ``*args``/``**kwargs``; scikit-learn's
developer guide, "Instantiation"), so those names can be read from the installed source
file with :mod:`ast`. Where that file or that ``__init__`` is not where this module expects
it (another scikit-learn version), :func:`estimator_param_names` returns ``None`` and the
caller imports the class instead; a test keeps the two equal for every model kind.
"""

from __future__ import annotations

import ast
import importlib.util
from functools import cache
from pathlib import Path

#: Where each model kind's class is defined, relative to the ``sklearn`` package.
_SOURCES: dict[str, tuple[str, str]] = {
    "mlp": ("neural_network/_multilayer_perceptron.py", "MLPClassifier"),
    "logistic": ("linear_model/_logistic.py", "LogisticRegression"),
    "gradient_boosting": (
        "ensemble/_hist_gradient_boosting/gradient_boosting.py",
        "HistGradientBoostingClassifier",
    ),
    "random_forest": ("ensemble/_forest.py", "RandomForestClassifier"),
}


@cache
def estimator_param_names(kind: str) -> tuple[str, frozenset[str]] | None:
    """Model kind ``kind``'s class name and the names its ``get_params(deep=False)`` would
    return, or ``None`` where they cannot be read from the source (then import the class)."""
    where = _SOURCES.get(kind)
    spec = importlib.util.find_spec("sklearn")  # a top-level spec: sklearn is not imported
    if where is None or spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / where[0]
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return None
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == where[1]:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                    a = item.args
                    if a.vararg is not None or a.kwarg is not None:
                        return None
                    names = [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
                    return where[1], frozenset(names[1:])  # less self
            return None
    return None
