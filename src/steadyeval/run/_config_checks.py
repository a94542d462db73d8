"""Run-config checks that span values (a model listed twice, a condition name used twice, a
shot pool no one defined, a path that is not UTF-8 text): each raises :class:`ValueAt` with
the path of the offending value, so the message names its key and line (or flag), and all
run when the config is read, before any model loads."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from .._errors import ModelSpecError
from ..items import lone_surrogate, shorten
from ._config_errors import ValueAt

__all__ = [
    "MAX_CONFIG_INT",
    "MAX_CONFIG_TEXT",
    "check_models",
    "check_names_and_pools",
    "check_paths",
    "odd_value",
]

#: The largest integer (by magnitude) any config value may hold: 64-bit, as the results
#: table and the JSON files store it. Counts and seeds have smaller bounds of their own.
MAX_CONFIG_INT = 2**63 - 1
#: The longest text any config value may hold (a template has a smaller bound of its own).
MAX_CONFIG_TEXT = 1_000_000


def _check_spec(index: int, spec: str) -> None:
    """A spec's text, syntax and backend (its options are the backend's to check, when it
    loads)."""
    from ..models import parse_model_spec, registered_backends

    if lone_surrogate(spec) is not None:
        raise ValueAt(
            (index,),
            f"{shorten(repr(spec))} holds bytes that are not UTF-8 text; "
            "expected BACKEND:NAME_OR_PATH in UTF-8",
        )
    try:
        backend = parse_model_spec(spec).backend
    except ModelSpecError as exc:
        raise ValueAt((index,), str(exc)) from None
    if backend not in registered_backends():
        raise ValueAt(
            (index,),
            f"unknown backend {shorten(repr(backend))}; known backends: "
            f"{', '.join(registered_backends())}",
        )


def check_models(specs: Sequence[str]) -> None:
    """Each spec valid and listed once (locations relative to ``models``)."""
    first: dict[str, int] = {}
    for i, spec in enumerate(specs):
        _check_spec(i, spec)
        if spec in first:
            raise ValueAt(
                (i,),
                f"model {shorten(repr(spec))} is listed twice (also models[{first[spec]}]); "
                "list each model once",
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
