"""Summaries of a results table: per (model, condition) accuracy, refusals, unmatched."""

from __future__ import annotations

import math
from typing import Any

import pyarrow as pa

__all__ = ["summarize", "summary_markdown"]


def _wilson(k: int, n: int) -> tuple[float, float]:
    from ..stats import wilson_interval

    if n == 0:
        return math.nan, math.nan
    ci = wilson_interval(k, n)
    return ci.low, ci.high


def summarize(table: pa.Table) -> list[dict[str, Any]]:
    """One record per (model, condition): counts, accuracy with a 95% Wilson interval,
    refusal rate, unmatched outputs, truncated prompts, mean EM/F1 where defined.

    Sampled rows count once each (the interval then treats samples as independent; use the
    paired statistics in :mod:`steadyeval.stats` for claims).
    """
    cols = table.select(
        ["model", "condition", "correct", "refused", "parsed_kind", "truncated", "em", "f1"]
    ).to_pylist()
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in cols:
        groups.setdefault((row["model"], row["condition"]), []).append(row)
    out: list[dict[str, Any]] = []
    for (model, cond), rows in groups.items():
        scored = [r for r in rows if r["correct"] is not None]
        k = sum(1 for r in scored if r["correct"])
        n = len(scored)
        low, high = _wilson(k, n)
        ems = [r["em"] for r in rows if r["em"] is not None and not math.isnan(r["em"])]
        f1s = [r["f1"] for r in rows if r["f1"] is not None and not math.isnan(r["f1"])]
        out.append(
            {
                "model": model,
                "condition": cond,
                "n": len(rows),
                "correct": k,
                "accuracy": k / n if n else math.nan,
                "accuracy_low": low,
                "accuracy_high": high,
                "refused": sum(1 for r in rows if r["refused"]),
                "refusal_rate": sum(1 for r in rows if r["refused"]) / len(rows),
                "unmatched": sum(1 for r in rows if r["parsed_kind"] == "unmatched"),
                "truncated": sum(1 for r in rows if r["truncated"]),
                "em": sum(ems) / len(ems) if ems else None,
                "f1": sum(f1s) / len(f1s) if f1s else None,
            }
        )
    return out


def _fmt(x: Any, pct: bool = False) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if pct:
        return f"{100 * x:.1f}%"
    return str(x)


def summary_markdown(summary: dict[str, Any]) -> str:
    """Render ``summary.json`` content as Markdown."""
    lines = [
        f"# steadyeval run `{summary['run_id']}`",
        "",
        f"- rows: {summary['n_rows']} (items: {summary['n_items']}, "
        f"conditions: {len(summary['conditions'])}, models: {len(summary['models'])})",
        f"- requests: {summary['plan']['requests']} planned, {summary['plan']['unique']} unique, "
        f"{summary['plan']['cache_hits']} from cache, {summary['plan']['model_calls']} sent",
        f"- skipped (item, condition) pairs: {summary['n_skipped']}",
        "",
        "| model | condition | n | accuracy (95% CI) | refused | unmatched | truncated | EM | F1 |",
        "|---|---|---:|---|---:|---:|---:|---:|---:|",
    ]
    for r in summary["by_condition"]:
        acc = (
            f"{_fmt(r['accuracy'], True)} ({_fmt(r['accuracy_low'], True)}–"
            f"{_fmt(r['accuracy_high'], True)})"
        )
        lines.append(
            f"| {r['model']} | {r['condition']} | {r['n']} | {acc} | {r['refused']} "
            f"| {r['unmatched']} | {r['truncated']} | {_fmt(r['em'], True)} "
            f"| {_fmt(r['f1'], True)} |"
        )
    if summary["skipped"]:
        lines += ["", "## Skipped", "", "| condition | reason | count |", "|---|---|---:|"]
        for s in summary["skipped"]:
            lines.append(f"| {s['condition']} | {s['reason']} | {s['count']} |")
    lines.append("")
    return "\n".join(lines)
