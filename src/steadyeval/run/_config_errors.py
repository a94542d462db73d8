"""Pydantic validation errors as located messages: each names the YAML file and line (or the
flag) of the value, the key path, and the allowed keys or values."""

from __future__ import annotations

import typing
from collections.abc import Mapping, Sequence
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from ..items import shorten

__all__ = ["ValueAt", "format_errors", "located"]


class ValueAt(ValueError):
    """A validator's error about a value inside the one it validates (e.g. a model
    validator's about ``conditions[1].name``): ``loc`` is the path from there, so the
    message names that value's key and line."""

    def __init__(self, loc: Sequence[str | int], message: str) -> None:
        super().__init__(message)
        self.loc = tuple(loc)


def _node_line(root: Any, loc: Sequence[Any]) -> int | None:
    """The 1-based line of the YAML node at ``loc`` (pydantic's error location)."""
    node, line = root, None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if k.value == part:
                    line = k.start_mark.line + 1
                    node = v
                    break
            else:
                return line if line is not None else node.start_mark.line + 1
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if part >= len(node.value):
                return line
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            break
    return line


def _where(loc: Sequence[Any], source: str, root: Any, given: Mapping[str, str] | None) -> str:
    """Where the value at ``loc`` came from: the flag that set it, else the file and line."""
    for n in (2, 1):
        key = ".".join(str(p) for p in loc[:n])
        if len(loc) >= n and given and key in given:
            flag = given[key]
            return f"flag {flag}" if flag.startswith("-") else f"<overrides> {flag}"
    line = _node_line(root, loc) if root is not None else None
    return source if line is None else f"{source}, line {line}"


def _missing(key: str, where: str, source: str, flags: Mapping[str, str]) -> str:
    """A required key that is not given: name its flag (and the config key)."""
    flag = flags.get(key)
    if flag is None or not flag.startswith("-"):
        return f"{where}: {key}: Field required"
    if source == "<flags>":
        return f"{flag} is required (or give a config file with {key}:)"
    return f"{where}: {key}: Field required (give {key}: in the file, or {flag})"


def located(
    loc: Sequence[Any],
    message: str,
    *,
    source: str,
    root: Any,
    what: str,
    given: Mapping[str, str] | None = None,
) -> str:
    """One error about the value at ``loc``, located as :func:`format_errors` does."""
    key = ".".join(shorten(str(p), 40) for p in loc) or "(top level)"
    return f"invalid {what}:\n  {_where(loc, source, root, given)}: {key}: {shorten(message, 400)}"


def format_errors(
    exc: ValidationError,
    *,
    source: str,
    root: Any,
    model: type[BaseModel],
    what: str,
    given: Mapping[str, str] | None = None,
    flags: Mapping[str, str] | None = None,
) -> str:
    """Pydantic's errors as located lines (at most five); ``flags`` maps a key to the flag
    that sets it, for a required key that is missing."""
    lines = []
    errors = _relevant(exc.errors(), model)
    for err, loc in errors[:5]:
        inner = (err.get("ctx") or {}).get("error")
        if isinstance(inner, ValueAt):
            loc = [*loc, *inner.loc]
        key = ".".join(shorten(str(p), 40) for p in loc) or "(top level)"
        where = _where(loc, source, root, given)
        msg = err["msg"]
        if err["type"] == "missing" and len(loc) == 1:
            lines.append(_missing(key, where, source, flags or {}))
            continue
        if err["type"] == "extra_forbidden":
            parent = _model_at(model, loc[:-1])
            allowed = ", ".join(sorted(parent.model_fields)) if parent is not None else "see docs"
            msg = f"unknown key; allowed keys here: {allowed}"
        elif err["type"] == "value_error":
            msg = msg.removeprefix("Value error, ")
        elif err["type"] == "string_too_short" and err.get("input") == "":
            msg = "empty; expected a value"
        elif isinstance(err.get("input"), str | int | float | bool):
            msg = f"{msg} (got {shorten(repr(err['input']))})"
        lines.append(f"{where}: {key}: {shorten(msg, 400)}")
    more = len(errors) - 5
    if more > 0:
        lines.append(f"... and {more} more")
    return f"invalid {what}:\n  " + "\n  ".join(lines)


_TAGS = frozenset({"str", "int", "float", "bool", "list", "dict", "tuple", "none"})


def _model_names(model: type[BaseModel]) -> set[str]:
    """The class names of ``model`` and of every model its fields hold: pydantic tags a
    union member's errors with them (a key the user wrote, e.g. ``A:``, is not one)."""
    names: set[str] = set()
    todo: list[Any] = [model]
    while todo:
        t = todo.pop()
        if isinstance(t, type) and issubclass(t, BaseModel):
            if t.__name__ in names:
                continue
            names.add(t.__name__)
            todo.extend(f.annotation for f in t.model_fields.values())
        else:
            todo.extend(typing.get_args(t))
    return names


def _relevant(
    errors: Sequence[Any], model: type[BaseModel] | None = None
) -> list[tuple[Any, list[Any]]]:
    """Each error with its location in keys (pydantic's union-member and model tags left
    out); where a union gave several errors for one key (or inside it), the type mismatches
    of the members that did not apply are dropped, and where every member was a type
    mismatch they are one error (its message naming each member's type)."""
    tags = _TAGS | (_model_names(model) if model is not None else set())
    out = []
    for err in errors:
        loc = [p for p in err["loc"] if not (isinstance(p, str) and (p in tags or "[" in p))]
        out.append((err, loc))

    def is_type(err: Any) -> bool:
        return str(err["type"]).endswith("_type")

    kept: list[tuple[Any, list[Any]]] = []
    merged: dict[tuple[Any, ...], int] = {}
    for err, loc in out:
        inside = [other for other, where in out if where[: len(loc)] == loc]
        if not is_type(err) or len(inside) == 1:
            kept.append((err, loc))
        elif all(is_type(o) and where == loc for o, where in out if where[: len(loc)] == loc):
            # every member of the union refused the value's type: one error naming them all
            key = tuple(loc)
            if key not in merged:
                merged[key] = len(kept)
                kept.append(({**err}, loc))
            else:
                first = kept[merged[key]][0]
                first["msg"] += " or " + str(err["msg"]).removeprefix("Input should be ")
    return kept


def _model_at(model: type[BaseModel], loc: Sequence[Any]) -> type[BaseModel] | None:
    """The pydantic model that validates the mapping at ``loc`` (for its allowed keys)."""
    for part in loc:
        if isinstance(part, int):
            continue
        field = model.model_fields.get(str(part))
        if field is None:
            return None
        ann = field.annotation
        candidates = [ann, *getattr(ann, "__args__", ())]
        for c in candidates:
            inner = getattr(c, "__args__", (c,))
            sub = next(
                (x for x in (c, *inner) if isinstance(x, type) and issubclass(x, BaseModel)), None
            )
            if sub is not None:
                model = sub
                break
        else:
            return None
    return model
