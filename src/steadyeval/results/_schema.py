"""The results table: one row per (item, condition, model, sample). The contract."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

__all__ = ["RESULTS_SCHEMA", "SCHEMA_VERSION", "read_results", "rows_to_table", "write_results"]

SCHEMA_VERSION = 1

_LIST_F = pa.list_(pa.float64())
_LIST_S = pa.list_(pa.string())
_LIST_I = pa.list_(pa.int32())

RESULTS_SCHEMA = pa.schema(
    [
        ("schema_version", pa.int32()),
        ("run_id", pa.string()),
        ("model", pa.string()),
        ("item_id", pa.string()),
        ("item_hash", pa.string()),
        ("condition", pa.string()),
        ("condition_id", pa.string()),
        ("template", pa.string()),
        ("format", pa.string()),
        ("option_order", pa.string()),
        ("n_shots", pa.int32()),
        ("n_shots_used", pa.int32()),
        ("chat", pa.bool_()),
        ("verbalizer", pa.string()),
        ("alias", pa.string()),
        ("scoring", pa.string()),
        ("sample_index", pa.int32()),
        ("prompt", pa.string()),
        ("prompt_hash", pa.string()),
        ("request_key", pa.string()),
        ("request_keys", _LIST_S),
        ("options", _LIST_S),
        ("option_source", _LIST_I),
        ("output", pa.string()),
        ("parsed", pa.string()),
        ("parsed_kind", pa.string()),
        ("parsed_option", pa.int32()),
        ("correct", pa.bool_()),
        ("refused", pa.bool_()),
        ("em", pa.float64()),
        ("f1", pa.float64()),
        ("option_logprobs", _LIST_F),
        ("option_logprobs_per_token", _LIST_F),
        ("option_logprobs_per_char", _LIST_F),
        ("confidence", pa.float64()),
        ("sequence_logprob", pa.float64()),
        ("approximate", pa.bool_()),
        ("truncated", pa.bool_()),
        ("n_input_tokens", pa.int32()),
        ("gold", _LIST_S),
        ("gold_options", _LIST_I),
        ("answerable", pa.bool_()),
        ("relation", pa.string()),
        ("subject", pa.string()),
        ("split", pa.string()),
        ("hparams", pa.string()),
        ("metadata", pa.string()),
    ],
    metadata={"steadyeval.schema_version": str(SCHEMA_VERSION)},
)


def rows_to_table(rows: Sequence[dict[str, Any]]) -> pa.Table:
    """Build a table with :data:`RESULTS_SCHEMA` (missing nullable columns become null).

    Columns outside the schema are appended after it (sorted by name) as extra study columns.
    """
    names = RESULTS_SCHEMA.names
    extra = sorted({k for r in rows for k in r} - set(names))
    arrays = [pa.array([r.get(f.name) for r in rows], type=f.type) for f in RESULTS_SCHEMA]
    fields = list(RESULTS_SCHEMA)
    for name in extra:
        arr = pa.array([r.get(name) for r in rows])
        arrays.append(arr)
        fields.append(pa.field(name, arr.type))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields, metadata=RESULTS_SCHEMA.metadata))


def write_results(table: pa.Table, path: str | Path) -> Path:
    """Write ``table`` to Parquet atomically (temp file, then rename). Deterministic bytes."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    pq.write_table(table, tmp, compression="zstd", write_statistics=True)
    os.replace(tmp, path)
    return path


def read_results(path: str | Path) -> pa.Table:
    """Read a results table; rejects files from an unknown (newer) schema version."""
    path = Path(path)
    if path.is_dir():
        path = path / "results.parquet"
    table = pq.read_table(path)
    meta = table.schema.metadata or {}
    version = meta.get(b"steadyeval.schema_version")
    if version is None:
        raise ValueError(f"{path}: not a steadyeval results file (no schema_version)")
    if int(version) > SCHEMA_VERSION:
        raise ValueError(
            f"{path}: schema_version {int(version)} is newer than this steadyeval "
            f"understands ({SCHEMA_VERSION}); upgrade steadyeval"
        )
    return table
