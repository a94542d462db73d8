"""Render a :class:`Report` as one self-contained HTML file (Jinja2, autoescaped)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import re
from functools import lru_cache
from importlib import resources
from typing import Any

import jinja2
from markupsafe import Markup

from .._version import __version__
from ..document import (
    BarChart,
    Block,
    Heatmap,
    ItemDetail,
    ItemTable,
    LineChart,
    Note,
    Paragraph,
    Preformatted,
    Report,
    Table,
)
from ._plots import bar_chart_svg, heatmap_svg, line_chart_svg

__all__ = ["breakable", "render_html", "script_json"]

_NUMERIC = {"int", "float", "pct", "pct_ci", "diff_ci", "pvalue"}


def _json_value(x: Any) -> Any:
    if isinstance(x, float) and (math.isnan(x) or math.isinf(x)):
        return None
    if isinstance(x, tuple | list):
        return [_json_value(v) for v in x]
    if isinstance(x, dict):
        return {str(k): _json_value(v) for k, v in x.items()}
    return x


def script_json(value: Any) -> Markup:
    """JSON that is safe inside ``<script type="application/json">``.

    ``<``, ``>`` and ``&`` are written as ``\\u003c``, ``\\u003e`` and ``\\u0026`` (so
    neither ``</script>`` nor ``<!--`` can occur), and U+2028/U+2029 are escaped too.
    NaN and infinities become ``null``.
    """
    text = json.dumps(
        _json_value(value), ensure_ascii=False, allow_nan=False, separators=(",", ":")
    )
    for raw, esc in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(raw, esc)
    return Markup(text)


#: Separators a name may wrap after (between two word characters): model specs and paths
#: such as ``hf:/tmp/models/gpt2-tiny@0123456789ab`` or ``hf-masked:disparity-g0-4848bdc7b718``.
_BREAK_AFTER = re.compile(r"(?<=\w)[/\-:@#?&=_]+(?=\w)")


def breakable(text: object) -> Markup:
    """``text`` escaped, with a ``<wbr>`` (a line-break opportunity that copies as nothing)
    after each run of ``/ - : @ # ? & = _`` between word characters, so a long model name
    or path wraps at its separators rather than mid-word (CSS alone cannot choose where a
    word breaks: ``overflow-wrap`` then breaks it anywhere, as the last resort). A sign
    before a number (``[-3.4``) is not between word characters and gets none."""
    raw = str(text)
    cuts = [m.end() for m in _BREAK_AFTER.finditer(raw)]
    pieces = [raw[i:j] for i, j in zip([0, *cuts], [*cuts, len(raw)], strict=True)]
    return Markup("<wbr>").join(pieces)


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("steadyeval.reports", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    env.filters["breakable"] = breakable
    return env


@lru_cache(maxsize=1)
def _asset(name: str) -> str:
    return (resources.files("steadyeval.reports") / "templates" / name).read_text("utf-8")


def _sort_value(value: Any, kind: str) -> Any:
    if kind in ("pct_ci", "diff_ci"):
        value = value[0] if isinstance(value, tuple | list) else value
    if kind == "bool" and value is not None:
        return int(bool(value))
    if kind in _NUMERIC and isinstance(value, int | float):
        return None if isinstance(value, float) and math.isnan(value) else repr(float(value))
    return None


#: A table or bar chart with more rows than this is folded in the HTML report (a click opens
#: it): a study of many conditions (100 formats, each on a couple of cells in a sparse
#: design) would otherwise push the study's own answer off the first screens.
FOLD_ROWS = 30


def _fold(n: int) -> int:
    """The rows a folded block shows in its summary line, or 0: not folded."""
    return n if n > FOLD_ROWS else 0


def _table_view(t: Table) -> dict[str, Any]:
    rows = []
    for raw, cells in zip(t.rows, t.cells(), strict=True):
        row = []
        for v, text, col in zip(raw, cells, t.columns, strict=True):
            cls = "num" if col.kind in _NUMERIC else ("text" if col.wide else None)
            # an estimate and its interval may go on two lines (each stays whole)
            parts = text.split(" [", 1) if col.kind in ("pct_ci", "diff_ci") else [text]
            if len(parts) == 2:
                parts[1] = "[" + parts[1]
                cls = "num ci"
            elif cls == "num" and isinstance(v, str):
                cls = "num words"  # words in a numeric column ("no discordant facts") wrap
            shown = text if cls and cls.startswith("num") else breakable(text)
            row.append({"text": shown, "parts": parts, "v": _sort_value(v, col.kind), "cls": cls})
        rows.append(row)
    return {
        "kind": "table",
        "title": t.title,
        "headers": [{"name": c.name, "help": c.help} for c in t.columns],
        "rows": rows,
        "note": t.note,
        "fold": _fold(len(rows)),
    }


#: The order of a drill-down record's fields in the page's JSON (arrays, not objects, keep
#: a large table small).
_DETAIL_FIELDS = tuple(f.name for f in dataclasses.fields(ItemDetail))
#: Drill-down numbers the page shows with 3 decimals: embedded rounded to them (smaller).
_SHOWN_3 = {"logprobs", "confidence", "sequence_logprob"}


def _detail_values(d: ItemDetail) -> list[Any]:
    out: list[Any] = []
    for name in _DETAIL_FIELDS:
        v = getattr(d, name)
        if name in _SHOWN_3 and v is not None:
            v = (
                [None if x is None else round(x, 3) for x in v]
                if name == "logprobs"
                else round(v, 3)
            )
        out.append(v)
    return out


def _items_view(b: ItemTable) -> dict[str, Any]:
    """The per-item table: its rows, what each row opens and the filters' conditions, as
    one JSON document the page's script reads (every text appears in it once)."""
    data = {
        "columns": [{"name": c.name, "kind": c.kind, "wide": c.wide} for c in b.columns],
        "rows": [list(r) for r in b.rows],
        "detail_fields": _DETAIL_FIELDS,
        "details": [_detail_values(d) for d in b.details],
        "prompts": b.prompts,
        "conditions": b.conditions,
    }
    return {
        "kind": "items",
        "title": b.title,
        "columns": b.columns,
        "note": b.note,
        "data": script_json(data),
    }


def _figure_view(
    b: BarChart | Heatmap | LineChart, svg: str, legend: str | None = None, **extra: Any
) -> dict[str, Any]:
    """A chart's view: its title, its drawing and its note (and a legend where it has one)."""
    return {
        "kind": "figure",
        "title": b.title,
        "svg": svg,
        "legend": legend,
        "note": b.note,
        **extra,
    }


def _block_view(b: Block) -> dict[str, Any]:
    if isinstance(b, Paragraph):
        return {"kind": "paragraph", "text": b.text}
    if isinstance(b, Preformatted):
        return {"kind": "pre", "text": b.text, "title": b.title}
    if isinstance(b, Note):
        return {"kind": "note", "text": b.text, "level": b.level}
    if isinstance(b, Table):
        return _table_view(b)
    if isinstance(b, BarChart):
        return _figure_view(b, bar_chart_svg(b), fold=_fold(len(b.bars)))
    if isinstance(b, Heatmap):
        return _figure_view(b, heatmap_svg(b), legend=b.legend)
    if isinstance(b, LineChart):
        return _figure_view(b, line_chart_svg(b))
    if isinstance(b, ItemTable):
        return _items_view(b)
    raise TypeError(f"cannot render a {type(b).__name__} block; expected one of {Block}")


def render_html(report: Report, *, csp: bool = True) -> str:
    """The report as one HTML document: inline CSS, inline script, inline SVG figures.

    Parameters
    ----------
    report : Report
        What to render.
    csp : bool
        Add a Content-Security-Policy that forbids any network access and runs only the
        report's own script (a second line of defence behind escaping; tests turn it off
        to check the escaping alone).

    Returns
    -------
    str
        The HTML text. Nothing in it is fetched at view time.
    """
    sections = [
        {
            "id": s.id,
            "title": s.title,
            "source": s.source,
            "blocks": [_block_view(b) for b in s.blocks],
        }
        for s in report.sections
    ]
    js = _asset("report.js")
    if "</script" in js.lower():  # our own asset; guard against an edit that breaks out
        raise ValueError("report.js must not contain '</script'")
    digest = hashlib.sha256(repr(report).encode("utf-8", "surrogatepass")).hexdigest()[:24]
    return (
        _environment()
        .get_template("report.html.j2")
        .render(
            report=report,
            sections=sections,
            css=Markup(_asset("report.css")),
            js=Markup(js),
            nonce=digest,
            csp=csp,
            version=__version__,
        )
    )
