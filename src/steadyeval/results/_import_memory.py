"""What an import holds in memory at once, bounded by ``STEADYEVAL_MAX_KEPT_MB``.

The limits of :mod:`._import_limits` bound what is read and decompressed, one member or
file at a time. What is read is dropped but for the fields an import uses, which are held
for every sample of every log until the table is made; the rows and the table then copy
their text. So a 1.2 MB ``.eval`` archive of a dozen members, each 100 MiB of text and each
under the member limit, kept 1.2 GB and peaked at 3.4 GB. One budget per import bounds
both what it keeps and the document it is parsing:

- each value kept (a sample's fields, a header's, an lm-eval record) costs its
  :func:`kept_cost`: its objects' own sizes, its strings :data:`TEXT_COPIES` times more;
- a document about to be parsed (an archive member, a ``.json`` log, a results JSON) must
  fit in what is left, at its :func:`parse_cost`: its bytes, its text and its strings at
  the width (1, 2 or 4 bytes a character) Python stores its widest character in, and
  its values (``[{},{},...]`` takes some twenty times its size).

An import's peak memory is about the budget plus the interpreter (some 100 MiB); the
default of 768 MiB keeps it under 1 GB. Each refusal names the variable that raises it.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._errors import DataError
from ._import_limits import ImportLimits, mib

__all__ = [
    "TEXT_COPIES",
    "VALUE_BYTES",
    "KeptBudget",
    "file_parse_cost",
    "kept_cost",
    "parse_cost",
]

#: How many more copies of a kept string the rows, the table and its Parquet file make at
#: most (measured: a target is the row's ``gold``, its metadata's JSON, both again in the
#: table, and in the Parquet writer's buffers).
TEXT_COPIES = 6
#: UTF-8 lead bytes of characters Python stores in 4 bytes (beyond U+FFFF) and in 2 bytes
#: (U+0100 to U+FFFF); text without them takes 1 byte a character.
_WIDE4 = re.compile(rb"[\xf0-\xf7]")
_WIDE2 = re.compile(rb"[\xc4-\xef]")
#: JSON escapes that parse to such characters: a surrogate pair, and U+0100 to U+FFFF.
_ESCAPE4 = re.compile(rb"\\u[dD][89abAB]")
_ESCAPE2 = re.compile(rb"\\u(?:0[1-9a-fA-F]|[1-9a-fA-F])")
_BLOCK = 1 << 20
#: What a parsed JSON value takes, about (measured: ``{"a":{"b":1}}`` takes 384 bytes for
#: its three values, ``[{},...]`` 36 a value, a number 32 and its reference 8).
VALUE_BYTES = 128


def kept_cost(value: Any) -> int:
    """The memory an import needs for keeping ``value`` (parsed JSON: dicts, lists,
    strings, numbers) until its table is written: every object's own size
    (:func:`sys.getsizeof`: a string's characters at the width its widest one needs, a
    container's table of references; keys included), and every string value
    :data:`TEXT_COPIES` times more. A string held in several places counts once. Walks the
    value without recursion."""
    total = 0
    stack = [value]
    strings: set[int] = set()
    while stack:
        node = stack.pop()
        size = sys.getsizeof(node)
        if isinstance(node, str):
            if id(node) in strings:
                continue
            strings.add(id(node))
            size *= 1 + TEXT_COPIES
        elif isinstance(node, dict):
            total += sum(map(sys.getsizeof, node))
            stack.extend(node.values())
        elif isinstance(node, list | tuple):
            stack.extend(node)
        total += size
    return total


def _widths(data: bytes) -> tuple[int, int]:
    """Bytes a character of ``data`` (UTF-8 JSON) takes decoded, and parsed (escapes
    included), at most."""
    text = 4 if _WIDE4.search(data) else 2 if _WIDE2.search(data) else 1
    escaped = 4 if _ESCAPE4.search(data) else 2 if _ESCAPE2.search(data) else 1
    return text, max(text, escaped)


def _values(data: bytes) -> int:
    """An upper bound on the values ``data`` parses to (as in :mod:`._import_limits`)."""
    return data.count(b",") + data.count(b"[") + data.count(b"{")


def parse_cost(data: bytes) -> int:
    """The memory parsing ``data`` (a JSON document, its bytes held meanwhile) takes, about:
    the bytes, the decoded text and the parsed strings, and :data:`VALUE_BYTES` a value."""
    text, parsed = _widths(data)
    return len(data) * (1 + text + parsed) + (_values(data) + 1) * VALUE_BYTES


def file_parse_cost(path: Path) -> int:
    """:func:`parse_cost` of a JSON file read whole (its bytes are dropped once decoded),
    scanned in blocks without holding it."""
    text = parsed = 1
    tail = b""
    size = values = 0
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(_BLOCK), b""):
            size += len(block)
            values += _values(block)
            widths = _widths(tail + block)
            text, parsed = max(text, widths[0]), max(parsed, widths[1])
            tail = block[-5:]  # an escape split between blocks
    return size * max(1 + text, text + parsed) + (values + 1) * VALUE_BYTES


@dataclass
class KeptBudget:
    """What one import holds: the values it keeps until its table is made (all its files
    together), and the document it is parsing; refused as soon as they would pass
    ``limits.kept_bytes``."""

    limits: ImportLimits
    spent: int = field(default=0)

    def keep(self, value: Any, where: str) -> None:
        """Count ``value`` (read from ``where``) as kept."""
        self.spent += kept_cost(value)
        if self.spent > self.limits.kept_bytes:
            raise DataError(
                f"{where}: with what the import read before it, the fields it keeps (and the "
                f"table's copies of their text) would take more than "
                f"{mib(self.limits.kept_bytes)} of memory, the limit for one import; import "
                "fewer or smaller logs at once, or set STEADYEVAL_MAX_KEPT_MB to raise it"
            )

    def parse(self, cost: int, where: str) -> None:
        """Refuse to parse the document at ``where`` when its :func:`parse_cost` does not
        fit beside what is kept."""
        if self.spent + cost > self.limits.kept_bytes:
            raise DataError(
                f"{where}: parsing it would take about {mib(cost)} of memory (its text, its "
                "characters as wide as Python stores them, and its values)"
                + (f" beside the {mib(self.spent)} the import keeps" if self.spent >> 20 else "")
                + f", more than the limit of {mib(self.limits.kept_bytes)} for one import; "
                "set STEADYEVAL_MAX_KEPT_MB to raise it"
            )
