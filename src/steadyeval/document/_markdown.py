"""Render a report (or a study's sections) as Markdown; figures become tables of their data."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ._model import (
    BarChart,
    Block,
    CellKind,
    Column,
    Heatmap,
    ItemTable,
    LineChart,
    Note,
    Paragraph,
    Preformatted,
    Report,
    Section,
    Table,
    format_cell,
)

__all__ = ["escape_markdown", "render_markdown", "sections_markdown"]

#: Per-item rows printed in Markdown (the HTML and JSON reports hold the bounded table).
MARKDOWN_ITEM_ROWS = 20


#: What could turn text into markup: ``<`` opening a tag, comment, declaration or autolink;
#: ``&`` starting a character reference; ``](`` closing a link's text before its target.
_ACTIVE = re.compile(r"<(?=[A-Za-z/!?])|&(?=#?[A-Za-z0-9]+;)|\](?=\()")


def escape_markdown(text: str) -> str:
    """``text`` as literal Markdown: a backslash before whatever could become markup
    (``\\<b>``, ``\\&amp;``, ``[x\\](url)``) and before backslashes; never an HTML entity,
    so ``<0.001`` and ``a < b`` stay as they are."""
    return _ACTIVE.sub(lambda m: "\\" + m.group(0), text.replace("\\", "\\\\"))


def _cell(text: str) -> str:
    """A Markdown table cell: escaped (:func:`escape_markdown`), pipes escaped, line breaks
    made spaces."""
    return (
        escape_markdown(text)
        .replace("|", "\\|")
        .replace("\r\n", " ")
        .replace("\n", " ")
        .replace("\r", " ")
    )


def _text(text: str) -> str:
    """Running text, escaped (:func:`escape_markdown`); a leading ``>`` or ``#`` would start
    a quote or a heading."""
    text = escape_markdown(text)
    return "\\" + text if text.startswith((">", "#")) else text


def _grid(
    headers: Sequence[str], rows: Sequence[Sequence[str]], numeric: Sequence[bool]
) -> list[str]:
    out = [
        "| " + " | ".join(_cell(h) for h in headers) + " |",
        "|" + "|".join("---:" if n else "---" for n in numeric) + "|",
    ]
    out += ["| " + " | ".join(_cell(c) for c in r) + " |" for r in rows]
    return out


def _table(t: Table | ItemTable, rows: Sequence[Sequence[object]] | None = None) -> list[str]:
    cols: Sequence[Column] = t.columns
    raw = t.rows if rows is None else rows
    cells = [[format_cell(v, c.kind) for v, c in zip(r, cols, strict=True)] for r in raw]
    numeric = [c.kind not in ("text", "bool") for c in cols]
    return _grid([c.name for c in cols], cells, numeric)


def _x_kind(x: float, share: bool) -> CellKind:
    """A line chart's x as a share, a whole number (shots, an index) or a decimal."""
    if share:
        return "pct"
    return "int" if float(x).is_integer() else "float"


def _block(b: Block, level: int) -> list[str]:
    h = "#" * level
    if isinstance(b, Paragraph):
        return [_text(b.text), ""]
    if isinstance(b, Preformatted):
        head = [f"{h} {_text(b.title)}", ""] if b.title else []
        fence = "````" if "```" in b.text else "```"
        return [*head, fence + "text", b.text.rstrip("\n"), fence, ""]
    if isinstance(b, Note):
        tag = "**Warning:** " if b.level == "warning" else "**Note:** "
        return [f"> {tag}{_text(b.text)}", ""]
    if isinstance(b, Table):
        out = [f"{h} {_text(b.title)}", ""] if b.title else []
        out += [*_table(b), ""]
        if b.note:
            out += [_text(b.note), ""]
        return out
    if isinstance(b, BarChart):
        out = [f"{h} {_text(b.title)}", ""]
        out += _grid(
            ["", b.value_label, "n"],
            [
                [
                    bar.label,
                    format_cell((bar.estimate, bar.low, bar.high), "pct_ci"),
                    format_cell(bar.n, "int"),
                ]
                for bar in b.bars
            ],
            [False, True, True],
        )
        out += [""]
        if b.note:
            out += [_text(b.note), ""]
        return out
    if isinstance(b, Heatmap):
        out = [f"{h} {_text(b.title)}", ""]
        rows = [
            [lab, *(t.replace("\n", ", ") for t in b.text[i])] for i, lab in enumerate(b.row_labels)
        ]
        if b.marked:
            rows = [
                [r[0], *(f"**{c}**" if b.marked[i][j] else c for j, c in enumerate(r[1:]))]
                for i, r in enumerate(rows)
            ]
        out += _grid(["", *b.col_labels], rows, [False] * (len(b.col_labels) + 1))
        out += [""]
        if b.legend:
            out += [_text(b.legend.replace("outlined", "bold")), ""]
        return out
    if isinstance(b, LineChart):
        out = [f"{h} {_text(b.title)}", ""]
        rows = [
            [
                s.name,
                format_cell(p.x, _x_kind(p.x, b.x_is_share)),
                format_cell((p.y, p.low, p.high), "pct_ci"),
                format_cell(p.n, "int"),
            ]
            for s in b.series
            for p in s.points
        ]
        out += _grid(["series", b.x_label, b.y_label, "n"], rows, [False, True, True, True])
        out += [""]
        if b.note:
            out += [_text(b.note), ""]
        return out
    if isinstance(b, ItemTable):
        out = [f"{h} {_text(b.title)}", ""]
        shown = b.rows[:MARKDOWN_ITEM_ROWS]
        out += [*_table(b, shown), ""]
        out += [
            f"First {len(shown)} of the report's {len(b.rows):,} rows ({b.total_rows:,} in the "
            "run); the HTML report has the searchable table. " + _text(b.note),
            "",
        ]
        return out
    raise TypeError(f"cannot render a {type(b).__name__} block as Markdown")


def sections_markdown(sections: Sequence[Section], *, level: int = 2) -> str:
    """Markdown for ``sections`` alone (headings start at ``level``), e.g. a study's part
    of ``summary.md``."""
    out: list[str] = []
    for s in sections:
        out += [f"{'#' * level} {_text(s.title)}", ""]
        for b in s.blocks:
            out += _block(b, level + 1)
    return "\n".join(out).rstrip("\n") + "\n"


def render_markdown(report: Report) -> str:
    """The whole report as Markdown."""
    out = [f"# {_text(report.title)}", ""]
    out += [f"- {k}: {_text(v)}" for k, v in report.facts] + [""]
    for w in report.warnings:
        out += [f"> **Warning:** {_text(w)}", ""]
    return "\n".join(out) + "\n" + sections_markdown(report.sections)
