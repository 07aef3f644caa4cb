"""Ye et al.'s models on the shared "train many" step: which models, trained on what, read how.

Ye et al. 2022 ("Enhanced Membership Inference Attacks against Machine Learning Models",
CCS'22) attack one target with models of five roles: reference models (Attacks R, LiRA,
RMIA; Sec. 4.3), shadow models (Attack S, Sec. 4.1; also R's references, App. B.2),
distilled models (Attack D, Sec. 4.4, Eq. 14-15) and leave-one-out models (Attack L,
Sec. 4.5). This module says only what is specific to them: each role's training sets
and seeds (its step functions :meth:`YeModels.reference`, :meth:`~YeModels.shadow`,
:meth:`~YeModels.distilled`, :meth:`~YeModels.leave_one_out`, plus the target and the
recipe check of a provided target), how a model of a role is fitted and which signals
it gives (:class:`~privaudit.membership.ye_steps.YeSteps`, the worker side, in its own module),
and how those become the
:class:`~privaudit.attacks.base.AttackData` fields the attacks read. Training, caching
(model and signal table per evaluated set, resumable), batching and the executor are
:func:`privaudit.models.train_many.train_models`.

Store keys: :class:`~privaudit.membership.ye_steps.YeSteps` (unchanged since the engine's first
version, so existing caches stay valid).
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from privaudit.data.dataset import Dataset
from privaudit.errors import DesignError
from privaudit.membership.query_views import view_attack_data, view_eval_sets, with_views
from privaudit.membership.ye_split import POOL, POPULATION, TARGET_ID, YeSplit, population_subsets
from privaudit.membership.ye_steps import Needs, YeSteps, accuracy, tables
from privaudit.models.base import Model, Trainer
from privaudit.models.provided import ProvidedTarget, RecipeMismatchWarning
from privaudit.models.train_many import (
    ModelJob,
    ModelOutputs,
    ModelTask,
    model_codec,
    train_models,
)
from privaudit.records import MembershipMatrix, SignalTable
from privaudit.runtime.executor import Executor
from privaudit.runtime.seeds import derive_rng, derive_seed, spawn_seeds
from privaudit.runtime.store import ArtifactStore, hash_key
from privaudit.signals.views import QueryViews

if TYPE_CHECKING:
    from privaudit.membership.design import ExperimentConfig

__all__ = ["YeModels"]


# --------------------------------------------------------------------------------------
# the train step of each role (runs in the calling process, maps the jobs)
# --------------------------------------------------------------------------------------


class YeModels:
    """Trains Ye et al.'s models for one experiment and turns their signals into the
    :class:`~privaudit.attacks.base.AttackData` fields the attacks read.

    Each role's method returns a dict of ``AttackData`` keyword arguments; per role the
    seconds spent, the models trained and those loaded from the store are recorded in
    :attr:`timings`, :attr:`trained`, :attr:`loaded`. With ``views`` (LiRA's augmented
    queries, :mod:`privaudit.membership.query_views`) the target and the reference models are
    also evaluated on each view of their sets (named ``"<set>@<view>"``, cached like any
    other), and :meth:`views` gives the per-view ``AttackData``.
    """

    def __init__(
        self,
        dataset: Dataset,
        trainer: Trainer,
        split: YeSplit,
        need: Needs,
        seeds: Mapping[str, int],
        *,
        store: ArtifactStore | None,
        executor: Executor,
        views: QueryViews | None = None,
    ) -> None:
        self.dataset = dataset
        self.trainer = trainer
        self.split = split
        self.need = need
        self.seeds = dict(seeds)
        self.store = store
        self.executor = executor
        self.codec = model_codec(trainer)
        self.query_views = views
        self.eval_sets = split.eval_sets
        if views is not None:
            self.eval_sets.update(view_eval_sets(views, split.eval_sets))
        self.steps = YeSteps(dataset, trainer, need.signals, self.eval_sets)
        self._viewed: dict[str, tuple[Sequence[str], list[ModelOutputs], tuple[str, ...]]] = {}
        self.timings: dict[str, float] = {}
        self.trained: dict[str, int] = {}
        self.loaded: dict[str, int] = {}
        self.target_model: Model | None = None
        self.target_key: str | None = None
        # models fitted before their role's step (the references fitted with the target)
        self._prefit: dict[str, tuple[Model, bool]] = {}
        # a design the shadow models cannot follow fails here, before any model trains
        if need.fields & {"shadow", "outside_reference"}:
            _check_shadow_design(split)

    def _sets(self, population_field: str) -> tuple[str, ...]:
        return (POOL, POPULATION) if population_field in self.need.fields else (POOL,)

    def _run(
        self, role: str, jobs: list[ModelJob], steps: YeSteps, desc: str
    ) -> list[ModelOutputs]:
        t = time.perf_counter()
        task = ModelTask(steps, self.codec, self.store, prefit=self._prefit)
        results = train_models(task, jobs, executor=self.executor, desc=desc, batched=steps.batched)
        self.timings[role] = self.timings.get(role, 0.0) + time.perf_counter() - t
        self.trained[role] = self.trained.get(role, 0) + sum(r.created for r in results)
        self.loaded[role] = self.loaded.get(role, 0) + sum(not r.created for r in results)
        return results

    def _tables(
        self, model_ids: Sequence[str], res: list[ModelOutputs], name: str, sigs: Sequence[str]
    ) -> dict[str, SignalTable]:
        data = self.eval_sets[name]
        return tables(model_ids, data.record_ids, np.stack([r.values[name] for r in res]), sigs)

    # -- the target ------------------------------------------------------------------

    #: Train the target in the same batched computation as its reference models when
    #: the trainer batches (``fits_many``): the target is trained with the recipe of
    #: its references, so one :func:`~privaudit.models.torch_batched.fit_many` call
    #: fits them all (the target's weights then equal its one-by-one fit up to
    #: floating-point rounding, as every batched model's do).
    cobatch_target = True

    def target(
        self, provided: ProvidedTarget | None, config: ExperimentConfig | None = None
    ) -> tuple[Model, dict[str, Any]]:
        """Train (or load, or take the provided) target: the model and its signals on the
        pool (and on the population when an attack reads them), as AttackData fields.

        With ``config`` and a batching trainer (:attr:`cobatch_target`), a trained
        target and the reference models of :meth:`reference` are fitted as one batch
        here (when any of them is not in the store); :meth:`reference` then reuses them.
        """
        t0 = time.perf_counter()
        if self.need.trains_attacker_models and not getattr(self.trainer, "batched", False):
            # worker processes start (and import the trainer's modules) while the target trains
            self.executor.start(preload=(self.trainer, ModelTask, YeSteps))
        sp = self.split
        sets = with_views(self.query_views, self._sets("population_target"))
        task = ModelTask(self.steps, self.codec, self.store)
        train_ids = sp.pool.record_ids[sp.member]
        if provided is None:
            job = self.steps.job("target", TARGET_ID, train_ids, self.seeds["target"], sets)
            together = self._cofit_with_references(job, config)
            loaded = together[job.key] if job.key in together else task.model(job)
        else:
            fixed = hash_key({"provided-target": provided.fingerprint or repr(provided.model)})
            job = self.steps.job("target", TARGET_ID, train_ids, self.seeds["target"], sets, fixed)
            loaded = (provided.model, False)
        self.target_model, self.target_key = loaded[0], job.key
        res = task.run(job, preloaded=loaded)
        self._viewed["target"] = ((TARGET_ID,), [res], self.need.signals)
        self.trained["target"] = int(loaded[1])
        self.loaded["target"] = int(not loaded[1])
        self.timings["target"] = time.perf_counter() - t0

        def single(name: str) -> dict[str, SignalTable]:
            data = sp.eval_sets[name]
            return tables((TARGET_ID,), data.record_ids, res.values[name][None], self.need.signals)

        out: dict[str, Any] = {
            "record_ids": sp.pool.record_ids,
            "labels": sp.pool.y,
            "target": single(POOL),
        }
        if "population_target" in self.need.fields:
            out["population_target"] = single(POPULATION)
            out["population_labels"] = sp.population.y
        return loaded[0], out

    def _cofit_with_references(
        self, job: ModelJob, config: ExperimentConfig | None
    ) -> dict[str, tuple[Model, bool]]:
        """The target ``job`` and the reference models fitted as one batch (see
        :meth:`target`) when a reference model is not in the store; ``{}`` where that
        does not apply. With every reference model stored (e.g. the trials of a game
        that keeps the attacker's seed, Def. 3.4) the target trains alone, as before;
        with the target stored but a reference model missing (a run interrupted while
        it stored them) the batch is refitted, so that the reference models get the
        numbers of an uninterrupted run (the stored target is kept)."""
        if config is None or not self.cobatch_target or not self.steps.batched:
            return {}
        planned = self._reference_jobs(config)
        if planned is None or not planned[2]:
            return {}
        store = self.store
        if store is not None and all(store.contains(j.key_parts) for j in planned[2]):
            return {}
        jobs = [job, *planned[2]]
        fitted = ModelTask(self.steps, self.codec, self.store).fit_together(jobs)
        if not fitted:
            return {}
        self._prefit.update(fitted)
        return fitted

    def recipe_check(self, provided: ProvidedTarget, target_test_acc: float) -> dict[str, Any]:
        """Train one model with the recipe on population records (the target's
        training-set size) and compare its accuracy on the audited non-members with the
        target's; warn (:class:`RecipeMismatchWarning`) when they differ by more than
        the tolerance."""
        t0 = time.perf_counter()
        sp = self.split
        source = sp.ref_source if sp.ref_source is not None else sp.population
        (ids,) = population_subsets(source, sp.n_train, 1, self.seeds["attacker"])
        seed = derive_seed(self.seeds["attacker"], purpose="recipe-check")
        job = self.steps.job("recipe-check", "recipe-check", ids, seed, ())
        model, _ = ModelTask(self.steps, self.codec, self.store).model(job)
        ref_acc = accuracy(model, sp.pool.subset(~sp.member))
        tol = float(provided.accuracy_tolerance)
        out: dict[str, Any] = {
            "target_test_accuracy": None if math.isnan(target_test_acc) else target_test_acc,
            "recipe_test_accuracy": ref_acc,
            "recipe_train_size": int(ids.size),
            "evaluated_on": "audited non-members",
            "tolerance": tol,
        }
        self.trained["recipe_check"] = 1
        self.timings["recipe_check"] = time.perf_counter() - t0
        if math.isnan(target_test_acc):
            out["ok"] = None
            out["note"] = "target accuracy unknown (per-record losses only): not compared"
            return out
        out["ok"] = bool(abs(ref_acc - target_test_acc) <= tol)
        if not out["ok"]:
            warnings.warn(
                RecipeMismatchWarning(
                    f"a model trained with the recipe reaches {ref_acc:.3f} accuracy on the audited "
                    f"non-members, the target {target_test_acc:.3f} (gap "
                    f"{abs(ref_acc - target_test_acc):.3f} > tolerance {tol}): the reference models "
                    "may not resemble the target, and reference-based attacks may be weak; check "
                    "that the recipe is the one the target was trained with"
                ),
                stacklevel=3,
            )
        return out

    # -- the attacker's models -------------------------------------------------------

    def reference(self, config: ExperimentConfig) -> dict[str, Any]:
        """Reference models (R's pool layout, LiRA, RMIA): the balanced keep matrix over
        the pool, or population subsets for a provided target's ``references="population"``."""
        planned = self._reference_jobs(config)
        if planned is None:
            return {}
        sp = self.split
        ref_ids, steps, jobs, sets = planned
        res = self._run("reference", jobs, steps, "reference models")
        self._viewed["reference"] = (ref_ids, res, steps.signals)
        out: dict[str, Any] = {
            "reference": self._tables(ref_ids, res, POOL, steps.signals),
            "reference_membership": sp.ref_keep,
        }
        if POPULATION in sets:
            out["reference_population"] = self._tables(ref_ids, res, POPULATION, steps.signals)
        return out

    def _reference_jobs(
        self, config: ExperimentConfig
    ) -> tuple[tuple[str, ...], YeSteps, list[ModelJob], tuple[str, ...]] | None:
        """The reference models' ids, steps, jobs and evaluation sets; None when no
        attack reads them."""
        if not self.need.fields & {"reference", "reference_membership", "reference_population"}:
            return None
        sp = self.split
        ref_ids = tuple(sp.ref_keep.model_ids)
        sets = with_views(self.query_views, self._sets("reference_population"))
        ref_seeds = spawn_seeds(
            self.seeds["attacker"], config.n_reference, purpose="reference-models"
        )
        if sp.ref_source is None:
            ref_train = [sp.pool.record_ids[sp.matrix.row(rid)] for rid in ref_ids]
        else:
            ref_train = population_subsets(
                sp.ref_source, sp.n_train, config.n_reference, self.seeds["attacker"]
            )
        steps = self.steps.with_signals(self.need.role_signals("reference", "reference_population"))
        jobs = [
            steps.job("reference", rid, ids, s, sets)
            for rid, ids, s in zip(ref_ids, ref_train, ref_seeds, strict=True)
        ]
        return ref_ids, steps, jobs, sets

    def shadow(self, config: ExperimentConfig) -> dict[str, Any]:
        """Shadow models (attack S), also attack R's reference models.

        Ye et al. build both the same way (App. B.2: models on random population subsets
        of the target's training-set size), so one set serves both: S reads them on the
        population, R on the audited records (none of which they trained on).
        """
        fields = self.need.fields
        if not fields & {"shadow", "outside_reference"}:
            return {}
        sp, population = self.split, self.split.population
        n_train = sp.attacker_size
        _check_shadow_design(sp)
        # The subsets are drawn from a random max(n_train, n_population / 2) of the
        # population; the rest is never trained on, so attack R's calibration has at
        # least n_population / 2 records that none of these models saw.
        sh_rng = derive_rng(self.seeds["attacker"], purpose="shadow-subsets")
        n_source = max(n_train, population.n_records // 2)
        source = np.sort(sh_rng.permutation(population.n_records)[:n_source])
        sh_keep = np.zeros((config.n_shadow, population.n_records), dtype=bool)
        for j in range(config.n_shadow):
            sh_keep[j, sh_rng.choice(source, size=n_train, replace=False)] = True
        keep = MembershipMatrix(
            population.record_ids,
            tuple(f"shadow-{j:03d}" for j in range(config.n_shadow)),
            sh_keep,
        )
        seeds = spawn_seeds(self.seeds["attacker"], config.n_shadow, purpose="shadow-models")
        sets = (POPULATION, POOL) if "outside_reference" in fields else (POPULATION,)
        steps = self.steps.with_signals(
            self.need.role_signals("shadow", "outside_reference", "outside_reference_population")
        )
        jobs = [
            steps.job("shadow", sid, population.record_ids[keep.row(sid)], s, sets)
            for sid, s in zip(keep.model_ids, seeds, strict=True)
        ]
        res = self._run("shadow", jobs, steps, "shadow models")
        on_population = self._tables(keep.model_ids, res, POPULATION, steps.signals)
        out: dict[str, Any] = {}
        if "shadow" in fields:
            out["shadow"] = on_population
            out["shadow_membership"] = keep
            out["shadow_labels"] = population.y
        if "outside_reference" in fields:
            out["outside_reference"] = self._tables(keep.model_ids, res, POOL, steps.signals)
            out["outside_reference_population"] = on_population
            out["outside_reference_population_membership"] = keep
        return out

    def distilled(self, config: ExperimentConfig) -> dict[str, Any]:
        """Distilled models (attack D): two kinds of students, one per attack.

        Soft labels (Ye et al. Eq. 14-15, attack ``distillation``) and logit regression
        (attack ``distillation-logits``); the same subsets and seeds for both, so the two
        attacks differ only in the objective.
        """
        fields = self.need.fields
        students = [
            (field, method)
            for field, method in (("distilled", "soft-labels"), ("distilled_logits", "logits"))
            if field in fields
        ]
        if not students:
            return {}
        if not callable(getattr(self.target_model, "logits", None)):
            raise DesignError(
                "distilled models (attacks D) query the target on population records; a "
                "target given as precomputed outputs cannot be queried: drop the distillation attacks"
            )
        sp, population = self.split, self.split.population
        size = config.distill_size or min(population.n_records, sp.attacker_size)
        rng = derive_rng(self.seeds["attacker"], purpose="distillation-subsets")
        d_seeds = spawn_seeds(
            self.seeds["attacker"], config.n_distilled, purpose="distilled-models"
        )
        d_keep = np.zeros((config.n_distilled, population.n_records), dtype=bool)
        # The subsets are drawn from a random part of the population of size
        # max(distill_size, n_population / 2); the rest is never distilled on, so the
        # calibration of attack D has at least n_population / 2 records that no
        # distilled model saw (with independent subsets of the whole population, only
        # a fraction (1 - size / n_population) ** n_distilled of it would be).
        n_source = max(size, population.n_records // 2)
        source = np.sort(rng.permutation(population.n_records)[:n_source])
        picks = []
        for j in range(config.n_distilled):
            pick = np.sort(rng.choice(source, size=size, replace=False))
            d_keep[j, pick] = True
            picks.append(pick)
        out: dict[str, Any] = {}
        for field, method in students:
            prefix = "distilled" if method == "soft-labels" else "distilled-logits"
            d_ids = tuple(f"{prefix}-{j:03d}" for j in range(config.n_distilled))
            sets = self._sets(f"{field}_population")
            steps = YeSteps(
                self.dataset,
                self.trainer,
                self.need.role_signals(field, f"{field}_population"),
                self.eval_sets,
                teacher=self.target_model,
                teacher_key=self.target_key,
                distill_method=method,
            )
            jobs = [
                steps.job("distilled", did, population.record_ids[pick], s, sets)
                for did, s, pick in zip(d_ids, d_seeds, picks, strict=True)
            ]
            res = self._run(prefix.replace("-", "_"), jobs, steps, f"{prefix} models")
            out[field] = self._tables(d_ids, res, POOL, steps.signals)
            if POPULATION in sets:
                out[f"{field}_population"] = self._tables(d_ids, res, POPULATION, steps.signals)
                out[f"{field}_population_membership"] = MembershipMatrix(
                    population.record_ids, d_ids, d_keep
                )
        return out

    def leave_one_out_sample(
        self, config: ExperimentConfig
    ) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
        """Pool positions of the members and non-members Attack L attacks: about half
        each of ``leave_one_out_sample``, plus ``leave_one_out_include``."""
        pool, member = self.split.pool, self.split.member
        rng = derive_rng(self.seeds["attacker"], purpose="leave-one-out-sample")
        include = np.zeros(pool.n_records, dtype=bool)
        if config.leave_one_out_include:
            include[pool.positions(np.asarray(config.leave_one_out_include))] = True
        members = np.flatnonzero(member & ~include)
        non_members = np.flatnonzero(~member & ~include)
        n_rest = max(0, config.leave_one_out_sample - int(include.sum()))
        k_m = min(math.ceil(n_rest / 2), members.size)
        k_n = min(n_rest - k_m, non_members.size)
        pick_m = np.sort(rng.choice(members, size=k_m, replace=False))
        pick_n = np.sort(rng.choice(non_members, size=k_n, replace=False))
        forced = np.flatnonzero(include)
        pick_m = np.sort(np.concatenate([pick_m, forced[member[forced]]])).astype(np.intp)
        pick_n = np.sort(np.concatenate([pick_n, forced[~member[forced]]])).astype(np.intp)
        return pick_m, pick_n

    def leave_one_out(self, config: ExperimentConfig) -> tuple[dict[str, Any], NDArray[Any] | None]:
        """Leave-one-out models (attack L) and the records it attacks.

        For a sampled member ``x``, ``n_leave_one_out`` models on ``D \\ {x}`` serve ``x``
        only; for a non-member ``D \\ {x} = D``, so ``n_leave_one_out`` models on ``D``
        serve all of them; model ``r`` of every record has the same seed (paired).
        """
        if "leave_one_out" not in self.need.fields:
            return {}, None
        pool, member = self.split.pool, self.split.member
        pick_m, pick_n = self.leave_one_out_sample(config)
        sets = self._sets("leave_one_out_population")
        loo_seeds = spawn_seeds(
            self.seeds["attacker"], config.n_leave_one_out, purpose="leave-one-out-models"
        )
        steps = self.steps.with_signals(
            self.need.role_signals("leave_one_out", "leave_one_out_population")
        )
        jobs, rows, serve_rows, model_ids = [], [], [], []
        for r, s in enumerate(loo_seeds):
            mid = f"loo-all-{r:02d}"
            jobs.append(steps.job("leave-one-out", mid, pool.record_ids[member], s, sets))
            rows.append(member.copy())
            serve_rows.append(~member)  # D \ {x} = D for a non-member x
            model_ids.append(mid)
        for p in pick_m:
            row = member.copy()
            row[p] = False
            serves = np.zeros(pool.n_records, dtype=bool)
            serves[p] = True  # a model on D \ {x} is x's out world only
            for r, s in enumerate(loo_seeds):
                mid = f"loo-{pool.record_ids[p]}-{r:02d}"
                jobs.append(steps.job("leave-one-out", mid, pool.record_ids[row], s, sets))
                rows.append(row)
                serve_rows.append(serves)
                model_ids.append(mid)
        res = self._run("leave_one_out", jobs, steps, "leave-one-out models")
        out: dict[str, Any] = {
            "leave_one_out": self._tables(model_ids, res, POOL, steps.signals),
            "leave_one_out_membership": MembershipMatrix(
                pool.record_ids, tuple(model_ids), np.stack(rows)
            ),
            "leave_one_out_serves": np.stack(serve_rows),
        }
        if POPULATION in sets:
            out["leave_one_out_population"] = self._tables(
                model_ids, res, POPULATION, steps.signals
            )
            # population records are non-members: served by the models trained on D
            pop_serves = np.zeros((len(model_ids), self.split.population.n_records), dtype=bool)
            pop_serves[: config.n_leave_one_out] = True
            out["leave_one_out_population_serves"] = pop_serves
        loo_ids = pool.record_ids[np.sort(np.concatenate([pick_m, pick_n]))]
        return out, loo_ids

    def views(self, data_kw: Mapping[str, Any]) -> dict[str, Any]:
        """LiRA's augmented queries: ``{"views": one AttackData per non-identity view}``
        from the target's and the reference models' signals on the views (Carlini et al.
        2022, Sec. VI-A); empty when no attack asked for them. Call after :meth:`target`
        and :meth:`reference`."""
        if self.query_views is None:
            return {}

        def view_tables(field: str, set_name: str) -> dict[str, SignalTable]:
            role = "target" if field in ("target", "population_target") else "reference"
            model_ids, res, sigs = self._viewed[role]
            return self._tables(model_ids, res, set_name, sigs)

        fields_sets = {"target": POOL, "population_target": POPULATION}
        fields_sets.update(reference=POOL, reference_population=POPULATION)
        return {"views": view_attack_data(self.query_views, data_kw, view_tables, fields_sets)}


def _check_shadow_design(split: YeSplit) -> None:
    """Shadow models (attacks S and R) train on population subsets of the target's
    training-set size (Ye et al. 2022, App. B.2), so the population must be larger."""
    n_train, n_pop = split.attacker_size, split.population.n_records
    if n_train >= n_pop:
        raise DesignError(
            f"shadow models (attacks shadow and reference) train on {n_train} population "
            f"records (the target's training-set size) and need OUT records: n_population "
            f"must exceed it, found {n_pop} (fewer audited records or a larger population)"
        )
