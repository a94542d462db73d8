"""``steadyeval study formats``: answer format and abstention (study 1)."""

from __future__ import annotations

from pathlib import Path

import click

from ..run import PlanCounts
from ..studies.formats import load_formats_config, render_formats, run_formats_study


@click.command("formats")
@click.argument("config", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--model", "models", multiple=True, metavar="SPEC", help="Model spec; repeatable.")
@click.option("--data", metavar="SOURCE", help="SQuAD 2.0 .json file or hub name (squad_v2).")
@click.option("--split", help="Hub split (default validation).")
@click.option("--answerable", type=int, help="Answerable questions to sample (default 300).")
@click.option("--unanswerable", type=int, help="Unanswerable questions to sample (default 300).")
@click.option("--seed", type=int, help="Sampling seed (default 2022).")
@click.option(
    "--scoring",
    type=click.Choice(["generate", "option-logprob", "logprob"]),
    help="Lists: greedy generation mapped to an option (default), or option log-probability "
    "(logprob: the deprecated name of option-logprob).",
)
@click.option("--limit", type=int, help="Keep the first N of each sample (same questions).")
@click.option(
    "--template",
    type=click.Choice(["auto", "unifiedqa", "unifiedqa-title", "qa"]),
    help="Prompt encoding (auto: UnifiedQA's for UnifiedQA models, else qa).",
)
@click.option("--refusal-text", help='The model\'s own refusal text (default "no answer>").')
@click.option("--max-new-tokens", type=int, help="Generation limit (default 24).")
@click.option("--escape", "escapes", multiple=True, metavar="TEXT", help="Extra escape phrasing.")
@click.option("--orders", type=int, help="Also ask the lists under K seeded option orders.")
@click.option("--no-decoy", is_flag=True, help="Also ask unanswerable lists without the decoy.")
@click.option("--control", is_flag=True, help="Add a list whose last option is a random word.")
@click.option("--temperature", type=float, help="Also sample at this temperature.")
@click.option("--samples", type=int, help="Samples per question when sampling (default 5).")
@click.option("--determinism", type=int, metavar="N", help="Rerun N questions uncached.")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Run directory (results.parquet, summary.json, summary.md, ...).",
)
@click.option(
    "--cache",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Response cache file (default: $STEADYEVAL_CACHE or ~/.cache/steadyeval).",
)
@click.option("--dry-run", is_flag=True, help="Print the plan's counts; call no model.")
@click.option("--no-progress", is_flag=True, help="Do not show the progress bar.")
def command(
    config: Path | None,
    models: tuple[str, ...],
    data: str | None,
    split: str | None,
    answerable: int | None,
    unanswerable: int | None,
    seed: int | None,
    scoring: str | None,
    limit: int | None,
    template: str | None,
    refusal_text: str | None,
    max_new_tokens: int | None,
    escapes: tuple[str, ...],
    orders: int | None,
    no_decoy: bool,
    control: bool,
    temperature: float | None,
    samples: int | None,
    determinism: int | None,
    out: Path | None,
    cache: Path | None,
    dry_run: bool,
    no_progress: bool,
) -> None:
    """Does a "none of the above" option restore the refusals of a free-form answer?

    Asks SQuAD 2.0 questions (answerable, and unanswerable with a decoy option) free form, as
    a list of 3 options, the list + "none of the above" and the list + the model's own
    refusal text; writes every answer and the paired analysis. A CONFIG file (YAML) holds
    the same keys; flags override it.

    \b
    Example:
      steadyeval study formats --model hf-seq2seq:allenai/unifiedqa-t5-large?max_length=512 \\
          --data dev-v2.0.json --out runs/formats
    """
    sampling = None
    if temperature is not None:
        sampling = {"temperature": temperature, **({"n_samples": samples} if samples else {})}
    elif samples is not None:
        raise click.UsageError("--samples needs --temperature")
    cfg = load_formats_config(
        config,
        {
            "models": list(models),
            "data": data,
            "split": split,
            "answerable": answerable,
            "unanswerable": unanswerable,
            "seed": seed,
            "scoring": scoring,
            "limit": limit,
            "template": template,
            "refusal_text": refusal_text,
            "max_new_tokens": max_new_tokens,
            "escapes": list(escapes),
            "orders": orders,
            "no_decoy": no_decoy,
            "control": control,
            "sampling": sampling,
            "determinism": determinism,
        },
    )
    if not dry_run and out is None:
        raise click.UsageError("--out RUN_DIR is required (or use --dry-run)")
    result = run_formats_study(
        cfg, out=out, cache=cache, dry_run=dry_run, progress=False if no_progress else None
    )
    if isinstance(result, PlanCounts):
        click.echo(
            f"dry run: {result.rows} rows, {result.requests} requests, "
            f"{result.unique_requests} unique, {result.cache_hits} cached, "
            f"{result.to_send} to send, {result.skipped} skipped (item, condition) pairs; "
            f"{result.input_tokens} input tokens to send"
            + (" (estimated)" if result.input_tokens_estimated else "")
        )
        return
    click.echo(render_formats(result.analysis))
    plan = result.summary["plan"]
    click.echo(
        f"{result.summary['n_rows']} rows; {plan['unique']} unique requests: "
        f"{plan['cache_hits']} cached, {plan['model_calls']} sent"
    )
    if result.run_dir is not None:
        click.echo(f"wrote {result.run_dir}/results.parquet, summary.json, summary.md")
