"""Re-verifiable bundles: everything a third party needs to recompute an audit's numbers.

A bundle is a folder with a manifest, ``bundle.json``, beside the files it describes:

* ``run`` / ``demo`` (kind ``membership-inference``): ``results.json``, ``scores.npz``
  (per-record scores of every attack, record ids, true membership), ``report.html``;
* ``audit`` (kind ``audit``): ``result.json`` (the bound) and ``inputs.npz`` (the scores,
  membership and baseline scores read from the user's table);
* ``zero-run --out`` (kind ``zero-run``): ``results.json``, ``report.html``, ``inputs.npz``
  (scores, membership) and ``features.parquet`` (what the propensity models saw);
  verification re-runs the whole audit (cross-fitting, bootstrap) from them;
* ``canaries audit --out`` (kind ``canaries``): ``results.json``, ``report.html``,
  ``inputs.npz`` (canary ids, scores, coins); its verifier is the canaries package's.

The manifest holds the config, the seeds, the dataset's fingerprint, the versions of
Python and of the numerical packages, the sha256 of every file, and the tolerances that
:func:`verify_bundle` applies. Verification needs neither the model nor the data: it
reloads the scores and recomputes every metric and bound with the same library functions
that produced them (:func:`~privaudit.report.results.recompute_attack_metrics`,
:func:`~privaudit.stats.attack_bounds.attack_one_run_bounds`,
:func:`~privaudit.metrics.roc.agreement_matrix`,
:func:`~privaudit.stats.procedures.run_procedure`), then compares each recorded value
with its recomputation. What cannot be recomputed without the model (train and test
accuracy) is listed as such, never passed silently.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
import json
import math
import platform
from collections.abc import Callable, Iterable, Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from privaudit._version import __version__
from privaudit.errors import InvalidInputError
from privaudit.records import AuditResult
from privaudit.report.results import plain

__all__ = [
    "AUDIT_INPUTS_FILE",
    "AUDIT_RESULT_FILE",
    "BUNDLE_FILE",
    "BUNDLE_VERSION",
    "TOLERANCES",
    "BundleError",
    "Check",
    "VerifyReport",
    "audit_payload",
    "compare",
    "file_digest",
    "make_manifest",
    "package_versions",
    "read_manifest",
    "sources_fingerprint",
    "verify_bundle",
    "write_audit_bundle_files",
    "write_manifest",
    "write_zero_run_inputs",
]

BUNDLE_FILE = "bundle.json"
BUNDLE_VERSION = "1.0"
AUDIT_RESULT_FILE = "result.json"
AUDIT_INPUTS_FILE = "inputs.npz"
FEATURES_FILE = "features.parquet"
KINDS = ("membership-inference", "audit", "zero-run", "canaries")

#: Tolerances of :func:`verify_bundle`: ``|recorded - recomputed| <= abs + rel * |recomputed|``.
#: Metrics (rates, AUC, thresholds) are sums and quantiles of the saved scores, equal to
#: rounding; DP bounds come out of root finding (tolerance 1e-10 in eps), hence the
#: looser ``bounds`` tolerance. Integers, strings and booleans must be equal.
TOLERANCES: dict[str, dict[str, float]] = {
    "metrics": {"rel": 1e-9, "abs": 1e-12},
    "bounds": {"rel": 1e-7, "abs": 1e-8},
}

_PACKAGES = (
    "numpy",
    "scipy",
    "scikit-learn",
    "pandas",
    "pydantic",
    "jsonschema",
    "jinja2",
    "skops",
    "torch",
)


class BundleError(InvalidInputError):
    """The bundle cannot be read (missing, not JSON, unknown version or kind)."""


def package_versions() -> dict[str, str | None]:
    """Versions of Python, privaudit and the numerical packages (None: not installed)."""
    out: dict[str, str | None] = {
        "python": platform.python_version(),
        "privaudit": __version__,
    }
    for name in _PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def file_digest(path: Path) -> dict[str, Any]:
    """``{"sha256": hex, "bytes": size}`` of a file."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return {"sha256": h.hexdigest(), "bytes": path.stat().st_size}


def sources_fingerprint(paths: Iterable[Path | None]) -> str:
    """sha256 over the sha256 of each input file given (None entries skipped), in order."""
    h = hashlib.sha256()
    for p in paths:
        if p is not None:
            h.update(file_digest(Path(p))["sha256"].encode("ascii"))
    return h.hexdigest()


