"""Reading a results table into the correctness tensor's cells (used by
:meth:`steadyeval.studies.sensitivity._tensor.Correctness.from_table`): dictionary codes,
the study's rows, each row's fact, template and name index, and each cell's mean
correctness and prediction."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from ..._errors import ConfigError
from ...items import shorten

__all__ = [
    "cell_means",
    "cell_predictions",
    "check_columns",
    "column_codes",
    "fact_ranks",
    "first_seen",
    "study_rows",
    "template_and_alias",
]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


def column_codes(column: pa.ChunkedArray) -> tuple[IntArray, list[Any]]:
    """Dictionary codes of ``column`` (one dictionary across chunks; null → -1)."""
    encoded = column.dictionary_encode()
    if encoded.num_chunks == 0:
        return np.zeros(0, dtype=np.int64), []
    parts = [c.indices.fill_null(-1).to_numpy(zero_copy_only=False) for c in encoded.chunks]
    return np.concatenate(parts).astype(np.int64), encoded.chunk(0).dictionary.to_pylist()


def first_seen(codes: IntArray) -> tuple[IntArray, IntArray]:
    """Distinct ``codes`` in order of first appearance, and each code's rank in that order
    (an array indexed by code; -1 for codes that do not appear)."""
    uniq, first = np.unique(codes, return_index=True)
    order = uniq[np.argsort(first, kind="stable")]
    rank = np.full(int(codes.max()) + 1 if codes.size else 0, -1, dtype=np.int64)
    rank[order] = np.arange(order.size, dtype=np.int64)
    return order, rank


def check_columns(table: pa.Table, unit_key: str) -> None:
    """The table must have the columns the tensor reads (and the unit's, unless items)."""
    need = ["model", "condition", "item_id", "correct", "parsed", "sample_index"]
    if unit_key in ("relation", "subject"):
        need.append(unit_key)
    missing = [c for c in need if c not in table.column_names]
    if missing:
        raise ConfigError(f"results table lacks column(s) {', '.join(missing)}")


def study_rows(
    table: pa.Table,
    roles: Mapping[str, Any],
    unit_key: str,
    cond: IntArray,
    cond_values: list[Any],
    unit: IntArray,
) -> IntArray:
    """Indices of the rows of the study's conditions; every such row must have a
    correctness and a unit, and every row must be of one of the study's conditions."""
    known_cond = np.asarray([c in roles for c in cond_values] + [False], dtype=bool)
    known = known_cond[cond]  # a null condition (-1) is unknown
    correct_valid = pc.is_valid(table.column("correct")).to_numpy(zero_copy_only=False)
    bad = known & (~correct_valid | (unit < 0))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        name, item_id = cond_values[int(cond[i])], table.column("item_id")[i].as_py()
        if not correct_valid[i]:
            raise ConfigError(
                f"row {i} (condition {shorten(repr(name))}, item {shorten(repr(item_id))}) has "
                "no correctness; "
                "the sensitivity analysis needs a scoring that decides correct/wrong"
            )
        raise ConfigError(f"row {i} (item {shorten(repr(item_id))}) has no {unit_key}")
    unknown = {str(cond_values[int(c)]) if c >= 0 else "null" for c in np.unique(cond[~known])}
    if unknown:
        raise ConfigError(
            f"conditions {', '.join(sorted(unknown))} are not in the study's design; "
            "was this table made by another study?"
        )
    rows = np.flatnonzero(known)
    if not rows.size:
        raise ConfigError("the results table has no rows for this study's conditions")
    return rows


def fact_ranks(
    u: IntArray, item: IntArray, n_units: int, item_values: list[Any]
) -> tuple[IntArray, list[tuple[str, ...]]]:
    """Each row's fact index within its unit (``u``: unit rank, ``item``: item code), and
    each unit's fact ids: a unit's facts in the order they first appear among its rows."""
    n_items = len(item_values)
    pair = u * n_items + item
    pairs, first = np.unique(pair, return_index=True)
    by_unit = np.lexsort((first, pairs // n_items))  # by unit, then first appearance
    pairs_sorted = pairs[by_unit]
    unit_of_pair = pairs_sorted // n_items
    starts = np.searchsorted(unit_of_pair, np.arange(n_units + 1))
    fact_rank = np.empty(pairs.size, dtype=np.int64)
    fact_rank[by_unit] = np.arange(pairs.size) - starts[unit_of_pair]
    f = fact_rank[np.searchsorted(pairs, pair)]
    facts = [
        tuple(item_values[int(k) % n_items] for k in pairs_sorted[starts[x] : starts[x + 1]])
        for x in range(n_units)
    ]
    return f, facts


def template_and_alias(
    roles: Mapping[str, Mapping[str, Any]],
    templates: tuple[str, ...],
    cond_values: list[Any],
    cond: IntArray,
) -> tuple[IntArray, IntArray]:
    """Each row's template index and name (alias) index, from its condition's role."""
    t_index = {t: k for k, t in enumerate(templates)}
    template_of = np.asarray(
        [t_index[roles[c]["template"]] if c in roles else -1 for c in cond_values], np.int64
    )
    alias_of = np.asarray([int(roles[c]["alias"]) if c in roles else -1 for c in cond_values])
    return template_of[cond], alias_of[cond].astype(np.int64)


def cell_means(flat: IntArray, ok: FloatArray, total: int) -> FloatArray:
    """The mean correctness of each cell (NaN for cells no row fills)."""
    sums = np.bincount(flat, weights=ok, minlength=total)
    counts = np.bincount(flat, minlength=total).astype(np.float64)
    with np.errstate(invalid="ignore"):
        means: FloatArray = sums / counts
    return means


def cell_predictions(
    parsed_column: pa.ChunkedArray, rows: IntArray, flat: IntArray, total: int
) -> tuple[IntArray, tuple[str, ...]]:
    """The prediction of each cell: the parsed text of its first row, coded in order of
    first use (-1 for cells no row fills), and the text of each code. A null prediction is
    the text ``"\\x00"``, as a row-by-row pass would store it."""
    parsed, parsed_values = column_codes(parsed_column)
    texts = ["\x00" if v is None else str(v) for v in parsed_values] + ["\x00"]
    text_id = np.asarray([texts.index(t) for t in texts], dtype=np.int64)  # merge equal texts
    text = text_id[np.where(parsed < 0, len(parsed_values), parsed)[rows]]
    asked, first_rows = np.unique(flat, return_index=True)
    pred = np.full(total, -1, dtype=np.int64)
    if not asked.size:
        return pred, ()
    in_order = np.argsort(first_rows, kind="stable")  # cells by their first row
    order, rank = first_seen(text[first_rows[in_order]])
    pred[asked[in_order]] = rank[text[first_rows[in_order]]]
    return pred, tuple(texts[int(t)] for t in order)
