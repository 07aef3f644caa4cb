"""The bootstrap over propensity fits of the Zero-Run audit (paper Section 6).

Each replicate refits one estimator's cross-fitted propensities on a bootstrap seed and
recomputes the pointwise bounds, the audited model's scores and the tampering uniforms held
fixed; the audit reports the lower ``q``-quantile of the replicates. Replicates run through
any :class:`~privaudit.runtime.mapping.Mapper` and, with an artifact store, are cached one by
one so that an interrupted bootstrap resumes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privaudit.runtime.mapping import Mapper
from privaudit.runtime.seeds import spawn_seeds
from privaudit.runtime.store import ArtifactStore
from privaudit.zero_run.bounds import pointwise_inputs, zero_run_bounds
from privaudit.zero_run.propensity import (
    FeatureMatrix,
    PairedPropensity,
    cross_fit_propensity_pair,
)

__all__ = ["bootstrap_pointwise", "bound_args"]


def _replicate(item: tuple[Any, ...]) -> tuple[float, float]:
    """Refit one estimator's propensities on a bootstrap seed; its pointwise (mu, eps) bounds."""
    (features, member, scores, uniforms, estimator, seed, kw, bound_kw, _, _) = item
    fit = cross_fit_propensity_pair(
        features, member, estimator=estimator, seed=seed, bootstrap=True, **kw
    )
    res = zero_run_bounds(
        scores,
        member,
        uniforms=uniforms,
        corrections=("pointwise",),
        **bound_args(estimator, fit, bound_kw),
    )["pointwise"]
    mu = res.mu_lower_bound
    return (float(mu) if mu is not None else 0.0), float(res.epsilon_lower_bound)


def bound_args(
    estimator: str, fit: PairedPropensity | None, bound_kw: Mapping[str, Any]
) -> dict[str, Any]:
    """Keyword arguments of :func:`.bounds.zero_run_bounds` for one estimator's fit."""
    kw = {k: v for k, v in bound_kw.items() if k != "margin_z"}
    if fit is None:  # given propensities: used as they are
        return kw
    return {**kw, **pointwise_inputs(estimator, fit, bound_kw["margin_z"])}


def _save_pair(obj: tuple[float, float], path: Path) -> None:
    """Write one replicate's (mu, eps) to the store entry (JSON)."""
    path.write_text(json.dumps({"mu": obj[0], "epsilon": obj[1]}))


def _load_pair(path: Path) -> tuple[float, float]:
    """Read one replicate's (mu, eps) back from the store entry."""
    d = json.loads(path.read_text())
    return float(d["mu"]), float(d["epsilon"])


def _bootstrap_task(item: tuple[Any, ...]) -> tuple[float, float]:
    """One bootstrap replicate: refit the propensities, recompute the pointwise bounds.

    With an artifact store each finished replicate is stored under a key naming the data
    fingerprint, the estimator, the replicate's seed and every setting, so an interrupted
    bootstrap resumes where it stopped.
    """
    (_, _, _, _, estimator, seed, kw, bound_kw, store, fingerprint) = item
    if store is None:
        return _replicate(item)
    key = {
        "artifact": "zero-run-bootstrap-replicate",
        "data": fingerprint,
        "estimator": estimator,
        "seed": seed,
        "fit": kw,
        "bounds": bound_kw,
    }
    result: tuple[float, float] = store.get_or_create(
        key, lambda: _replicate(item), _save_pair, _load_pair, suffix=".json"
    )
    return result


def _fingerprint(feats: FeatureMatrix, *arrays: NDArray[Any]) -> str:
    """SHA-256 of the features, membership, scores and tampering uniforms."""
    h = hashlib.sha256()
    data = feats.data
    if isinstance(data, np.ndarray):
        h.update(np.ascontiguousarray(data).tobytes())
    else:
        import pandas as pd

        h.update(pd.util.hash_pandas_object(data, index=False).to_numpy().tobytes())
        h.update(json.dumps([str(c) for c in data.columns]).encode())
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def _lower_quantile(values: NDArray[np.float64], q: float) -> float:
    """The "lower" order statistic at ``q``: never interpolates upwards (a lower bound stays one)."""
    return float(np.quantile(values, q, method="lower"))


def bootstrap_pointwise(
    feats: FeatureMatrix,
    member: NDArray[np.bool_],
    scores: NDArray[np.float64],
    uniforms: NDArray[np.float64],
    estimator: str,
    *,
    n_bootstrap: int,
    quantile: float,
    seed: int,
    fit_kw: Mapping[str, Any],
    bound_kw: Mapping[str, Any],
    store: ArtifactStore | None,
    executor: Mapper,
) -> dict[str, Any]:
    """Bootstrap one estimator's pointwise bounds over ``n_bootstrap`` propensity refits.

    Seeds come from ``SeedSequence.spawn`` keyed by the estimator's name (so estimators are
    independent and a longer bootstrap extends a shorter one). Returns the record of
    ``ZeroRunResult.estimators[i]["bootstrap"]``: the lower ``quantile`` of mu and eps
    (what the headline uses), the median of mu and every replicate's values.
    """
    seeds = spawn_seeds(seed, n_bootstrap, purpose=f"zero-run-bootstrap-{estimator}")
    fp = _fingerprint(feats, member, scores, uniforms) if store is not None else ""
    items = [
        (feats, member, scores, uniforms, estimator, sd, fit_kw, bound_kw, store, fp)
        for sd in seeds
    ]
    vals = executor.map(
        _bootstrap_task, items, desc=f"bootstrap {estimator}", label=lambda it: f"seed {it[5]}"
    )
    mus = np.array([v[0] for v in vals])
    epss = np.array([v[1] for v in vals])
    return {
        "n": n_bootstrap,
        "quantile": quantile,
        "mu_lower_quantile": _lower_quantile(mus, quantile),
        "mu_median": float(np.median(mus)),
        "mu_values": mus.tolist(),
        "epsilon_lower_quantile": _lower_quantile(epss, quantile),
        "epsilon_values": epss.tolist(),
    }