def make_manifest(
    *,
    kind: str,
    command: str,
    config: Mapping[str, Any],
    seeds: Mapping[str, Any],
    dataset_fingerprint: str | None,
) -> dict[str, Any]:
    """The manifest of a bundle, without its file digests (:func:`write_manifest` adds them)."""
    return {
        "bundle_version": BUNDLE_VERSION,
        "kind": kind,
        "command": command,
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "privaudit_version": __version__,
        "config": _jsonable(config),
        "seeds": _jsonable(seeds),
        "dataset_fingerprint": dataset_fingerprint,
        "packages": package_versions(),
        "platform": platform.platform(),
        "tolerances": TOLERANCES,
    }


def _jsonable(v: Any) -> Any:
    return json.loads(json.dumps(v, default=str))


def write_manifest(folder: Path, manifest: Mapping[str, Any], files: Iterable[str]) -> Path:
    """Write ``bundle.json`` into ``folder`` with the digests of ``files`` (names in it)."""
    doc = dict(manifest)
    doc["files"] = {name: file_digest(folder / name) for name in files}
    p = folder / BUNDLE_FILE
    p.write_text(json.dumps(doc, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    return p


def write_audit_bundle_files(
    folder: Path, result: Mapping[str, Any], inputs: Mapping[str, Any]
) -> list[str]:
    """Write ``result.json`` and ``inputs.npz`` of a ``privaudit audit`` bundle; return their names."""
    (folder / AUDIT_RESULT_FILE).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    arrays: dict[str, Any] = {
        "scores": np.asarray(inputs["scores"], dtype=np.float64),
        "member": np.asarray(inputs["member"], dtype=bool),
    }
    if inputs.get("baseline") is not None:
        arrays["baseline"] = np.asarray(inputs["baseline"], dtype=np.float64)
    with (folder / AUDIT_INPUTS_FILE).open("wb") as fh:
        np.savez_compressed(fh, **arrays)
    return [AUDIT_RESULT_FILE, AUDIT_INPUTS_FILE]


def write_zero_run_inputs(folder: Path, inputs: Mapping[str, Any]) -> list[str]:
    """Write ``inputs.npz`` (scores, membership) and ``features.parquet`` of a Zero-Run bundle."""
    with (folder / AUDIT_INPUTS_FILE).open("wb") as fh:
        np.savez_compressed(
            fh,
            scores=np.asarray(inputs["scores"], dtype=np.float64),
            member=np.asarray(inputs["member"], dtype=bool),
        )
    features = inputs["features"]
    features.to_parquet(folder / FEATURES_FILE, index=False)
    return [AUDIT_INPUTS_FILE, FEATURES_FILE]


def read_manifest(path: str | Path) -> tuple[Path, dict[str, Any]]:
    """``(folder, manifest)`` of a bundle given as its folder or its ``bundle.json``.

    Raises
    ------
    BundleError
        When the manifest is missing, not JSON, or of an unknown version or kind.
    """
    p = Path(path)
    if p.is_dir():
        p = p / BUNDLE_FILE
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BundleError(
            f"BUNDLE: expected a bundle folder or {BUNDLE_FILE}, found no {p}"
        ) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BundleError(f"BUNDLE: expected a JSON manifest, found {p} ({exc})") from None
    if not isinstance(doc, dict) or not str(doc.get("bundle_version", "")).startswith("1."):
        raise BundleError(f"BUNDLE: expected a bundle manifest of version 1.x, found {p}")
    if doc.get("kind") not in KINDS:
        raise BundleError(
            f"BUNDLE: expected kind one of {', '.join(KINDS)}, found {doc.get('kind')!r}"
        )
    if not isinstance(doc.get("files"), dict):
        raise BundleError(f"BUNDLE: expected a 'files' table in {p}")
    return p.parent, doc


@dataclasses.dataclass(frozen=True)
class Check:
    """One verified quantity: ``status`` is ``ok``, ``mismatch`` or ``not-recomputable``."""

    name: str
    status: str
    detail: str = ""


@dataclasses.dataclass(frozen=True)
class VerifyReport:
    """The outcome of :func:`verify_bundle`."""

    folder: Path
    kind: str
    checks: tuple[Check, ...]

    @property
    def mismatches(self) -> tuple[Check, ...]:
        return tuple(c for c in self.checks if c.status == "mismatch")

    @property
    def ok(self) -> bool:
        """True when nothing recomputed differs from what was recorded."""
        return not self.mismatches

    def count(self, status: str) -> int:
        return sum(c.status == status for c in self.checks)


def _num(v: Any) -> float | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int | float):
        return float(v)
    if isinstance(v, str) and v in ("inf", "-inf", "nan"):
        return float(v)
    return None


def compare(
    recorded: Any, recomputed: Any, path: str, tol: Mapping[str, float]
) -> tuple[list[Check], list[Check]]:
    """Compare two JSON values leaf by leaf; return ``(checks, not_recomputed)``.

    Numbers agree when ``|a - b| <= abs + rel * |b|`` (infinities and NaN must match
    exactly); other leaves must be equal. Keys only in ``recorded`` are reported as not
    recomputable; keys only in ``recomputed`` (or different lengths) as mismatches.
    """
    checks: list[Check] = []
    skipped: list[Check] = []
    if isinstance(recomputed, Mapping):
        if not isinstance(recorded, Mapping):
            return [Check(path, "mismatch", f"recorded {recorded!r}, recomputed an object")], []
        for k, v in recomputed.items():
            if k not in recorded:
                checks.append(Check(f"{path}.{k}", "mismatch", "missing from the recorded values"))
                continue
            c, s = compare(recorded[k], v, f"{path}.{k}", tol)
            checks += c
            skipped += s
        for k in recorded:
            if k not in recomputed:
                skipped.append(
                    Check(f"{path}.{k}", "not-recomputable", "not recomputed from the bundle")
                )
        return checks, skipped
    if isinstance(recomputed, list | tuple):
        if not isinstance(recorded, list | tuple) or len(recorded) != len(recomputed):
            return [
                Check(path, "mismatch", f"recorded {recorded!r}, recomputed {list(recomputed)!r}")
            ], []
        for i, (a, b) in enumerate(zip(recorded, recomputed, strict=True)):
            c, s = compare(a, b, f"{path}[{i}]", tol)
            checks += c
            skipped += s
        return checks, skipped
    a, b = _num(recorded), _num(recomputed)
    if a is not None and b is not None:
        if math.isnan(a) or math.isnan(b) or math.isinf(a) or math.isinf(b):
            same = (math.isnan(a) and math.isnan(b)) or a == b
        else:
            same = abs(a - b) <= tol["abs"] + tol["rel"] * abs(b)
    elif isinstance(recorded, bool) or isinstance(recomputed, bool):
        same = type(recorded) is type(recomputed) and recorded == recomputed
    else:
        same = recorded == recomputed
    if same:
        return [Check(path, "ok")], []
    return [Check(path, "mismatch", f"recorded {recorded!r}, recomputed {recomputed!r}")], []


def _verify_files(folder: Path, manifest: Mapping[str, Any]) -> list[Check]:
    out = []
    for name, want in manifest["files"].items():
        p = folder / name
        if not p.is_file():
            out.append(Check(f"file {name}", "mismatch", "missing"))
            continue
        got = file_digest(p)
        if got["sha256"] != want.get("sha256"):
            out.append(
                Check(
                    f"file {name}",
                    "mismatch",
                    f"sha256 {got['sha256'][:16]}... differs from the manifest",
                )
            )
        else:
            out.append(Check(f"file {name}", "ok"))
    return out


KindVerifier = Callable[[Path, Mapping[str, Any]], list["Check"]]
"""Recomputes a bundle of one procedure's own kind: ``(folder, manifest) -> checks``."""

SectionVerifier = Callable[[Path, Mapping[str, Any], Any], tuple[list["Check"], list["Check"]]]
"""Recomputes one procedure's section of a results.json: ``(folder, results, scores table) ->
(checks, not recomputable)``."""


def verify_bundle(
    path: str | Path,
    *,
    kinds: Mapping[str, KindVerifier] | None = None,
    sections: Mapping[str, SectionVerifier] | None = None,
) -> VerifyReport:
    """Recompute every metric and bound of a bundle from its saved scores.

    The report core recomputes what it defines: the file digests, a score-level audit
    (kind ``audit``) and a results.json's attacks, target counts, one-run bounds and
    agreement (kind ``membership-inference``). A procedure's own parts come from the
    verifiers it registers (the command line's :func:`privaudit.cli.verification.verify_bundle`
    passes every procedure's): ``kinds`` for a bundle of its own kind (``zero-run``),
    ``sections`` for its section of a results.json (``panoramia``).

    Parameters
    ----------
    path : path
        The bundle folder or its ``bundle.json``.
    kinds : mapping, optional
        ``{kind: verifier}`` for the bundle kinds the core does not know.
    sections : mapping, optional
        ``{results.json section: verifier}``, run when the section is present.

    Returns
    -------
    VerifyReport
        One :class:`Check` per file digest and per recomputed value (``ok`` or
        ``mismatch``), plus the recorded values that cannot be recomputed without the
        model or the data (``not-recomputable``).

    Raises
    ------
    BundleError
        When the manifest or a file it needs cannot be read at all.
    """
    folder, manifest = read_manifest(path)
    checks = _verify_files(folder, manifest)
    kind = manifest["kind"]
    if kind == "audit":
        checks += _verify_audit(folder, manifest)
    elif kind == "membership-inference":
        checks += _verify_membership(folder, manifest, sections or {})
    elif kinds is not None and kind in kinds:
        checks += kinds[kind](folder, manifest)
    else:
        raise BundleError(f"BUNDLE: no verifier for a bundle of kind {kind!r}")
    return VerifyReport(folder=folder, kind=str(manifest["kind"]), checks=tuple(checks))


def load_json(p: Path) -> Any:
    """A bundle's JSON file, or :class:`BundleError` naming it."""
    try:
        return json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BundleError(f"BUNDLE: cannot read {p.name} ({exc})") from None


def _verify_audit(folder: Path, manifest: Mapping[str, Any]) -> list[Check]:
    from privaudit.stats.procedures import ProcedureParams, run_procedure

    recorded = load_json(folder / AUDIT_RESULT_FILE)
    try:
        with np.load(folder / AUDIT_INPUTS_FILE, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except Exception as exc:
        raise BundleError(f"BUNDLE: cannot read {AUDIT_INPUTS_FILE} ({exc})") from None
    cfg = manifest["config"]
    try:
        result = run_procedure(
            cfg["procedure"],
            arrays["scores"],
            arrays["member"],
            baseline=arrays.get("baseline"),
            params=ProcedureParams(**cfg["params"]),
        )
    except (KeyError, TypeError) as exc:
        raise BundleError(f"BUNDLE: incomplete audit config in the manifest ({exc})") from None
    want = audit_payload(result)
    if cfg["procedure"] == "panoramia" and "gated" not in recorded:
        # written before issue 28 (eps_tilde in epsilon_lower_bound): the same figures
        want = _as_written_before_issue_28(want)
    checks, skipped = compare(recorded, want, "result", TOLERANCES["bounds"])
    return checks + skipped


#: ``AuditResult.extra`` keys that ``audit_payload`` lifts to the top level (PANORAMIA's).
_LIFTED = (
    "c_lower_bound",
    "c_plus_epsilon_lower_bound",
    "epsilon_tilde",
    "epsilon_tilde_caveat",
    "gated",
    "not_gated_reason",
)
#: What issue 28 added to PANORAMIA's audit document (absent from older bundles).
_PANORAMIA_ADDED = ("epsilon_tilde_caveat", "gated", "not_gated_reason")


def _as_written_before_issue_28(recomputed: dict[str, Any]) -> dict[str, Any]:
    """A recomputed PANORAMIA document in the shape bundles had before issue 28:
    ``epsilon_lower_bound`` held eps_tilde, without the caveat and gate keys; the notes
    (reworded since) are left out and so reported as not recomputed."""
    out = {k: v for k, v in recomputed.items() if k not in _PANORAMIA_ADDED and k != "notes"}
    out["epsilon_lower_bound"] = recomputed["epsilon_tilde"]
    out["extra"] = {k: v for k, v in recomputed["extra"].items() if k not in _PANORAMIA_ADDED}
    return out


def audit_payload(result: AuditResult) -> dict[str, Any]:
    """The JSON document of one ``privaudit audit`` bound (``--json`` and ``result.json``).

    :meth:`AuditResult.to_dict` with PANORAMIA's ``c_lower_bound``,
    ``c_plus_epsilon_lower_bound``, ``epsilon_tilde``, ``epsilon_tilde_caveat``, ``gated``
    (False: no claimed eps is checked) and ``not_gated_reason`` lifted to the top level.
    """
    d = result.to_dict()
    for key in _LIFTED:
        if key in result.extra:
            d[key] = result.extra[key]
    return dict(plain(d))


def _verify_membership(
    folder: Path, manifest: Mapping[str, Any], sections: Mapping[str, SectionVerifier]
) -> list[Check]:
    """A membership audit's results.json recomputed from its scores table, step by step:
    the schema, the attacks' names, the target's counts, each attack's metrics, the
    per-attack one-run bounds, the agreement matrix, PANORAMIA's bounds and the data
    fingerprint. Checks in that order, then everything not recomputable."""
    from privaudit.report.results import RESULTS_FILE, SCORES_FILE, ScoreTable, validate_results

    results = load_json(folder / RESULTS_FILE)
    try:
        validate_results(results)
    except InvalidInputError as exc:
        return [Check("results.json schema", "mismatch", str(exc))]
    scores_file = str(results.get("files", {}).get("scores", SCORES_FILE))
    try:
        table = ScoreTable.load(folder / scores_file)
    except Exception as exc:
        raise BundleError(f"BUNDLE: cannot read {scores_file} ({exc})") from None
    out: list[Check] = [Check("results.json schema", "ok")]
    names = [a["name"] for a in results["attacks"]]
    if set(names) != set(table.attacks):
        detail = f"results name {sorted(names)}, scores hold {sorted(table.attacks)}"
        return [*out, Check("attacks", "mismatch", detail)]
    skipped: list[Check] = []
    for step in (_verify_target_counts, _verify_attack_entries, _verify_attack_audits):
        c, s = step(results, table)
        out += c
        skipped += s
    if results.get("agreement"):
        c, s = _verify_agreement(results["agreement"], table)
        out += c
        skipped += s
    for section, verifier in sections.items():
        if results.get(section):
            c, s = verifier(folder, results, table)
            out += c
            skipped += s
    if results.get("calibrated_evaluation"):
        # the pseudo-targets' scores of every record are not in the bundle
        skipped.append(
            Check(
                "calibrated_evaluation",
                "not-recomputable",
                "needs every reference model's scores of every record",
            )
        )
    out += _verify_fingerprint(manifest, results)
    return out + skipped


def _verify_target_counts(
    results: Mapping[str, Any], table: Any
) -> tuple[list[Check], list[Check]]:
    """The target's member and non-member counts (its accuracies need the model)."""
    out: list[Check] = []
    target = results["target"]
    for key, value in (
        ("n_members", int(table.member.sum())),
        ("n_non_members", int((~table.member).sum())),
    ):
        c, _ = compare(target[key], value, f"target.{key}", TOLERANCES["metrics"])
        out += c
    skipped = [
        Check(f"target.{key}", "not-recomputable", "needs the target model and data")
        for key in ("train_accuracy", "test_accuracy")
    ]
    return out, skipped


def _verify_attack_entries(
    results: Mapping[str, Any], table: Any
) -> tuple[list[Check], list[Check]]:
    """Each attack's entry (metrics, score fields) recomputed from its scores; its
    settings (``params``) are not recomputable."""
    from privaudit.report.per_record import attack_score_fields
    from privaudit.report.results import attack_entry, recompute_attack_metrics

    out: list[Check] = []
    skipped: list[Check] = []
    metrics = recompute_attack_metrics(table, results)
    for i, entry in enumerate(results["attacks"]):
        name = entry["name"]
        want = attack_entry(metrics[name], n_reference_models=entry.get("n_reference_models"))
        want.update(
            attack_score_fields(table, name, confidence=entry.get("auc_ci_confidence", 0.95))
        )
        where = f"attacks[{i}]({name})"
        recorded = {k: v for k, v in entry.items() if k != "params"}
        want.pop("params", None)
        if "params" in entry:
            skipped.append(
                Check(f"{where}.params", "not-recomputable", "the attack's settings when it ran")
            )
        c, s = compare(recorded, want, where, TOLERANCES["metrics"])
        out += c
        skipped += s
    return out, skipped


def _verify_attack_audits(
    results: Mapping[str, Any], table: Any
) -> tuple[list[Check], list[Check]]:
    """The one-run bounds of the attacks' scores (grouped when membership was randomised
    by groups, e.g. documents); audits without per-attack scores are not recomputable."""
    from privaudit.stats.attack_bounds import (
        attack_one_run_bounds,
        grouped_one_run_bounds,
        member_chosen_refusals,
    )

    out: list[Check] = []
    skipped: list[Check] = []
    per_attack = [a for a in results["audits"] if a.get("attack") in table.scores]
    if per_attack:
        conf = float(per_attack[0].get("family_confidence", 0.95))
        delta = float(per_attack[0]["delta"])
        cols = {a["attack"]: table.scored(a["attack"])[1:] for a in per_attack}
        note = per_attack[0].get("sampling_assumption")
        extra: dict[str, Any] = {} if note is None else {"sampling_assumption": str(note)}
        # refused entries: a split the auditor chose (every entry; taken from the bundle, a
        # declaration nothing recomputes) and Attack L's sample chosen by membership
        # (re-derived from the game: a bundle that drops that refusal does not verify)
        game = str((results.get("settings") or {}).get("game") or "fixed-model")
        rule = member_chosen_refusals(list(cols), game)
        refused = {
            a["attack"]: str((a.get("extra") or {}).get("not_gated_reason"))
            for a in per_attack
            if (a.get("extra") or {}).get("gated") is False
        }
        for name, why in rule.items():  # a refused split's reason stands for L too
            refused.setdefault(name, why)
        if refused:
            extra["refused_attacks"] = refused
        unit = (per_attack[0].get("extra") or {}).get("unit")
        if unit is not None and table.groups is not None:
            # membership randomised by groups (e.g. documents): the groups were audited
            scored = {a["attack"]: ~np.isnan(table.scores[a["attack"]]) for a in per_attack}
            first = next(iter(scored.values()))
            if not all(np.array_equal(ok, first) for ok in scored.values()):
                raise BundleError(
                    "BUNDLE: grouped bounds need every attack to score the same records"
                )
            bounds = grouped_one_run_bounds(
                cols, table.groups[first], unit=str(unit), confidence=conf, **extra
            )
        else:
            bounds = attack_one_run_bounds(cols, confidence=conf, delta=delta, **extra)
        c, s = compare(per_attack, plain(bounds), "audits", TOLERANCES["bounds"])
        out += c
        skipped += s
    for a in results["audits"]:
        if a.get("attack") not in table.scores:
            skipped.append(
                Check(f"audits({a['procedure']})", "not-recomputable", "no per-attack scores")
            )
    return out, skipped


def _verify_agreement(ag: Mapping[str, Any], table: Any) -> tuple[list[Check], list[Check]]:
    """The attacks' agreement matrix at their thresholds. An attack that scored some
    records (L) is compared on the records both scored, as the pipeline does (NaN in
    scores.npz = not scored)."""
    from privaudit.metrics.roc import agreement_matrix

    try:
        decisions, scored = {}, {}
        for n in [n for n in ag["names"] if n != "GT"]:
            col = table.scores[n]
            thr = table.thresholds.get(n)
            ok = ~np.isnan(col)
            decisions[n] = ok & (np.where(ok, col, -np.inf) >= (np.inf if thr is None else thr))
            scored[n] = ok
        got = agreement_matrix(decisions, table.member, scored=scored).to_dict()
        if "alpha" in ag:
            got["alpha"] = ag["alpha"]
        return compare(ag, plain(got), "agreement", TOLERANCES["metrics"])
    except InvalidInputError as exc:
        return [Check("agreement", "mismatch", f"cannot recompute: {exc}")], []


def _verify_fingerprint(manifest: Mapping[str, Any], results: Mapping[str, Any]) -> list[Check]:
    """Recompute the fingerprint of a bundled dataset (Adult, digits); a user's table is not in the bundle."""
    ds = results["settings"].get("dataset", {})
    recorded = manifest.get("dataset_fingerprint")
    name = ds.get("name")
    if ds.get("source") == "in-memory":  # given as arrays (privaudit.audit_model)
        return [
            Check(
                "dataset fingerprint", "not-recomputable", "the user's data are not in the bundle"
            )
        ]
    if name not in ("adult", "digits") or ds.get("path"):
        return [
            Check(
                "dataset fingerprint", "not-recomputable", "the user's table is not in the bundle"
            )
        ]
    from privaudit.data import load_adult, load_digits

    got = (load_adult() if name == "adult" else load_digits()).fingerprint()
    c, _ = compare(recorded, got, "dataset fingerprint", TOLERANCES["metrics"])
    c2, _ = compare(
        ds.get("fingerprint"), got, "settings.dataset.fingerprint", TOLERANCES["metrics"]
    )
    return c + c2
