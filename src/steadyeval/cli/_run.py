"""``steadyeval run``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from .._errors import ConfigError
from ._options import (
    PathParam,
    echo_counts,
    echo_result,
    lm_eval_options,
    model_args_option,
    model_specs,
    run_options,
    run_out,
    strict_models,
    task_source,
)


@click.command("run")
@click.argument("config", required=False, type=PathParam(dir_okay=False, path_type=Path))
@click.option(
    "--model",
    "models",
    multiple=True,
    metavar="SPEC",
    help="BACKEND:NAME_OR_PATH[?key=value&...]; repeat for several models. Quote a spec "
    "holding & or ? in a shell.  [required unless in CONFIG]",
)
@click.option(
    "--data",
    metavar="PATH|HUB_NAME",
    help="Items: .jsonl, .csv or a hub data set.  [required unless in CONFIG]",
)
@click.option(
    "--task",
    "tasks",
    multiple=True,
    metavar="lm-eval:NAME|inspect:FILE.py@TASK",
    help="Items from another tool's task (instead of --data): an lm-evaluation-harness task, "
    "group or tag (asked as lm-eval asks it unless CONFIG has conditions), or an Inspect "
    "task. Repeat for several (all of one tool).",
)
@click.option(
    "--task-data",
    "task_data",
    multiple=True,
    metavar="NAME=FOLDER",
    help="Read lm-eval task NAME's documents from FOLDER (one file per split: test.jsonl, "
    "validation.parquet, ...) instead of the hub.",
)
@click.option(
    "--include-path",
    "include_path",
    multiple=True,
    type=PathParam(file_okay=False, path_type=Path),
    help="A folder of your own lm-eval task YAML files (lm-eval's --include_path).",
)
@click.option(
    "--num-fewshot",
    type=click.IntRange(min=0),
    help="lm-eval's --num_fewshot for lm-eval tasks.  [default: each task's own]",
)
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    help="Evaluate only the first N items (shots still come from the whole data set, so "
    "each item's prompt is the one the full run gives it). The first N of a file sorted by "
    "subject or difficulty are a biased sample; use --sample N for a random one.",
)
@click.option(
    "--sample",
    type=click.IntRange(min=1),
    help="Evaluate N items drawn at random with the seed, stratified by subtask (or MMLU "
    "subject) where items carry one; the same seed draws the same items. Not with --limit.",
)
@click.option(
    "--seed",
    type=int,
    help="Default seed for option order, shots, sampling and the --sample draw.  "
    "[default: 0, or the CONFIG's]",
)
@click.option(
    "--executor",
    type=click.Choice(["local", "ray"]),
    default="local",
    show_default=True,
    help="Where batches run: this process, or a Ray cluster.",
)
@click.option(
    "--address",
    help="Ray cluster address, with --executor ray (default: start a local cluster).",
)
@click.option(
    "--workers",
    type=click.IntRange(1, 1024),
    default=2,
    show_default=True,
    help="Ray actors (model replicas) per model, with --executor ray.",
)
@run_options()
def run_cmd(
    config: Path | None,
    models: tuple[str, ...],
    data: str | None,
    tasks: tuple[str, ...],
    task_data: tuple[str, ...],
    include_path: tuple[Path, ...],
    num_fewshot: int | None,
    out: Path | None,
    limit: int | None,
    sample: int | None,
    seed: int | None,
    cache: Path | None,
    dry_run: bool,
    executor: str,
    address: str | None,
    workers: int,
    no_progress: bool,
    overwrite: bool,
    model_args: str | None,
    strict_logprobs: bool,
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

    _ray_only(click.get_current_context(), executor)
    specs = model_specs(models, model_args)
    lm_options = lm_eval_options(task_data, include_path, num_fewshot)
    flags: dict[str, Any] = {
        "models": specs,
        "data": data,
        "limit": limit,
        "sample": sample,
        "seed": seed,
    }
    config_data = None
    if lm_options and not tasks and config is not None:  # options for the CONFIG's tasks
        config_data = load_run_config(config, flags).data
    flags["data"] = task_source(tasks, lm_options, data, config_data)
    cfg = load_run_config(config, flags)
    if strict_logprobs:
        cfg = cfg.model_copy(update={"models": strict_models(cfg.models, True)})
    ray = RayExecutor(address=address, workers=workers) if executor == "ray" else None
    result = run_config(
        cfg,
        out=run_out(out, dry_run, config.stem if config is not None else "run"),
        cache=cache,
        dry_run=dry_run,
        progress=False if no_progress else None,
        executor=ray,
        overwrite=overwrite,
    )
    if isinstance(result, PlanCounts):
        echo_counts(result)
    else:
        echo_result(result.summary, result.run_dir)


def _ray_only(ctx: click.Context, executor: str) -> None:
    """Refuse --address or --workers given for another executor (they would be ignored)."""
    if executor == "ray":
        return
    for name in ("address", "workers"):
        if ctx.get_parameter_source(name) not in (None, ParameterSource.DEFAULT):
            raise ConfigError(
                f"--{name} applies only to the Ray executor (this run's is {executor}); "
                f"add --executor ray, or leave --{name} out"
            )


run_cmd.params.insert(2, model_args_option())
