"""Reading files a user (or a download) hands to steadyeval: only regular files, sizes checked
before anything is allocated, text that must be UTF-8, JSON nested to a sane depth.

Every reader of outside input goes through these, so the limits are stated once:

* a path must name a regular file (a FIFO with no writer would block forever, a device such
  as ``/dev/zero`` would be read without end, a folder is not a file);
* its size is checked from ``stat`` before a byte is read, against a limit the caller names
  (with the option or environment variable that raises it, where raising is reasonable);
* text that is not UTF-8 is an error naming the line and column of the first bad byte;
* JSON nested deeper than :data:`MAX_JSON_DEPTH` is refused before any recursive reader
  walks it.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Any, BinaryIO

from ._errors import DataError, SteadyevalError, show_path

__all__ = [
    "MAX_JSON_DEPTH",
    "MAX_LIMIT",
    "MAX_TEXT_BYTES",
    "check_json_depth",
    "decode_utf8",
    "file_sha256",
    "human_bytes",
    "input_file",
    "limit_from_env",
    "load_json_file",
    "loads_json",
    "read_text_file",
    "sized_input_file",
    "special_file_kind",
    "text_sha256",
]

#: The default cap on one text or JSON file read whole into memory (data sets are read
#: line by line and are not capped by this). ``STEADYEVAL_MAX_FILE_MB`` raises it.
MAX_TEXT_BYTES = 512 * 1024 * 1024
#: The largest limit a ``STEADYEVAL_MAX_*`` variable can set (1 PiB): larger values mean "no
#: limit" and are taken as this one (a byte count beyond it does not fit a read's size).
MAX_LIMIT = 1 << 50
#: The deepest nesting of JSON objects and lists accepted from a file.
MAX_JSON_DEPTH = 100

_SPECIAL_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def limit_from_env(name: str, default: int, *, unit: int = 1024 * 1024) -> int:
    """``default``, or the environment variable ``name`` (a positive number of ``unit``s)."""
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf") or value * unit < 1:
        raise SteadyevalError(f"${name}={raw[:40]!r}: expected a positive number")
    return int(min(value * unit, MAX_LIMIT))


def special_file_kind(mode: int) -> str | None:
    """What the ``st_mode`` ``mode`` names when it is a folder, a FIFO, a device or a socket
    (``"a folder"``, ...); ``None`` for anything else (a regular file, a link)."""
    for test, name in _SPECIAL_KINDS:
        if test(mode):
            return name
    return None


def _kind(mode: int) -> str | None:
    kind = special_file_kind(mode)
    if kind is not None:
        return kind
    return None if stat.S_ISREG(mode) else "not a regular file"


def input_file(
    path: str | os.PathLike[str],
    what: str,
    *,
    error: type[SteadyevalError] = DataError,
) -> Path:
    """``path`` as a :class:`Path` once it is known to name an existing regular file (a
    symbolic link to one is fine); otherwise ``error`` naming the path, ``what`` it should
    be and what it is. Never opens the file, so a FIFO cannot block here."""
    p = Path(path)
    try:
        mode = p.stat().st_mode
    except FileNotFoundError:
        raise error(f"{show_path(p)}: no such file; expected {what}") from None
    except OSError as exc:
        raise error(f"{show_path(p)}: cannot read {what} ({exc.strerror or exc})") from None
    kind = _kind(mode)
    if kind is not None:
        raise error(f"{show_path(p)}: is {kind}; expected {what} (a regular file)")
    return p


def human_bytes(n: int) -> str:
    """``n`` bytes as a short text: ``512 bytes``, ``1.5 KiB``, ``64 MiB``, ``4 GiB``."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            value = n / size
            whole = value >= 10 or value == int(value)
            return f"{value:,.0f} {unit}" if whole else f"{value:,.1f} {unit}"
    return f"{n:,} bytes"


def _size_error(p: Path, size: int, limit: int, what: str, raise_with: str | None) -> str:
    how = f"; set {raise_with} (in MiB) to raise it" if raise_with else ""
    shown, most = human_bytes(size), human_bytes(limit)
    if shown.replace(".0 ", " ") == most.replace(".0 ", " "):  # 1,048,577 bytes over 1 MiB
        shown, most = f"{size:,} bytes", f"{limit:,} bytes"
    return f"{show_path(p)}: {what} is {shown}, over the limit of {most} for this file{how}"


def sized_input_file(
    path: str | os.PathLike[str],
    what: str,
    *,
    max_bytes: int,
    raise_with: str | None,
    error: type[SteadyevalError] = DataError,
) -> Path:
    """:func:`input_file`, and at most ``max_bytes`` large (``raise_with``: the variable, in
    MiB, that replaces it when set), all from ``stat``: for a file checked before it is read
    or hashed whole."""
    if raise_with:
        max_bytes = limit_from_env(raise_with, max_bytes)
    p = input_file(path, what, error=error)
    size = p.stat().st_size
    if size > max_bytes:
        raise error(_size_error(p, size, max_bytes, what, raise_with))
    return p


