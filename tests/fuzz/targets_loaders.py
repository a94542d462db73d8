"""Fuzz targets: the named loaders through their public functions: SQuAD 2.0 (the official
JSON file, and hub rows), MMLU (a folder of CSV files) and the loader options a run config
passes on (``load_items(source, loader=NAME, **options)``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from steadyeval.items import load_items, load_mmlu, load_squad2_items, squad_from_rows
from tests.fuzz._registry import expect_own_error, target

_text = st.text(max_size=8) | st.sampled_from(["", " ", "\ud800", "é", "{{ x }}", "\x00"])
_scalar = st.none() | st.booleans() | st.integers() | st.floats() | _text
_any = st.recursive(
    _scalar,
    lambda c: st.lists(c, max_size=3) | st.dictionaries(_text, c, max_size=3),
    max_leaves=10,
)


def _maybe(values: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(values, values, values, values, _any)


_answers = st.lists(st.fixed_dictionaries({"text": _maybe(_text)}), max_size=2)
_question = st.fixed_dictionaries(
    {"id": _maybe(st.sampled_from(["1", "2", "3", "4"])), "question": _maybe(_text)},
    optional={
        "answers": _maybe(_answers),
        "plausible_answers": _maybe(_answers),
        "is_impossible": _maybe(st.booleans()),
    },
)
_paragraph = st.fixed_dictionaries(
    {"context": _maybe(_text), "qas": _maybe(st.lists(_question, max_size=3))}
)
_article = st.fixed_dictionaries(
    {"title": _maybe(_text), "paragraphs": _maybe(st.lists(_paragraph, max_size=2))}
)
_squad = st.fixed_dictionaries({"data": _maybe(st.lists(_article, max_size=2))})
_squad_raw = st.one_of(
    _squad.map(lambda d: json.dumps(d).encode("utf-8", "surrogatepass")),
    _squad.map(lambda d: json.dumps(d).encode("utf-8", "surrogatepass")),
    _any.map(lambda d: json.dumps(d, allow_nan=True).encode("utf-8", "surrogatepass")),
    st.integers(1, 100_000).map(lambda n: b'{"data": ' + b"[" * n + b"]" * n + b"}"),
    st.sampled_from([b'{"data": [NaN]}', b'{"data": [1e999]}', b'{"data": [1' + b"0" * 5000]),
    st.binary(max_size=100),
)


@target("squad-json", "steadyeval.items.load_squad2_items(FILE.json)", _squad_raw)
def squad_json(raw: bytes, folder: Path) -> None:
    path = folder / "dev.json"
    path.write_bytes(raw)
    expect_own_error(lambda: load_squad2_items(path))


_row = st.fixed_dictionaries(
    {
        "id": _maybe(st.sampled_from(["a", "b", "c"])),
        "title": _maybe(_text),
        "context": _maybe(_text),
        "question": _maybe(_text),
    },
    optional={
        "answers": _maybe(
            st.one_of(
                st.fixed_dictionaries({"text": st.lists(_text, max_size=2)}),
                _answers,
                st.lists(_text, max_size=2),
            )
        ),
        "plausible_answers": _any,
    },
)


@target("squad-rows", "steadyeval.items.squad_from_rows", st.lists(_row | _any, max_size=4))
def squad_rows(rows: list[Any], folder: Path) -> None:
    expect_own_error(lambda: squad_from_rows(rows, source="squad_v2[validation]"))


_cell = st.text(max_size=6) | st.sampled_from(["A", "B", "C", "D", "E", "", "\ud800", '"'])
_csv_row = st.one_of(
    st.tuples(_text, _text, _text, _text, _text, st.sampled_from(["A", "B", "C", "D"])).map(
        lambda cells: ",".join(json.dumps(c, ensure_ascii=False) for c in cells)
    ),
    st.lists(_cell, max_size=8).map(",".join),
)
_csv_file = st.one_of(
    st.lists(_csv_row, min_size=1, max_size=3).map(
        lambda rows: "\n".join(rows).encode("utf-8", "surrogatepass")
    ),
    st.binary(max_size=60),
)
_subjects = st.sampled_from(["abstract_algebra", "anatomy", "anatomyy", "x"])
_GOOD = b'What is 1+1?,1,2,3,4,B\n"Two\nlines?",a,b,c,d,A\n'
_valid_files = st.just({("dev", "anatomy"): _GOOD, ("test", "anatomy"): _GOOD})
_random_files = st.dictionaries(
    st.tuples(st.sampled_from(["dev", "test", "val"]), _subjects), _csv_file, max_size=3
)
_mmlu = st.fixed_dictionaries(
    {
        "files": st.one_of(
            _valid_files,
            _random_files.filter(bool),
            st.tuples(_valid_files, _random_files).map(lambda t: {**t[0], **t[1]}),
        ),
        "options": st.fixed_dictionaries(
            {},
            optional={
                "subjects": _maybe(st.lists(_subjects, max_size=2)),
                "split": _maybe(st.sampled_from(["test", "val", "dev"])),
                "limit_per_subject": _maybe(st.integers(-1, 3)),
            },
        ),
    }
)


@target("mmlu-folder", "steadyeval.items.load_mmlu / load_items(loader='mmlu')", _mmlu)
def mmlu_folder(example: dict[str, Any], folder: Path) -> None:
    root = folder / "mmlu"
    for (split, subject), raw in example["files"].items():
        (root / split).mkdir(parents=True, exist_ok=True)
        (root / split / f"{subject}_{split}.csv").write_bytes(raw)
    options = example["options"]
    expect_own_error(lambda: load_items(root, loader="mmlu", **options))
    if not isinstance(options.get("split"), str) or options.get("split") != "dev":
        kwargs = {k: v for k, v in options.items() if k != "split"}
        expect_own_error(lambda: load_mmlu(root, **kwargs))
