"""The study's view of the results (used by
:meth:`steadyeval.studies.sensitivity._tensor.Correctness.from_results`): its rows checked,
each row's fact, template and name index, and each cell's mean correctness and prediction.
The columns come from the :class:`~steadyeval.results.ResultsFrame` (codes numbered in
order of first appearance, correctness as 1/0/-1); this module does the study's own work on
them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from ..._errors import ConfigError
from ...items import shorten

if TYPE_CHECKING:
    from ._types import TemplateAlias

__all__ = [
    "READS",
    "cell_means",
    "cell_predictions",
    "check_rows",
    "fact_ranks",
    "template_and_alias",
]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

#: The columns the tensor needs (and the unit's column, unless units are items); a cell
#: averages its rows, one per sample.
READS = ("model", "condition", "item_id", "correct", "parsed", "sample_index")


def check_rows(
    roles: Mapping[str, Any],
    unit_key: str,
    cond: IntArray,
    cond_values: list[Any],
    unit: IntArray,
    correct: NDArray[np.int8],
    item: IntArray,
    item_values: list[Any],
) -> None:
    """Every row must be of one of the study's conditions and have a correctness (1/0, not
    -1) and a unit (code >= 0); the table must have rows. Errors name the first bad row,
    its condition and item."""
    known_cond = np.asarray([c in roles for c in cond_values] + [False], dtype=bool)
    known = known_cond[cond]  # a null condition (-1) is unknown
    correct_valid = correct >= 0
    bad = known & (~correct_valid | (unit < 0))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        name, item_id = cond_values[int(cond[i])], item_values[int(item[i])]
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
    if not cond.size:
        raise ConfigError("the results table has no rows for this study's conditions")


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
    roles: Mapping[str, TemplateAlias],
    templates: tuple[str, ...],
    cond_values: list[Any],
    cond: IntArray,
) -> tuple[IntArray, IntArray]:
    """Each row's template index and name (alias) index, from its condition's role."""
    t_index = {t: k for k, t in enumerate(templates)}
    template_of = np.asarray(
        [t_index[roles[c].template] if c in roles else -1 for c in cond_values], np.int64
    )
    alias_of = np.asarray([roles[c].alias if c in roles else -1 for c in cond_values])
    return template_of[cond], alias_of[cond].astype(np.int64)


def cell_means(flat: IntArray, ok: FloatArray, total: int) -> FloatArray:
    """The mean correctness of each cell (NaN for cells no row fills)."""
    sums = np.bincount(flat, weights=ok, minlength=total)
    counts = np.bincount(flat, minlength=total).astype(np.float64)
    with np.errstate(invalid="ignore"):
        means: FloatArray = sums / counts
    return means


def cell_predictions(
    parsed: IntArray, parsed_values: list[Any], flat: IntArray, total: int
) -> tuple[IntArray, tuple[str, ...]]:
    """The prediction of each cell: the parsed text of its first row, coded in order of
    first use (-1 for cells no row fills), and the text of each code. ``parsed`` codes each
    row's text in ``parsed_values`` (-1: null); a null prediction is the text ``"\\x00"``,
    as a row-by-row pass would store it."""
    texts = [str(v) for v in parsed_values] + ["\x00"]
    text_id = np.asarray([texts.index(t) for t in texts], dtype=np.int64)  # merge equal texts
    text = text_id[np.where(parsed < 0, len(parsed_values), parsed)]
    asked, first_rows = np.unique(flat, return_index=True)
    pred = np.full(total, -1, dtype=np.int64)
    if not asked.size:
        return pred, ()
    in_order = np.argsort(first_rows, kind="stable")  # cells by their first row
    used = text[first_rows[in_order]]
    # Texts numbered in order of first use by the cells (not by the rows).
    uniq, first = np.unique(used, return_index=True)
    order = uniq[np.argsort(first, kind="stable")]
    rank = np.full(len(texts), -1, dtype=np.int64)
    rank[order] = np.arange(order.size, dtype=np.int64)
    pred[asked[in_order]] = rank[used]
    return pred, tuple(texts[int(t)] for t in order)
