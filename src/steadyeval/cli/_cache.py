"""``steadyeval cache info|clear``."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from .._errors import ConfigError
from ..cache import ResponseCache, default_cache_path
from ._options import PathParam, cache_help

_CACHE_OPT = click.option(
    "--cache",
    type=PathParam(path_type=Path),  # a folder or FIFO is refused by ResponseCache, in one line
    help=cache_help(),
)


@click.group("cache")
def cache_group() -> None:
    """Show and manage the response cache."""


@cache_group.command("info")
@_CACHE_OPT
def info_cmd(cache: Path | None) -> None:
    """Size of the cache and entries per model."""
    path = cache or default_cache_path()
    if not path.exists():
        click.echo(f"{path}: no cache yet")
        return
    with ResponseCache(path) as store:
        info = store.info()
    click.echo(f"{info.path}: {info.entries} responses, {info.size_bytes / 1e6:.2f} MB")
    for model, n in info.per_model.items():
        click.echo(f"  {n:>8}  {model}")


@cache_group.command("clear")
@_CACHE_OPT
@click.option("--model", help="Delete only this model's responses (as `cache info` lists it).")
@click.option(
    "--yes", is_flag=True, help="Do not ask for confirmation (required without a terminal)."
)
def clear_cmd(cache: Path | None, model: str | None, yes: bool) -> None:
    """Delete cached responses (all, or one model's)."""
    path = cache or default_cache_path()
    if not path.exists():
        click.echo(f"{path}: no cache yet")
        return
    what = f"responses of {model}" if model else "all responses"
    if not yes:
        if sys.stdin is None or not sys.stdin.isatty():  # nobody to answer (a script, a job)
            raise ConfigError(
                f"cache clear asks before deleting {what}, and this session is not "
                "interactive (stdin is not a terminal): pass --yes to delete without asking"
            )
        click.confirm(f"Delete {what} from {path}?", abort=True)
    with ResponseCache(path) as store:
        n = store.clear(model)
    click.echo(f"deleted {n} responses")
