"""Run-config checks that span values (a model listed twice, a condition name used twice, a
shot pool no one defined, a path that is not UTF-8 text): each raises :class:`ValueAt` with
the path of the offending value, so the message names its key and line (or flag), and all
run when the config is read, before any model loads."""

from __future__ import annotations

import math
import types
import typing
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from ..items import lone_surrogate, shorten
from ._config_errors import ValueAt

if TYPE_CHECKING:
    from ..models import ModelSpec

__all__ = [
    "MAX_CONFIG_INT",
    "MAX_CONFIG_TEXT",
    "check_models",
    "check_names_and_pools",
    "check_paths",
    "odd_value",
    "true_for_a_number",
]

#: The largest integer (by magnitude) any config value may hold: 64-bit, as the results
#: table and the JSON files store it. Counts and seeds have smaller bounds of their own.
MAX_CONFIG_INT = 2**63 - 1
#: The longest text any config value may hold (a template has a smaller bound of its own).
MAX_CONFIG_TEXT = 1_000_000


def check_models(specs: Sequence[ModelSpec], *, backends: bool = True) -> None:
    """Each spec's backend known (with ``backends``; its options are the backend's to check,
    when it loads) and each spec listed once (locations relative to ``models``; the text was
    parsed by the field's type)."""
    from ..models import registered_backends

    first: dict[ModelSpec, int] = {}
    for i, spec in enumerate(specs):
        if backends and spec.backend not in registered_backends():
            raise ValueAt(
                (i,),
                f"unknown backend {shorten(repr(spec.backend))}; known backends: "
                f"{', '.join(registered_backends())}",
            )
        if spec in first:
            raise ValueAt(
                (i,),
                f"model {shorten(repr(str(spec)))} is listed twice (also "
                f"models[{first[spec]}]); list each model once",
            )
        first[spec] = i


def check_paths(sources: Sequence[tuple[tuple[str | int, ...], str]]) -> None:
    """Each ``(location, path)`` is UTF-8 text (a path goes into the run's JSON files)."""
    for loc, path in sources:
        if lone_surrogate(path) is not None:
            raise ValueAt(
                loc, f"the path {path!r} holds bytes that are not UTF-8 text; rename the file"
            )


def check_names_and_pools(conditions: Sequence[Any], pools: Mapping[str, Any]) -> None:
    """Condition names unique; every shot source a pool the config defines (``default``: the
    data itself). ``conditions`` are ``ConditionConfig``s."""
    first: dict[str, int] = {}
    known = ["default", *pools]
    for i, c in enumerate(conditions):
        if c.name in first:
            raise ValueAt(
                ("conditions", i, "name"),
                f"condition name {shorten(repr(c.name))} is also conditions[{first[c.name]}]'s; "
                "give each condition its own name",
            )
        first[c.name] = i
        if c.shots.n and c.shots.source not in known:
            raise ValueAt(
                ("conditions", i, "shots", "source"),
                f"unknown shot pool {shorten(repr(c.shots.source))}; pools: "
                f"{', '.join(known)} (define more under shot_pools)",
            )


def _leaf_problem(value: Any) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and abs(value) > MAX_CONFIG_INT:
        digits = len(str(abs(value))) if abs(value) < 10**4000 else "thousands of"
        return f"an integer of {digits} digits; expected a number of at most 2**63 - 1"
    if isinstance(value, float) and not math.isfinite(value):
        return f"{value} is not a finite number; expected a finite number"
    if isinstance(value, str):
        if lone_surrogate(value) is not None:
            return (
                f"{shorten(repr(value))} holds a lone surrogate (bytes that are not UTF-8 "
                "text); expected valid Unicode text"
            )
        if len(value) > MAX_CONFIG_TEXT:
            return (
                f"text of {len(value):,} characters, over the limit of {MAX_CONFIG_TEXT:,} "
                "for one config value"
            )
    return None


def odd_value(data: Any) -> tuple[tuple[str | int, ...], str] | None:
    """The location and problem of the first value in ``data`` (a config as plain data, from
    YAML, flags or Python) that no config accepts: an integer beyond 64 bits, a number that is
    not finite (NaN, infinity), text holding a lone surrogate or longer than
    :data:`MAX_CONFIG_TEXT`. Walked without recursion, each shared value once."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(data, ())]
    seen: set[int] = set()
    while stack:
        value, loc = stack.pop()
        if isinstance(value, Mapping | list | tuple):
            if id(value) in seen:
                continue
            seen.add(id(value))
            if isinstance(value, Mapping):
                for k, v in value.items():
                    key_problem = _leaf_problem(k) if isinstance(k, str) else None
                    if key_problem is not None:
                        return loc, f"a key: {key_problem}"
                    stack.append((v, (*loc, str(k))))
            else:
                stack.extend((v, (*loc, i)) for i, v in enumerate(value))
            continue
        problem = _leaf_problem(value)
        if problem is not None:
            return loc, problem
    return None


def _args(annotation: Any) -> tuple[Any, ...]:
    """The members of a union (``X | None`` -> ``(X, None)``), else the annotation alone; each
    without its ``Annotated`` bounds."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        members = typing.get_args(annotation)
    else:
        members = (annotation,)
    return tuple(
        typing.get_args(m)[0] if typing.get_origin(m) is typing.Annotated else m for m in members
    )


def _nested(annotation: Any) -> tuple[type[BaseModel] | None, type[BaseModel] | None]:
    """The model a field holds directly, and the model its list holds (or None)."""
    direct = item = None
    for arg in _args(annotation):
        if isinstance(arg, type) and issubclass(arg, BaseModel):
            direct = arg
        elif typing.get_origin(arg) is list:
            inner = [a for a in typing.get_args(arg) for a in _args(a)]
            item = next(
                (a for a in inner if isinstance(a, type) and issubclass(a, BaseModel)), None
            )
    return direct, item


def true_for_a_number(
    model: type[BaseModel], data: Any, loc: tuple[str | int, ...] = ()
) -> tuple[str | int, ...] | None:
    """The location of the first ``true``/``false`` given where ``model`` wants a number (an
    ``int`` or ``float`` field, or a list of them): pydantic would read it as 1 or 0, so
    ``seed: true`` ran with seed 1. Walks nested models and lists of models."""
    if not isinstance(data, Mapping):
        return None
    for name, field in model.model_fields.items():
        if name not in data:
            continue
        value, args = data[name], _args(field.annotation)
        numbers = {int, float} & set(args)
        lists = [typing.get_args(a) for a in args if typing.get_origin(a) is list]
        if numbers and bool not in args and isinstance(value, bool):
            return (*loc, name)
        if isinstance(value, list) and any({int, float} & set(inner) for inner in lists):
            for i, v in enumerate(value):
                if isinstance(v, bool):
                    return (*loc, name, i)
        direct, item = _nested(field.annotation)
        found = None
        if direct is not None:
            found = true_for_a_number(direct, value, (*loc, name))
        if found is None and item is not None and isinstance(value, list):
            for i, v in enumerate(value):
                found = found or true_for_a_number(item, v, (*loc, name, i))
        if found is not None:
            return found
    return None
