r"""InfoRMIA, the information-theoretic RMIA of Tao and Shokri (ICLR 2026, arXiv 2510.05582).

Tao and Shokri recast RMIA's membership game as a composite hypothesis test and score a
record by a Bayes-factor-like statistic in **bits**: the information the target gives
about x beyond the reference models, :math:`\log_2 \frac{\Pr(x|\theta)}{\Pr(x)}`,
corrected for the shift between the target and the reference models by the
Kullback-Leibler term :math:`D_{KL}(\Pr(z)\,\|\,\Pr(z|\theta))` estimated on population
records z (abstract and Sec. 3 as summarised there). The score is continuous, so it
does not tie like RMIA's pairwise fraction, and it depends on the population only
through the one shift term (the paper's "fewer population samples"). This module
implements the sequence-level (tabular and image) form; the token-level variant for
language models is another module's.

Implemented, with the conventions of :mod:`privaudit.attacks.rmia` (log space from the
``loss`` signal, :math:`\log\Pr(x|\theta) = -\ell`):

.. math::

    \mathrm{InfoRMIA}(x) = \frac{1}{\ln 2}\Big[\log\frac{\Pr(x|\theta)}{\Pr(x)}
        - \frac{1}{|Z|}\sum_{z \in Z}\log\frac{\Pr(z|\theta)}{\Pr(z)}\Big],

where :math:`\Pr(\cdot)` is RMIA's reference average (online: the mean over all
reference models; offline: :math:`\tfrac12[(1+a)\Pr_{OUT} + (1-a)]`, ``a`` tuned on the
reference models as RMIA's, :func:`privaudit.attacks.rmia.tune_offline_a`). The second
term is the sample estimate of :math:`-D_{KL}` on the population: minus the mean log
ratio of records the target did not train on, so that a score of 0 bits is "as much as
the target tells about a non-member" and a positive score is information about x
specifically.

What the available text does not settle (say so, do not guess silently): whether the
paper estimates the shift term per record or once per target, and its exact estimator
of :math:`\Pr(x)`. With one target and the shift estimated once, the term is a constant
and the ROC (AUC, TPR at every FPR) equals that of ``rmia-online`` / ``rmia-offline``
with ``score="ratio"`` (privaudit's RMIA default, which already avoids the fraction's
ties); the two differ when scores of several targets are pooled or compared with a
fixed threshold in bits. The benchmark ``benchmarks/bench_attack_power.py`` shows this.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from privaudit._validation import fail
from privaudit.attacks.base import AttackData, register, require
from privaudit.attacks.rmia import _Inputs, _log_ratios, _self_index, tune_offline_a
from privaudit.errors import DesignError

__all__ = ["informia_offline", "informia_online"]

Result = tuple[NDArray[Any], NDArray[np.float64], dict[str, Any]]

_LN2 = float(np.log(2.0))


def _informia(data: AttackData, *, offline: bool, a: float | str) -> Result:
    if offline and not (
        a == "auto" or (isinstance(a, int | float) and not isinstance(a, bool) and 0.0 <= a <= 1.0)
    ):
        raise fail("a", "a number in [0, 1] or 'auto' (tuned on the reference models)", a)
    signal = "loss"
    pop_table = data.table("population_target", signal)
    membership = require(data.reference_membership, "reference_membership")
    pop_membership = data.reference_population_membership
    inp = _Inputs(
        log_px=-data.table("target", signal).values[0],
        log_pz=-pop_table.values[0],
        loss_x=data.table("reference", signal).values,
        loss_z=data.table("reference_population", signal).values,
        keep_x=np.asarray(membership.keep),
        keep_z=None if pop_membership is None else np.asarray(pop_membership.keep),
        self_index=_self_index(data.record_ids, pop_table.record_ids),
    )
    info: dict[str, Any] = {
        "n_models": membership.n_models,
        "n_population": int(inp.log_pz.size),
        "unit": "bits",
        "shift_estimate": "mean log ratio of the population records (once per target)",
    }
    a_used = 1.0
    if offline:
        n_out = (~inp.keep_x).sum(axis=0)
        if n_out.min() < 1:
            raise DesignError(
                "reference_membership: expected at least 1 OUT reference model per audited "
                f"record for offline InfoRMIA, found {int((n_out < 1).sum())} record(s) with none"
            )
        if inp.keep_z is not None and (~inp.keep_z).sum(axis=0).min() < 1:
            raise DesignError(
                "reference_population_membership: expected at least 1 OUT reference model per "
                "population record for offline InfoRMIA, found records with none"
            )
        if a == "auto":
            a_used, grid_auc, n_pseudo = tune_offline_a(inp, score="ratio", gamma=1.0)
            info.update(a_rule="auto", a_tuning_auc=grid_auc, a_tuning_models=n_pseudo)
        else:
            a_used = float(a)
            info["a_rule"] = "given"
        info.update(a=a_used, n_out_min=int(n_out.min()), n_out_max=int(n_out.max()))
    else:
        n_in = inp.keep_x.sum(axis=0)
        info.update(n_in_min=int(n_in.min()), n_in_max=int(n_in.max()))
    lr_x, lr_z = _log_ratios(inp, offline=offline, a=a_used)
    shift = float(np.mean(lr_z))
    scores = (lr_x - shift) / _LN2
    info.update(shift_bits=shift / _LN2, queries_per_record=1, alpha_calibrated=False)
    return data.record_ids, np.asarray(scores, dtype=np.float64), info


_FIELDS = (
    "target",
    "population_target",
    "reference",
    "reference_membership",
    "reference_population",
)


@register(
    "informia-online",
    fields=_FIELDS,
    optional_fields=("reference_population_membership",),
    default_signal="loss",
    signal_choices=("loss",),
    alpha_threshold=False,
    in_defaults=False,
    description="InfoRMIA online (Tao & Shokri 2026): information gain in bits over the "
    "reference average, shift-corrected on population records",
)
def informia_online(data: AttackData, *, rng: np.random.Generator, signal: str = "loss") -> Result:
    r"""Online InfoRMIA: :math:`\Pr(x)` the mean over all reference models (module docstring)."""
    return _informia(data, offline=False, a=1.0)


@register(
    "informia-offline",
    fields=_FIELDS,
    optional_fields=("reference_population_membership",),
    default_signal="loss",
    signal_choices=("loss",),
    alpha_threshold=False,
    in_defaults=False,
    description="InfoRMIA offline (Tao & Shokri 2026): information gain in bits over the OUT "
    "reference models with RMIA's a-correction, shift-corrected on population records",
)
def informia_offline(
    data: AttackData, *, rng: np.random.Generator, signal: str = "loss", a: float | str = "auto"
) -> Result:
    r"""Offline InfoRMIA: RMIA's offline :math:`\Pr(x)`, ``a`` tuned by default (module docstring)."""
    return _informia(data, offline=True, a=a)
