"""scikit-learn adapter: :class:`SklearnTrainer` and :class:`SklearnModel`.

Where the logits come from (``SklearnModel.logit_source``), in order of preference:

``"mlp-preactivation"``
    :class:`~sklearn.neural_network.MLPClassifier` (also as the last step of a
    :class:`~sklearn.pipeline.Pipeline`): the output layer's pre-activation
    ``z = h_{L-1} W_L + b_L`` computed from ``coefs_`` / ``intercepts_`` and the hidden
    activation. With several classes the output activation is softmax, so ``z`` are the
    logits; a binary MLP has one logistic output unit, ``p(class 1) = sigmoid(z)``,
    whose logits are ``[0, z]``. ``predict_proba`` of an overfit MLP rounds to exactly
    0 or 1 (and ``predict_log_proba`` gives ``-inf``); the pre-activation does not.
``"decision_function"``
    Estimators with ``decision_function`` whose softmax reproduces ``predict_proba``
    (logistic regression, gradient boosting, LDA, ...). Binary ``decision_function``
    returns one column ``d`` = log-odds of ``classes_[1]``: logits ``[0, d]``.
    The agreement ``softmax(logits) == predict_proba`` is checked on the first rows the
    model sees (or on training rows, when trained by :class:`SklearnTrainer`), on the
    entries where ``predict_proba`` is not saturated; if it fails (e.g. an SVC with
    Platt scaling), the model falls back to ``"log-proba"``.
``"decision-margins"``
    Estimators with ``decision_function`` and no ``predict_proba`` (``LinearSVC``,
    hinge-loss SGD): the margins are used as scores; their softmax is *not* a
    calibrated probability (such a model has none).
``"log-proba"``
    Estimators with only ``predict_proba`` (random forests, k-NN, ...):
    ``log(max(p, PROBA_FLOOR))`` with ``PROBA_FLOOR = 1e-12``, so that an exactly-zero
    probability gives a finite logit (a loss of at most ``-log(1e-12) ≈ 27.6`` nats).

Classes absent from the training set: ``classes_`` is mapped into the full label space
``0 .. n_classes - 1``; an absent class gets the logit ``min_j z_j - ABSENT_CLASS_MARGIN``
(row-wise, ``ABSENT_CLASS_MARGIN = 100``), i.e. a probability below ``e^-100`` times the
least likely seen class: very small, but finite.

Feature names: an estimator fitted on a pandas DataFrame (``feature_names_in_``, also
the first step's of a Pipeline) is queried with a DataFrame of those columns, as it was
fitted, so scikit-learn does not warn that ``X does not have valid feature names``; the
columns must be the records' features in that order
(:func:`privaudit.membership.inputs.check_feature_names` checks them against the dataset before
anything trains).
"""

from __future__ import annotations

import inspect
import re
import warnings
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.special import expit, log_softmax

from privaudit._validation import as_float_array, check_positive_int, fail
from privaudit.errors import InvalidInputError, PrivauditError
from privaudit.models.base import check_fit_inputs

__all__ = [
    "ABSENT_CLASS_MARGIN",
    "LOGIT_SOURCES",
    "PROBA_FLOOR",
    "SklearnModel",
    "SklearnTrainer",
    "TrainingError",
    "feature_names_in",
]

PROBA_FLOOR = 1e-12
ABSENT_CLASS_MARGIN = 100.0
LOGIT_SOURCES = ("mlp-preactivation", "decision_function", "decision-margins", "log-proba")
#: entries of predict_proba in [SAT, 1 - SAT] are "not saturated" for the consistency check
_SATURATION = 1e-6
_CHECK_ROWS = 256
_CHECK_ATOL = 1e-6


class TrainingError(PrivauditError):
    """The wrapped estimator failed to train or to predict."""


def _final_estimator(est: Any) -> Any:
    steps = getattr(est, "steps", None)
    if isinstance(steps, list) and steps:
        return steps[-1][1]
    return est


def feature_names_in(estimator: Any) -> tuple[str, ...] | None:
    """The column names ``estimator`` was fitted with (a DataFrame's ``feature_names_in_``;
    a Pipeline's first step's), or None when it was fitted on an array."""
    try:
        names = getattr(estimator, "feature_names_in_", None)
    except AttributeError:  # pragma: no cover - a Pipeline whose first step has none
        names = None
    if names is None:
        return None
    return tuple(str(n) for n in np.asarray(names).tolist())


