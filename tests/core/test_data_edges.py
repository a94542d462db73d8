"""Data files at the edges (issue 37 classes 2-4, issue 38.6): special files, over-long lines,
bytes that are not UTF-8, numbers JSON does not have, and the column of a JSON error."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from steadyeval import DataError
from steadyeval.items import load_csv, load_items, load_jsonl, read_jsonl

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
