"""Fuzz targets: the generic item files (``--data FILE.jsonl`` / ``.csv``) through ``run``."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import strategies as st

from tests.fuzz._registry import check_cli, target

_scalar = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8)
_value = st.recursive(
    _scalar,
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=4), c),
    max_leaves=12,
)
_text = st.text(max_size=12) | st.sampled_from(["", " ", "\x00", "\ud800", "{{ 7*7 }}", "é"])
_valid = st.fixed_dictionaries(  # rows the loader should accept, with odd text
    {"id": _text, "question": _text, "answer": _text},
    optional={"options": st.lists(_text, max_size=4), "metadata": _value},
)


def _numbered(rows: list[dict[str, object]]) -> bytes:
    """Rows with unique ids (``{k}-{id}``), one JSON object a line."""
    lines = [json.dumps({**row, "id": f"{k}-{row['id']}"}) for k, row in enumerate(rows)]
    return "\n".join(lines).encode()


_row = _valid | st.fixed_dictionaries(
    {},
    optional={
        "id": _scalar,
        "question": _value,
        "options": _value,
        "answer": _value,
        "answers": _value,
        "metadata": _value,
        "context": _value,
    },
)
_line = st.one_of(
    _valid.map(json.dumps),
    _row.map(lambda r: json.dumps(r, allow_nan=True)),
    _value.map(lambda v: json.dumps(v, allow_nan=True)),
    st.text(max_size=30),
)
_jsonl = st.one_of(
    st.lists(_valid, min_size=1, max_size=4).map(_numbered),
    st.lists(_line, max_size=5).map(lambda ls: "\n".join(ls).encode("utf-8", "surrogatepass")),
    st.binary(max_size=120),
)


@target("run-jsonl", "steadyeval run --data FILE.jsonl", _jsonl)
def run_jsonl(raw: bytes, folder: Path) -> None:
    (folder / "items.jsonl").write_bytes(raw)
    check_cli(["run", "--model", "scripted:m", "--data", "items.jsonl", "--out", "out", "-q"])


_csv = st.lists(
    st.lists(
        st.text(max_size=8) | st.sampled_from(["question", "answer", "options", "id"]), max_size=4
    ).map(lambda cells: ",".join(cells)),
    max_size=5,
).map(lambda ls: "\n".join(ls).encode("utf-8", "surrogatepass")) | st.binary(max_size=120)


@target("run-csv", "steadyeval run --data FILE.csv", _csv)
def run_csv(raw: bytes, folder: Path) -> None:
    (folder / "items.csv").write_bytes(raw)
    check_cli(["run", "--model", "scripted:m", "--data", "items.csv", "--out", "out", "-q"])
