"""``--format json|junit|sarif`` and ``--claimed-epsilon`` of ``audit`` and ``run``.

The documents come from :mod:`privaudit.report.ci_formats`; this module checks the
options before any work, writes the document (stdout, or ``--format-file``) and turns
the verdict into the exit code (1 when a bound exceeds the claim). An entry that holds no
valid eps lower bound (PANORAMIA's eps_tilde) is never a violation: with a claim it is
named on stderr as not checked.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from privaudit.report.ci_formats import Gate

# The report layer (and NumPy behind it) is imported inside the functions: this module is
# imported by the commands' modules, which `privaudit --help` imports (start-up time).

FORMAT_HELP = (
    "Output format: text (the human table) | json | junit | sarif. A machine format goes "
    "to stdout (or --format-file) and the exit code is 1 when a bound exceeds "
    "--claimed-epsilon (never on a figure that is not an eps lower bound, such as "
    "PANORAMIA's eps_tilde)."
)
FORMAT_FILE_HELP = "Write the --format document to this file instead of stdout."


def check_options(fmt: str, claimed: float | None, format_file: Path | None) -> str:
    """Validate ``--format``, ``--claimed-epsilon`` and ``--format-file`` (before any work)."""
    from privaudit._validation import fail
    from privaudit.report.ci_formats import FORMATS

    f = fmt.strip().lower()
    if f not in FORMATS:
        raise fail("--format", "one of " + ", ".join(FORMATS), repr(fmt))
    if claimed is not None and not (math.isfinite(claimed) and claimed >= 0):
        raise fail("--claimed-epsilon", "a finite number >= 0", claimed)
    if format_file is not None:
        if f == "text":
            raise fail("--format-file", "a machine --format (json, junit or sarif)", "text")
        if format_file.is_dir():
            raise fail("--format-file", "a file path", f"the directory {format_file}")
        if not format_file.parent.is_dir():
            raise fail("--format-file", "a path in an existing folder", str(format_file))
    return f


def human_output_wanted(fmt: str, format_file: Path | None) -> bool:
    """The human table is printed unless a machine document takes stdout."""
    return fmt == "text" or format_file is not None


def emit(
    fmt: str,
    command: str,
    gates: Sequence[Gate],
    claimed: float | None,
    result: Mapping[str, Any],
    *,
    artifact: Path,
    format_file: Path | None,
) -> int:
    """Write the machine document (if any), report a violation on stderr; return the exit code."""
    from privaudit.report.ci_formats import any_violation, render

    if fmt != "text":
        doc = render(fmt, command, gates, claimed, result, artifact_uri=artifact.as_posix())
        if format_file is None:
            sys.stdout.write(doc + "\n")
            sys.stdout.flush()
        else:
            tmp = format_file.with_name(format_file.name + ".tmp")
            try:
                tmp.write_text(doc + "\n", encoding="utf-8")
                tmp.replace(format_file)
            except OSError as exc:
                tmp.unlink(missing_ok=True)
                typer.echo(f"error: --format-file: cannot write {format_file} ({exc})", err=True)
                return 2
    if claimed is not None:
        for g in gates:
            if not g.gated:
                typer.echo(f"not checked: {g.describe(claimed)}", err=True)
    if any_violation(gates, claimed):
        for g in gates:
            if g.violated(claimed):
                typer.echo(f"violation: {g.describe(claimed)}", err=True)
        return 1
    return 0
