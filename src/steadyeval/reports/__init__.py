"""Reports of any run directory: one data model rendered as HTML, Markdown and JSON.

A :class:`Report` is sections of blocks (paragraphs, notes, tables, bar charts, heatmaps,
line charts, the per-item table). :func:`build_report` computes the generic sections from
``results.parquet`` (and ``summary.json``) and adds the sections a study registered with
:func:`~steadyeval.studies.register_study`. See ``docs/reports.md``.
"""

from typing import TYPE_CHECKING

from .. import document
from .._lazy import lazy_exports
from ..document import *  # noqa: F403  (the document model, light: re-exported as is)

if TYPE_CHECKING:
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
    },
)

__all__ = [
    "REPORT_JSON_SCHEMA",
    "ReportContext",
    "ReportFormat",
    "ReportOptions",
    "build_report",
    "context_from_table",
    "load_context",
    "render",
    "render_html",
    "render_json",
    "report_to_dict",
    "script_json",
    "study_sections",
    "write_report",
]
__all__ += document.__all__
