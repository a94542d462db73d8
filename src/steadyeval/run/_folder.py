"""A run folder belongs to one run: the same config resumes into it, a different one is
refused unless the caller asks to overwrite it (which clears the folder first)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import time
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .._errors import ConfigError
from .._json import write_json
from ..items import canonical_json

__all__ = [
    "LOCK",
    "MARKER",
    "claim_run_dir",
    "config_key",
    "default_out",
    "drop_stale_reports",
    "locked_run_dir",
]

#: Written into a run folder before any model is called: which config the folder holds.
MARKER = ".steadyeval-run"
#: Held (``flock``) by the process writing a run folder; the file stays, the lock goes with
#: the process, so a lock left by a dead process is never in the way.
LOCK = ".steadyeval-lock"
#: What ``steadyeval report`` writes into a run folder by default.
REPORT_FILES = ("report.html", "report.md", "report.json")


def config_key(config: Mapping[str, Any] | None, run_id: str) -> str:
    """What identifies a run for its folder: a hash of its resolved config, else (a run given
    no config, e.g. from Python) its run id."""
    if config is None:
        return run_id
    return hashlib.sha256(canonical_json(config).encode()).hexdigest()[:16]


def _held_key(run_dir: Path) -> str | None:
    """The config key a folder was claimed for (``None``: the folder holds no run)."""
    for name, field in ((MARKER, "config_key"), ("config.json", "run_id")):
        path = run_dir / name
        if path.is_file():
            try:
                value = json.loads(path.read_text(encoding="utf-8")).get(field)
            except (OSError, ValueError, AttributeError):
                value = None
            return str(value) if value else "?"
    return None


def _entries(run_dir: Path, kept: Collection[str] = ()) -> list[Path]:
    """The folder's entries but its lock file and ``kept`` paths."""
    if not run_dir.is_dir():
        return []
    return [p for p in run_dir.iterdir() if p.name != LOCK and str(p.resolve()) not in kept]


_HELD: dict[str, tuple[int, int]] = {}  # folder -> (file descriptor, depth), this process


@contextmanager
def locked_run_dir(run_dir: Path) -> Iterator[None]:
    """Hold ``run_dir``'s lock while a run writes into it (re-entrant in one process). A
    second process is refused with the holder's pid; a folder that is not empty and holds
    no steadyeval run is refused before anything is written into it."""
    key = str(run_dir.resolve())
    if key in _HELD:
        fd, depth = _HELD[key]
        _HELD[key] = (fd, depth + 1)
        try:
            yield
        finally:
            _HELD[key] = (fd, _HELD[key][1] - 1)
        return
    if _entries(run_dir) and _held_key(run_dir) is None:
        raise ConfigError(
            f"--out {run_dir}: the folder is not empty and holds no steadyeval run; "
            "choose a new or empty folder"
        )
    created = not run_dir.exists()
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"--out {run_dir}: cannot create the folder ({exc.strerror})") from None
    fd = _lock(run_dir)
    _HELD[key] = (fd, 1)
    try:
        yield
    finally:
        del _HELD[key]
        if created and not _entries(run_dir):  # a run that failed before writing anything
            (run_dir / LOCK).unlink(missing_ok=True)
            run_dir.rmdir()
        os.close(fd)  # releases the lock


def _lock(run_dir: Path) -> int:
    import fcntl

    path = run_dir / LOCK
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        try:
            holder = json.loads(os.read(fd, 4096).decode() or "{}")
        except ValueError:
            holder = {}
        os.close(fd)
        pid, host = holder.get("pid", "?"), holder.get("host", "?")
        raise ConfigError(
            f"--out {run_dir}: another steadyeval process (pid {pid} on {host}) is writing "
            "this run folder; wait for it to finish or choose another --out"
        ) from None
    os.ftruncate(fd, 0)
    os.write(fd, json.dumps({"pid": os.getpid(), "host": socket.gethostname()}).encode())
    return fd


def claim_run_dir(
    run_dir: Path, key: str, *, overwrite: bool = False, keep: Sequence[Path] = ()
) -> None:
    """Make ``run_dir`` this run's folder, or refuse.

    A new or empty folder is claimed. A folder holding the same config is kept (the run
    resumes: cached responses are not sent again). A folder holding another run is refused
    unless ``overwrite``, which deletes its contents first. A non-empty folder that holds no
    run (no marker, no ``config.json``) is always refused: it is not ours to clear. Files in
    ``keep`` (the response cache, when it lives in the folder; with its SQLite side files)
    neither make a folder non-empty nor are deleted.
    """
    if run_dir.exists() and not run_dir.is_dir():
        raise ConfigError(f"--out {run_dir}: exists and is not a folder")
    kept = {str(k.resolve()) + tail for k in keep for tail in ("", "-wal", "-shm", "-journal")}
    entries = _entries(run_dir, kept)
    if entries:
        held = _held_key(run_dir)
        if held is None:
            raise ConfigError(
                f"--out {run_dir}: the folder is not empty and holds no steadyeval run; "
                "choose a new or empty folder"
            )
        if held != key:
            if not overwrite:
                raise ConfigError(
                    f"--out {run_dir}: the folder holds a run of a different config; pass "
                    "--overwrite to replace it (its files are deleted) or choose another --out"
                )
            for entry in entries:
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry)
                else:
                    entry.unlink()
    run_dir.mkdir(parents=True, exist_ok=True)
    write_json(run_dir / MARKER, {"config_key": key, "claimed": time.time()})


def drop_stale_reports(run_dir: Path, old_run_id: str | None, new_run_id: str) -> list[str]:
    """Delete report files rendered from a previous run's results (their run id differs);
    returns the names deleted."""
    if old_run_id is None or old_run_id == new_run_id:
        return []
    gone = []
    for name in REPORT_FILES:
        path = run_dir / name
        if path.is_file():
            path.unlink()
            gone.append(name)
    return gone


def default_out(name: str, *, root: Path = Path("runs")) -> Path:
    """``runs/<YYYYmmdd-HHMMSS>-<name>``: where a run goes when no ``--out`` is given."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in name).strip("-.")
    return root / f"{stamp}-{safe or 'run'}"
