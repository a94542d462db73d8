"""``steadyeval judge``: a judge model grades a finished run's generated answers."""

from __future__ import annotations

import math
from pathlib import Path

import click

from .._errors import printable
from ._options import PathParam


@click.command("judge")
@click.argument("runs", nargs=-1, required=True, type=PathParam(path_type=Path))
@click.option(
    "--judge",
    "judges",
    multiple=True,
    required=True,
    metavar="MODEL",
    help="The judge model spec (repeat for several judges: their agreement is measured).",
)
@click.option(
    "--out",
    required=True,
    type=PathParam(file_okay=False, path_type=Path),
    help="Folder for the judged table (results.parquet), judge.json and each judge's run.",
)
@click.option(
    "--data",
    type=PathParam(path_type=Path),
    help="The graded run's items (JSONL/CSV): the judge then sees each item's question "
    "(else the prompt the graded model saw).",
)
@click.option(
    "--rubric",
    type=PathParam(dir_okay=False, exists=True, path_type=Path),
    help="A Jinja rubric template replacing the default (see docs/judge.md).",
)
@click.option(
    "--labels",
    type=PathParam(dir_okay=False, exists=True, path_type=Path),
    help="Human labels (JSONL: item_id, label, optional model/condition/sample_index).",
)
@click.option(
    "--pairwise",
    is_flag=True,
    help="Judge the two models of RUNS against each other, each pair in both orders "
    "(position bias measured); the runs' tables must hold exactly two models.",
)
@click.option("--chat/--no-chat", default=True, show_default=True, help="Ask the judge as a chat.")
@click.option(
    "--max-new-tokens",
    type=click.IntRange(1, 100_000),
    default=512,
    show_default=True,
    help="The judge's generation limit.",
)
@click.option("--cache", type=PathParam(dir_okay=False, path_type=Path), help="Response cache.")
@click.option("--overwrite", is_flag=True, help="Replace judge runs that hold a different run.")
def command(
    runs: tuple[Path, ...],
    judges: tuple[str, ...],
    out: Path,
    data: Path | None,
    rubric: Path | None,
    labels: Path | None,
    pairwise: bool,
    chat: bool,
    max_new_tokens: int,
    cache: Path | None,
    overwrite: bool,
) -> None:
    """Grade the generated answers of a run (RUNS: one run directory) with one or more
    judge models, or with --pairwise two models' answers against each other.

    Each judge runs as an ordinary run (OUT/judge-N: its prompts and raw replies, cached
    and resumable). OUT/results.parquet is RUN_DIR's table with judge_model, judge_prompt,
    judge_output, judge_verdict, judge_correct (the first judge) and judges (every judge's
    verdict); OUT/judge.json holds Cohen's kappa of each judge with the automatic scoring,
    the labels and the other judges, and Krippendorff's alpha over all raters.

    With --pairwise (one judge): OUT/pairwise.parquet has both verdicts per unit (A shown
    first, B shown first) and OUT/pairwise.json the wins, ties, inconsistent units, the
    share of verdicts naming the first-shown answer (position bias) and B's win rate.

    \b
    Example:
      steadyeval judge runs/cot --judge 'openai:gpt-4o-mini' --labels labels.jsonl --out runs/cot-judged
      steadyeval judge runs/a runs/b --pairwise --judge 'openai:gpt-4o-mini' --out runs/a-vs-b
    """
    from ..items import load_items
    from ..judge import DEFAULT_RUBRIC, judge_results, read_labels
    from ..run import RunOptions

    if pairwise and labels is not None:
        raise click.UsageError("--labels applies to grading one run, not to --pairwise")
    if pairwise:
        _pairwise(runs, judges, out, data, rubric, chat, max_new_tokens, cache, overwrite)
        return
    if len(runs) != 1:
        raise click.UsageError("grading takes one run directory (two or more only with --pairwise)")
    text = _rubric(rubric, DEFAULT_RUBRIC)
    result = judge_results(
        runs[0],
        list(judges),
        rubric=text,
        chat=chat,
        max_new_tokens=max_new_tokens,
        labels=read_labels(labels) if labels is not None else None,
        items=load_items(data) if data is not None else None,
        out=out,
        options=RunOptions(cache=cache, overwrite=overwrite),
    )
    for judge, rate in result.verdict_rate.items():
        click.echo(f"{judge}: a verdict in {100 * rate:.1f}% of replies")
    for a in result.agreements:
        kappa = "–" if math.isnan(a.kappa) else f"{a.kappa:.3f} [{a.low:.3f}, {a.high:.3f}]"
        click.echo(f"  kappa {a.judge} vs {a.other}: {kappa} over {a.n} rows")
    if result.alpha is not None:
        al = result.alpha
        click.echo(
            f"  Krippendorff's alpha (all raters): {_num(al.estimate)} "
            f"[{_num(al.low)}, {_num(al.high)}]"
        )
    if result.unused_labels:
        click.echo(f"warning: {result.unused_labels} label line(s) match no graded row", err=True)
    click.echo(f"wrote {printable(out)}/ (results.parquet, judge.json)")


def _rubric(path: Path | None, default: str) -> str:
    """The rubric file's text, checked (empty, template errors with their line) before any
    judge is asked or any folder written."""
    from ..judge import check_rubric

    if path is None:
        return default
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise click.BadParameter(f"{path}: cannot read ({exc})", param_hint="--rubric") from None
    check_rubric(text, f"--rubric {path}")
    return text


def _num(x: float, spec: str = ".3f") -> str:
    return "–" if math.isnan(x) else format(x, spec)


def _pct(x: float) -> str:
    return "–" if math.isnan(x) else f"{100 * x:.1f}%"


def _pairwise(
    runs: tuple[Path, ...],
    judges: tuple[str, ...],
    out: Path,
    data: Path | None,
    rubric: Path | None,
    chat: bool,
    max_new_tokens: int,
    cache: Path | None,
    overwrite: bool,
) -> None:
    from ..items import load_items
    from ..judge import PAIRWISE_RUBRIC, judge_pairwise
    from ..run import RunOptions

    if len(judges) != 1:
        raise click.UsageError("--pairwise takes one --judge")
    res = judge_pairwise(
        list(runs),
        None,
        None,
        judges[0],
        rubric=_rubric(rubric, PAIRWISE_RUBRIC),
        chat=chat,
        max_new_tokens=max_new_tokens,
        items=load_items(data) if data is not None else None,
        out=out,
        options=RunOptions(cache=cache, overwrite=overwrite),
    )
    click.echo(f"A = {res.model_a}\nB = {res.model_b}\njudge = {res.judge}")
    click.echo(
        f"{res.n} units: A wins {res.wins_a}, B wins {res.wins_b}, ties {res.ties}, "
        f"inconsistent across orders {res.inconsistent}, no verdict {res.no_verdict}"
    )
    click.echo(
        f"verdicts naming the answer shown first: {_pct(res.first_share)} "
        f"(binomial p = {_num(res.first_pvalue, '.3g')}); B's win rate "
        f"{_pct(res.b_win_rate)}"
    )
    click.echo(f"wrote {printable(out)}/ (pairwise.parquet, pairwise.json, pairwise-run/)")
