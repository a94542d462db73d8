"""What the response cache trusts of the file it is given: nothing it has not checked.

A cache file may be damaged (a crash of the disk, a file cut short), another program's
database, or built to do harm: a FIFO that blocks the first read, a link to ``/dev/zero``, a
database whose triggers, views or index expressions run on every insert (a recursive
trigger hangs, ``zeroblob(2e9)`` allocates gigabytes), a row holding a gigabyte, JSON
nested 100,000 deep or fields of the wrong type. So:

* the path must be a regular file (or not exist yet), checked before SQLite opens it;
* the schema must be steadyeval's own: its four tables and nothing else that runs code
  (no trigger, view or explicit index), and ``responses`` with exactly its columns;
* SQLite runs with ``trusted_schema=OFF`` and a length limit on every value
  (:data:`MAX_VALUE_BYTES`), so no single value read or made is larger;
* each response read is JSON of bounded depth whose fields have the types of its
  :mod:`steadyeval.requests` dataclass;
* an SQLite error that means the file is damaged becomes a :class:`DataError` naming the
  file and what to do, never a traceback.
"""

from __future__ import annotations

import dataclasses
import os
import sqlite3
from pathlib import Path
from typing import Any

from .._errors import ConfigError, DataError, show_path
from .._files import input_file, loads_json
from ..items import shorten
from ..requests import Response, response_from_dict

__all__ = [
    "MAX_VALUE_BYTES",
    "check_cache_path",
    "check_schema",
    "damaged",
    "decode_response",
    "harden",
    "unknown_model",
]

#: The largest value (a response's JSON, a key, a model name) SQLite reads or makes for the
#: cache: far above any response, far below what would strain memory.
MAX_VALUE_BYTES = 64 * 1024 * 1024
_COLUMNS = {
    "responses": ["key", "model", "kind", "response", "created"],
    "meta": ["name", "value"],
}
_CLAIM_TABLES = ("claims", "claim_holders")
_INT32 = 2**31 - 1


def check_cache_path(path: Path) -> None:
    """Refuse a cache path that exists and is not a regular file (a folder, a FIFO, a
    device, a socket, a link to one or to nothing), before SQLite opens it."""
    if os.path.lexists(path):
        input_file(path, "a response cache file (SQLite)", error=ConfigError)


def harden(conn: sqlite3.Connection) -> None:
    """Settings that keep a hostile database from running code or making huge values."""
    conn.execute("PRAGMA trusted_schema=OFF")
    conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)


def check_schema(conn: sqlite3.Connection) -> None:
    """Raise :class:`sqlite3.DatabaseError` unless the database is new or a steadyeval
    cache this version reads: another program's database is never written into, and no
    trigger, view or index expression of a foreign schema ever runs."""
    objects = list(conn.execute("SELECT type, name, sql FROM sqlite_master"))
    tables = {name for kind, name, _ in objects if kind == "table"}
    if not tables:
        return
    if "responses" not in tables:
        names = ", ".join(sorted(map(str, tables))[:5])
        raise sqlite3.DatabaseError(f"an SQLite database of something else; its tables: {names}")
    for kind, name, sql in objects:
        ours = kind == "table" and name in (*_COLUMNS, *_CLAIM_TABLES)
        if not ours and not (kind == "index" and sql is None):  # SQLite's own key indexes
            raise sqlite3.DatabaseError(
                f"it holds {kind} {str(name)[:40]!r}, which a steadyeval cache never has"
            )
    for table, columns in _COLUMNS.items():
        if table in tables:
            have = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
            if have != columns:
                raise sqlite3.DatabaseError(
                    f"its {table} table has the columns {', '.join(map(str, have))[:120]}; "
                    f"a steadyeval cache's has {', '.join(columns)}"
                )


def damaged(exc: sqlite3.Error, path: Path) -> DataError | None:
    """``exc`` as a :class:`DataError` naming the cache file when it says the file is
    damaged or holds what SQLite refuses (a value over the length limit); ``None`` for
    other errors (a busy or full disk: see the store's own handling)."""
    if not isinstance(exc, sqlite3.DatabaseError) or isinstance(exc, sqlite3.OperationalError):
        return None
    return DataError(
        f"--cache {path}: the response cache is damaged or not steadyeval's ({exc}); "
        "delete it (or give --cache a new file) and run again; responses are fetched anew"
    )


def _type_ok(annotation: str, value: Any) -> bool:
    """Whether ``value`` fits a response field's annotation (unknown ones are not checked)."""
    if annotation == "str":
        return isinstance(value, str)
    if annotation == "str | None":
        return value is None or isinstance(value, str)
    if annotation == "bool":
        return isinstance(value, bool)
    if annotation == "int":
        return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= _INT32
    if annotation == "float":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if annotation == "tuple[str, ...]":
        return all(isinstance(v, str) for v in value)
    if annotation == "tuple[float, ...]":
        return all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
    return True


def decode_response(path: Path, key: Any, kind: Any, text: Any) -> Response:
    """The response stored under ``key``, checked; a :class:`DataError` naming the file
    and key when it is not what steadyeval wrote."""
    where = f"--cache {path}: the cached response for key {str(key)[:20]!r}"
    if not isinstance(text, str) or not isinstance(kind, str):
        raise DataError(f"{where} is not text; the cache is damaged: delete it and run again")
    data = loads_json(text, where, allow_nan=True)  # a model may answer NaN; scoring marks it
    if not isinstance(data, dict):
        raise DataError(
            f"{where} is not a JSON object; the cache is damaged: delete it and run again"
        )
    try:
        resp = response_from_dict(kind, data)
    except (KeyError, TypeError, ValueError) as exc:
        raise DataError(
            f"{where} (kind {kind[:20]!r}) is not a response this steadyeval reads "
            f"({type(exc).__name__}: {str(exc)[:80]}); delete the cache and run again"
        ) from None
    for f in dataclasses.fields(resp):  # type: ignore[arg-type]
        value = getattr(resp, f.name)
        if not _type_ok(str(f.type), value):
            raise DataError(
                f"{where}: field {f.name!r} is {shorten(repr(value))}, not a valid {f.type}; "
                "the cache is damaged: delete it and run again"
            )
    return resp


def unknown_model(conn: sqlite3.Connection, path: Path, model: str) -> ConfigError:
    """The error for a ``model`` the cache holds no response of: the models it holds, the
    first 8 by name (each cut) and how many more."""
    held = [
        str(m)
        for (m,) in conn.execute("SELECT DISTINCT model FROM responses ORDER BY model LIMIT 9")
    ]
    shown = f"no responses of model {shorten(repr(model), 80)}"
    if not held:
        return ConfigError(f"{show_path(path)} holds {shown}: it holds no responses at all")
    (total,) = conn.execute("SELECT COUNT(DISTINCT model) FROM responses").fetchone()
    names = ", ".join(shorten(m, 80) for m in held[:8])
    more = f" and {int(total) - 8:,} more" if int(total) > 8 else ""
    return ConfigError(
        f"{show_path(path)} holds {shown}; the models it holds: {names}{more} "
        "(`steadyeval cache info` lists them)"
    )
