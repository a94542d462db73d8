"""A run folder belongs to one run: the same config resumes into it, a different one is
refused unless the caller asks to overwrite it.

What makes a folder a run folder is steadyeval's own marker, ``.steadyeval-run``, written
before anything else of the run (a regular file holding ``{"format": 1, "config_key": ...,
"owns": [...]}``); nothing else counts (a ``config.json`` is in every Hugging Face model
folder). ``--overwrite`` deletes only the entries the marker records as steadyeval's own (the
run's files, reports, checkpoints, and temporary files of those names); any other file stays.
The lock file is opened without following links and must be a regular file with one link,
so a lock path that is a link, a folder or a FIFO is an error, never written through.

A report rendered into the folder is recorded in the marker with the run id it shows. When
the last writer of the folder lets go of its lock, a report of another run id than the
folder's results is deleted: a study written in several parts (a first pass, then its
follow-up) is judged once, by what it left, so a rerun that resumes to the same results
keeps its report. A file at a report's name that is not a report steadyeval rendered (see
:func:`is_report`) is the user's: never deleted, whatever the marker records."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import logging
import os
import re
import shutil
import socket
import stat
import threading
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .._errors import ConfigError, DataError, SteadyevalError
from .._files import file_sha256, load_json_file
from .._json import write_json
from .._process import alive
from ..items import canonical_json

log = logging.getLogger(__name__)

__all__ = [
    "LOCK",
    "MARKER",
    "MARKER_FORMAT",
    "OWNED",
    "REPORT_FILES",
    "RUN_FILES",
    "RunFolderBusy",
    "claim_run_dir",
    "config_key",
    "default_out",
    "in_a_run_folder",
    "is_report",
    "is_run_file",
    "locked_run_dir",
    "own",
    "results_token",
    "rewriting_run",
    "writing_report",
]

#: Written into a run folder before any model is called: which config the folder holds.
MARKER = ".steadyeval-run"
#: The marker's format: 1 records ``owns``; markers without ``format`` (format 0, before
#: this rule) are read as owning :data:`OWNED`.
MARKER_FORMAT = 1
#: Held (``flock``) by the process writing a run folder; the file stays, the lock goes with
#: the process, so a lock left by a dead process is never in the way.
LOCK = ".steadyeval-lock"
#: How long a writer waits for a run folder's lock held by a report (its write is short).
_REPORT_WAIT = 10.0
#: What ``steadyeval report`` writes into a run folder by default.
REPORT_FILES = ("report.html", "report.md", "report.json")
#: What every report steadyeval renders holds near its top, by name: the HTML's generator
#: tag, the JSON's schema, the Markdown's facts list (its title may be the user's).
_REPORT_SIGNS: dict[str, tuple[bytes, ...]] = {
    "report.html": (b'<meta name="generator" content="steadyeval ',),
    "report.json": (b'"schema": "steadyeval.report/', b'"facts": [', b'"sections": ['),
    "report.md": (b"\n- rows: ", b"\n- items: ", b"\n- models: ", b"\n- conditions: "),
}
#: How much of a report without a recorded hash is searched for those (an import's notes
#: come before the Markdown's row count: 282 logs took 79 KiB).
_SIGN_BYTES = 4 * 2**20
#: The files every run writes into its folder: the marker records them as its own when the
#: folder is claimed; other writers add what they write (:func:`own`: a report, checkpoints).
RUN_FILES = (
    "results.parquet",
    "summary.json",
    "summary.md",
    "config.json",
    "provenance.json",
    "manifest.json",
)
#: What a marker without a list (format 0, before the list was kept) is taken to own.
OWNED = (*RUN_FILES, *REPORT_FILES, "checkpoints")
#: A temporary file of ``replace_atomically`` left by a killed writer: ``NAME.PID-HEX.tmp``.
_TMP = re.compile(r"^(?P<name>.+)\.(?P<pid>\d+)-[0-9a-f]{8}\.tmp$")


def config_key(config: Mapping[str, Any] | None, run_id: str) -> str:
    """What identifies a run for its folder: a hash of its resolved config, else (a run given
    no config, e.g. from Python) its run id."""
    if config is None:
        return run_id
    return hashlib.sha256(canonical_json(config).encode()).hexdigest()[:16]


def _marker(run_dir: Path) -> dict[str, Any] | None:
    """The folder's marker (``None``: the folder holds no steadyeval run). A marker path that
    is not a regular file, or that does not hold steadyeval's marker, is an error."""
    path = run_dir / MARKER
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(f"--out {run_dir}: cannot read {MARKER} ({exc.strerror})") from None
    if not stat.S_ISREG(mode):
        raise ConfigError(
            f"--out {run_dir}: {MARKER} is not a regular file (a link, folder or special "
            "file); it is not steadyeval's marker: choose another --out"
        )
    try:
        with path.open("rb") as fh:
            data = json.loads(fh.read(64 * 1024).decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        data = None
    if not isinstance(data, dict) or not isinstance(data.get("config_key"), str):
        raise ConfigError(
            f"--out {run_dir}: {MARKER} is not a steadyeval run marker (unreadable or "
            "foreign); choose another --out"
        )
    return data


def _owned(marker: Mapping[str, Any]) -> set[str]:
    owns = marker.get("owns") if marker.get("format") else None
    if not isinstance(owns, list):
        return set(OWNED)
    return {name for name in owns if isinstance(name, str) and "/" not in name and name}


def _is_owned(name: str, owned: Collection[str]) -> bool:
    if name in owned or name in (MARKER, LOCK):
        return True
    m = _TMP.match(name)
    return m is not None and (m["name"] in owned or m["name"] == MARKER)


def _entries(run_dir: Path, kept: Collection[str] = ()) -> list[Path]:
    """The folder's entries but its lock file and ``kept`` paths."""
    if not run_dir.is_dir():
        return []
    return [p for p in run_dir.iterdir() if p.name != LOCK and str(p.resolve()) not in kept]


def _not_a_run(run_dir: Path) -> ConfigError:
    hint = ""
    if (run_dir / "config.json").is_file():
        hint = (
            " (it holds a config.json but no steadyeval marker: a model folder, or a run "
            "folder of a steadyeval too old to mark its folders: delete it yourself if so)"
        )
    return ConfigError(
        f"--out {run_dir}: the folder is not empty and holds no steadyeval run{hint}; "
        "choose a new or empty folder"
    )


#: (folder, thread) -> (file descriptor, depth): re-entrant in one thread; another thread of
#: the same process is refused as another process is (its flock conflicts)
_HELD: dict[tuple[str, int], tuple[int, int]] = {}


def written_run_id(run_dir: Path) -> str | None:
    """The run id in a folder's ``config.json`` (``None``: none readable; a special file or
    a damaged config is not read, so a FIFO there cannot block a run)."""
    path = run_dir / "config.json"
    if not path.is_file():
        return None
    try:
        data = load_json_file(path, "a run's config.json", max_bytes=16 * 2**20)
    except SteadyevalError:
        return None
    value = data.get("run_id") if isinstance(data, dict) else None
    return str(value) if isinstance(value, str) and value else None


def is_report(path: Path | str) -> bool:
    """Whether ``path`` (a file at one of :data:`REPORT_FILES`' names) is a report steadyeval
    rendered and nobody changed since: where the run folder's marker records the report's
    hash (every report ``steadyeval report`` writes into its run's folder), the file must
    still have it; else (an older release's report, a copy) it must hold what every report
    holds near its top. A file of the user's at that name (their notes, or a report they
    added to) is not, and no steadyeval command deletes or replaces it unasked."""
    path = Path(path)
    try:
        marker = _marker(path.parent) if path.name in _REPORT_SIGNS else None
    except ConfigError:
        marker = None
    return _is_report(path, marker)


def _is_report(path: Path, marker: Mapping[str, Any] | None) -> bool:
    """:func:`is_report` with the folder's marker already read."""
    signs = _REPORT_SIGNS.get(path.name)
    if signs is None or not path.is_file():
        return False
    recorded = _report_hashes(marker).get(path.name)
    try:
        if recorded:
            return file_sha256(path) in recorded
        with path.open("rb") as fh:
            head = fh.read(_SIGN_BYTES)
    except OSError:
        return False
    return all(sign in head for sign in signs)


def _report_hashes(marker: Mapping[str, Any] | None) -> dict[str, list[str]]:
    """The marker's record of its reports' content: report name -> the sha256 of the file
    as written (two while a report is being written: the old one's and the new one's)."""
    made = (marker or {}).get("report_hashes")
    if not isinstance(made, dict):
        return {}
    out = {}
    for name, value in made.items():
        values = value if isinstance(value, list) else [value]
        kept = [v for v in values if isinstance(v, str) and v]
        if name in REPORT_FILES and kept:
            out[name] = kept
    return out


def _reports(marker: Mapping[str, Any] | None) -> dict[str, str]:
    """The marker's record of its reports: report name -> the run id it shows (entries of
    another shape are no record)."""
    made = (marker or {}).get("reports")
    if not isinstance(made, dict):
        return {}
    return {k: v for k, v in made.items() if k in REPORT_FILES and isinstance(v, str) and v}


def _rewrite_marker(run_dir: Path, marker: Mapping[str, Any], **changes: Any) -> None:
    """Write the marker again with ``changes``, keeping only the keys steadyeval writes
    (whatever else a hand-edited marker holds is not copied on)."""
    keep = ("format", "config_key", "claimed", "owns", "reports", "report_hashes")
    write_json(run_dir / MARKER, {k: v for k, v in {**marker, **changes}.items() if k in keep})


def _current_marker(run_dir: Path) -> dict[str, Any] | None:
    """The folder's marker when it is one this release writes to (of its format)."""
    try:
        marker = _marker(run_dir)
    except ConfigError:
        return None
    if marker is None or marker.get("format") != MARKER_FORMAT:
        return None  # a marker of an older release, or a newer one: left as it is
    return marker if isinstance(marker.get("owns"), list) else None


def _stamp_reports(run_dir: Path, run_id: str | None) -> None:
    """Record the reports the marker has no record of (written by an older release, or by
    hand) as showing ``run_id``, the run the folder holds as a writer takes it: an
    interrupted run that rewrites ``config.json`` must not make them look current."""
    marker = _current_marker(run_dir)
    if marker is None or run_id is None:
        return
    made = _reports(marker)
    new = {n: run_id for n in REPORT_FILES if n not in made and _is_report(run_dir / n, marker)}
    if new:
        _rewrite_marker(run_dir, marker, reports={**made, **new})


def _drop_stale_reports(run_dir: Path, before: str | None) -> list[str]:
    """Delete the reports in ``run_dir`` rendered from another run than the one its results
    now hold (``before``: the run id the folder held when its writer took the lock, taken
    as the run of a report the marker has no record of); returns the names deleted."""
    now = written_run_id(run_dir)
    if now is None:
        return []
    try:
        marker = _marker(run_dir)
    except ConfigError:
        marker = None
    made = _reports(marker)
    gone = []
    for name in REPORT_FILES:
        of = made.get(name, before)
        path = run_dir / name
        if of is not None and of != now and _is_report(path, marker):
            path.unlink()
            gone.append(name)
    # a recorded report the user has since changed keeps its record: its hash, no longer the
    # file's, keeps it theirs (without it, the report's signs would make it steadyeval's)
    if marker is not None and gone:
        _rewrite_marker(run_dir, marker, **_report_record(marker, lambda n: n not in gone))
    return gone


def _report_record(marker: Mapping[str, Any], keep: Callable[[str], bool]) -> dict[str, Any]:
    """The marker's record of the reports ``keep`` keeps (both keys, empty or not)."""
    return {
        "reports": {n: v for n, v in _reports(marker).items() if keep(n)},
        "report_hashes": {n: v for n, v in _report_hashes(marker).items() if keep(n)},
    }


@contextmanager
def locked_run_dir(run_dir: Path, *, what: str = "run") -> Iterator[None]:
    """Hold ``run_dir``'s lock while a run writes into it (re-entrant in one process). A
    second process is refused with the holder's pid; a folder that is not empty and holds
    no steadyeval run is refused before anything is written into it. When the outermost
    holder lets go (the run done, failed or interrupted), reports of another run than the
    folder's results are deleted (a run's hold only). ``what`` holds it: ``run``,
    ``reanalyze``, or ``report`` (a short write, which another writer waits for)."""
    key = (str(run_dir.resolve()), threading.get_ident())
    if key in _HELD:
        fd, depth = _HELD[key]
        _HELD[key] = (fd, depth + 1)
        try:
            yield
        finally:
            _HELD[key] = (fd, _HELD[key][1] - 1)
        return
    if run_dir.exists() and not run_dir.is_dir():
        raise ConfigError(f"--out {run_dir}: exists and is not a folder")
    if _entries(run_dir) and _marker(run_dir) is None:
        raise _not_a_run(run_dir)
    created = not run_dir.exists()
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"--out {run_dir}: cannot create the folder ({exc.strerror})") from None
    fd = _lock(run_dir, what)
    with contextlib.suppress(OSError):
        _drop_leftovers(run_dir)
    before = written_run_id(run_dir)
    runs = what == "run"  # a report or reanalyze never changes which run the folder holds
    if runs:
        with contextlib.suppress(OSError):
            _stamp_reports(run_dir, before)
    _HELD[key] = (fd, 1)
    try:
        yield
    finally:
        del _HELD[key]
        if runs:
            with contextlib.suppress(OSError):  # best effort: a full disk, a folder gone
                _drop_stale_reports(run_dir, before)
        if created and not _entries(run_dir):  # a run that failed before writing anything
            (run_dir / LOCK).unlink(missing_ok=True)
            run_dir.rmdir()
        os.close(fd)  # releases the lock


