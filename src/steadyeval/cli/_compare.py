"""``steadyeval compare``: paired comparison of runs or models on shared items."""

from __future__ import annotations

import io
import json
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from .._errors import ConfigError, printable
from ._options import PathParam

if TYPE_CHECKING:
    from rich.console import Console

    from ..compare import Comparison, ConditionDifference, OverFormats


def _pct(x: float) -> str:
    return "–" if math.isnan(x) else f"{100 * x:.1f}%"


def _p(x: float) -> str:
    return "–" if math.isnan(x) else ("<0.001" if x < 0.001 else f"{x:.3f}")


#: What the difference column says when A and B agree on every unit (a zero-width interval
#: around +0.0 pp would read as certainty; the data say nothing about a difference).
NO_DISCORDANT = "no discordant pairs"


def _diff(r: ConditionDifference) -> str:
    if math.isnan(r.difference):
        return "–"
    if r.n and not r.discordant:
        return NO_DISCORDANT
    head = f"{100 * r.difference:+.1f} pp"
    if math.isnan(r.low):
        return head
    return f"{head} [{100 * r.low:+.1f}, {100 * r.high:+.1f}]"


def print_comparison(console: Console, comp: Comparison) -> None:
    """Rich tables: the arms, then one table per pair (B vs the baseline A). Run, model and
    condition names are the user's text: printed as :class:`~rich.text.Text`, never parsed
    as rich markup (a name such as ``mc[/]`` or ``[link=...]`` prints as it is)."""
    from rich.table import Table
    from rich.text import Text

    arms = Table(title="arms", show_lines=False)
    for col in ("arm", "run", "model"):
        arms.add_column(col)
    for arm in comp.arms:
        arms.add_row(Text(arm.label), Text(printable(arm.run)), Text(arm.model))
    console.print(arms)
    conf = f"{100 * comp.confidence:g}%"
    for pair in comp.pairs:
        a, b = pair.a.label, pair.b.label
        t = Table(
            title=Text(
                f"{b} − {a} on {comp.outcome}"
                + (f" (SE clustered by {comp.cluster})" if comp.cluster else "")
            )
        )
        for col, just in (
            ("condition", "left"),
            ("n", "right"),
            (a, "right"),
            (b, "right"),
            (f"Δ {b}−{a} [{conf} CI]", "right"),
            ("p (z)", "right"),
            (f"only {a}/{b}", "right"),
            ("McNemar p", "right"),
            ("Holm p", "right"),
        ):
            t.add_column(Text(col), justify=just)  # type: ignore[arg-type]
        rows = list(pair.conditions) + ([pair.overall] if pair.overall else [])
        for r in rows:
            t.add_row(
                Text(r.condition),
                str(r.n),
                _pct(r.accuracy_a),
                _pct(r.accuracy_b),
                _diff(r),
                _p(r.pvalue),
                f"{r.only_a}/{r.only_b}",
                _p(r.mcnemar_p),
                _p(r.holm_p),
            )
        console.print(t)
        for w in pair.warnings:
            console.print(Text.assemble(("warning:", "yellow"), " ", w), highlight=False)


