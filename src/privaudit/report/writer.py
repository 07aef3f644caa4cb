"""Write a report directory atomically: ``results.json``, ``scores.npz``, ``report.html``.

Everything is written into a temporary directory next to the destination and then
renamed into place, so a failed or killed run leaves either the complete earlier
report or nothing, never a half-written one. An existing report is only replaced with
``overwrite=True``.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from privaudit.errors import InvalidInputError
from privaudit.report.results import RESULTS_FILE, SCORES_FILE, ScoreTable, validate_results
from privaudit.runtime import interrupts

__all__ = [
    "HTML_FILE",
    "ReportExistsError",
    "check_output_dir",
    "move_into_place",
    "write_atomically",
    "write_audit_bundle",
    "write_report",
]

HTML_FILE = "report.html"


class ReportExistsError(InvalidInputError):
    """The report directory already exists and ``overwrite`` was not set.

    The message speaks the Python API (``overwrite=True``); :attr:`cli_message` says the
    same in the command line's words (``--overwrite``, ``--out``), and the CLI prints that.

    Attributes
    ----------
    path : Path
        The existing report directory.
    cli_message : str
        The message for the command line.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        found = f"expected a new report directory, found an existing one at {self.path}"
        self.cli_message = f"--out: {found}; add --overwrite to replace it, or choose another --out"
        super().__init__(
            f"out_dir: {found}; pass overwrite=True to replace it, or choose another out_dir"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (ReportExistsError, (self.path,))


def check_output_dir(out_dir: str | Path, *, overwrite: bool = False) -> Path:
    """Check, before any work, that a report can be written to ``out_dir``.

    Raises
    ------
    ReportExistsError
        When ``out_dir`` exists and ``overwrite`` is False (the message names the flag).
    InvalidInputError
        When ``out_dir`` exists and is not a directory.
    """
    out = Path(out_dir).expanduser()
    if out.exists() or out.is_symlink():
        if not out.is_dir():
            raise InvalidInputError(f"out: expected a directory path, found an existing file {out}")
        if not overwrite:
            raise ReportExistsError(out)
    return out


def write_report(
    out_dir: str | Path,
    results: Mapping[str, Any],
    table: ScoreTable,
    *,
    overwrite: bool = False,
    html: bool = True,
    bundle: Mapping[str, Any] | None = None,
    scores_file: str = SCORES_FILE,
    extra_tables: Mapping[str, ScoreTable] | None = None,
    carry: Sequence[str] = (),
    html_context: Mapping[str, Any] | None = None,
) -> Path:
    """Write ``results.json``, ``scores.npz`` and ``report.html`` into ``out_dir``, atomically.

    Parameters
    ----------
    out_dir : path
        The report directory; its parent is created if needed.
    results : mapping
        A ``results.json`` document; validated against the schema before anything is
        written.
    table : ScoreTable
        The per-record scores behind ``results``.
    overwrite : bool
        Replace an existing ``out_dir``. Without it an existing directory raises
        :class:`ReportExistsError` and nothing is touched.
    html : bool
        Also render ``report.html``.
    bundle : mapping, optional
        A manifest from :func:`privaudit.report.bundle.make_manifest`: also write
        ``bundle.json`` with the digests of the files above (a re-verifiable bundle).
    scores_file : str
        The file name of ``table`` (``results["files"]["scores"]`` names it when it is not
        ``scores.npz``, e.g. PANORAMIA's ``panoramia_scores.npz``).
    extra_tables : mapping, optional
        Further score tables by file name (PANORAMIA's ``rmrn_scores.npz``), written and
        bundled beside it.
    carry : sequence of str
        Entries of an existing ``out_dir`` moved into the new one (PANORAMIA's artifact
        store, kept for the next run); not part of the bundle.
    html_context : mapping, optional
        Template variables of a procedure's own section of ``report.html`` (PANORAMIA's
        ``panoramia``), passed to :func:`privaudit.report.html.render_html`.

    Returns
    -------
    Path
        ``out_dir``.
    """
    out = check_output_dir(out_dir, overwrite=overwrite)
    validate_results(results)
    names = {a["name"] for a in results["attacks"]}
    if names != set(table.attacks):
        raise InvalidInputError(
            "table: expected scores of exactly the attacks in results "
            f"({sorted(names)}), found {sorted(table.attacks)}"
        )

    def fill(tmp: Path) -> None:
        text = json.dumps(results, indent=2, allow_nan=False)
        (tmp / RESULTS_FILE).write_text(text + "\n", encoding="utf-8")
        table.save(tmp / scores_file)
        for name, extra in (extra_tables or {}).items():
            extra.save(tmp / name)
        if html:
            from privaudit.report.html import render_html

            (tmp / HTML_FILE).write_text(
                render_html(results, table, context=html_context), encoding="utf-8"
            )
        if bundle is not None:
            from privaudit.report.bundle import write_manifest

            written = [RESULTS_FILE, scores_file, *(extra_tables or {})]
            written += [HTML_FILE] if html else []
            write_manifest(tmp, bundle, written)
        for name in carry:
            if (out / name).exists():
                os.rename(out / name, tmp / name)

    write_atomically(out, fill, overwrite=overwrite, carry=carry)
    return out


def write_atomically(
    out: Path, fill: Callable[[Path], None], *, overwrite: bool, carry: Sequence[str] = ()
) -> None:
    """Fill a temporary folder beside ``out`` with ``fill(tmp)``, then rename it to ``out``.

    On any failure (an interrupt included) the temporary folder is removed and an earlier
    ``out`` is kept; the entries ``carry`` that ``fill`` moved from ``out`` into it (the
    artifact store) are moved back first, never deleted with it.
    """
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        fill(tmp)
        os.chmod(tmp, 0o755)
        move_into_place(tmp, out, overwrite=overwrite)
    except BaseException:
        for name in carry:
            if (tmp / name).exists() and not (out / name).exists():
                out.mkdir(parents=True, exist_ok=True)
                os.rename(tmp / name, out / name)
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def write_audit_bundle(
    out_dir: str | Path,
    result: Mapping[str, Any],
    inputs: Mapping[str, Any],
    *,
    overwrite: bool = False,
) -> Path:
    """Write the bundle of one ``privaudit audit`` bound into ``out_dir``, atomically.

    ``result`` is the bound's JSON document; ``inputs`` holds ``procedure``, ``params``
    (``dataclasses.asdict`` of :class:`privaudit.stats.procedures.ProcedureParams`),
    ``scores``, ``member``, for PANORAMIA ``baseline``, and optionally ``source`` (the
    table read: its sha256 is the bundle's dataset fingerprint).
    """
    from privaudit.report.bundle import (
        file_digest,
        make_manifest,
        write_audit_bundle_files,
        write_manifest,
    )

    out = check_output_dir(out_dir, overwrite=overwrite)

    def fill(tmp: Path) -> None:
        files = write_audit_bundle_files(tmp, result, inputs)
        source = inputs.get("source")
        config = {"procedure": inputs["procedure"], "params": inputs["params"]}
        if source is not None:
            config["source"] = str(source)
        manifest = make_manifest(
            kind="audit",
            command="audit",
            config=config,
            seeds={"held_out_split": inputs["params"].get("seed")},
            dataset_fingerprint=None if source is None else file_digest(Path(source))["sha256"],
        )
        write_manifest(tmp, manifest, files)

    write_atomically(out, fill, overwrite=overwrite)
    return out


def write_text_files(
    out_dir: str | Path, files: Mapping[str, str], *, overwrite: bool = False
) -> Path:
    """Write ``files`` (name -> text) as a new directory ``out_dir``, atomically.

    They are written into a temporary sibling directory and renamed into place
    (:func:`move_into_place`): a failure leaves the earlier directory or nothing.
    """
    out = check_output_dir(out_dir, overwrite=overwrite)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        for name, text in files.items():
            (tmp / name).write_text(text, encoding="utf-8")
        os.chmod(tmp, 0o755)
        move_into_place(tmp, out, overwrite=overwrite)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def move_into_place(tmp: Path, out: Path, *, overwrite: bool) -> None:
    """Rename the finished directory ``tmp`` to ``out``.

    An existing ``out`` is replaced only with ``overwrite`` (re-checked here, since it may
    have appeared meanwhile) and is restored if the final rename fails. Inside a CLI
    command that received SIGINT or SIGTERM nothing is moved
    (:class:`~privaudit.runtime.interrupts.Interrupted`): the figures may rest on a
    model whose trainer swallowed the signal.
    """
    interrupts.check(None, "the report")
    if not (out.exists() or out.is_symlink()):
        os.rename(tmp, out)
        return
    check_output_dir(out, overwrite=overwrite)  # re-check: it may have appeared meanwhile
    backup = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
    backup.rmdir()
    os.rename(out, backup)
    try:
        os.rename(tmp, out)
    except BaseException:
        os.rename(backup, out)
        raise
    shutil.rmtree(backup, ignore_errors=True)
