"""An audit as an MLflow run: its figures as metrics, its settings as params, its files as artifacts.

ML engineers keep their runs in MLflow; :func:`log_to_mlflow` puts a privaudit audit
beside them. It reads the ``results.json`` document (from an audit's result object, the
document itself, the file, or the report folder) and logs, in one new run:

* **metrics** (:func:`mlflow_metrics`): every attack's AUC (with its interval), TPR at each
  reported FPR, TPR at zero FPR, FPR at each reported TPR, the achieved FPR and TPR of its
  alpha threshold and the numbers of members and non-members it was scored on, as
  ``attacks/<name>/<figure>``; every DP lower bound as
  ``audits/<procedure>/<attack>/epsilon_lower_bound`` (and ``mu_lower_bound``,
  ``confidence``); the target's figures (``target/...``), the timings (``timings/...``)
  and the numeric figures of a procedure's own section (PANORAMIA's bounds, ...);
* **params** (:func:`mlflow_params`): ``settings`` flattened to dotted keys (the config
  the audit ran with: data, model, attacks, sizes, numbers of models, seeds), the seed
  and the versions; a value longer than :data:`MAX_PARAM_LENGTH` characters is cut (the
  whole settings are in ``results.json``, logged as an artifact);
* **artifacts**: the report folder's files (``report.html``, ``results.json``,
  ``scores.npz``, ``bundle.json``, ...), or ``results.json`` alone when only the
  document is given;
* **tags**: ``privaudit.version``, ``privaudit.schema_version``, ``privaudit.report_dir``.

MLflow is an optional extra (``pip install 'privaudit[mlflow]'``, ``mlflow-skinny``, which
suffices for a local file store and for a tracking server); it is imported only here, when
a run is logged. A ``file:`` tracking URI (MLflow's file store, in maintenance mode since
MLflow 3.7, which refuses it unless ``MLFLOW_ALLOW_FILE_STORE=true``) is accepted for the
duration of the call when the caller names it explicitly.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from privaudit.errors import InvalidInputError, PrivauditError

__all__ = [
    "MAX_PARAM_LENGTH",
    "check_tracking_uri",
    "log_to_mlflow",
    "mlflow_metrics",
    "mlflow_params",
]

#: Longest param value logged (MLflow servers before 2.x accepted 500 characters).
MAX_PARAM_LENGTH = 500
#: Sections of ``results.json`` that are not figures of the audit (or are too large to
#: be metrics: per-pair agreement matrices, per-record analyses).
_NOT_METRICS = frozenset(
    {
        "settings",
        "files",
        "threat_model",
        "agreement",
        "agreement_at_fpr",
        "vulnerable_records",
        "game",
        "attacks",
        "audits",
        "schema_version",
        "privaudit_version",
        "created",
        "seed",
    }
)
_MAX_DEPTH = 4
#: Params and metrics per ``log_batch`` call (MLflow's limit for params and tags).
_BATCH = 100
_ATTACK_FIGURES = (
    "auc",
    "auc_se",
    "tpr_at_zero_fpr",
    "alpha",
    "achieved_fpr",
    "achieved_tpr",
    "n_positives",
    "n_negatives",
    "n_false_positives",
    "n_reference_models",
)


def _key(*parts: Any) -> str:
    """A metric or param name MLflow accepts (letters, digits, ``_ - . / space``)."""
    return "/".join(re.sub(r"[^A-Za-z0-9_.\- ]", "_", str(p)) for p in parts)


def _number(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    f = float(v)
    return f if math.isfinite(f) else None


def _numbers(prefix: tuple[str, ...], obj: Any, out: dict[str, float], depth: int = 0) -> None:
    """Every finite number in the dicts of ``obj`` (lists are skipped), under ``prefix``."""
    v = _number(obj)
    if v is not None:
        out[_key(*prefix)] = v
    elif isinstance(obj, Mapping) and depth < _MAX_DEPTH:
        for k, x in obj.items():
            _numbers((*prefix, str(k)), x, out, depth + 1)


def mlflow_metrics(results: Mapping[str, Any]) -> dict[str, float]:
    """The audit's figures as MLflow metrics (module docstring); None / NaN / inf are left out."""
    out: dict[str, float] = {}
    for a in results.get("attacks") or []:
        name = str(a.get("name"))
        for fig in _ATTACK_FIGURES:
            v = _number(a.get(fig))
            if v is not None:
                out[_key("attacks", name, fig)] = v
        for group in ("tpr_at_fpr", "fpr_at_tpr"):
            for k, x in (a.get(group) or {}).items():
                v = _number(x)
                if v is not None:
                    out[_key("attacks", name, f"{group}_{k}")] = v
        ci = a.get("auc_ci")
        if isinstance(ci, list | tuple) and len(ci) == 2:
            for side, x in zip(("auc_ci_low", "auc_ci_high"), ci, strict=True):
                v = _number(x)
                if v is not None:
                    out[_key("attacks", name, side)] = v
    seen: dict[str, int] = {}
    for audit in results.get("audits") or []:
        base = _key("audits", audit.get("procedure", "audit"), audit.get("attack") or "all")
        n = seen.get(base, 0)
        seen[base] = n + 1
        if n:
            base = f"{base}-{n + 1}"
        refused = (audit.get("extra") or {}).get("gated") is False
        for fig in ("epsilon_lower_bound", "mu_lower_bound", "confidence", "delta"):
            if refused and fig in ("epsilon_lower_bound", "mu_lower_bound"):
                continue  # a refused bound is no figure (its trivial 0 is not logged)
            v = _number(audit.get(fig))
            if v is not None:
                out[f"{base}/{fig}"] = v
    for section, value in results.items():
        if section not in _NOT_METRICS:
            _numbers((str(section),), value, out)
    return out


