"""Hyperparameter spaces: reading a YAML space file (numbers as numbers, every value's line
remembered, the same alias, size and depth limits as every YAML reader) and crossing a space
into a method's grid with located errors and a bound on the grid's size."""

from __future__ import annotations

import difflib
import itertools
import math
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from ..._errors import ConfigError
from ...items import FEWGLUE
from ...run import read_yaml
from ._params import shown
from ._tasks import FewShotTask

if TYPE_CHECKING:
    from ._methods import Method

__all__ = [
    "MAX_GRID",
    "MAX_SPACE_BYTES",
    "SpaceFile",
    "build_grid",
    "fixed_for",
    "fixed_setting",
    "fixed_values",
    "load_space",
    "method_space",
    "named_tasks",
]

#: The most settings one method's grid may hold on one task (each setting is trained or
#: scored on every split of every strategy and K: thousands of settings never finish).
MAX_GRID = 1_000
#: The largest space file read (real ones are a few hundred bytes).
MAX_SPACE_BYTES = 1024 * 1024


class SpaceFile(dict[str, Any]):
    """A space read from a file: ``{name: value or [values]}`` plus where each name is
    (``where[name]`` = ``"FILE, line N"``), so grid errors point into the file."""

    def __init__(self, values: Mapping[str, Any], where: Mapping[str, str]) -> None:
        super().__init__(values)
        self.where = dict(where)
        self.shared: set[str] = set()


def _read(p: Path) -> tuple[Any, yaml.Node | None]:
    """The file's value and its node tree, read as every YAML config is
    (:func:`~steadyeval.run.read_yaml`: a regular UTF-8 file, composed once and checked
    before any value is built), here with YAML 1.2's numbers and booleans (``1e-5`` is a
    number, ``010`` is ten, ``yes`` is text) and at most :data:`MAX_SPACE_BYTES`."""
    return read_yaml(p, "space", yaml12=True, max_bytes=MAX_SPACE_BYTES)


def _lines(node: yaml.Node | None) -> tuple[dict[str, int], dict[str, dict[str, int]]]:
    """1-based line of each top-level key, and of each key of each top-level mapping."""
    if not isinstance(node, yaml.MappingNode):
        return {}, {}

    def keys(mapping: yaml.MappingNode) -> dict[str, int]:
        return {str(k.value): k.start_mark.line + 1 for k, _ in mapping.value}

    inner = {str(k.value): keys(v) for k, v in node.value if isinstance(v, yaml.MappingNode)}
    return keys(node), inner


def _per_task(value: Mapping[Any, Any], here: str, name: str) -> dict[str, Any]:
    """A mapping of task names to values (``{RTE: [...], CB: [...]}``), keys lowercased; any
    other key is an error naming it (and the closest task name)."""
    tasks = ", ".join(t.name for t in FEWGLUE.values())
    if not value:
        raise ConfigError(
            f"{here}: {name}: an empty mapping; expected a value, a list of values or a "
            f"mapping of task names ({tasks}) to values"
        )
    for key in value:
        if not isinstance(key, str) or key.lower() not in FEWGLUE:
            close = difflib.get_close_matches(str(key).lower(), list(FEWGLUE), n=1)
            hint = f"; did you mean {FEWGLUE[close[0]].name}?" if close else ""
            raise ConfigError(
                f"{here}: {name}: {shown(key)} is not a task; a mapping here gives the values "
                f"per task ({tasks}){hint}"
            )
    return {str(k).lower(): v for k, v in value.items()}


def named_tasks(space: Mapping[str, Any] | None) -> set[str]:
    """The tasks (keys, lowercase) a space gives values for by name, in its per-task
    mappings (``{RTE: [...], CB: [...]}``)."""
    return {
        str(k).lower()
        for v in (space or {}).values()
        if isinstance(v, Mapping)
        for k in v
        if isinstance(k, str) and k.lower() in FEWGLUE
    }


def _method_of(key: Any, here: str) -> Method:
    """The method a section is for; a name that is no method is an error with the closest."""
    from ._methods import METHODS, get_method

    try:
        return get_method(str(key))
    except ConfigError:
        close = difflib.get_close_matches(str(key).lower(), list(METHODS), n=1)
        hint = f"did you mean {close[0]!r}?" if close else f"methods: {', '.join(METHODS)}"
        raise ConfigError(
            f"{here}: {shown(key)} is neither a hyperparameter nor a method (a mapping here "
            f"is a method's section); {hint}"
        ) from None


def _unknown(method: Method, name: str, here: str) -> ConfigError:
    return ConfigError(
        f"{here}: method {method.name} has no hyperparameter {shown(name)}; its "
        f"hyperparameters: {', '.join(method.params)}"
    )


