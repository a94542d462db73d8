"""Reading a model spec's option values: one set of checks for every backend's options.

Numbers are read strictly (ASCII digits, an optional fraction and exponent: no ``inf``,
``nan``, ``1_000`` or other scripts' digits) and must lie in a stated range; a flag is
``true`` or ``false``; a choice is one of its values. An unknown option names the closest
allowed one. Every failure is a :class:`~steadyeval.ModelSpecError` naming the spec, the
option and what was expected, echoing the value cut to a few dozen characters.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping

from .._errors import ModelSpecError
from ._known import INPUT_FORMATS
from ._spec import ModelSpec, echo, spec_where

__all__ = [
    "check_known",
    "choice_option",
    "closest",
    "flag_option",
    "float_option",
    "input_format_option",
    "int_option",
    "text_option",
]

_INT = re.compile(r"[0-9]{1,30}")
_FLOAT = re.compile(r"(?:[0-9]{1,30}(?:\.[0-9]{0,30})?|\.[0-9]{1,30})(?:[eE][+-]?[0-9]{1,3})?")


def _fail(spec: ModelSpec, key: str, value: str, expected: str) -> ModelSpecError:
    return ModelSpecError(
        f"{spec_where(spec)}: option {key} must be {expected}, got '{echo(value, 40)}'"
    )


def closest(word: str, choices: Iterable[str]) -> str:
    """``; did you mean 'X'?`` for the choice closest to ``word``, else an empty string."""
    match = difflib.get_close_matches(word[:100], sorted(choices), n=1, cutoff=0.6)
    return f"; did you mean '{match[0]}'?" if match else ""


def check_known(spec: ModelSpec, allowed: Iterable[str], *, prefixes: Iterable[str] = ()) -> None:
    """Refuse an option not in ``allowed`` (nor starting with one of ``prefixes``), naming
    the closest allowed one and listing them all."""
    names = sorted(allowed)
    starts = tuple(prefixes)
    unknown = sorted(k for k in spec.options if k not in names and not k.startswith(starts))
    if unknown:
        key = unknown[0]
        listed = ", ".join(names + [f"{p}NAME" for p in starts])
        raise ModelSpecError(
            f"{spec_where(spec)}: unknown option '{echo(key, 40)}'{closest(key, names)} "
            f"(allowed: {listed})"
        )


def int_option(
    spec: ModelSpec, key: str, value: str, *, low: int = 1, high: int, unit: str = ""
) -> int:
    """``value`` as an integer from ``low`` to ``high`` (``unit`` names what it counts)."""
    number = int(value) if _INT.fullmatch(value) else None
    if number is None or not low <= number <= high:
        sign = {0: "a non-negative integer", 1: "a positive integer"}.get(low, "an integer")
        least = "" if low in (0, 1) else f" of at least {low:,}"
        what = f" {unit}" if unit else ""
        raise _fail(spec, key, value, f"{sign}{least} (at most {high:,}{what})")
    return number


def float_option(
    spec: ModelSpec,
    key: str,
    value: str,
    *,
    low: float,
    high: float,
    low_open: bool = False,
    unit: str = "",
) -> float:
    """``value`` as a finite number in ``[low, high]`` (``(low, high]`` with ``low_open``)."""
    number = float(value) if _FLOAT.fullmatch(value) else None
    if number is None or not (low < number if low_open else low <= number) or number > high:
        what = f" {unit}" if unit else ""
        span = f"above {low:g} and at most" if low_open else f"from {low:g} to"
        raise _fail(spec, key, value, f"a finite number {span} {high:g}{what}")
    return number


def flag_option(spec: ModelSpec, key: str, value: str) -> bool:
    """``true`` or ``false`` (any case)."""
    if value.lower() not in ("true", "false"):
        raise _fail(spec, key, value, "true or false")
    return value.lower() == "true"


def choice_option(spec: ModelSpec, key: str, value: str, choices: Iterable[str]) -> str:
    """One of ``choices``, else an error naming them and the closest."""
    allowed = list(choices)
    if value not in allowed:
        raise ModelSpecError(
            f"{spec_where(spec)}: option {key} must be one of {', '.join(allowed)}, got "
            f"'{echo(value, 40)}'{closest(value, allowed)}"
        )
    return value


def text_option(
    spec: ModelSpec, key: str, options: Mapping[str, str], *, limit: int = 256
) -> str | None:
    """A free-text option (a revision, a label): absent is None; present, 1 to ``limit``
    printable characters with no whitespace."""
    value = options.get(key)
    if value is None:
        return None
    if (
        not value
        or len(value) > limit
        or not value.isprintable()
        or any(c.isspace() for c in value)
    ):
        raise _fail(spec, key, value, f"1 to {limit} printable characters without spaces")
    return value


def input_format_option(spec: ModelSpec, options: Mapping[str, str]) -> str | None:
    """The ``input_format`` option: absent or empty is None, else one of
    :data:`~._known.INPUT_FORMATS`."""
    value = options.get("input_format")
    return choice_option(spec, "input_format", value, INPUT_FORMATS) if value else None
