"""Option scoring of the knowledge study: accuracy of option-scored conditions under each
normalisation of the option scores (none, per token, per character).

The scores are read straight from the results frame's list columns, flattened on numpy;
rows with missing or non-finite values take the row-by-row rule (:func:`_argmax`): a NaN
score is never the pick, and a row whose scores are all NaN has none (it is left out of that
normalisation's accuracy, as the scoring leaves such a row out of the accuracy).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from ...results import ResultsFrame
from ...scoring import OPTION_LOGPROB, best_index


def _argmax(values: Sequence[float]) -> int:
    """The row rule: the position of the largest value (the first of equal maxima), as the
    scoring picks it (:func:`~steadyeval.scoring.best_index`): a NaN score never wins, and a
    list of NaN scores has no answer (-1)."""
    best = best_index(values)
    return -1 if best is None else best


def _lists(results: ResultsFrame, column: str, rows: NDArray[np.int64]) -> pa.ChunkedArray:
    return results.column(column).take(pa.array(rows, type=pa.int64()))


def _flat(lists: pa.ChunkedArray) -> tuple[NDArray[Any], NDArray[np.int64]] | None:
    """The lists concatenated, and their lengths; None if a list or a value is null or a
    list is empty (those rows take the row-by-row path, which says what is wrong)."""
    if lists.null_count:
        return None
    lengths = np.asarray(pc.list_value_length(lists).to_numpy(zero_copy_only=False), np.int64)
    values = pc.list_flatten(lists)
    if not lengths.size or int(lengths.min()) == 0 or values.null_count:
        return None
    return np.asarray(values.to_numpy(zero_copy_only=False)), lengths


def _starts(lengths: NDArray[np.int64]) -> NDArray[np.int64]:
    return np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)


def _first_where(hit: NDArray[np.bool_], lengths: NDArray[np.int64]) -> NDArray[np.int64]:
    """Per list (of ``lengths``): the first position where ``hit`` holds, or -1."""
    starts = _starts(lengths)
    local = np.arange(hit.size, dtype=np.int64) - np.repeat(starts, lengths)
    big = int(lengths.max())
    first = np.minimum.reduceat(np.where(hit, local, big), starts)
    return np.where(first == big, -1, first).astype(np.int64)


def _gold_positions(results: ResultsFrame, rows: NDArray[np.int64]) -> NDArray[np.int64]:
    """Per row: where the gold option (``gold_options[0]``) was shown (``option_source``)."""
    src_lists, gold_lists = (
        _lists(results, "option_source", rows),
        _lists(results, "gold_options", rows),
    )
    src, gold = _flat(src_lists), _flat(gold_lists)
    if src is not None and gold is not None:
        values, lengths = src
        first_gold = gold[0][_starts(gold[1])]
        pos = _first_where(values == np.repeat(first_gold, lengths), lengths)
        if bool(np.all(pos >= 0)):
            return pos
    return np.asarray(  # the row rule, which raises on a row without its gold option
        [
            list(s).index(g[0])
            for s, g in zip(src_lists.to_pandas(), gold_lists.to_pandas(), strict=True)
        ],
        dtype=np.int64,
    )


def _argmaxes(results: ResultsFrame, column: str, rows: NDArray[np.int64]) -> NDArray[np.int64]:
    """:func:`_argmax` of the list of ``column`` on each of ``rows`` (first of equal maxima)."""
    lists = _lists(results, column, rows)
    flat = _flat(lists)
    if flat is not None:
        values, lengths = flat
        x = values.astype(float)
        if bool(np.all(np.isfinite(x))):
            top = np.repeat(np.maximum.reduceat(x, _starts(lengths)), lengths)
            return _first_where(x == top, lengths)
    return np.asarray([_argmax(list(v)) for v in lists.to_pandas()], dtype=np.int64)


def _mean(x: NDArray[np.float64]) -> float:
    """The mean of the values that are not NaN; NaN if there are none."""
    kept = x[~np.isnan(x)]
    return float(kept.mean()) if kept.size else float("nan")


def _option_scoring(df: pd.DataFrame, results: ResultsFrame) -> list[dict[str, Any]]:
    """Accuracy of option-scored conditions under each normalisation (``df``'s index holds
    the rows' positions in ``results``, whose list columns are read)."""
    opt = df.loc[df["scoring"] == OPTION_LOGPROB, ["model", "condition"]]
    if opt.empty:
        return []
    # The list columns are read once for every option-scored row, then split by condition.
    rows = opt.index.to_numpy(dtype=np.int64)
    gold = _gold_positions(results, rows)
    norms = {"none": "option_logprobs", "token": "option_logprobs_per_token"}
    norms["char"] = "option_logprobs_per_char"
    picked = {n: _argmaxes(results, col, rows) for n, col in norms.items()}
    # a row without an answer under a normalisation (every score NaN) is left out of it
    hits = opt.assign(**{n: np.where(p < 0, np.nan, p == gold) for n, p in picked.items()})
    out = []
    for (model, cond), g in hits.groupby(["model", "condition"], observed=True):
        acc = {n: _mean(g[n].to_numpy(dtype=float)) for n in norms}
        out.append({"model": model, "condition": cond, "n": len(g), "accuracy": acc})
    return out
