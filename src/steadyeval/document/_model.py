"""The report data model: a report is sections of blocks (text, tables, figures, item rows).

Every renderer (HTML, Markdown, JSON) reads the same objects, and every number shown as
text goes through :func:`format_cell`, so a number never differs between formats.
Figures are data (bars with intervals, a heatmap's cells, line series), not pictures: the
HTML renderer draws them as inline SVG, Markdown prints their data as a table and JSON
keeps the values.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias, get_args

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
    "format_cell",
]

CellKind = Literal["text", "int", "float", "pct", "pct_ci", "diff_ci", "pvalue", "bool"]
"""How a cell's value is shown.

``text``: any string. ``int``: an integer count. ``float``: 3 decimals (3 significant
digits below 0.001, so a small non-zero value never shows as 0.000).
``pct``: a share in [0, 1] shown as a percentage. ``pct_ci``: ``(estimate, low, high)``
shares, shown as ``25.0% [8.9, 53.2]``. ``diff_ci``: a signed difference of shares with its
interval, shown in percentage points. ``pvalue``: a p-value. ``bool``: yes/no.

A cell of any kind may hold a short remark (a ``str``) in place of its number, e.g.
``"no discordant pairs"`` where a test does not apply; it is shown as is.
"""

_DASH = "–"


def _missing(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


def format_cell(value: Any, kind: CellKind) -> str:
    """The text of one cell; the single place numbers become text.

    Parameters
    ----------
    value : Any
        The raw value (``None`` and NaN are shown as a dash).
    kind : CellKind
        How to show it (see :data:`CellKind`).

    Returns
    -------
    str
        The cell's text, identical in every output format.
    """
    if isinstance(value, str):  # a remark in place of a number, or text
        return value
    if kind == "pct_ci" or kind == "diff_ci":
        if _missing(value):
            return _DASH
        est, low, high = value
        if _missing(est):
            return _DASH
        head = f"{_pct(est)}%" if kind == "pct_ci" else f"{100 * est:+.1f} pp"
        if _missing(low) or _missing(high):
            return head
        return f"{head} [{100 * low:.1f}, {100 * high:.1f}]"
    if _missing(value):
        return _DASH
    if kind == "text":
        return str(value)
    if kind == "int":
        return str(int(value))
    if kind == "bool":
        return "yes" if value else "no"
    if kind == "pct":
        return f"{_pct(float(value))}%"
    if kind == "pvalue":
        p = float(value)
        return "<0.001" if p < 0.001 else f"{p:.3f}"
    if kind == "float":
        x = float(value)
        return f"{x:.3g}" if 0 < abs(x) < 1e-3 else f"{x:.3f}"
    raise ValueError(f"unknown cell kind {kind!r}; expected one of {CellKind.__args__}")  # type: ignore[attr-defined]


def _check_text(owner: str, name: str, value: Any, *, optional: bool = False) -> None:
    if not (isinstance(value, str) or (optional and value is None)):
        raise TypeError(f"{owner}.{name} must be a str; got {type(value).__name__}")


def _check_number(owner: str, name: str, value: Any, *, finite: bool = False) -> None:
    """A real number (NaN allowed unless ``finite``; numpy scalars are fine, bools not)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{owner}.{name} must be a number; got {type(value).__name__}")
    try:
        as_float = float(value)
    except OverflowError:
        raise ValueError(f"{owner}.{name} is too large to show; got {value!r:.40}") from None
    if finite and not math.isfinite(as_float):
        raise ValueError(f"{owner}.{name} must be finite; got {value!r}")


def _cell(table: str, row: int, column: Column, value: Any) -> str:
    """The cell's text; a cell its column cannot show is refused when the table is built
    (rendering would fail later, in one output format or another)."""
    try:
        if column.kind != "text" and isinstance(value, numbers.Real):
            float(value)  # an integer of 400 digits cannot be drawn or compared
        return format_cell(value, column.kind)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(
            f"table {table!r}: row {row}, column {column.name!r}: {value!r:.60} cannot be "
            f"shown as {column.kind!r}"
        ) from None


@dataclass(frozen=True)
class Column:
    """A table column: its header, how its cells are shown, an optional tooltip, and
    ``wide`` for long free text (model outputs) that should wrap."""

    name: str
    kind: CellKind = "text"
    help: str | None = None
    wide: bool = False

    def __post_init__(self) -> None:
        _check_text("Column", "name", self.name)
        _check_text("Column", "help", self.help, optional=True)
        if self.kind not in get_args(CellKind):
            raise ValueError(
                f"Column.kind must be one of {', '.join(get_args(CellKind))}; got {self.kind!r}"
            )