def _transform_head(est: Any, X: Any) -> NDArray[np.float64]:
    """Apply all but the last step of a Pipeline (identity for a bare estimator)."""
    steps = getattr(est, "steps", None)
    if isinstance(steps, list) and steps:
        Xt: Any = X
        for _, step in steps[:-1]:
            if step is None or step == "passthrough":
                continue
            Xt = step.transform(Xt)
        return np.asarray(Xt, dtype=np.float64)
    return np.asarray(X, dtype=np.float64)


def _mlp_preactivation(mlp: Any, X: NDArray[np.float64]) -> NDArray[np.float64]:
    """Output-layer pre-activation of a fitted MLPClassifier (before softmax / logistic)."""
    act = str(mlp.activation)
    h = np.asarray(X, dtype=np.float64)
    n_layers = len(mlp.coefs_)
    for i in range(n_layers):
        h = h @ np.asarray(mlp.coefs_[i], dtype=np.float64) + np.asarray(
            mlp.intercepts_[i], dtype=np.float64
        )
        if i < n_layers - 1:
            if act == "relu":
                h = np.maximum(h, 0.0)
            elif act == "tanh":
                h = np.tanh(h)
            elif act == "logistic":
                h = expit(h)
            elif act == "identity":
                pass
            else:
                raise fail(
                    "MLPClassifier.activation", "relu, tanh, logistic or identity", repr(act)
                )
    return h


