"""The PANORAMIA report: ``results.json`` (section ``panoramia``), the test scores, the HTML section.

PANORAMIA (Kazmi et al., NeurIPS 2024) audits a released model with generated non-members.
Its results document is the usual one (``settings``, ``target``, ``attacks``) plus the
section ``panoramia`` (:meth:`privaudit.panoramia.game.PanoramiaResult.to_dict`: sizes,
the three bounds c_lb, {c+eps}_lb and eps_tilde, the RM;RN and O(1) comparisons, the
precision-recall curves, the generator / helper / classifier settings, the split
fingerprints, notes) and ``threat_model`` in one paragraph. ``attacks`` holds the MIA
(``panoramia-mia``: x + loss of the target) and the baseline (``panoramia-baseline``: x +
loss of the helper model) on the coin-flip test slots; ``audits`` stays empty: eps_tilde is
not a DP lower bound unless c_lb is tight (Sec. 4.2), so no CI gate reads it as one.

Files: ``panoramia_scores.npz`` (the test slots' record ids, membership, both scores: a
:class:`~privaudit.report.results.ScoreTable`), ``rmrn_scores.npz`` (RM;RN's test slots,
when real non-members were given), ``report.html``, ``bundle.json``. ``privaudit verify``
recomputes the bounds from the saved scores (:func:`recompute_panoramia`).

The HTML section (``templates/_panoramia.html.j2``, context from :func:`panoramia_context`)
shows the bounds with m and the confidence, the comparisons with their m, the
precision-recall curves of the MIA, the baseline and RM;RN with the precision each bound
implies (``e^B / (1 + e^B)``, dashed; Kazmi et al. Sec. 4, Fig. 3) and lb_t against recall.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from privaudit._validation import fail
from privaudit.metrics.roc import MIN_RECORDS_FOR_A_RESULT
from privaudit.report.results import ScoreTable, build_results, validate_results
from privaudit.report.svg_chart import Axis, Series, line_chart, svg_base64
from privaudit.report.writer import write_report

__all__ = [
    "BASELINE",
    "CAP_SHARE",
    "MIA",
    "PANORAMIA_SCORES_FILE",
    "PANORAMIA_THREAT_MODEL",
    "RMRN",
    "RMRN_SCORES_FILE",
    "cap_warning",
    "classifier_inputs",
    "eps_recall_svg",
    "implied_precision",
    "panoramia_context",
    "panoramia_results",
    "precision_recall_svg",
    "recompute_panoramia",
    "size_warning",
    "write_panoramia_report",
]

PANORAMIA_SCORES_FILE = "panoramia_scores.npz"
RMRN_SCORES_FILE = "rmrn_scores.npz"
#: Score columns of the test slots (``panoramia_scores.npz``) and of RM;RN (``rmrn_scores.npz``).
MIA = "panoramia-mia"
BASELINE = "panoramia-baseline"
RMRN = "rmrn-mia"


#: ``c_lb`` at or above this share of the cap is reported as saturated (:func:`cap_warning`).
CAP_SHARE = 0.9


def cap_warning(bounds: Mapping[str, Any], m: int) -> str | None:
    """A warning when ``c_lb`` is within 10 % of its cap (``bounds["cap"]``, the bound of
    perfect scores on these ``m`` slots), else ``None``: the baseline then tells the
    generated records apart almost perfectly, and ``eps_tilde <= cap - c_lb`` by
    construction, whatever the target leaks."""
    cap = bounds.get("cap")
    if cap is None or cap <= 0 or bounds["c_lb"] < CAP_SHARE * cap:
        return None
    room = max(0.0, cap - bounds["c_lb"])
    return (
        f"c_lb = {bounds['c_lb']:.3f} is within {100 * (1 - CAP_SHARE):.0f} % of its cap "
        f"{cap:.3f} (the bound of perfect scores on these m = {m} slots): the baseline tells "
        f"the generated records apart almost perfectly, so eps_tilde cannot exceed "
        f"{room:.3f} whatever the target leaks. A generator closer to the data, or more test "
        "slots (the cap grows like log m), is needed to measure more."
    )


def size_warning(pano: Mapping[str, Any]) -> str | None:
    """A warning when the bounds rest on too few test slots, else ``None``: PANORAMIA's,
    RM;RN's or O(1)'s ``m`` below :data:`~privaudit.metrics.roc.MIN_RECORDS_FOR_A_RESULT`
    (a figure on a few records is a warning, not a result), and, when ``bounds["cap"]`` is
    0, that no PANORAMIA bound can exceed 0 on these slots, whatever the target leaks."""
    m = int(pano["sizes"]["m"])
    counts = [("PANORAMIA", m)] + [
        (label, int(c["m"]))
        for label, c in (
            ("RM;RN", pano["comparisons"].get("rmrn")),
            ("O(1)", pano["comparisons"].get("o1")),
        )
        if c is not None
    ]
    few = [f"{label} m = {n}" for label, n in counts if n < MIN_RECORDS_FOR_A_RESULT]
    if not few:
        return None
    out = (
        f"the bounds rest on few test slots ({', '.join(few)}; fewer than "
        f"{MIN_RECORDS_FOR_A_RESULT}): read them as a warning, not a result."
    )
    cap = pano["bounds"].get("cap")
    if cap is not None and cap <= 0:
        out += (
            f" On m = {m} slots perfect scores give a bound of {cap:.3f} at confidence "
            f"{pano.get('confidence', 0.95):g} (the cap): c_lb, {{c+eps}}_lb and eps_tilde are "
            "0 by construction, whatever the target leaks; more known members (m grows with "
            "them) are needed to measure anything."
        )
    return out


_REFERENCE_WORDS = {
    "generator": "of the generator's own language model, fine-tuned on D_G only",
    "target-recipe": "of a model fine-tuned with the target's recipe on D_G only",
    "generator+target-recipe": (
        "of the generator's own language model and of a model fine-tuned with the target's "
        "recipe, both on D_G only"
    ),
}


def _helper_sentence(section: Mapping[str, Any]) -> str:
    """The threat model's sentence when the MIA also read the helper's loss (opt-in
    ``mia_reads_helper``), empty otherwise."""
    if not _reads_helper(section, "mia"):
        return ""
    return (
        " Here the MIA also reads the helper's loss (its inputs hold all of the baseline's, "
        "so eps_tilde measures what the target's loss adds to them)"
        + (", and so does RM;RN's classifier." if _reads_helper(section, "rmrn") else ".")
    )


def _reference_sentence(section: Mapping[str, Any]) -> str:
    """The threat model's sentence on the reference models the classifiers also saw (the
    text scorer's ``reference``), empty when none did."""
    network = (section.get("classifiers") or {}).get("mia") or {}
    reference = (network.get("network") or {}).get("reference")
    words = _REFERENCE_WORDS.get(reference) if isinstance(reference, str) else None
    if words is None:
        return ""
    return (
        f" Both classifiers (and RM;RN's) also see the per-token loss {words} (real text, no "
        "audit record): the baseline then knows the real distribution as well as the target "
        "does, and the MIA's only extra input is the target's loss."
    )


