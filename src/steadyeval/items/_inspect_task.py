"""Inspect AI tasks as items: the ``inspect`` loader (``--task inspect:FILE.py@TASK``).

A task spec is Inspect's own spelling: ``FILE.py@TASK``, ``FILE.py`` when the file defines
exactly one ``@task``, or a task a package registers (``inspect_evals/gsm8k``). What of a
task maps onto items, and what is refused, is :mod:`._inspect_samples`.

How a file's task is made: inspect_ai exports no function that creates a task from a file
without running it (``inspect eval`` goes through ``inspect_ai._eval.loader``, private).
So this module does what that loader does with public parts: it imports the file as a
module (``importlib``, the file's folder as working directory and on ``sys.path``, so the
task's relative data paths and sibling imports resolve as under ``inspect eval``), finds
the module's ``@task`` functions by their registry info (:func:`inspect_ai.util.registry_info`)
and calls the named one with ``task_args``. A package's task is made by
:func:`inspect_ai.util.registry_create`. Not thread-safe (the working directory is the
process's), as Inspect's own loader is not.
"""

from __future__ import annotations

import inspect
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.machinery import SourceFileLoader
from importlib.util import module_from_spec, spec_from_loader
from pathlib import Path
from types import ModuleType
from typing import Any, NamedTuple

from .._errors import ConfigError, DataError, SteadyevalError, show_path
from .._extras import require
from ._inspect_samples import task_items, task_shape
from ._item import Item

__all__ = ["TaskSpec", "load_inspect_items", "parse_task_spec"]

_SPELLING = "FILE.py@TASK, FILE.py (one @task in the file) or PACKAGE/TASK"


class TaskSpec(NamedTuple):
    """A parsed task spec: a file and the task's name in it (None: the file's only task),
    or a package-registered task (``file`` None, ``name`` such as ``inspect_evals/gsm8k``)."""

    text: str
    file: Path | None
    name: str | None


def parse_task_spec(text: str) -> TaskSpec:
    """Read ``FILE.py@TASK``, ``FILE.py`` or ``PACKAGE/TASK`` as Inspect does (the last
    ``@`` splits file and task); a file must exist and end in ``.py``."""
    if not isinstance(text, str) or not text.strip():
        raise ConfigError(f"inspect task spec {text!r}: expected {_SPELLING}")
    head, at, name = text.rpartition("@")
    file, task = (head, name) if at else (text, None)
    if at and not task:
        raise ConfigError(f"inspect task spec {text!r}: no task name after '@' ({_SPELLING})")
    if at and not head:
        raise ConfigError(f"inspect task spec {text!r}: no file before '@' ({_SPELLING})")
    path = Path(file)
    if path.suffix == ".py":
        if not path.is_file():
            what = "is not a file" if path.exists() else "file not found"
            raise DataError(what, file=show_path(path), expected="an Inspect task file FILE.py")
        return TaskSpec(text, path, task)
    if path.exists():
        raise DataError(
            f"not a Python file ({path.suffix or 'no suffix'})",
            file=show_path(path),
            expected=f"an Inspect task file: {_SPELLING}",
        )
    parts = file.split("/")
    if task is None and len(parts) == 2 and all(p.isidentifier() for p in parts):
        return TaskSpec(text, None, file)
    raise DataError(
        "file not found", file=show_path(file), expected=f"an Inspect task spec {_SPELLING}"
    )


@contextmanager
def _in_folder(folder: Path) -> Iterator[None]:
    """Run with ``folder`` as working directory and on ``sys.path``, as ``inspect eval``
    loads a task file (``inspect_ai._util.path.chdir_python``)."""
    cwd, path = os.getcwd(), list(sys.path)
    os.chdir(folder)
    sys.path.append(str(folder))
    try:
        yield
    finally:
        os.chdir(cwd)
        sys.path[:] = path


def _import_file(path: Path) -> ModuleType:
    """Execute the task file as a module (not entered in ``sys.modules``, as Inspect's
    loader does not); a syntax error or a failing import is a :class:`ConfigError`."""
    loader = SourceFileLoader(path.resolve().as_posix(), path.resolve().as_posix())
    spec = spec_from_loader(loader.name, loader)
    assert spec is not None
    module = module_from_spec(spec)
    try:
        loader.exec_module(module)
    except SyntaxError as exc:
        raise ConfigError(
            f"{show_path(path)}: line {exc.lineno}: syntax error: {exc.msg} (expected a "
            "Python file defining Inspect @task functions)"
        ) from None
    except Exception as exc:
        raise ConfigError(
            f"{show_path(path)}: importing the task file failed: {type(exc).__name__}: {exc}"
        ) from exc
    return module


def _file_tasks(module: ModuleType) -> dict[str, Any]:
    """The ``@task`` functions defined in ``module`` (not imported into it), by registered
    name, in definition order."""
    from inspect_ai.util import registry_info

    found: dict[str, Any] = {}
    for value in vars(module).values():
        if getattr(value, "__module__", None) != module.__name__:
            continue
        try:
            info = registry_info(value)
        except ValueError:  # not a registry object
            continue
        if info.type == "task":
            found[info.name] = value
    return found


def _task_kwargs(
    fn: Any, spec: TaskSpec, task_args: dict[str, Any], strict: bool
) -> dict[str, Any]:
    """The ``task_args`` the task function takes. With ``strict`` (one task) one it does
    not take is an error (Inspect warns and drops it); else it is left out."""
    params = inspect.signature(fn).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return dict(task_args)
    unknown = sorted(set(task_args) - set(params))
    if not strict:
        return {k: v for k, v in task_args.items() if k in params}
    if unknown:
        raise ConfigError(
            f"{spec.text}: the task has no argument {unknown[0]!r}; its arguments: "
            f"{', '.join(params) or 'none'}"
        )
    return dict(task_args)


