"""The results table: one row per (item, condition, model, sample). The contract.

The core schema holds what every run shares. A study adds its own typed, documented columns
(:class:`StudyColumn`), lifted from each row's item metadata; their declarations travel in
the file's schema metadata. Version 1 files (whose core also held ``relation``, ``subject``,
``split`` and ``hparams``) are upgraded on reading (:func:`upgrade_table`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa
import pyarrow.parquet as pq

from .._errors import ConfigError, DataError
from .._json import replace_atomically
from ..items import canonical_json, plain_json
from ._row import ResultRow

__all__ = [
    "ADDED_IN_V3",
    "RESULTS_SCHEMA",
    "RESULTS_SCHEMA_V1",
    "SCHEMA_VERSION",
    "StudyColumn",
    "rows_to_table",
    "study_columns",
    "upgrade_table",
    "with_study_columns",
    "write_results",
]

SCHEMA_VERSION = 3

_LIST_F = pa.list_(pa.float64())
_LIST_S = pa.list_(pa.string())
_LIST_I = pa.list_(pa.int32())

_CORE: list[tuple[str, pa.DataType]] = [
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
    ("n_output_tokens", pa.int32()),
    ("reasoning", pa.string()),
    ("reasoning_chars", pa.int32()),
    ("extractor", pa.string()),
    ("gold", _LIST_S),
    ("gold_options", _LIST_I),
    ("answerable", pa.bool_()),
    ("metadata", pa.string()),
]
_VERSION_KEY = b"steadyeval.schema_version"
_COLUMNS_KEY = b"steadyeval.study_columns"

RESULTS_SCHEMA = pa.schema(_CORE, metadata={_VERSION_KEY: str(SCHEMA_VERSION)})

#: The core columns version 3 added (generated text's trace, its length, the extractor):
#: an older table gets them as nulls on reading.
ADDED_IN_V3 = ("n_output_tokens", "reasoning", "reasoning_chars", "extractor")
_CORE_V2 = [(name, kind) for name, kind in _CORE if name not in ADDED_IN_V3]
#: Version 1's core: version 2's plus four columns only some studies used.
_V1_ONLY = ("relation", "subject", "split", "hparams")
RESULTS_SCHEMA_V1 = pa.schema(
    [*_CORE_V2[:-1], *((name, pa.string()) for name in _V1_ONLY), _CORE_V2[-1]],
    metadata={_VERSION_KEY: b"1"},
)

ColumnType = Literal["string", "int", "float", "bool", "json"]
_ARROW: dict[str, pa.DataType] = {
    "string": pa.string(),
    "int": pa.int64(),
    "float": pa.float64(),
    "bool": pa.bool_(),
    "json": pa.string(),
}


@dataclass(frozen=True)
class StudyColumn:
    """A column a study (or a run config) adds to the results table.

    Parameters
    ----------
    name : str
        The column's name; it must not be a core column.
    type : {"string", "int", "float", "bool", "json"}
        Its Arrow type (``json``: canonical JSON text). A ``string`` column holds other JSON
        values as canonical JSON text.
    doc : str
        What it holds, for the docs and the file's schema metadata.
    key : str, optional
        The item metadata key it is lifted from (default: ``name``) when the row's ``tags``
        (values a run gives a whole block, a scoring mode's metrics) do not hold ``name``.
        Rows with neither get null.
    summary : {"mean"}, optional
        Set for a metric (a scoring mode's): ``summary.json`` gives its mean per model and
        condition. A metric is only ever taken from ``tags`` (a row whose mode did not set
        it is null, whatever the item's metadata holds).
    """

    name: str
    type: ColumnType = "string"
    doc: str = ""
    key: str | None = None
    summary: Literal["mean"] | None = None

    def __post_init__(self) -> None:
        if self.key == self.name:
            object.__setattr__(self, "key", None)
        if self.name in RESULTS_SCHEMA.names:
            raise ConfigError(f"study column {self.name!r} would shadow a core column")
        if self.type not in _ARROW:
            raise ConfigError(
                f"study column {self.name!r}: type {self.type!r} is not one of {', '.join(_ARROW)}"
            )
        if self.summary not in (None, "mean") or (self.summary and self.type != "float"):
            raise ConfigError(
                f"study column {self.name!r}: summary must be 'mean' (of a float column) or "
                f"None; got {self.summary!r} for a {self.type} column"
            )

    @property
    def source(self) -> str:
        return self.key or self.name

    def value(self, raw: Any) -> Any:
        if raw is None:
            return None
        if self.type == "json" or (self.type == "string" and not isinstance(raw, str)):
            return canonical_json(plain_json(raw))
        return raw

    def to_dict(self) -> dict[str, Any]:
        out = {"name": self.name, "type": self.type, "doc": self.doc, "key": self.source}
        return out if self.summary is None else {**out, "summary": self.summary}


def _metadata_json(rows: Sequence[ResultRow]) -> list[str]:
    """Canonical JSON of each row's metadata, computed once per distinct mapping object."""
    memo: dict[int, str] = {}
    out = []
    for r in rows:
        key = id(r.metadata)
        text = memo.get(key)
        if text is None:
            text = memo[key] = canonical_json(plain_json(r.metadata))
        out.append(text)
    return out


def rows_to_table(rows: Sequence[ResultRow], columns: Sequence[StudyColumn] = ()) -> pa.Table:
    """The results table of ``rows``: the core schema, then the study's ``columns`` in order
    (each lifted from the rows' metadata), declared in the schema metadata."""
    names = [c.name for c in columns]
    if len(set(names)) != len(names):
        raise ConfigError(f"study columns repeat a name: {names}")
    n = len(rows)
    values: dict[str, Any] = {
        "schema_version": [SCHEMA_VERSION] * n,
        "prompt_hash": [r.prompt_hash for r in rows],
        "metadata": _metadata_json(rows),
    }
    arrays = []
    for f in RESULTS_SCHEMA:
        data = values.get(f.name)
        if data is None:
            data = [getattr(r, f.name) for r in rows]
        arrays.append(pa.array(data, type=f.type))
    fields = list(RESULTS_SCHEMA)
    for c in columns:
        if c.summary is not None:  # a metric: a scoring mode's value, never an item's field
            raw = [r.tags.get(c.name) for r in rows]
        else:
            raw = [r.tags[c.name] if c.name in r.tags else r.metadata.get(c.source) for r in rows]
        arrays.append(pa.array([c.value(v) for v in raw], _ARROW[c.type]))
        fields.append(pa.field(c.name, _ARROW[c.type], metadata={b"doc": c.doc.encode()}))
    meta = dict(RESULTS_SCHEMA.metadata or {})
    meta[_COLUMNS_KEY] = json.dumps([c.to_dict() for c in columns]).encode()
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields, metadata=meta))


def with_study_columns(
    table: pa.Table, columns: Sequence[StudyColumn], values: Mapping[str, Sequence[Any]]
) -> pa.Table:
    """``table`` with ``columns`` appended (``values[name]``: one value per row) and
    declared in its schema metadata beside the study columns it already declares."""
    names = [c.name for c in columns]
    taken = sorted(set(names) & set(table.column_names))
    if taken or len(set(names)) != len(names):
        raise ConfigError(
            f"the table already has column(s) {', '.join(taken)}"
            if taken
            else f"the new columns repeat a name: {names}"
        )
    out = table
    for c in columns:
        raw = values[c.name]
        if len(raw) != table.num_rows:
            raise ConfigError(
                f"column {c.name!r}: {len(raw)} values for a table of {table.num_rows} rows"
            )
        arrow = pa.array([c.value(v) for v in raw], _ARROW[c.type])
        out = out.append_column(
            pa.field(c.name, arrow.type, metadata={b"doc": c.doc.encode()}), arrow
        )
    meta = dict(out.schema.metadata or {})
    declared = [*study_columns(table), *columns]
    meta[_COLUMNS_KEY] = json.dumps([c.to_dict() for c in declared]).encode()
    return out.replace_schema_metadata(meta)


def study_columns(table: pa.Table) -> list[StudyColumn]:
    """The study columns ``table`` declares (from its schema metadata)."""
    raw = (table.schema.metadata or {}).get(_COLUMNS_KEY)
    if not raw:
        return []
    return [
        StudyColumn(d["name"], d["type"], d.get("doc", ""), d.get("key"), d.get("summary"))
        for d in json.loads(raw)
    ]


def write_results(table: pa.Table, path: str | Path) -> Path:
    """Write ``table`` to Parquet atomically (a temporary file of this process, then a rename).
    Deterministic bytes."""
    path = Path(path)
    replace_atomically(
        path, lambda tmp: pq.write_table(table, tmp, compression="zstd", write_statistics=True)
    )
    return path


def upgrade_table(table: pa.Table) -> pa.Table:
    """An older table in the current layout (a current one is returned unchanged).

    Version 1's ``relation``, ``subject``, ``split`` and ``hparams`` core columns become
    study columns of the same name when any row has a value, and are dropped otherwise;
    columns a version 1 study appended stay as they are. The columns version 3 added
    (:data:`ADDED_IN_V3`) are null in tables of versions 1 and 2. Nothing else changes.
    """
    version = int((table.schema.metadata or {}).get(_VERSION_KEY, b"0"))
    if version == SCHEMA_VERSION:
        return table
    if version not in (1, 2):
        raise DataError(f"cannot upgrade a results table of schema_version {version}")
    extra = []
    for name in table.column_names:
        if name in RESULTS_SCHEMA.names:
            continue
        if name in _V1_ONLY and table.column(name).null_count == table.num_rows:
            continue
        extra.append(name)
    n = table.num_rows
    arrays = [pa.array([SCHEMA_VERSION] * n, pa.int32())]
    for f in RESULTS_SCHEMA:
        if f.name == "schema_version":
            continue
        if f.name in ADDED_IN_V3 and f.name not in table.column_names:
            arrays.append(pa.nulls(n, f.type))
        else:
            arrays.append(table.column(f.name).cast(f.type))
    fields = list(RESULTS_SCHEMA)
    if version == 2:
        declared = json.loads((table.schema.metadata or {}).get(_COLUMNS_KEY) or b"[]")
    else:
        declared = []
    for name in extra:
        arrays.append(table.column(name))
        if version == 2:
            fields.append(table.schema.field(name))
            continue
        doc = "a version 1 core column" if name in _V1_ONLY else "a version 1 study column"
        fields.append(
            pa.field(name, table.schema.field(name).type, metadata={b"doc": doc.encode()})
        )
        if name in _V1_ONLY:
            declared.append(StudyColumn(name, "string", doc).to_dict())
    meta = dict(RESULTS_SCHEMA.metadata or {})
    meta[_COLUMNS_KEY] = json.dumps(declared).encode()
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields, metadata=meta))
