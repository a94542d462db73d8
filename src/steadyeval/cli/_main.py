"""``steadyeval`` entry point: a click group; each command lives in its own module."""

from __future__ import annotations

import importlib
import sys
import warnings
from typing import Any

import click

from .. import __version__
from .._errors import SteadyevalDeprecationWarning, SteadyevalError


class _Group(click.Group):
    """Turns steadyeval's own errors into a one-line message and exit code 2."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("always", SteadyevalDeprecationWarning)
                shown = warnings.showwarning

                def show(message: Any, category: type[Warning], *args: Any, **kw: Any) -> None:
                    if issubclass(category, SteadyevalDeprecationWarning):
                        click.echo(f"warning: {message}", err=True)
                    else:
                        shown(message, category, *args, **kw)

                warnings.showwarning = show
                return super().invoke(ctx)
        except SteadyevalError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(2)
        except KeyboardInterrupt:
            click.echo(
                "interrupted: every response received so far is in the cache; "
                "run the same command again to resume",
                err=True,
            )
            sys.exit(130)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="steadyeval")
def main() -> None:
    """Evaluate language models under many conditions; keep every answer; test every claim."""


def _register() -> None:
    from . import _cache, _run, _study, _tiny

    main.add_command(_run.run_cmd)
    main.add_command(_study.study_group)
    main.add_command(_cache.cache_group)
    main.add_command(_tiny.tiny_model_cmd)
    for name in ("report", "compare", "import"):  # added by later modules when present
        try:
            module = importlib.import_module(f"steadyeval.cli._{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"steadyeval.cli._{name}":
                raise
            continue
        main.add_command(module.command)


_register()
