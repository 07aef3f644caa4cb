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
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.special import log_softmax

from privaudit._validation import as_float_array, fail
from privaudit.models.base import Model
from privaudit.models.sklearn import SklearnModel, SklearnTrainer

__all__ = ["distill", "soft_label_expansion"]


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


def distill(
    trainer: SklearnTrainer | Any,
    teacher: Model,
    X: NDArray[np.float64],
    *,
    seed: int,
) -> Model:
    """Train a student on ``X`` soft-labelled by ``teacher`` (Attack D's distilled model).

    Parameters
    ----------
    trainer : SklearnTrainer, or any Trainer with a method ``accepts_sample_weight()``
        returning True and a ``fit`` that accepts ``sample_weight=`` and ``n_classes=``
        Same architecture and training algorithm as the target (Ye et al. 2022, App. B.2).
    teacher : Model
        The target model; its probabilities ``softmax(teacher.logits(X))`` are the
        soft labels.
    X : float64 array (n, d)
        Population records (disjoint from the target's training data).
    seed : int
        Seed of the student's training.

    Returns
    -------
    Model
        The distilled model, over ``teacher.n_classes`` classes.

    Raises
    ------
    InvalidInputError
        If the trainer's estimator does not accept ``sample_weight`` (for example a
        Pipeline, or ``KNeighborsClassifier``): soft labels cannot be expressed then.
    """
    X = as_float_array(X, "X", ndim=2)
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
        model.fit_info["n_population"] = int(X.shape[0])
    return model