def _create(fn: Any, spec: TaskSpec, kwargs: dict[str, Any]) -> tuple[Any, list[Any]]:
    """Call the task function and read its samples (its dataset loads here: a hub data set
    offline fails here), a failure being a :class:`DataError` naming the spec."""
    from inspect_ai import Task

    try:
        task = fn(**kwargs)
        samples = list(task.dataset) if isinstance(task, Task) else []
    except SteadyevalError:
        raise
    except Exception as exc:
        raise DataError(
            f"creating the task or loading its dataset failed: {type(exc).__name__}: {exc}",
            file=spec.text,
            expected="a task whose dataset loads here (a hub data set needs the network or "
            "its local cache)",
        ) from exc
    if not isinstance(task, Task):
        raise ConfigError(f"{spec.text}: the @task function returned {type(task).__name__}")
    return task, samples


Loaded = tuple[str, Any, list[Any], set[str]]  # name, Task, samples, task_args used


def _load_file_task(spec: TaskSpec, task_args: dict[str, Any], strict: bool) -> Loaded:
    assert spec.file is not None
    path = spec.file.resolve()  # before the working directory changes to its folder
    with _in_folder(path.parent):
        tasks = _file_tasks(_import_file(path))
        if not tasks:
            raise ConfigError(f"{spec.text}: the file defines no Inspect @task function")
        if spec.name is None and len(tasks) > 1:
            raise ConfigError(
                f"{spec.text}: the file defines {len(tasks)} tasks ({', '.join(tasks)}); "
                f"name one as {spec.text}@TASK"
            )
        name = spec.name if spec.name is not None else next(iter(tasks))
        if name not in tasks:
            raise ConfigError(
                f"{spec.text}: no task {name!r} in {show_path(spec.file)}; its tasks: "
                f"{', '.join(tasks)}"
            )
        fn = tasks[name]
        kwargs = _task_kwargs(fn, spec, task_args, strict)
        task, samples = _create(fn, spec, kwargs)
    return name, task, samples, set(kwargs)


def _load_package_task(spec: TaskSpec, task_args: dict[str, Any], strict: bool) -> Loaded:
    """A package's registered task; it gets every ``task_args`` (its signature is known
    only to Inspect's registry, which warns of one it does not take)."""
    from inspect_ai.util import registry_create

    name = spec.name
    assert name is not None

    def create(**kwargs: Any) -> Any:
        try:
            return registry_create("task", name, **kwargs)
        except LookupError as exc:  # also a KeyError of the task's own code: tell them apart
            if not str(exc).endswith("not found in the registry"):
                raise
            raise ConfigError(
                f"{spec.text}: no such file and no Inspect task registered under that name "
                f"(expected {_SPELLING}; a package's tasks need the package installed, e.g. "
                "pip install inspect_evals)"
            ) from None

    task, samples = _create(create, spec, dict(task_args))
    return name.split("/")[-1], task, samples, set(task_args)


def _specs(source: str | os.PathLike[str] | None, task: str | list[str] | None) -> list[TaskSpec]:
    if source is not None and task is not None:
        raise ConfigError("inspect: give the task spec as source or as task, not both")
    raw = task if task is not None else source
    if raw is None:
        raise ConfigError(f"inspect: no task given (expected {_SPELLING})")
    texts = [raw] if isinstance(raw, str | os.PathLike) else list(raw)
    if not texts:
        raise ConfigError(f"inspect: an empty list of tasks (expected {_SPELLING})")
    return [parse_task_spec(os.fspath(t) if isinstance(t, os.PathLike) else t) for t in texts]


def load_inspect_items(
    source: str | os.PathLike[str] | None = None,
    *,
    task: str | list[str] | None = None,
    task_args: dict[str, Any] | None = None,
) -> list[Item]:
    """Items of one or more Inspect tasks (loader ``inspect``).

    Parameters
    ----------
    source : str or path, optional
        One task spec, when ``task`` is None (``load_items(SPEC, loader="inspect")``).
    task : str or list of str, optional
        Task specs: ``FILE.py@TASK``, ``FILE.py`` (the file defines one ``@task``) or a
        package's ``PACKAGE/TASK``.
    task_args : dict, optional
        Arguments of the task functions (Inspect's ``-T``); with several tasks each gets
        those it takes, and an argument no task takes is an error.

    Returns
    -------
    list of Item
        One per sample, task by task. Ids are the samples' ids (else their 1-based
        positions), prefixed ``TASK/`` when there are several tasks; metadata holds the
        sample's scalar metadata, ``subtask`` (the task's name), ``inspect_scorer``
        (``choice``, ``match`` or ``includes``), ``inspect_solver`` and the scorer's
        options (``inspect_location``, ``inspect_ignore_case``, ``inspect_numeric``).

    Notes
    -----
    Task files are Python code and run as such, as under ``inspect eval``.
    """
    specs = _specs(source, task)
    require("inspect: tasks", "inspect_ai", extra="inspect")
    args = dict(task_args or {})
    items: list[Item] = []
    used: set[str] = set()
    names: list[str] = []
    for spec in specs:
        load = _load_package_task if spec.file is None else _load_file_task
        name, task_obj, samples, took = load(spec, args, len(specs) == 1)
        if name in names:
            raise ConfigError(f"inspect: task {name!r} is given twice (item ids would repeat)")
        names.append(name)
        used |= took
        shape = task_shape(task_obj, spec.text)
        items += task_items(samples, shape, name=name, label=spec.text, prefix=len(specs) > 1)
    unused = sorted(set(args) - used)
    if unused:
        raise ConfigError(f"inspect: no task takes the argument {unused[0]!r}")
    return items
