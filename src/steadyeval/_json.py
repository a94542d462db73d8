"""The JSON files steadyeval writes: values made JSON-safe, files replaced atomically."""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ._errors import StorageError, show_path
from ._files import special_file_kind

__all__ = [
    "json_safe",
    "json_text",
    "replace_atomically",
    "storage_error",
    "write_json",
    "write_text_atomic",
]

#: OS errors that mean "no room or no right to write here", not a bug.
_STORAGE_ERRNOS = {
    errno.ENOSPC: "no space left on the device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EFBIG: "file too large for the file system or the process's file size limit",
    errno.EROFS: "read-only file system",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.EIO: "input/output error",
}


def storage_error(exc: OSError, path: Path | str, doing: str = "write") -> StorageError | None:
    """``exc`` as a :class:`StorageError` naming ``path`` when it means the disk is full,
    read-only or not writable (else ``None``: a bug, re-raised as it is)."""
    reason = _STORAGE_ERRNOS.get(exc.errno or 0)
    if reason is None:
        return None
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        remedy = "make room"
    elif exc.errno == errno.EFBIG:
        remedy = "raise the file size limit (ulimit -f) or write elsewhere"
    elif exc.errno == errno.EIO:
        remedy = "check the disk"
    else:
        remedy = "make it writable, or write elsewhere"
    error = StorageError(
        f"cannot {doing} {path}: {reason}; nothing was half-written (the previous file, if "
        f"any, is unchanged, and responses already received stay in the cache): {remedy}, "
        "then run the same command again"
    )
    error.errno = exc.errno
    return error


def json_safe(value: Any) -> Any:
    """NaN/inf → None, tuples → lists, numpy scalars and arrays → Python, keys → str,
    recursively."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else value
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    if isinstance(value, np.ndarray):
        return json_safe(value.tolist())
    return value


def write_json(path: Path, data: Any, *, default: Callable[[Any], Any] | None = None) -> None:
    """Write ``data`` (made :func:`json_safe`) as indented JSON with sorted keys, through a
    temporary file renamed over ``path``: a crash never leaves half a file. Other objects
    raise ``TypeError`` unless ``default`` converts them (e.g. ``str`` for paths)."""
    write_text_atomic(path, json_text(data, default=default))


def json_text(data: Any, *, default: Callable[[Any], Any] | None = None) -> str:
    """The text :func:`write_json` writes for ``data``."""
    return json.dumps(json_safe(data), indent=2, sort_keys=True, default=default) + "\n"


def _check_replaceable(path: Path) -> None:
    """Refuse to replace anything but a regular file or a link (a link is replaced, never
    followed): renaming over ``/dev/null`` or a FIFO would destroy it."""
    try:
        mode = path.lstat().st_mode
    except OSError:
        return  # nothing there (or not visible): the rename decides
    kind = special_file_kind(mode)
    if kind is not None:
        raise StorageError(
            f"cannot write {show_path(path)}: it is {kind}, not a regular file; steadyeval "
            "replaces only regular files: choose another path"
        )


def replace_atomically(path: Path, write: Callable[[Path], object]) -> None:
    """Call ``write`` (its return value is ignored) on a temporary file of this process and
    thread (a unique name, so two writers never share one), then rename it over ``path``: a
    crash never leaves half a file, and the temporary file never stays. ``path`` must be a
    regular file, a link (replaced, not followed) or new: a folder, FIFO, device or socket
    there is a :class:`StorageError`, never replaced."""
    _check_replaceable(path)
    tmp = path.with_name(f"{path.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp")
    try:
        write(tmp)
        tmp.replace(path)
    except OSError as exc:
        error = storage_error(exc, path)
        if error is None:
            raise
        raise error from None
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` with :func:`replace_atomically`."""
    replace_atomically(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))