#: The threat model of the report, in one paragraph (Kazmi et al. 2024, Sec. 3 and 4.2).
PANORAMIA_THREAT_MODEL = (
    "The auditor holds a known subset of the target model's training data (the known "
    "members) and can query the released model for the loss of any example (per example for "
    "tables and images, per token for text). Nothing is retrained and no real non-members "
    "are needed: a generator trained on part of the known members (D_G) makes the "
    "non-members, and a helper model trained with the target's recipe on other generated "
    "records gives the baseline the same kind of loss feature without the target. The MIA "
    "(record + target loss) and the baseline (record + helper loss) guess membership on "
    "coin-flip test slots, each holding a held-out known member or a generated record. "
    "c_lb lower-bounds how far the generator is from the data distribution (c-closeness, "
    "Prop. 1), {c+eps}_lb what the target adds (Prop. 2). eps_tilde = max(0, {c+eps}_lb - "
    "c_lb) measures the leakage, but it is a lower bound on the target's eps only if c_lb is "
    "tight, i.e. if no detector of generated records beats the baseline (Kazmi et al. 2024, "
    "Sec. 4.2). RM;RN (real non-members in place of generated ones) and O(1) (a loss "
    "threshold, Steinke et al. 2023) need real non-members and are eps lower bounds only "
    "when the known members and the real non-members are exchangeable (the split into "
    "training and held-out records was random, one distribution); a held-out set drawn "
    "later or elsewhere breaks them."
)

