"""The checks a conditions dataclass runs on itself, read from its fields' declared types and
bounds: the same declarations the run config's YAML models are built from
(:func:`steadyeval.run`'s ``ConditionConfig``), so a range is written once for both."""

from __future__ import annotations

import math
import types
from collections.abc import Mapping
from dataclasses import fields
from typing import Annotated, Any, Literal, Union, get_args, get_origin, get_type_hints

from pydantic import Field

from .._errors import ConfigError
from .._limits import MAX_SEED

__all__ = ["SEED", "check_fields", "field_hints", "text_tuple"]

#: A seed: an integer in ``0..MAX_SEED``.
SEED = Annotated[int, Field(ge=0, le=MAX_SEED)]

_HINTS: dict[type, dict[str, Any]] = {}


def field_hints(cls: type) -> dict[str, Any]:
    """Each field's type hint with its ``Annotated`` bounds (computed once per class)."""
    if cls not in _HINTS:
        hints = get_type_hints(cls, include_extras=True)
        _HINTS[cls] = {f.name: hints[f.name] for f in fields(cls)}
    return _HINTS[cls]


def check_fields(obj: Any, where: str) -> None:
    """Raise :class:`ConfigError` (prefixed with ``where``) for the first field of ``obj``
    whose value its hint refuses; fields of other dataclasses are checked by themselves."""
    for name, hint in field_hints(type(obj)).items():
        problem = _problem(name, getattr(obj, name), hint)
        if problem is not None:
            raise ConfigError(f"{where}: {problem}")


def _bounds(metadata: tuple[Any, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for m in metadata:
        for part in getattr(m, "metadata", [m]):
            for key in ("ge", "gt", "le", "lt", "max_length"):
                if getattr(part, key, None) is not None:
                    out[key] = getattr(part, key)
    return out


def _problem(name: str, value: Any, hint: Any) -> str | None:
    """Why ``value`` cannot be field ``name`` of type ``hint``, or None."""
    bounds: dict[str, Any] = {}
    if get_origin(hint) is Annotated:
        hint, *metadata = get_args(hint)
        bounds = _bounds(tuple(metadata))
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        options = get_args(hint)
        if value is None and type(None) in options:
            return None
        problems = [_problem(name, value, h) for h in options if h is not type(None)]
        return None if None in problems else problems[0]
    if origin is Literal:
        allowed = get_args(hint)
        if value in allowed:
            return None
        return f"{name} must be one of {', '.join(map(repr, allowed))}; got {value!r}"
    if hint is bool:
        return (
            None if isinstance(value, bool) else f"{name} must be true or false; got {value!r:.40}"
        )
    if hint is int:
        return _int_problem(name, value, bounds)
    if hint is float:
        return _float_problem(name, value, bounds)
    if hint is str:
        if not isinstance(value, str):
            return f"{name} must be text; got {type(value).__name__}"
        return _length_problem(name, len(value), bounds, "characters")
    if origin is tuple:
        if not isinstance(value, tuple) or not all(isinstance(x, str) for x in value):
            return f"{name} must be a list of text; got {value!r:.40}"
        return _length_problem(name, len(value), bounds, "entries")
    if origin is Mapping and not _text_map(value):
        shown = dict(value) if isinstance(value, Mapping) else value
        return f"{name} must map text to text; got {shown!r:.40}"
    return None


def _text_map(value: Any) -> bool:
    return isinstance(value, Mapping) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    )


def text_tuple(value: Any) -> Any:
    """``value`` (a list or tuple of text) as a tuple; anything else as it is, for
    :func:`check_fields` to refuse (text is not split into its characters)."""
    return tuple(value) if isinstance(value, list | tuple) else value


def _int_problem(name: str, value: Any, bounds: dict[str, Any]) -> str | None:
    low = bounds.get("ge", bounds["gt"] + 1 if "gt" in bounds else None)
    high = bounds.get("le", bounds["lt"] - 1 if "lt" in bounds else None)
    is_int = isinstance(value, int) and not isinstance(value, bool)
    fits = is_int and (low is None or value >= low) and (high is None or value <= high)
    if fits:
        return None
    if low is not None and high is not None:
        wanted = f"an integer in {low}..{high:,}"
    elif low is not None:
        wanted = f"an integer >= {low}"
    else:
        wanted = "an integer" if high is None else f"an integer <= {high:,}"
    return f"{name} must be {wanted}; got {str(value)[:40]}"


def _float_problem(name: str, value: Any, bounds: dict[str, Any]) -> str | None:
    number = isinstance(value, int | float) and not isinstance(value, bool)
    ok = number and math.isfinite(value)
    parts = []
    if "ge" in bounds:
        ok = ok and value >= bounds["ge"]
        parts.append(f">= {bounds['ge']}")
    if "gt" in bounds:
        ok = ok and value > bounds["gt"]
        parts.append(f"> {bounds['gt']}")
    if "le" in bounds:
        ok = ok and value <= bounds["le"]
        parts.append(f"<= {bounds['le']}")
    if ok:
        return None
    wanted = " ".join(["a finite number", " and ".join(parts)]).strip()
    return f"{name} must be {wanted}; got {str(value)[:40]}"


def _length_problem(name: str, length: int, bounds: dict[str, Any], unit: str) -> str | None:
    limit = bounds.get("max_length")
    if limit is None or length <= limit:
        return None
    return f"{name} is {length:,} {unit}, over the limit of {limit:,} {unit}"
