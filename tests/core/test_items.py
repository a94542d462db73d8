from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from steadyeval import DataError, Item, load_items
from steadyeval.items import load_csv, load_jsonl


def _write(tmp_path: Path, lines: list[object], name: str = "items.jsonl") -> Path:
    p = tmp_path / name
    p.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")
    return p


def test_jsonl_loads_all_answer_forms(tmp_path: Path) -> None:
    p = _write(
        tmp_path,
        [
            {"id": "a", "question": "q?", "answer": "x"},
            {"id": "b", "question": "q?", "answer": ["x", "y"]},
            {"id": 3, "question": "q?", "options": ["x", "y"], "answer": 1},
            {"id": "d", "question": "q?", "options": ["x", "y"], "answer": "x"},
            {
                "id": "e",
                "question": "q?",
                "context": "c",
                "answerable": False,
                "metadata": {"k": 1},
            },
        ],
    )
    items = load_jsonl(p)
    assert [i.id for i in items] == ["a", "b", "3", "d", "e"]
    assert items[1].answers == ("x", "y")
    assert items[2].gold_options == (1,) and items[2].gold_texts == ("y",)
    assert items[3].gold_options == (0,)
    assert not items[4].answerable and items[4].metadata["k"] == 1


def test_item_is_frozen_and_hash_is_content_based() -> None:
    a = Item(id="x", question="q", answers=("1",), metadata={"s": [1, 2]})
    b = Item(id="x", question="q", answers=("1",), metadata={"s": [1, 2]})
    c = Item(id="x", question="q", answers=("2",))
    assert a.hash == b.hash != c.hash
    with pytest.raises(AttributeError):
        a.question = "other"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("row", "field", "fragment"),
    [
        ({"question": "q", "answer": "a"}, "id", "missing required field"),
        ({"id": "a", "answer": "a"}, "question", "missing required field"),
        ({"id": "a", "question": 3, "answer": "a"}, "question", "got int"),
        ({"id": "a", "question": "q"}, "answer", "missing answer"),
        ({"id": "a", "question": "q", "options": ["x"], "answer": 0}, "options", "at least 2"),
        (
            {"id": "a", "question": "q", "options": ["x", "y"], "answer": 5},
            "answer",
            "option index 5",
        ),
        (
            {"id": "a", "question": "q", "options": ["x", "y"], "answer": "z"},
            "answer",
            "not one of",
        ),
        ({"id": "a", "question": "q", "answer": "a", "answerable": "yes"}, "answerable", "got"),
        ({"id": "a", "question": "q", "answer": "a", "colour": 1}, "colour", "unknown field"),
        ({"id": "a", "question": "q", "answer": "a", "metadata": [1]}, "metadata", "got list"),
        ({"id": "a", "question": "q", "answer": True}, "answer", "got True"),
    ],
)
def test_jsonl_errors_name_file_line_and_field(
    tmp_path: Path, row: dict[str, object], field: str, fragment: str
) -> None:
    p = _write(tmp_path, [{"id": "ok", "question": "q", "answer": "a"}, row])
    with pytest.raises(DataError) as info:
        load_jsonl(p)
    err = info.value
    assert err.file == str(p) and err.line == 2 and err.field == field
    assert str(p) in str(err) and "line 2" in str(err) and fragment in str(err)


def test_invalid_json_and_duplicate_ids(tmp_path: Path) -> None:
    p = _write(tmp_path, [{"id": "a", "question": "q", "answer": "a"}, "", "{not json"])
    with pytest.raises(DataError, match=r"line 3: invalid JSON") as info:
        load_jsonl(p)
    assert info.value.line == 3
    p = _write(tmp_path, [{"id": "a", "question": "q", "answer": "a"}] * 2)
    with pytest.raises(DataError, match=r"duplicate id 'a' \(first on line 1\)"):
        load_jsonl(p)


def test_empty_file_is_an_error(tmp_path: Path) -> None:
    p = tmp_path / "e.jsonl"
    p.write_text("\n")
    with pytest.raises(DataError, match="no items"):
        load_jsonl(p)


def test_csv_loader(tmp_path: Path) -> None:
    p = tmp_path / "items.csv"
    p.write_text(
        "id,question,option_1,option_2,answer,subject\n"
        "1,Two plus two?,4,5,A,math\n"
        '2,"Say ""hi""",hi,bye,hi,talk\n'
    )
    items = load_csv(p)
    assert items[0].options == ("4", "5") and items[0].gold_options == (0,)
    assert items[1].question == 'Say "hi"' and items[1].metadata["subject"] == "talk"
    bad = tmp_path / "bad.csv"
    bad.write_text("id,question,answer,answerable\n1,q,a,maybe\n")
    with pytest.raises(DataError) as info:
        load_csv(bad)
    assert info.value.line == 2 and info.value.field == "answerable"


def test_load_items_dispatch(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="file not found"):
        load_items(tmp_path / "missing.jsonl")
    other = tmp_path / "x.txt"
    other.write_text("hi")
    with pytest.raises(DataError, match="unknown file type"):
        load_items(other)


def test_hf_datasets_loader_on_local_files(tmp_path: Path) -> None:
    p = tmp_path / "rows.json"
    p.write_text(
        "\n".join(
            json.dumps({"qid": f"q{i}", "text": f"t{i}", "gold": "g", "extra": i}) for i in range(3)
        )
    )
    items = load_items(
        "json",
        split="train",
        data_files=str(p),
        fields={"id": "qid", "question": "text", "answer": "gold"},
    )
    assert [i.id for i in items] == ["q0", "q1", "q2"]
    assert items[2].metadata["extra"] == 2


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=6,
)
_rows = st.dictionaries(
    st.sampled_from(
        ["id", "question", "context", "options", "answer", "answerable", "metadata", "x"]
    ),
    _json_values,
    max_size=7,
)


@settings(
    max_examples=150,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(rows=st.lists(_rows | _json_values, min_size=1, max_size=4))
def test_fuzz_any_input_loads_or_raises_located_error(tmp_path: Path, rows: list[object]) -> None:
    p = tmp_path / "fuzz.jsonl"
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    try:
        items = load_jsonl(p)
    except DataError as err:
        assert err.file == str(p)
        assert err.line is not None or "no items" in str(err)
    else:
        assert len(items) == len({i.id for i in items})
