"""Fuzz targets: the generic item files (``--data FILE.jsonl`` / ``.csv``) through ``run``,
and special files in their place."""

from __future__ import annotations

import json
import os
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


def _csv_cell(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


_csv_valid = st.lists(  # a header and rows the loader should take, with odd text in the cells
    st.tuples(_text, _text, _text, st.sampled_from(["0", "1", "A", "b", "x"])),
    min_size=1,
    max_size=4,
).map(
    lambda rows: (
        "id,question,option_1,option_2,answer,subject\n"
        + "\n".join(
            ",".join([str(k), _csv_cell(q), _csv_cell(a), _csv_cell(b), ans, "s"])
            for k, (q, a, b, ans) in enumerate(rows)
        )
    ).encode("utf-8", "surrogatepass")
)
_csv = (
    _csv_valid
    | st.lists(
        st.lists(
            st.text(max_size=8) | st.sampled_from(["question", "answer", "options", "id"]),
            max_size=4,
        ).map(lambda cells: ",".join(cells)),
        max_size=5,
    ).map(lambda ls: "\n".join(ls).encode("utf-8", "surrogatepass"))
    | st.binary(max_size=120)
)


@target("run-csv", "steadyeval run --data FILE.csv", _csv)
def run_csv(raw: bytes, folder: Path) -> None:
    (folder / "items.csv").write_bytes(raw)
    check_cli(["run", "--model", "scripted:m", "--data", "items.csv", "--out", "out", "-q"])


#: Files no reader may hang on, read without end or fill the memory with: special files,
#: a line over the (lowered) line limit, numbers JSON does not have, odd bytes and line ends.
_SPECIAL = [
    "fifo",
    "dev-zero",
    "folder",
    "long-line",
    "no-newline",
    "crlf",
    "bom",
    "nul",
    "nan",
    "big-int",
    "deep",
    "latin-1",
]
_special = st.tuples(st.sampled_from(_SPECIAL), st.sampled_from([".jsonl", ".csv"]))
_ROW = '{"id": "a", "question": "q?", "options": ["x", "y"], "answer": 0}'
_CSV = "id,question,option_1,option_2,answer\na,q?,x,y,0"


def _special_file(kind: str, path: Path) -> None:
    csv = path.suffix == ".csv"
    head = _CSV if csv else _ROW
    body = {
        "long-line": head + "\n" + ("b," + "x" * 20_000 + ",y,z,1" if csv else "x" * 20_000),
        "no-newline": head,
        "crlf": head.replace("\n", "\r\n") + "\r\n",
        "bom": "\ufeff" + head + "\n",
        "nul": head + "\n\x00\n",
        "nan": head.replace("0}", "NaN}").replace(",0", ",nan") + "\n",
        "big-int": head.replace("0}", "1" + "0" * 5000 + "}") + "\n",
        "deep": '{"id": "b", "metadata": ' + "[" * 3000 + "]" * 3000 + "}\n",
    }
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")
    elif kind == "folder":
        path.mkdir()
    elif kind == "latin-1":
        path.write_bytes(head.encode() + b"\ncaf\xe9\n")
    else:
        path.write_text(body[kind], encoding="utf-8")


@target("run-data-special", "steadyeval run --data SPECIAL_FILE (FIFO, /dev/zero, ...)", _special)
def run_data_special(example: tuple[str, str], folder: Path) -> None:
    kind, suffix = example
    path = folder / f"items{suffix}"
    _special_file(kind, path)
    old = os.environ.get("STEADYEVAL_MAX_LINE_MB")
    os.environ["STEADYEVAL_MAX_LINE_MB"] = "0.01"  # about 10 KB: the long line is over it
    try:
        check_cli(["run", "--model", "scripted:m", "--data", path.name, "--dry-run"])
    finally:
        if old is None:
            del os.environ["STEADYEVAL_MAX_LINE_MB"]
        else:
            os.environ["STEADYEVAL_MAX_LINE_MB"] = old
