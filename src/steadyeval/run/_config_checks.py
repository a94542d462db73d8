"""Run-config checks that span values (a model listed twice, a condition name used twice, a
shot pool no one defined, a path that is not UTF-8 text): each raises :class:`ValueAt` with
the path of the offending value, so the message names its key and line (or flag), and all
run when the config is read, before any model loads."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .._errors import ModelSpecError
from ..items import lone_surrogate, shorten
from ._config_errors import ValueAt

__all__ = ["check_models", "check_names_and_pools", "check_paths"]


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
