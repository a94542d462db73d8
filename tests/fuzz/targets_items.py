"""Fuzz targets: the ``Item`` constructor (the Python API's way in for data that no loader
checked) and the comma-separated list flags of a study.

``Item`` gets each field as a plausible value or a hostile one (a string where a list goes,
None, numbers, bytes, lone surrogates, nested lists); what it accepts must hash and turn into
JSON, so nothing it let in fails later. The list flags get texts with empty entries,
whitespace, repeats, huge and negative numbers and unknown names.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from steadyeval.items import Item
from tests.fuzz._hostile import hostile_value
from tests.fuzz._registry import check_cli, expect_own_error, target

_odd = st.one_of(
    hostile_value,
    st.sampled_from(["Paris", "", "\ud800", "a\udfffb", b"x", 3, None, True, 1.5]),
    st.lists(st.sampled_from(["a", "b", "\ud800", 0, None]), max_size=4),
    st.tuples(st.sampled_from(["a", "b"]), st.sampled_from(["c", "\udc00"])),
)
_texts = st.lists(st.sampled_from(["Paris", "Rome", "Berlin", "é", "x" * 300]), max_size=4)


def _mostly(valid: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """A valid value three times in four, else a hostile one."""
    return st.sampled_from([True, True, True, False]).flatmap(lambda ok: valid if ok else _odd)


_options = _texts.map(lambda t: list(dict.fromkeys(t)))
_fields = st.fixed_dictionaries(
    {"id": _mostly(st.just("q1")), "question": _mostly(st.just("Capital?"))},
    optional={
        "context": _mostly(st.sampled_from([None, "A passage."])),
        "options": _mostly(st.one_of(st.none(), _options)),
        "answers": _mostly(_texts),
        "gold_options": _mostly(st.lists(st.integers(-2, 5), max_size=3)),
        "answerable": _mostly(st.booleans()),
        "aliases": _mostly(_texts),
        "metadata": _mostly(st.just({"subject": "geo"})),
        "answer": _mostly(st.sampled_from(["Paris", 0, 1])),
    },
)


def _build(fields: dict[str, Any]) -> None:
    item = Item(**fields)
    assert item.hash and item.to_dict()  # what is accepted can be hashed and written


@target("item-constructor", "steadyeval.items.Item(**fields)", _fields)
def item_constructor(example: dict[str, Any], folder: Path) -> None:
    expect_own_error(lambda: _build(example))


_VALID = {
    "--shots": ["0", "1", "5", " 2"],
    "--templates": ["reference", "single-space"],
    "--scoring": ["letter-logprob", "option-logprob"],
    "--subjects": ["abstract_algebra"],
}
_hostile_entry = st.one_of(
    st.sampled_from(["", " ", "-1", "1001", "1" + "0" * 40, "x", "1.5", "\ud800", "option"]),
    st.text(max_size=4),
)


def _list_for(flag: str) -> st.SearchStrategy[tuple[str, str]]:
    valid = st.lists(st.sampled_from(_VALID[flag]), min_size=1, unique=True)
    hostile = st.lists(st.one_of(st.sampled_from(_VALID[flag]), _hostile_entry), min_size=1)
    text = st.sampled_from([True, True, False]).flatmap(lambda ok: valid if ok else hostile)
    return text.map(lambda entries: (flag, ",".join(entries)))


_flags = st.lists(
    st.sampled_from(sorted(_VALID)).flatmap(_list_for), max_size=3, unique_by=lambda p: p[0]
)


@target("study-list-flags", "steadyeval study knowledge --shots/--templates/... LIST", _flags)
def study_list_flags(example: list[tuple[str, str]], folder: Path) -> None:
    for split, rows in (("dev", "Q?,a,b,c,d,A\n"), ("test", "Q1?,a,b,c,d,B\n")):
        (folder / "mmlu" / split).mkdir(parents=True)
        (folder / "mmlu" / split / f"abstract_algebra_{split}.csv").write_text(rows)
    argv = ["study", "knowledge", "--model", "scripted:m", "--data", "mmlu"]
    for flag, value in example:
        argv += [f"{flag}={value}"]
    check_cli([*argv, "--dry-run"])
