"""A hostile or damaged response cache file (issue 37, classes 2-4): special files refused
before SQLite opens them, a foreign schema refused before any of its code runs, damaged rows
and pages named, never a traceback, a hang or a gigabyte value."""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from steadyeval import ConfigError, DataError, SteadyevalError
from steadyeval.cache import ResponseCache
from steadyeval.cli import main
from steadyeval.requests import GenerateResponse, ScoreResponse


def _good(path: Path) -> Path:
    with ResponseCache(path) as store:
        store.put_many(
            [
                ("k1", "m", "generate", GenerateResponse(text="hi")),
                ("k2", "m", "score", ScoreResponse(logprob=float("nan"), n_tokens=1, is_greedy=False)),
            ]
        )  # fmt: skip
    return path


def _edited(path: Path, *sql: str) -> Path:
    _good(path)
    con = sqlite3.connect(path)
    for statement in sql:
        con.execute(statement)
    con.commit()
    con.close()
    return path


def _line(argv: list[str]) -> str:
    """The CLI's one error line, from a thread that must finish."""
    box: list[object] = []
    worker = threading.Thread(
        target=lambda: box.append(CliRunner().invoke(main, argv)), daemon=True
    )
    worker.start()
    worker.join(60)
    assert not worker.is_alive(), f"{argv} hangs"
    result = box[0]
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output  # type: ignore[attr-defined]
    (line,) = result.output.strip().splitlines()  # type: ignore[attr-defined]
    assert line.startswith("error: ")
    return line


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (os.mkfifo, "is a FIFO (named pipe); expected a response cache file"),
        (lambda p: p.symlink_to("/dev/zero"), "is a character device"),
        (lambda p: p.mkdir(), "is a folder"),
        (lambda p: p.write_text("not SQLite"), "not a response cache (file is not a database)"),
    ],
)
@pytest.mark.parametrize("command", [["info"], ["clear", "--yes"]])
def test_a_cache_that_is_not_a_regular_sqlite_file(
    tmp_path: Path, make: Callable[[Path], object], said: str, command: list[str]
) -> None:
    path = tmp_path / "c.sqlite"
    make(path)
    assert said in _line(["cache", *command, "--cache", str(path)])


@pytest.mark.parametrize(
    ("sql", "said"),
    [
        # a recursive trigger would hang the first insert; a view or an index expression
        # runs code of the file's on every read or write; zeroblob(2e9) allocates 2 GB
        ("CREATE TRIGGER t AFTER INSERT ON responses BEGIN INSERT INTO meta(name, value) "
         "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c) SELECT i, i FROM c; END",
         "it holds trigger 't'"),
        ("CREATE VIEW v AS SELECT 1", "it holds view 'v'"),
        ("CREATE INDEX i ON responses(length(zeroblob(10)))", "it holds index 'i'"),
        ("ALTER TABLE responses ADD COLUMN z DEFAULT 5", "its responses table has the columns"),
        ("CREATE TABLE other(x)", "it holds table 'other'"),
        ("UPDATE meta SET value = '9' WHERE name = 'schema_version'", "cache schema_version '9'"),
    ],
)  # fmt: skip
def test_a_foreign_schema_is_refused_before_it_runs(tmp_path: Path, sql: str, said: str) -> None:
    path = _edited(tmp_path / "c.sqlite", sql)
    with pytest.raises(ConfigError, match="not a response cache") as info:
        ResponseCache(path)
    assert said in str(info.value)
    assert said in _line(["cache", "info", "--cache", str(path)])


@pytest.mark.parametrize(
    ("sql", "said"),
    [
        ("UPDATE responses SET response = '{' WHERE key = 'k1'", "key 'k1', line 1: invalid JSON"),
        ("UPDATE responses SET response = '" + "[" * 100_000 + "' WHERE key = 'k1'", "nested deeper"),
        ("UPDATE responses SET kind = 'zzz' WHERE key = 'k1'", "(kind 'zzz') is not a response"),
        ("UPDATE responses SET response = '{\"text\": 5}' WHERE key = 'k1'", "field 'text' is 5"),
        ("UPDATE responses SET response = '[1]' WHERE key = 'k1'", "is not a JSON object"),
        ("UPDATE responses SET response = '{\"text\": \"a\", \"n_input_tokens\": "
         + "9" * 400 + "}' WHERE key = 'k1'", "field 'n_input_tokens' is 99999"),
        ("UPDATE responses SET response = zeroblob(100000000) WHERE key = 'k1'", "string or blob too big"),
    ],
)  # fmt: skip
def test_a_damaged_row_names_the_file_and_key(tmp_path: Path, sql: str, said: str) -> None:
    path = _edited(tmp_path / "c.sqlite", sql)
    for use in (lambda s: s.get_many(["k1", "k2"]), lambda s: s.claim(["k1", "k3"])):
        with ResponseCache(path) as store, pytest.raises(DataError) as info:
            use(store)
        assert str(path) in str(info.value) and said in str(info.value)
        assert len(str(info.value)) < 400


def test_a_nan_logprob_is_read_back_and_claims_of_the_wrong_type_are_cast(tmp_path: Path) -> None:
    path = _edited(
        tmp_path / "c.sqlite",
        "INSERT INTO claims VALUES ('k3', 'o')",
        "INSERT INTO claim_holders VALUES ('o', 'not a pid', 5, 7, 'x')",
    )
    with ResponseCache(path) as store:
        got = store.get_many(["k2"])["k2"]
        assert isinstance(got, ScoreResponse) and got.logprob != got.logprob  # NaN kept
        claims = store.claim(["k3"])  # the holder's heartbeat 'x' reads as 0: taken over
    assert claims.mine == ("k3",)


def test_damaged_pages_are_one_error(tmp_path: Path) -> None:
    path = _good(tmp_path / "c.sqlite")
    data = bytearray(path.read_bytes())
    for i in range(4096, len(data), 7):
        data[i] ^= 0x55
    path.write_bytes(bytes(data))
    for command in (["info"], ["clear", "--yes"]):
        line = _line(["cache", *command, "--cache", str(path)])
        assert "c.sqlite" in line and "malformed" in line
    path.write_bytes(bytes(data[:5000]))
    with pytest.raises(SteadyevalError, match=r"c\.sqlite"), ResponseCache(path) as store:
        store.get_many(["k1"])


def test_run_with_a_fifo_cache_does_not_hang(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.scripted_backend import register

    register()
    monkeypatch.chdir(tmp_path)
    row = {"id": "q0", "question": "Q?", "options": ["a", "b"], "answer": 0}
    Path("items.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
    os.mkfifo("c.sqlite")
    argv = [
        "run",
        "--model",
        "scripted:m",
        "--data",
        "items.jsonl",
        "--cache",
        "c.sqlite",
        "--out",
        "o",
    ]
    assert "c.sqlite: is a FIFO" in _line(argv)
