"""The ``openai:`` spec's extra request fields: ``extra_body={...}`` (a JSON object) and
``extra.NAME=VALUE`` (read as JSON when it parses, else as a string; these win), merged into
every request body.

What is sent must be JSON a server reads, so a value is refused (a
:class:`~steadyeval.ModelSpecError` naming the option) when it holds ``NaN`` or
``Infinity`` (JSON has neither; ``1e400`` reads as infinity too), an integer outside the
64-bit range servers parse, a lone surrogate, or nesting deeper than :data:`MAX_DEPTH`.
A field the backend writes itself (:data:`~._openai_server.RESERVED_FIELDS`) is refused.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from .._errors import ModelSpecError
from ..items import lone_surrogate
from ._openai_server import RESERVED_FIELDS
from ._spec import echo

__all__ = ["MAX_DEPTH", "extra_fields"]

#: The deepest nesting of lists and objects in an extra field's value.
MAX_DEPTH = 32
_INT64 = 1 << 63


class _NotJSON(ValueError):
    """``NaN``, ``Infinity`` or ``-Infinity``, which Python's reader accepts and JSON not."""


def _refuse_constant(name: str) -> Any:
    raise _NotJSON(name)


def _problem(value: Any) -> str | None:
    """What makes parsed ``value`` unfit to send, walked without recursion; None if nothing."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, float) and not math.isfinite(node):
            return f"the number {node} is not JSON (a value too large for a float reads as it)"
        if isinstance(node, int) and not isinstance(node, bool) and abs(node) >= _INT64:
            return f"an integer of {len(str(abs(node))):,} digits is outside the 64-bit range"
        if isinstance(node, str) and lone_surrogate(node) is not None:
            return "a string holds a lone surrogate (half of a UTF-16 pair)"
        if isinstance(node, dict | list):
            if depth >= MAX_DEPTH:
                return f"it is nested deeper than {MAX_DEPTH} levels"
            if isinstance(node, dict):
                stack.extend((k, depth + 1) for k in node)
                stack.extend((v, depth + 1) for v in node.values())
            else:
                stack.extend((v, depth + 1) for v in node)
    return None


def _parse(where: str, option: str, text: str, *, text_ok: bool) -> Any:
    """The JSON value of ``text``; with ``text_ok``, text that is not JSON is the string."""
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except _NotJSON as exc:
        raise ModelSpecError(
            f"{where}: option {option}: {exc} is not JSON (JSON has no NaN or Infinity); "
            'expected finite numbers, or a quoted string such as "NaN"'
        ) from None
    except RecursionError:
        raise ModelSpecError(
            f"{where}: option {option}: nested deeper than {MAX_DEPTH} levels of lists and objects"
        ) from None
    except json.JSONDecodeError as exc:
        if text_ok:
            return text
        raise ModelSpecError(
            f"{where}: option {option} is not JSON (column {exc.colno}: {exc.msg}); expected "
            'a JSON object, e.g. {"repeat_penalty": 1.0}'
        ) from None
    problem = _problem(value)
    if problem is not None:
        raise ModelSpecError(f"{where}: option {option}: {problem}; expected JSON a server reads")
    return value


def extra_fields(where: str, options: Mapping[str, str]) -> tuple[tuple[str, Any], ...]:
    """The extra request fields of ``extra_body`` and ``extra.NAME`` options (these win),
    sorted by name; ``where`` names the spec in messages."""
    fields: dict[str, Any] = {}
    if "extra_body" in options:
        body = _parse(where, "extra_body", options["extra_body"], text_ok=False)
        if not isinstance(body, dict):
            raise ModelSpecError(
                f"{where}: option extra_body must be a JSON object, e.g. "
                f'{{"repeat_penalty": 1.0}}, got a {type(body).__name__}'
            )
        fields.update(body)
    for key, value in options.items():
        if key.startswith("extra."):
            fields[key[6:]] = _parse(where, echo(key, 40), value, text_ok=True)
    bad = sorted(k for k in fields if k in RESERVED_FIELDS or not k)
    if bad:
        raise ModelSpecError(
            f"{where}: extra field '{echo(bad[0], 40)}' is written by the backend itself; extra "
            f"fields may not be empty or any of {', '.join(sorted(RESERVED_FIELDS))}"
        )
    return tuple(sorted(fields.items()))
