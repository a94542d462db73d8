"""Reading a results table back: the file is untrusted input.

A run folder may come from anywhere, so ``results.parquet`` is read like any outside
file: it must be a regular file (a FIFO or a link to ``/dev/zero`` is refused unopened); its
declared size is checked against ``STEADYEVAL_MAX_RESULTS_MB`` (default 4096) before a page
is read, and the bytes actually read, batch by batch, against the same limit (a few
kilobytes of Parquet can declare a billion rows); its schema must be steadyeval's
(``schema_version``, every core column with its type, the study columns it declares present
with their declared types, no column twice). Every failure is a :class:`DataError` naming
the file.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

import pyarrow as pa
import pyarrow.parquet as pq

from .._errors import ConfigError, DataError
from .._files import human_bytes, input_file, limit_from_env
from ..items import shorten
from ._schema import (
    _ARROW,
    _VERSION_KEY,
    ADDED_IN_V3,
    RESULTS_SCHEMA,
    SCHEMA_VERSION,
    study_columns,
    upgrade_table,
)

__all__ = ["MAX_RESULTS_BYTES", "read_results"]

#: The default limit on a results table's size in memory, raised by
#: ``STEADYEVAL_MAX_RESULTS_MB``.
MAX_RESULTS_BYTES = 4096 * 1024 * 1024
_ERRORS = (pa.ArrowException, OSError, ValueError)


def _too_large(path: Path, what: str, limit: int) -> DataError:
    return DataError(
        f"{path}: {what}, over the limit of {human_bytes(limit)} for a results table in "
        "memory; set STEADYEVAL_MAX_RESULTS_MB to raise it"
    )


@contextmanager
def _source(path: Path) -> Iterator[str | BinaryIO]:
    """What pyarrow opens: the path, or the open file where the path is not UTF-8 text (a
    folder renamed by hand; pyarrow encodes every path as UTF-8)."""
    try:
        os.fspath(path).encode("utf-8")
    except UnicodeEncodeError:
        with path.open("rb") as f:
            yield f
        return
    yield os.fspath(path)


def _read_parquet(path: Path) -> pa.Table:
    """The table in ``path``, read in batches under the size limit."""
    limit = limit_from_env("STEADYEVAL_MAX_RESULTS_MB", MAX_RESULTS_BYTES)
    try:
        with _source(path) as source:
            pf = pq.ParquetFile(source)
            meta = pf.metadata
            groups = range(meta.num_row_groups)
            declared = sum(meta.row_group(i).total_byte_size for i in groups)
            if declared > limit or meta.num_rows * max(meta.num_columns, 1) > limit:
                raise _too_large(
                    path,
                    f"declares {meta.num_rows:,} rows of {meta.num_columns:,} columns "
                    f"({human_bytes(declared)})",
                    limit,
                )
            batches = []
            total = 0
            for batch in pf.iter_batches(batch_size=65_536):
                total += batch.nbytes
                if total > limit:
                    raise _too_large(path, f"holds more than {human_bytes(total)}", limit)
                batches.append(batch)
            return pa.Table.from_batches(batches, schema=pf.schema_arrow)
    except DataError:
        raise
    except _ERRORS as exc:
        raise DataError(f"{path}: not a readable Parquet file ({str(exc)[:200]})") from None


def _check_version(table: pa.Table, path: Path) -> None:
    version = (table.schema.metadata or {}).get(_VERSION_KEY)
    if version is None:
        raise DataError(f"{path}: not a steadyeval results file (no schema_version)")
    text = version.strip()
    if not text.isdigit() or len(text) > 9:
        shown = shorten(repr(version[:40].decode(errors="replace")), 40)
        raise DataError(
            f"{path}: schema_version {shown} is not a number (the file's schema metadata is "
            "damaged); write the run again"
        )
    if int(text) > SCHEMA_VERSION:
        raise DataError(
            f"{path}: schema_version {int(text)} is newer than this steadyeval "
            f"understands ({SCHEMA_VERSION}); upgrade steadyeval"
        )


def _check_columns(table: pa.Table, path: Path, *, types: bool) -> None:
    """No column twice, every core column present (``schema_version`` aside: an upgrade
    adds it) and, with ``types``, of the core schema's type: a damaged or foreign table is
    refused on reading, not half-way through an analysis."""
    names = table.column_names
    if len(set(names)) != len(names):
        twice = next(n for n in names if names.count(n) > 1)
        raise DataError(f"{path}: the results table has the column {shorten(repr(twice))} twice")
    for want in RESULTS_SCHEMA:
        if want.name not in names:
            if want.name in ("schema_version", *ADDED_IN_V3) and not types:
                continue
            raise DataError(
                f"{path}: the results table has no column {want.name!r}; expected "
                "steadyeval's results schema (docs/results.md)"
            )
        got = table.schema.field(want.name).type
        if types and got != want.type:
            raise DataError(f"{path}: column {want.name!r} holds {got}; expected {want.type}")


def _check_study_columns(table: pa.Table, path: Path) -> None:
    """The study columns the schema metadata declares: readable, present, of their type."""
    try:
        declared = study_columns(table)
    except (ValueError, TypeError, KeyError, RecursionError, ConfigError) as exc:
        raise DataError(
            f"{path}: the study columns declared in the schema metadata cannot be read "
            f"({type(exc).__name__}: {str(exc)[:80]})"
        ) from None
    for c in declared:
        if not isinstance(c.name, str) or c.name not in table.column_names:
            raise DataError(
                f"{path}: the schema metadata declares a study column {shorten(repr(c.name))} "
                "the table does not have; the file is damaged: write the run again"
            )
        got = table.schema.field(c.name).type
        if got != _ARROW[c.type] and not (c.type == "int" and pa.types.is_integer(got)):
            raise DataError(
                f"{path}: study column {shorten(repr(c.name))} holds {got}; its declaration "
                f"says {c.type} ({_ARROW[c.type]})"
            )


def read_results(path: str | Path) -> pa.Table:
    """Read a results table (a file, or a run directory's ``results.parquet``).

    Version 1 files are upgraded (:func:`upgrade_table`); files of a newer version than
    this steadyeval knows are refused. The file is read as untrusted input (see the
    module's docstring): a :class:`DataError` names the file and what is wrong.
    """
    path = Path(path)
    if path.is_dir():
        from ._manifest import check_run_dir

        check_run_dir(path)
        path = path / "results.parquet"
    if not os.path.lexists(path):
        raise DataError(
            f"{path}: no results table here (expected a run directory with results.parquet, "
            "or a .parquet file)"
        )
    table = _read_parquet(input_file(path, "a results table (.parquet)"))
    _check_version(table, path)
    _check_columns(table, path, types=False)
    try:
        table = upgrade_table(table)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, DataError) as exc:
        raise DataError(f"{path}: {exc}") from None
    _check_columns(table, path, types=True)
    _check_study_columns(table, path)
    return table
