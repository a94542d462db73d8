"""``steadyeval`` entry point: a click group; each command lives in its own module."""

from __future__ import annotations

import contextlib
import importlib
import signal
import sys
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click

from .._errors import SteadyevalDeprecationWarning, SteadyevalError
from .._version import __version__

# name -> (module, attribute, one-line help). A command's module is imported only when the
# command runs (or its own --help is asked for), so ``steadyeval --help`` stays fast.
COMMANDS: dict[str, tuple[str, str, str]] = {
    "run": ("._run", "run_cmd", "Run items × conditions × models into a results table."),
    "study": (
        "._study",
        "study_group",
        "Run one of the studies (formats, sensitivity, knowledge, ...).",
    ),
    "report": ("._report", "command", "Write a report (HTML, Markdown or JSON) of a run."),
    "reanalyze": (
        "._reanalyze",
        "command",
        "Recompute a study run's analysis from its results table (no model is called).",
    ),
    "compare": ("._compare", "command", "Paired comparison of runs on their shared items."),
    "judge": ("._judge", "command", "Grade a run's generated answers with a judge model."),
    "import": ("._import", "command", "Import lm-eval or Inspect logs as a run directory."),
    "export": (
        "._export",
        "command",
        "Export a run as Inspect AI logs or Every Eval Ever records.",
    ),
    "cache": ("._cache", "cache_group", "Show and manage the response cache."),
    "tiny-model": ("._tiny", "tiny_model_cmd", "Write a tiny random model (for trying things)."),
}


class _Group(click.Group):
    """Turns steadyeval's own errors into a one-line message and exit code 2; loads each
    command's module on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module, attr, _ = COMMANDS[cmd_name]
        command: click.Command = getattr(importlib.import_module(module, __package__), attr)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][2]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def invoke(self, ctx: click.Context) -> Any:
        with _sigterm_as_interrupt() as terminated:
            return self._invoke(ctx, terminated)

    def _invoke(self, ctx: click.Context, terminated: list[bool]) -> Any:
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
            _tell(f"error: {_said(exc)}")
            sys.exit(2)
        except ValueError as exc:  # steadyeval.stats's own input errors (it imports no project)
            stats = sys.modules.get("steadyeval.stats._errors")
            if stats is None or not isinstance(exc, stats.StatsInputError):
                raise
            _tell(f"error: {_said(exc)}")
            sys.exit(2)
        except OSError as exc:  # a write the disk refused outside steadyeval's own writers
            from .._json import storage_error

            error = storage_error(exc, exc.filename or "a file")
            if error is None:
                raise
            _tell(f"error: {_said(error)}")
            sys.exit(2)
        except KeyboardInterrupt:
            said = "terminated" if terminated else "interrupted"
            if ctx.invoked_subcommand in _SENDS:
                said += (
                    ": every response received so far is in the cache; run the same command "
                    "again to resume"
                )
            elif ctx.invoked_subcommand == "reanalyze":
                said += ": the run stays readable; run the same command again to finish"
            _tell(said)
            sys.exit(143 if terminated else 130)


def _tell(text: str) -> None:
    """An error line on stderr; a stderr that cannot take it (closed, a full disk) loses
    only the line: the exit status still says what happened."""
    with contextlib.suppress(OSError, ValueError):  # ValueError: a closed file
        click.echo(text, err=True)


def _said(exc: BaseException) -> str:
    """An error's message for the terminal: its lines kept, any other character that does
    not print (an escape in a file name the message quotes) escaped."""
    from .._errors import printable

    return "\n".join(printable(line) for line in str(exc).split("\n"))


#: The commands that send requests to models (their responses are cached as they come).
_SENDS = frozenset({"run", "study", "judge"})


@contextmanager
def _sigterm_as_interrupt() -> Iterator[list[bool]]:
    """SIGTERM (``kill``, a scheduler's time limit) stops a command as Ctrl-C does: the
    cache keeps what was received, the message says how to resume, the exit code is 143.
    Yields a list that is non-empty once SIGTERM arrived; the old handler comes back after."""
    got: list[bool] = []

    def handler(signum: int, frame: Any) -> None:
        got.append(True)
        raise KeyboardInterrupt

    if threading.current_thread() is not threading.main_thread():
        yield got
        return
    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield got
    finally:
        signal.signal(signal.SIGTERM, previous)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="steadyeval")
@click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "warning", "error"], case_sensitive=False),
    default="info",
    show_default=True,
    envvar="STEADYEVAL_LOG_LEVEL",
    help="Least severe log lines printed on stderr (also $STEADYEVAL_LOG_LEVEL).",
)
@click.option("-v", "--verbose", is_flag=True, help="Debug log lines (as --log-level debug).")
@click.option(
    "-q",
    "--quiet",
    is_flag=True,
    help="Only warnings and errors on stderr, and no progress (as --log-level warning).",
)
@click.pass_context
def main(ctx: click.Context, log_level: str, verbose: bool, quiet: bool) -> None:
    """Evaluate language models under many conditions; keep every answer; test every claim.

    Log lines (progress in batch jobs, models loading, retries) go to stderr; results to
    stdout. -v and -q override --log-level.
    """
    if verbose and quiet:
        raise click.UsageError("-v/--verbose and -q/--quiet cannot be given together")
    from .._log import LEVELS, configure

    level = "debug" if verbose else "warning" if quiet else log_level.lower()
    ctx.call_on_close(configure(LEVELS[level]))  # undone when the command ends
