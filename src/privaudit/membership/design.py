"""The design of one membership experiment: :class:`ExperimentConfig`.

Which attacks run, how many records are audited and how many the attacker holds, how
many reference, shadow, distilled and leave-one-out models are trained, and the seeds
of the random components (Ye et al. 2022, Sec. 3-4; the steps that read it are
described in :mod:`privaudit.membership.experiment`). The split
(:mod:`~privaudit.membership.ye_split`), the roles' jobs (:mod:`~privaudit.membership.ye`,
:mod:`~privaudit.membership.ye_steps`) and the engine
(:func:`~privaudit.membership.experiment.run_experiment`, which re-exports these names)
all read it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from privaudit._validation import check_positive_int, check_probability, fail
from privaudit.attacks.base import (
    BUILTIN_ATTACKS,
    attack_names,
    default_attacks,
    required_inputs,
)
from privaudit.runtime.seeds import derive_seed
from privaudit.signals import ALL_SIGNALS

__all__ = ["DEFAULT_ATTACKS", "ExperimentConfig"]

#: The attacks run by default, in report order: every built-in attack except
#: ``distillation-logits``, which needs an MLP target (listed explicitly to run it).
DEFAULT_ATTACKS: tuple[str, ...] = tuple(a for a in BUILTIN_ATTACKS if a in default_attacks())


@dataclasses.dataclass(frozen=True)
class ExperimentConfig:
    """Everything that defines one experiment (one target model and its attacks).

    Parameters
    ----------
    attacks : tuple of str
        Registered attack names to run (default: :data:`DEFAULT_ATTACKS`).
    n_target_pool : int
        Audited records; about half become the target's members.
    n_population : int
        Attacker's population records, disjoint from the pool.
    n_reference : int
        Reference models; even (every pool record is IN for exactly half of them),
        at least 4 for the reference-based attacks, e.g. 8 or 16.
    n_shadow : int
        Shadow models, each trained on a random population subset of the target's
        expected training-set size (half the pool); they are also Attack R's reference
        models.
    n_distilled : int
        Distilled models.
    distill_size : int or None
        Population records per distilled model (None: the target's expected
        training-set size, half the pool, capped at ``n_population``).
    n_leave_one_out : int
        Leave-one-out models per sampled record (>= 2).
    leave_one_out_sample : int
        Number of pool records attacked by Attack L (about half members).
    alpha : float
        Requested false-positive rate of the alpha-threshold attacks.
    seed : int
        Root seed; each component seed below defaults to
        ``derive_seed(seed, purpose=<component>)``.
    split_seed, membership_seed, target_seed, attacker_seed : int or None
        Component seeds (see the module docstring); the games fix or resample them.
    n_jobs : int
        Worker processes of the default :class:`~privaudit.runtime.executor.LocalExecutor`.
    signals : tuple of str
        Signals to compute beyond those the attacks read.
    attack_params : mapping
        Per-attack settings passed to ``run_attack`` (e.g. ``{"rmia-offline": {"a": 0.3}}``).
    force_membership : tuple of (record id, bool)
        Overrides of the target's membership (the reference layout is unchanged).
    leave_one_out_include : tuple of record ids
        Pool records always attacked by Attack L (the fixed records of Def. 3.3/3.4);
        they count towards ``leave_one_out_sample``.
    """

    attacks: tuple[str, ...] = DEFAULT_ATTACKS
    n_target_pool: int = 400
    n_population: int = 400
    n_reference: int = 8
    n_shadow: int = 4
    n_distilled: int = 4
    distill_size: int | None = None
    n_leave_one_out: int = 4
    leave_one_out_sample: int = 20
    alpha: float = 0.05
    seed: int = 0
    split_seed: int | None = None
    membership_seed: int | None = None
    target_seed: int | None = None
    attacker_seed: int | None = None
    n_jobs: int = 1
    signals: tuple[str, ...] = ()
    attack_params: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)
    force_membership: tuple[tuple[Any, bool], ...] = ()
    leave_one_out_include: tuple[Any, ...] = ()

    def __post_init__(self) -> None:
        attacks = tuple(self.attacks)
        if not attacks:
            raise fail("attacks", "at least one attack", "none")
        known = attack_names()
        for a in attacks:
            if a not in known:
                raise fail("attacks", "registered attack names (" + ", ".join(known) + ")", repr(a))
        if len(set(attacks)) != len(attacks):
            raise fail("attacks", "distinct attack names", list(attacks))
        object.__setattr__(self, "attacks", attacks)
        check_positive_int(self.n_target_pool, "n_target_pool", minimum=4)
        check_positive_int(self.n_population, "n_population", minimum=2)
        check_positive_int(self.n_reference, "n_reference", minimum=2)
        if self.n_reference % 2:
            raise fail(
                "n_reference",
                "an even number (every pool record is IN for exactly n_reference / 2 "
                "reference models), e.g. 8 or 16",
                self.n_reference,
            )
        uses_reference = any("reference" in required_inputs(a).fields for a in attacks)
        if uses_reference and self.n_reference < 4:
            raise fail(
                "n_reference",
                "at least 4 for reference-based attacks (each record needs >= 2 IN and "
                ">= 2 OUT reference models)",
                self.n_reference,
            )
        check_positive_int(self.n_shadow, "n_shadow", minimum=1)
        check_positive_int(self.n_distilled, "n_distilled")
        if self.distill_size is not None:
            check_positive_int(self.distill_size, "distill_size", minimum=2)
            if self.distill_size > self.n_population:
                raise fail(
                    "distill_size", f"at most n_population={self.n_population}", self.distill_size
                )
        check_positive_int(self.n_leave_one_out, "n_leave_one_out", minimum=2)
        check_positive_int(self.leave_one_out_sample, "leave_one_out_sample", minimum=2)
        check_probability(self.alpha, "alpha")
        for name in ("seed", "split_seed", "membership_seed", "target_seed", "attacker_seed"):
            v = getattr(self, name)
            if v is None and name != "seed":
                continue
            if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 0:
                raise fail(name, "a non-negative integer", repr(v))
        if isinstance(self.n_jobs, bool) or not isinstance(self.n_jobs, int) or self.n_jobs == 0:
            raise fail("n_jobs", "a non-zero integer", repr(self.n_jobs))
        sigs = tuple(self.signals)
        for s in sigs:
            if s not in ALL_SIGNALS:
                raise fail("signals", "signal names (" + ", ".join(ALL_SIGNALS) + ")", repr(s))
        object.__setattr__(self, "signals", sigs)
        params = {str(k): dict(v) for k, v in dict(self.attack_params).items()}
        for k in params:
            if k not in attacks:
                raise fail("attack_params", "settings for attacks that are run", repr(k))
        object.__setattr__(self, "attack_params", params)
        forced = tuple((rid, bool(b)) for rid, b in self.force_membership)
        object.__setattr__(self, "force_membership", forced)
        include = tuple(self.leave_one_out_include)
        if len(set(include)) != len(include):
            raise fail("leave_one_out_include", "distinct record ids", list(include))
        object.__setattr__(self, "leave_one_out_include", include)

    def component_seeds(self) -> dict[str, int]:
        """The effective seed of each random component."""
        out = {}
        for name in ("split", "membership", "target", "attacker"):
            v = getattr(self, f"{name}_seed")
            out[name] = (
                int(v) if v is not None else derive_seed(self.seed, purpose=f"experiment/{name}")
            )
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-compatible dict (record ids in ``force_membership`` as given)."""
        d = dataclasses.asdict(self)
        d["attacks"] = list(self.attacks)
        d["signals"] = list(self.signals)
        d["force_membership"] = [[_jsonable_id(r), b] for r, b in self.force_membership]
        d["leave_one_out_include"] = [_jsonable_id(r) for r in self.leave_one_out_include]
        d["attack_params"] = {k: dict(v) for k, v in self.attack_params.items()}
        return d


def _jsonable_id(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v