def _softmax(z: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.exp(log_softmax(z, axis=1))


class SklearnModel:
    """A fitted scikit-learn classifier seen through its logits.

    Parameters
    ----------
    estimator : fitted scikit-learn classifier (or Pipeline ending in one)
        Its ``classes_`` must be integer labels in ``0 .. n_classes - 1``.
    n_classes : int, optional
        Size of the label space (default ``max(classes_) + 1``).
    logit_source : str
        ``"auto"`` (see the module docstring) or one of :data:`LOGIT_SOURCES`.
    reference_X : array, optional
        Rows on which to check ``softmax(decision_function) == predict_proba`` now
        (otherwise it is checked on the first call of :meth:`logits`).
    fit_info : dict, optional
        JSON-able facts about training (convergence, training-set size).
    """

    def __init__(
        self,
        estimator: Any,
        n_classes: int | None = None,
        *,
        logit_source: str = "auto",
        reference_X: NDArray[np.float64] | None = None,
        fit_info: dict[str, Any] | None = None,
    ) -> None:
        final = _final_estimator(estimator)
        classes = getattr(final, "classes_", None)
        if classes is None:
            classes = getattr(estimator, "classes_", None)
        if classes is None:
            raise fail(
                "estimator",
                "a fitted scikit-learn classifier (with classes_)",
                type(estimator).__name__,
            )
        cls = np.asarray(classes)
        if cls.ndim != 1 or (
            cls.dtype.kind not in "iub"
            and not (cls.dtype.kind == "f" and np.all(cls == np.round(cls)))
        ):
            raise fail("estimator.classes_", "integer class labels 0..C-1", cls.tolist()[:10])
        cls_int = cls.astype(np.int64)
        if cls_int.size and cls_int.min() < 0:
            raise fail("estimator.classes_", "non-negative labels", cls_int.tolist()[:10])
        C = (
            int(cls_int.max()) + 1
            if n_classes is None
            else check_positive_int(n_classes, "n_classes", minimum=2)
        )
        if C < 2:
            raise fail("n_classes", "at least 2", C)
        if cls_int.max() >= C:
            raise fail("estimator.classes_", f"labels below n_classes={C}", cls_int.tolist()[:10])
        self.estimator = estimator
        self.classes_ = cls_int
        self._n_classes = C
        #: the columns the estimator was fitted with (a DataFrame's), or None
        self.feature_names = feature_names_in(estimator)
        self.fit_info: dict[str, Any] = dict(fit_info or {})
        self._verified = False
        if logit_source == "auto":
            if type(final).__name__ == "MLPClassifier" and hasattr(final, "coefs_"):
                source = "mlp-preactivation"
            elif hasattr(estimator, "decision_function") and hasattr(estimator, "predict_proba"):
                source = "decision_function"
            elif hasattr(estimator, "decision_function"):
                source = "decision-margins"
            elif hasattr(estimator, "predict_proba"):
                source = "log-proba"
            else:
                raise fail(
                    "estimator",
                    "a classifier with decision_function or predict_proba",
                    type(estimator).__name__,
                )
            self._auto = True
        else:
            if logit_source not in LOGIT_SOURCES:
                raise fail(
                    "logit_source",
                    "'auto' or one of " + ", ".join(LOGIT_SOURCES),
                    repr(logit_source),
                )
            source = logit_source
            self._auto = False
            self._verified = True
        self.logit_source = source
        if reference_X is not None and not self._verified:
            self._verify(as_float_array(reference_X, "reference_X", ndim=2))

    @property
    def n_classes(self) -> int:
        """Number of classes ``C`` of the label space."""
        return self._n_classes

    def __repr__(self) -> str:
        return f"SklearnModel({type(self.estimator).__name__}, n_classes={self._n_classes}, logit_source={self.logit_source!r})"

    # ------------------------------------------------------------------ internals
    def _as_fitted(self, X: NDArray[np.float64]) -> Any:
        """``X`` as the estimator was fitted: a DataFrame with its feature names, if any."""
        names = self.feature_names
        if names is None or X.shape[1] != len(names):
            return X  # an array-fitted estimator, or a width scikit-learn itself refuses
        import pandas as pd

        return pd.DataFrame(X, columns=list(names), copy=False)

    def _local_logits(self, X: NDArray[np.float64], source: str) -> NDArray[np.float64]:
        """Logits over ``classes_`` (columns in the order of ``classes_``)."""
        est = self.estimator
        k = self.classes_.size
        Xf = self._as_fitted(X)
        if source == "mlp-preactivation":
            z = _mlp_preactivation(_final_estimator(est), _transform_head(est, Xf))
            if z.shape[1] == 1 and k == 2:
                return np.hstack([np.zeros_like(z), z])
            return z
        if source in ("decision_function", "decision-margins"):
            d = np.asarray(est.decision_function(Xf), dtype=np.float64)
            if d.ndim == 1:
                d = d[:, None]
            if d.shape[1] == 1 and k == 2:
                return np.hstack([np.zeros_like(d), d])
            return d
        p = np.asarray(est.predict_proba(Xf), dtype=np.float64)
        return np.log(np.maximum(p, PROBA_FLOOR))

    def _verify(self, X: NDArray[np.float64]) -> None:
        """Check softmax(decision logits) == predict_proba on non-saturated entries."""
        self._verified = True
        if self.logit_source != "decision_function" or not self._auto:
            return
        rows = X[:_CHECK_ROWS]
        z = self._local_logits(rows, "decision_function")
        p = np.asarray(self.estimator.predict_proba(self._as_fitted(rows)), dtype=np.float64)
        if z.shape != p.shape:
            self.logit_source = "log-proba"
            return
        q = _softmax(z)
        ok = (p >= _SATURATION) & (p <= 1.0 - _SATURATION)
        if ok.any() and not np.allclose(q[ok], p[ok], rtol=1e-6, atol=_CHECK_ATOL):
            self.logit_source = "log-proba"

    # ------------------------------------------------------------------ API
    def logits(self, X: NDArray[np.float64]) -> NDArray[np.float64]:
        """Logits over the full label space, float64 of shape ``(n, n_classes)``.

        ``softmax(logits(X))`` equals ``predict_proba(X)`` (columns placed at the
        labels in ``classes_``) wherever ``predict_proba`` is not saturated; see the
        module docstring for where the logits come from and how absent classes are
        filled.
        """
        X = as_float_array(X, "X", ndim=2)
        if not self._verified:
            self._verify(X)
        try:
            z = self._local_logits(X, self.logit_source)
        except PrivauditError:
            raise
        except Exception as exc:
            raise TrainingError(
                f"{self!r}: prediction failed: {type(exc).__name__}: {exc}"
            ) from exc
        if z.shape != (X.shape[0], self.classes_.size):
            raise TrainingError(
                f"{self!r}: expected scores of shape {(X.shape[0], self.classes_.size)}, found {z.shape}"
            )
        if self.classes_.size == self._n_classes and np.array_equal(
            self.classes_, np.arange(self._n_classes)
        ):
            out = np.ascontiguousarray(z, dtype=np.float64)
        else:
            fill = z.min(axis=1, keepdims=True) - ABSENT_CLASS_MARGIN
            out = np.repeat(fill, self._n_classes, axis=1)
            out[:, self.classes_] = z
        return out

    def predict_proba(self, X: NDArray[np.float64]) -> NDArray[np.float64]:
        """``softmax(logits(X))`` over the full label space."""
        return _softmax(self.logits(X))


def _jsonable(v: Any) -> Any:
    """A deterministic JSON-able description of an estimator parameter."""
    if v is None or isinstance(v, bool | int | str):
        return v
    if isinstance(v, float):
        return v if np.isfinite(v) else repr(v)
    if isinstance(v, np.generic):
        return _jsonable(v.item())
    if isinstance(v, np.ndarray):
        return [_jsonable(x) for x in v.tolist()]
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in sorted(v.items(), key=lambda kv: str(kv[0]))}
    if isinstance(v, list | tuple):
        return [_jsonable(x) for x in v]
    if hasattr(v, "get_params") and not isinstance(v, type):
        return {
            "class": f"{type(v).__module__}.{type(v).__qualname__}",
            "params": _jsonable(v.get_params(deep=False)),
        }
    if isinstance(v, type) or callable(v):
        return f"{getattr(v, '__module__', '?')}.{getattr(v, '__qualname__', repr(v))}"
    # strip memory addresses so that the description is deterministic
    return re.sub(r" at 0x[0-9a-fA-F]+", "", repr(v))


