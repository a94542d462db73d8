"""``steadyeval export``: a run folder as Inspect AI logs or Every Eval Ever records."""

from __future__ import annotations

from pathlib import Path

import click

from .._errors import printable
from ._options import PathParam


@click.command("export")
@click.argument("run_dir", type=PathParam(path_type=Path))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["inspect", "eee"]),
    default="inspect",
    show_default=True,
    help="inspect: one Inspect AI .eval log per (model, condition); eee: Every Eval Ever "
    "records (aggregate JSON and instance-level JSONL per model).",
)
@click.option(
    "--out",
    type=PathParam(path_type=Path),
    help="Folder to write into (created if needed), or for inspect a .eval file when the run "
    "holds one model and condition.  [default: beside RUN_DIR: RUN_DIR-inspect or RUN_DIR-eee]",
)
@click.option(
    "--overwrite",
    is_flag=True,
    help="Replace files the export would write that exist; without it they are refused and "
    "nothing is written.",
)
@click.option(
    "--benchmark",
    metavar="NAME",
    help="eee: the benchmark (collection) folder under data/ (default: the run folder's name).",
)
def command(
    run_dir: Path, fmt: str, out: Path | None, overwrite: bool, benchmark: str | None
) -> None:
    """Export RUN_DIR (a finished `steadyeval run`, study or import folder) in another tool's
    format: every row, answer and verdict.

    \b
    Example:
      steadyeval export runs/quickstart --out runs/quickstart-inspect
      inspect view --log-dir runs/quickstart-inspect
      steadyeval export runs/quickstart --format eee --out eee-records
    """
    from ..results import ExportOptions, export_run

    options = ExportOptions(format=fmt, overwrite=overwrite, benchmark=benchmark)  # type: ignore[arg-type]
    done = export_run(run_dir, out, options)
    for note in done.notes:
        click.echo(f"note: {note}", err=True)
    where = done.files[0].parent if len(done.files) == 1 else _common_folder(done.files)
    click.echo(
        f"wrote {done.rows} rows to {len(done.files)} file(s) ({done.format}) in {printable(where)}"
    )
    for path in done.files:  # a run name's control characters never reach the terminal
        click.echo(f"  {printable(path)}")


def _common_folder(paths: tuple[Path, ...]) -> Path:
    import os

    return Path(os.path.commonpath([str(p.parent) for p in paths]))