def _drop_leftovers(run_dir: Path) -> None:
    """Delete the temporary files a killed writer left beside steadyeval's own files
    (``summary.json.PID-HEX.tmp``): every writer of those names holds the folder's lock,
    which the caller now holds, so none is being written; one whose process still lives
    (this one included) is left, to be safe. Links and other kinds of entry are never
    touched."""
    names = (*RUN_FILES, *REPORT_FILES, MARKER)
    for entry in run_dir.iterdir():
        m = _TMP.match(entry.name)
        if m is None or m["name"] not in names or not entry.is_file() or entry.is_symlink():
            continue
        if not alive(int(m["pid"])):
            entry.unlink(missing_ok=True)


def results_token(run_dir: Path) -> tuple[int, int, int] | None:
    """What tells whether a run folder's results changed: its manifest's inode, size and
    modification time (every writer replaces the manifest; ``None``: there is none)."""
    try:
        info = (run_dir / "manifest.json").stat()
    except OSError:
        return None
    return (info.st_ino, info.st_size, info.st_mtime_ns)


@contextmanager
def writing_report(
    run_dir: Path,
    path: Path,
    *,
    run_id: str | None,
    token: tuple[int, int, int] | None,
    digest: str,
) -> Iterator[None]:
    """Around writing the report of the run in ``run_dir`` (``run_id``: the run it shows;
    ``token``: :func:`results_token` when the report was built) to ``path``.

    When ``path`` is a report name in that run folder, the folder's lock is taken for the
    write (a run that holds it is an error); run files that changed since the report was
    built, or a folder whose results and config name different runs, are an error; and the
    report is recorded as steadyeval's, showing ``run_id``, once written (in a folder whose
    marker records reports), with ``digest``, its sha256: recorded before the write beside the
    hash of the report it replaces, so that a write stopped at any point leaves a file the
    marker vouches for. Where the lock cannot be had (a file system without locks, a lock
    file of another user), the report is written unrecorded, as it is elsewhere."""
    inside = Path(os.path.realpath(path.parent)) == Path(os.path.realpath(run_dir))
    if not inside or path.name not in REPORT_FILES:
        yield
        return
    with _finished_run_locked(run_dir, "report", "write its report") as locked:
        if not locked:
            yield  # no lock to be had: written, not recorded (a later run judges it)
            return
        if results_token(run_dir) != token:
            raise DataError(
                f"{run_dir}: its files changed while the report was built (a run or reanalyze "
                "wrote them); run the report again"
            )
        now = written_run_id(run_dir)
        if run_id and now and now != run_id:  # it would be deleted as another run's at once
            raise DataError(
                f"{run_dir}: its summary.json is of run {run_id} but its config.json of run "
                f"{now}; run the command that wrote the folder again"
            )
        # the old report's hash stays beside the new one's until the new one is written
        old = _report_hashes(_current_marker(run_dir)).get(path.name, [])
        own(run_dir, report_hashes={path.name: [*old[-1:], digest]})
        yield
        # once written (a failure records nothing else): a report the user changes is theirs
        own(run_dir, path.name, report_of=run_id, report_hashes={path.name: [digest]})