class SklearnTrainer:
    """Train a fresh clone of a scikit-learn classifier for each (X, y, seed).

    Parameters
    ----------
    estimator : unfitted scikit-learn classifier (or Pipeline)
        Cloned (``sklearn.base.clone``) for every fit; never fitted itself.
    name : str, optional
        Trainer name (default: the estimator's class name in lower case).
    n_classes : int, optional
        Size of the label space; when omitted, :meth:`fit` uses ``max(y) + 1`` unless
        it is given ``n_classes=``. Set it whenever a training set may miss the
        highest class.

    Notes
    -----
    Every parameter named ``random_state`` (including nested ones such as
    ``clf__random_state`` in a Pipeline) is set to ``seed``, so two fits with the same
    seed give the same model and different seeds give independent ones.
    ``ConvergenceWarning`` is caught and recorded in ``model.fit_info["converged"]``
    (overfit targets are trained to the iteration limit on purpose).

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> import numpy as np
    >>> tr = SklearnTrainer(LogisticRegression())
    >>> m = tr.fit(np.array([[0.0], [1.0], [2.0], [3.0]]), np.array([0, 0, 1, 1]), seed=0)
    >>> m.logits(np.array([[0.0]])).shape
    (1, 2)
    """

    def __init__(
        self, estimator: Any, *, name: str | None = None, n_classes: int | None = None
    ) -> None:
        if not hasattr(estimator, "fit") or not hasattr(estimator, "get_params"):
            raise fail("estimator", "an unfitted scikit-learn estimator", type(estimator).__name__)
        self.estimator = estimator
        self._name = name or type(estimator).__name__.lower()
        self.n_classes = (
            None if n_classes is None else check_positive_int(n_classes, "n_classes", minimum=2)
        )

    @property
    def name(self) -> str:
        """Trainer name."""
        return self._name

    def __repr__(self) -> str:
        return f"SklearnTrainer({self.estimator!r})"

    def settings(self) -> dict[str, Any]:
        """JSON-able description: estimator class, all (deep) parameters, library version.

        ``random_state`` parameters are omitted (the seed is passed to :meth:`fit` and
        enters cache keys separately).
        """
        import sklearn

        params = self.estimator.get_params(deep=True)
        params = {
            k: v
            for k, v in params.items()
            if not (k == "random_state" or k.endswith("__random_state"))
        }
        # nested estimator objects appear both as objects and as flattened keys; keep the flat keys
        params = {
            k: v for k, v in params.items() if not hasattr(v, "get_params") or isinstance(v, type)
        }
        return {
            "trainer": "sklearn",
            "name": self._name,
            "estimator": f"{type(self.estimator).__module__}.{type(self.estimator).__qualname__}",
            "params": _jsonable(params),
            "n_classes": self.n_classes,
            "sklearn_version": sklearn.__version__,
        }

    def accepts_sample_weight(self) -> bool:
        """Whether the estimator's ``fit`` takes ``sample_weight`` (Pipelines: no)."""
        try:
            sig = inspect.signature(self.estimator.fit)
        except (TypeError, ValueError):  # pragma: no cover - builtins
            return False
        return "sample_weight" in sig.parameters and getattr(self.estimator, "steps", None) is None

    def fit(
        self,
        X: NDArray[np.float64],
        y: NDArray[np.int64],
        *,
        seed: int,
        n_classes: int | None = None,
        sample_weight: NDArray[np.float64] | None = None,
    ) -> SklearnModel:
        """Clone the estimator, seed it, fit it on ``(X, y)`` and wrap it.

        Parameters
        ----------
        X : float64 array (n, d)
        y : int array (n,)
            Labels in ``0 .. n_classes - 1``; at least two distinct classes.
        seed : int
            In ``[0, 2**32 - 1]`` (scikit-learn's ``random_state`` range).
        n_classes : int, optional
            Overrides the trainer's ``n_classes``.
        sample_weight : float array (n,), optional
            Non-negative weights (used by :func:`~privaudit.models.distill`).
        """

        X, y, C = check_fit_inputs(
            X, y, seed, n_classes if n_classes is not None else self.n_classes
        )
        present = np.unique(y)
        if present.size < 2:
            raise fail(
                "y", "training labels of at least 2 classes", f"only class {present.tolist()}"
            )
        fit_kwargs: dict[str, Any] = {}
        if sample_weight is not None:
            w = as_float_array(sample_weight, "sample_weight", ndim=1)
            if w.size != y.size or (w < 0).any():
                raise fail(
                    "sample_weight",
                    f"{y.size} non-negative weights",
                    f"{w.size} values, min {w.min()}",
                )
            if not self.accepts_sample_weight():
                raise fail(
                    "trainer",
                    "an estimator whose fit() accepts sample_weight",
                    type(self.estimator).__name__,
                )
            fit_kwargs["sample_weight"] = w

        est = seeded_clone(self.estimator, seed)
        converged = fit_estimator(est, X, y, f"trainer {self._name!r}", **fit_kwargs)
        info = {"n_train": int(y.size), "converged": converged, "seed": int(seed)}
        return SklearnModel(est, C, reference_X=X, fit_info=info)


