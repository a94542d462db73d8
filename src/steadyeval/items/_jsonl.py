"""The one JSONL reader: ``(line number, parsed value)`` pairs with located errors."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .._errors import DataError
from ._text import MAX_DEPTH, value_problem

__all__ = ["bad_utf8", "not_utf8", "read_jsonl"]

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


def read_jsonl(path: str | Path) -> Iterator[tuple[int, Any]]:
    """Each non-blank line of a JSONL file, parsed, with its 1-based line number.

    Raises :class:`DataError` naming the file (and line) for a file that cannot be read, text
    that is not UTF-8, a line that is not JSON, and a value holding a lone surrogate (an
    unpaired ``\\ud800`` escape) or nested deeper than :data:`MAX_DEPTH` levels.
    """
    p = Path(path)
    if p.is_dir():
        raise DataError("is a folder", file=str(p), expected="a JSONL file")
    try:
        fh = p.open("r", encoding="utf-8")
    except OSError as exc:
        raise DataError(
            f"cannot read ({exc.strerror or exc})", file=str(p), expected="a JSONL file"
        ) from None
    with fh:
        try:
            for lineno, text in enumerate(fh, start=1):
                if not text.strip():
                    continue
                try:
                    value = json.loads(text)
                except json.JSONDecodeError as exc:
                    raise DataError(
                        f"invalid JSON: {exc.msg} at column {exc.colno}",
                        file=str(p),
                        line=lineno,
                        expected="one JSON object per line",
                    ) from None
                except RecursionError:
                    raise DataError(
                        f"nested deeper than {MAX_DEPTH} levels",
                        file=str(p),
                        line=lineno,
                        expected=f"objects and lists nested at most {MAX_DEPTH} deep",
                    ) from None
                yield lineno, _checked(text, value, p, lineno)
        except UnicodeDecodeError as exc:
            raise not_utf8(p, exc) from None
