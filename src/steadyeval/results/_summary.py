"""Summaries of a results table: per (model, condition) accuracy, refusals, unmatched."""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Any

import pyarrow as pa

from .._files import read_text_file
from ._import_fields import INT, LIST, OBJECT, TEXT, Place, describe, get, list_of
from ._import_limits import ImportLimits, json_document
from ._schema import study_columns

__all__ = ["read_summary", "summarize", "summary_markdown"]


def _wilson(k: int, n: int) -> tuple[float, float]:
    from ..stats import wilson_interval

    if n == 0:
        return math.nan, math.nan
    ci = wilson_interval(k, n)
    return ci.low, ci.high


def summarize(table: pa.Table) -> list[dict[str, Any]]:
    """One record per (model, condition): counts, accuracy with a 95% Wilson interval,
    refusal rate, unmatched outputs, errored samples (kind ``error``, counted apart from
    unmatched), truncated prompts, rows flagged ``approximate`` (their log-probabilities
    are approximations, e.g. a masked LM's pseudo-log-likelihood), mean EM/F1 where
    defined.

    Sampled rows count once each (the interval then treats samples as independent; use the
    paired statistics in :mod:`steadyeval.stats` for claims). Vectorised: a million rows
    take well under a second.
    """
    metrics = [c.name for c in study_columns(table) if c.summary == "mean"]
    cols = ["model", "condition", "correct", "refused", "parsed_kind", "truncated", "em", "f1"]
    if "approximate" in table.column_names:
        cols.append("approximate")
    df = table.select([*cols, *metrics]).to_pandas()
    # a metric's own name could be one of the helper columns below (a metric "scored")
    df.columns = [*df.columns[: len(cols)], *(f"metric:{m}" for m in metrics)]
    if "approximate" not in df.columns:  # a table written before the column existed
        df["approximate"] = None
    df["scored"] = df["correct"].notna()
    df["correct_n"] = df["correct"].fillna(False).astype(bool)
    df["refused_n"] = df["refused"].fillna(False).astype(bool)
    df["unmatched"] = df["parsed_kind"] == "unmatched"
    df["errored"] = df["parsed_kind"] == "error"
    df["truncated_n"] = df["truncated"].fillna(False).astype(bool)
    df["approximate_n"] = df["approximate"].fillna(False).astype(bool)
    grouped = df.groupby(["model", "condition"], sort=False)
    agg = grouped.agg(
        n=("scored", "size"),
        scored=("scored", "sum"),
        correct=("correct_n", "sum"),
        refused=("refused_n", "sum"),
        unmatched=("unmatched", "sum"),
        errored=("errored", "sum"),
        truncated=("truncated_n", "sum"),
        approximate=("approximate_n", "sum"),
        em=("em", "mean"),
        f1=("f1", "mean"),
        **{f"metric:{m}": (f"metric:{m}", "mean") for m in metrics},
    )
    out: list[dict[str, Any]] = []
    for (model, cond), r in agg.iterrows():
        n, k, scored = int(r["n"]), int(r["correct"]), int(r["scored"])
        low, high = _wilson(k, scored)
        out.append(
            {
                "model": model,
                "condition": cond,
                "n": n,
                "correct": k,
                "accuracy": k / scored if scored else math.nan,
                "accuracy_low": low,
                "accuracy_high": high,
                "refused": int(r["refused"]),
                "refusal_rate": int(r["refused"]) / n,
                "unmatched": int(r["unmatched"]),
                "errored": int(r["errored"]),
                "truncated": int(r["truncated"]),
                "approximate": int(r["approximate"]),
                "em": None if math.isnan(r["em"]) else float(r["em"]),
                "f1": None if math.isnan(r["f1"]) else float(r["f1"]),
            }
        )
        if metrics:  # a scoring mode's own metrics, by name (none: the key is left out)
            means = {m: r[f"metric:{m}"] for m in metrics}
            out[-1]["metrics"] = {m: None if math.isnan(v) else float(v) for m, v in means.items()}
    return out


def _number(x: Any) -> str:
    """A metric's mean, to four significant digits (``–`` when undefined)."""
    return _fmt(x) if x is None or not isinstance(x, int | float) else _fmt(f"{x:.4g}")


def _fmt(x: Any, pct: bool = False) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if pct:
        return f"{100 * x:.1f}%"
    return str(x)


#: What could become markup: ``<`` opening a tag, ``&`` starting a character reference,
#: every bracket (links, references), backticks (code), ``*`` and an ``_`` at a word's edge
#: (emphasis; ``mc_letters`` stays as it is).
_ACTIVE = re.compile(
    r"<(?=[A-Za-z/!?])|&(?=#?[A-Za-z0-9]+;)|[\[\]`*]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])"
)