def seeded_clone(estimator: Any, seed: int) -> Any:
    """An unfitted clone of ``estimator`` with every (nested) ``random_state`` set to ``seed``."""
    from sklearn.base import clone

    est = clone(estimator)
    seeds = {
        k: int(seed)
        for k in est.get_params(deep=True)
        if k == "random_state" or k.endswith("__random_state")
    }
    if seeds:
        est.set_params(**seeds)
    return est


def fit_estimator(est: Any, X: Any, y: Any, what: str, **fit_kwargs: Any) -> bool:
    """Fit ``est`` in place; return whether it converged.

    A ``ConvergenceWarning`` is recorded (the return value) rather than shown; other
    warnings pass through. A failure inside ``fit`` becomes a :class:`TrainingError` that
    names ``what`` was being trained and the estimator.
    """
    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        try:
            est.fit(X, y, **fit_kwargs)
        except (InvalidInputError, PrivauditError):
            raise
        except Exception as exc:
            raise TrainingError(
                f"{what}: {type(est).__name__}.fit failed: {type(exc).__name__}: {exc}"
            ) from exc
    converged = not any(issubclass(c.category, ConvergenceWarning) for c in caught)
    for c in caught:
        if not issubclass(c.category, ConvergenceWarning):
            warnings.warn_explicit(c.message, c.category, c.filename, c.lineno)
    return converged