_COLOURS = {"mia": "#d62728", "baseline": "#1f77b4", "rmrn": "#2ca02c"}


def _reads_helper(pano: Mapping[str, Any], name: str) -> bool:
    """Whether classifier ``name`` also read the helper's loss (``mia_reads_helper``)."""
    return bool(((pano.get("classifiers") or {}).get(name) or {}).get("reads_helper"))


def classifier_inputs(pano: Mapping[str, Any], name: str) -> str:
    """What classifier ``name`` (``"mia"``, ``"baseline"``, ``"rmrn"``) of a PANORAMIA
    section read: ``x`` and the losses of the target (MIA, RM;RN), the helper (baseline,
    and the MIA and RM;RN with ``mia_reads_helper``) and the reference models, when the
    modality had them (text: one, or two joined by ``+``)."""
    parts = ["x"]
    if name in ("mia", "rmrn"):
        parts.append("target loss")
    if name == "baseline" or _reads_helper(pano, name):
        parts.append("helper loss")
    network = ((pano.get("classifiers") or {}).get(name) or {}).get("network") or {}
    reference = network.get("reference")
    if reference:
        n = str(reference).count("+") + 1
        parts.append("reference loss" if n == 1 else f"{n} reference losses")
    return " + ".join(parts)


def _label(pano: Mapping[str, Any], name: str) -> str:
    """The legend's name of classifier ``name``: what it read."""
    if name == "rmrn":
        return f"RM;RN (real non-members; {classifier_inputs(pano, name)})"
    return f"{'MIA' if name == 'mia' else 'baseline'} ({classifier_inputs(pano, name)})"


def implied_precision(bound: float) -> float:
    """The precision a bound ``B`` on ``c`` or ``c + eps`` implies: ``e^B / (1 + e^B)``
    (Kazmi et al. 2024, Sec. 4: a guess is right with probability at most that)."""
    return 1.0 / (1.0 + math.exp(-float(bound)))


def panoramia_results(
    section: Mapping[str, Any],
    table: ScoreTable,
    *,
    seed: int,
    settings: Mapping[str, Any],
    target: Mapping[str, Any],
    provenance: Mapping[str, Any] | None = None,
    timings: Mapping[str, float] | None = None,
    rmrn: bool = False,
) -> dict[str, Any]:
    """The ``results.json`` document of a PANORAMIA audit (validated against the schema).

    Parameters
    ----------
    section : mapping
        :meth:`PanoramiaResult.to_dict` (the ``panoramia`` section; pano_api.md section 2).
    table : ScoreTable
        The test slots: record ids, membership, scores :data:`MIA` and :data:`BASELINE`.
    seed : int
        The audit's root seed.
    settings : mapping
        ``dataset`` and ``model`` (target and recipe) as configured.
    target : mapping
        ``train_accuracy``, ``test_accuracy`` (None when unknown), ``model_sha256``, ...
    provenance : mapping, optional
        How the target was made, when privaudit made it (the example): ``panoramia.provenance``.
    timings : mapping, optional
        Seconds per step.
    rmrn : bool
        ``rmrn_scores.npz`` is written beside (RM;RN ran).
    """
    from privaudit.metrics.roc import attack_metrics
    from privaudit.report.per_record import attack_score_fields
    from privaudit.report.results import attack_entry

    missing = {MIA, BASELINE} - set(table.attacks)
    if missing:
        raise fail("table", f"scores {MIA!r} and {BASELINE!r}", f"columns {list(table.attacks)}")
    entries = []
    for name in (MIA, BASELINE):
        metrics = attack_metrics(table.attack_scores(name), table.member)
        entry = attack_entry(metrics, n_reference_models=1 if name == BASELINE else 0)
        entry.update(attack_score_fields(table, name))
        entries.append(entry)
    pano = dict(section)
    pano["threat_model"] = (
        PANORAMIA_THREAT_MODEL + _helper_sentence(section) + _reference_sentence(section)
    )
    if provenance is not None:
        pano["provenance"] = dict(provenance)
    doc = build_results(
        seed=seed,
        settings={
            "game": "panoramia",
            "alpha": None,
            "attacks": [MIA, BASELINE],
            **dict(settings),
        },
        target={
            "n_members": int(table.member.sum()),
            "n_non_members": int((~table.member).sum()),
            "origin": "provided",
            **dict(target),
        },
        attacks=entries,
        timings=timings,
        sections={"panoramia": pano},
    )
    files = {"scores": PANORAMIA_SCORES_FILE}
    if rmrn:
        files["rmrn_scores"] = RMRN_SCORES_FILE
    doc["files"] = files
    validate_results(doc)
    return doc


