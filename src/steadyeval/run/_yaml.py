"""Reading a YAML config file safely: located syntax errors, and limits a hostile file cannot
get past. Aliases are counted at every use before anything is built, so a few hundred bytes
of nested aliases (an "alias bomb") are refused in milliseconds instead of expanding to
gigabytes; nesting, recursive aliases and text that is not valid Unicode are refused too."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from yaml.reader import ReaderError

from .._errors import ConfigError
from ..items import bad_utf8, lone_surrogate, shorten

__all__ = ["MAX_YAML_DEPTH", "MAX_YAML_NODES", "read_yaml"]

#: Most values (scalars, lists, mappings; keys count) a config may expand to, each alias
#: counted at every place it is used. Real configs hold hundreds.
MAX_YAML_NODES = 100_000
#: Deepest nesting of lists and mappings in a config.
MAX_YAML_DEPTH = 100


def _line(node: yaml.Node) -> int:
    return int(node.start_mark.line) + 1


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _check_scalar(node: yaml.Node, where: str) -> None:
    if not isinstance(node, yaml.ScalarNode) or not isinstance(node.value, str):
        return
    at = lone_surrogate(node.value)
    if at is not None:
        raise ConfigError(
            f"{where}, line {_line(node)}: {shorten(repr(node.value))} holds a lone surrogate "
            f"{node.value[at]!r} (half of a UTF-16 pair); expected valid Unicode text"
        )


def check_nodes(root: yaml.Node, where: str) -> None:
    """Refuse a composed document that expands past :data:`MAX_YAML_NODES` values, nests
    deeper than :data:`MAX_YAML_DEPTH`, holds a recursive alias or a lone surrogate. Each
    node is visited once (an alias's expanded size is memoised), without recursion."""
    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    entered: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            kids = [id(k) for k in _children(node)]
            size[key] = 1 + sum(size[k] for k in kids)
            depth[key] = 1 + max((depth[k] for k in kids), default=0)
            if size[key] > MAX_YAML_NODES:
                raise ConfigError(
                    f"{where}, line {_line(node)}: aliases here expand to more than "
                    f"{MAX_YAML_NODES:,} values; refused (write the values out, or use fewer "
                    "nested aliases)"
                )
            if depth[key] > MAX_YAML_DEPTH:
                raise ConfigError(
                    f"{where}, line {_line(node)}: nested deeper than {MAX_YAML_DEPTH} levels"
                )
            continue
        if key in size:
            continue
        entered.add(key)
        _check_scalar(node, where)
        stack.append((node, True))
        for child in reversed(_children(node)):
            if id(child) in entered and id(child) not in size:
                raise ConfigError(
                    f"{where}, line {_line(child)}: an alias refers to a value that contains "
                    "it (a recursive alias); expected plain values"
                )
            if id(child) not in size:
                stack.append((child, False))


def _syntax_error(exc: yaml.YAMLError, text: str, where: str) -> ConfigError:
    mark = getattr(exc, "problem_mark", None)
    if mark is not None:
        line = mark.line + 1
    elif isinstance(exc, ReaderError):
        line = text.count("\n", 0, exc.position) + 1
    else:
        line = None
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    at = f"{where}, line {line}" if line is not None else where
    return ConfigError(f"{at}: invalid YAML: {shorten(str(problem), 200)}")


def read_yaml(path: Path, what: str) -> tuple[Any, yaml.Node | None]:
    """The file's value (plain Python data) and its composed node tree (for the lines of
    keys), or a :class:`ConfigError` naming the file and line."""
    where = str(path)
    if path.is_dir():
        raise ConfigError(f"{where}: is a folder; expected a YAML {what} file")
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read {what} ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        bad = bad_utf8(path)
        at = f"{where}, line {bad[0]}" if bad else where
        raise ConfigError(f"{at}: not UTF-8 text ({exc.reason}); save the file as UTF-8") from None
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        if root is None:
            return None, None
        check_nodes(root, where)
        return yaml.safe_load(text), root
    except yaml.YAMLError as exc:
        raise _syntax_error(exc, text, where) from None
    except RecursionError:
        raise ConfigError(
            f"{where}: nested too deeply to read (more than {MAX_YAML_DEPTH} levels)"
        ) from None
