"""Fuzz target: ``steadyeval compare A B`` on two results tables that pair on some, all or
none of their (item, condition, sample) units (issue 38 point 6: runs that share nothing
were an empty table with exit 0; now an error naming the keys that differ).

Each example derives two tables from one real run (the scripted test backend, made once per
process): each side keeps a subset of the rows and may rename its item ids, its condition,
its model or its sample indices to hostile text (long, control characters, markup, other
scripts), or blank its outcome; the two tables are written as ``.parquet`` files and
compared, with either outcome. The property: exit 0 with the tables, or one short
``error:`` line.
"""

from __future__ import annotations

import json
import os
from functools import cache
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import strategies as st

from steadyeval import read_results
from tests.fuzz._registry import check_cli, target

_ITEMS = "".join(
    json.dumps({"id": f"q{i}", "question": f"Q{i}?", "options": ["a", "b"], "answer": i % 2}) + "\n"
    for i in range(6)
)
_names = st.one_of(
    st.sampled_from(["q0", "q1", "q2", "other", "mc", "free"]),
    st.text(min_size=1, max_size=30),
    st.text(alphabet="\n\t\r\x00[]<>/&\u202e\u2028é中", min_size=1, max_size=12),
    st.integers(50, 3000).map(lambda n: "x" * n),
)


@cache
def _base() -> pa.Table:
    """The results table of a scripted run of six items (made once per process)."""
    home = Path(os.environ.get("TMPDIR", "/tmp")) / f"fuzz-compare-base-{os.getpid()}"
    home.mkdir(parents=True, exist_ok=True)
    here = Path.cwd()
    os.chdir(home)
    try:
        (home / "items.jsonl").write_text(_ITEMS, encoding="utf-8")
        argv = ["run", "--model", "scripted:m", "--data", "items.jsonl", "--out", "run", "-q"]
        if not (home / "run").exists():
            assert check_cli(argv) == 0
    finally:
        os.chdir(here)
    return read_results(home / "run")


_side = st.fixed_dictionaries(
    {
        "keep": st.lists(st.booleans(), min_size=6, max_size=6),
        "items": st.none() | st.lists(_names, min_size=6, max_size=6),
        "condition": st.none() | _names,
        "model": st.none() | _names,
        "sample": st.none() | st.integers(0, 2**31 - 1),
        "blank": st.booleans(),
    }
)
_compare = st.fixed_dictionaries(
    {"a": _side, "b": _side, "outcome": st.sampled_from(["correct", "refused"])}
)


def _column(table: pa.Table, name: str, values: list[Any]) -> pa.Table:
    i = table.schema.get_field_index(name)
    return table.set_column(i, table.schema.field(i), pa.array(values, table.schema.field(i).type))


def _derive(side: dict[str, Any]) -> pa.Table:
    table = _base()
    ids = table.column("item_id").to_pylist()
    order = sorted(set(ids))
    keep = [side["keep"][order.index(i) % 6] for i in ids]
    table = table.filter(pa.array(keep, pa.bool_()))
    n = table.num_rows
    if side["items"] is not None:
        rename = dict(zip(order, side["items"], strict=False))
        table = _column(table, "item_id", [rename[i] for i in table.column("item_id").to_pylist()])
    if side["condition"] is not None:
        table = _column(table, "condition", [side["condition"]] * n)
    if side["model"] is not None:
        table = _column(table, "model", [side["model"]] * n)
    if side["sample"] is not None:
        table = _column(table, "sample_index", [side["sample"]] * n)
    if side["blank"]:
        table = _column(table, "correct", [None] * n)
    return table


@target("compare-pairs", "steadyeval compare A.parquet B.parquet", _compare)
def compare_pairs(example: dict[str, Any], folder: Path) -> None:
    paths = []
    for name in ("a", "b"):
        path = folder / f"{name}.parquet"
        pq.write_table(_derive(example[name]), path)
        paths.append(str(path))
    check_cli(["compare", *paths, "--outcome", example["outcome"]])
