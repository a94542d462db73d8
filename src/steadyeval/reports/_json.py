"""Render a report as JSON: the same values the HTML and Markdown show, unformatted."""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

from ..document import (
    BarChart,
    Block,
    Heatmap,
    ItemTable,
    LineChart,
    Note,
    Paragraph,
    Preformatted,
    Report,
    Table,
    format_cell,
)

__all__ = ["REPORT_JSON_SCHEMA", "render_json", "report_to_dict"]

#: Identifies the layout of :func:`report_to_dict`'s output.
REPORT_JSON_SCHEMA = "steadyeval.report/1"


def _clean(x: Any) -> Any:
    if isinstance(x, float):
        return None if math.isnan(x) or math.isinf(x) else x
    if isinstance(x, tuple | list):
        return [_clean(v) for v in x]
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    return x


def _cell(value: Any, kind: str) -> Any:
    if kind in ("pct_ci", "diff_ci"):
        if value is None:
            return None
        est, low, high = value
        return {"estimate": est, "low": low, "high": high}
    return value


def _block(b: Block) -> dict[str, Any]:
    kind = {
        Paragraph: "paragraph",
        Preformatted: "preformatted",
        Note: "note",
        Table: "table",
        BarChart: "bar_chart",
        Heatmap: "heatmap",
        LineChart: "line_chart",
        ItemTable: "item_table",
    }[type(b)]
    if isinstance(b, Table | ItemTable):
        out: dict[str, Any] = {
            "type": kind,
            "title": b.title,
            "columns": [dataclasses.asdict(c) for c in b.columns],
            "rows": [[_cell(v, c.kind) for v, c in zip(r, b.columns, strict=True)] for r in b.rows],
            "text": [
                [format_cell(v, c.kind) for v, c in zip(r, b.columns, strict=True)] for r in b.rows
            ],
            "note": b.note,
        }
        if isinstance(b, ItemTable):
            out["total_rows"] = b.total_rows
            out["details"] = [dataclasses.asdict(d) for d in b.details]
            out["prompts"] = list(b.prompts)
            out["conditions"] = list(b.conditions)
        return out
    return {"type": kind, **dataclasses.asdict(b)}


def report_to_dict(report: Report) -> dict[str, Any]:
    """The report as plain data (NaN → ``null``); cells carry raw values and their text."""
    out: dict[str, Any] = _clean(
        {
            "schema": REPORT_JSON_SCHEMA,
            "title": report.title,
            "facts": [list(f) for f in report.facts],
            "warnings": list(report.warnings),
            "sections": [
                {
                    "id": s.id,
                    "title": s.title,
                    "source": s.source,
                    "blocks": [_block(b) for b in s.blocks],
                }
                for s in report.sections
            ],
        }
    )
    return out


def render_json(report: Report) -> str:
    """The report as a JSON document (see :func:`report_to_dict`)."""
    return json.dumps(report_to_dict(report), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
