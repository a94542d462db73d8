"""Pinned analyses: a results table and design facts stored as JSON, with the analysis they
gave, so a rewrite of an analysis can be checked to return exactly the same dict.

Cases live in ``tests/golden/<study>/`` as ``<case>.input.json`` (one line per column; the
``metadata`` column as indices into its distinct values) and ``<case>.expected.json`` (the
analysis, NaN kept). Each folder's ``make_golden.py`` writes them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from steadyeval.results import RESULTS_SCHEMA_V1

GOLDEN = Path(__file__).resolve().parents[1] / "golden"


def cases(study: str) -> list[str]:
    return sorted(p.name.removesuffix(".input.json") for p in (GOLDEN / study).glob("*.input.json"))


def write_case(
    folder: Path,
    name: str,
    table: pa.Table,
    columns: Sequence[str],
    design: Mapping[str, Any],
    analysis: Mapping[str, Any],
) -> None:
    """Store ``columns`` of ``table``, the design facts and the analysis (NaN kept)."""
    data = {c: table.column(c).to_pylist() for c in columns}
    distinct = list(dict.fromkeys(data.get("metadata", [])))
    if "metadata" in data:
        index = {m: i for i, m in enumerate(distinct)}
        data["metadata"] = [index[m] for m in data["metadata"]]
    lines = [f" {json.dumps(c)}: {json.dumps(v)}" for c, v in data.items()]
    text = (
        "{\n"
        f' "design": {json.dumps(design)},\n'
        f' "metadata_values": {json.dumps(distinct)},\n'
        ' "columns": {\n' + ",\n".join(lines) + "\n }\n}\n"
    )
    (folder / f"{name}.input.json").write_text(text, encoding="utf-8")
    (folder / f"{name}.expected.json").write_text(
        json.dumps(analysis, indent=1) + "\n", encoding="utf-8"
    )


def load_case(study: str, name: str) -> tuple[pa.Table, dict[str, Any], Any]:
    """The table (results-schema types), the design facts and the expected analysis."""
    folder = GOLDEN / study
    data = json.loads((folder / f"{name}.input.json").read_text(encoding="utf-8"))
    columns = data["columns"]
    if "metadata" in columns:
        values = data["metadata_values"]
        columns["metadata"] = [values[i] for i in columns["metadata"]]
    arrays = [pa.array(v, type=RESULTS_SCHEMA_V1.field(c).type) for c, v in columns.items()]
    table = pa.Table.from_arrays(arrays, names=list(columns))
    expected = json.loads((folder / f"{name}.expected.json").read_text(encoding="utf-8"))
    return table, data["design"], expected


def assert_same(actual: Any, expected: Any, path: str = "analysis") -> None:
    """Equal keys (in order), values and Python types; floats within 1e-12 relative.

    ``expected`` comes from JSON, so a numpy scalar or a tuple in ``actual`` fails.
    """
    assert type(actual) is type(expected), f"{path}: {type(actual)} != {type(expected)}"
    if isinstance(expected, dict):
        assert list(actual) == list(expected), f"{path}: keys {list(actual)} != {list(expected)}"
        for k in expected:
            assert_same(actual[k], expected[k], f"{path}.{k}")
    elif isinstance(expected, list):
        assert len(actual) == len(expected), f"{path}: {len(actual)} != {len(expected)} entries"
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            assert_same(a, e, f"{path}[{i}]")
    elif isinstance(expected, float):
        same = (math.isnan(actual) and math.isnan(expected)) or math.isclose(
            actual, expected, rel_tol=1e-12, abs_tol=1e-15
        )
        assert same, f"{path}: {actual!r} != {expected!r}"
    else:
        assert actual == expected, f"{path}: {actual!r} != {expected!r}"
