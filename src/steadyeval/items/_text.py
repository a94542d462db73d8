"""Checks that parsed JSON-like data can be hashed and sent: no lone surrogates in its text,
no nesting deeper than a sane limit. Iterative, so a hostile value cannot exhaust the stack."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, NamedTuple

from .._errors import DataError

__all__ = ["MAX_DEPTH", "ValueProblem", "encode_utf8", "lone_surrogate", "value_problem"]

#: The deepest nesting of objects and lists a data row may have. Real rows are a few
#: levels deep; 100,000 levels would exhaust the stack of every recursive reader after.
MAX_DEPTH = 100

_SURROGATE = re.compile("[\ud800-\udfff]")


class ValueProblem(NamedTuple):
    """Where a value is unusable (``field``: a path such as ``metadata.a[0]``) and why."""

    field: str
    message: str
    expected: str


def shorten(text: str, limit: int = 60) -> str:
    """``text`` cut to ``limit`` characters (with ``...`` and the full length) for a message."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text):,} characters)"


def lone_surrogate(text: str) -> int | None:
    """The index of the first lone surrogate in ``text`` (e.g. from the JSON escape
    ``\\ud800`` without its pair), else None. Such text cannot be encoded as UTF-8."""
    m = _SURROGATE.search(text)
    return None if m is None else m.start()


def _surrogate(text: str, path: str) -> ValueProblem | None:
    at = lone_surrogate(text)
    if at is None:
        return None
    return ValueProblem(
        shorten(path, 80) or "(value)",
        f"lone surrogate {text[at]!r} at character {at + 1} (half of a UTF-16 pair)",
        "valid Unicode text; pair each \\uD800-\\uDBFF escape with a \\uDC00-\\uDFFF one",
    )


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def value_problem(value: Any, *, max_depth: int = MAX_DEPTH) -> ValueProblem | None:
    """The first problem in a JSON-like ``value`` (mappings, lists, tuples, scalars): a
    string or key holding a lone surrogate, or nesting deeper than ``max_depth``; None when
    there is none. Walks the value without recursion."""
    stack: list[tuple[Any, str, int]] = [(value, "", 0)]
    while stack:
        node, path, depth = stack.pop()
        if isinstance(node, str):
            found = _surrogate(node, path)
            if found is not None:
                return found
            continue
        if not isinstance(node, Mapping | list | tuple):
            continue
        if depth >= max_depth:
            top = path.split(".", 1)[0].split("[", 1)[0] or "(value)"
            return ValueProblem(
                top,
                f"nested deeper than {max_depth} levels",
                f"objects and lists nested at most {max_depth} deep",
            )
        if isinstance(node, Mapping):
            children: list[tuple[Any, str]] = []
            for k, v in node.items():
                key = str(k)
                found = _surrogate(key, _join(path, shorten(key, 40)))
                if found is not None:
                    return found._replace(message="a key holds a " + found.message)
                children.append((v, _join(path, key)))
        else:
            children = [(v, _join(path, i)) for i, v in enumerate(node)]
        stack.extend((v, p, depth + 1) for v, p in reversed(children))
    return None


def encode_utf8(text: str, value: Any, where: str) -> bytes:
    """``text`` (e.g. the canonical JSON of ``value``, to hash) as UTF-8. Text holding a lone
    surrogate cannot be encoded: that is a :class:`DataError` naming ``where`` and the field
    of ``value`` that holds it, not a ``UnicodeEncodeError``."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        problem = value_problem(value, max_depth=1 << 30)
        if problem is None:  # not from a field of value: say where in the text
            problem = _surrogate(text[exc.start :], "") or ValueProblem("", str(exc), "UTF-8")
        raise DataError(
            problem.message, file=where, field=problem.field or None, expected=problem.expected
        ) from None
