"""The per-item table: every row of a small run, or every row of items sampled at random."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ._context import ReportContext
from ._model import Column, ItemTable, Section

__all__ = ["ITEM_COLUMNS", "item_section", "item_table"]

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


def _cut(col: pa.ChunkedArray, n: int) -> list[str | None]:
    """Strings cut to ``n`` characters (an ellipsis marks a cut)."""
    values: list[str | None] = col.to_pylist()
    return [v if v is None or len(v) <= n else v[: n - 1] + "…" for v in values]


def item_table(ctx: ReportContext) -> ItemTable:
    """The per-item rows, bounded by ``ctx.options.max_item_rows`` and ``max_chars``.

    A run with more rows than the bound shows every row of items drawn at random (seeded)
    until the bound is reached, so an item's conditions stay together and flips stay
    visible.
    """
    table = ctx.table
    total = table.num_rows
    limit = ctx.options.max_item_rows
    cut = ctx.options.max_chars
    if total <= limit:
        chosen = table
        how = f"All {total:,} rows."
    else:
        counts = pc.value_counts(table["item_id"])
        items = counts.field("values").to_pylist()
        sizes = np.asarray(counts.field("counts").to_numpy(), dtype=np.int64)
        order = np.random.default_rng(ctx.options.seed).permutation(len(items))
        room = np.cumsum(sizes[order]) <= limit
        picked = [items[i] for i in order[room]]
        if not picked:  # a single item has more rows than the bound
            chosen = table.slice(0, limit)
            how = f"The first {limit:,} of {total:,} rows."
        else:
            chosen = table.filter(pc.is_in(table["item_id"], pa.array(picked, pa.string())))
            how = (
                f"{chosen.num_rows:,} of {total:,} rows: every row of {len(picked):,} of "
                f"{len(items):,} items drawn at random (seed {ctx.options.seed})."
            )
    cols: list[list[Any]] = []
    for name in _SOURCE:
        if name not in chosen.column_names:
            cols.append([None] * chosen.num_rows)
        elif name in ("output", "parsed"):
            cols.append(_cut(chosen[name], cut))
        else:
            cols.append(chosen[name].to_pylist())
    rows = tuple(zip(*cols, strict=True)) if chosen.num_rows else ()
    note = (
        f"{how} The report holds at most {limit:,} rows with outputs and parsed answers cut "
        f"at {cut} characters (ReportOptions.max_item_rows / max_chars; "
        "`steadyeval report --max-rows/--max-chars`); the full table is results.parquet."
    )
    return ItemTable(
        title="Every answer: item, condition, model, output, parsed answer, outcome",
        columns=ITEM_COLUMNS,
        rows=tuple(tuple(r) for r in rows),
        total_rows=total,
        note=note,
    )


def item_section(ctx: ReportContext) -> Section:
    """The per-item table as a section."""
    return Section.of("items", "Per-item results", [item_table(ctx)])
