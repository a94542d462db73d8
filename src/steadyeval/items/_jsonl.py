"""The one line reader of data files (JSONL, CSV) and the one JSONL reader: located errors,
regular files only, and a cap on one line's length so a file without newlines cannot fill
the memory. Files are read line by line, never whole."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .._errors import DataError
from .._files import human_bytes, input_file, limit_from_env
from ._text import MAX_DEPTH, value_problem

__all__ = ["MAX_LINE_BYTES", "bad_utf8", "not_utf8", "read_jsonl", "read_lines"]

#: The longest line (in bytes) a data file may hold; ``STEADYEVAL_MAX_LINE_MB`` raises it.
#: A real row (a SQuAD paragraph and its question) is a few kilobytes.
MAX_LINE_BYTES = 16 * 1024 * 1024

#: A JSON escape of a UTF-16 surrogate: the only way a lone surrogate gets into parsed text.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def bad_utf8(path: Path) -> tuple[int, int, str] | None:
    """``(line, column, reason)`` of the first bytes of ``path`` that are not UTF-8 (1-based),
    or None. Used after a decode error to say where it is."""
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                return lineno, exc.start + 1, exc.reason
    return None


def not_utf8(path: Path, exc: UnicodeDecodeError) -> DataError:
    """The located error for a file that is not UTF-8 text."""
    where = bad_utf8(path)
    if where is None:
        return DataError(f"not UTF-8 text ({exc.reason})", file=str(path), expected="UTF-8")
    line, column, reason = where
    return DataError(
        f"not UTF-8 text at column {column} ({reason})",
        file=str(path),
        line=line,
        expected="UTF-8 (save the file as UTF-8)",
    )


def read_lines(path: str | Path, what: str) -> Iterator[tuple[int, str]]:
    """Each line of the text file ``path`` (newline kept) with its 1-based number.

    Raises :class:`DataError` naming the file (and line) for a path that is not a regular
    file (a FIFO would block, a device would be read without end), a file that cannot be
    read, a line longer than :data:`MAX_LINE_BYTES` (checked as it is read: no longer line
    is ever held) and text that is not UTF-8 (the line and column of the first bad byte).
    ``what`` says what the file should be (e.g. ``"a JSONL file"``).
    """
    p = input_file(path, what)
    limit = limit_from_env("STEADYEVAL_MAX_LINE_MB", MAX_LINE_BYTES)
    try:
        fh = p.open("rb")
    except OSError as exc:
        raise DataError(
            f"cannot read ({exc.strerror or exc})", file=str(p), expected=what
        ) from None
    with fh:
        lineno = 0
        while True:
            try:
                raw = fh.readline(limit + 1)
            except OSError as exc:
                raise DataError(
                    f"cannot read ({exc.strerror or exc})", file=str(p), line=lineno + 1
                ) from None
            if not raw:
                return
            lineno += 1
            if len(raw) > limit:
                raise DataError(
                    f"the line is longer than {_size(limit)} (the limit of one line; "
                    "STEADYEVAL_MAX_LINE_MB raises it)",
                    file=str(p),
                    line=lineno,
                    expected=f"{what} with one record a line",
                )
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise DataError(
                    f"not UTF-8 text at column {exc.start + 1} ({exc.reason})",
                    file=str(p),
                    line=lineno,
                    expected="UTF-8 (save the file as UTF-8)",
                ) from None
            if lineno == 1:
                text = text.removeprefix("\ufeff")  # a byte order mark (Windows' editors)
            yield lineno, text


def _size(n: int) -> str:
    return human_bytes(n)


def _checked(text: str, value: Any, path: Path, lineno: int) -> Any:
    """``value`` if it holds no lone surrogate and no nesting deeper than ``MAX_DEPTH``
    (walked only when the line could hold either)."""
    if _SURROGATE_ESCAPE.search(text) or text.count("[") + text.count("{") > MAX_DEPTH:
        problem = value_problem(value)
        if problem is not None:
            raise DataError(
                problem.message,
                file=str(path),
                line=lineno,
                field=problem.field,
                expected=problem.expected,
            )
    return value


def _constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:40]} is too large for a float")
    return value


def _parse(text: str, path: Path, lineno: int) -> Any:
    """One line's JSON value (``text`` without its newline)."""
    try:
        return json.loads(text, parse_constant=_constant, parse_float=_finite)
    except json.JSONDecodeError as exc:
        end = " (the end of the line)" if exc.pos >= len(text) else ""
        raise DataError(
            f"invalid JSON: {exc.msg} at column {exc.colno}{end}",
            file=str(path),
            line=lineno,
            expected="one JSON object per line",
        ) from None
    except RecursionError:
        raise DataError(
            f"nested deeper than {MAX_DEPTH} levels",
            file=str(path),
            line=lineno,
            expected=f"objects and lists nested at most {MAX_DEPTH} deep",
        ) from None
    except ValueError as exc:  # NaN, Infinity, an overflowing number, a 5,000-digit integer
        why = "an integer of over 4,300 digits" if "digits" in str(exc) else str(exc)[:120]
        raise DataError(
            f"invalid JSON: {why}",
            file=str(path),
            line=lineno,
            expected="finite numbers (JSON has no NaN or Infinity)",
        ) from None


def read_jsonl(path: str | Path) -> Iterator[tuple[int, Any]]:
    """Each non-blank line of a JSONL file, parsed, with its 1-based line number.

    Raises :class:`DataError` naming the file (and line) for a path that is not a regular
    file, a file that cannot be read, a line longer than :data:`MAX_LINE_BYTES`, text that is
    not UTF-8, a line that is not JSON (the column counts from the line's first character),
    NaN or Infinity, and a value holding a lone surrogate (an unpaired ``\\ud800`` escape) or
    nested deeper than :data:`MAX_DEPTH` levels.
    """
    p = Path(path)
    for lineno, raw in read_lines(p, "a JSONL file"):
        text = raw.rstrip("\r\n")
        if not text.strip():
            continue
        yield lineno, _checked(text, _parse(text, p, lineno), p, lineno)
