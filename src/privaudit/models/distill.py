"""Self-distillation for Attack D (Ye et al. 2022, "Enhanced Membership Inference
Attacks against Machine Learning Models", CCS'22, Sec. 4.4).

Attack D approximates models retrained on the target's (unknown) training set without
the target record by *distilled* models: models of the same architecture trained on
population data ``D'_i`` soft-labelled by the target model ``theta``. The paper trains
each distilled model to minimise the cross-entropy between the target's output
probabilities and its own (eq. 14-15; the text gives the objective, not code).

scikit-learn classifiers only accept hard labels, so a soft label is expressed by
*expansion*: each population record ``x`` becomes ``C`` copies ``(x, c)``, one per class
``c``, with ``sample_weight = p_theta(c | x)``. The weighted log-loss of the expanded
set is then exactly the soft-label cross-entropy

    sum_x sum_c p_theta(c|x) * (-log q(c|x)),

which differs from the KL divergence to the teacher only by the teacher's entropy (a
constant). The weights of each record sum to 1, so the total weight equals the number
of population records and weight-normalised regularisation (MLP ``alpha``, logistic
``C``) has the strength it would have with ``n`` hard-labelled records. Caveat: an
iterative trainer sees ``C`` rows per record in each epoch (``C`` times more mini-batch
steps per epoch for an MLP).

Logit matching (``method="logits"``): Ba & Caruana 2014 ("Do Deep Nets Really Need to
be Deep?", Sec. 2.2) train the student by *regressing the teacher's logits* with a
squared loss; Hinton et al. 2015 (Sec. 2.1) show that this is the high-temperature limit
of soft-label distillation. Soft labels cannot transmit the scale of a saturated
teacher's logits (with ``p = 0.999`` the soft cross-entropy is minimised at a margin of
``log(999) ≈ 6.9`` whatever the teacher's margin), while a regression reproduces it, so
the distilled models' logit-scaled confidences are comparable with the target's. The
student is the regressor that corresponds to the target's classifier
(:func:`logit_regressor_for`), with the same architecture and training parameters; the
regression targets are the teacher's logits centred per row,
``t_c(x) = z_c(x) - mean_j z_j(x)`` (logits are defined up to a per-row constant), and for
two classes the margin ``t(x) = z_1(x) - z_0(x)`` (the student's logits are then
``[0, t(x)]``). This objective is not the one of Ye et al. (eq. 14-15); it is offered as
an option of Attack D. Measured on the ``privaudit demo`` target (overfit MLP on Adult,
8 distilled models, population-calibrated threshold), TPR at 1% FPR of Attack D with
soft labels / logit matching: 1.50% / 7.17% (seed 0), 1.00% / 10.33% (seed 1), while
attacks P and S reach at most 1.33% and 1.92%; the achieved FPR at alpha = 0.05 of the
logit-matching variant was 6.7% (seed 0, outside the binomial 95% interval of the 1,200
held-out non-members), 4.3% (seed 1) and 5.8% (seed 2).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.special import log_softmax

from privaudit._validation import as_float_array, check_positive_int, fail
from privaudit.errors import InvalidInputError, PrivauditError
from privaudit.models.base import Model
from privaudit.models.sklearn import (
    SklearnModel,
    SklearnTrainer,
    TrainingError,
    fit_estimator,
    seeded_clone,
)

__all__ = [
    "DISTILL_METHODS",
    "LogitRegressionModel",
    "distill",
    "logit_regressor_for",
    "soft_label_expansion",
]

#: Distillation objectives of :func:`distill`.
DISTILL_METHODS = ("soft-labels", "logits")


def soft_label_expansion(
    X: NDArray[np.float64], probabilities: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.float64]]:
    """Expand soft labels into weighted hard labels.

    Parameters
    ----------
    X : float64 array (n, d)
    probabilities : float64 array (n, C), rows summing to 1

    Returns
    -------
    X_rep : (n * C, d)
        Row ``i * C + c`` is ``X[i]``.
    y_rep : (n * C,)
        Label ``c`` of that row.
    w_rep : (n * C,)
        Weight ``probabilities[i, c]``.
    """
    X = as_float_array(X, "X", ndim=2)
    P = as_float_array(probabilities, "probabilities", ndim=2)
    if P.shape[0] != X.shape[0]:
        raise fail("probabilities", f"{X.shape[0]} rows (one per row of X)", P.shape[0])
    if (P < 0).any() or not np.allclose(P.sum(axis=1), 1.0, atol=1e-8):
        raise fail("probabilities", "non-negative rows summing to 1", "other values")
    n, C = P.shape
    X_rep = np.repeat(X, C, axis=0)
    y_rep = np.tile(np.arange(C, dtype=np.int64), n)
    w_rep = P.reshape(-1).copy()
    return X_rep, y_rep, w_rep


class LogitRegressionModel:
    """A student that predicts logits with a fitted scikit-learn regressor.

    Parameters
    ----------
    regressor : fitted scikit-learn regressor (or Pipeline ending in one)
        ``predict(X)`` returns ``n_classes`` outputs (centred logits) or, for two
        classes, one output (the margin ``z_1 - z_0``).
    n_classes : int
        Size of the label space ``C`` (at least 2).
    fit_info : dict, optional
        JSON-able facts about training.

    Notes
    -----
    ``logits(X)`` is ``predict(X)`` as an ``(n, C)`` array; for ``C = 2`` it is
    ``[0, predict(X)]``, so that ``softmax`` gives ``p(1|x) = sigmoid(margin)``.
    """

    def __init__(
        self, regressor: Any, n_classes: int, *, fit_info: dict[str, Any] | None = None
    ) -> None:
        if not hasattr(regressor, "predict"):
            raise fail("regressor", "a fitted scikit-learn regressor", type(regressor).__name__)
        self.regressor = regressor
        self._n_classes = check_positive_int(n_classes, "n_classes", minimum=2)
        self.fit_info: dict[str, Any] = dict(fit_info or {})

    @property
    def n_classes(self) -> int:
        """Number of classes ``C`` of the label space."""
        return self._n_classes

    @property
    def n_outputs(self) -> int:
        """Regression outputs: 1 (the margin) for two classes, else ``C``."""
        return 1 if self._n_classes == 2 else self._n_classes

    def __repr__(self) -> str:
        return f"LogitRegressionModel({type(self.regressor).__name__}, n_classes={self._n_classes})"

    def logits(self, X: NDArray[np.float64]) -> NDArray[np.float64]:
        """Logits over the label space, float64 of shape ``(n, n_classes)``."""
        X = as_float_array(X, "X", ndim=2)
        try:
            t = np.asarray(self.regressor.predict(X), dtype=np.float64)
        except PrivauditError:
            raise
        except Exception as exc:
            raise TrainingError(
                f"{self!r}: prediction failed: {type(exc).__name__}: {exc}"
            ) from exc
        t = t.reshape(X.shape[0], -1)
        if t.shape[1] != self.n_outputs:
            raise TrainingError(
                f"{self!r}: expected {self.n_outputs} regression outputs, found {t.shape[1]}"
            )
        if self._n_classes == 2:
            return np.ascontiguousarray(np.hstack([np.zeros_like(t), t]))
        return np.ascontiguousarray(t)

    def predict_proba(self, X: NDArray[np.float64]) -> NDArray[np.float64]:
        """``softmax(logits(X))``."""
        return np.exp(log_softmax(self.logits(X), axis=1))


#: classifier class name -> regressor class (module, name) for logit matching
_REGRESSOR_OF: dict[str, tuple[str, str]] = {
    "MLPClassifier": ("sklearn.neural_network", "MLPRegressor"),
}


def logit_regressor_for(classifier: Any) -> Any:
    """The unfitted regressor that plays ``classifier``'s role in logit matching.

    ``MLPClassifier`` maps to ``MLPRegressor`` with every parameter the two share
    (``hidden_layer_sizes``, ``activation``, ``solver``, ``alpha``, ``batch_size``,
    learning-rate schedule, ``max_iter``, ``tol``, early stopping, ``random_state``,
    ...): the same network and training budget, with a squared loss on the logits
    (Ba & Caruana 2014, Sec. 2.2) instead of the cross-entropy. A
    :class:`~sklearn.pipeline.Pipeline` ending in a mapped classifier keeps its
    preprocessing steps (cloned, unfitted) and gets the regressor as its last step.

    Raises
    ------
    InvalidInputError
        For any other estimator: no regressor with the same architecture is known;
        use ``method="soft-labels"``.
    """
    import importlib

    from sklearn.base import clone

    steps = getattr(classifier, "steps", None)
    if isinstance(steps, list) and steps:
        from sklearn.pipeline import Pipeline

        last_name, last = steps[-1]
        head = [(n, clone(e) if hasattr(e, "get_params") else e) for n, e in steps[:-1]]
        return Pipeline([*head, (last_name, logit_regressor_for(last))])
    name = type(classifier).__name__
    target = _REGRESSOR_OF.get(name)
    if target is None:
        raise InvalidInputError(
            f"trainer: logit-matching distillation (method='logits') has no regressor for "
            f"{name}; supported: {', '.join(sorted(_REGRESSOR_OF))} (also as the last step "
            "of a Pipeline). Use method='soft-labels' for this model."
        )
    cls = getattr(importlib.import_module(target[0]), target[1])
    own = classifier.get_params(deep=False)
    accepted = set(cls().get_params(deep=False))
    return cls(**{k: v for k, v in own.items() if k in accepted})


def _logit_targets(z: NDArray[np.float64]) -> NDArray[np.float64]:
    """Regression targets: the margin ``z_1 - z_0`` (C = 2) or the row-centred logits."""
    if z.shape[1] == 2:
        return z[:, 1] - z[:, 0]
    return z - z.mean(axis=1, keepdims=True)


def _distill_logits(
    trainer: Any, teacher: Model, X: NDArray[np.float64], seed: int
) -> LogitRegressionModel:

    estimator = getattr(trainer, "estimator", None)
    if estimator is None or not hasattr(estimator, "get_params"):
        raise fail(
            "trainer",
            "a SklearnTrainer (logit matching maps its classifier to a regressor)",
            type(trainer).__name__,
        )
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or not 0 <= seed < 2**32:
        raise fail("seed", "an integer in [0, 2**32 - 1]", repr(seed))
    reg = seeded_clone(logit_regressor_for(estimator), int(seed))
    z = as_float_array(teacher.logits(X), "teacher logits", ndim=2)
    t = _logit_targets(z)
    converged = fit_estimator(reg, X, t, "logit distillation")
    info = {
        "distilled": True,
        "distill_method": "logits",
        "n_population": int(X.shape[0]),
        "n_train": int(X.shape[0]),
        "converged": converged,
        "seed": int(seed),
    }
    return LogitRegressionModel(reg, teacher.n_classes, fit_info=info)


def distill(
    trainer: SklearnTrainer | Any,
    teacher: Model,
    X: NDArray[np.float64],
    *,
    seed: int,
    method: str = "soft-labels",
) -> Model:
    """Train a student on ``X`` labelled by ``teacher`` (Attack D's distilled model).

    Parameters
    ----------
    trainer : SklearnTrainer, or any Trainer with a method ``accepts_sample_weight()``
        returning True and a ``fit`` that accepts ``sample_weight=`` and ``n_classes=``
        Same architecture and training algorithm as the target (Ye et al. 2022, App. B.2).
        ``method="logits"`` needs a :class:`SklearnTrainer` whose estimator has a
        regressor counterpart (:func:`logit_regressor_for`).
    teacher : Model
        The target model.
    X : float64 array (n, d)
        Population records (disjoint from the target's training data).
    seed : int
        Seed of the student's training.
    method : {"soft-labels", "logits"}
        ``"soft-labels"`` (Ye et al. 2022 eq. 14-15): minimise the cross-entropy to the
        teacher's probabilities ``softmax(teacher.logits(X))`` (by weighted expansion,
        see the module docstring). ``"logits"`` (Ba & Caruana 2014): regress the
        teacher's centred logits (two classes: the margin ``z_1 - z_0``) with the
        squared loss; returns a :class:`LogitRegressionModel`.

    Returns
    -------
    Model
        The distilled model, over ``teacher.n_classes`` classes.

    Raises
    ------
    InvalidInputError
        If ``method`` is unknown; for ``"soft-labels"``, if the trainer's estimator does
        not accept ``sample_weight`` (for example a Pipeline, or
        ``KNeighborsClassifier``); for ``"logits"``, if the estimator has no regressor
        counterpart.
    """
    X = as_float_array(X, "X", ndim=2)
    if method not in DISTILL_METHODS:
        raise fail("method", " or ".join(repr(m) for m in DISTILL_METHODS), repr(method))
    if method == "logits":
        return _distill_logits(trainer, teacher, X, seed)
    accepts = getattr(trainer, "accepts_sample_weight", None)
    if accepts is None or not callable(accepts) or not accepts():
        raise fail(
            "trainer",
            "a trainer whose estimator's fit() accepts sample_weight (needed to distil soft labels)",
            getattr(trainer, "name", type(trainer).__name__),
        )
    z = as_float_array(teacher.logits(X), "teacher logits", ndim=2)
    P = np.exp(log_softmax(z, axis=1))
    P /= P.sum(axis=1, keepdims=True)
    X_rep, y_rep, w_rep = soft_label_expansion(X, P)
    model: Model = trainer.fit(
        X_rep, y_rep, seed=seed, n_classes=teacher.n_classes, sample_weight=w_rep
    )
    if isinstance(model, SklearnModel):
        model.fit_info["distilled"] = True
        model.fit_info["distill_method"] = "soft-labels"
        model.fit_info["n_population"] = int(X.shape[0])
    return model
