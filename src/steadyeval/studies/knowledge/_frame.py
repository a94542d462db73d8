"""The knowledge study's view of the results frame: the rows in pandas, with each item's
category and subcategory and each row's rotation.

Every column comes from the :class:`~steadyeval.results.ResultsFrame`'s conversions (each
done once): for the analysis (:func:`analysis_frame`) item ids are their codes in sorted
order and labels are categories over the frame's sorted values, so a million-row table is
sorted, pivoted and grouped without copying its strings. What is the study's own: each
item's category (from its first row's metadata, else MMLU's subject table) and each row's
rotation (:func:`_rotation` is the row-by-row rule that :func:`_rotations_of` applies to
whole columns).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from ...items import subject_info
from ...results import ResultsFrame

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
#: The setting of a condition: comparisons pair conditions that differ along one of these.
_SETTING = ["model", "scoring", "template", "n_shots"]
#: Label columns held as categories in the analysis frame.
_LABEL_COLUMNS = ("model", "condition", "scoring", "template", "subject")
#: Integer columns: int64, or float64 with NaN when the column has nulls (as pandas reads them).
_NUMBER_COLUMNS = ("n_shots", "n_shots_used", "parsed_option", "n_input_tokens")
_READER = "the knowledge analysis"


def _rotation(row: Mapping[Any, Any]) -> float:
    """The rotation of one row (see :func:`knowledge_frame`; :func:`_rotations_of` is the
    same rule on whole columns)."""
    if row["option_order"] == "original":
        return 0.0
    src = row["option_source"]
    if row["option_order"] == "rotated" and src is not None and len(src):
        return float(src[0])
    return math.nan  # shuffled or unknown: not a rotation


def _rotations_of(results: ResultsFrame) -> NDArray[np.float64]:
    """Per row: 0 for the original order, the first shown option's source index for a
    rotation, NaN otherwise."""
    codes, orders = results.codes("option_order")

    def rows_of(order: str) -> NDArray[np.bool_]:
        hit: NDArray[np.bool_] = codes == (orders.index(order) if order in orders else -2)
        return hit

    out = np.full(len(results), math.nan)
    out[rows_of("original")] = 0.0
    src = results.column("option_source")
    length = pc.fill_null(pc.list_value_length(src), 0).to_numpy(zero_copy_only=False)
    mask = rows_of("rotated") & (length > 0)
    if mask.any():
        first = pc.list_element(src.filter(pa.array(mask)), 0)
        out[mask] = pc.cast(first, pa.float64()).to_numpy(zero_copy_only=False)
    return out


def _categories(
    results: ResultsFrame, items: NDArray[np.int64]
) -> tuple[NDArray[np.object_], NDArray[np.object_]]:
    """Category and subcategory of each item (``items``: the rows' item codes), from the
    item's first row (metadata, else MMLU's subject table). Each distinct (metadata,
    subject) is looked at once."""
    _, first_rows = np.unique(items, return_index=True)  # per item code, its first row
    meta_codes, metas = results.metadata()
    subject_codes, subjects = results.codes("subject")
    pairs: dict[tuple[int, int], tuple[str, str]] = {}
    cat = np.empty(first_rows.size, dtype=object)
    sub = np.empty(first_rows.size, dtype=object)
    keys = zip(meta_codes[first_rows].tolist(), subject_codes[first_rows].tolist(), strict=True)
    for i, key in enumerate(keys):
        hit = pairs.get(key)
        if hit is None:
            meta, s = metas[key[0]], key[1]
            info = subject_info(str(subjects[s] if s >= 0 else None))
            hit = pairs[key] = (
                meta.get("category") or (info.category if info else "uncategorised"),
                meta.get("subcategory") or (info.subcategory if info else "uncategorised"),
            )
        cat[i], sub[i] = hit
    return cat, sub


def _sorted_categorical(
    per_item: NDArray[np.object_], items: NDArray[np.int64]
) -> pd.Categorical[str]:
    """``per_item[items]`` as a categorical whose categories are sorted."""
    labels: list[str] = sorted(set(per_item.tolist()))
    index = {v: i for i, v in enumerate(labels)}
    codes = np.asarray([index[v] for v in per_item], dtype=np.int64)
    return pd.Categorical.from_codes(codes[items], categories=pd.Index(labels))


def _numbers(results: ResultsFrame, name: str) -> NDArray[Any]:
    """An integer column as pandas reads it: int64, or float64 with NaN if it has nulls."""
    if results.column(name).null_count:
        return results.floats(name)
    return results.ints(name, null=0)


def analysis_frame(results: ResultsFrame) -> pd.DataFrame:
    """The analysis's frame: one row per table row (the index is its position), item ids as
    codes in sorted order, labels (and ``category``, ``subcategory``) as sorted categories,
    ``correct`` as 1.0/0.0/NaN, ``truncated`` as bool (null: False), ``rotation``. Every
    groupby on it passes ``observed=True``."""
    results.require(_COLUMNS, reader=_READER)
    items, _ = results.codes("item_id", order="sorted")
    cat, sub = _categories(results, items)
    data: dict[str, Any] = {}
    for c in _LABEL_COLUMNS:
        codes, values = results.codes(c, order="sorted")
        data[c] = pd.Categorical.from_codes(codes, categories=pd.Index(values))
    data["item_id"] = items
    for c in _NUMBER_COLUMNS:
        data[c] = _numbers(results, c)
    data["confidence"] = results.floats("confidence")
    data["sequence_logprob"] = results.floats("sequence_logprob")
    correct = results.bools("correct")
    data["correct"] = np.where(correct < 0, math.nan, correct.astype(np.float64))
    data["truncated"] = results.bools("truncated") == 1
    data["category"] = _sorted_categorical(cat, items)
    data["subcategory"] = _sorted_categorical(sub, items)
    data["rotation"] = _rotations_of(results)
    return pd.DataFrame(data)


def knowledge_frame(results: ResultsFrame | pa.Table) -> pd.DataFrame:
    """The rows the analysis uses, with ``category``, ``subcategory`` and ``rotation``.

    The table's columns the analysis reads, as pandas reads them (strings and lists as
    Python objects). Category and subcategory come from each item's first row's
    ``metadata`` (as the loader set them), else from MMLU's subject table. ``rotation`` is
    the index of the original option shown first (0 for original order; NaN for other
    orders). The index is the row's position in the table.
    """
    results = ResultsFrame.of(results)
    results.require(_COLUMNS, reader=_READER)
    df: pd.DataFrame = results.table.select(_COLUMNS).to_pandas()
    items, _ = results.codes("item_id", order="sorted")
    cat, sub = _categories(results, items)
    df["category"] = pd.Series(cat[items], index=df.index)
    df["subcategory"] = pd.Series(sub[items], index=df.index)
    df["rotation"] = _rotations_of(results)
    return df
