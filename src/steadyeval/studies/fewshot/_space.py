"""Hyperparameter spaces: reading a YAML space file (numbers as numbers, every value's line
remembered) and crossing a space into a method's grid with located errors."""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from ..._errors import ConfigError
from ...items._fewglue import FEWGLUE
from ._tasks import FewShotTask

if TYPE_CHECKING:
    from ._methods import Method

__all__ = ["SpaceFile", "build_grid", "load_space", "method_space"]

# YAML 1.1 (PyYAML) reads ``1e-5`` and ``2E+3`` as strings: its float pattern needs a dot.
# This is YAML 1.2's float pattern, so unquoted scientific notation is a number.
_FLOAT = re.compile(
    r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
    |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
    |\.[0-9_]+(?:[eE][-+]?[0-9]+)?
    |[-+]?\.(?:inf|Inf|INF)
    |\.(?:nan|NaN|NAN))$""",
    re.X,
)


class _SpaceLoader(yaml.SafeLoader):
    """A safe loader whose floats follow YAML 1.2 (``1e-5`` is a float)."""


_SpaceLoader.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:float"]
    for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_SpaceLoader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT, list("-+0123456789."))


class SpaceFile(dict[str, Any]):
    """A space read from a file: ``{name: value or [values]}`` plus where each name is
    (``where[name]`` = ``"FILE, line N"``), so grid errors point into the file."""

    def __init__(self, values: Mapping[str, Any], where: Mapping[str, str]) -> None:
        super().__init__(values)
        self.where = dict(where)
        self.shared: set[str] = set()


def _lines(node: yaml.Node, section: str | None) -> dict[str, int]:
    """1-based line of each key of the top mapping (or of its ``section`` mapping)."""
    if not isinstance(node, yaml.MappingNode):
        return {}
    if section is not None:
        for key, value in node.value:
            if key.value == section and isinstance(value, yaml.MappingNode):
                return _lines(value, None)
        return {}
    return {str(k.value): k.start_mark.line + 1 for k, _ in node.value}


def _per_task(value: Any) -> bool:
    """Whether a mapping value gives a hyperparameter's values per task (every key a task
    name, ``{RTE: [...], CB: [...]}``) rather than being a method's section."""
    return (
        isinstance(value, dict)
        and bool(value)
        and all(isinstance(k, str) and k.lower() in FEWGLUE for k in value)
    )


def _section(
    data: Mapping[str, Any], method: str | None, where: Mapping[str, str], shared_where: str
) -> SpaceFile:
    """The names shared by every method (top-level values that are not sections) overlaid
    by ``method``'s section; other methods' sections are left out."""
    shared = {str(k): v for k, v in data.items() if not isinstance(v, dict) or _per_task(v)}
    section = data.get(method) if method is not None else None
    own = {str(k): v for k, v in section.items()} if isinstance(section, dict) else {}
    out = SpaceFile({**shared, **own}, {k: where.get(k, shared_where) for k in {**shared, **own}})
    out.shared = set(shared) - set(own)
    return out


def load_space(path: str | Path, method: str | None = None) -> SpaceFile:
    """Read a YAML hyperparameter space: ``{name: value or [values]}``.

    Top-level names apply to every method (the same space for every method compared);
    a section per method (``icl: {...}``, ``ipet+adapet/cross-split: {...}``) adds or
    overrides names for that method, picked by ``method``. Unquoted numbers are numbers,
    scientific notation included (``learning_rate: [1e-5, 2e-5]``); a value a method cannot
    use is an error that names the file and line (see :func:`build_grid`).
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
        data = yaml.load(text, Loader=_SpaceLoader)  # a SafeLoader subclass: safe
        node = yaml.compose(text, Loader=_SpaceLoader)
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{p}: cannot read the space file ({exc})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{p}: expected a mapping of hyperparameter names to value lists")
    lines = _lines(node, None) if node is not None else {}
    if method is not None and isinstance(data.get(method), dict) and node is not None:
        lines = {**lines, **_lines(node, method)}
    where = {k: f"{p}, line {n}" for k, n in lines.items()}
    return _section(data, method, where, str(p))


def method_space(
    space: Mapping[str, Any] | str | None, method: Method, run_params: set[str]
) -> SpaceFile:
    """``method``'s space from a config's ``space`` (a mapping or a YAML file): shared names
    that ``method`` lacks but another method of the run has (``run_params``) are dropped;
    any other unknown name stays, for :func:`build_grid` to report."""
    if space is None:
        return SpaceFile({}, {})
    name = method.name
    own = load_space(space, name) if isinstance(space, str) else _section(space, name, {}, "space")
    drop = {k for k in own.shared if k not in method.params and k in run_params}
    return SpaceFile({k: v for k, v in own.items() if k not in drop}, own.where)


def _task_value(raw: Any, task: FewShotTask, here: str, name: str) -> Any:
    """``raw`` itself, or, for values given per task (``{RTE: [...], CB: [...]}``), this
    task's (None: not given for it, so the default)."""
    if not isinstance(raw, Mapping):
        return raw
    if not _per_task(raw):
        raise ConfigError(
            f"{here}: {name}: expected a value, a list of values or a mapping of task names "
            f"({', '.join(t.name for t in FEWGLUE.values())}) to values, got {dict(raw)!r}"
        )
    given = {str(k).lower(): v for k, v in raw.items()}
    return given.get(task.key)


def build_grid(
    method: Method, task: FewShotTask, space: Mapping[str, Any] | None, *, where: str = "space"
) -> list[dict[str, Any]]:
    """Every combination of the space's values (defaults for names it leaves out).

    Order: the method's parameter order, values in the order given. Each value is checked by
    the method; errors name the parameter and what is allowed (and, for a space read by
    :func:`load_space`, the file and line).
    """
    lines = space.where if isinstance(space, SpaceFile) else {}
    space = dict(space or {})
    unknown = sorted(set(space) - set(method.params))
    if unknown:
        raise ConfigError(
            f"{lines.get(unknown[0], where)}: method {method.name} has no hyperparameter "
            f"{unknown[0]!r}; its hyperparameters: {', '.join(method.params)}"
        )
    axes: list[list[Any]] = []
    for name, param in method.params.items():
        raw = _task_value(space.get(name), task, lines.get(name, where), name)
        raw = param.default(task) if raw is None else raw
        values = list(raw) if isinstance(raw, list | tuple) else [raw]
        here = lines.get(name, where)
        if not values:
            raise ConfigError(f"{here}: {name} has no values")
        checked = []
        for v in values:
            try:
                checked.append(param.check(v, task))
            except ValueError as exc:
                raise ConfigError(f"{here}: {name}: {exc}") from None
        axes.append(list(dict.fromkeys(checked)))
    return [dict(zip(method.params, combo, strict=True)) for combo in itertools.product(*axes)]