def _read_at_most(fh: BinaryIO, n: int) -> bytes:
    """Up to ``n`` bytes of ``fh``, read in blocks (``fh.read(n)`` allocates ``n`` bytes at
    once, and ``n`` may be a limit of terabytes)."""
    chunks: list[bytes] = []
    got = 0
    while got < n:
        block = fh.read(min(1 << 20, n - got))
        if not block:
            break
        chunks.append(block)
        got += len(block)
    return b"".join(chunks)


def read_text_file(
    path: str | os.PathLike[str],
    what: str,
    *,
    max_bytes: int = MAX_TEXT_BYTES,
    raise_with: str | None = "STEADYEVAL_MAX_FILE_MB",
    error: type[SteadyevalError] = DataError,
) -> str:
    """The UTF-8 text of the regular file ``path``, refused (``error``) when it is larger
    than ``max_bytes`` (checked before reading), not UTF-8 (the line and column of the first
    bad byte), or unreadable. ``raise_with`` names the environment variable (in MiB) that
    replaces ``max_bytes`` when set; the message names it."""
    if raise_with:
        max_bytes = limit_from_env(raise_with, max_bytes)
    p = input_file(path, what, error=error)
    try:
        with p.open("rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size > max_bytes:
                raise error(_size_error(p, size, max_bytes, what, raise_with))
            data = _read_at_most(fh, min(max_bytes, MAX_LIMIT) + 1)
    except OSError as exc:
        raise error(f"{show_path(p)}: cannot read {what} ({exc.strerror or exc})") from None
    if len(data) > max_bytes:  # grew while read
        raise error(_size_error(p, len(data), max_bytes, what, raise_with))
    return decode_utf8(data, show_path(p), error=error)


def decode_utf8(data: bytes, where: str, *, error: type[SteadyevalError] = DataError) -> str:
    """``data`` decoded as UTF-8; otherwise ``error`` naming ``where`` and the line and
    column of the first bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise error(
            f"{where}, line {line}: not UTF-8 text at column {column} ({exc.reason}); "
            "save the file as UTF-8"
        ) from None


def check_json_depth(value: Any, where: str, *, max_depth: int = MAX_JSON_DEPTH) -> None:
    """Refuse ``value`` (parsed JSON) nested deeper than ``max_depth`` lists and objects,
    without recursion (a hostile value cannot exhaust the stack here)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth >= max_depth:
            raise DataError(f"{where}: nested deeper than {max_depth} levels of objects and lists")
        stack.extend((child, depth + 1) for child in children)


def loads_json(
    text: str, where: str, *, max_depth: int = MAX_JSON_DEPTH, allow_nan: bool = False
) -> Any:
    """``json.loads(text)`` with the nesting limit checked and every failure a
    :class:`DataError` naming ``where`` (and the line and column of a syntax error). NaN and
    Infinity, which JSON does not allow, are refused unless ``allow_nan`` (files other tools
    write with them, e.g. Inspect's unscored ``NaN``)."""

    def constant(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    try:
        value = json.loads(text, parse_constant=None if allow_nan else constant)
    except json.JSONDecodeError as exc:
        raise DataError(
            f"{where}, line {exc.lineno}: invalid JSON at column {exc.colno}: {exc.msg}"
        ) from None
    except ValueError as exc:
        raise DataError(f"{where}: invalid JSON: {exc}; expected finite numbers") from None
    except RecursionError:
        raise DataError(
            f"{where}: nested deeper than {max_depth} levels of objects and lists"
        ) from None
    check_json_depth(value, where, max_depth=max_depth)
    return value


def load_json_file(
    path: str | os.PathLike[str],
    what: str,
    *,
    max_bytes: int = MAX_TEXT_BYTES,
    max_depth: int = MAX_JSON_DEPTH,
    allow_nan: bool = False,
) -> Any:
    """The JSON value of the regular file ``path`` with the checks of :func:`read_text_file`
    and :func:`loads_json`; every failure a :class:`DataError` naming the file."""
    text = read_text_file(path, what, max_bytes=max_bytes)
    return loads_json(text, str(path), max_depth=max_depth, allow_nan=allow_nan)


def file_sha256(path: Path) -> str:
    """The sha256 of a file's bytes (hex), read in blocks."""
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def text_sha256(text: str) -> str:
    """The sha256 (hex) of ``text`` as written to a file (UTF-8): :func:`file_sha256` of it."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