def recompute_panoramia(
    results: Mapping[str, Any], table: ScoreTable, rmrn_table: ScoreTable | None
) -> dict[str, Any]:
    """The parts of the ``panoramia`` section that follow from the saved test scores.

    ``bounds`` (c_lb, {c+eps}_lb, eps_tilde, the cap, the counts at the maximisers, the
    union-bound size and level) by :func:`privaudit.stats.panoramia.panoramia_lb` at ``beta/2`` per test
    (Corollary 1) over the quantile thresholds, the numbers of test slots, the curves
    (:func:`~privaudit.stats.panoramia.panoramia_curve`), and RM;RN's bound and curve (one
    test at ``beta``, c = 0) from ``rmrn_scores.npz``. Compared leaf by leaf with the
    recorded values by ``privaudit verify``.
    """
    from privaudit.stats.panoramia import panoramia_cap, panoramia_curve, panoramia_lb

    pano = results["panoramia"]
    beta = 1.0 - float(pano["confidence"])
    _, mia, member = table.scored(MIA)
    _, base, member_b = table.scored(BASELINE)
    if not np.array_equal(member, member_b):
        raise fail(
            "table", "the MIA and the baseline scored on the same test slots", "different slots"
        )
    cpe, info_mia = panoramia_lb(mia, member, beta_per_test=beta / 2)
    c, info_base = panoramia_lb(base, member, beta_per_test=beta / 2)
    out: dict[str, Any] = {
        "sizes": {
            "m": int(member.size),
            "n_test_members": int(member.sum()),
            "n_test_synthetic": int((~member).sum()),
        },
        "bounds": {
            "c_lb": c,
            "c_plus_eps_lb": cpe,
            "eps_tilde": max(0.0, cpe - c),
            "n_thresholds": info_mia["n_thresholds"],
            "beta_per_threshold": info_mia["beta_per_threshold"],
            "mia": {"r": info_mia["r"], "v": info_mia["v"]},
            "baseline": {"r": info_base["r"], "v": info_base["v"]},
        },
        "curves": {
            "mia": panoramia_curve(mia, member, beta_per_test=beta / 2),
            "baseline": panoramia_curve(base, member, beta_per_test=beta / 2),
        },
    }
    if "cap" in pano["bounds"]:  # results written before the cap was recorded lack it
        out["bounds"]["cap"] = panoramia_cap(member, beta_per_test=beta / 2)
    rec = (pano.get("comparisons") or {}).get("rmrn")
    if rec is not None and rmrn_table is not None:
        _, s, mem = rmrn_table.scored(RMRN)
        eps, info = panoramia_lb(s, mem, beta_per_test=beta)
        out["comparisons"] = {
            "rmrn": {
                "eps_lb": eps,
                "m": int(mem.size),
                "n_test_members": int(mem.sum()),
                "r": info["r"],
                "v": info["v"],
                "n_thresholds": info["n_thresholds"],
                "beta_per_threshold": info["beta_per_threshold"],
            }
        }
        out["curves"]["rmrn"] = panoramia_curve(s, mem, beta_per_test=beta)
    return out


#: The MIA / baseline classifier of each modality, for a run whose classifiers did not
#: record their kind (:meth:`~privaudit.panoramia.text.TextModality.fit_scorer`,
#: the image modality's).
_CLASSIFIER_WORDS = {
    "tabular": "gradient boosting",
    "image": "CNN of the image + MLP of the losses",
    "text": "byte CNN of the text + CNN of the per-token losses",
}