def _escape(text: str) -> str:
    """A name as literal Markdown: a backslash before whatever could become markup
    (``\\<b>``, ``\\&amp;``, ``\\[x\\](url)``, ``\\*``) and before backslashes; never
    an HTML entity, so ``<0.001`` and ``a < b`` stay as they are."""
    return _ACTIVE.sub(lambda m: "\\" + m.group(0), text.replace("\\", "\\\\"))


def _cell(value: Any) -> str:
    """A name as a literal Markdown table cell: backslash escapes (``\\<``, ``\\[``,
    ``\\|``), never HTML entities."""
    return " ".join(_escape(str(value)).replace("|", "\\|").splitlines())


def summary_markdown(summary: dict[str, Any]) -> str:
    """Render ``summary.json`` content as Markdown (model and condition names escaped)."""
    lines = [
        f"# steadyeval run `{summary['run_id']}`",
        "",
        f"- rows: {summary['n_rows']} (items: {summary['n_items']}, "
        f"conditions: {len(summary['conditions'])}, models: {len(summary['models'])})",
        f"- requests: {summary['plan']['requests']} planned, {summary['plan']['unique']} unique, "
        f"{summary['plan']['cache_hits']} from cache, {summary['plan']['model_calls']} sent",
        f"- skipped (item, condition) pairs: {summary['n_skipped']}",
        "",
        "| model | condition | n | accuracy (95% CI) | refused | unmatched | truncated "
        "| approximate | EM | F1 |",
        "|---|---|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    metrics = sorted({m for r in summary["by_condition"] for m in r.get("metrics") or {}})
    if metrics:
        lines[-2] += "".join(f" {_cell(m)} (mean) |" for m in metrics)  # never a core header
        lines[-1] += "---:|" * len(metrics)
    for r in summary["by_condition"]:
        acc = (
            f"{_fmt(r['accuracy'], True)} ({_fmt(r['accuracy_low'], True)}–"
            f"{_fmt(r['accuracy_high'], True)})"
        )
        lines.append(
            f"| {_cell(r['model'])} | {_cell(r['condition'])} | {r['n']} | {acc} "
            f"| {r['refused']} | {r['unmatched']} | {r['truncated']} "
            f"| {r.get('approximate', 0)} | {_fmt(r['em'], True)} | {_fmt(r['f1'], True)} |"
            + "".join(f" {_number((r.get('metrics') or {}).get(m))} |" for m in metrics)
        )
    if summary["skipped"]:
        lines += ["", "## Skipped", "", "| condition | reason | count |", "|---|---|---:|"]
        for s in summary["skipped"]:
            lines.append(f"| {_cell(s['condition'])} | {_cell(s['reason'])} | {s['count']} |")
    lines.append("")
    return "\n".join(lines)


def read_summary(run_dir: str | Path) -> dict[str, Any]:
    """``summary.json`` of a run directory, or ``{}`` when the run has none.

    Read as untrusted input (a run folder may come from anywhere): a regular file (a FIFO
    or a link to ``/dev/zero`` is refused unopened) within ``STEADYEVAL_MAX_FILE_MB``,
    UTF-8, JSON of bounded depth and size in values, an object whose fields every reader
    uses have their types (``run_id``, ``study``, ``models``, ``conditions``, ``design``,
    ``analysis``, ``imported``, ``plan``, ``by_condition``, ``n_skipped``). Every failure is
    a :class:`~steadyeval.DataError` naming the file and field.
    """
    path = Path(run_dir) / "summary.json"
    if not os.path.lexists(path):
        return {}
    limits = ImportLimits.from_env()
    text = read_text_file(path, "a run's summary.json", max_bytes=limits.file_bytes)
    data = json_document(text, str(path), limits)
    place = Place(str(path))
    if not isinstance(data, dict):
        raise place.error(f"is {describe(data)}", "a JSON object (a run's summary)")
    for key in ("run_id", "study"):
        get(data, key, place, TEXT)
    get(data, "schema_version", place, INT)
    for key in ("models", "conditions"):
        list_of(get(data, key, place, LIST), place.at(key), TEXT)
    for key in ("design", "analysis", "plan"):
        get(data, key, place, OBJECT)
    list_of(get(data, "by_condition", place, LIST), place.at("by_condition"), OBJECT)
    get(data, "n_skipped", place, INT)
    imported = get(data, "imported", place, OBJECT)
    if imported is not None:
        at = place.at("imported")
        get(imported, "tool", at, TEXT)
        get(imported, "files", at, INT)
        list_of(get(imported, "notes", at, LIST), at.at("notes"), TEXT)
    return data
