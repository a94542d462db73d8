"""Reading a YAML config file safely: located syntax errors, and limits a hostile file cannot
get past. The file must be a regular file of at most :data:`MAX_YAML_BYTES`; it is composed
once and checked before any value is built: aliases are counted at every use (values and
characters), so a few hundred bytes of nested aliases (an "alias bomb") are refused in
milliseconds instead of expanding to gigabytes; nesting, recursive aliases, a key given twice,
text that is not valid Unicode, integers too long to be a count or a seed, numbers that are
not finite and dates that do not exist are refused too, each naming its line."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import yaml
from yaml.reader import ReaderError

from .._errors import ConfigError
from .._files import read_text_file
from ..items import lone_surrogate, shorten

__all__ = [
    "MAX_YAML_BYTES",
    "MAX_YAML_CHARS",
    "MAX_YAML_DEPTH",
    "MAX_YAML_NODES",
    "check_nodes",
    "read_yaml",
]

#: Most values (scalars, lists, mappings; keys count) a config may expand to, each alias
#: counted at every place it is used. Real configs hold hundreds.
MAX_YAML_NODES = 100_000
#: Most characters of text a config may expand to, each alias counted at every use (a long
#: string repeated through nested aliases is a bomb too).
MAX_YAML_CHARS = 32 * 1024 * 1024
#: Deepest nesting of lists and mappings in a config.
MAX_YAML_DEPTH = 100
#: The largest YAML file read (``STEADYEVAL_MAX_CONFIG_MB`` raises it).
MAX_YAML_BYTES = 16 * 1024 * 1024
#: The longest integer (in characters) a YAML file may hold: 2**63 has 19 digits.
MAX_INT_CHARS = 40

_INT, _FLOAT, _TIME = (f"tag:yaml.org,2002:{t}" for t in ("int", "float", "timestamp"))


def _line(node: yaml.Node) -> int:
    return int(node.start_mark.line) + 1


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _scalar_problem(node: yaml.ScalarNode) -> str | None:
    """Why the scalar ``node`` cannot be built into a plain value, or None."""
    value = str(node.value)
    at = lone_surrogate(value)
    if at is not None:
        return (
            f"{shorten(repr(value))} holds a lone surrogate {value[at]!r} (half of a UTF-16 "
            "pair); expected valid Unicode text"
        )
    if node.tag == _INT and len(value) > MAX_INT_CHARS:
        return (
            f"an integer of {len(value):,} characters ({shorten(value, 30)}); expected at most "
            f"{MAX_INT_CHARS} (counts and seeds are far smaller)"
        )
    if node.tag not in (_FLOAT, _TIME):
        return None
    loader = yaml.SafeLoader("")
    try:
        if node.tag == _FLOAT and not math.isfinite(loader.construct_yaml_float(node)):
            return f"{shorten(value, 30)} is not a finite number; expected a finite number"
        if node.tag == _TIME:
            loader.construct_yaml_timestamp(node)
    except (ValueError, OverflowError) as exc:
        return f"{shorten(repr(value))} is not a valid date or time ({exc}); quote it as text"
    finally:
        loader.dispose()
    return None


def _check_leaf(node: yaml.Node, where: str) -> None:
    if isinstance(node, yaml.ScalarNode):
        problem = _scalar_problem(node)
        if problem is not None:
            raise ConfigError(f"{where}, line {_line(node)}: {problem}")
    elif isinstance(node, yaml.MappingNode):
        first: dict[tuple[str, str], int] = {}
        for k, _ in node.value:
            if not isinstance(k, yaml.ScalarNode) or k.tag == "tag:yaml.org,2002:merge":
                continue
            key = (str(k.tag), str(k.value))
            if key in first:
                raise ConfigError(
                    f"{where}, line {_line(k)}: the key {shorten(repr(k.value))} is given twice "
                    f"(first on line {first[key]}); give each key once"
                )
            first[key] = _line(k)


def _check_totals(node: yaml.Node, size: int, chars: int, depth: int, where: str) -> None:
    if size > MAX_YAML_NODES or chars > MAX_YAML_CHARS:
        what = (
            f"{MAX_YAML_NODES:,} values"
            if size > MAX_YAML_NODES
            else (f"{MAX_YAML_CHARS:,} characters")
        )
        raise ConfigError(
            f"{where}, line {_line(node)}: aliases here expand to more than {what}; refused "
            "(write the values out, or use fewer nested aliases)"
        )
    if depth > MAX_YAML_DEPTH:
        raise ConfigError(
            f"{where}, line {_line(node)}: nested deeper than {MAX_YAML_DEPTH} levels"
        )


def check_nodes(root: yaml.Node, where: str) -> None:
    """Refuse a composed document that expands past :data:`MAX_YAML_NODES` values or
    :data:`MAX_YAML_CHARS` characters, nests deeper than :data:`MAX_YAML_DEPTH`, holds a
    recursive alias, a key given twice in one mapping, a lone surrogate, an integer longer
    than :data:`MAX_INT_CHARS` characters, a number that is not finite (``.inf``, ``.nan``,
    ``1.0e999``) or a date that does not exist. Each node is visited once (an alias's
    expanded size is memoised), without recursion."""
    size: dict[int, tuple[int, int, int]] = {}  # node -> (values, characters, depth)
    entered: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            kids = [size[id(k)] for k in _children(node)]
            own = len(node.value) if isinstance(node, yaml.ScalarNode) else 0
            total = (
                1 + sum(k[0] for k in kids),
                own + sum(k[1] for k in kids),
                1 + max((k[2] for k in kids), default=0),
            )
            size[key] = total
            _check_totals(node, *total, where)
            continue
        if key in size:
            continue
        entered.add(key)
        _check_leaf(node, where)
        stack.append((node, True))
        for child in reversed(_children(node)):
            if id(child) in entered and id(child) not in size:
                raise ConfigError(
                    f"{where}, line {_line(child)}: an alias refers to a value that contains "
                    "it (a recursive alias); expected plain values"
                )
            if id(child) not in size:
                stack.append((child, False))


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader, counting the nodes it composes: a file of millions of small
    values (within the size limit) is refused once it passes :data:`MAX_YAML_NODES`, before
    the rest is built (each node takes hundreds of bytes)."""

    def __init__(self, stream: str, where: str) -> None:
        super().__init__(stream)
        self.where = where
        self.composed = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        self.composed += 1
        if self.composed > MAX_YAML_NODES:
            line = self.peek_event().start_mark.line + 1  # type: ignore[no-untyped-call]
            raise ConfigError(
                f"{self.where}, line {line}: more than {MAX_YAML_NODES:,} values; refused "
                "(a config holds hundreds)"
            )
        node: yaml.Node | None = super().compose_node(parent, index)  # type: ignore[arg-type]
        return node


