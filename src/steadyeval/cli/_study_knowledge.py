"""``steadyeval study knowledge``: MMLU accuracy, shots, calibration, option order."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from rich.console import Console

    from ..run import PlanCounts


def _names(value: str | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    return tuple(v.strip() for v in value.split(",") if v.strip())


def _shots(ctx: click.Context, param: click.Parameter, value: str) -> tuple[int, ...]:
    try:
        return tuple(int(v) for v in (_names(value) or ()))
    except ValueError:
        raise click.BadParameter(f"{value!r}: give shot counts such as 0,1,5") from None


@click.command("knowledge")
@click.option(
    "--model",
    "models",
    multiple=True,
    required=True,
    metavar="SPEC",
    help="BACKEND:NAME_OR_PATH[?key=value&...]; repeat for several models.",
)
@click.option(
    "--data",
    required=True,
    metavar="DIR|HUB_NAME",
    help="A folder in the original MMLU layout (dev/, test/ with <subject>_<split>.csv) "
    "or a hub data set such as cais/mmlu.",
)
@click.option(
    "--shots",
    metavar="K,K,...",
    default="5",
    show_default=True,
    callback=_shots,
    help="Comma-separated shot counts (first dev examples of the subject).",
)
@click.option("--subjects", metavar="A,B,...", help="Only these subjects (e.g. anatomy,virology).")
@click.option(
    "--limit-per-subject",
    type=click.IntRange(min=1),
    metavar="N",
    help="Evaluate only the first N questions of each subject.",
)
@click.option(
    "--split",
    type=click.Choice(["test", "val"]),
    default="test",
    show_default=True,
    help="The split to evaluate.",
)
@click.option(
    "--templates",
    metavar="NAME,...",
    default="reference",
    show_default=True,
    help="Prompt headers: reference (two spaces after 'about', as the reference code) "
    "and/or single-space.",
)
@click.option(
    "--scoring",
    "scorings",
    metavar="letter,option",
    default="letter",
    show_default=True,
    help="letter (log-probability of ' A'..' D') and/or option (of each option text).",
)
@click.option(
    "--normalization",
    type=click.Choice(["none", "token", "char"]),
    default="none",
    show_default=True,
    help="Which option score decides an option-scored answer.",
)
@click.option(
    "--rotations",
    is_flag=True,
    help="Also ask every question under the 3 other cyclic rotations of its options.",
)
@click.option(
    "--memorisation",
    is_flag=True,
    help="Also score each question's log-probability (memorisation check).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap.")
@click.option(
    "--out", type=click.Path(file_okay=False, path_type=Path), help="Run directory to write."
)
@click.option(
    "--cache",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Response cache file (default: $STEADYEVAL_CACHE or ~/.cache/steadyeval).",
)
@click.option("--dry-run", is_flag=True, help="Print the plan's counts; call no model.")
@click.option("--no-progress", is_flag=True, help="Do not show the progress bar.")
def command(
    models: tuple[str, ...],
    data: str,
    shots: tuple[int, ...],
    subjects: str | None,
    limit_per_subject: int | None,
    split: str,
    templates: str,
    scorings: str,
    normalization: str,
    rotations: bool,
    memorisation: bool,
    seed: int,
    out: Path | None,
    cache: Path | None,
    dry_run: bool,
    no_progress: bool,
) -> None:
    """MMLU: accuracy per category and subject, accuracy vs shots, calibration, option order,
    template sensitivity and a memorisation check.

    The default run is the reference setting: letter scoring, the reference prompt, 5 shots,
    options in their original order.

    \b
    Example:
      steadyeval study knowledge --model hf:./tiny-gpt2 --data mmlu/ \\
          --shots 0,5 --limit-per-subject 5 --rotations --out runs/mmlu
    """
    # Imported here so that ``steadyeval --help`` does not pay for pandas and scipy.
    from rich.console import Console
    from rich.table import Table

    from ..run import PlanCounts, RunOptions
    from ..studies.knowledge import KnowledgeConfig, knowledge_sections, run_knowledge

    if not dry_run and out is None:
        raise click.UsageError("--out RUN_DIR is required (or use --dry-run)")
    config = KnowledgeConfig(
        shots=shots,
        templates=_names(templates) or (),
        scorings=_names(scorings) or (),
        normalization=normalization,  # type: ignore[arg-type]  # click.Choice checked it
        rotations=rotations,
        memorisation=memorisation,
        seed=seed,
    )
    result = run_knowledge(
        list(models),
        data,
        config,
        subjects=_names(subjects),
        split=split,  # type: ignore[arg-type]  # click.Choice checked it
        limit_per_subject=limit_per_subject,
        options=RunOptions(out=out, cache=cache, progress=False if no_progress else None),
        dry_run=dry_run,
    )
    console = Console()
    if not console.is_terminal:  # piped or logged: do not squeeze the tables into 80 columns
        console = Console(width=160)
    if isinstance(result, PlanCounts):
        _print_counts(console, result)
        return
    models = result.analysis["models"]
    if len(models) == 1:
        console.print(f"model: {models[0]}")
    for section in knowledge_sections(result.analysis):
        table = Table(title=section.title)
        for i, col in enumerate(section.header):
            table.add_column(col, no_wrap=i == 0)
        for row in section.rows:
            table.add_row(*row)
        console.print(table)
    _print_footer(console, result.summary)
    if result.run_dir is not None:
        console.print(f"wrote {result.run_dir}/results.parquet, summary.json, summary.md")


def _print_counts(console: Console, c: PlanCounts) -> None:
    from rich.table import Table

    t = Table(title="dry run: what this study would cost", show_header=False)
    approx = " (estimated)" if c.input_tokens_estimated else ""
    for k, v in [
        ("rows", c.rows),
        ("requests", c.requests),
        ("unique requests", c.unique_requests),
        ("cache hits", c.cache_hits),
        ("to send", c.to_send),
        (f"input tokens to send{approx}", c.input_tokens),
    ]:
        t.add_row(k, str(v))
    console.print(t)


def _print_footer(console: Console, summary: dict[str, Any]) -> None:
    design = summary["design"]
    fit = design["shot_fit"]
    console.print(
        f"{design['n_items']} questions from {len(design['subjects'])} subjects "
        f"({design['split']} split); {summary['n_rows']} rows"
    )
    if fit["n_items_capped"]:
        console.print(
            f"{fit['n_items_capped']} questions had fewer shots to fit the context "
            f"(cap → questions: {fit['caps']}); {len(fit['too_long_without_shots'])} do not fit "
            "even without shots (truncated)"
        )
    if fit["unchecked_models"]:
        console.print(f"context length not checked for: {', '.join(fit['unchecked_models'])}")
    for note in summary["analysis"].get("notes", []):
        console.print(f"note: {note}")