@contextmanager
def rewriting_run(run_dir: Path) -> Iterator[None]:
    """Around rewriting a finished run's files in place (``reanalyze``'s summaries): the
    folder's lock is held throughout, so no run replaces the results being read; a run
    holding it is an error (a report's short write is waited for). A folder without a
    steadyeval marker, or where no lock can be had, is rewritten without it, as before."""
    with _finished_run_locked(run_dir, "reanalyze", "reanalyze it"):
        yield


@contextmanager
def _finished_run_locked(run_dir: Path, what: str, then: str) -> Iterator[bool]:
    """Hold a finished run folder's lock for ``what``; yields whether it is held: not in a
    folder without a steadyeval marker (no run locks it either), nor where no lock can be
    had (logged). Any marker counts, an older release's too: this release's runs lock such
    a folder. A run holding it is an error saying to ``then`` when it has finished."""
    try:
        marked = run_dir.is_dir() and _marker(run_dir) is not None
    except ConfigError:
        marked = False  # not steadyeval's marker: the readers refuse the folder
    if not marked:  # not a run folder of a release with markers: no run locks it either
        yield False
        return
    with contextlib.ExitStack() as stack:
        try:
            stack.enter_context(locked_run_dir(run_dir, what=what))
        except RunFolderBusy as exc:
            busy = RunFolderBusy(
                f"{run_dir}: {exc.holder} is writing this run folder; {then} when it has finished"
            )
            busy.holder = exc.holder
            raise busy from None
        except ConfigError as exc:
            reason = str(exc).removeprefix(f"--out {run_dir}: ").split(";")[0]
            log.warning("%s: writing without the folder's lock (%s)", run_dir, reason)
            yield False
            return
        yield True


