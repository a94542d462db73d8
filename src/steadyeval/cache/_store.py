"""A content-keyed SQLite store of model responses (WAL mode, crash-safe), shared safely by
processes that run at the same time (claims: no request is sent by two of them at once)."""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import socket
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, cast

from .._errors import ConfigError, SteadyevalError, StorageError
from ..requests import Request, Response, response_to_dict
from ._file import check_cache_path, check_schema, damaged, decode_response, harden, unknown_model

__all__ = [
    "DEFAULT_CLAIM_EXPIRY",
    "CacheInfo",
    "Claims",
    "PartialBatchError",
    "ResponseCache",
    "default_cache_path",
]

log = logging.getLogger(__name__)

#: Seconds after which a claim whose holder shows no progress is taken over.
DEFAULT_CLAIM_EXPIRY = 600.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    kind TEXT NOT NULL,
    response TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS claims (key TEXT PRIMARY KEY, owner TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS claim_holders (
    owner TEXT PRIMARY KEY,
    pid INTEGER NOT NULL,
    host TEXT NOT NULL,
    started TEXT,
    heartbeat REAL NOT NULL
);
"""
_SCHEMA_VERSION = "1"


_CLAIM_COLUMNS = {
    "claims": ["key", "owner"],
    "claim_holders": ["owner", "pid", "host", "started", "heartbeat"],
}


def _reset_stale_claim_tables(conn: sqlite3.Connection) -> None:
    """Recreate the claim tables when a cache holds them in another layout (a development
    build's): they hold only in-flight claims, never responses, so nothing is lost."""
    stale = [
        table
        for table, columns in _CLAIM_COLUMNS.items()
        if [row[1] for row in conn.execute(f"PRAGMA table_info({table})")] != columns
    ]
    if stale:
        with conn:
            for table in stale:
                conn.execute(f"DROP TABLE {table}")
        conn.executescript(_SCHEMA)


def default_cache_path() -> Path:
    """``$STEADYEVAL_CACHE`` if set, else ``$XDG_CACHE_HOME/steadyeval/responses.sqlite``."""
    env = os.environ.get("STEADYEVAL_CACHE")
    if env:
        return Path(env)
    base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return base / "steadyeval" / "responses.sqlite"


def _claim_expiry_from_env() -> float:
    text = os.environ.get("STEADYEVAL_CLAIM_EXPIRY")
    if not text:
        return DEFAULT_CLAIM_EXPIRY
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < 1e9:
        raise ConfigError(
            f"$STEADYEVAL_CLAIM_EXPIRY must be a positive number of seconds, got {text!r}"
        )
    return value


class PartialBatchError(SteadyevalError):
    """A batch failed for good after some of its requests were answered.

    A backend raises it (``from`` the error that ended the batch) so that the run caches the
    answered requests first (``answered``: ``(request, response)`` pairs; every one was paid
    for) and then stops with ``error``. Its message is ``error``'s.
    """

    def __init__(self, error: BaseException, answered: Sequence[tuple[Request, Response]]) -> None:
        super().__init__(str(error))
        self.error = error
        self.answered = tuple(answered)

    def __reduce__(self) -> Any:  # it may travel back from an executor's worker
        return (type(self), (self.error, self.answered))


@dataclass(frozen=True)
class Claims:
    """What :meth:`ResponseCache.claim` found for the keys it was given.

    Attributes
    ----------
    mine : tuple of str
        Claimed for this cache object now: send them.
    cached : dict
        Answered meanwhile (by another process): read, never sent.
    busy : tuple of str
        Claimed by another live process: wait for them (:meth:`ResponseCache.claim` again
        later).
    holders : tuple of str
        Who holds the busy ones (``pid 123 on host``), for a log line.
    """

    mine: tuple[str, ...]
    cached: dict[str, Response]
    busy: tuple[str, ...]
    holders: tuple[str, ...]


def _start_time(pid: int) -> str | None:
    """The start time of process ``pid`` from ``/proc`` (``None``: no such live process, or
    no ``/proc``). With the pid it names a process even after the pid is reused."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[-1].split()
    if len(fields) < 20 or fields[0] in ("Z", "X"):  # a zombie has exited
        return None
    return fields[19]


def _process_alive(pid: int, started: str | None) -> bool:
    """Whether the process that took a claim on this host is still running."""
    if pid == os.getpid():
        return True  # another cache object of this process
    now = _start_time(pid)
    if now is not None:
        return started is None or now == started
    if Path("/proc/self/stat").exists():
        return False  # /proc knows every process: this one is gone
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    except OSError:
        return False
    return True


def _connect(path: Path) -> sqlite3.Connection:
    """A connection to the cache file at ``path`` (its folder made); a path that cannot be
    a file (its folder is a file, or not writable) is a :class:`ConfigError`."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return sqlite3.connect(path, timeout=30.0, isolation_level=None)
    except (OSError, sqlite3.Error) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        above = next((p for p in path.parents if p.exists()), None)
        if above is not None and not above.is_dir():
            reason = f"{above} is a file, not a folder"
        raise ConfigError(
            f"--cache {path}: cannot open the response cache ({reason}); give --cache a "
            "file in a folder you can write"
        ) from None


#: SQLite's messages for a write the disk refused (full, read-only, failing).
_FULL = ("disk is full", "disk i/o error", "readonly database", "unable to open database")


def storage_failure(exc: sqlite3.Error, path: Path) -> StorageError | None:
    """``exc`` as a :class:`StorageError` naming the cache file when SQLite could not write
    it because of the disk (full, read-only, failing); ``None`` otherwise."""
    text = str(exc).lower()
    if not isinstance(exc, sqlite3.OperationalError) or not any(m in text for m in _FULL):
        return None
    return StorageError(
        f"--cache {path}: cannot write the response cache ({exc}); every response stored "
        "before this is kept: make room (or give --cache a file on another disk), then run "
        "the same command again"
    )


_F = TypeVar("_F", bound=Callable[..., Any])


def _guarded(method: _F) -> _F:
    """A :class:`ResponseCache` method that reads or writes the file: a write the disk
    refused is a :class:`StorageError` naming the cache, a damaged file a
    :class:`DataError` naming it (:func:`._file.damaged`), not an ``sqlite3`` traceback."""

    @functools.wraps(method)
    def wrapper(self: ResponseCache, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except sqlite3.Error as exc:
            known = storage_failure(exc, self.path) or damaged(exc, self.path)
            if known is None:
                raise
            raise known from None

    return cast(_F, wrapper)


def _check_existing(conn: sqlite3.Connection) -> None:
    """Raise :class:`sqlite3.DatabaseError` unless the database is new or a steadyeval
    cache this version reads (:func:`._file.check_schema`, then its schema version)."""
    check_schema(conn)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "meta" in tables:
        row = conn.execute("SELECT value FROM meta WHERE name = 'schema_version'").fetchone()
        if row is not None and str(row[0]) != _SCHEMA_VERSION:
            raise sqlite3.DatabaseError(
                f"cache schema_version {str(row[0])[:20]!r}; this steadyeval reads {_SCHEMA_VERSION}"
            )


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

    Processes that share one cache file at the same time send no request twice: a run
    claims the keys it is about to send (:meth:`claim`, one transaction), skips the keys
    another live process has claimed and reads their responses once they are stored (a
    stored key is never sent again, claimed or not). A run's claims end when it releases
    them (:meth:`release`: its batch failed, or it ended, or :meth:`close`). A claim is
    taken over when the process that holds it is gone (same host: its pid and start time) or
    has stored nothing for ``claim_expiry`` seconds (default :data:`DEFAULT_CLAIM_EXPIRY`, or
    ``$STEADYEVAL_CLAIM_EXPIRY``). Each :meth:`put_many` renews its holder's heartbeat (one
    row), so claims cost a run one transaction per model and kind and nothing per key.
    """

    def __init__(
        self, path: str | Path | None = None, *, claim_expiry: float | None = None
    ) -> None:
        self.path = Path(path) if path is not None else default_cache_path()
        self.claim_expiry = _claim_expiry_from_env() if claim_expiry is None else claim_expiry
        self._owner = uuid.uuid4().hex
        self._pid = os.getpid()
        self._host = socket.gethostname()
        self._started = _start_time(self._pid)
        self._claiming = False
        check_cache_path(self.path)
        self._conn = _connect(self.path)
        try:
            harden(self._conn)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            _check_existing(self._conn)
            self._conn.executescript(_SCHEMA)
            _reset_stale_claim_tables(self._conn)
            self._conn.execute(
                "INSERT OR IGNORE INTO meta(name, value) VALUES ('schema_version', ?)",
                (_SCHEMA_VERSION,),
            )
        except sqlite3.DatabaseError as exc:
            self._conn.close()
            full = storage_failure(exc, self.path)
            if full is not None:
                raise full from None
            raise ConfigError(
                f"{self.path}: not a response cache ({str(exc)[:200]}); give --cache a new file name "
                "or an existing steadyeval cache"
            ) from None

    def close(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self.release()
        self._conn.close()

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @_guarded
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
                out[key] = decode_response(self.path, key, kind, text)
        return out

    @_guarded
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
            if self._claiming:  # the holder shows progress (a stored key needs no claim)
                self._conn.execute(
                    "UPDATE claim_holders SET heartbeat = ? WHERE owner = ?", (now, self._owner)
                )
            self._conn.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                self._conn.execute("ROLLBACK")
            raise
        return len(data)

    # -- claims ---------------------------------------------------------------------------
    @_guarded
    def claim(self, keys: Sequence[str]) -> Claims:
        """Claim ``keys`` before sending them, in one transaction: see :class:`Claims`."""
        keys = list(dict.fromkeys(keys))
        now = time.time()
        cached: dict[str, Response] = {}
        held: dict[str, tuple[str, int, str, str | None, float]] = {}
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            for start in range(0, len(keys), 500):
                chunk = keys[start : start + 500]
                marks = ",".join("?" * len(chunk))
                for key, kind, text in self._conn.execute(
                    f"SELECT key, kind, response FROM responses WHERE key IN ({marks})", chunk
                ):
                    cached[key] = decode_response(self.path, key, kind, text)
                for key, owner, pid, host, started, beat in self._conn.execute(
                    # as the types claim() wrote them, whatever a damaged file holds
                    "SELECT c.key, CAST(c.owner AS TEXT), CAST(h.pid AS INTEGER), "
                    "CAST(h.host AS TEXT), CAST(h.started AS TEXT), CAST(h.heartbeat AS REAL) "
                    "FROM claims AS c LEFT JOIN claim_holders AS h ON h.owner = c.owner "
                    f"WHERE c.key IN ({marks})",
                    chunk,
                ):
                    held[key] = (owner, pid or 0, host or "?", started, beat or 0.0)
            mine, busy, holders, took = self._sort_claims(keys, cached, held, now)
            if mine:
                self._conn.executemany(
                    "INSERT OR REPLACE INTO claims(key, owner) VALUES (?, ?)",
                    [(k, self._owner) for k in mine],
                )
                self._conn.execute(
                    "INSERT OR REPLACE INTO claim_holders(owner, pid, host, started, heartbeat) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (self._owner, self._pid, self._host, self._started, now),
                )
            if took:  # holders whose every claim was taken over
                self._conn.execute(
                    "DELETE FROM claim_holders WHERE owner NOT IN (SELECT owner FROM claims)"
                )
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")
        self._claiming = self._claiming or bool(mine)
        return Claims(tuple(mine), cached, tuple(busy), tuple(sorted(holders)))

    def _sort_claims(
        self,
        keys: Sequence[str],
        cached: dict[str, Response],
        held: dict[str, tuple[str, int, str, str | None, float]],
        now: float,
    ) -> tuple[list[str], list[str], set[str], bool]:
        """(keys to claim, keys another live process holds, who holds them, whether any
        claim was taken over)."""
        mine: list[str] = []
        busy: list[str] = []
        holders: set[str] = set()
        taken: dict[str, int] = {}
        alive: dict[tuple[int, str | None], bool] = {}  # one look per process, not per key
        for key in keys:
            if key in cached:
                continue
            row = held.get(key)
            if row is None or row[0] == self._owner:
                mine.append(key)
                continue
            _, pid, host, started, at = row
            who = f"pid {pid} on {host}"
            why = ""
            if now - at > self.claim_expiry:
                why = f"{who} (it stored nothing for {self.claim_expiry:g} s)"
            elif host == self._host and not self._alive(alive, pid, started):
                why = f"{who} (it is no longer running)"
            if why:
                taken[why] = taken.get(why, 0) + 1
                mine.append(key)
            else:
                busy.append(key)
                holders.add(who)
        for who, n in taken.items():
            log.warning("%s: taking over %d request(s) claimed by %s", self.path, n, who)
        return mine, busy, holders, bool(taken)

    @staticmethod
    def _alive(seen: dict[tuple[int, str | None], bool], pid: int, started: str | None) -> bool:
        if (pid, started) not in seen:
            seen[pid, started] = _process_alive(pid, started)
        return seen[pid, started]

    @_guarded
    def release(self) -> None:
        """End every claim this cache object holds (its responses will not come)."""
        if self._claiming:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.execute("DELETE FROM claims WHERE owner = ?", (self._owner,))
                self._conn.execute("DELETE FROM claim_holders WHERE owner = ?", (self._owner,))
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")
            self._claiming = False

    @_guarded
    def __len__(self) -> int:
        (n,) = self._conn.execute("SELECT COUNT(*) FROM responses").fetchone()
        return int(n)

    @_guarded
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

    @_guarded
    def clear(self, model: str | None = None) -> int:
        """Delete every entry (or those of one model); return how many were deleted. A
        ``model`` with no response here is a ConfigError naming (some of) the models held."""
        if model is None:
            cur = self._conn.execute("DELETE FROM responses")
        else:
            cur = self._conn.execute("DELETE FROM responses WHERE model = ?", (model,))
            if cur.rowcount == 0:
                raise unknown_model(self._conn, self.path, model)
        self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return int(cur.rowcount)
