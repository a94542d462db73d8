"""``steadyeval study fewshot``: compare few-shot split strategies (FewNLU's framework)."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from ..studies.fewshot import (
    STRATEGIES,
    TASKS,
    FewShotConfig,
    get_task,
    load_space,
    load_task_items,
    run_fewshot,
    split_off_test,
)
from ..studies.fewshot._render import hparams_label


def _ints(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise click.BadParameter(f"expected comma-separated integers, got {text!r}") from None
    return values


@click.command("fewshot")
@click.option(
    "--model",
    required=True,
    metavar="SPEC",
    help="ICL: any scoring backend (hf:PATH); PET/CLS: a masked LM to fine-tune "
    "(hf:PATH or hf-masked:PATH).",
)
@click.option(
    "--task",
    required=True,
    type=click.Choice([t.name for t in TASKS.values()], case_sensitive=False),
)
@click.option(
    "--labelled",
    required=True,
    metavar="FILE",
    help="Labelled examples in FewGLUE/SuperGLUE JSONL (e.g. FewGLUE/RTE/train.jsonl).",
)
@click.option(
    "--test",
    "test_source",
    metavar="FILE|superglue:SPLIT",
    help="A labelled test set: a JSONL file, or superglue:validation (hub).",
)
@click.option(
    "--test-from-labelled",
    type=int,
    metavar="N",
    help="Hold out N labelled items (groups for MultiRC/COPA) as the test set.",
)
@click.option(
    "--method", type=click.Choice(["icl", "pet", "cls"]), default="icl", show_default=True
)
@click.option(
    "--strategy",
    "strategies",
    multiple=True,
    type=click.Choice(STRATEGIES),
    help="Split strategy to compare; repeat for several [default: all three].",
)
@click.option("--k", type=int, default=4, show_default=True, help="Number of splits K.")
@click.option(
    "--k-values",
    default="2,4,8",
    show_default=True,
    help="K values for the stability criterion (--k is always included).",
)
@click.option(
    "--ratio", type=float, default=0.5, show_default=True, help="Multi-Splits train share r."
)
@click.option(
    "--space",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="YAML hyperparameter space ({name: [values]}); default: the method's grid.",
)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--final-seeds",
    type=int,
    default=0,
    show_default=True,
    help="Retrain each chosen setting on all labelled data with this many seeds.",
)
@click.option(
    "--out",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Run directory (results.parquet, summary.json, summary.md, units/, checkpoints/).",
)
@click.option(
    "--checkpoints",
    type=click.Path(file_okay=False, path_type=Path),
    help="Checkpoint store to share between runs [default: RUN_DIR/checkpoints].",
)
@click.option(
    "--cache",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Response cache file (default: $STEADYEVAL_CACHE or ~/.cache/steadyeval).",
)
@click.option("--device", default="auto", show_default=True, help="Where training runs.")
@click.option(
    "--threads",
    type=click.IntRange(min=1),
    help="CPU threads for torch (default: torch's own choice; 1 is often fastest for "
    "tiny models on a busy machine).",
)
@click.option(
    "--discard-checkpoints",
    is_flag=True,
    help="Delete each checkpoint once its unit is scored (saves disk with real models).",
)
@click.option("--quiet", is_flag=True, help="Do not print a line per finished unit.")
def command(
    model: str,
    task: str,
    labelled: str,
    test_source: str | None,
    test_from_labelled: int | None,
    method: str,
    strategies: tuple[str, ...],
    k: int,
    k_values: str,
    ratio: float,
    space: Path | None,
    seed: int,
    final_seeds: int,
    out: Path,
    checkpoints: Path | None,
    cache: Path | None,
    device: str,
    threads: int | None,
    discard_checkpoints: bool,
    quiet: bool,
) -> None:
    """Compare few-shot split strategies for choosing hyperparameters (FewNLU).

    For every setting of the method's grid and each of K splits of the labelled set, adapt
    on the train part and score the dev part and the test set; the setting with the best mean
    dev score is chosen. Reports, per strategy: the test score of the chosen setting
    (mean ± std over K), the Spearman correlation of dev and test scores across settings,
    and both as K varies. A rerun resumes: finished units and checkpoints are reused.

    \b
    Example (offline: 16 of FewGLUE's 32 RTE examples held out as the test set):
      steadyeval tiny-model tiny-gpt2
      steadyeval study fewshot --model hf:tiny-gpt2 --task RTE \\
        --labelled FewGLUE/RTE/train.jsonl --test-from-labelled 16 \\
        --method icl --strategy multisplit --strategy cv --strategy mdl --k 4 \\
        --out runs/fewshot-rte-icl
    """
    if (test_source is None) == (test_from_labelled is None):
        raise click.UsageError("give exactly one of --test FILE and --test-from-labelled N")
    if threads is not None:
        import torch

        torch.set_num_threads(threads)
    t = get_task(task)
    items = load_task_items(t, labelled)
    if test_from_labelled is not None:
        items, test = split_off_test(items, test_from_labelled, seed=seed)
    else:
        assert test_source is not None
        test = load_task_items(t, test_source)
    config = FewShotConfig(
        task=t.name,
        method=method,
        strategies=strategies or STRATEGIES,
        k=k,
        k_values=_ints(k_values),
        ratio=ratio,
        seed=seed,
        final_seeds=final_seeds,
        space=load_space(space, method) if space else None,
        device=device,
        keep_checkpoints=not discard_checkpoints,
    )
    console = Console(stderr=True)
    log = None if quiet else (lambda m: console.print(m, highlight=False, markup=False))
    result = run_fewshot(
        items, test, model, config, out=out, cache=cache, checkpoints=checkpoints, log=log
    )
    _print(Console(), result.analysis, result.summary["design"])
    click.echo(f"wrote {out}/results.parquet, summary.json, summary.md")


def _fmt(v: object, pct: bool = True) -> str:
    if not isinstance(v, float) or v != v:
        return "–"
    return f"{100 * v:.1f}" if pct else f"{v:+.3f}"


def _print(console: Console, analysis: dict[str, object], info: dict[str, object]) -> None:
    grid = info["grid"]
    side = analysis["side_by_side"]
    assert isinstance(grid, list) and isinstance(side, list)
    number = {g["id"]: n for n, g in enumerate(grid, start=1)}
    table = Table(
        title=f"{info['task']} × {info['method']}, K = {analysis['k']} (accuracy %; rho = "
        "Spearman(dev, test) across settings; Δ = range over K)"
    )
    for col in ("strategy", "chosen", "test", "oracle", "rho", "Δtest/K", "Δrho/K"):
        table.add_column(col, no_wrap=True)
    for row in side:
        table.add_row(
            row["strategy"],
            f"#{number[row['selected']]}",
            f"{_fmt(row['test_mean'])} ± {_fmt(row['test_std'])}",
            _fmt(row["oracle_test_mean"]),
            _fmt(row["spearman"], pct=False),
            _fmt(row["test_range_over_k"]),
            _fmt(row["spearman_range_over_k"], pct=False).lstrip("+"),
        )
    console.print(table)
    for g in grid:
        console.print(
            f"#{number[g['id']]}: {hparams_label(g['hparams'], grid)}",
            highlight=False,
            markup=False,
        )
