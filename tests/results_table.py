"""Tests only: a results table from partial row dicts, for tests of analyses and reports.

Keys that are :class:`~steadyeval.results.ResultRow` fields fill them (``run_id`` defaults to
``"test"``); a ``metadata`` given as JSON text is parsed; any other key becomes a study column
(typed from its first non-null value), its value given as the row's tag.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from steadyeval.results import ResultRow, StudyColumn, rows_to_table

_FIELDS = {f.name for f in dataclasses.fields(ResultRow)}
_DERIVED = {"schema_version", "prompt_hash"}
_TYPES = {bool: "bool", int: "int", float: "float", str: "string"}


def table_of(dicts: Sequence[Mapping[str, Any]]) -> pa.Table:
    rows, extra = [], {}
    for d in dicts:
        meta = d.get("metadata", {})
        meta = dict(json.loads(meta) if isinstance(meta, str) else meta)
        tags = {k: v for k, v in d.items() if k not in _FIELDS and k not in _DERIVED}
        for k, v in tags.items():
            if v is not None:
                extra.setdefault(k, _TYPES.get(type(v), "json"))
        fields = {k: v for k, v in d.items() if k in _FIELDS and k not in ("metadata", "tags")}
        fields.setdefault("run_id", "test")
        rows.append(ResultRow(**fields, metadata=meta, tags=tags))
    columns = [StudyColumn(k, t) for k, t in extra.items()]  # type: ignore[arg-type]
    return rows_to_table(rows, columns)
