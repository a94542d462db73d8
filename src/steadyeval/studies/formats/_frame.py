"""The formats study's view of the results frame: numpy columns for analyses that scale.

The columns come from the :class:`~steadyeval.results.ResultsFrame` (models and items
numbered in the order they first appear, as a row-wise pass would meet them; the
``metadata`` JSON parsed once per distinct value); this view adds what only the study needs:
rows grouped by (model, condition) and selected by variant and subset, labels from the
metadata, pairing keys, and SQuAD normalisation once per distinct string. Selections are
arrays of row indices in table order, so every statistic sees its rows in the same order a
row-wise pass would.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from ...results import ResultsFrame
from ...scoring import normalize_answer

__all__ = ["COLUMNS", "FormatsFrame", "constant_within", "last_per_key", "pair_rows"]

#: The columns of the results table that the formats analysis reads.
COLUMNS = (
    "model",
    "item_id",
    "condition",
    "sample_index",
    "output",
    "parsed",
    "parsed_kind",
    "parsed_option",
    "correct",
    "refused",
    "truncated",
    "answerable",
    "em",
    "f1",
    "option_logprobs",
    "metadata",
)

#: ``parsed_option`` of a row without one, and ``decoy_option`` of an item without one; they
#: differ, so a row without a parsed option never matches an item without a decoy.
NO_OPTION = -(2**40)
NO_DECOY = -(2**41)

Ints = npt.NDArray[np.int64]
Bools = npt.NDArray[np.bool_]


def _decoy_code(value: Any) -> int:
    """``decoy_option`` as an int comparable with ``parsed_option`` (``==`` in Python terms)."""
    if isinstance(value, bool | int):
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return NO_DECOY


def last_per_key(keys: Ints) -> tuple[Ints, Ints]:
    """Distinct ``keys`` (sorted) and the position of the last occurrence of each."""
    uniq, first_rev = np.unique(keys[::-1], return_index=True)
    return uniq, (keys.size - 1 - first_rev).astype(np.int64)


def constant_within(groups: Ints, *values: npt.NDArray[Any]) -> tuple[Ints, Bools]:
    """Distinct ``groups`` (sorted) and whether every one of ``values`` is the same on all
    rows of each group."""
    order = np.argsort(groups, kind="stable")
    g = groups[order]
    starts = np.flatnonzero(np.r_[True, g[1:] != g[:-1]]) if g.size else np.zeros(0, np.int64)
    same = np.ones(starts.size, dtype=bool)
    for v in values:
        s = v[order].astype(np.int64)
        same &= np.maximum.reduceat(s, starts) == np.minimum.reduceat(s, starts)
    return g[starts], same


class FormatsFrame:
    """The columns the formats analysis needs, as numpy arrays over the rows.

    Parameters
    ----------
    results : ResultsFrame
        The results (``results.parquet``'s rows); other columns are ignored.

    Raises
    ------
    DataError
        If a needed column is missing, ``model``/``item_id``/``condition`` is null or a
        ``metadata`` value is not a JSON object.
    """

    def __init__(self, results: ResultsFrame) -> None:
        results.require(COLUMNS, reader="the formats analysis")
        self.results = results
        self.model, self.models = results.codes("model", nulls=False)
        self.item, self.item_ids = results.codes("item_id", nulls=False)
        self.cond, cond_names = results.codes("condition", nulls=False)
        self._cond_code = {c: i for i, c in enumerate(cond_names)}
        self._model_code = {m: i for i, m in enumerate(self.models)}
        self.sample_index = results.ints("sample_index", null=-1)
        self.refused = results.bools("refused")
        self.correct = results.bools("correct")
        self.truncated = results.bools("truncated")
        self.answerable = results.bools("answerable")
        self.parsed_option = results.ints("parsed_option", null=NO_OPTION)
        self.em = results.floats("em")
        self.f1 = results.floats("f1")
        self.kind, kind_values = results.codes("parsed_kind")
        self.kind_code = {str(k): i for i, k in enumerate(kind_values)}
        self.meta_code, self.metas = results.metadata()
        variants: dict[Any, int] = {}
        per_meta = [
            variants.setdefault(m.get("variant", "base"), len(variants)) for m in self.metas
        ]
        self._variant_code = variants
        self.variant = np.asarray(per_meta, dtype=np.int64)[self.meta_code]
        decoy = [_decoy_code(m.get("decoy_option")) for m in self.metas]
        self.decoy_option = np.asarray(decoy, dtype=np.int64)[self.meta_code]
        self._norm: dict[str, int] = {}
        self._labels: dict[str, Ints] = {}
        self._selections: dict[tuple[str, str, str | None, str, bool], Ints] = {}
        # Rows grouped by (model, condition), each group in table order.
        n_cond = max(len(cond_names), 1)
        group = self.model * n_cond + self.cond
        self._order = np.argsort(group, kind="stable").astype(np.int64)
        self._bounds = np.searchsorted(
            group[self._order], np.arange(len(self.models) * n_cond + 1, dtype=np.int64)
        )
        self._n_cond = n_cond

    # -- selections ---------------------------------------------------------------------------

    def group(self, model: str, condition: str) -> Ints:
        """Rows of one (model, condition), in table order."""
        m, c = self._model_code.get(model), self._cond_code.get(condition)
        if m is None or c is None:
            return np.zeros(0, dtype=np.int64)
        g = m * self._n_cond + c
        return self._order[self._bounds[g] : self._bounds[g + 1]]

    def select(
        self,
        model: str,
        condition: str,
        subset: str | None = None,
        variant: str = "base",
        first_sample: bool = True,
    ) -> Ints:
        """Rows of one (model, condition) whose item is of ``variant`` (metadata ``variant``,
        ``"base"`` when absent) and, unless ``subset`` is None, of that subset
        (``"answerable"`` or not); the first sample only unless ``first_sample`` is False."""
        key = (model, condition, subset, variant, first_sample)
        hit = self._selections.get(key)
        if hit is not None:
            return hit
        rows = self.group(model, condition)
        code = self._variant_code.get(variant)
        keep = self.variant[rows] == (code if code is not None else -1)
        if subset is not None:
            keep &= self.answerable[rows] == (1 if subset == "answerable" else 0)
        if first_sample:
            keep &= self.sample_index[rows] == 0
        out: Ints = rows[keep]
        self._selections[key] = out
        return out

    # -- per-distinct values ------------------------------------------------------------------

    def label_codes(self, key: str) -> Ints:
        """Per row: ``str(metadata[key])``, or the item id where the metadata lacks ``key``,
        as codes whose order is the strings' sorted order (so any subset's codes sort as its
        labels would)."""
        hit = self._labels.get(key)
        if hit is not None:
            return hit
        own = [str(m[key]) if key in m else None for m in self.metas]
        has = np.asarray([x is not None for x in own], dtype=bool)
        row_has = has[self.meta_code]
        items = np.unique(self.item[~row_has])
        labels = sorted({x for x in own if x is not None} | {self.item_ids[i] for i in items})
        rank = {s: i for i, s in enumerate(labels)}
        meta_rank = np.asarray([rank[x] if x is not None else -1 for x in own], dtype=np.int64)
        item_rank = np.full(len(self.item_ids), -1, dtype=np.int64)
        item_rank[items] = [rank[self.item_ids[i]] for i in items]
        codes = np.where(row_has, meta_rank[self.meta_code], item_rank[self.item])
        self._labels[key] = codes
        return codes

    def strings(self, column: str, rows: Ints) -> list[Any]:
        """The raw values of ``column`` on ``rows`` (few rows: examples, checks)."""
        return self.results.values(column, rows)

    def normalized(self, column: str, rows: Ints) -> Ints:
        """Codes of ``normalize_answer(value or "")`` on ``rows``; equal codes ⇔ equal
        normalised strings (across calls). Normalises each distinct value of ``rows`` once."""
        codes, values = self.results.codes(column)
        mine = codes[rows]
        uniq, inverse = np.unique(mine, return_inverse=True)
        per_value = np.asarray(
            [self.norm_code((values[int(v)] if v >= 0 else None) or "") for v in uniq],
            dtype=np.int64,
        )
        return per_value[inverse.reshape(-1)] if uniq.size else np.zeros(0, dtype=np.int64)

    def norm_code(self, text: str) -> int:
        """The code of ``normalize_answer(text)``."""
        return self._norm.setdefault(normalize_answer(text), len(self._norm))

    def key_codes(self, key: str) -> Ints:
        """Codes of the pairing key: the item id, or ``str(metadata[key])`` (item id when
        absent)."""
        return self.item if key == "item_id" else self.label_codes(key)


def pair_rows(keys_a: Ints, keys_b: Ints) -> tuple[Ints, Ints]:
    """Positions in ``a`` whose key ``b`` has, and the position in ``b`` each pairs with (the
    last ``b`` row of that key)."""
    uniq, last = last_per_key(keys_b)
    if uniq.size == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    j = np.minimum(np.searchsorted(uniq, keys_a), uniq.size - 1)
    found = uniq[j] == keys_a
    return np.flatnonzero(found).astype(np.int64), last[j[found]]
