"""Coverage of the TPR-at-low-FPR interval with documents resampled whole (not a test).

Run: ``.venv/bin/python benchmarks/bench_tpr_interval.py [--runs 300] [--fpr 0.01 0.001]
[--documents N ...] [--json PATH]``.

What it checks: :func:`privaudit.metrics.roc.tpr_at_fpr_bootstrap_ci` (the interval of
every language-model signal's TPR at 1% and 0.1% FPR in ``results.json``) against the
true TPR of a simulation whose ROC is known. Each run draws ``documents`` member and as
many non-member documents; a document has ``chunks`` chunks, each scoring its document's
effect (normal, sd 1; shifted by ``mu`` for members) plus its own noise (normal, sd 0.5),
so the chunks of a document are alike, as the chunks of one text are. A chunk's score is
then normal with sd ``sqrt(1.25)`` in both classes, and the true TPR at FPR ``f`` is
``1 - Phi(Phi^-1(1 - f) - mu / sqrt(1.25))``. Cells: ``f`` = 1% with 150, 400 and 1,000
documents a side, ``f`` = 0.1% with 1,200 (``--documents`` sets other counts); 1, 2 and 5
chunks a document; ``mu`` 0 (no leakage), 1 and 2. Every run calls the interval with 400
bootstrap samples (the audit's number) and a seed of its own.

Printed per cell: the share of runs whose interval holds the true TPR (coverage; 95% is
asked), the shares where the truth lies below the lower end (``low miss``: the interval
overstates the leakage; about 2.5% is asked) and above the upper end (``high miss``), the
mean width, and, from the same bootstrap samples, the low miss of the plain percentile
lower end that the interval had before (its upper end is unchanged). ``--json PATH``
writes a list of rows with ``fpr``, ``documents``, ``chunks``, ``mu``, ``truth``,
``runs``, ``coverage``, ``low_miss``, ``high_miss``, ``width`` and
``percentile_low_miss``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
from scipy import special

from privaudit.metrics.roc import _GroupResamples, tpr_at_fpr_bootstrap_ci

RESAMPLES = 400
CONFIDENCE = 0.95
SIGMA = float(np.sqrt(1.25))  # a chunk's score sd: document effect 1, chunk noise 0.5


def _documents(
    rng: np.random.Generator, documents: int, chunks: int, mu: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    effect = np.concatenate([rng.normal(0.0, 1.0, documents), rng.normal(mu, 1.0, documents)])
    scores = (effect[:, None] + rng.normal(0.0, 0.5, (2 * documents, chunks))).ravel()
    member = np.repeat(np.arange(2 * documents) >= documents, chunks)
    group = np.repeat(np.arange(2 * documents), chunks)
    return scores, member, group


def _cell(fpr: float, documents: int, chunks: int, mu: float, runs: int) -> dict[str, Any]:
    truth = float(1.0 - special.ndtr(special.ndtri(1.0 - fpr) - mu / SIGMA))
    rng = np.random.default_rng([documents, chunks, int(10 * mu), int(1e4 * fpr)])
    low = high = low_pct = 0
    width = 0.0
    key = f"{fpr:g}"
    for run in range(runs):
        s, m, g = _documents(rng, documents, chunks, mu)
        ci = tpr_at_fpr_bootstrap_ci(
            s, m, [fpr], groups=g, confidence=CONFIDENCE, n_resamples=RESAMPLES, seed=run
        )[key]
        assert ci is not None
        lo, hi = ci
        pct = _GroupResamples.draw(s, m, groups=g, n_resamples=RESAMPLES, seed=run)
        lo_pct = float(np.quantile(pct.tprs(fpr), (1.0 - CONFIDENCE) / 2.0))
        low += truth < lo
        high += truth > hi
        low_pct += truth < lo_pct
        width += hi - lo
    return {
        "fpr": fpr,
        "documents": documents,
        "chunks": chunks,
        "mu": mu,
        "truth": truth,
        "runs": runs,
        "coverage": 1.0 - (low + high) / runs,
        "low_miss": low / runs,
        "high_miss": high / runs,
        "width": width / runs,
        "percentile_low_miss": low_pct / runs,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--runs", type=int, default=300)
    ap.add_argument("--fpr", type=float, nargs="+", default=[0.01, 0.001])
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument(
        "--documents",
        type=int,
        nargs="+",
        default=None,
        help="non-member documents a side, for every --fpr (default: the cells above)",
    )
    args = ap.parse_args(argv)
    sizes = {0.01: (150, 400, 1000), 0.001: (1200,)}
    if args.documents:
        sizes = {f: tuple(args.documents) for f in args.fpr}
    rows = []
    t0 = time.perf_counter()
    print(
        "fpr     docs chunks  mu   truth   coverage  low miss  high miss  width   "
        "percentile low miss"
    )
    for fpr in args.fpr:
        for documents in sizes.get(fpr, (int(np.ceil(1.5 / fpr)),)):
            for chunks in (1, 2, 5):
                for mu in (0.0, 1.0, 2.0):
                    r = _cell(fpr, documents, chunks, mu, args.runs)
                    rows.append(r)
                    print(
                        f"{fpr:<7g} {documents:>4} {chunks:>6} {mu:>3g}  {r['truth']:.4f}  "
                        f"{r['coverage']:>8.3f}  {r['low_miss']:>8.3f}  {r['high_miss']:>9.3f}  "
                        f"{r['width']:.4f}  {r['percentile_low_miss']:>8.3f}",
                        flush=True,
                    )
    worst = max(rows, key=lambda r: r["low_miss"])
    print(
        f"\n{len(rows)} cells x {args.runs} runs in {time.perf_counter() - t0:.0f} s; "
        f"coverage {min(r['coverage'] for r in rows):.3f}-{max(r['coverage'] for r in rows):.3f}, "
        f"low miss at most {worst['low_miss']:.3f} (percentile lower end: at most "
        f"{max(r['percentile_low_miss'] for r in rows):.3f})"
    )
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
