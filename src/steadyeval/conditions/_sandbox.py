"""The Jinja2 sandbox prompt templates render in, with limits a template cannot get past.

Jinja's sandbox stops a template from reaching Python's internals, but not from asking for
memory or time: ``{{ 'x' * 10**10 }}``, ``{{ 'x'|center(10**10) }}``, ``{{ 9**9**9 }}``,
``'{:>9999999999}'.format(1)``, nested ``range`` loops or a macro that calls itself twice
per level would allocate gigabytes or run for hours (some of them while the config is read:
Jinja folds constant expressions when it compiles). Here:

* a number a template passes to a call or a filter (a width, a count), or multiplies text or
  a list by, is at most :data:`MAX_TEMPLATE_NUMBER`, and a power at most
  :data:`MAX_POWER_BITS` bits; a format string's width or precision likewise;
* one render takes at most :data:`MAX_TEMPLATE_STEPS` steps (calls, filters, and the
  items of every ``range``);
* one render writes at most :data:`MAX_RENDERED_CHARS` characters, and a ``namespace``
  attribute holds at most as many.

Each limit raises :class:`TemplateLimitError` (which the caller turns into a
:class:`~steadyeval.ConfigError` naming the template), checked before the operation
allocates. Real templates use none of this.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import wraps
from typing import Any

from jinja2 import StrictUndefined
from jinja2.exceptions import SecurityError
from jinja2.sandbox import ImmutableSandboxedEnvironment, safe_range
from jinja2.utils import Namespace

__all__ = [
    "MAX_POWER_BITS",
    "MAX_RENDERED_CHARS",
    "MAX_TEMPLATE_NUMBER",
    "MAX_TEMPLATE_STEPS",
    "TemplateLimitError",
    "bounded_environment",
    "render_bounded",
]

#: The largest number a template may pass as a width or count, or repeat text or a list by.
MAX_TEMPLATE_NUMBER = 1_000_000
#: The largest power (``a ** b``) a template may compute, in bits.
MAX_POWER_BITS = 4096
#: Steps (calls, filters, ``range`` items) one render may take.
MAX_TEMPLATE_STEPS = 200_000
#: Characters one render may write (a prompt of a few long items and many shots is far less).
MAX_RENDERED_CHARS = 64 * 1024 * 1024

#: A width or precision in a %-format or a str.format spec (``%9999s``, ``{:>9999}``).
_WIDTH = re.compile(r"(\d{7,})")
_steps: ContextVar[list[int] | None] = ContextVar("_steps", default=None)


class TemplateLimitError(SecurityError):
    """A template asked for more memory or time than a prompt template may take."""


def _number(value: Any, what: str) -> None:
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_TEMPLATE_NUMBER:
        raise TemplateLimitError(
            f"{what}: the number {str(value)[:30]} is over the limit of "
            f"{MAX_TEMPLATE_NUMBER:,} for a template"
        )
    if isinstance(value, str) and _WIDTH.search(value) and ("%" in value or "{" in value):
        raise TemplateLimitError(f"{what}: a format width over {MAX_TEMPLATE_NUMBER:,}")


def _step(n: int = 1) -> None:
    counter = _steps.get()
    if counter is None:
        return
    counter[0] += n
    if counter[0] > MAX_TEMPLATE_STEPS:
        raise TemplateLimitError(
            f"the template takes more than {MAX_TEMPLATE_STEPS:,} steps (calls and loop items)"
        )


def _args(args: tuple[Any, ...], kwargs: dict[str, Any], what: str) -> None:
    for value in (*args, *kwargs.values()):
        _number(value, what)


def _bounded_filter(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    # a filter's first arguments: the context or environment when it asks for one, the value
    first = 2 if getattr(func, "jinja_pass_arg", None) is not None else 1

    @wraps(func)  # keeps jinja_pass_arg
    def checked(*args: Any, **kwargs: Any) -> Any:
        _step()
        _args(args[first:], kwargs, f"filter {name}")
        if name == "format" and len(args) >= first and isinstance(args[first - 1], str):
            _number(args[first - 1], "filter format")
        return func(*args, **kwargs)

    return checked


def _counted_range(*args: int) -> range:
    rng = safe_range(*args)  # at most jinja2.sandbox.MAX_RANGE items
    _step(len(rng))
    return rng


def _length(value: Any) -> int:
    return len(value) if isinstance(value, str | list | tuple) else 0


class _BoundedNamespace(Namespace):
    """``namespace()``, whose attributes hold at most :data:`MAX_RENDERED_CHARS` of text
    (doubling a string through a namespace in a loop is the one way text grows across
    iterations)."""

    def __setitem__(self, name: str, value: Any) -> None:
        if _length(value) > MAX_RENDERED_CHARS:
            raise TemplateLimitError(
                f"a namespace value of {_length(value):,} characters or items, over the limit "
                f"of {MAX_RENDERED_CHARS:,}"
            )
        super().__setitem__(name, value)


class _Bounded(ImmutableSandboxedEnvironment):
    intercepted_binops = frozenset({"*", "**", "%"})

    def call_binop(self, context: Any, op: str, left: Any, right: Any) -> Any:
        _step()
        if op == "*":
            count, seq = (right, left) if _length(left) else (left, right)
            if _length(seq) and isinstance(count, int):
                _number(count, "'*'")
                if _length(seq) * count > MAX_RENDERED_CHARS:
                    raise TemplateLimitError(
                        f"'*' would make {_length(seq) * count:,} characters or items, over "
                        f"the limit of {MAX_RENDERED_CHARS:,}"
                    )
        elif op == "**" and isinstance(left, int) and isinstance(right, int):
            bits = right * math.log2(abs(left)) if abs(left) > 1 and right > 0 else 0.0
            if bits > MAX_POWER_BITS:
                raise TemplateLimitError(f"'**' would make a number of over {MAX_POWER_BITS} bits")
        elif op == "%" and isinstance(left, str):
            _number(left, "'%'")
            _args(right if isinstance(right, tuple) else (right,), {}, "'%'")
        return {"*": operator.mul, "**": operator.pow, "%": operator.mod}[op](left, right)

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        _step()
        _args(args, kwargs, f"a call of {getattr(__obj, '__name__', 'a function')}")
        fmt = getattr(getattr(__obj, "__wrapped__", None), "__self__", None)
        if isinstance(fmt, str):  # str.format / format_map, wrapped by the sandbox
            _number(fmt, "str.format")
        return super().call(__context, __obj, *args, **kwargs)


def bounded_environment() -> ImmutableSandboxedEnvironment:
    """A new sandboxed environment with the limits of this module (trailing newlines kept,
    undefined variables an error, no autoescaping)."""
    env = _Bounded(keep_trailing_newline=True, undefined=StrictUndefined, autoescape=False)
    env.filters = {name: _bounded_filter(name, f) for name, f in env.filters.items()}
    env.globals["range"] = _counted_range
    env.globals["namespace"] = _BoundedNamespace
    return env


@contextmanager
def _budget() -> Iterator[None]:
    token = _steps.set([0])
    try:
        yield
    finally:
        _steps.reset(token)


def render_bounded(template: Any, variables: dict[str, Any]) -> str:
    """``template`` (compiled in :func:`bounded_environment`) rendered with ``variables``,
    within :data:`MAX_TEMPLATE_STEPS` and :data:`MAX_RENDERED_CHARS`."""
    parts: list[str] = []
    size = 0
    with _budget():
        for chunk in template.generate(**variables):
            size += len(chunk)
            if size > MAX_RENDERED_CHARS:
                raise TemplateLimitError(
                    f"the template writes more than {MAX_RENDERED_CHARS:,} characters"
                )
            parts.append(chunk)
    return "".join(parts)
