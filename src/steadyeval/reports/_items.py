"""The per-item table: every row of a small run, or every row of items sampled at random."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..document import Block, Column, ItemDetail, ItemTable, Note, Section
from ._context import ReportContext

__all__ = ["ITEM_COLUMNS", "item_details", "item_section", "item_table"]

ITEM_COLUMNS = (
    Column("item"),
    Column("condition"),
    Column("model"),
    Column("sample", "int"),
    Column("output", wide=True),
    Column("parsed", wide=True),
    Column("kind"),
    Column("correct", "bool"),
    Column("refused", "bool"),
)
_SOURCE = (
    "item_id",
    "condition",
    "model",
    "sample_index",
    "output",
    "parsed",
    "parsed_kind",
    "correct",
    "refused",
)


#: Columns the drill-down reads (a table without one shows nothing for it).
_DETAIL_SOURCE = (
    "prompt",
    "options",
    "option_logprobs",
    "option_source",
    "gold",
    "gold_options",
    "parsed_option",
    "confidence",
    "sequence_logprob",
    "scoring",
    "n_shots_used",
    "approximate",
    "truncated",
)


def _cut_text(v: str | None, n: int) -> str | None:
    """``v`` cut to ``n`` characters (an ellipsis marks a cut)."""
    return v if v is None or len(v) <= n else v[: n - 1] + "…"


def _cut_middle(v: str, n: int) -> str:
    """``v`` cut to ``n`` characters by leaving out its middle (a prompt's start holds the
    instructions and its end the question being asked); a marked line says how much."""
    if len(v) <= n:
        return v
    head, tail = n - n // 2, n // 2
    # end the start and begin the end at a word boundary when one is near
    cut = v.rfind(" ", max(head - 20, 1), head + 1)
    head = cut if cut > 0 else head
    start = v.find(" ", len(v) - tail - 1, len(v) - tail + 20)
    start = start + 1 if start >= 0 else len(v) - tail
    return f"{v[:head]}\n[… {start - head:,} characters left out …]\n{v[start:]}"


def _cut(col: pa.ChunkedArray, n: int) -> list[str | None]:
    """Strings cut to ``n`` characters (an ellipsis marks a cut)."""
    return [_cut_text(v, n) for v in col.to_pylist()]


def _column(table: pa.Table, name: str) -> list[Any]:
    if name not in table.column_names:
        return [None] * table.num_rows
    values: list[Any] = table.column(name).to_pylist()
    return values


def _num(v: float | None) -> float | None:
    """A float for JSON: NaN and infinities (an option with no probability) become None."""
    return None if v is None or not math.isfinite(v) else v


def _nums(values: list[float | None] | None) -> tuple[float | None, ...] | None:
    return None if values is None else tuple(_num(v) for v in values)


def item_details(table: pa.Table, n: int) -> tuple[tuple[ItemDetail, ...], tuple[str, ...]]:
    """The drill-down of every row of ``table`` and the distinct prompts they point to
    (texts cut to ``n`` characters; a prompt keeps its start and end)."""
    cols = {name: _column(table, name) for name in _DETAIL_SOURCE}
    prompts: dict[str, int] = {}
    details = []
    for i in range(table.num_rows):
        prompt = cols["prompt"][i]
        options = cols["options"][i]
        gold = cols["gold"][i]
        details.append(
            ItemDetail(
                prompt=None
                if prompt is None
                else prompts.setdefault(_cut_middle(prompt, n), len(prompts)),
                options=None if options is None else tuple(_cut_text(o, n) or "" for o in options),
                logprobs=_nums(cols["option_logprobs"][i]),
                source=_tuple(cols["option_source"][i]),
                gold=tuple(_cut_text(g, n) or "" for g in gold or ()),
                gold_options=_tuple(cols["gold_options"][i]),
                chosen=cols["parsed_option"][i],
                confidence=_num(cols["confidence"][i]),
                sequence_logprob=_num(cols["sequence_logprob"][i]),
                scoring=cols["scoring"][i],
                n_shots_used=cols["n_shots_used"][i],
                approximate=cols["approximate"][i],
                truncated=cols["truncated"][i],
            )
        )
    return tuple(details), tuple(prompts)


def _tuple(values: list[int] | None) -> tuple[int, ...] | None:
    return None if values is None else tuple(values)


def _choose(ctx: ReportContext) -> tuple[pa.Table, str]:
    """The rows the report holds (at most ``max_item_rows``) and how they were chosen."""
    table = ctx.table
    total = table.num_rows
    limit = ctx.options.max_item_rows
    if total <= limit:
        return table, f"All {total:,} rows."
    counts = pc.value_counts(table["item_id"])
    items = counts.field("values").to_pylist()
    sizes = np.asarray(counts.field("counts").to_numpy(), dtype=np.int64)
    order = np.random.default_rng(ctx.options.seed).permutation(len(items))
    room = np.cumsum(sizes[order]) <= limit
    picked = [items[i] for i in order[room]]
    if not picked:  # a single item has more rows than the bound
        return table.slice(0, limit), (
            f"The first {limit:,} of {total:,} rows ({total - limit:,} left out; a row "
            "opens only the conditions shown here)."
        )
    chosen = table.filter(pc.is_in(table["item_id"], pa.array(picked, pa.string())))
    return chosen, (
        f"{chosen.num_rows:,} of {total:,} rows ({total - chosen.num_rows:,} left out): "
        f"every row of {len(picked):,} of {len(items):,} items drawn at random "
        f"(seed {ctx.options.seed})."
    )


def item_table(ctx: ReportContext) -> ItemTable:
    """The per-item rows, bounded by ``ctx.options.max_item_rows`` and ``max_chars``, with
    what opening a row shows (prompt, options with log-probabilities, gold, ...).

    A run with more rows than the bound shows every row of items drawn at random (seeded)
    until the bound is reached, so an item's conditions stay together and flips stay
    visible.
    """
    chosen, how = _choose(ctx)
    limit = ctx.options.max_item_rows
    cut = ctx.options.max_chars
    cols: list[list[Any]] = []
    for name in _SOURCE:
        if name in ("output", "parsed") and name in chosen.column_names:
            cols.append(_cut(chosen[name], cut))
        elif name == "condition":
            cols.append([ctx.label(c) for c in _column(chosen, name)])
        else:
            cols.append(_column(chosen, name))
    rows = tuple(zip(*cols, strict=True)) if chosen.num_rows else ()
    details, prompts = item_details(chosen, cut)
    note = (
        f"{how} The report holds at most {limit:,} rows, with prompts, options, outputs and "
        f"parsed answers cut at {cut} characters (a prompt keeps its start and end; "
        "ReportOptions.max_item_rows / max_chars; `steadyeval report --max-rows/--max-chars`); "
        "the full table is results.parquet. Click a row (or press Enter on it) to see its "
        "prompt, options with log-probabilities, gold answer and the same item under every "
        "other condition."
    )
    return ItemTable(
        title="Every answer: item, condition, model, output, parsed answer, outcome",
        columns=ITEM_COLUMNS,
        rows=tuple(tuple(r) for r in rows),
        total_rows=ctx.table.num_rows,
        note=note,
        details=details,
        prompts=prompts,
        conditions=tuple(ctx.label(c) for c in ctx.conditions),
    )


def item_section(ctx: ReportContext) -> Section:
    """The per-item table as a section (with a warning when rows were left out)."""
    table = item_table(ctx)
    blocks: list[Block] = [table]
    left_out = table.total_rows - len(table.rows)
    if left_out:
        blocks.insert(
            0,
            Note(
                f"{left_out:,} of the run's {table.total_rows:,} rows are not in this report "
                f"(it holds at most {ctx.options.max_item_rows:,}; `steadyeval report "
                "--max-rows N` keeps more). results.parquet has them all.",
                "warning",
            ),
        )
    return Section.of("items", "Per-item results", blocks)
