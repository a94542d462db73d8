"""The knowledge study's analysis frame: the results table's columns in pandas, with each
item's category and subcategory and each row's rotation.

For the analysis (``lists=False``) item ids become integer codes (their ranks in sorted order)
and labels become categories sorted like the labels, so a million-row table is sorted,
pivoted and grouped without copying its strings; :func:`_rotation` is the row-by-row rule
that :func:`_rotations_of` applies to whole columns.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from ...items import subject_info

_COLUMNS = [
    "model",
    "item_id",
    "condition",
    "template",
    "scoring",
    "option_order",
    "n_shots",
    "n_shots_used",
    "subject",
    "metadata",
    "correct",
    "confidence",
    "option_logprobs",
    "option_logprobs_per_token",
    "option_logprobs_per_char",
    "option_source",
    "gold_options",
    "parsed_option",
    "sequence_logprob",
    "n_input_tokens",
    "truncated",
]
#: List columns: read by the option-scoring analysis only, straight from the table.
_LIST_COLUMNS = (
    "option_logprobs",
    "option_logprobs_per_token",
    "option_logprobs_per_char",
    "option_source",
    "gold_options",
)
#: The setting of a condition: comparisons pair conditions that differ along one of these.
_SETTING = ["model", "scoring", "template", "n_shots"]
#: Label columns held as categories in the analysis frame.
_LABEL_COLUMNS = ("model", "condition", "scoring", "template", "subject", "category", "subcategory")


def _rotation(row: Mapping[Any, Any]) -> float:
    """The rotation of one row (see :func:`knowledge_frame`; :func:`_rotations_of` is the
    same rule on whole columns)."""
    if row["option_order"] == "original":
        return 0.0
    src = row["option_source"]
    if row["option_order"] == "rotated" and src is not None and len(src):
        return float(src[0])
    return math.nan  # shuffled or unknown: not a rotation


def _sorted_codes(column: pa.ChunkedArray) -> tuple[NDArray[np.int64], list[str]] | None:
    """Each value's rank among the column's sorted distinct values (``pd.factorize(...,
    sort=True)``'s codes) and those values, from a dictionary encoding: the million strings
    are never turned into Python objects. None for a column with nulls or not of strings."""
    if column.null_count or not pa.types.is_string(column.type):
        return None
    encoded = pc.dictionary_encode(column.combine_chunks())
    values = encoded.dictionary.to_pylist()
    order = sorted(range(len(values)), key=values.__getitem__)
    rank = np.empty(len(values), dtype=np.int64)
    rank[order] = np.arange(len(values), dtype=np.int64)
    codes: NDArray[np.int64] = rank[encoded.indices.to_numpy(zero_copy_only=False)]
    return codes, [values[i] for i in order]


def _rotations_of(table: pa.Table) -> NDArray[np.float64]:
    """Per row: 0 for the original order, the first shown option's source index for a
    rotation, NaN otherwise."""
    order = table.column("option_order")
    src = table.column("option_source")
    out = np.full(table.num_rows, math.nan)
    original = pc.fill_null(pc.equal(order, "original"), False).to_numpy(zero_copy_only=False)
    out[original] = 0.0
    length = pc.fill_null(pc.list_value_length(src), 0)
    rotated = pc.and_(pc.fill_null(pc.equal(order, "rotated"), False), pc.greater(length, 0))
    mask = rotated.to_numpy(zero_copy_only=False)
    if mask.any():
        first = pc.list_element(src.filter(rotated), 0)
        out[mask] = pc.cast(first, pa.float64()).to_numpy(zero_copy_only=False)
    return out


def _categories(
    df: pd.DataFrame, items: NDArray[np.int64]
) -> tuple[NDArray[np.object_], NDArray[np.object_]]:
    """Category and subcategory of each item (``items``: the rows' item codes), from the
    item's first row (metadata, else MMLU's subject table). Each distinct (metadata,
    subject) is looked at once."""
    _, first_rows = np.unique(items, return_index=True)  # per item code, its first row
    metas = df["metadata"].iloc[first_rows].to_numpy(dtype=object)
    subjects = df["subject"].iloc[first_rows].to_numpy(dtype=object)
    pairs: dict[tuple[Any, Any], tuple[str, str]] = {}
    cat = np.empty(first_rows.size, dtype=object)
    sub = np.empty(first_rows.size, dtype=object)
    for i, key in enumerate(zip(metas, subjects, strict=True)):
        hit = pairs.get(key)
        if hit is None:
            meta, subject = key
            m = json.loads(meta) if meta else {}
            info = subject_info(str(subject))
            hit = pairs[key] = (
                m.get("category") or (info.category if info else "uncategorised"),
                m.get("subcategory") or (info.subcategory if info else "uncategorised"),
            )
        cat[i], sub[i] = hit
    return cat, sub


def _sorted_categorical(per_item: NDArray[np.object_], items: NDArray[np.int64]) -> pd.Series:
    """``per_item[items]`` as a categorical series whose categories are sorted."""
    labels: list[str] = sorted(set(per_item.tolist()))
    index = {v: i for i, v in enumerate(labels)}
    codes = np.asarray([index[v] for v in per_item], dtype=np.int64)
    return pd.Series(pd.Categorical.from_codes(codes[items], categories=pd.Index(labels)))


def _frame(table: pa.Table, *, lists: bool) -> pd.DataFrame:
    missing = [c for c in _COLUMNS if c not in table.column_names]
    if missing:
        raise ValueError(f"results table lacks column(s) {', '.join(missing)}")
    table = table.select(_COLUMNS)
    scalar = table if lists else table.drop_columns(list(_LIST_COLUMNS))
    df: pd.DataFrame = scalar.to_pandas()
    # Item ids as their ranks in sorted order.
    coded = _sorted_codes(table.column("item_id"))
    if coded is None:
        items = pd.factorize(df["item_id"], sort=True)[0].astype(np.int64)
    else:
        items = coded[0]
    cat, sub = _categories(df, items)
    if lists:
        df["category"] = pd.Series(cat[items], index=df.index)
        df["subcategory"] = pd.Series(sub[items], index=df.index)
        df["rotation"] = _rotations_of(table)
        return df
    # For the analysis: item ids as codes (sorting, pivoting and joining on them behave as
    # on the ids, without copying a million strings per group of rows) and labels as
    # categories (sorted like the labels); every groupby on this frame passes observed=True.
    df["category"] = _sorted_categorical(cat, items).set_axis(df.index)
    df["subcategory"] = _sorted_categorical(sub, items).set_axis(df.index)
    df["rotation"] = _rotations_of(table)
    df["item_id"] = items
    for c in _LABEL_COLUMNS:
        if not isinstance(df[c].dtype, pd.CategoricalDtype):
            coded = _sorted_codes(table.column(c)) if c in table.column_names else None
            if coded is None:
                df[c] = df[c].astype("category")
            else:
                df[c] = pd.Categorical.from_codes(coded[0], categories=pd.Index(coded[1]))
    return df.drop(columns="metadata")
