"""``steadyeval tiny-model``."""

from __future__ import annotations

from pathlib import Path

import click

from .._errors import printable
from .._limits import MAX_SEED
from ..models import TINY_ARCHS
from ._options import PathParam


@click.command("tiny-model")
@click.argument("directory", type=PathParam(file_okay=False, path_type=Path))
@click.option(
    "--arch",
    type=click.Choice(list(TINY_ARCHS)),
    default="gpt2",
    show_default=True,
    help="Architecture of the tiny model.",
)
@click.option(
    "--seed",
    type=click.IntRange(0, MAX_SEED),  # the library's bound; click's error names --seed
    default=0,
    show_default=True,
    help="Seed of the random weights.",
)
@click.option(
    "--overwrite",
    is_flag=True,
    help="Replace a tiny model written there before (never a folder without one).",
)
def tiny_model_cmd(directory: Path, arch: str, seed: int, overwrite: bool) -> None:
    """Write a tiny RANDOMLY INITIALISED model and its tokenizer to DIRECTORY.

    A smoke-test tool for pipelines (loadable with the transformers Auto classes); its
    answers mean nothing. It is not a real model.
    """
    from ..models import build_tiny_model

    path = build_tiny_model(directory, arch, seed=seed, overwrite=overwrite)  # type: ignore[arg-type]
    click.echo(f"wrote a tiny random {arch} model to {printable(path)} (for smoke tests only)")
