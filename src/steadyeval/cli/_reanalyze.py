"""``steadyeval reanalyze``: recompute a study run's analysis from its results table."""

from __future__ import annotations

from pathlib import Path

import click


@click.command("reanalyze")
@click.argument("run_dir", type=click.Path(path_type=Path))
def command(run_dir: Path) -> None:
    """Recompute the analysis of RUN_DIR (a `steadyeval study` run) from its results.parquet
    and rewrite summary.json and summary.md; no model is called.

    Use it after upgrading steadyeval (a report then shows the analysis this version
    computes without a note) or when summary.json or summary.md were edited or damaged:
    the results table, checked against the run's manifest, is the source. A run writing
    the folder makes it an error; a report already there shows the analysis it was
    written with (`steadyeval report RUN_DIR` writes it again).
    """
    from ..run import REPORT_FILES
    from ..studies import reanalyze

    analysis = reanalyze(run_dir)
    click.echo(
        f"rewrote {run_dir / 'summary.json'} and summary.md from results.parquet "
        f"({type(analysis).__name__}, schema version {analysis.SCHEMA_VERSION})"
    )
    reports = [name for name in REPORT_FILES if (run_dir / name).is_file()]
    if reports:
        click.echo(
            f"{', '.join(reports)} {'shows' if len(reports) == 1 else 'show'} the analysis as "
            "it was when written; "
            f"`steadyeval report {run_dir}` writes the report again"
        )
