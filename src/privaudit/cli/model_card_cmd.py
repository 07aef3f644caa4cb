"""``privaudit model-card results.json``: a Hugging Face model-card section of an audit."""

from __future__ import annotations

from pathlib import Path

import typer

from privaudit.errors import PrivauditError


def model_card_command(
    results: Path = typer.Argument(
        ..., help="An audit's results.json (or its report folder).", show_default=False
    ),
    out: Path | None = typer.Option(
        None, "--out", help="The markdown file to write (default: model_card.md beside it)."
    ),
    model_name: str | None = typer.Option(
        None,
        "--model-name",
        help="The audited model's name in the card (default: the model file's name, or "
        "'<model kind> on <dataset>').",
    ),
) -> None:
    """Write a Hugging Face model-card section (metadata and markdown) from RESULTS."""
    from privaudit.report.model_card import write_model_card

    try:
        path = write_model_card(results, out, model_name=model_name)
    except PrivauditError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    except OSError as exc:
        typer.echo(f"error: --out: cannot write the model card ({exc})", err=True)
        raise typer.Exit(2) from None
    typer.echo(
        f"Model card written to {path}: merge it into the model's README.md on the Hugging "
        "Face Hub (its front matter into the card's metadata block)"
    )
