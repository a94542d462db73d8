"""What every study shares: a design (items + conditions) handed to ``run``, and an analysis
that reads only the results table, written into ``summary.json`` / ``summary.md``."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from .._json import json_safe, write_json
from ..conditions import Condition
from ..items import Item
from ..models import Backend, ModelSpec
from ..results import StudyColumn, read_results, summary_markdown
from ..run import PlanCounts, RunOptions, run

__all__ = ["StudyDesign", "StudyResult", "json_safe", "reanalyze", "run_study"]

Analyze = Callable[[pa.Table, Mapping[str, Any]], dict[str, Any]]
Render = Callable[[Mapping[str, Any]], str]


@dataclass(frozen=True)
class StudyDesign:
    """A study's items and conditions, plus design facts for the summary (e.g. what was
    skipped while building items, and why)."""

    items: Sequence[Item]
    conditions: Sequence[Condition]
    shot_pools: Mapping[str, Sequence[Item]] = field(default_factory=dict)
    info: Mapping[str, Any] = field(default_factory=dict)
    columns: Sequence[StudyColumn] = ()


@dataclass(frozen=True)
class StudyResult:
    table: pa.Table
    summary: dict[str, Any]
    analysis: dict[str, Any]
    run_dir: Path | None


def _write(run_dir: Path, summary: dict[str, Any], markdown: str) -> None:
    write_json(run_dir / "summary.json", summary)
    (run_dir / "summary.md").write_text(markdown, encoding="utf-8")


def run_study(
    name: str,
    design: StudyDesign,
    models: Sequence[str | ModelSpec | Backend],
    *,
    analyze: Analyze,
    render: Render,
    options: RunOptions | None = None,
    dry_run: bool = False,
    config: Mapping[str, Any] | None = None,
) -> StudyResult | PlanCounts:
    """Run a study's design through the core pipeline, then analyse the table it produced.

    ``analyze(table, info)`` must read only the table (and the design facts), so
    :func:`reanalyze` can recompute it offline from the run directory.
    """
    resolved = {"study": name, **(config or {}), "design": dict(design.info)}
    if dry_run:
        return run(
            design.items,
            design.conditions,
            models,
            options=options,
            shot_pools=design.shot_pools,
            dry_run=True,
            columns=design.columns,
        )
    result = run(
        design.items,
        design.conditions,
        models,
        options=options,
        shot_pools=design.shot_pools,
        config=json_safe(resolved),
        columns=design.columns,
    )
    analysis = analyze(result.table, design.info)
    summary = {**result.summary, "study": name, "design": dict(design.info), "analysis": analysis}
    if result.run_dir is not None:
        _write(result.run_dir, summary, summary_markdown(result.summary) + "\n" + render(analysis))
    return StudyResult(result.table, summary, analysis, result.run_dir)


def reanalyze(run_dir: str | Path, *, analyze: Analyze, render: Render) -> dict[str, Any]:
    """Recompute a study's analysis from ``results.parquet`` and rewrite the summaries."""
    run_dir = Path(run_dir)
    table = read_results(run_dir)
    summary = json.loads((run_dir / "summary.json").read_text())
    info = summary.get("design", {})
    analysis = analyze(table, info)
    summary["analysis"] = analysis
    base = {k: v for k, v in summary.items() if k not in {"analysis", "design", "study"}}
    _write(run_dir, summary, summary_markdown(base) + "\n" + render(analysis))
    return analysis
