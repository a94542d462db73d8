"""A run folder is read as a unit: ``manifest.json``, written last, holds the run id and a
hash of every file of the run. Writers remove it before they change a file and write it
again when all are written; readers check it, so a folder caught mid-write (a crash, a
kill -9) is refused instead of read as a mix of two runs."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .._errors import DataError
from .._files import loads_json, read_text_file
from .._json import write_json
from ..items import shorten

__all__ = ["MANIFEST", "RUN_FILES", "check_run_dir", "writing_run"]

MANIFEST = "manifest.json"
#: The files a run folder's manifest covers (those present).
RUN_FILES = ("results.parquet", "summary.json", "summary.md", "config.json", "provenance.json")
#: Written into a run folder by steadyeval before any file of the run (see run/_folder.py).
_MARKER = ".steadyeval-run"
#: A manifest lists five hashes: anything near this size is not one.
_MAX_MANIFEST_BYTES = 1024 * 1024


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@contextmanager
def writing_run(run_dir: Path, run_id: str) -> Iterator[None]:
    """Around writing a run's files: the manifest goes first and comes back last (only if
    every write succeeded)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / MANIFEST).unlink(missing_ok=True)
    yield
    files = {name: _digest(run_dir / name) for name in RUN_FILES if (run_dir / name).is_file()}
    write_json(run_dir / MANIFEST, {"run_id": run_id, "files": files})


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


def check_run_dir(run_dir: Path) -> None:
    """Raise :class:`DataError` unless ``run_dir`` holds one complete run: every file the
    manifest lists is there with its recorded hash, and no run file is there unlisted. A
    folder from before manifests (no manifest and no steadyeval marker) is read as it is."""
    manifest = _manifest(run_dir)
    if manifest is None:
        if (run_dir / _MARKER).is_file() and any((run_dir / n).is_file() for n in RUN_FILES):
            raise DataError(
                f"{run_dir}: the run did not finish writing its files (no {MANIFEST}); run the "
                "same command again to finish it"
            )
        return
    listed: dict[str, str] = manifest["files"]
    for name in RUN_FILES:
        path = run_dir / name
        if name not in listed and path.is_file():
            raise DataError(f"{run_dir}: {name} is not part of run {manifest.get('run_id')}")
        if name in listed and (not path.is_file() or _digest(path) != listed[name]):
            raise DataError(
                f"{run_dir}: {name} does not belong to run {manifest.get('run_id')}: it is "
                "not the file the run wrote (damaged, or another run's after a crash while "
                "writing); run the command that wrote it again"
            )
