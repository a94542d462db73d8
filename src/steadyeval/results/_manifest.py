"""A run folder is read as a unit: ``manifest.json``, written last, holds the run id, a
hash of every file of the run and the run's state. Writers remove it before they change a
file and write it again when all are written; readers check it, so a folder caught
mid-write (a crash, a kill -9) is refused instead of read as a mix of two runs.

The state says whether the run finished: ``complete``; ``running`` while a run written in
several parts (a study: its passes, then its analysis, :func:`run_in_parts`) is under way, so
a kill -9 between two parts leaves it ``running``; ``failed`` (with the reason) or
``interrupted`` (Ctrl-C, SIGTERM) when such a run stopped after writing. Readers accept only
``complete`` (and manifests from before states, which were written only when complete)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Collection, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .._errors import DataError
from .._files import (
    MAX_TEXT_BYTES,
    file_sha256,
    loads_json,
    read_text_file,
    sized_input_file,
    text_sha256,
)
from .._json import write_json, write_text_atomic
from ..items import shorten

__all__ = [
    "MANIFEST",
    "RUN_FILES",
    "check_rewritable",
    "check_run_dir",
    "recorded_hashes",
    "rewrite_summaries",
    "run_in_parts",
    "writing_run",
]

MANIFEST = "manifest.json"
#: The files a run folder's manifest covers (those present).
RUN_FILES = ("results.parquet", "summary.json", "summary.md", "config.json", "provenance.json")
#: What ``reanalyze`` writes again from the results and the design.
_SUMMARIES = ("summary.json", "summary.md")
#: Written into a run folder by steadyeval before any file of the run (see run/_folder.py).
_MARKER = ".steadyeval-run"
#: A manifest lists five hashes: anything near this size is not one.
_MAX_MANIFEST_BYTES = 1024 * 1024
#: How to go on from a run that did not finish (every response it received is cached).
_RESUME = "run the same command again to resume it"
#: Folders of this process with a run in parts under way: [depth, written in this run].
_OPEN: dict[str, list[int]] = {}


def _write_manifest(run_dir: Path, run_id: str, state: str, reason: str | None = None) -> None:
    files = {name: file_sha256(run_dir / name) for name in RUN_FILES if (run_dir / name).is_file()}
    data: dict[str, Any] = {"run_id": run_id, "files": files, "state": state}
    if reason is not None:
        data["reason"] = reason
    base = _base_of(run_dir / "summary.json")  # None: no record (reanalyze then refuses)
    if base is not None:
        data["summary_base"] = base
    write_json(run_dir / MANIFEST, data)  # atomically: a temporary file renamed over it


def _summary_base(text: str) -> str | None:
    """A hash of a summary.json's content but its ``analysis`` (the design, the run's
    counts, its id), parsed so that the text's layout does not matter: what ``reanalyze``
    cannot give back, so an edit of it is refused while an edited analysis is repaired
    (``None``: not a JSON object)."""
    try:
        data = loads_json(text, "summary.json")
    except DataError:
        return None
    if not isinstance(data, dict):
        return None
    rest = {k: v for k, v in data.items() if k != "analysis"}
    canonical = json.dumps(rest, sort_keys=True, separators=(",", ":"))  # ASCII: any text
    return hashlib.sha256(canonical.encode()).hexdigest()


@contextmanager
def writing_run(run_dir: Path, run_id: str) -> Iterator[None]:
    """Around writing a run's files: the manifest goes first and comes back last (only if
    every write succeeded), ``complete``, or ``running`` inside :func:`run_in_parts`."""
    run_dir.mkdir(parents=True, exist_ok=True)
    part = _OPEN.get(str(run_dir.resolve()))
    if part is not None:
        part[1] = 1
    (run_dir / MANIFEST).unlink(missing_ok=True)
    yield
    _write_manifest(run_dir, run_id, "running" if part is not None else "complete")


def rewrite_summaries(run_dir: Path, run_id: str, texts: Mapping[str, str]) -> None:
    """Write a finished run's summaries again (``reanalyze``): ``texts`` maps
    ``summary.json`` and ``summary.md`` to their new text. The manifest first records the
    new texts' hashes as pending (``rewriting``), then the files are written, then the
    manifest lists them: at every moment each summary is the run's or the pending one, both
    of which readers accept, and the other files keep their recorded hashes (a file changed
    meanwhile is never vouched for). A new summary.json must be the run's but its analysis
    (its ``summary_base``, where recorded): one edited after it was checked is refused. A
    folder from before manifests gets a manifest, as a run writes it."""
    manifest = _manifest(run_dir)
    if manifest is None:
        with writing_run(run_dir, run_id):
            for name, text in texts.items():
                write_text_atomic(run_dir / name, text)
        return
    _same_run(run_dir, manifest, run_id)
    files = _settled(run_dir, manifest)
    new = {name: text_sha256(text) for name, text in texts.items()}
    head: dict[str, Any] = {"run_id": run_id, "state": "complete"}
    recorded = manifest.get("summary_base")
    base = _summary_base(texts["summary.json"]) if "summary.json" in texts else recorded
    if recorded is not None and base != recorded:  # read after it was checked, and edited
        raise DataError(
            f"{run_dir}: summary.json's design or counts changed while it was being read; "
            "nothing was written: run the same command again"
        )
    if base is not None:
        head["summary_base"] = base
    write_json(run_dir / MANIFEST, {**head, "files": files, "rewriting": new})
    for name, text in texts.items():
        write_text_atomic(run_dir / name, text)
    write_json(run_dir / MANIFEST, {**head, "files": {**files, **new}})


def check_rewritable(run_dir: Path, run_id: str) -> None:
    """Refuse, before a rewrite's work, a folder whose manifest names another run than
    ``run_id`` (summary.json's): the manifest was edited and vouches for nothing."""
    manifest = _manifest(run_dir)
    if manifest is not None:
        _same_run(run_dir, manifest, run_id)


def _same_run(run_dir: Path, manifest: Mapping[str, Any], run_id: str) -> None:
    if manifest.get("run_id") != run_id:
        raise DataError(
            f"{run_dir}: manifest.json names "
            f"{'no run' if manifest.get('run_id') == 'None' else 'run ' + manifest['run_id']} "
            f"but summary.json run {run_id}; nothing was written: run the study again (its "
            "responses are cached)"
        )


def _pending(manifest: Mapping[str, Any]) -> dict[str, str]:
    """The summaries' hashes a rewrite recorded before writing them (see
    :func:`rewrite_summaries`; empty: none under way or stopped part-way)."""
    pending = manifest.get("rewriting")
    if not isinstance(pending, dict):
        return {}
    return {k: v for k, v in pending.items() if k in _SUMMARIES and isinstance(v, str)}


def _settled(run_dir: Path, manifest: Mapping[str, Any]) -> dict[str, str]:
    """The manifest's file hashes, with a pending summary's hash in place of the recorded
    one where the file is that pending text (a rewrite stopped after writing it)."""
    files = dict(manifest["files"])
    for name, digest in _pending(manifest).items():
        path = run_dir / name
        if path.is_file() and file_sha256(path) == digest:
            files[name] = digest
    return files


@contextmanager
def run_in_parts(run_dir: Path | None) -> Iterator[None]:
    """Around a run that writes its folder in several parts (a study: a first pass, a
    follow-up, the analysis of each): until it returns, every manifest it writes says
    ``running``; when it returns, ``complete``; when it raises after writing, ``failed``
    with the error, or ``interrupted`` (Ctrl-C, SIGTERM). Re-entrant in one process; a
    folder it never wrote is left as it was. ``None`` (no folder): nothing to do."""
    if run_dir is None:
        yield
        return
    key = str(run_dir.resolve())
    if key in _OPEN:
        _OPEN[key][0] += 1
        try:
            yield
        finally:
            _OPEN[key][0] -= 1
        return
    _OPEN[key] = [1, 0]
    try:
        yield
    except BaseException as exc:
        if _OPEN[key][1]:
            with contextlib.suppress(OSError):  # best effort (a full disk): still not complete
                _finish(run_dir, exc)
        raise
    else:
        if _OPEN[key][1]:
            _finish(run_dir, None)
    finally:
        del _OPEN[key]


def _finish(run_dir: Path, exc: BaseException | None) -> None:
    """The state of a run in parts that ended (``exc``: how it failed)."""
    try:
        manifest = _manifest(run_dir)
    except DataError:
        manifest = None
    run_id = str((manifest or {}).get("run_id", ""))
    if exc is None:
        _write_manifest(run_dir, run_id, "complete")
    elif isinstance(exc, KeyboardInterrupt | SystemExit):
        _write_manifest(run_dir, run_id, "interrupted")
    else:
        text = str(exc).splitlines()[0] if str(exc).strip() else ""
        _write_manifest(run_dir, run_id, "failed", shorten(f"{type(exc).__name__}: {text}", 300))


def _manifest(run_dir: Path) -> dict[str, Any] | None:
    """The manifest (``None`` when there is none); one that is not a regular file, too
    large, not UTF-8 or JSON, nested too deep or of the wrong shape is an error."""
    path = run_dir / MANIFEST
    if not os.path.lexists(path):
        return None
    try:
        text = read_text_file(
            path, "a run's manifest.json", max_bytes=_MAX_MANIFEST_BYTES, raise_with=None
        )
        data = loads_json(text, str(path))
    except DataError as exc:
        raise DataError(f"{exc}; run the command that wrote the run again") from None
    if not isinstance(data, dict) or not isinstance(data.get("files"), dict):
        raise DataError(f"{path}: not a readable manifest; run the command that wrote it again")
    data["run_id"] = shorten(str(data.get("run_id")))  # echoed in messages
    return data


def recorded_hashes(run_dir: Path) -> dict[str, str]:
    """The SHA-256 of each file as the run folder's manifest records it (empty: no readable
    manifest); what a reader of the folder (a report) was checked against."""
    try:
        manifest = _manifest(run_dir)
    except DataError:
        return {}
    files = (manifest or {}).get("files", {})
    return {k: v for k, v in files.items() if isinstance(k, str) and isinstance(v, str)}


def check_run_dir(
    run_dir: Path, *, rewritten: Collection[str] = (), new_analysis: bool = False
) -> None:
    """Raise :class:`DataError` unless ``run_dir`` holds one complete run: a run that
    finished (its manifest's state; a steadyeval folder with no manifest did not), every file
    the manifest lists there with its recorded hash, and no run file there unlisted. The
    error says what happened (interrupted, failed and why) and how to resume. A folder from
    before manifests (no manifest and no steadyeval marker) is read as it is. Files named in
    ``rewritten`` (which the caller is about to write again, e.g. ``reanalyze``'s
    summary.md) may be missing or differ from their recorded hash; if there, they must be
    regular files. A summary a rewrite recorded as pending is accepted too
    (:func:`rewrite_summaries`). ``new_analysis`` (``reanalyze``): a summary.json whose
    content but its ``analysis`` is the run's is accepted (an edited analysis is repaired;
    an edit of the design or the run's counts is refused). A mismatch found while the
    manifest was replaced (a reanalyze finishing meanwhile) is checked once more against
    the new one."""
    manifest = _manifest(run_dir)
    try:
        _check_against(run_dir, manifest, rewritten, new_analysis)
    except DataError:
        again = _manifest(run_dir)
        if again is None or again == manifest:
            raise
        _check_against(run_dir, again, rewritten, new_analysis)


def _check_against(
    run_dir: Path,
    manifest: dict[str, Any] | None,
    rewritten: Collection[str],
    new_analysis: bool,
) -> None:
    """:func:`check_run_dir` against one reading of the manifest."""
    if manifest is None:
        if (run_dir / _MARKER).is_file():
            raise DataError(
                f"{run_dir}: the run did not finish writing its files (no {MANIFEST}: "
                f"interrupted, or still running in another process); {_RESUME}"
            )
        return
    _check_state(run_dir, manifest)
    listed: dict[str, str] = manifest["files"]
    pending = _pending(manifest)
    run = f"run {manifest.get('run_id')}"
    for name in RUN_FILES:
        path = run_dir / name
        if name not in listed and path.is_file():
            raise DataError(f"{run_dir}: {name} is not part of {run}")
        if name not in listed or (name in rewritten and not os.path.lexists(path)):
            continue
        if name == "summary.md" and not os.path.lexists(path):
            raise DataError(
                f"{run_dir}: {run}'s summary.md is gone; `steadyeval reanalyze RUN_DIR` writes "
                "a study's again (a plain run's: run the command that wrote it again)"
            )
        _check_listed(path, f"{run}'s {name}")
        if name not in rewritten and file_sha256(path) not in (listed[name], pending.get(name)):
            if name == "summary.json" and new_analysis:
                _check_summary_base(run_dir, path, manifest)
                continue
            raise DataError(
                f"{run_dir}: {name} does not belong to {run}: it is not the file the run wrote "
                "(damaged, or another run's after a crash while writing); "
                f"{_repair(path, manifest)}"
            )


def _repair(path: Path, manifest: Mapping[str, Any]) -> str:
    """What to do about a run file that is not the run's."""
    if path.name == "summary.md":
        return (
            "run the command that wrote it again (a study's summary.md: `steadyeval reanalyze "
            "RUN_DIR` writes it again)"
        )
    recorded = manifest.get("summary_base")
    if path.name == "summary.json" and recorded is not None and _base_of(path) == recorded:
        return "only its analysis differs: `steadyeval reanalyze RUN_DIR` writes it again"
    return "run the command that wrote it again"


def _check_summary_base(run_dir: Path, path: Path, manifest: Mapping[str, Any]) -> None:
    """Refuse a summary.json that differs from the run's outside its analysis, or whose
    run's manifest does not record what tells (written before that record)."""
    recorded = manifest.get("summary_base")
    base = _base_of(path)
    if recorded is not None and base == recorded:
        return
    if base is None:
        why = "it is not a readable JSON object (damaged)"
    elif recorded is None:
        why = (
            "it was edited or damaged, and the run was written before steadyeval recorded "
            "which edits reanalyze can repair"
        )
    else:
        why = (
            "its study's design or the run's counts were edited or damaged, and the results "
            "table cannot give them back"
        )
    raise DataError(
        f"{run_dir}: summary.json is not the file run {manifest.get('run_id')} wrote: {why}; "
        "run the command that wrote the run again (its responses are in the cache)"
    )


def _base_of(path: Path) -> str | None:
    """:func:`_summary_base` of the summary.json at ``path`` (``None``: not a regular file
    within the size limit, not UTF-8, not a JSON object)."""
    try:
        if not path.is_file() or path.stat().st_size > MAX_TEXT_BYTES:  # never a FIFO
            return None
        return _summary_base(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return None


def _check_listed(path: Path, what: str) -> None:
    """A file the manifest lists is there, a regular file, and within the size limit of
    its reader, all known from ``stat`` before it is hashed (a 40 GB sparse file would take
    minutes to hash only to be refused by its reader)."""
    from ._read import MAX_RESULTS_BYTES

    if path.name == "results.parquet":
        sized_input_file(
            path, what, max_bytes=MAX_RESULTS_BYTES, raise_with="STEADYEVAL_MAX_RESULTS_MB"
        )
    else:
        sized_input_file(path, what, max_bytes=MAX_TEXT_BYTES, raise_with="STEADYEVAL_MAX_FILE_MB")


def _check_state(run_dir: Path, manifest: dict[str, Any]) -> None:
    """Refuse a run that did not finish: what happened to it and how to go on."""
    state = manifest.get("state", "complete")  # manifests before states: written complete
    if state == "complete":
        return
    if state == "failed":
        reason = shorten(str(manifest.get("reason") or "no reason recorded"), 300)
        raise DataError(f"{run_dir}: the run failed before it finished ({reason}); {_RESUME}")
    if state == "interrupted":
        raise DataError(f"{run_dir}: the run was interrupted before it finished; {_RESUME}")
    if state == "running":
        raise DataError(
            f"{run_dir}: the run did not finish (interrupted, e.g. killed, or still running in "
            f"another process); {_RESUME}"
        )
    raise DataError(
        f"{run_dir}: {MANIFEST} holds an unknown state {shorten(str(state))!r}; run the "
        "command that wrote it again"
    )