def _flat_params(prefix: str, obj: Any, out: dict[str, str]) -> None:
    if isinstance(obj, Mapping) and obj:
        for k, v in obj.items():
            _flat_params(f"{prefix}.{k}" if prefix else str(k), v, out)
        return
    text = obj if isinstance(obj, str) else json.dumps(obj, sort_keys=True, default=str)
    if len(text) > MAX_PARAM_LENGTH:
        text = text[: MAX_PARAM_LENGTH - 3] + "..."
    out[_key(prefix)] = text


def mlflow_params(results: Mapping[str, Any]) -> dict[str, str]:
    """``settings`` flattened to dotted keys (values as text, JSON for lists), with the
    seed and the versions: the config the audit ran with; the document's top-level text
    fields too (e.g. a bound's ``procedure``)."""
    out: dict[str, str] = {}
    _flat_params("", results.get("settings") or {}, out)
    for k, v in results.items():  # a document without settings: its own descriptive fields
        if isinstance(v, str) and k not in ("created", "schema_version", "privaudit_version"):
            out.setdefault(_key(k), v[:MAX_PARAM_LENGTH])
    for k in ("seed", "schema_version", "privaudit_version"):
        if results.get(k) is not None:
            out[k] = str(results[k])
    return out


def _is_file_store(uri: str) -> bool:
    return uri.startswith("file:") or ("://" not in uri and not uri.startswith("databricks"))


def _file_store_path(uri: str) -> Path:
    if uri.startswith("file:"):
        from urllib.parse import unquote, urlparse

        return Path(unquote(urlparse(uri).path))
    return Path(uri)


def check_tracking_uri(uri: str | None) -> str:
    """The tracking URI to log to (None or ``""``: ``MLFLOW_TRACKING_URI``, else MLflow's
    default), checked before any audit work: MLflow importable, a file store's folder
    creatable, a SQLite store's driver installed.

    Raises
    ------
    InvalidInputError
        Naming ``--mlflow`` / ``tracking_uri``, what was expected and what was found.
    """
    try:
        import mlflow
    except ImportError:
        raise InvalidInputError(
            "mlflow: expected the mlflow package to log the audit to MLflow (pip install "
            "'privaudit[mlflow]', or mlflow-skinny), found none installed"
        ) from None
    resolved = uri or mlflow.get_tracking_uri()
    if resolved.startswith(("sqlite:", "postgresql", "mysql", "mssql")):
        try:
            import sqlalchemy  # noqa: F401
        except ImportError:
            raise InvalidInputError(
                f"mlflow: expected a tracking URI this MLflow can open, found {resolved!r}"
                + (" (MLflow's default)" if not uri else "")
                + ", a database store, which needs the full mlflow package (pip install "
                "mlflow); or give a folder, e.g. --mlflow file:///path/to/mlruns, or a "
                "server, --mlflow http://host:5000"
            ) from None
    if _is_file_store(resolved):
        p = _file_store_path(resolved).expanduser()
        parent = p
        while not parent.exists() and parent != parent.parent:
            parent = parent.parent
        if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
            raise InvalidInputError(
                f"mlflow: expected a tracking folder that can be written, found {resolved!r} "
                f"({parent} is not a writable folder)"
            )
    return resolved


@contextlib.contextmanager
def _file_store_allowed(uri: str, explicit: bool) -> Iterator[None]:
    """MLflow >= 3.7 refuses its file store unless ``MLFLOW_ALLOW_FILE_STORE=true``; a
    caller who names a file store explicitly wants it, for this call only."""
    key = "MLFLOW_ALLOW_FILE_STORE"
    if not (explicit and _is_file_store(uri)) or key in os.environ:
        yield
        return
    os.environ[key] = "true"
    try:
        yield
    finally:
        os.environ.pop(key, None)