def _sections(
    data: Mapping[Any, Any], where: str, lines: tuple[dict[str, int], dict[str, dict[str, int]]]
) -> tuple[dict[str, Any], dict[str, tuple[str, dict[str, Any]]]]:
    """The shared values and each method's section (by canonical method name: its key and
    values). Every section must name a method and hold only that method's hyperparameters;
    every mapping of values must be keyed by task names. Nothing is silently left out."""
    from ._combo import known_params
    from ._methods import METHODS

    names = known_params() | {p for m in METHODS.values() for p in m.params}
    top, inner = lines
    shared: dict[str, Any] = {}
    sections: dict[str, tuple[str, dict[str, Any]]] = {}
    for key, value in data.items():
        k = str(key)
        here = f"{where}, line {top[k]}" if k in top else where
        if k in names or not isinstance(value, Mapping):
            if isinstance(value, Mapping):
                _per_task(value, here, k)
            shared[k] = value
            continue
        method = _method_of(key, here)
        if method.name in sections:
            raise ConfigError(
                f"{here}: a second section for method {method.name} (the first is "
                f"{shown(sections[method.name][0])}); merge them"
            )
        for sub, v in value.items():
            at = inner.get(k, {}).get(str(sub))
            sub_here = f"{where}, line {at}" if at is not None else here
            if str(sub) not in method.params:
                raise _unknown(method, str(sub), sub_here)
            if isinstance(v, Mapping):
                _per_task(v, sub_here, str(sub))
        sections[method.name] = (k, {str(sub): v for sub, v in value.items()})
    return shared, sections


def _section(
    data: Mapping[Any, Any],
    method: str | None,
    where: str,
    lines: tuple[dict[str, int], dict[str, dict[str, int]]] = ({}, {}),
) -> SpaceFile:
    """The names shared by every method (top-level values that are not sections) overlaid
    by ``method``'s section; other methods' sections are left out (after their checks)."""
    shared, sections = _sections(data, where, lines)
    key, own = sections.get(method, ("", {})) if method is not None else ("", {})
    top, inner = lines
    at = {k: f"{where}, line {n}" for k, n in top.items() if k in shared}
    at |= {k: f"{where}, line {n}" for k, n in inner.get(key, {}).items() if k in own}
    out = SpaceFile({**shared, **own}, {k: at.get(k, where) for k in {**shared, **own}})
    out.shared = set(shared) - set(own)
    return out


def load_space(path: str | Path, method: str | None = None) -> SpaceFile:
    """Read a YAML hyperparameter space: ``{name: value or [values]}``.

    Top-level names apply to every method (the same space for every method compared);
    a section per method (``icl: {...}``, ``ipet+adapet/cross-split: {...}``) adds or
    overrides names for that method, picked by ``method`` (a section's name may be any
    spelling of the method). A value may be a mapping of task names to values
    (``pattern: {RTE: [...], CB: [...]}``). Unquoted numbers are numbers, scientific
    notation included (``learning_rate: [1e-5, 2e-5]``). Errors name the file and line: a
    section that names no method (with the closest name), a hyperparameter its method lacks,
    a mapping keyed by something other than a task, a file that is not a regular UTF-8 file
    of at most :data:`MAX_SPACE_BYTES`, and aliases that expand past the YAML limits; a
    value a method cannot use is reported by :func:`build_grid`.
    """
    p = Path(path)
    data, node = _read(p)
    if not isinstance(data, dict):
        raise ConfigError(f"{p}: expected a mapping of hyperparameter names to value lists")
    return _section(data, method, str(p), _lines(node))


def method_space(
    space: Mapping[str, Any] | str | None, method: Method, run_params: set[str]
) -> SpaceFile:
    """``method``'s space from a config's ``space`` (a mapping or a YAML file): shared names
    that ``method`` lacks but another method of the run has (``run_params``) are dropped;
    any other unknown name stays, for :func:`build_grid` to report."""
    if space is None:
        return SpaceFile({}, {})
    name = method.name
    own = load_space(space, name) if isinstance(space, str) else _section(space, name, "space")
    drop = {k for k in own.shared if k not in method.params and k in run_params}
    return SpaceFile({k: v for k, v in own.items() if k not in drop}, own.where)


def _task_value(raw: Any, task: FewShotTask, here: str, name: str) -> Any:
    """``raw`` itself, or, for values given per task (``{RTE: [...], CB: [...]}``), this
    task's (None: not given for it, so the default)."""
    if not isinstance(raw, Mapping):
        return raw
    return _per_task(raw, here, name).get(task.key)


def _check_size(
    method: Method, task: FewShotTask, axes: list[list[Any]], lines: Mapping[str, str], where: str
) -> None:
    """Refuse a grid of more than :data:`MAX_GRID` settings before it is built."""
    n = math.prod(len(a) for a in axes)
    if n <= MAX_GRID:
        return
    sizes = sorted(zip((len(a) for a in axes), method.params, strict=True), reverse=True)
    detail = " x ".join(f"{k} {name}" for k, name in sizes if k > 1)
    biggest = sizes[0][1]
    raise ConfigError(
        f"{lines.get(biggest, where)}: the space gives method {method.name} {n:,} settings on "
        f"{task.name} ({detail}), over the limit of {MAX_GRID:,}; narrow the space (fewer "
        f"values of {biggest}, or one study per part of it)"
    )


