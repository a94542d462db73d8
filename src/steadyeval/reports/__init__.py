"""Reports of any run directory: one data model rendered as HTML, Markdown and JSON.

A :class:`Report` is sections of blocks (paragraphs, notes, tables, bar charts, heatmaps,
line charts, the per-item table). :func:`build_report` computes the generic sections from
``results.parquet`` (and ``summary.json``) and adds the sections a study registered with
:func:`~steadyeval.studies.register_study`. See ``docs/reports.md``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from ._build import build_report, context_from_table, load_context, study_sections
from ._context import ReportContext, ReportOptions
from ._html import render_html, script_json
from ._json import REPORT_JSON_SCHEMA, render_json, report_to_dict
from ._markdown import render_markdown, sections_markdown
from ._model import (
    Bar,
    BarChart,
    Block,
    CellKind,
    Column,
    Heatmap,
    ItemTable,
    LineChart,
    Note,
    Paragraph,
    Point,
    Preformatted,
    RefLine,
    Report,
    Section,
    Series,
    Table,
    format_cell,
)

__all__ = [
    "REPORT_JSON_SCHEMA",
    "Bar",
    "BarChart",
    "Block",
    "CellKind",
    "Column",
    "Heatmap",
    "ItemTable",
    "LineChart",
    "Note",
    "Paragraph",
    "Point",
    "Preformatted",
    "RefLine",
    "Report",
    "ReportContext",
    "ReportFormat",
    "ReportOptions",
    "Section",
    "Series",
    "Table",
    "build_report",
    "context_from_table",
    "format_cell",
    "load_context",
    "render",
    "render_html",
    "render_json",
    "render_markdown",
    "report_to_dict",
    "script_json",
    "sections_markdown",
    "study_sections",
    "write_report",
]

ReportFormat = Literal["html", "md", "json"]
_SUFFIX = {"html": "html", "md": "md", "json": "json"}


def render(report: Report, fmt: ReportFormat) -> str:
    """Render ``report`` as ``html``, ``md`` or ``json``."""
    if fmt == "html":
        return render_html(report)
    if fmt == "md":
        return render_markdown(report)
    if fmt == "json":
        return render_json(report)
    raise ValueError(f"unknown report format {fmt!r}; expected one of html, md, json")


def write_report(
    run_dir: str | Path,
    *,
    fmt: ReportFormat = "html",
    output: str | Path | None = None,
    options: ReportOptions | None = None,
) -> Path:
    """Build the report of ``run_dir`` and write it (default ``RUN_DIR/report.<fmt>``).

    The file is written to a temporary name first and then renamed, so a reader never sees
    half a report. Returns the path written.
    """
    if fmt not in _SUFFIX:
        raise ValueError(f"unknown report format {fmt!r}; expected one of html, md, json")
    report = build_report(run_dir, options)
    path = Path(output) if output is not None else Path(run_dir) / f"report.{_SUFFIX[fmt]}"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(render(report, fmt), encoding="utf-8")
    tmp.replace(path)
    return path
