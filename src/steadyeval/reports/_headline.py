"""The parts of the headline section (:func:`steadyeval.reports._sections.headline_section`):
its table rows, with intervals at the report's confidence, the table, and the accuracy and
refusal charts of one model."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from .. import stats
from ..document import Bar, BarChart, Column, Table
from ..results import StudyColumn
from ._context import ReportContext

__all__ = ["accuracy_chart", "headline_rows", "headline_table", "refusal_chart"]

HeadlineRow = tuple[Any, ...]


def _scored(ctx: ReportContext, model: str, condition: str) -> int:
    df = ctx.frame
    sel = (df["model"] == model) & (df["condition"] == condition) & df["correct"].notna()
    return int(sel.sum())


def headline_rows(
    ctx: ReportContext, records: Sequence[Mapping[str, Any]], metrics: Sequence[str] = ()
) -> list[HeadlineRow]:
    """One table row per summary record, then the means of ``metrics`` (the scoring modes'
    own); the accuracy interval is recomputed when the report's confidence is not the
    summary's 95%."""
    conf = ctx.options.confidence
    rows = []
    for r in records:
        low, high = r["accuracy_low"], r["accuracy_high"]
        if conf != 0.95 and r["correct"] is not None:
            n_scored = _scored(ctx, r["model"], r["condition"])
            if n_scored:
                ci = stats.wilson_interval(r["correct"], n_scored, conf)
                low, high = ci.low, ci.high
        rows.append(
            (
                r["model"],
                ctx.label(r["condition"]),
                r["n"],
                (r["accuracy"], low, high),
                r["refused"],
                r["refusal_rate"],
                r["unmatched"],
                r["truncated"],
                r.get("approximate", 0),
                r["em"],
                r["f1"],
                *((r.get("metrics") or {}).get(m) for m in metrics),
            )
        )
    return rows


def headline_table(
    rows: Sequence[HeadlineRow], pct: str, metrics: Sequence[StudyColumn] = ()
) -> Table:
    """The table of :func:`headline_rows` (``pct``: the confidence, e.g. ``95%``; ``metrics``:
    the columns of the metrics it ends with)."""
    return Table(
        title="Accuracy, refusals and unmatched outputs by model and condition",
        columns=(
            Column("model"),
            Column("condition"),
            Column("n", "int", "rows (items × samples)"),
            Column(f"accuracy [{pct} CI]", "pct_ci", "Wilson interval; samples count as rows"),
            Column("refused", "int"),
            Column("refusal rate", "pct"),
            Column("unmatched", "int", "outputs that matched no option (kept as answers)"),
            Column("truncated", "int", "prompts cut to fit the model's context"),
            Column(
                "approximate",
                "int",
                "rows whose log-probabilities are approximate (e.g. a masked LM's "
                "pseudo-log-likelihood of a several-token option)",
            ),
            Column("EM", "pct"),
            Column("F1", "pct"),
            *(Column(f"{m.name} (mean)", "float", m.doc or m.name) for m in metrics),
        ),
        rows=tuple(rows),
        note="Intervals treat rows as independent; for claims about differences use the "
        "paired comparisons below (and `steadyeval compare`).",
    )


def accuracy_chart(model: str, rows: Sequence[HeadlineRow], pct: str) -> BarChart:
    """``model``'s accuracy by condition, from its :func:`headline_rows` with an accuracy."""
    return BarChart(
        title=f"{model}: accuracy by condition ({pct} Wilson CI)",
        bars=tuple(
            Bar(r[1], r[3][0], r[3][1], r[3][2], n=r[2])
            for r in rows
            if r[0] == model and r[3][0] is not None and not math.isnan(r[3][0])
        ),
    )


def refusal_chart(
    ctx: ReportContext, model: str, records: Sequence[Mapping[str, Any]], pct: str
) -> BarChart:
    """``model``'s refusal rate by condition with Wilson intervals (``records``: its own)."""
    conf = ctx.options.confidence
    bars = []
    for r in records:
        n = r["n"]
        rci = stats.wilson_interval(r["refused"], n, conf) if n else None
        bars.append(
            Bar(
                ctx.label(r["condition"]),
                r["refusal_rate"],
                rci.low if rci else math.nan,
                rci.high if rci else math.nan,
                n=n,
            )
        )
    return BarChart(
        title=f"{model}: refusal rate by condition ({pct} Wilson CI)",
        bars=tuple(bars),
        value_label="refusal rate",
    )
