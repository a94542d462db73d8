"""``steadyeval import``: other tools' logs into a steadyeval run directory."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import click

from .._errors import printable
from ._options import PathParam

if TYPE_CHECKING:
    from ..results import ImportedRun

_OUT = click.option(
    "--out",
    required=True,
    type=PathParam(file_okay=False, path_type=Path),
    help="Run directory to write (results.parquet, summary.json, summary.md).",
)
_MAP = click.option(
    "--condition-map",
    "condition_map",
    multiple=True,
    metavar="SOURCE=CONDITION",
    help="Name a task's (or log file's) condition; repeat for several.",
)
_MODEL = click.option("--model", metavar="NAME", help="Model name for every row.")
_OVERWRITE = click.option(
    "--overwrite",
    is_flag=True,
    help="Replace a run folder that holds another run (its files are deleted); without it "
    "such a folder is refused. Importing the same logs again rewrites the same run.",
)


def _done(run: ImportedRun, out: Path, overwrite: bool) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from ..results import write_imported_run
    from ..run import claim_run_dir, locked_run_dir

    with locked_run_dir(out):  # the run folder rules of `run` and the studies
        claim_run_dir(out, str(run.summary["run_id"]), overwrite=overwrite)
        write_imported_run(run, out)
    s = run.summary
    t = Table(title=Text(f"imported from {s['imported']['tool']}: run {s['run_id']}"))
    status = {g["condition"]: g["status"] for g in s["imported"].get("logs", [])}
    extra = ["errored"] if any(r.get("errored") for r in s["by_condition"]) else []
    extra += ["status"] if set(status.values()) - {"success"} else []
    for col in ("model", "condition", "n", "accuracy", "95% CI", *extra):
        t.add_column(col, justify="left" if col in ("model", "condition") else "right")
    for r in s["by_condition"]:
        acc = r["accuracy"]
        ok = acc == acc
        more = {"errored": str(r.get("errored", 0)), "status": status.get(r["condition"], "")}
        t.add_row(
            # the user's names: Text, never parsed as rich markup ([/], [link=...])
            Text(str(r["model"])),
            Text(str(r["condition"])),
            str(r["n"]),
            f"{100 * acc:.1f}%" if ok else "–",
            f"{100 * r['accuracy_low']:.1f}–{100 * r['accuracy_high']:.1f}%" if ok else "–",
            *(more[c] for c in extra),
        )
    Console().print(t)
    for note in s["imported"].get("notes", []):
        click.echo(f"note: {note}", err=True)
    click.echo(
        f"{s['n_rows']} rows, {s['n_items']} items from {s['imported']['files']} file(s); "
        f"wrote {printable(out)}/results.parquet, summary.json, summary.md"
    )


@click.group("import")
def command() -> None:
    """Import another tool's per-sample logs as a run directory, so every steadyeval
    analysis (report, compare, studies' statistics) applies to it."""


@command.command("lm-eval")
@click.argument("paths", nargs=-1, required=True, type=PathParam(path_type=Path))
@_OUT
@_OVERWRITE
@_MAP
@_MODEL
@click.option(
    "--item-id",
    "item_id",
    metavar="FIELD",
    help="doc field holding the item id (default: lm-eval's doc_id).",
)
@click.option(
    "--metric",
    metavar="NAME",
    help="0/1 metric that fills 'correct' (default acc, or exact_match).",
)
def lm_eval_cmd(
    paths: tuple[Path, ...],
    out: Path,
    overwrite: bool,
    condition_map: tuple[str, ...],
    model: str | None,
    item_id: str | None,
    metric: str | None,
) -> None:
    """Import lm-evaluation-harness --log_samples files (samples_*.jsonl, or folders).

    \b
    Example:
      lm_eval --model hf --model_args pretrained=gpt2 --tasks arc_easy \\
              --log_samples --output_path lm-out
      steadyeval import lm-eval lm-out --out runs/arc --condition-map arc_easy=zero-shot
    """
    from ..results import LmEvalImportOptions, import_lmeval, parse_condition_map
    from ._options import check_writable

    check_writable(out)
    opts = LmEvalImportOptions(
        condition_map=parse_condition_map(condition_map),
        model=model,
        item_id_field=item_id,
        metric=metric,
    )
    _done(import_lmeval(list(paths), opts), out, overwrite)


@command.command("inspect")
@click.argument("paths", nargs=-1, required=True, type=PathParam(path_type=Path))
@_OUT
@_OVERWRITE
@_MAP
@_MODEL
@click.option(
    "--scorer",
    metavar="NAME",
    help="Which score fills 'correct' (default: each sample's first score).",
)
@click.option(
    "--item-scope",
    "item_scope",
    multiple=True,
    metavar="TASK=SCOPE",
    help="Pair tasks that ask the same samples: give them one scope (item ids are "
    "SCOPE/<sample id>; by default each task is its own scope). Repeat for several.",
)
@click.option(
    "--allow-unfinished",
    is_flag=True,
    help="Import the samples of logs whose eval failed, was cancelled or never ended "
    "(status error, cancelled, started); without it such a log is refused.",
)
def inspect_cmd(
    paths: tuple[Path, ...],
    out: Path,
    overwrite: bool,
    condition_map: tuple[str, ...],
    model: str | None,
    scorer: str | None,
    item_scope: tuple[str, ...],
    allow_unfinished: bool,
) -> None:
    """Import Inspect AI logs (.eval or .json files, or folders of them, eval-set
    folders too).

    \b
    Example:
      steadyeval import inspect logs/ --out runs/inspect --scorer choice
      steadyeval import inspect logs/ --out runs/cot --item-scope arc=arc --item-scope arc_cot=arc
    """
    from ..results import InspectImportOptions, import_inspect, parse_condition_map
    from ._options import check_writable

    check_writable(out)
    opts = InspectImportOptions(
        condition_map=parse_condition_map(condition_map),
        model=model,
        scorer=scorer,
        item_scope=parse_condition_map(item_scope, "TASK=SCOPE, e.g. arc_cot=arc"),
        allow_unfinished=allow_unfinished,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the summary's notes say it, once
        run = import_inspect(list(paths), opts)
    _done(run, out, overwrite)