def _what_ran(pano: Mapping[str, Any]) -> str:
    """Generator, helper and classifiers of the run, in a few words (for the figure titles)."""
    gen = pano.get("generator") or {}
    helper = pano.get("helper") or {}
    clf = ((pano.get("classifiers") or {}).get("mia")) or {}
    gen_name = gen.get("kind") or gen.get("name")
    base = gen.get("base")  # text: the base LM (its name, or settings naming it) fine-tuned
    if gen_name is None and base:
        top_k = (gen.get("sampling") or {}).get("top_k")
        name = base.get("name", "base LM") if isinstance(base, Mapping) else base
        gen_name = f"{name} fine-tuned" + (f", top-{top_k} sampling" if top_k else "")
    helper_name = helper.get("trainer") or helper.get("kind")
    if helper_name is None and "recipe" in helper:
        helper_name = "the target's recipe"
    clf_name = clf.get("kind") or _CLASSIFIER_WORDS.get(str(pano.get("modality")))
    parts = [
        f"generator {gen_name or 'n/a'} on {gen.get('n_train', '?')} members",
        f"helper {helper_name or 'n/a'}",
        f"classifiers {clf_name or 'n/a'}",
    ]
    return "; ".join(parts)


def _sizes_line(pano: Mapping[str, Any]) -> str:
    s = pano["sizes"]
    return (
        f"m = {s['m']} test slots ({s['n_test_members']} members, "
        f"{s['n_test_synthetic']} generated)"
    )


def _curves(pano: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any], float | None, int]]:
    """``(name, curve, bound, m)`` for each curve present."""
    b = pano["bounds"]
    rmrn = (pano.get("comparisons") or {}).get("rmrn")
    bounds = {
        "mia": (b["c_plus_eps_lb"], pano["sizes"]["m"]),
        "baseline": (b["c_lb"], pano["sizes"]["m"]),
        "rmrn": (None, 0) if rmrn is None else (rmrn["eps_lb"], rmrn["m"]),
    }
    out = []
    for name in ("mia", "baseline", "rmrn"):
        c = (pano.get("curves") or {}).get(name)
        if c and len(c.get("recall", [])):
            bound, m = bounds[name]
            out.append((name, c, bound, m))
    return out


def _bound_name(name: str) -> str:
    return {"mia": "{c+eps}_lb", "baseline": "c_lb", "rmrn": "eps_lb"}[name]


def _chart(pano: Mapping[str, Any], series: list[Series], y: Axis, title: str) -> str | None:
    """One SVG document of the curves against recall (:mod:`privaudit.report.svg_chart`;
    None without curves); the title says what ran and on how many records."""
    if not series:
        return None
    return line_chart(
        series,
        x=Axis(0.0, 1.0, "recall (fraction of the test members guessed 'member')"),
        y=y,
        title=f"PANORAMIA ({pano['modality']}): {_sizes_line(pano)}\n{_what_ran(pano)}\n{title}",
        size=(520.0, 360.0),
    )


def precision_recall_svg(pano: Mapping[str, Any]) -> str | None:
    """Precision against recall of the MIA, the baseline and RM;RN, with the precision each
    bound implies (``e^B / (1 + e^B)``) dashed in the curve's colour, and chance (0.5)
    dotted; an SVG document (None without curves)."""
    series: list[Series] = []
    for name, c, bound, m in _curves(pano):
        col = _COLOURS[name]
        recall = np.asarray(c["recall"], dtype=np.float64)
        precision = np.asarray(c["precision"], dtype=np.float64)
        series.append(Series(recall, precision, f"{_label(pano, name)}, m = {m}", col, 1.4))
        if bound is not None:
            p = implied_precision(bound)
            label = f"precision implied by {_bound_name(name)} = {bound:.3f}: {p:.3f}"
            series.append(Series(np.array([0.0, 1.0]), np.array([p, p]), label, col, 1.0, (4, 2)))
    if series:
        series.append(Series(np.array([0.0, 1.0]), np.array([0.5, 0.5]), "", "#000", 0.7, (1, 2)))
    y = Axis(0.4, 1.02, "precision of the 'member' guesses")
    return _chart(pano, series, y, f"confidence {pano['confidence']}")


