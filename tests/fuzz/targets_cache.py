"""Fuzz target: the response cache file (``--cache FILE``): ``steadyeval cache info``,
``steadyeval cache clear``, a ``run`` that reads its responses from it, and the public
:class:`steadyeval.cache.ResponseCache` (``get_many``, ``claim``).

Each example starts from a real cache (written by a ``run`` of the scripted test backend,
once per process, so the run's keys find its rows) and changes it: rows set to hostile
values (JSON of every type and edge, nested 100,000 deep, binary, unknown kinds), claims
of wrong types, a foreign schema (triggers, views, indexes, tables dropped or altered,
columns renamed), bytes flipped or cut, or the file replaced by a FIFO, a link to
``/dev/zero``, a folder, or text.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
from functools import cache
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from steadyeval.cache import ResponseCache
from tests.fuzz._hostile import depths, dump, hostile_value
from tests.fuzz._registry import check_cli, expect_own_error, target

_ITEMS = "".join(
    json.dumps({"id": f"q{i}", "question": f"Q{i}?", "options": ["a", "b"], "answer": i % 2}) + "\n"
    for i in range(3)
)
_RUN = ["run", "--model", "scripted:m", "--data", "items.jsonl", "-q"]
_UPDATES = [
    "UPDATE responses SET response = ?",
    "UPDATE responses SET kind = ?",
    "UPDATE responses SET model = ?",
    "UPDATE responses SET created = ?",
    "UPDATE responses SET key = ? WHERE rowid = 1",
    "UPDATE meta SET value = ? WHERE name = 'schema_version'",
    "INSERT OR REPLACE INTO claims(key, owner) SELECT key, ? FROM responses",
    "INSERT OR REPLACE INTO claim_holders VALUES ('o', ?, ?, ?, ?)",
]
_DDL = [
    "CREATE TRIGGER t AFTER INSERT ON responses BEGIN DELETE FROM meta; END",
    "CREATE VIEW v AS SELECT 1",
    "CREATE INDEX i ON responses(model)",
    "CREATE TABLE other(x)",
    "DROP TABLE meta",
    "DROP TABLE responses",
    "DROP TABLE claims",
    "ALTER TABLE responses ADD COLUMN z",
    "ALTER TABLE responses RENAME COLUMN kind TO sort",
    "ALTER TABLE claim_holders ADD COLUMN z",
    "DELETE FROM responses",
]
_value = hostile_value | st.binary(max_size=16)
_op = st.one_of(
    st.tuples(st.just("sql"), st.sampled_from(_UPDATES), _value, depths()),
    st.tuples(st.just("ddl"), st.sampled_from(_DDL)),
)
_file = st.one_of(
    st.tuples(st.just("flip"), st.lists(st.floats(0, 1), min_size=1, max_size=3)),
    st.tuples(st.just("cut"), st.floats(0, 1)),
    st.tuples(st.sampled_from(["fifo", "devzero", "folder", "text", "dangling", "empty"])),
)
_example = st.fixed_dictionaries(
    {
        "ops": st.lists(_op, max_size=3),
        "file": st.none() | _file,
        "call": st.sampled_from(["info", "clear", "run", "api"]),
    }
)


@cache
def _base() -> tuple[Path, tuple[str, ...]]:
    """A cache written by a real run (made once per process) and its keys."""
    home = Path(os.environ.get("TMPDIR", "/tmp")) / f"fuzz-cache-base-{os.getpid()}"
    home.mkdir(parents=True, exist_ok=True)
    path = home / "base.sqlite"
    if not path.exists():
        here = Path.cwd()
        os.chdir(home)
        try:
            (home / "items.jsonl").write_text(_ITEMS, encoding="utf-8")
            assert check_cli([*_RUN, "--cache", str(path), "--out", "run"]) == 0
        finally:
            os.chdir(here)
    con = sqlite3.connect(path)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    keys = tuple(k for (k,) in con.execute("SELECT key FROM responses"))
    con.close()
    return path, keys


def _bindable(value: Any, depth: int) -> Any:
    """A hostile value as SQLite can hold it (objects as JSON text, huge integers as text)."""
    if isinstance(value, bytes | float | str) or value is None:
        return value
    if isinstance(value, bool | int):
        return value if -(2**63) <= value < 2**63 else str(value)
    return dump(value, depth=depth).decode("utf-8", "surrogatepass")


def _sql(path: Path, ops: list[Any]) -> None:
    con = sqlite3.connect(path)
    for op in ops:
        if op[0] == "ddl":
            sql, params = op[1], ()
        else:
            sql, value = op[1], _bindable(op[2], op[3])
            params = (value,) * sql.count("?")
            if isinstance(value, str):  # SQLite stores UTF-8: a lone surrogate as U+FFFD
                text = value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
                params = (text,) * len(params)
        with contextlib.suppress(sqlite3.Error):  # an edit the previous ones made impossible
            con.execute(sql, params)
    con.commit()
    con.close()


def _file_damage(path: Path, damage: tuple[Any, ...]) -> None:
    kind = damage[0]
    if kind in ("flip", "cut"):
        data = bytearray(path.read_bytes())
        if kind == "cut":
            data = data[: int(len(data) * damage[1])]
        for at in damage[1] if kind == "flip" else ():
            data[min(int(at * len(data)), len(data) - 1)] ^= 0x5A
        path.write_bytes(bytes(data))
        return
    path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "devzero":
        path.symlink_to("/dev/zero")
    elif kind == "folder":
        path.mkdir()
    elif kind == "text":
        path.write_text("SQLite format 3\x00 but not really", encoding="utf-8")
    elif kind == "dangling":
        path.symlink_to(path.parent / "nothing")
    else:
        path.write_bytes(b"")


@target("cache-file", "steadyeval cache info|clear, run --cache FILE, ResponseCache", _example)
def cache_file(example: dict[str, Any], folder: Path) -> None:
    base, keys = _base()
    path = folder / "c.sqlite"
    shutil.copy(base, path)
    _sql(path, example["ops"])
    if example["file"] is not None:
        _file_damage(path, example["file"])
    call = example["call"]
    if call == "run" and example["file"] == ("folder",):
        call = "info"  # run's --cache option refuses a folder itself (click's usage error)
    if call == "info":
        check_cli(["cache", "info", "--cache", str(path)])
    elif call == "clear":
        check_cli(["cache", "clear", "--yes", "--cache", str(path)])
    elif call == "run":
        (folder / "items.jsonl").write_text(_ITEMS, encoding="utf-8")
        check_cli([*_RUN, "--cache", str(path), "--out", "out"])
    else:

        def use() -> None:
            with ResponseCache(path) as store:
                store.get_many(list(keys))
                store.claim([*keys, "new-key"])

        expect_own_error(use)
