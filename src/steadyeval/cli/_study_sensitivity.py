"""``steadyeval study sensitivity``."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from ..run import PlanCounts, RunOptions
from ..studies import StudyResult
from ..studies.sensitivity import (
    PROMPT_SETS,
    AnalysisOptions,
    ProbeOptions,
    SensitivityWarning,
    run_sensitivity_study,
    sensitivity_design,
)


def _pct(x: Any) -> str:
    return "–" if x is None else f"{100 * float(x):.1f}"


@click.command("sensitivity")
@click.option(
    "--model",
    "models",
    multiple=True,
    required=True,
    metavar="SPEC",
    help="BACKEND:NAME_OR_PATH; repeat (two or more for rankings).",
)
@click.option(
    "--data",
    required=True,
    type=click.Path(exists=True, file_okay=False),
    help="Probe directory (generic, LAMA or LPAQA layout) or a task directory "
    "(items.jsonl + templates.jsonl).",
)
@click.option(
    "--prompt-set",
    type=click.Choice(PROMPT_SETS),
    help="LPAQA layout: which prompt set (default manual_paraphrase).",
)
@click.option(
    "--limit-per-relation",
    type=click.IntRange(min=1),
    metavar="N",
    help="At most N facts per relation (a seeded sample).",
)
@click.option(
    "--templates-per-relation",
    type=click.IntRange(min=1),
    metavar="N",
    help="Templates per relation (default: the smallest count among relations).",
)
@click.option(
    "--aliases",
    type=click.Path(exists=True, dir_okay=False),
    help='Subject aliases, JSONL: {"subject": "...", "aliases": [...]}.',
)
@click.option(
    "--max-names",
    type=click.IntRange(min=1),
    default=5,
    show_default=True,
    help="Names per subject (canonical + aliases).",
)
@click.option(
    "--candidates",
    type=click.Choice(["vocabulary", "relation"]),
    default="vocabulary",
    show_default=True,
    help="P@1 over the vocabulary, or over the relation's objects.",
)
@click.option(
    "--vocab",
    type=click.Path(exists=True, dir_okay=False),
    help="Keep only facts whose object is in this word list (one per line).",
)
@click.option(
    "--scoring",
    type=click.Choice(["generate", "option-logprob", "letter-logprob"]),
    help="Generic tasks only: how answers are scored.",
)
@click.option(
    "--subsets",
    type=click.IntRange(min=1),
    default=1000,
    show_default=True,
    help="Rank consistency: number of subsets of relations.",
)
@click.option(
    "--subset-size",
    type=click.IntRange(min=1),
    default=20,
    show_default=True,
    help="Rank consistency: relations per subset.",
)
@click.option(
    "--k-templates",
    type=click.IntRange(min=1),
    metavar="K_P",
    help="Sampled adjustment: templates drawn per relation (default all).",
)
@click.option(
    "--k-names",
    type=click.IntRange(min=1),
    metavar="K_X",
    help="Sampled adjustment: names drawn per fact (default all).",
)
@click.option(
    "--weights",
    type=click.Choice(["uniform", "data"]),
    default="uniform",
    show_default=True,
    help="P(template): uniform or the data's template weights.",
)
@click.option(
    "--seed",
    type=int,
    default=42,
    show_default=True,
    help="Seed of the fact sample and of every analysis draw.",
)
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
def command(**kw: Any) -> None:
    """Prompt and verbalization sensitivity, with the backdoor adjustment (Study 2).

    Every fact is asked under every template of its relation and every name of its subject;
    the analysis reports prompt preference, ranking changes and Kendall's W across
    templates, verbalization stability, adjusted scores and rank consistency under the
    original, random and intervention regimes.

    \b
    Example:
      steadyeval study sensitivity --model hf:./tiny-bert --model hf:./tiny-gpt2 \\
          --data examples/probes-study --subset-size 2 --out runs/sensitivity
    """
    if not kw["dry_run"] and kw["out"] is None:
        raise click.UsageError("--out RUN_DIR is required (or use --dry-run)")
    analysis = AnalysisOptions(
        n_subsets=kw["subsets"],
        subset_size=kw["subset_size"],
        seed=kw["seed"],
        k_templates=kw["k_templates"],
        k_names=kw["k_names"],
        weights=kw["weights"],
    )
    probe = ProbeOptions(
        limit_per_relation=kw["limit_per_relation"],
        templates_per_relation=kw["templates_per_relation"],
        max_names=kw["max_names"],
        candidates=kw["candidates"],
        seed=kw["seed"],
    )
    with warnings.catch_warnings():  # the analysis reports the same facts as notes
        warnings.simplefilter("ignore", SensitivityWarning)
        design = sensitivity_design(
            kw["data"],
            prompt_set=kw["prompt_set"],
            probe=probe,
            analysis=analysis,
            aliases=kw["aliases"],
            vocab=kw["vocab"],
            scoring=kw["scoring"],
        )
    config = {
        k: (str(v) if isinstance(v, Path) else v)
        for k, v in kw.items()
        if k not in ("cache", "no_progress", "dry_run")
    }
    result = run_sensitivity_study(
        design,
        list(kw["models"]),
        options=RunOptions(
            out=kw["out"], cache=kw["cache"], progress=False if kw["no_progress"] else None
        ),
        dry_run=kw["dry_run"],
        config=config,
    )
    console = Console()
    if isinstance(result, PlanCounts):
        console.print(
            f"dry run: {result.rows} rows, {result.unique_requests} unique requests "
            f"({result.cache_hits} cached, {result.to_send} to send), "
            f"{result.skipped} skipped (item, condition) pairs"
        )
        return
    _print(console, result)


def _print(console: Console, result: StudyResult) -> None:
    a = result.analysis
    t = Table(title=f"sensitivity ({a['metric']}, points)")
    for col in ("model", "original", "adjusted", "mean std", "best−worst", "stable names"):
        t.add_column(col)
    for m in a["models"]:
        adj = a["adjusted"]["per_model"][m]
        pp = a["prompt_preference"].get("per_model", {}).get(m, {})
        verb = a["verbalization"].get("per_model", {}).get(m, {})
        t.add_row(
            m,
            _pct(adj["original"]),
            _pct(adj["exact"]),
            _pct(pp.get("mean_std")),
            _pct(pp.get("mean_gap")),
            _pct(verb.get("stability")),
        )
    console.print(t)
    rc = a["rank_consistency"]
    if rc.get("applicable"):
        parts = [f"{k} {_pct(v['overall'])}%" for k, v in rc["regimes"].items()]
        console.print("rank consistency (overall): " + ", ".join(parts))
    else:
        console.print(f"rank consistency: not applicable ({rc['reason']})")
    for note in a.get("notes", []):
        console.print(f"note: {note}")
    if result.run_dir is not None:
        console.print(f"wrote {result.run_dir}/results.parquet, summary.json, summary.md")
