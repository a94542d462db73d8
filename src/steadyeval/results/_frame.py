"""One reader of the results table for every study's analysis: :class:`ResultsFrame`.

A study's analysis starts from a :class:`ResultsFrame` (the runner builds it from the table
it wrote, :func:`~steadyeval.studies.reanalyze` from ``results.parquet``): the table, the
study's declared columns, and the table's columns as typed numpy arrays, each converted once
and kept. A study's own view (pairs of rows, a tensor of facts, a pandas frame) is a
function of the frame, not a second reader of the table.

Conventions, the same for every column: strings are numbered (``codes``) either in the order
they first appear in the table (``order="first"``, as a row-wise pass meets them) or in
sorted order; a boolean is ``1``/``0``/``-1`` (null is a value of its own); a float is
``NaN`` where null; an integer takes the ``null`` value the caller names. A missing column
is a :class:`~steadyeval.DataError` that names the column and what reads it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from .._errors import DataError
from ._schema import StudyColumn

__all__ = ["ResultsFrame"]

Ints = npt.NDArray[np.int64]


def _dictionary(column: pa.ChunkedArray) -> tuple[Ints, list[Any]]:
    """Dictionary codes of ``column`` (one dictionary across chunks; null → -1)."""
    if pa.types.is_dictionary(column.type):  # each chunk may have its own dictionary
        column = column.cast(column.type.value_type)
    encoded = column.dictionary_encode()
    if encoded.num_chunks == 0:
        return np.zeros(0, dtype=np.int64), []
    parts = [c.indices.fill_null(-1).to_numpy(zero_copy_only=False) for c in encoded.chunks]
    return np.concatenate(parts).astype(np.int64), encoded.chunk(0).dictionary.to_pylist()


def _sort_key(value: Any) -> tuple[bool, Any]:
    return (isinstance(value, float) and math.isnan(value), value)


def _renumber(codes: Ints, values: list[Any], order: Sequence[int]) -> tuple[Ints, list[Any]]:
    """``codes`` renumbered so that value ``order[k]`` gets code ``k`` (nulls stay -1)."""
    remap = np.full(len(values) + 1, -1, dtype=np.int64)  # the last slot: null stays -1
    remap[np.asarray(order, dtype=np.int64)] = np.arange(len(order), dtype=np.int64)
    return remap[np.where(codes < 0, len(values), codes)], [values[i] for i in order]


class ResultsFrame:
    """A results table and its columns as typed arrays (each converted once).

    Parameters
    ----------
    table : pyarrow.Table
        A results table (``results.parquet``'s rows).
    columns : sequence of StudyColumn
        The study's declared columns (its design's), for the study's own readers.
    source : str
        What the table is, for error messages (a path, or "results table").
    """

    def __init__(
        self,
        table: pa.Table,
        columns: Sequence[StudyColumn] = (),
        *,
        source: str = "results table",
    ) -> None:
        self.table = table
        self.columns = tuple(columns)
        self.source = source
        self._cache: dict[tuple[Any, ...], Any] = {}

    @classmethod
    def of(cls, results: ResultsFrame | pa.Table) -> ResultsFrame:
        """``results`` as a frame: a frame as it is, a table wrapped (no declared columns)."""
        if isinstance(results, ResultsFrame):
            return results
        if isinstance(results, pa.Table):
            return cls(results)
        raise TypeError(f"expected a ResultsFrame or a pyarrow Table, got {type(results).__name__}")

    @classmethod
    def read(cls, run_dir: str | Path) -> ResultsFrame:
        """The frame of a run folder's ``results.parquet`` (checked as
        :func:`~steadyeval.results.read_results` checks it)."""
        from ._read import read_results
        from ._schema import study_columns

        table = read_results(run_dir)
        return cls(table, study_columns(table), source=str(run_dir))

    def __len__(self) -> int:
        return int(self.table.num_rows)

    @property
    def num_rows(self) -> int:
        """The number of rows."""
        return int(self.table.num_rows)

    @property
    def column_names(self) -> list[str]:
        """The table's column names."""
        return list(self.table.column_names)

    def has(self, name: str) -> bool:
        """Whether the table has column ``name``."""
        return name in self.table.column_names

    def require(self, names: Sequence[str], *, reader: str) -> None:
        """Raise :class:`~steadyeval.DataError` naming the columns of ``names`` the table
        lacks (``reader``: what reads them, e.g. "the formats analysis")."""
        missing = [n for n in names if n not in self.table.column_names]
        if missing:
            raise DataError(
                f"{self.source}: missing column(s) {', '.join(missing)}; {reader} reads "
                f"{', '.join(names)}"
            )

    def column(self, name: str) -> pa.ChunkedArray:
        """Column ``name`` as stored (a missing one is a :class:`~steadyeval.DataError`)."""
        if name not in self.table.column_names:
            raise DataError(f"{self.source}: no column {name!r}")
        return self.table.column(name)

    def _memo(self, key: tuple[Any, ...], make: Any) -> Any:
        if key not in self._cache:
            try:
                self._cache[key] = make()
            except (pa.ArrowException, RecursionError) as exc:
                name = key[1] if len(key) > 1 else "metadata"
                kind = self.table.column(name).type if name in self.table.column_names else "?"
                what = {"bools": "booleans", "ints": "integers", "floats": "numbers"}
                raise DataError(
                    f"{self.source}: column {name!r} ({kind}) cannot be read as "
                    f"{what.get(key[0], 'values to number')}: {str(exc)[:120]}"
                ) from None
        return self._cache[key]

    def codes(
        self, name: str, *, order: Literal["first", "sorted"] = "first", nulls: bool = True
    ) -> tuple[Ints, list[Any]]:
        """Codes of column ``name`` per row and the distinct values they number (null: -1).

        ``order="first"`` numbers values in the order they first appear in the table,
        ``"sorted"`` in sorted order. ``nulls=False``: a null is an error naming its row
        (for columns every row must have, such as ``model``)."""

        def make() -> tuple[Ints, list[Any]]:
            codes, values = _dictionary(self.column(name))
            if not nulls and codes.size and int(codes.min()) < 0:
                row = int(np.flatnonzero(codes < 0)[0])
                raise DataError(
                    f"{self.source}, row {row}: column {name!r} is null; every row needs a {name}"
                )
            if order == "sorted":  # NaN (a float column's) last
                ranked = sorted(range(len(values)), key=lambda i: _sort_key(values[i]))
            else:
                seen = codes[codes >= 0]
                uniq, first = np.unique(seen, return_index=True)
                ranked = [int(i) for i in uniq[np.argsort(first, kind="stable")]]
            return _renumber(codes, values, ranked)

        result: tuple[Ints, list[Any]] = self._memo(("codes", name, order, nulls), make)
        return result

    def bools(self, name: str) -> npt.NDArray[np.int8]:
        """Column ``name`` as 1 (true), 0 (false) or -1 (null)."""

        def make() -> npt.NDArray[np.int8]:
            col = self.column(name)
            values = pc.fill_null(col, False).to_numpy(zero_copy_only=False).astype(np.int8)
            valid = pc.is_valid(col).to_numpy(zero_copy_only=False)
            return np.where(valid, values, np.int8(-1)).astype(np.int8)

        result: npt.NDArray[np.int8] = self._memo(("bools", name), make)
        return result

    def ints(self, name: str, *, null: int) -> Ints:
        """Column ``name`` as int64, ``null`` where null."""

        def make() -> Ints:
            filled = pc.fill_null(self.column(name).cast(pa.int64()), null)
            return np.asarray(filled.to_numpy(zero_copy_only=False), dtype=np.int64)

        result: Ints = self._memo(("ints", name, null), make)
        return result

    def floats(self, name: str) -> npt.NDArray[np.float64]:
        """Column ``name`` as float64 (booleans as 1.0/0.0), NaN where null."""

        def make() -> npt.NDArray[np.float64]:
            filled = pc.fill_null(self.column(name).cast(pa.float64()), float("nan"))
            return np.asarray(filled.to_numpy(zero_copy_only=False), dtype=np.float64)

        result: npt.NDArray[np.float64] = self._memo(("floats", name), make)
        return result

    def values(self, name: str, rows: Ints | None = None) -> list[Any]:
        """Column ``name`` as Python values (of ``rows`` only when given)."""
        col = self.column(name)
        if rows is not None:
            col = col.take(pa.array(rows, type=pa.int64()))
        return list(col.to_pylist())

    def metadata(self) -> tuple[Ints, list[dict[str, Any]]]:
        """The ``metadata`` column parsed once per distinct value: per row a code into the
        list of parsed objects (a null metadata is the last object, ``{}``). A value that is
        not a JSON object is a :class:`~steadyeval.DataError` naming its row."""

        def make() -> tuple[Ints, list[dict[str, Any]]]:
            column = self.column("metadata")
            if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
                if not pa.types.is_null(column.type):
                    raise DataError(
                        f"{self.source}: column 'metadata' holds {column.type}; expected "
                        "JSON text (a string column)"
                    )
                column = column.cast(pa.string())
            codes, texts = _dictionary(column)
            metas: list[dict[str, Any]] = []
            for k, text in enumerate(texts):
                try:
                    meta = json.loads(text)
                except RecursionError:
                    row = int(np.flatnonzero(codes == k)[0])
                    raise DataError(
                        f"{self.source}, row {row}: column 'metadata' is nested too deeply "
                        "to read; expected a flat JSON object"
                    ) from None
                except json.JSONDecodeError as exc:
                    row = int(np.flatnonzero(codes == k)[0])
                    raise DataError(
                        f"{self.source}, row {row}: column 'metadata' is not JSON ({exc})"
                    ) from None
                if not isinstance(meta, dict):
                    row = int(np.flatnonzero(codes == k)[0])
                    raise DataError(
                        f"{self.source}, row {row}: column 'metadata' holds "
                        f"{type(meta).__name__}; expected a JSON object"
                    )
                metas.append(meta)
            metas.append({})
            return np.where(codes < 0, len(metas) - 1, codes).astype(np.int64), metas

        result: tuple[Ints, list[dict[str, Any]]] = self._memo(("metadata",), make)
        return result

    def select(self, rows: Ints | Sequence[int]) -> ResultsFrame:
        """A frame of ``rows`` only (row numbers, in the order given), with the same declared
        columns. A row number that is not an integer in ``[0, len)`` is an ``IndexError``."""
        index = np.asarray(rows)
        if index.size and not np.issubdtype(index.dtype, np.integer):
            raise IndexError(f"row numbers must be integers; got {index.dtype} values")
        index = index.astype(np.int64)
        bad = index[(index < 0) | (index >= self.num_rows)]
        if bad.size:
            raise IndexError(f"row {int(bad[0])} is out of range: the frame has {len(self)} rows")
        taken = self.table.take(pa.array(index, type=pa.int64()))
        return ResultsFrame(taken, self.columns, source=self.source)

    def where(self, **equal: Any) -> ResultsFrame:
        """A frame of the rows whose columns equal the given values (e.g. ``model="m"``;
        ``None`` selects the nulls)."""
        mask = pa.array(np.ones(self.num_rows, dtype=bool))
        for name, value in equal.items():
            column = self.column(name)
            try:
                same = pc.is_null(column) if value is None else pc.equal(column, value)
            except (pa.ArrowException, TypeError) as exc:
                raise ValueError(
                    f"where({name}=...): a {type(value).__name__} cannot be compared with "
                    f"column {name!r} ({column.type}): {str(exc)[:80]}"
                ) from None
            mask = pc.and_(mask, pc.fill_null(same, False))
        return ResultsFrame(self.table.filter(mask), self.columns, source=self.source)
