"""A content-keyed SQLite store of model responses (WAL mode, crash-safe)."""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .._errors import ConfigError
from ..requests import Response, response_from_dict, response_to_dict

__all__ = ["CacheInfo", "ResponseCache", "default_cache_path"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    kind TEXT NOT NULL,
    response TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
_SCHEMA_VERSION = "1"


def default_cache_path() -> Path:
    """``$STEADYEVAL_CACHE`` if set, else ``$XDG_CACHE_HOME/steadyeval/responses.sqlite``."""
    env = os.environ.get("STEADYEVAL_CACHE")
    if env:
        return Path(env)
    base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return base / "steadyeval" / "responses.sqlite"


@dataclass(frozen=True)
class CacheInfo:
    path: str
    size_bytes: int
    entries: int
    per_model: dict[str, int]


class ResponseCache:
    """Responses keyed by request key.

    Each :meth:`put_many` is one committed transaction, so everything written before a
    crash, ``kill -9`` or Ctrl-C is on disk (SQLite WAL with ``synchronous=NORMAL`` keeps
    committed transactions across process crashes). Only the driving process writes;
    workers hand their responses back to it. Responses are stored as JSON, never pickled.
    """

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_cache_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
        try:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.executescript(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            self._conn.close()
            raise ConfigError(
                f"{self.path}: not a response cache ({exc}); give --cache a new file name "
                "or an existing steadyeval cache"
            ) from None
        self._conn.execute(
            "INSERT OR IGNORE INTO meta(name, value) VALUES ('schema_version', ?)",
            (_SCHEMA_VERSION,),
        )

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def get_many(self, keys: Sequence[str]) -> dict[str, Response]:
        """The cached responses among ``keys``."""
        out: dict[str, Response] = {}
        keys = list(keys)
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows = self._conn.execute(
                f"SELECT key, kind, response FROM responses WHERE key IN ({marks})", chunk
            )
            for key, kind, text in rows:
                out[key] = response_from_dict(kind, json.loads(text))
        return out

    def put_many(self, rows: Iterable[tuple[str, str, str, Response]]) -> int:
        """Store ``(key, model, kind, response)`` rows in one transaction; return the count."""
        now = time.time()
        data = [
            (key, model, kind, json.dumps(response_to_dict(resp), sort_keys=True), now)
            for key, model, kind, resp in rows
        ]
        if not data:
            return 0
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            self._conn.executemany(
                "INSERT OR IGNORE INTO responses(key, model, kind, response, created) "
                "VALUES (?, ?, ?, ?, ?)",
                data,
            )
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")
        return len(data)

    def __len__(self) -> int:
        (n,) = self._conn.execute("SELECT COUNT(*) FROM responses").fetchone()
        return int(n)

    def info(self) -> CacheInfo:
        per_model = {
            str(m): int(n)
            for m, n in self._conn.execute(
                "SELECT model, COUNT(*) FROM responses GROUP BY model ORDER BY model"
            )
        }
        size = sum(
            p.stat().st_size
            for p in (self.path, Path(f"{self.path}-wal"), Path(f"{self.path}-shm"))
            if p.exists()
        )
        return CacheInfo(str(self.path), size, sum(per_model.values()), per_model)

    def clear(self, model: str | None = None) -> int:
        """Delete every entry (or those of one model); return how many were deleted."""
        if model is None:
            cur = self._conn.execute("DELETE FROM responses")
        else:
            cur = self._conn.execute("DELETE FROM responses WHERE model = ?", (model,))
        self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return int(cur.rowcount)
