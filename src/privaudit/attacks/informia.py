r"""InfoRMIA, the information-theoretic RMIA of Tao and Shokri (ICLR 2026, arXiv 2510.05582).

InfoRMIA scores a record by the information (in bits) that the target model carries about
it beyond the reference models, corrected by the same quantity over the population:

.. math::

    \mathrm{InfoRMIA}(x) = \log_2 \frac{\Pr(x|\theta)}{\Pr(x)}
        + D_{KL}\big(p(z) \,\|\, p(z|\theta)\big),
    \qquad
    \hat D_{KL} = \frac{1}{|Z|}\sum_{z \in Z} \log_2 \frac{\Pr(z)}{\Pr(z|\theta)},

with :math:`\Pr(x|\theta)` the target's probability of the true class and :math:`\Pr(x)`
exactly RMIA's (:mod:`privaudit.attacks.rmia`: online, by default (``prior="balanced"``)
:math:`\tfrac12[\Pr_{IN}(x) + \Pr_{OUT}(x)]`, each world the mean of its own reference
models and a world with no model imputed with ``a``, and with ``prior="mean"`` the mean over
all reference models; offline, :math:`\tfrac12[(1+a)\Pr_{OUT}(x) + (1-a)]` with ``a`` tuned
on the reference models). :math:`\Pr(z)` of a population record is estimated by the same
rule: online, a population record that no reference model trained on (no
``reference_population_membership``) has its IN world imputed with ``a`` (moment-matched
for ``a="auto"``), so that :math:`\Pr(z)` and :math:`\Pr(x)` are the same average and
0 bits is a typical population record.
The population term is the plug-in estimate over the population records ``z`` (the audited
record itself left out where it is also a population record), so it can come out negative
when the reference models fit the population better than the target does. As a sum it is the
expectation over ``z`` of RMIA's pairwise log-likelihood ratio
:math:`\log_2 LR_\theta(x, z)`: where RMIA counts the share of ``z`` with
:math:`LR_\theta(x, z) \ge \gamma` (a step function with :math:`|Z|` levels, Zarifzadeh et
al. 2024, Eq. 4-5), InfoRMIA averages the log ratios, a continuous score with no gamma.

**What this means for the figures.** For one target model the population term is the same
for every audited record (but for the few that are population records too), so InfoRMIA ranks
records as privaudit's default RMIA score does (``score: ratio``, the log likelihood ratio
:math:`\log\Pr(x|\theta) - \log\Pr(x)`): the same ROC, AUC and TPR at every FPR, to within
those records. Its gain over the paper's RMIA (the pairwise-comparison fraction,
``score: fraction``) is the continuous score, which privaudit's RMIA already uses by
default. What InfoRMIA adds is the scale: a score in bits, 0 for a record the target knows no
better than it knows a typical population record, comparable across targets and audits
(a threshold in bits needs no tuning, as the paper argues).

Sources and what could not be settled: the paper's full text (and so its section and
equation numbers) was not readable here; the statistic follows its abstract and summaries
(the information gain :math:`\log p(x|\theta)/p(x)` "in bits" with the distribution-shift
term :math:`D_{KL}(p(z)\|p(z|\theta))`, "a Bayes-factor-like statistic" replacing RMIA's
discrete share, fewer population records needed). Whether the paper estimates
:math:`\Pr(x)` exactly as RMIA does (in particular offline) is not settled; this
implementation uses RMIA's estimates so that the two attacks differ only in the score. The
token-level variant for language models is ``informia-token``
(:mod:`privaudit.signals.text_finetune`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from privaudit.attacks.base import AttackData, register
from privaudit.attacks.rmia import _FIELDS, log_ratios  # RMIA's inputs, the same tables
from privaudit.errors import DesignError

__all__ = ["informia_offline", "informia_online", "informia_scores"]

Result = tuple[NDArray[Any], NDArray[np.float64], dict[str, Any]]

_LN2 = float(np.log(2.0))


def informia_scores(
    log_ratio_x: NDArray[np.float64],
    log_ratio_z: NDArray[np.float64],
    *,
    self_index: NDArray[np.intp] | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    r"""InfoRMIA's scores in bits and the population term of each record.

    Parameters
    ----------
    log_ratio_x : (N,) floats
        :math:`\log\Pr(x|\theta) - \log\Pr(x)` (nats) per audited record.
    log_ratio_z : (Z,) floats
        The same for the population records.
    self_index : (N,) int array, optional
        For each x, the index of the same record in the population, or -1; that
        population record is left out of x's population term.

    Returns
    -------
    scores : (N,) floats
        :math:`(\log r_x - \overline{\log r_z}) / \ln 2` (bits).
    kl : (N,) floats
        The population term :math:`-\overline{\log r_z} / \ln 2` (bits) used for each x.

    Examples
    --------
    >>> s, kl = informia_scores(np.array([1.0, 0.0]), np.array([0.5, -0.5, 0.3]))
    >>> np.round(s, 4).tolist(), np.round(kl, 4).tolist()
    ([1.2984, -0.1443], [-0.1443, -0.1443])
    """
    lz = np.asarray(log_ratio_z, dtype=np.float64)
    lx = np.asarray(log_ratio_x, dtype=np.float64)
    total = float(lz.sum())
    n = np.full(lx.shape, float(lz.size))
    sums = np.full(lx.shape, total)
    if self_index is not None:
        has = self_index >= 0
        sums[has] -= lz[self_index[has]]
        n[has] -= 1.0
    if lz.size == 0 or np.any(n < 1):
        raise DesignError(
            "population_target: expected at least one population record other than x itself"
        )
    kl = -(sums / n) / _LN2
    return lx / _LN2 + kl, kl


def _informia(
    data: AttackData, *, offline: bool, a: float | str, prior: str = "balanced"
) -> Result:
    inp, info, lr_x, lr_z = log_ratios(data, offline=offline, a=a, score="ratio", prior=prior)
    scores, kl = informia_scores(lr_x, lr_z, self_index=inp.self_index)
    info.update(
        score="information gain (bits)",
        score_name="information gain in bits",
        population_kl_bits=float(np.median(kl)),
        n_self_pairs_removed=0 if inp.self_index is None else int((inp.self_index >= 0).sum()),
        queries_per_record=1,
        alpha_calibrated=False,
    )
    return data.record_ids, scores, info


@register(
    "informia-online",
    fields=_FIELDS,
    optional_fields=("reference_population_membership",),
    default_signal="loss",
    signal_choices=("loss",),
    alpha_threshold=False,
    in_defaults=False,
    description="InfoRMIA online (Tao and Shokri 2026): the information gain log2 Pr(x|theta)/Pr(x) "
    "with online RMIA's Pr(x) plus the population term D_KL(p(z) || p(z|theta)), in bits",
)
def informia_online(
    data: AttackData,
    *,
    rng: np.random.Generator,
    signal: str = "loss",
    prior: str = "balanced",
    a: float | str = "auto",
) -> Result:
    r"""Online InfoRMIA: :math:`\Pr(x)` as online RMIA's (``prior``, ``a``: see
    :func:`~privaudit.attacks.rmia.rmia_online`); score in bits (module docstring)."""
    return _informia(data, offline=False, a=a, prior=prior)


@register(
    "informia-offline",
    fields=_FIELDS,
    optional_fields=("reference_population_membership",),
    default_signal="loss",
    signal_choices=("loss",),
    alpha_threshold=False,
    in_defaults=False,
    description="InfoRMIA offline (Tao and Shokri 2026): the information gain against OUT "
    "reference models with RMIA's a-correction plus the population KL term, in bits",
)
def informia_offline(
    data: AttackData,
    *,
    rng: np.random.Generator,
    signal: str = "loss",
    a: float | str = "auto",
) -> Result:
    r"""Offline InfoRMIA: :math:`\Pr(x) = \tfrac12[(1+a)\Pr_{OUT}(x) + (1-a)]` as offline RMIA,
    ``a`` tuned on the reference models by default; score in bits (module docstring)."""
    return _informia(data, offline=True, a=a)
