"""Tests only: a results table from partial row dicts, for tests of analyses and reports.

Keys that are :class:`~steadyeval.results.ResultRow` fields fill them (``run_id`` defaults to
``"test"``); a ``metadata`` given as JSON text is parsed; any other key becomes a study column
(typed from its first non-null value) lifted from the row's metadata, as a study declares it.
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
        for k, v in d.items():
            if k not in _FIELDS and k not in _DERIVED:
                meta[k] = v
                if v is not None:
                    extra.setdefault(k, _TYPES.get(type(v), "json"))
        fields = {k: v for k, v in d.items() if k in _FIELDS and k != "metadata"}
        fields.setdefault("run_id", "test")
        rows.append(ResultRow(**fields, metadata=meta))
    columns = [StudyColumn(k, t) for k, t in extra.items()]  # type: ignore[arg-type]
    return rows_to_table(rows, columns)