def _open_lock(path: Path) -> int:
    """The lock file, created exclusively or opened, never through a link; refused unless
    it is a regular file with one link (so writing the holder's pid into it can never
    truncate another file)."""
    flags = os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        try:
            fd = os.open(path, flags | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            fd = os.open(path, flags)
    except OSError as exc:
        what = {
            errno.ELOOP: "is a symbolic link",
            errno.EISDIR: "is a folder",
            errno.ENXIO: "is a special file",
        }.get(exc.errno or 0, f"cannot be opened ({exc.strerror})")
        raise ConfigError(
            f"--out {path.parent}: the lock file {LOCK} {what}; expected a regular file "
            "written by steadyeval (remove it if nothing else uses it)"
        ) from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
        os.close(fd)
        what = "has other hard links" if stat.S_ISREG(info.st_mode) else "is a special file"
        raise ConfigError(
            f"--out {path.parent}: the lock file {LOCK} {what}; expected a regular file "
            "written by steadyeval (remove it if nothing else uses it)"
        )
    return fd


class RunFolderBusy(ConfigError):
    """Another writer (a run, a report, another thread) holds a run folder's lock;
    ``holder`` says which, as a refusal names it."""

    holder = "another steadyeval process"


def _lock(run_dir: Path, what: str = "run") -> int:
    """Take the folder's lock for ``what`` (``run``, ``report`` or ``reanalyze``), trying
    again for up to :data:`_REPORT_WAIT` seconds while a report holds it (a report's write
    is short; the others are not, and are refused at once); a file system that cannot lock
    is an error."""
    import fcntl

    fd = _open_lock(run_dir / LOCK)
    until = time.monotonic() + _REPORT_WAIT
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            holder = _holder(fd)
            # a report, or a writer that took the lock and has not said who it is yet
            if time.monotonic() < until and holder.get("what", "report") == "report":
                time.sleep(0.05)
                continue
            os.close(fd)
            who = _who(holder)
            busy = RunFolderBusy(
                f"--out {run_dir}: {who} is writing this run folder; wait for it to finish or "
                "choose another --out"
            )
            busy.holder = who
            raise busy from None
        except OSError as exc:
            os.close(fd)
            raise ConfigError(
                f"--out {run_dir}: cannot lock the folder ({exc.strerror}; a file system "
                "without locks?); choose another --out"
            ) from None
    os.ftruncate(fd, 0)
    holder = {"pid": os.getpid(), "host": socket.gethostname(), "what": what}
    os.write(fd, json.dumps(holder).encode())
    return fd


def _holder(fd: int) -> dict[str, Any]:
    """What the lock file ``fd`` says of the writer holding it (``{}``: nothing readable)."""
    try:
        holder = json.loads(os.pread(fd, 4096, 0).decode() or "{}")
    except (ValueError, OSError):
        holder = {}
    return holder if isinstance(holder, dict) else {}


#: What the lock file's ``what`` says, as the refusal names the holder.
_HOLDERS = {"run": "a run", "report": "a report", "reanalyze": "reanalyze"}


def _who(holder: dict[str, Any]) -> str:
    pid, host = holder.get("pid", "?"), holder.get("host", "?")
    doing = _HOLDERS.get(str(holder.get("what")))
    if pid == os.getpid() and host == socket.gethostname():
        return "another thread of this process" + (f" ({doing})" if doing else "")
    return f"another steadyeval process (pid {pid} on {host}{f', {doing}' if doing else ''})"


def _remove(entry: Path) -> None:
    """Delete one entry steadyeval owns: a link is removed, never followed."""
    if entry.is_dir() and not entry.is_symlink():
        shutil.rmtree(entry)
    else:
        entry.unlink(missing_ok=True)


def _legacy_key(run_dir: Path, config: Mapping[str, Any] | None, key: str) -> bool:
    """Whether the folder's marker ``key`` is that of ``config`` as a release before model
    specs were canonical wrote it: the folder's ``config.json`` (its keys of ``config``)
    hashes to ``key``, and with its model specs canonical (options sorted, the backend
    lower-case) it is ``config``."""
    from ..models import parse_model_spec

    path = run_dir / "config.json"
    if config is None or not path.is_file():
        return False
    try:
        recorded = load_json_file(path, "a run's config.json", max_bytes=16 * 2**20)
    except SteadyevalError:
        return False
    if not isinstance(recorded, dict) or not all(k in recorded for k in config):
        return False
    legacy = {k: recorded[k] for k in config}
    if config_key(legacy, "") != key or not isinstance(legacy.get("models"), list):
        return False
    try:
        models = [str(parse_model_spec(m)) for m in legacy["models"]]
    except (SteadyevalError, TypeError):
        return False
    return canonical_json({**legacy, "models": models}) == canonical_json(config)


def claim_run_dir(
    run_dir: Path,
    key: str,
    *,
    overwrite: bool = False,
    keep: Sequence[Path] = (),
    config: Mapping[str, Any] | None = None,
) -> None:
    """Make ``run_dir`` this run's folder, or refuse.

    A new or empty folder is claimed. A folder whose marker holds the same config is kept
    (the run resumes: cached responses are not sent again); so is one written by a release
    that recorded ``config``'s model specs as given rather than canonical (``config``: the
    resolved config ``key`` hashes, see :func:`_legacy_key`). A folder holding another run is
    refused unless ``overwrite``, which deletes the entries its marker records as
    steadyeval's own (other files stay). A non-empty folder with no marker is always
    refused: it is not ours to clear. Files in ``keep`` (the response cache, when it lives
    in the folder; with its SQLite side files) neither make a folder non-empty nor are
    deleted.
    """
    if run_dir.exists() and not run_dir.is_dir():
        raise ConfigError(f"--out {run_dir}: exists and is not a folder")
    kept = {str(k.resolve()) + tail for k in keep for tail in ("", "-wal", "-shm", "-journal")}
    entries = _entries(run_dir, kept)
    record: dict[str, Any] = {"owns": list(RUN_FILES)}
    if entries:
        marker = _marker(run_dir)
        if marker is None:
            raise _not_a_run(run_dir)
        if marker["config_key"] != key and not _legacy_key(run_dir, config, marker["config_key"]):
            if not overwrite:
                raise ConfigError(
                    f"--out {run_dir}: the folder holds a run of a different config; pass "
                    "--overwrite to replace it (the files steadyeval wrote there are "
                    "deleted) or choose another --out"
                )
            owned = _owned(marker)
            for entry in entries:  # the marker last: a crash midway leaves a claimed folder
                if entry.name in REPORT_FILES and not _is_report(entry, marker):
                    continue  # the user's own file at a report's name (or a link to one)
                if entry.name != MARKER and _is_owned(entry.name, owned):
                    _remove(entry)
            # a report it did not own stays, and so does the record of which run it shows
            left = _report_record(marker, lambda n: (run_dir / n).is_file())
            record = {**record, **{k: v for k, v in left.items() if v}}
        else:  # the same run resumes: what it owns (a report, checkpoints) stays its own
            record = _kept_record(marker)
    run_dir.mkdir(parents=True, exist_ok=True)
    write_json(
        run_dir / MARKER,
        {"format": MARKER_FORMAT, "config_key": key, "claimed": time.time(), **record},
    )


def _kept_record(marker: Mapping[str, Any]) -> dict[str, Any]:
    """What a marker of the same run records that a new claim keeps: the entries it owns
    (and the run's files) and the run ids its reports were rendered from."""
    owns = [*RUN_FILES, *(n for n in sorted(_owned(marker)) if n not in RUN_FILES)]
    made = _report_record(marker, lambda n: True)
    return {"owns": owns, **{k: v for k, v in made.items() if v}}


def is_run_file(run_dir: Path, path: Path) -> bool:
    """Whether ``path`` names a file a report or another output must never be written
    over: one of the run folder ``run_dir``'s own files (its results, summaries, config,
    provenance, manifest, marker or lock), or, in another run folder (one holding
    steadyeval's marker), one of its own files or reports (a report of one run must not
    pass for another's). ``path``'s folder is resolved (links followed), its name is not
    (writing replaces a link, never its target)."""
    if Path(os.path.realpath(path.parent)) == Path(os.path.realpath(run_dir)):
        return path.name in (*RUN_FILES, MARKER, LOCK)
    return in_a_run_folder(path)


def in_a_run_folder(path: Path) -> bool:
    """Whether ``path`` names one of a run folder's own files or reports (its folder holds
    steadyeval's marker; the folder is resolved, the name is not): an output given as a
    path (a comparison's JSON) must never replace one."""
    folder = Path(os.path.realpath(path.parent))
    names = (*RUN_FILES, MARKER, LOCK, *REPORT_FILES)
    return path.name in names and os.path.lexists(folder / MARKER)


def own(
    run_dir: Path,
    *names: str,
    report_of: str | None = None,
    report_hashes: Mapping[str, list[str]] | None = None,
) -> None:
    """Record ``names`` (entries of ``run_dir`` steadyeval is writing: a report, a checkpoint
    store) as steadyeval's own in the folder's marker, so ``--overwrite`` may delete them
    later; what is never recorded is never deleted. ``report_of``: the run id the named
    reports show (a report of another run than the folder's is deleted when a run next
    writes the folder); ``report_hashes``: the sha256 each named report may have (one the
    user then changes is theirs, see :func:`is_report`). A folder without a current marker
    (not a run folder, or one written before markers listed what they own) is left as it
    is."""
    marker = _current_marker(run_dir)
    if marker is None:
        return
    owns = [n for n in marker["owns"] if isinstance(n, str)]
    added = [n for n in names if n not in owns and n and "/" not in n]
    reports = [n for n in names if n in REPORT_FILES]
    made = {**_reports(marker), **({n: report_of for n in reports} if report_of else {})}
    hashes = {**_report_hashes(marker), **(report_hashes or {})}
    if added or made != marker.get("reports") or hashes != marker.get("report_hashes"):
        _rewrite_marker(run_dir, marker, owns=[*owns, *added], reports=made, report_hashes=hashes)


def default_out(name: str, *, root: Path = Path("runs")) -> Path:
    """``runs/<YYYYmmdd-HHMMSS>-<name>``: where a run goes when no ``--out`` is given."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in name).strip("-.")
    return root / f"{stamp}-{safe or 'run'}"