def _resolve(result: Any) -> tuple[dict[str, Any], Path | None]:
    """The results document and the report folder (None: the document alone)."""
    from privaudit.report.results import RESULTS_FILE

    if isinstance(result, str | os.PathLike):
        p = Path(result)
        folder = p if p.is_dir() else p.parent
        file = p / RESULTS_FILE if p.is_dir() else p
        if not file.is_file():
            raise InvalidInputError(
                f"result: expected a results.json file or a report folder holding one, found {p}"
            )
        try:
            doc = json.loads(file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InvalidInputError(
                f"result: expected a readable results.json, found {file} ({exc})"
            ) from None
        return dict(doc), folder
    if isinstance(result, Mapping):
        return dict(result), None
    doc = getattr(result, "results", None)
    if isinstance(doc, Mapping):
        out = getattr(result, "out_dir", None)
        return dict(doc), Path(out) if out is not None else None
    raise InvalidInputError(
        "result: expected an audit result (with .results), a results.json document, its "
        f"path or the report folder, found {type(result).__name__}"
    )


def log_to_mlflow(
    result: Any,
    *,
    tracking_uri: str | None = None,
    experiment: str = "privaudit",
    run_name: str | None = None,
    tags: Mapping[str, str] | None = None,
    artifact_dir: str | os.PathLike[str] | None = None,
) -> str:
    """Log an audit to MLflow as one new run; return its run id.

    Parameters
    ----------
    result
        What the audit produced: its result object (e.g. the
        :class:`~privaudit.membership.pipeline.AuditReport` of ``run_audit``: ``.results`` and
        ``.out_dir``), the ``results.json`` document, the path of that file, or the
        report folder. The folder's files are logged as artifacts.
    tracking_uri : str, optional
        Where to log (``file:///path/mlruns``, ``http://host:5000``, ...); default
        ``MLFLOW_TRACKING_URI``, else MLflow's own default.
    experiment : str
        The MLflow experiment (created when missing).
    run_name : str, optional
        Default: the report folder's name, else ``privaudit <created>``.
    tags : mapping, optional
        Extra run tags.
    artifact_dir : path, optional
        A folder whose files are logged as the artifacts (default: the report folder of
        ``result``; without one, ``results.json`` is written from the document).

    Returns
    -------
    str
        The MLflow run id.

    Examples
    --------
    >>> run_id = log_to_mlflow("privaudit-results/demo-20260101-120000",
    ...                        tracking_uri="file:///tmp/mlruns")  # doctest: +SKIP
    """
    doc, folder = _resolve(result)
    if artifact_dir is not None:
        folder = Path(artifact_dir)
        if not folder.is_dir():
            raise InvalidInputError(f"artifact_dir: expected a folder, found {folder}")
    uri = check_tracking_uri(tracking_uri)
    name = run_name or (
        folder.name if folder is not None else f"privaudit {doc.get('created', '')}"
    )
    all_tags = {
        "privaudit.version": str(doc.get("privaudit_version", "")),
        "privaudit.schema_version": str(doc.get("schema_version", "")),
        **({"privaudit.report_dir": str(folder.resolve())} if folder is not None else {}),
        **dict(tags or {}),
    }
    with _file_store_allowed(uri, explicit=bool(tracking_uri)):
        try:
            return _log_run(uri, experiment, name, all_tags, doc, folder)
        except PrivauditError:
            raise
        except Exception as exc:  # MLflow's own, a refused connection, a full disk
            raise InvalidInputError(
                f"mlflow: expected to log the audit to {uri!r}, found {type(exc).__name__}: {exc}"
            ) from exc


def _log_run(
    uri: str,
    experiment: str,
    name: str,
    tags: dict[str, str],
    doc: dict[str, Any],
    folder: Path | None,
) -> str:
    from mlflow.entities import Metric, Param
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name(experiment)
    exp_id = exp.experiment_id if exp is not None else client.create_experiment(experiment)
    run_id = str(client.create_run(exp_id, run_name=name, tags=tags).info.run_id)
    try:
        now = int(time.time() * 1000)
        metrics = [Metric(k, v, now, 0) for k, v in sorted(mlflow_metrics(doc).items())]
        params = [Param(k, v) for k, v in sorted(mlflow_params(doc).items())]
        for i in range(0, max(len(metrics), len(params)), _BATCH):
            client.log_batch(run_id, metrics=metrics[i : i + _BATCH], params=params[i : i + _BATCH])
        if folder is not None:
            for f in sorted(folder.iterdir()):
                if f.is_file():
                    client.log_artifact(run_id, str(f))
        else:
            with tempfile.TemporaryDirectory(prefix="privaudit-mlflow-") as tmp:
                f = Path(tmp) / "results.json"
                f.write_text(json.dumps(doc, indent=1), encoding="utf-8")
                client.log_artifact(run_id, str(f))
    except BaseException:
        client.set_terminated(run_id, status="FAILED")
        raise
    client.set_terminated(run_id, status="FINISHED")
    return run_id