def build_grid(
    method: Method, task: FewShotTask, space: Mapping[str, Any] | None, *, where: str = "space"
) -> list[dict[str, Any]]:
    """Every combination of the space's values (defaults for names it leaves out).

    Order: the method's parameter order, values in the order given. Each value is checked by
    the method; errors name the parameter and what is allowed (and, for a space read by
    :func:`load_space`, the file and line). A grid of more than :data:`MAX_GRID` settings
    is refused before it is built.
    """
    lines = space.where if isinstance(space, SpaceFile) else {}
    space = dict(space or {})
    unknown = sorted(set(space) - set(method.params))
    if unknown:
        raise _unknown(method, unknown[0], lines.get(unknown[0], where))
    axes: list[list[Any]] = []
    for name, param in method.params.items():
        here = lines.get(name, where)
        raw = _task_value(space.get(name), task, here, name)
        raw = param.default(task) if raw is None else raw
        values = list(raw) if isinstance(raw, list | tuple) else [raw]
        if not values:
            raise ConfigError(f"{here}: {name} has no values")
        checked = []
        for v in values:
            try:
                checked.append(param.check(v, task))
            except ValueError as exc:
                raise ConfigError(f"{here}: {name}: {exc}") from None
        axes.append(list(dict.fromkeys(checked)))
    _check_size(method, task, axes, lines, where)
    return [dict(zip(method.params, combo, strict=True)) for combo in itertools.product(*axes)]


# -- the fixed strategy's setting ----------------------------------------------------------------
def fixed_values(
    entries: Sequence[str], known: Collection[str], tasks: Collection[str]
) -> dict[str | None, dict[str, str]]:
    """The fixed strategy's ``[TASK:]NAME=VALUE`` entries as ``{task: {name: value text}}``,
    ``None`` for the entries without a task (every task's): each entry must have an ``=``, a
    name some method knows (``known``), a task of the run (``tasks``) if it names one, and
    be given once per task."""
    out: dict[str | None, dict[str, str]] = {}
    for entry in entries:
        key, eq, value = entry.partition("=")
        task, colon, name = key.partition(":") if ":" in key else ("", "", key)
        task, name, value = task.strip(), name.strip(), value.strip()
        if not eq or not name or not value or (colon and not task):
            raise ConfigError(
                f"fixed: {shown(entry)}: expected [TASK:]NAME=VALUE (e.g. learning_rate=1e-5 "
                "or RTE:pattern=question)"
            )
        by_case = {t.lower(): t for t in tasks}  # RTE, rte: one task
        task = by_case.get(task.lower(), task)
        if colon and task not in tasks:
            close = difflib.get_close_matches(task, sorted(tasks), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ConfigError(
                f"fixed: {shown(entry)}: {shown(task)} is not a task of the run "
                f"({', '.join(sorted(tasks))}){hint}"
            )
        if name not in known:
            same = [k for k in sorted(known) if k.lower() == name.lower()]  # PATTERN
            close = same or difflib.get_close_matches(name, sorted(known), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ConfigError(f"fixed: {shown(name)} is no method's hyperparameter{hint}")
        scoped = out.setdefault(task or None, {})
        if name in scoped:
            where = f" for {task}" if task else ""
            raise ConfigError(f"fixed: {name} is given twice{where} ({scoped[name]} and {value})")
        scoped[name] = value
    return out


def fixed_for(wanted: Mapping[str | None, Mapping[str, str]], task: str) -> dict[str, str]:
    """The fixed entries of ``task``: every task's, then its own (which win)."""
    return {**wanted.get(None, {}), **wanted.get(task, {})}


def _matches(text: str, value: Any) -> bool:
    """Whether ``text`` (from ``NAME=VALUE``) names ``value`` (a grid value): the same text,
    or for a number the same number (``1e-5`` names ``0.00001``)."""
    if str(value) == text:
        return True
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    try:
        return float(text) == float(value)
    except ValueError:
        return False


def fixed_setting(
    grid: Sequence[Mapping[str, Any]], wanted: Mapping[str, str], method: str, task: str
) -> dict[str, Any]:
    """The grid's first setting whose values match ``wanted`` (names ``method`` lacks are
    skipped): FewNLU's fixed hyper-parameters chosen a priori, never by a dev score. A value
    the grid does not hold is an error naming the grid's values."""
    own = {k: v for k, v in wanted.items() if k in grid[0]}
    for name, text in own.items():
        values = list(dict.fromkeys(repr(g[name]) for g in grid))
        if not any(_matches(text, g[name]) for g in grid):
            raise ConfigError(
                f"fixed: {name}={text} is not in the space of {method} on {task}; its values: "
                f"{', '.join(values)} (the fixed setting must be one of the grid's)"
            )
    for g in grid:
        if all(_matches(text, g[name]) for name, text in own.items()):
            return dict(g)
    raise AssertionError("a grid is a product of its axes")  # pragma: no cover
