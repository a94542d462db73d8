"""``steadyeval reanalyze``: recompute a study run's analysis from its results table."""

from __future__ import annotations

from pathlib import Path

import click

from .._errors import printable
from ._options import PathParam, shell_path

#: The report command that writes each report file a run folder may hold.
_REPORT_FLAGS = {"report.html": "", "report.md": " --format md", "report.json": " --format json"}


@click.command("reanalyze")
@click.argument("run_dir", type=PathParam(path_type=Path))
def command(run_dir: Path) -> None:
    """Recompute the analysis of RUN_DIR (a `steadyeval study` run) from its results.parquet
    and rewrite summary.json and summary.md; no model is called.

    Use it after upgrading steadyeval (a report then shows the analysis this version
    computes without a note), when summary.md or summary.json's analysis were edited or
    damaged, or to finish a reanalyze that was stopped. The sources are the results table
    and the rest of summary.json (the study's design), both checked against the run's
    manifest: an edit there is refused (run the study again; its responses are cached).
    A run writing the folder makes it an error; a report already there shows the analysis
    it was written with (`steadyeval report RUN_DIR` writes it again).
    """
    from ..results import recorded_hashes
    from ..run import is_report
    from ..studies import reanalyze

    # the summary the folder's reports were checked against, before and after
    before = recorded_hashes(run_dir).get("summary.json")
    files = {name: _digest(run_dir / name) for name in ("summary.json", "summary.md")}
    analysis = reanalyze(run_dir)
    click.echo(
        f"rewrote {printable(run_dir / 'summary.json')} and summary.md from results.parquet "
        f"({type(analysis).__name__}, schema version {analysis.SCHEMA_VERSION})"
    )
    repaired = [name for name, was in files.items() if _digest(run_dir / name) != was]
    if recorded_hashes(run_dir).get("summary.json") == before:
        if repaired:
            click.echo(
                f"repaired {' and '.join(repaired)} (changed since the run wrote "
                f"{'them' if len(repaired) > 1 else 'it'}); the analysis is the run's"
            )
        else:
            click.echo("the analysis is unchanged")
        return
    click.echo("the analysis changed (this version computes it otherwise than the one recorded)")
    for name, flags in _REPORT_FLAGS.items():
        if is_report(run_dir / name):  # a file of the user's at that name is left alone
            click.echo(
                f"{name} shows the analysis as it was when written; "
                f"`steadyeval report {shell_path(run_dir)}{flags}` writes it again"
            )


def _digest(path: Path) -> str | None:
    """A summary's sha256 (``None``: missing or unreadable), to tell what reanalyze
    repaired; never a FIFO's wait."""
    from .._files import file_sha256

    try:
        return file_sha256(path) if path.is_file() else None
    except OSError:
        return None
