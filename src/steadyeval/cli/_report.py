"""``steadyeval report``: one self-contained HTML (or Markdown, JSON) report of a run."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, cast

import click

from ..reports import ReportOptions
from ._options import PathParam

if TYPE_CHECKING:
    from ..reports import ReportFormat


@click.command("report")
@click.argument("run_dir", type=PathParam(file_okay=False, path_type=Path))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["html", "md", "json"]),
    default="html",
    show_default=True,
    help="Output format; all three hold the same numbers.",
)
@click.option(
    "--output",
    "-o",
    type=PathParam(dir_okay=False, allow_dash=True),  # text: Path("./-") reads as "-"
    help="File to write (default: RUN_DIR/report.<format>); - writes the report to stdout "
    "(./- is a file named -).",
)
@click.option(
    "--max-rows",
    type=click.IntRange(min=1),
    default=ReportOptions.max_item_rows,
    show_default=True,
    help="Most per-item rows in the report; larger runs show every row of random items.",
)
@click.option(
    "--max-chars",
    type=click.IntRange(min=1),
    default=ReportOptions.max_chars,
    show_default=True,
    help="Prompts, options, outputs and parsed answers in the per-item table and its "
    "drill-down are cut to this many characters (a prompt keeps its start and end).",
)
@click.option(
    "--seed",
    type=int,
    default=ReportOptions.seed,
    show_default=True,
    help="Seed for bootstrap intervals and for sampled rows and examples.",
)
def command(
    run_dir: Path, fmt: str, output: str | None, max_rows: int, max_chars: int, seed: int
) -> None:
    """Write a report of RUN_DIR (a `steadyeval run`, study or import directory).

    The HTML report is one file that needs no network: headline table with intervals,
    accuracy bars, agreement matrices with McNemar p-values (and the noise floor when the
    run defines one), spread across conditions, reliability diagrams, accuracy vs shots,
    the study's own sections and a searchable, sortable per-item table with filters
    (condition, outcome, flipped between two conditions) whose rows open a drill-down: the
    prompt, the options in the order shown with their log-probabilities, the gold answer,
    the output and how it was parsed, and the same item under every other condition.

    \b
    Example:
      steadyeval report runs/quickstart
      steadyeval report runs/quickstart --max-chars 2000   # whole prompts
      steadyeval report runs/quickstart --format md -o report.md
      steadyeval report runs/quickstart --format json -o - | jq .title
    """
    from .._errors import ConfigError, printable
    from ..reports import write_report
    from ._options import output_file, write_problem

    options = ReportOptions(max_item_rows=max_rows, max_chars=max_chars, seed=seed)
    if output == "-":  # stdout, as other tools read "-" (./- is a file named -)
        import sys

        from ..reports import build_report, render

        if sys.stdout is None:  # started with stdout closed (`>&-`): echo would drop it
            raise ConfigError("--output -: stdout is closed; give a file to write instead")

        text = render(build_report(run_dir, options), cast("ReportFormat", fmt))
        click.echo(text, nl=not text.endswith("\n"))
        return
    # a bad path is refused before the work; a link is written through to its target
    out = None if output is None else output_file(output, "--output")
    if out is None and run_dir.is_dir():  # the default path: say so, and how to choose another
        problem = write_problem(run_dir / f"report.{fmt}", "--output", folder=False)
        if problem is not None:
            raise ConfigError(
                f"{problem[0]} (the default report path); choose another with --output"
            )
    path = write_report(run_dir, fmt=cast("ReportFormat", fmt), output=out, options=options)
    click.echo(f"wrote {printable(path)} ({path.stat().st_size / 1024:.0f} KiB)")