@dataclass(frozen=True)
class Paragraph:
    """Plain text (never markup; the HTML renderer escapes it)."""

    text: str

    def __post_init__(self) -> None:
        _check_text("Paragraph", "text", self.text)


@dataclass(frozen=True)
class Preformatted:
    """Text shown as is, in a monospace block (e.g. a study's own Markdown summary)."""

    text: str
    title: str | None = None

    def __post_init__(self) -> None:
        _check_text("Preformatted", "text", self.text)
        _check_text("Preformatted", "title", self.title, optional=True)


@dataclass(frozen=True)
class Note:
    """A highlighted remark: ``info`` or ``warning``."""

    text: str
    level: Literal["info", "warning"] = "info"

    def __post_init__(self) -> None:
        _check_text("Note", "text", self.text)
        if self.level not in ("info", "warning"):
            raise ValueError(f"Note.level must be 'info' or 'warning'; got {self.level!r}")


@dataclass(frozen=True)
class Table:
    """A table of raw values; cells are formatted by column kind."""

    title: str
    columns: tuple[Column, ...]
    rows: tuple[tuple[Any, ...], ...]
    note: str | None = None

    _cells: tuple[tuple[str, ...], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        _check_text("Table", "title", self.title)
        cells = []
        for i, row in enumerate(self.rows):
            if len(row) != len(self.columns):
                raise ValueError(
                    f"table {self.title!r}: row {i} has {len(row)} cells; expected "
                    f"{len(self.columns)} (one per column)"
                )
            pairs = zip(self.columns, row, strict=True)
            cells.append(tuple(_cell(self.title, i, c, v) for c, v in pairs))
        object.__setattr__(self, "_cells", tuple(cells))  # formatted once, when built

    def cells(self) -> list[list[str]]:
        """Every row's formatted cells."""
        return [list(row) for row in self._cells]


@dataclass(frozen=True)
class Bar:
    """One bar: a share with its interval (``low``/``high`` may be NaN)."""

    label: str
    estimate: float
    low: float = math.nan
    high: float = math.nan
    group: str | None = None
    n: int | None = None

    def __post_init__(self) -> None:
        _check_text("Bar", "label", self.label)
        for name in ("estimate", "low", "high"):
            _check_number("Bar", name, getattr(self, name))


@dataclass(frozen=True)
class RefLine:
    """A horizontal reference line (e.g. chance level) on a chart."""

    value: float
    label: str


@dataclass(frozen=True)
class BarChart:
    """Horizontal bars with interval whiskers; values are shares in [0, 1]."""

    title: str
    bars: tuple[Bar, ...]
    value_label: str = "accuracy"
    reference: tuple[RefLine, ...] = ()
    note: str | None = None


@dataclass(frozen=True)
class Heatmap:
    """A matrix of shares (colour) with a text per cell (e.g. flips and a p-value).

    ``values[i][j]`` is in [0, 1] or NaN (no colour); ``text[i][j]`` is shown in the cell;
    ``marked[i][j]`` draws an outline (e.g. above the noise floor).
    """

    title: str
    row_labels: tuple[str, ...]
    col_labels: tuple[str, ...]
    values: tuple[tuple[float, ...], ...]
    text: tuple[tuple[str, ...], ...]
    marked: tuple[tuple[bool, ...], ...] = ()
    value_label: str = "share"
    legend: str | None = None
    note: str | None = None

    def __post_init__(self) -> None:
        shape = (len(self.row_labels), len(self.col_labels))
        for name in ("values", "text", "marked"):
            grid = getattr(self, name)
            if name == "marked" and not grid:
                continue
            if len(grid) != shape[0] or any(len(r) != shape[1] for r in grid):
                raise ValueError(f"heatmap {self.title!r}: {name} must be {shape[0]}×{shape[1]}")


@dataclass(frozen=True)
class Point:
    """A point on a line chart, with an optional vertical interval and count."""

    x: float
    y: float
    low: float = math.nan
    high: float = math.nan
    n: int | None = None

    def __post_init__(self) -> None:
        _check_number("Point", "x", self.x, finite=True)
        _check_number("Point", "y", self.y, finite=True)
        _check_number("Point", "low", self.low)
        _check_number("Point", "high", self.high)


@dataclass(frozen=True)
class Series:
    """One line of a line chart."""

    name: str
    points: tuple[Point, ...]

    def __post_init__(self) -> None:
        _check_text("Series", "name", self.name)
        if not isinstance(self.points, Sequence) or not all(
            isinstance(p, Point) for p in self.points
        ):
            raise TypeError(f"Series {self.name!r}: points must be a sequence of Point")


@dataclass(frozen=True)
class LineChart:
    """Lines over a numeric x axis; ``diagonal`` draws y = x (reliability diagrams)."""

    title: str
    series: tuple[Series, ...]
    x_label: str
    y_label: str
    x_range: tuple[float, float] | None = None
    y_range: tuple[float, float] = (0.0, 1.0)
    diagonal: bool = False
    x_is_share: bool = False
    note: str | None = None


@dataclass(frozen=True)
class ItemDetail:
    """What opening one per-item row shows besides its cells (texts already cut).

    ``options`` are in the order the model saw them, with ``logprobs`` (raw option
    log-probabilities, aligned with ``options``) and ``source`` (each shown option's index
    among the item's original options, −1 for an escape option such as "none of the
    above"). ``gold_options`` and ``chosen`` are original indices, so the shown gold and
    chosen options are those whose ``source`` matches. ``prompt`` indexes
    :attr:`ItemTable.prompts` (rows asked the same prompt share it).
    """

    prompt: int | None = None
    options: tuple[str, ...] | None = None
    logprobs: tuple[float | None, ...] | None = None
    source: tuple[int, ...] | None = None
    gold: tuple[str, ...] = ()
    gold_options: tuple[int, ...] | None = None
    chosen: int | None = None
    confidence: float | None = None
    sequence_logprob: float | None = None
    scoring: str | None = None
    n_shots_used: int | None = None
    approximate: bool | None = None
    truncated: bool | None = None


@dataclass(frozen=True)
class ItemTable:
    """The per-item rows: searchable, sortable and paged in HTML; a row opens its details
    and the same unit (item, model, sample) under every other condition.

    ``rows`` hold raw values (already cut to ``max_chars`` characters); ``total_rows`` is how
    many rows the run has and ``note`` says how the shown rows were chosen and bounded.
    ``details`` (empty, or one per row) and ``prompts`` feed the drill-down;
    ``conditions`` are the condition labels in run order (the filters' order).
    """

    title: str
    columns: tuple[Column, ...]
    rows: tuple[tuple[Any, ...], ...]
    total_rows: int
    note: str
    details: tuple[ItemDetail, ...] = ()
    prompts: tuple[str, ...] = ()
    conditions: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.details and len(self.details) != len(self.rows):
            raise ValueError(
                f"item table: {len(self.details)} details for {len(self.rows)} rows; "
                "give one per row or none"
            )


Block: TypeAlias = (
    Paragraph | Preformatted | Note | Table | BarChart | Heatmap | LineChart | ItemTable
)


@dataclass(frozen=True)
class Section:
    """A titled part of a report; ``id`` is its anchor (letters, digits, dashes).

    ``labels`` are (condition, label) pairs: the names this section shows conditions by
    (e.g. ``list-nota`` as ``list + "none of the above"``). A report shows every condition
    by one label, so the generic sections take a study section's labels. A study section
    with ``lead`` set comes first, before the generic headline table: the study's own
    answer (the few-shot methods side by side, the spread's quantiles).
    """

    id: str
    title: str
    blocks: tuple[Block, ...]
    source: str = "steadyeval"
    labels: tuple[tuple[str, str], ...] = ()
    lead: bool = False

    def __post_init__(self) -> None:
        _check_text("Section", "id", self.id)
        _check_text("Section", "title", self.title)
        if isinstance(self.blocks, str) or not isinstance(self.blocks, Sequence):
            raise TypeError(f"section {self.id!r}: blocks must be a sequence of blocks")
        for i, block in enumerate(self.blocks):
            if not isinstance(block, Block):
                raise TypeError(
                    f"section {self.id!r}: block {i} is a {type(block).__name__}; expected "
                    f"one of {', '.join(t.__name__ for t in get_args(Block))}"
                )

    @classmethod
    def of(
        cls,
        id: str,
        title: str,
        blocks: Sequence[Block],
        source: str = "steadyeval",
        labels: Mapping[str, str] | None = None,
        *,
        lead: bool = False,
    ) -> Section:
        """Build a section from any sequence of blocks (and a condition → label map)."""
        pairs = tuple((str(k), str(v)) for k, v in (labels or {}).items())
        return cls(id=id, title=title, blocks=tuple(blocks), source=source, labels=pairs, lead=lead)


@dataclass(frozen=True)
class Report:
    """A whole report: a title, facts about the run and sections."""

    title: str
    sections: tuple[Section, ...]
    facts: tuple[tuple[str, str], ...] = ()
    warnings: tuple[str, ...] = field(default=())