# YAML 1.1 (PyYAML) reads ``1e-5`` and ``2E+3`` as strings: its float pattern needs a dot.
# This is YAML 1.2's float pattern, so unquoted scientific notation is a number.
_FLOAT_12 = re.compile(
    r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
    |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
    |\.[0-9_]+(?:[eE][-+]?[0-9]+)?
    |[-+]?\.(?:inf|Inf|INF)
    |\.(?:nan|NaN|NAN))$""",
    re.X,
)


#: YAML 1.2's integers (decimal, ``0x`` hex, ``0o`` octal; ``_`` separators kept, as PyYAML
#: allows) and booleans (``true``/``false`` only): ``010`` is ten, not YAML 1.1's octal 8,
#: ``1:30`` is text, not base-60 90, and ``yes`` is the word, not ``True``.
_INT_12 = re.compile(r"^(?:[-+]?[0-9][0-9_]*|[-+]?0x[0-9a-fA-F_]+|[-+]?0o[0-7_]+)$")
_BOOL_12 = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_TAG = "tag:yaml.org,2002:"


def _int_12(loader: yaml.SafeLoader, node: yaml.Node) -> int:
    text = str(loader.construct_scalar(node)).replace("_", "")  # type: ignore[arg-type]
    sign = -1 if text.startswith("-") else 1
    digits = text.lstrip("+-")
    if digits[:2] in ("0x", "0o"):
        return sign * int(digits[2:], 16 if digits[1] == "x" else 8)
    return sign * int(digits, 10)


class _Loader12(_Loader):
    """:class:`_Loader` with YAML 1.2's numbers and booleans (``1e-5`` is a float, ``010``
    is ten, ``yes`` is text)."""


_Loader12.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag not in {_TAG + "float", _TAG + "int", _TAG + "bool"}]
    for k, v in _Loader.yaml_implicit_resolvers.items()
}
_Loader12.add_implicit_resolver(_TAG + "float", _FLOAT_12, list("-+0123456789."))
_Loader12.add_implicit_resolver(_TAG + "int", _INT_12, list("-+0123456789"))
_Loader12.add_implicit_resolver(_TAG + "bool", _BOOL_12, list("tTfF"))
_Loader12.add_constructor(_TAG + "int", _int_12)


def _syntax_error(exc: yaml.YAMLError, text: str, where: str) -> ConfigError:
    mark = getattr(exc, "problem_mark", None)
    if mark is not None:
        line = mark.line + 1
    elif isinstance(exc, ReaderError):
        line = text.count("\n", 0, exc.position) + 1
    else:
        line = None
    problem = getattr(exc, "problem", None) or (str(exc).splitlines() or ["unreadable"])[0]
    at = f"{where}, line {line}" if line is not None else where
    return ConfigError(f"{at}: invalid YAML: {shorten(str(problem), 200)}")


def read_yaml(
    path: Path, what: str, *, yaml12: bool = False, max_bytes: int | None = None
) -> tuple[Any, yaml.Node | None]:
    """The file's value (plain Python data) and its composed node tree (for the lines of
    keys), or a :class:`ConfigError` naming the file and line. The file must be a regular
    file (a FIFO or a device is refused before it is opened) of at most
    :data:`MAX_YAML_BYTES` (``STEADYEVAL_MAX_CONFIG_MB`` raises it; ``max_bytes``, a fixed
    limit, replaces both), in UTF-8; its nodes pass :func:`check_nodes` before any value is
    built. ``yaml12``: numbers and booleans follow YAML 1.2 (``1e-5`` is a float, not
    the string PyYAML's YAML 1.1 makes of it; ``010`` is ten; ``yes`` is text)."""
    where = str(path)
    if max_bytes is not None and (
        isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1
    ):
        raise ValueError(f"max_bytes must be a positive int (bytes); got {max_bytes!r}")
    text = read_text_file(  # read_text_file applies STEADYEVAL_MAX_CONFIG_MB itself
        path,
        f"a YAML {what} file",
        max_bytes=MAX_YAML_BYTES if max_bytes is None else max_bytes,
        raise_with="STEADYEVAL_MAX_CONFIG_MB" if max_bytes is None else None,
        error=ConfigError,
    )
    try:
        # the reader refuses control characters here
        loader = (_Loader12 if yaml12 else _Loader)(text, where)
    except yaml.YAMLError as exc:
        raise _syntax_error(exc, text, where) from None
    try:
        root = loader.get_single_node()
        if root is None:
            return None, None
        check_nodes(root, where)
        return loader.construct_document(root), root
    except yaml.YAMLError as exc:
        raise _syntax_error(exc, text, where) from None
    except RecursionError:
        raise ConfigError(
            f"{where}: nested too deeply to read (more than {MAX_YAML_DEPTH} levels)"
        ) from None
    finally:
        loader.dispose()
