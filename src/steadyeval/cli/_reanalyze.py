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
    the results table, checked against the run's manifest, is the source.
    """
    from ..studies import reanalyze

    analysis = reanalyze(run_dir)
    click.echo(
        f"rewrote {run_dir / 'summary.json'} and summary.md from results.parquet "
        f"({type(analysis).__name__}, schema version {analysis.SCHEMA_VERSION})"
    )
