"""What every command that runs models shares: the ``--out``, ``--cache``, ``--dry-run`` and
``--no-progress`` options, and the one printer of a dry run's counts and a run's footer."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from ..run import PlanCounts

__all__ = ["check_out", "echo_counts", "echo_footer", "run_options", "shared_options"]

F = TypeVar("F", bound=Callable[..., Any])


def shared_options(*, out_required: bool = False) -> list[click.Option]:
    """``--out``, ``--cache``, ``--dry-run`` and ``--no-progress``, in that order."""
    return [
        click.Option(
            ["--out"],
            type=click.Path(file_okay=False, path_type=Path),
            required=out_required,
            help="Run directory to write (results.parquet, summary.json, summary.md, ...).",
        ),
        click.Option(
            ["--cache"],
            type=click.Path(dir_okay=False, path_type=Path),
            help="Response cache file (default: $STEADYEVAL_CACHE, else "
            "~/.cache/steadyeval/responses.sqlite).",
        ),
        click.Option(["--dry-run"], is_flag=True, help="Print the plan's counts; call no model."),
        click.Option(["--no-progress"], is_flag=True, help="Do not show the progress bar."),
    ]


def run_options(*, out_required: bool = False) -> Callable[[F], F]:
    """A decorator adding :func:`shared_options` to a click command function."""

    def decorate(f: F) -> F:
        params = f.__dict__.setdefault("__click_params__", [])
        params.extend(reversed(shared_options(out_required=out_required)))
        return f

    return decorate


def check_out(out: Path | None, dry_run: bool) -> None:
    if not dry_run and out is None:
        raise click.UsageError("--out RUN_DIR is required (or use --dry-run)")


def echo_counts(c: PlanCounts) -> None:
    """What a dry run would cost, on one line."""
    click.echo(
        f"dry run: {c.rows} rows, {c.requests} requests, {c.unique_requests} unique, "
        f"{c.cache_hits} cached, {c.to_send} to send, {c.skipped} skipped (item, condition) "
        f"pairs; {c.input_tokens} input tokens to send"
        + (" (estimated)" if c.input_tokens_estimated else "")
    )


def echo_footer(summary: Mapping[str, Any], run_dir: Path | None) -> None:
    """The counts of a finished run and what it wrote."""
    plan = summary["plan"]
    click.echo(
        f"{summary['n_rows']} rows; {plan['unique']} unique requests: "
        f"{plan['cache_hits']} cached, {plan['model_calls']} sent"
    )
    if run_dir is not None:
        click.echo(f"wrote {run_dir}/results.parquet, summary.json, summary.md")
