"""Fuzz targets: the spread study's formats files (``--formats FILE``)."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import strategies as st

from steadyeval.studies.spread import load_format_file
from tests.fuzz._registry import expect_own_error, target

_delims = st.sampled_from(
    [
        "{",
        "}",
        "{{",
        "}}",
        "{%",
        "%}",
        "{#",
        "#}",
        "{% raw %}",
        "{% endraw %}",
        "{question}",
        "{choices}",
        "{topic}",
        "{context}",
        "{answer}",
        "\\",
        '"',
        "\x00",
        "\ud800",
        "é",
    ]
)
_template = st.lists(_delims | st.text(max_size=20), max_size=12).map("".join)
_document = st.one_of(
    st.lists(_template, max_size=5),
    st.dictionaries(st.sampled_from(["MMLU", "templates", "x"]), st.lists(_template, max_size=3)),
    st.recursive(
        st.none() | st.integers() | st.floats() | st.text(max_size=5),
        lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=3), c),
        max_leaves=20,
    ),
)
_raw = st.one_of(
    _document.map(lambda d: json.dumps(d).encode("utf-8", "surrogatepass")),
    st.binary(max_size=200),
    st.integers(1, 100_000).map(lambda n: b"[" * n),
)


@target("formats-file", "steadyeval.studies.spread.load_format_file", _raw)
def formats_file(raw: bytes, folder: Path) -> None:
    path = folder / "formats.json"
    path.write_bytes(raw)
    expect_own_error(lambda: load_format_file(path))
