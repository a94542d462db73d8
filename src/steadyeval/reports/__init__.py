"""Reports of any run directory: one data model rendered as HTML, Markdown and JSON.

A :class:`Report` is sections of blocks (paragraphs, notes, tables, bar charts, heatmaps,
line charts, the per-item table). :func:`build_report` computes the generic sections from
``results.parquet`` (and ``summary.json``) and adds the sections a study registered with
:func:`~steadyeval.studies.register_study`. See ``docs/reports.md``.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from ..document import (
        Bar,
        BarChart,
        Block,
        CellKind,
        Column,
        Heatmap,
        ItemDetail,
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
        escape_markdown,
        format_cell,
        render_markdown,
        sections_markdown,
    )
    from ._build import build_report, context_from_table, load_context, study_sections
    from ._context import ReportContext
    from ._html import render_html, script_json
    from ._json import REPORT_JSON_SCHEMA, render_json, report_to_dict
    from ._options import ReportOptions
    from ._write import ReportFormat, render, write_report

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "._build": ["build_report", "context_from_table", "load_context", "study_sections"],
        "._context": ["ReportContext"],
        "._html": ["render_html", "script_json"],
        "._json": ["REPORT_JSON_SCHEMA", "render_json", "report_to_dict"],
        "._options": ["ReportOptions"],
        "._write": ["ReportFormat", "render", "write_report"],
        "..document": [
            "Bar",
            "BarChart",
            "Block",
            "CellKind",
            "Column",
            "Heatmap",
            "ItemDetail",
            "ItemTable",
            "LineChart",
            "Note",
            "Paragraph",
            "Point",
            "Preformatted",
            "RefLine",
            "Report",
            "Section",
            "Series",
            "Table",
            "escape_markdown",
            "format_cell",
            "render_markdown",
            "sections_markdown",
        ],
    },
)

__all__ = [
    "REPORT_JSON_SCHEMA",
    "Bar",
    "BarChart",
    "Block",
    "CellKind",
    "Column",
    "Heatmap",
    "ItemDetail",
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
    "escape_markdown",
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
