"""The one JSONL reader: ``(line number, parsed value)`` pairs with located errors."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .._errors import DataError

__all__ = ["read_jsonl"]


def read_jsonl(path: str | Path) -> Iterator[tuple[int, Any]]:
    """Each non-blank line of a JSONL file, parsed, with its 1-based line number.

    Raises :class:`DataError` naming the file (and line) for a file that cannot be read, text
    that is not UTF-8, or a line that is not JSON.
    """
    p = Path(path)
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
                    yield lineno, json.loads(text)
                except json.JSONDecodeError as exc:
                    raise DataError(
                        f"invalid JSON: {exc.msg} at column {exc.colno}",
                        file=str(p),
                        line=lineno,
                        expected="one JSON object per line",
                    ) from None
        except UnicodeDecodeError as exc:
            raise DataError(
                f"not UTF-8 text ({exc.reason})", file=str(p), expected="UTF-8"
            ) from None
