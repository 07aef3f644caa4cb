"""``privaudit verify BUNDLE``: recompute every metric and bound of a bundle.

Exit codes: 0 every recomputed value matches, 1 some value (or a file digest) differs,
2 the bundle cannot be read.
"""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from privaudit.cli.verification import verify_bundle
from privaudit.cli_common.errors import error_line
from privaudit.errors import PrivauditError

__all__ = ["verify", "verify_bundle"]


def verify(
    bundle: Path = typer.Argument(
        ...,
        help="A report folder holding bundle.json (from run, demo or audit --out), or the file.",
    ),
    show_all: bool = typer.Option(
        False, "--all", help="List every check, not only mismatches and what was not recomputed."
    ),
) -> None:
    """Recompute every metric and bound in BUNDLE from its saved scores and compare.

    Needs neither the model nor the data: the scores, membership, seeds and settings in the
    bundle suffice. Exit 1 on any mismatch (a tampered score file, an edited result).
    """
    try:
        report = verify_bundle(bundle)
    except PrivauditError as exc:
        print(error_line(exc), file=sys.stderr)
        raise typer.Exit(2) from None
    out = sys.stdout
    for c in report.checks:
        if show_all or c.status != "ok":
            detail = f": {c.detail}" if c.detail else ""
            print(f"{c.status:>16}  {c.name}{detail}", file=out)
    print(
        f"{report.kind} bundle {report.folder}: {report.count('ok')} values match, "
        f"{report.count('mismatch')} mismatch, {report.count('not-recomputable')} not recomputable "
        "(need the model or the data)",
        file=out,
    )
    if not report.ok:
        print(
            "verify: MISMATCH: the bundle's results do not follow from its scores", file=sys.stderr
        )
        raise typer.Exit(1)
    print("verify: OK", file=out)