def eps_recall_svg(pano: Mapping[str, Any]) -> str | None:
    """The bound lb_t at each threshold against its recall (the maximum is the bound, dashed);
    an SVG document (None without curves)."""
    series: list[Series] = []
    top = 0.0
    for name, c, bound, m in _curves(pano):
        col = _COLOURS[name]
        recall = np.asarray(c["recall"], dtype=np.float64)
        lb = np.asarray(c["lb"], dtype=np.float64)
        label = f"{_label(pano, name)}: lb_t of {_bound_name(name)}, m = {m}"
        series.append(Series(recall, lb, label, col, 1.4))
        finite = lb[np.isfinite(lb)]
        top = max(top, float(finite.max()) if finite.size else 0.0)
        if bound is not None:
            series.append(
                Series(np.array([0.0, 1.0]), np.array([bound, bound]), "", col, 0.9, (4, 2))
            )
            top = max(top, float(bound))
    b = pano["bounds"]
    y = Axis(0.0, top * 1.05 if top > 0 else 1.0, "lb_t (eps-scale bound at the threshold)")
    return _chart(
        pano,
        series,
        y,
        f"union bound over {b['n_thresholds']} thresholds; eps_tilde = {b['eps_tilde']:.3f} = "
        f"max(0, {b['c_plus_eps_lb']:.3f} - {b['c_lb']:.3f})",
    )


def _encoded(svg: str | None) -> str | None:
    return None if svg is None else svg_base64(svg)


def _settings_rows(d: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    from privaudit.report.html import _flatten

    return _flatten(d or {}) if d else []


def panoramia_context(results: Mapping[str, Any]) -> dict[str, Any]:
    """Template variable ``panoramia`` (None without a ``panoramia`` section)."""
    pano = results.get("panoramia")
    if not pano:
        return {"panoramia": None}
    b = pano["bounds"]
    return {
        "panoramia": {
            "doc": pano,
            "threat_model": pano.get("threat_model", PANORAMIA_THREAT_MODEL),
            "implied": {
                "c_lb": implied_precision(b["c_lb"]),
                "c_plus_eps_lb": implied_precision(b["c_plus_eps_lb"]),
                "cap": implied_precision(b["cap"]) if "cap" in b else None,
            },
            "inputs": {role: classifier_inputs(pano, role) for role in ("mia", "baseline")},
            "cap_warning": cap_warning(b, int(pano["sizes"]["m"])),
            "size_warning": size_warning(pano),
            "pr_plot": _encoded(precision_recall_svg(pano)),
            "eps_plot": _encoded(eps_recall_svg(pano)),
            "generator_rows": _settings_rows(pano.get("generator")),
            "helper_rows": _settings_rows(pano.get("helper")),
            "classifier_rows": _settings_rows(pano.get("classifiers")),
        }
    }


def write_panoramia_report(
    out_dir: str | Path,
    results: Mapping[str, Any],
    table: ScoreTable,
    *,
    rmrn_table: ScoreTable | None = None,
    overwrite: bool = False,
    bundle: Mapping[str, Any] | None = None,
    carry: Sequence[str] = (),
) -> Path:
    """Write ``results.json``, ``panoramia_scores.npz``, ``rmrn_scores.npz`` (when RM;RN ran),
    ``report.html`` and ``bundle.json`` (with a manifest) into ``out_dir``, atomically
    (:func:`privaudit.report.writer.write_report`; ``carry``: entries of an existing
    ``out_dir`` moved into the new one, e.g. the artifact store)."""
    if (rmrn_table is None) != ("rmrn_scores" not in results.get("files", {})):
        raise fail(
            "rmrn_table",
            "the RM;RN scores exactly when results name rmrn_scores.npz",
            "a mismatch",
        )
    return write_report(
        out_dir,
        results,
        table,
        overwrite=overwrite,
        bundle=bundle,
        scores_file=PANORAMIA_SCORES_FILE,
        extra_tables=None if rmrn_table is None else {RMRN_SCORES_FILE: rmrn_table},
        carry=carry,
        html_context=panoramia_context(results),
    )
