"""Data files at the edges (issue 37 classes 2-4, issue 38.6): special files, over-long lines,
bytes that are not UTF-8, numbers JSON does not have, and the column of a JSON error."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from steadyeval import ConfigError, DataError, Item
from steadyeval.items import (
    SUBJECTS,
    load_csv,
    load_items,
    load_jsonl,
    load_mmlu,
    load_squad,
    read_jsonl,
    squad_from_rows,
)
from tests.golden.pipeline.cases import write_mmlu

ROW = '{"id": "a", "question": "q?", "answer": "x"}'


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("loader", [load_jsonl, load_csv])
def test_a_fifo_or_a_device_is_refused_unopened(tmp_path: Path, loader: object) -> None:
    suffix = ".jsonl" if loader is load_jsonl else ".csv"
    fifo = _fifo(tmp_path / f"pipe{suffix}")  # no writer: opening it would block forever
    with pytest.raises(DataError, match=r"is a FIFO \(named pipe\); expected a"):
        load_items(fifo)
    zero = tmp_path / f"zero{suffix}"
    zero.symlink_to("/dev/zero")  # read without end
    with pytest.raises(DataError, match="is a character device"):
        load_items(zero)
    with pytest.raises(DataError, match="is a folder"):
        load_jsonl(tmp_path)


def test_a_line_longer_than_the_limit_is_refused_as_it_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STEADYEVAL_MAX_LINE_MB", "0.001")  # 1,048 bytes
    path = tmp_path / "long.jsonl"
    path.write_text(ROW + "\n" + '{"id": "b", "question": "' + "x" * 5000 + '"}\n')
    with pytest.raises(
        DataError, match=r"line 2: the line is longer than .*STEADYEVAL_MAX_LINE_MB"
    ):
        load_jsonl(path)
    csv = tmp_path / "long.csv"
    csv.write_text("id,question,answer\n1," + "y" * 5000 + ",a\n")
    with pytest.raises(DataError, match=r"long.csv, line 2: the line is longer"):
        load_csv(csv)


@pytest.mark.parametrize(
    ("line", "column", "end"),
    [
        ('{"id": "a", "question": "q"', 28, True),  # cut short: the end of line 2, not line 3
        ('{"id": "a" "question": "q"}', 12, False),
        ('{"id": "a", "question": "q", }', 30, False),
    ],
)
def test_a_json_error_column_counts_from_the_line_start(
    tmp_path: Path, line: str, column: int, end: bool
) -> None:
    path = tmp_path / "items.jsonl"
    path.write_text(ROW + "\n" + line + "\r\n" + ROW.replace('"a"', '"c"') + "\n")
    with pytest.raises(DataError) as info:
        load_jsonl(path)
    err = info.value
    assert err.line == 2
    assert f"at column {column}" in str(err)
    assert ("(the end of the line)" in str(err)) is end
    assert column <= len(line) + 1  # inside the line, or just past its last character


@pytest.mark.parametrize(
    ("value", "match"),
    [
        ("NaN", "NaN is not JSON"),
        ("-Infinity", "-Infinity is not JSON"),
        ("1e999", "too large for a float"),
        ("1" + "0" * 5000, "an integer of over 4,300 digits"),
    ],
)
def test_numbers_json_does_not_have_are_refused(tmp_path: Path, value: str, match: str) -> None:
    path = tmp_path / "items.jsonl"
    path.write_text(ROW + "\n" + '{"id": "b", "question": "q", "metadata": {"x": ' + value + "}}\n")
    with pytest.raises(DataError, match=match) as info:
        load_jsonl(path)
    assert info.value.line == 2


def test_bytes_that_are_not_utf8_are_located(tmp_path: Path) -> None:
    path = tmp_path / "items.jsonl"
    path.write_bytes(ROW.encode() + b'\n{"id": "b", "question": "caf\xe9"}\n')
    with pytest.raises(DataError, match=r"line 2: not UTF-8 text at column 29"):
        load_jsonl(path)
    csv = tmp_path / "items.csv"
    csv.write_bytes(b"id,question,answer\n1,ok,a\n2,caf\xe9,b\n")
    with pytest.raises(DataError, match=r"items.csv, line 3: not UTF-8 text at column 6"):
        load_csv(csv)


def test_deep_json_and_lone_surrogates_in_rows_are_located(tmp_path: Path) -> None:
    deep = tmp_path / "deep.jsonl"
    deep.write_text('{"id": "a", "metadata": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    with pytest.raises(DataError, match=r"line 1.*nested deeper than 100 levels"):
        list(read_jsonl(deep))
    lone = tmp_path / "lone.jsonl"
    lone.write_text('{"id": "a", "question": "\\ud800"}\n')
    with pytest.raises(DataError, match="line 1, field 'question': lone surrogate"):
        load_jsonl(lone)


def test_csv_rows_spanning_lines_keep_their_line_numbers(tmp_path: Path) -> None:
    csv = tmp_path / "items.csv"
    csv.write_text('id,question,answer\n1,"two\nlines",a\n2,q,b\n3,q,b,extra\n')
    with pytest.raises(DataError, match=r"line 5: more cells than header columns"):
        load_csv(csv)
    csv.write_text('id,question,answer\r\n1,"two\r\nlines",a\r\n2,q,b\r\n')
    items = load_csv(csv)
    assert [i.question for i in items] == ["two\r\nlines", "q"]


# -- named loaders: SQuAD 2.0 and MMLU ------------------------------------------------------

SQUAD = {
    "data": [
        {
            "title": "T",
            "paragraphs": [
                {"context": "c", "qas": [{"id": "1", "question": "q", "answers": [{"text": "a"}]}]}
            ],
        }
    ]
}


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ('{"data": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested deeper than 100 levels"),
        (json.dumps(SQUAD).replace('"1"', "NaN"), "NaN is not JSON"),
        (json.dumps(SQUAD).replace('"c"', '"\\ud800"'), r"'data\[0\].paragraphs\[0\].context'"),
        (json.dumps(SQUAD).replace('[{"text": "a"}]', '{"text": "a"}'), "got dict"),
        ('{"data": [1,\n 2', "line 2: invalid JSON at column 3"),
    ],
)
def test_squad_json_is_read_as_untrusted_input(tmp_path: Path, text: str, match: str) -> None:
    path = tmp_path / "squad.json"
    path.write_text(text)
    with pytest.raises(DataError, match=match):
        load_squad(path)


def test_squad_special_files_and_bytes_are_refused(tmp_path: Path) -> None:
    fifo = _fifo(tmp_path / "dev.json")
    with pytest.raises(DataError, match=r"dev\.json"):
        load_squad(fifo)  # returns at once: a FIFO is never opened
    latin = tmp_path / "latin.json"
    latin.write_bytes(b'{"data": [{"title": "caf\xe9"}]}')
    with pytest.raises(DataError, match=r"line 1: not UTF-8 text at column 25"):
        load_squad(latin)


@pytest.mark.parametrize(
    ("row", "match"),
    [
        (5, r"line 1, field '\(row\)': got int"),
        ({"id": "1", "title": None, "context": "c", "question": "q"}, "'title': got NoneType"),
        ({"id": [1], "title": "t", "context": "c", "question": "q"}, "'id': got list"),
        ({"id": "1", "title": "t", "context": "c", "question": "q", "answers": [{}]}, "answers"),
        ({"id": "1", "title": "t", "context": "c", "question": "q", "answers": 3}, "answers"),
        ({"id": "1", "title": "t", "context": "c", "question": "\ud800"}, "lone surrogate"),
        ({"id": "1", "title": "t", "context": "c"}, "missing column 'question'"),
    ],
)
def test_squad_hub_rows_of_the_wrong_shape_are_located(row: object, match: str) -> None:
    with pytest.raises(DataError, match=match):
        squad_from_rows([row], source="squad_v2[validation]")  # type: ignore[list-item]


def test_an_unknown_mmlu_subject_suggests_the_closest_and_cuts_the_list(tmp_path: Path) -> None:
    root = tmp_path / "mmlu"
    for split in ("dev", "test"):
        (root / split).mkdir(parents=True)
        for subject in SUBJECTS:
            (root / split / f"{subject}_{split}.csv").write_text("q?,a,b,c,d,A\n")
    with pytest.raises(DataError) as info:
        load_mmlu(root, subjects=["anatomyy"])
    text = str(info.value)
    assert "unknown subject 'anatomyy' (did you mean 'anatomy'?)" in text
    assert "... (57 in all)" in text and "virology" not in text and len(text) < 400
    with pytest.raises(DataError, match="'zzz' and 1 more"):
        load_mmlu(root, subjects=["zzz", "anatomyy"])
    with pytest.raises(DataError, match="field 'subjects': got 'anatomy'"):
        load_mmlu(root, subjects="anatomy")  # type: ignore[arg-type]  # not a list of letters


def test_mmlu_csv_files_are_read_line_by_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write_mmlu(tmp_path / "mmlu")
    test_file = next((root / "test").glob("*_test.csv"))
    subject = test_file.name.removesuffix("_test.csv")
    test_file.write_bytes(b"q?,a,b,c,d,A\ncaf\xe9?,a,b,c,d,B\n")
    with pytest.raises(DataError, match=r"_test.csv, line 2: not UTF-8 text at column 4"):
        load_mmlu(root, subjects=[subject])
    monkeypatch.setenv("STEADYEVAL_MAX_LINE_MB", "0.001")
    test_file.write_text("q?," + "x" * 5000 + ",b,c,d,A\n")
    with pytest.raises(DataError, match="line 1: the line is longer than"):
        load_mmlu(root, subjects=[subject])


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"subjects": 5}, "option 'subjects': Input should be an instance of Sequence"),
        ({"subjects": "anatomy"}, "option 'subjects': 'str' instances are not allowed"),
        ({"limit_per_subject": 1.5}, "option 'limit_per_subject': Input should be a valid integer"),
        ({"split": "train"}, "option 'split': Input should be 'dev', 'val' or 'test'"),
    ],
)
def test_loader_options_of_the_wrong_type_name_the_option(
    tmp_path: Path, options: dict[str, object], match: str
) -> None:
    root = write_mmlu(tmp_path / "mmlu")
    with pytest.raises(ConfigError, match=match):
        load_items(root, loader="mmlu", **options)


def test_hub_options_on_a_local_file_are_an_error_not_dropped(tmp_path: Path) -> None:
    path = tmp_path / "items.jsonl"
    path.write_text(ROW + "\n")
    with pytest.raises(ConfigError, match="fields apply to a hub data set or a named loader"):
        load_items(path, fields={"question": "q"})


def test_an_unknown_subject_of_a_hub_mmlu_is_one_short_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.models._hub_cache import HubCache, use_hub_cache

    cache = HubCache(tmp_path / "hf")
    use_hub_cache(cache, monkeypatch)
    monkeypatch.chdir(tmp_path)
    rows = [
        {"question": f"Q{k}?", "subject": "anatomy", "choices": ["a", "b", "c", "d"], "answer": k}
        for k in range(4)
    ]
    for subject in sorted(SUBJECTS)[:20]:
        cache.add_dataset("cais/mmlu", {"test": rows, "dev": rows[:2]}, config=subject)
    with pytest.raises(DataError) as info:
        load_mmlu("cais/mmlu", subjects=["anatomyy"])
    text = str(info.value)
    assert "unknown subject 'anatomyy' (did you mean 'anatomy'?)" in text
    assert "\n" not in text and len(text) < 700, text


def test_a_byte_order_mark_at_the_start_is_not_part_of_the_first_line(tmp_path: Path) -> None:
    jsonl = tmp_path / "items.jsonl"
    jsonl.write_bytes("\ufeff".encode() + ROW.encode() + b"\n")
    assert [i.id for i in load_jsonl(jsonl)] == ["a"]
    csv = tmp_path / "items.csv"
    csv.write_bytes("\ufeffid,question,answer\r\n1,q,a\r\n".encode())
    assert [i.id for i in load_csv(csv)] == ["1"]  # the header's first column is "id"


def test_an_item_built_in_python_gets_the_loaders_checks() -> None:
    deep: list[object] = []
    node = deep
    for _ in range(100_000):
        node.append([])
        node = node[0]  # type: ignore[assignment]
    with pytest.raises(DataError, match=r"field 'metadata.a': nested deeper than 100 levels"):
        Item(id="x", question="q", metadata={"a": deep})  # was a RecursionError
    with pytest.raises(DataError, match=r"field 'gold_options': gold option 5 outside 0\.\.1"):
        Item(id="x", question="q", options=("a", "b"), gold_options=(5,))
    with pytest.raises(DataError, match="field 'metadata': got list"):
        Item(id="x", question="q", metadata=[1])  # type: ignore[arg-type]


def test_a_squad_file_of_too_many_values_is_refused_before_it_is_parsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STEADYEVAL_MAX_JSON_VALUES", "1000")
    path = tmp_path / "dev.json"
    path.write_text('{"data": [' + ",".join(["{}"] * 5000) + "]}")
    with pytest.raises(
        DataError, match="may hold up to 10,002 JSON values, over the limit of 1,000"
    ):
        load_squad(path)
    monkeypatch.setenv("STEADYEVAL_MAX_FILE_MB", "0.001")
    with pytest.raises(DataError, match=r"over the limit of .* for this file"):
        load_squad(path)