@click.command("compare")
@click.argument("runs", nargs=-1, required=True, type=PathParam(path_type=Path))
@click.option(
    "--model",
    "models",
    multiple=True,
    metavar="MODEL",
    help="Keep only this model (repeat for several).",
)
@click.option(
    "--outcome",
    type=click.Choice(["correct", "refused"]),
    default="correct",
    show_default=True,
    help="The 0/1 column compared.",
)
@click.option(
    "--cluster",
    metavar="KEY",
    help="Cluster the SE by a column (e.g. subject) or a metadata key (e.g. paragraph).",
)
@click.option(
    "--confidence",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.95,
    show_default=True,
    help="Coverage of the intervals (between 0 and 1).",
)
@click.option(
    "--over",
    type=click.Choice(["conditions", "formats"]),
    default="conditions",
    show_default=True,
    help="conditions: paired tests per condition; formats: runs of the spread (or "
    "decide) study compared over their population of formats (a crossed model of model, format and item).",
)
@click.option(
    "--rank",
    is_flag=True,
    help="With --over formats: the probability of each ranking of the models.",
)
@click.option(
    "--draws",
    type=click.IntRange(50),
    help="With --over formats: posterior draws (default: the first run's).",
)
@click.option(
    "--seed",
    type=int,
    help="With --over formats: seed of the draws (default: the first run's).",
)
@click.option(
    "--json",
    "json_out",
    type=PathParam(dir_okay=False, allow_dash=True),  # text: Path("./-") reads as "-"
    help="Also write the comparison as JSON to this file; - writes it to stdout and the "
    "tables to stderr (./- is a file named -).",
)
def command(
    runs: tuple[Path, ...],
    models: tuple[str, ...],
    outcome: str,
    cluster: str | None,
    confidence: float,
    over: str,
    rank: bool,
    draws: int | None,
    seed: int | None,
    json_out: str | None,
) -> None:
    """Paired comparison of RUN_A RUN_B [...] on the items and conditions they share.

    Units are joined on (item_id, condition, sample_index); the model may differ;
    several samples of an item are averaged into one unit per item. Every
    (run, model) is an arm and each arm is compared with the first: per condition B − A
    with its paired SE and interval, McNemar's exact test and Holm's adjustment across
    conditions. Warns when items (item_hash) or prompts (prompt_hash) differ.

    With --over formats, RUN_A RUN_B [...] are runs of the spread or decide study on
    one population of formats (one run with two models will do): the comparison holds for the formats not tried (how
    much B beats A over all formats, on what share of them, where the ranking
    flips; with --rank, the probability of each ranking).

    \b
    Examples:
      steadyeval compare runs/gpt2 runs/pythia --cluster paragraph --json cmp.json
      steadyeval compare runs/spread-a runs/spread-b --over formats
      steadyeval compare runs/spread-a runs/spread-b runs/spread-c --over formats --rank
    """
    from rich.console import Console

    from ._options import output_file

    to_stdout = json_out == "-"
    json_path = None if json_out is None or to_stdout else output_file(json_out, "--json")
    from ..run import in_a_run_folder

    if json_path is not None and in_a_run_folder(json_path):
        raise ConfigError(
            f"--json {printable(json_path)}: is a file of a run folder (its results, summaries, "
            "manifest, marker or reports); write the comparison elsewhere"
        )
    if to_stdout and sys.stdout is None:  # started with stdout closed (`>&-`)
        raise ConfigError("--json -: stdout is closed; give a file to write instead")
    # a pipe or file gets wide tables; a terminal gets its own width. With --json -, stdout
    # holds the JSON alone (for jq and the like), written before the tables go to stderr (a
    # closed or full stderr loses only the tables); a closed stream (`>&-`, `2>&-`) gets none
    stream = sys.stderr if to_stdout else sys.stdout
    if stream is None:
        console = Console(file=io.StringIO())
    else:
        console = Console(file=stream) if stream.isatty() else Console(file=stream, width=160)
    if over == "formats":
        result = _over_formats(runs, models, outcome, cluster, confidence, draws, seed)
        from ._compare_formats import print_over_formats

        if to_stdout:
            _write_json(json_path, result.to_dict(), to_stdout=True)
        print_over_formats(console, result, rank=rank)
        if not to_stdout:
            _write_json(json_path, result.to_dict(), to_stdout=False)
        return
    for flag, value in (("--rank", rank), ("--draws", draws), ("--seed", seed)):
        if value:
            raise click.UsageError(f"{flag} goes with --over formats")
    from ..compare import compare_runs

    comp = compare_runs(
        list(runs),
        models=list(models) or None,
        outcome=outcome,
        cluster=cluster,
        confidence=confidence,
    )
    if to_stdout:
        _write_json(json_path, comp.to_dict(), to_stdout=True)
    print_comparison(console, comp)
    if not to_stdout:
        _write_json(json_path, comp.to_dict(), to_stdout=False)


def _over_formats(
    runs: tuple[Path, ...],
    models: tuple[str, ...],
    outcome: str,
    cluster: str | None,
    confidence: float,
    draws: int | None,
    seed: int | None,
) -> OverFormats:
    if outcome != "correct":
        raise click.UsageError("--over formats compares accuracy (--outcome correct)")
    if cluster:
        raise click.UsageError(
            "--cluster does not go with --over formats (items and formats are random "
            "effects of its model)"
        )
    from ..compare import compare_over_formats

    return compare_over_formats(
        list(runs), models=list(models) or None, confidence=confidence, draws=draws, seed=seed
    )


def _write_json(json_path: Path | None, data: object, *, to_stdout: bool) -> None:
    """The comparison as JSON, to ``json_path`` or stdout (or nowhere: neither given)."""
    text = json.dumps(data, indent=2) + "\n"
    if to_stdout:
        click.echo(text, nl=False)
        return
    if json_path is None:
        return
    from .._json import write_text_atomic

    json_path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(json_path, text)
    click.echo(f"wrote {printable(json_path)}")
