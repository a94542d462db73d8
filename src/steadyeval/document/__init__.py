"""The document model of reports: sections of blocks (paragraphs, notes, tables, charts, the
per-item table) and their Markdown rendering.

Studies build their report sections from these types; ``steadyeval.reports`` renders them
as HTML, Markdown and JSON and re-exports every name here (``from steadyeval.reports import
Section`` is the spelling for users). Nothing here imports another steadyeval package.
"""

from ._markdown import escape_markdown, render_markdown, sections_markdown
from ._model import (
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
    format_cell,
)

__all__ = [
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
]
