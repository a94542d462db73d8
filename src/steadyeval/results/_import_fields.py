"""Typed reads of fields from another tool's JSON: a field of the wrong type is a
:class:`DataError` naming the file (and archive member or line), the field and what was
expected, never an ``AttributeError`` three calls later or a value silently ignored."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from .._errors import DataError
from ..items import shorten, value_problem

__all__ = [
    "BOOL",
    "INT",
    "LIST",
    "NAME",
    "NUMBER",
    "OBJECT",
    "TEXT",
    "Kind",
    "Place",
    "describe",
    "get",
    "int_in",
    "list_of",
    "valid_text",
]


class Kind(NamedTuple):
    """A JSON type as a reader expects it: its name in messages and its test."""

    name: str
    test: Callable[[Any], bool]


TEXT = Kind("a string", lambda v: isinstance(v, str))
NAME = Kind("a non-empty string", lambda v: isinstance(v, str) and v != "")
INT = Kind("an integer", lambda v: isinstance(v, int) and not isinstance(v, bool))
NUMBER = Kind("a number", lambda v: isinstance(v, int | float) and not isinstance(v, bool))
BOOL = Kind("true or false", lambda v: isinstance(v, bool))
OBJECT = Kind("an object", lambda v: isinstance(v, Mapping))
LIST = Kind("a list", lambda v: isinstance(v, list))


@dataclass(frozen=True)
class Place:
    """Where a JSON value was read: a file (``log.eval!samples/1_epoch_1.json`` for an
    archive member), the line of a JSONL file, and the path of the value within it."""

    file: str
    line: int | None = None
    path: str = ""

    def at(self, key: str | int) -> Place:
        """The place of ``key`` within this value."""
        if isinstance(key, int):
            return Place(self.file, self.line, f"{self.path}[{key}]")
        return Place(self.file, self.line, f"{self.path}.{key}" if self.path else key)

    def error(self, message: str, expected: str) -> DataError:
        return DataError(
            message, file=self.file, line=self.line, field=self.path or None, expected=expected
        )


def describe(value: Any) -> str:
    """What a JSON value is, for a message (echoed values are cut)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"{str(value).lower()}"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return f"the string {shorten(repr(value))}"
    if isinstance(value, int):
        return f"the integer {shorten(str(value), 30)}"
    if isinstance(value, float):
        return f"the number {value!r}"
    return type(value).__name__


def _expected(kinds: tuple[Kind, ...], null: bool) -> str:
    names = [k.name for k in kinds] + (["null"] if null else [])
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def get(
    obj: Mapping[str, Any],
    key: str,
    place: Place,
    *kinds: Kind,
    required: bool = False,
    nullable: bool = True,
) -> Any:
    """``obj[key]`` when it is of one of ``kinds``; ``None`` when it is missing (unless
    ``required``) or null (unless ``required`` or not ``nullable``: a field another tool
    may leave out but never writes as null); otherwise a :class:`DataError` at
    ``place.at(key)``."""
    value = obj.get(key)
    if value is None:
        if required or (not nullable and key in obj):
            where = place.at(key)
            raise where.error("missing" if key not in obj else "is null", _expected(kinds, False))
        return None
    if not any(k.test(value) for k in kinds):
        null = not required and nullable
        raise place.at(key).error(f"is {describe(value)}", _expected(kinds, null))
    return value


def list_of(value: list[Any] | None, place: Place, *kinds: Kind) -> list[Any]:
    """``value`` (a list read with :func:`get`, or None: ``[]``) with every element of one
    of ``kinds``."""
    for i, item in enumerate(value or ()):
        if not any(k.test(item) for k in kinds):
            raise place.at(i).error(f"is {describe(item)}", _expected(kinds, False))
    return value or []


def int_in(value: Any, place: Place, low: int, high: int) -> int:
    """``value`` when it is an integer from ``low`` to ``high``; else a :class:`DataError`."""
    if not (INT.test(value) and low <= value <= high):
        raise place.error(f"is {describe(value)}", f"an integer from {low:,} to {high:,}")
    return int(value)


def valid_text(value: Any, place: Place) -> None:
    """Refuse a lone surrogate (an unpaired ``\\ud800`` escape: text that cannot be written
    as UTF-8) anywhere in ``value``, naming the field that holds it."""
    problem = value_problem(value)
    if problem is not None:
        field = ".".join(p for p in (place.path, problem.field) if p and p != "(value)")
        raise Place(place.file, place.line, field).error(problem.message, problem.expected)
