"""``steadyeval run``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from ._options import check_out, echo_counts, run_options

if TYPE_CHECKING:
    from ..run import RunResult


@click.command("run")
@click.argument("config", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--model",
    "models",
    multiple=True,
    metavar="SPEC",
    help="BACKEND:NAME_OR_PATH[?key=value&...]; repeat for several models.",
)
@click.option("--data", metavar="PATH|HUB_NAME", help="Items: .jsonl, .csv or a hub data set.")
@click.option("--limit", type=int, help="Evaluate only the first N items.")
@click.option("--seed", type=int, help="Default seed for option order, shots and sampling.")
@click.option(
    "--executor",
    type=click.Choice(["local", "ray"]),
    default="local",
    show_default=True,
    help="Where batches run: this process, or a Ray cluster.",
)
@click.option("--address", help="Ray cluster address (default: start a local cluster).")
@click.option(
    "--workers",
    type=int,
    default=2,
    show_default=True,
    help="Ray actors (model replicas) per model.",
)
@run_options()
def run_cmd(
    config: Path | None,
    models: tuple[str, ...],
    data: str | None,
    out: Path | None,
    limit: int | None,
    seed: int | None,
    cache: Path | None,
    dry_run: bool,
    executor: str,
    address: str | None,
    workers: int,
    no_progress: bool,
) -> None:
    """Run items × conditions × models into a results table.

    Flags alone work: items with options are asked as multiple choice (scored by option
    log-probability), others free form. A CONFIG file (YAML) adds conditions; flags given
    on the command line override the file's values.

    \b
    Example:
      steadyeval run examples/run.yaml --out runs/quickstart
      steadyeval run --model hf:./tiny-gpt2 --data examples/items.jsonl --out runs/flags
    """
    from ..run import PlanCounts, RayExecutor, load_run_config, run_config

    check_out(out, dry_run)
    cfg = load_run_config(
        config, {"models": list(models), "data": data, "limit": limit, "seed": seed}
    )
    ray = RayExecutor(address=address, workers=workers) if executor == "ray" else None
    result = run_config(
        cfg,
        out=out,
        cache=cache,
        dry_run=dry_run,
        progress=False if no_progress else None,
        executor=ray,
    )
    if isinstance(result, PlanCounts):
        echo_counts(result)
    else:
        _print_result(result)


def _print_result(r: RunResult) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    s = r.summary
    t = Table(title=f"run {s['run_id']}")
    for col in ("model", "condition", "n", "accuracy", "95% CI", "refused", "unmatched"):
        t.add_column(col)
    for row in s["by_condition"]:
        acc = row["accuracy"]
        t.add_row(
            row["model"],
            row["condition"],
            str(row["n"]),
            "–" if acc != acc else f"{100 * acc:.1f}%",
            "–"
            if acc != acc
            else f"{100 * row['accuracy_low']:.1f}–{100 * row['accuracy_high']:.1f}%",
            str(row["refused"]),
            str(row["unmatched"]),
        )
    console.print(t)
    p = s["plan"]
    console.print(
        f"{s['n_rows']} rows; {p['unique']} unique requests: {p['cache_hits']} cached, "
        f"{p['model_calls']} sent; skipped pairs: {s['n_skipped']}"
    )
    if r.run_dir is not None:
        console.print(f"wrote {r.run_dir}/results.parquet, summary.json, summary.md")
